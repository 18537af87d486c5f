//! The budget around a backend's run: asked before the call starts, told what it spent.

use breeze_protocol::EventKind;
use tokio_util::sync::CancellationToken;

use super::call::{RoleCall, RoleOutcome, RoleReply};
use super::definition;
use super::invocation::Invocation;
use super::runner::RoleRunner;
use crate::config::RoleConfig;

impl RoleRunner {
    /// Runs the invocation's backend if the run's budget lets the call start — what is left
    /// of it, or `[budget] session_usd` when that is less, is the call's own cap (claude's
    /// `--max-budget-usd`) — then counts what it spent:
    /// its tokens priced with `[budget.prices]` when the backend reported no cost, a call of
    /// unknown cost when nothing prices it. Every call that reached its backend is
    /// journaled (`spent`).
    pub(super) async fn metered(
        &self,
        run: &mut Invocation<'_>,
        cancel: &CancellationToken,
    ) -> RoleReply {
        let call = run.call;
        match self.budget.admit(&call.task_id) {
            Ok(allowance) => {
                // `[budget] session_usd` caps the session, within what is left.
                let session = self.session_left(call, &run.settings);
                run.max_budget_usd = match (allowance.max_usd, session) {
                    (Some(left), Some(cap)) => Some(left.min(cap)),
                    (left, cap) => left.or(cap),
                };
            }
            Err(over) => return RoleReply::of(RoleOutcome::OverBudget(over), run.log_path.clone()),
        }
        let mut reply = self.backend(run.settings.backend).run(run, cancel).await;
        if matches!(reply.outcome, RoleOutcome::CouldNotStart(_)) {
            return reply;
        }
        if reply.usage.cost_usd.is_none() {
            let model = definition::model_of(&self.repo_root, call.role, &run.settings);
            reply.usage = self.budget.prices().priced(reply.usage, model.as_deref());
        }
        if reply.usage.cost_usd.is_none() {
            reply.usage.unpriced_calls = 1;
        }
        self.budget.count(&call.task_id, &reply.usage);
        self.store.record_later(EventKind::Spent {
            task: call.task_id.clone(),
            role: call.role,
            usage: reply.usage,
        });
        reply
    }

    /// What the call's session may still spend of `[budget] session_usd`: all of it for a
    /// new session, the cap less what the session spent before for a continued one (its
    /// totals after its previous run, priced like any call when the CLI reported tokens
    /// only).
    fn session_left(&self, call: &RoleCall, settings: &RoleConfig) -> Option<f64> {
        let spent = match (&call.resume_session, call.resume_baseline) {
            (Some(_), Some(before)) => {
                let model = definition::model_of(&self.repo_root, call.role, settings);
                self.budget.prices().priced(before, model.as_deref()).cost_usd
            }
            _ => None,
        };
        left_of_session(self.config.budget.session_usd, spent)
    }

    /// A session that has spent its `[budget] session_usd` is not continued, whatever
    /// its backend (codex cannot hold itself to a cap): the call starts a new session from
    /// the brief — the task, its findings and failures; the lane holds the work so far.
    pub(super) fn within_session_cap(&self, call: &mut RoleCall, settings: &RoleConfig) {
        if call.resume_session.is_none() || self.session_left(call, settings) != Some(0.0) {
            return;
        }
        tracing::warn!(
            task = call.task_id,
            role = call.role.as_str(),
            "the {} of task {} has spent its session's session_usd: it starts a new session",
            call.role.as_str(),
            call.task_id
        );
        call.resume_session = None;
        call.resume_baseline = None;
    }
}

/// What a session may still spend of its cap (`None`: no cap), having spent `spent` (`None`:
/// a new session, or nothing known).
fn left_of_session(cap: Option<f64>, spent: Option<f64>) -> Option<f64> {
    cap.map(|cap| (cap - spent.unwrap_or(0.0)).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::left_of_session;

    #[test]
    fn a_session_may_spend_what_is_left_of_its_cap_and_nothing_past_it() {
        assert_eq!(left_of_session(None, Some(3.0)), None, "no cap, no limit");
        assert_eq!(left_of_session(Some(2.0), None), Some(2.0), "a new session has it all");
        assert_eq!(left_of_session(Some(2.0), Some(0.5)), Some(1.5));
        assert_eq!(left_of_session(Some(2.0), Some(2.5)), Some(0.0), "spent: not continued");
    }
}
