//! The budget around a backend's run: asked before the call starts, told what it spent.

use breeze_protocol::EventKind;
use tokio_util::sync::CancellationToken;

use super::call::{RoleOutcome, RoleReply};
use super::definition;
use super::invocation::Invocation;
use super::runner::RoleRunner;

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
                // `[budget] session_usd` caps each call on its own, within what is left.
                let session = self.config.budget.session_usd;
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
}
