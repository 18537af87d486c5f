//! The run's book: the snapshot of every task, and the one place a task changes state.
//!
//! A [`Transition`] updates the snapshot, the journal and the progress stream together —
//! the three can never disagree about what happened to a task. Everything is written by
//! the run files' own thread ([`RunStore`]); the async threads wait for it without blocking.

use std::sync::Mutex;

use breeze_protocol::{Cause, EventKind};

use crate::clock;
use crate::error::EngineError;
use crate::journal::{CycleRecord, RunStore};
use crate::progress::{ProgressEvent, ProgressSink};
use crate::snapshot::{ObjectId, RunSnapshot, TaskPhase, TaskRecord};
use crate::snapshot_changes::ChangeLog;

/// A change of a task's phase, with what the user is told about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transition {
    /// A worker takes (or takes up again) the task. After a send-back the task keeps its
    /// cause while it works again.
    Work,
    /// Back to the worker without a review round being counted: a gate, a check, the
    /// landing or a person sent it back.
    SendBack { cause: Cause },
    /// The worker's result waits for the gates and the reviewer.
    Review,
    /// Approved: landing is next (also after a deferral, when it is tried again).
    Approve,
    /// On main.
    Land { commit: ObjectId },
    /// Approved, but the landing waits (a dirty file, a lock).
    Defer { cause: Cause },
    /// Approved by the reviewer; the landing waits for a person (`breeze approve`).
    AwaitApproval { cause: Cause },
    /// Published where the target takes it in later (a pull request): it lands when the
    /// team merges it.
    Publish { cause: Cause },
    /// Given up.
    Escalate { cause: Cause },
    /// A dependency will never land.
    Block { cause: Cause },
    /// An error outside the task's control.
    Fail { cause: Cause },
    /// The run stops while the task is unfinished: it keeps its phase for `resume`.
    Stop { cause: Cause },
    /// A blocked task waits to start again (what blocked it is taken up again).
    Requeue { cause: Cause },
}

impl Transition {
    /// The phase after the transition (`current` for a stop).
    fn phase(&self, current: TaskPhase) -> TaskPhase {
        match self {
            Self::Work | Self::SendBack { .. } => TaskPhase::Working,
            Self::Review => TaskPhase::Reviewing,
            Self::Approve => TaskPhase::Approved,
            Self::Land { .. } => TaskPhase::Landed,
            Self::Defer { .. } => TaskPhase::Deferred,
            Self::AwaitApproval { .. } => TaskPhase::AwaitingApproval,
            Self::Publish { .. } => TaskPhase::PrOpen,
            Self::Escalate { .. } => TaskPhase::Escalated,
            Self::Block { .. } => TaskPhase::Blocked,
            Self::Fail { .. } => TaskPhase::Failed,
            Self::Stop { .. } => current,
            Self::Requeue { .. } => TaskPhase::Queued,
        }
    }

    /// Why, for the record and the journal: the transition's own cause; a task taken up
    /// again while it works keeps the cause it was sent back with.
    fn cause(&self, current: TaskPhase, kept: Option<&Cause>) -> Option<Cause> {
        match self {
            Self::SendBack { cause }
            | Self::Defer { cause }
            | Self::AwaitApproval { cause }
            | Self::Publish { cause }
            | Self::Escalate { cause }
            | Self::Block { cause }
            | Self::Fail { cause }
            | Self::Stop { cause }
            | Self::Requeue { cause } => Some(cause.clone()),
            Self::Work if current == TaskPhase::Working => kept.cloned(),
            _ => None,
        }
    }
}

/// The snapshot, its store and the progress stream of one run.
pub(crate) struct TaskBook {
    held: Mutex<Held>,
    store: RunStore,
    progress: ProgressSink,
}

/// The snapshot, and what of it was last written.
struct Held {
    snapshot: RunSnapshot,
    written: ChangeLog,
}

impl TaskBook {
    pub fn new(snapshot: RunSnapshot, store: RunStore, progress: ProgressSink) -> TaskBook {
        TaskBook {
            held: Mutex::new(Held { snapshot, written: ChangeLog::default() }),
            store,
            progress,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A copy of a task's record.
    pub fn record(&self, index: usize) -> TaskRecord {
        self.lock().snapshot.tasks[index].clone()
    }

    /// Reads the snapshot.
    pub fn read<R>(&self, look: impl FnOnce(&RunSnapshot) -> R) -> R {
        look(&self.lock().snapshot)
    }

    /// The phase of every task, in plan order.
    pub fn phases(&self) -> Vec<TaskPhase> {
        self.lock().snapshot.tasks.iter().map(|task| task.phase).collect()
    }

    /// Changes the snapshot anywhere and saves it whole.
    pub async fn update<R>(
        &self,
        change: impl FnOnce(&mut RunSnapshot) -> R,
    ) -> Result<R, EngineError> {
        self.save_change(None, change).await
    }

    /// Changes the run's own fields and the task at `index` — no other task — and saves
    /// what changed (a change line: its size does not grow with the plan).
    pub async fn update_task<R>(
        &self,
        index: usize,
        change: impl FnOnce(&mut RunSnapshot) -> R,
    ) -> Result<R, EngineError> {
        self.save_change(Some(index), change).await
    }

    /// Changes a task's record (counters, commits, feedback — not its phase) and saves.
    pub async fn change<R>(
        &self,
        index: usize,
        change: impl FnOnce(&mut TaskRecord) -> R,
    ) -> Result<R, EngineError> {
        self.update_task(index, |snapshot| change(&mut snapshot.tasks[index])).await
    }

    /// Makes a change and saves it: a change line of the task at `task` (with the run's
    /// own fields), or the whole snapshot.
    async fn save_change<R>(
        &self,
        task: Option<usize>,
        change: impl FnOnce(&mut RunSnapshot) -> R,
    ) -> Result<R, EngineError> {
        let (result, saved) = {
            let mut held = self.lock();
            let Held { snapshot, written } = &mut *held;
            let result = change(snapshot);
            snapshot.updated_at = clock::now_rfc3339();
            let write = written
                .next_write(snapshot, task)
                .map_err(EngineError::internal("the run state"))?;
            // Queued while the lock is held: the writes reach the disk in the order of the
            // changes, so what is on disk holds every change before the newest write.
            (result, self.store.save_snapshot(write))
        };
        saved.await.map_err(|err| EngineError::io("cannot save the run state (run.json)", err))?;
        Ok(result)
    }

    /// Moves a task to its next phase: snapshot, journal and progress together.
    pub async fn transition(
        &self,
        index: usize,
        transition: Transition,
    ) -> Result<(), EngineError> {
        // A task already working that starts its next attempt changes nothing: no write (the
        // lane's first attempt would otherwise be recorded twice, and every write on a task's
        // way is an fsync on the run's critical path). A task sent back still writes: the
        // journal says it runs again, with the cause it keeps while it works.
        let unchanged = self.read(|snapshot| {
            let task = &snapshot.tasks[index];
            matches!(transition, Transition::Work)
                && task.phase == TaskPhase::Working
                && task.reason.is_none()
        });
        if unchanged {
            return Ok(());
        }
        let (id, visible, commit, cause) = self
            .update_task(index, |snapshot| {
                let task = &mut snapshot.tasks[index];
                let cause = transition.cause(task.phase, task.cause.as_ref());
                task.phase = transition.phase(task.phase);
                task.set_cause(cause.clone());
                if let Transition::Land { commit } = &transition {
                    task.commit = Some(*commit);
                }
                (task.id.clone(), task.phase.visible(true), task.commit, cause)
            })
            .await?;
        let landed = matches!(transition, Transition::Land { .. });
        if landed {
            crate::kill_points::reached("landing:state-saved");
        }
        if matches!(transition, Transition::Approve) {
            crate::kill_points::reached("approve:state-saved");
        }
        let reason = cause.as_ref().map(Cause::line);
        let event = match &transition {
            Transition::SendBack { cause } => {
                EventKind::SentBack { task: id.clone(), reason: cause.line(), cause: cause.clone() }
            }
            _ => EventKind::TaskState {
                task: id.clone(),
                state: visible,
                reason: reason.clone(),
                cause: cause.clone(),
            },
        };
        self.journal(event).await?;
        if landed {
            crate::kill_points::reached("landing:state-journaled");
        }
        match &transition {
            Transition::SendBack { cause } => {
                self.report(ProgressEvent::SentBack { id, cause: cause.clone() });
            }
            Transition::Defer { cause } => {
                self.report(ProgressEvent::Deferred { id, reason: cause.line() });
            }
            Transition::AwaitApproval { cause } => {
                self.report(ProgressEvent::AwaitingApproval { id, reason: cause.line() });
            }
            Transition::Publish { cause } => {
                self.report(ProgressEvent::PullRequestOpen { id, reason: cause.line() });
            }
            Transition::Land { .. }
            | Transition::Escalate { .. }
            | Transition::Block { .. }
            | Transition::Fail { .. } => self.report(ProgressEvent::TaskFinished {
                id,
                state: visible,
                commit: commit.map(|c| c.to_string()),
                reason,
            }),
            Transition::Work
            | Transition::Review
            | Transition::Approve
            | Transition::Stop { .. }
            | Transition::Requeue { .. } => {}
        }
        Ok(())
    }

    /// Appends an event to the journal and waits until it is on disk.
    pub async fn journal(&self, event: EventKind) -> Result<(), EngineError> {
        self.store.record(event).await.map_err(|err| {
            EngineError::io(
                format!("cannot append to {}", self.store.journal_path().display()),
                err,
            )
        })
    }

    /// Appends a line to `cycles.jsonl`.
    pub fn cycle(&self, record: CycleRecord) {
        self.store.cycle(record);
    }

    /// Tells whoever drives the run.
    pub fn report(&self, event: ProgressEvent) {
        (self.progress)(&event);
    }

    /// The store, for the role runner's process journal.
    pub fn store(&self) -> &RunStore {
        &self.store
    }
}
