//! Approving and rejecting from `breeze watch`: the tasks waiting for approval are offered
//! one at a time in the view's keys line; `a` or `r` asks, `y` confirms (any other key
//! takes it back), `n` offers the next one. A decision goes through the same engine call
//! as `breeze approve` / `breeze reject`, so the live run takes it up at once.

use breeze_engine::decision::{self, HumanDecision};
use breeze_protocol::TaskState;

use crate::live::model::LiveModel;

/// The note a rejection from the view carries (the worker is told it).
const REJECT_NOTE: &str = "rejected in breeze watch";

/// What the keys line offers.
#[derive(Debug, Default)]
pub struct ApprovalKeys {
    /// The task offered (its id), when one waits.
    offered: Option<String>,
    /// A decision asked for, waiting for `y`.
    asked: Option<Asked>,
    /// What the last decision did, shown until the next key.
    said: Option<String>,
}

/// A decision asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Approve,
    Reject,
}

/// What a key means.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyAction {
    /// Nothing for the run; redraw.
    Redraw,
    /// Decide on a task.
    Decide { task: String, approve: bool },
}

impl ApprovalKeys {
    /// Follows the model: the task offered stays while it waits, else the first that waits.
    pub fn follow(&mut self, model: &LiveModel) {
        let waiting = waiting(model);
        if self.offered.as_ref().is_none_or(|id| !waiting.contains(id)) {
            self.offered = waiting.first().cloned();
            self.asked = None;
        }
    }

    /// What `key` means now.
    pub fn key(&mut self, key: u8, model: &LiveModel) -> KeyAction {
        self.said = None;
        let Some(task) = self.offered.clone() else { return KeyAction::Redraw };
        if let Some(asked) = self.asked.take() {
            return match key {
                b'y' | b'Y' => KeyAction::Decide { task, approve: asked == Asked::Approve },
                _ => KeyAction::Redraw,
            };
        }
        match key {
            b'a' | b'A' => self.asked = Some(Asked::Approve),
            b'r' | b'R' => self.asked = Some(Asked::Reject),
            b'n' | b'N' => {
                let waiting = waiting(model);
                let next = waiting.iter().position(|id| *id == task).map_or(0, |at| at + 1);
                self.offered = waiting.get(next % waiting.len().max(1)).cloned();
            }
            _ => {}
        }
        KeyAction::Redraw
    }

    /// Takes the decision, as `breeze approve` / `breeze reject` would, and keeps what it
    /// did (or why it could not) for the keys line.
    pub fn decide(&mut self, here: &std::path::Path, task: &str, approve: bool) {
        let decision = if approve {
            HumanDecision::Approve
        } else {
            HumanDecision::Reject { note: REJECT_NOTE.into() }
        };
        let said = match decision::decide(here, &[task.to_string()], &decision) {
            Ok(_) if approve => format!("approved {task}: the run lands it now"),
            Ok(_) => format!("rejected {task}: back to its worker"),
            Err(err) => format!("could not decide on {task}: {err}"),
        };
        self.said = Some(said);
        self.offered = None;
    }

    /// The keys line: leaving, and what may be decided.
    pub fn footer(&self, model: &LiveModel) -> String {
        let leave = "q: leave (the run goes on)";
        let said = self.said.as_ref().map(|said| format!(" · {said}")).unwrap_or_default();
        let Some(task) = &self.offered else { return format!("{leave}{said}") };
        let title = model
            .tasks
            .iter()
            .find(|view| view.id == *task)
            .map(|view| view.title.as_str())
            .unwrap_or_default();
        match self.asked {
            Some(Asked::Approve) => format!("approve [{task}] {title}? y: yes · other key: no"),
            Some(Asked::Reject) => format!("reject [{task}] {title}? y: yes · other key: no"),
            None => {
                let more = waiting(model).len().saturating_sub(1);
                let next =
                    if more > 0 { format!(" · n: next ({more} more)") } else { String::new() };
                // What the last decision did goes first: a narrow terminal cuts the end.
                let first = self.said.as_deref().unwrap_or("q: leave");
                format!("{first} · a: approve [{task}] · r: reject [{task}]{next}")
            }
        }
    }
}

/// The tasks waiting for approval, in plan order.
fn waiting(model: &LiveModel) -> Vec<String> {
    model
        .tasks
        .iter()
        .filter(|view| view.state == TaskState::AwaitingApproval)
        .map(|view| view.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::BreezeEvent;

    fn model_with(states: &[(&str, &str)]) -> LiveModel {
        let mut model = LiveModel::default();
        for (seq, (task, state)) in states.iter().enumerate() {
            let line = format!(
                r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:00.000Z","event":{{"kind":"task_state","task":"{task}","state":"{state}"}}}}"#
            );
            let event: BreezeEvent = serde_json::from_str(&line).unwrap();
            model.apply(&event);
        }
        model
    }

    #[test]
    fn a_task_waiting_for_approval_is_offered_and_decided_only_after_y() {
        let model = model_with(&[("1", "awaiting-approval"), ("2", "running")]);
        let mut keys = ApprovalKeys::default();
        keys.follow(&model);
        let footer = keys.footer(&model);
        assert!(footer.contains("a: approve [1] · r: reject [1]"), "{footer}");
        assert!(!footer.contains("n: next"), "one task waits: {footer}");
        assert_eq!(keys.key(b'a', &model), KeyAction::Redraw);
        assert!(keys.footer(&model).starts_with("approve [1] "), "{}", keys.footer(&model));
        // Any other key takes the question back.
        assert_eq!(keys.key(b'x', &model), KeyAction::Redraw);
        assert!(keys.footer(&model).contains("a: approve [1]"));
        keys.key(b'r', &model);
        assert_eq!(keys.key(b'y', &model), KeyAction::Decide { task: "1".into(), approve: false });
    }

    #[test]
    fn n_offers_the_next_waiting_task_and_nothing_is_offered_when_none_waits() {
        let model = model_with(&[("1", "awaiting-approval"), ("2", "awaiting-approval")]);
        let mut keys = ApprovalKeys::default();
        keys.follow(&model);
        assert!(keys.footer(&model).contains("n: next (1 more)"), "{}", keys.footer(&model));
        keys.key(b'n', &model);
        keys.key(b'a', &model);
        assert_eq!(keys.key(b'y', &model), KeyAction::Decide { task: "2".into(), approve: true });

        let none = model_with(&[("1", "running")]);
        let mut keys = ApprovalKeys::default();
        keys.follow(&none);
        assert_eq!(keys.footer(&none), "q: leave (the run goes on)");
        assert_eq!(keys.key(b'a', &none), KeyAction::Redraw);
        assert_eq!(keys.key(b'y', &none), KeyAction::Redraw, "nothing to confirm");
    }
}
