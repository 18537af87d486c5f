//! A run waiting with the people around it (`breeze run --wait`): what it waits for and
//! since when, said once per wait (journal, `run.json`, progress — and so the notify
//! command), and the bell that rings when a person leaves a decision, so that an approval
//! from another terminal is taken up at once.
//!
//! The dispatcher decides when the run waits (nothing else can move); this keeps what was
//! said, so that a wait is said when it is new — a reason, or a task joining one — and not
//! at every look.

use breeze_protocol::{EventKind, RunWait, WaitingFor};
use breeze_supervise::TreeWatch;

use super::context::RunContext;
use crate::error::EngineError;
use crate::progress::ProgressEvent;

/// The run's waiting: whether it waits at all, the waits it said, the decisions' bell.
pub(crate) struct Waiting {
    /// `--wait`: the run waits rather than stopping.
    on: bool,
    /// The waits last said, pruned of the tasks that left them.
    said: Vec<RunWait>,
    /// Rings when a decision file is left (inotify on the run's `decisions/`).
    bell: Option<TreeWatch>,
}

impl Waiting {
    /// A run that stops rather than waits.
    pub fn off() -> Waiting {
        Waiting { on: false, said: Vec::new(), bell: None }
    }

    /// A run that waits for people and forges: the decisions' folder is watched.
    pub fn on(ctx: &RunContext) -> Waiting {
        let folder = ctx.run_dir.decisions();
        // Without the folder (or without inotify) the dispatcher's periodic look remains.
        let bell = match std::fs::create_dir_all(&folder) {
            Ok(()) => Some(TreeWatch::with_skipped(folder, Vec::<std::ffi::OsString>::new())),
            Err(err) => {
                tracing::warn!(
                    "cannot watch {}: {err}; decisions are looked for every half second",
                    folder.display()
                );
                None
            }
        };
        Waiting { on: true, said: Vec::new(), bell }
    }

    /// Whether the run waits rather than stops.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Returns when a person left (or took) a decision; never without a bell.
    pub async fn decision_left(&self) {
        match &self.bell {
            Some(bell) => bell.changed().await,
            None => std::future::pending().await,
        }
    }

    /// Forgets the tasks that no longer wait for what they waited for (approved, merged,
    /// sent back): when one waits again, that is a new wait.
    pub fn prune(&mut self, ctx: &RunContext) {
        if self.said.is_empty() {
            return;
        }
        let still = |wait: &RunWait, id: &String| {
            ctx.book.read(|snapshot| {
                snapshot.task(id).is_some_and(|task| task.phase.still_waits_for(wait.waiting_for))
            })
        };
        for wait in &mut self.said {
            let kept: Vec<String> =
                wait.tasks.iter().filter(|id| still(wait, id)).cloned().collect();
            wait.tasks = kept;
        }
        self.said.retain(|wait| !wait.tasks.is_empty());
    }

    /// Says what the run waits for now (`now`: each reason with its tasks, by index): in
    /// `run.json` always; in the journal and the progress stream — the live view, the
    /// notify command — when something in it is new and the run waits rather than stops.
    pub async fn say(
        &mut self,
        ctx: &RunContext,
        now: Vec<(WaitingFor, Vec<usize>)>,
    ) -> Result<(), EngineError> {
        let waits = self.dated(ctx, now);
        let new = waits.iter().any(|wait| {
            let before = self.said.iter().find(|said| said.waiting_for == wait.waiting_for);
            wait.tasks.iter().any(|id| before.is_none_or(|said| !said.tasks.contains(id)))
        });
        if !new {
            return Ok(());
        }
        self.said = waits.clone();
        let recorded = waits.clone();
        ctx.book.update(|snapshot| snapshot.waiting = recorded).await?;
        if self.on {
            ctx.book.journal(EventKind::RunWaiting { waits: waits.clone() }).await?;
            ctx.book.report(ProgressEvent::RunWaiting { waits });
        }
        Ok(())
    }

    /// The waits with their task ids, each since the time it was first said while some of
    /// its tasks still wait (else now).
    fn dated(&self, ctx: &RunContext, now: Vec<(WaitingFor, Vec<usize>)>) -> Vec<RunWait> {
        let at = crate::clock::now_rfc3339();
        now.into_iter()
            .filter(|(_, tasks)| !tasks.is_empty())
            .map(|(waiting_for, tasks)| {
                let tasks: Vec<String> =
                    tasks.into_iter().map(|index| ctx.task(index).id.to_string()).collect();
                let since = self
                    .said
                    .iter()
                    .find(|said| said.waiting_for == waiting_for)
                    .filter(|said| said.tasks.iter().any(|id| tasks.contains(id)))
                    .map_or_else(|| at.clone(), |said| said.since.clone());
                RunWait { waiting_for, tasks, since }
            })
            .collect()
    }
}
