//! Stepping into a task while no run is live. `breeze attach` holds the repository's run
//! lock for the whole session (no `breeze resume` starts meanwhile), checks the task out —
//! in the worktree that holds its branch; else in its last lane (`lane-<n>`): made anew when
//! that name is free, or the lane the run kept, parked at main's tip, switched to the task's
//! branch — kept for the resumed run; else in `attach-<task>`, removed afterwards —
//! and when the person leaves, records their attempt in the run files itself: their change
//! committed on the task's branch, to be reviewed by the next `breeze resume`.
//!
//! An escalated or failed task is retried first, as `breeze retry` would (a fresh budget of
//! attempts and rounds; tasks it blocked wait again), so the resumed run takes it up.

use breeze_git::{Oid, Repo, Worktree};
use breeze_protocol::{EventKind, PersonOutcome, TaskState};

use super::request::Paused;
use super::task::{TaskAt, worktree_of};
use crate::error::EngineError;
use crate::lock::{LockError, RepoLock};
use crate::snapshot::{ObjectId, RunSnapshot, TaskPhase};

/// What the person's attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonAttempt {
    /// They changed the task: this commit goes to review.
    Changed {
        /// Their commit on the task's branch.
        head: String,
    },
    /// They changed nothing: the task goes on where it was.
    Unchanged,
    /// What they left cannot be committed (why); it stays in the worktree.
    NotCommitted(String),
}

impl PersonAttempt {
    /// The journal's outcome for it (`PersonAttempt.outcome`).
    pub fn outcome(&self) -> PersonOutcome {
        match self {
            Self::Changed { .. } => PersonOutcome::Changed,
            Self::Unchanged => PersonOutcome::Unchanged,
            Self::NotCommitted(_) => PersonOutcome::NotCommitted,
        }
    }

    /// What a `person_attempt` event with these fields says (the journal's record of an attempt).
    pub fn of_event(
        outcome: PersonOutcome,
        head: Option<String>,
        error: Option<String>,
    ) -> PersonAttempt {
        match outcome {
            PersonOutcome::Changed => Self::Changed { head: head.unwrap_or_default() },
            PersonOutcome::NotCommitted => Self::NotCommitted(error.unwrap_or_default()),
            PersonOutcome::Unchanged => Self::Unchanged,
        }
    }

    /// The journal event of it.
    pub(crate) fn event(&self, task: &str) -> EventKind {
        EventKind::PersonAttempt {
            task: task.to_string(),
            outcome: self.outcome(),
            head: match self {
                Self::Changed { head } => Some(head.clone()),
                _ => None,
            },
            error: match self {
                Self::NotCommitted(why) => Some(why.clone()),
                _ => None,
            },
        }
    }
}

/// A task of a stopped run checked out for a person, the run held.
pub struct StoppedAttach {
    task: TaskAt,
    repo: Repo,
    worktree: Worktree,
    /// Made for this session alone: removed afterwards.
    temporary: bool,
    /// The task's commit before the person's session.
    before: Oid,
    /// Where the person works (what a live run's pause would say).
    pub paused: Paused,
    /// The branch that now holds what changed in the kept lane taken for the session since
    /// its run parked it (put back before the session, as a run does).
    pub saved_leftovers: Option<String>,
    _lock: RepoLock,
}

/// What [`StoppedAttach::finish`] did.
#[derive(Debug, Clone)]
pub struct StoppedReport {
    /// The person's attempt.
    pub attempt: PersonAttempt,
    /// The task was escalated or failed and is retried.
    pub retried: bool,
    /// Tasks it blocked that wait again.
    pub unblocked: Vec<String>,
    /// The worktree, when it stays (with what the person left uncommitted).
    pub kept: Option<std::path::PathBuf>,
}

impl StoppedAttach {
    /// Holds the stopped run of the repository containing `repo_dir` and checks task `id`
    /// out for a person. `after`: the pause of a live run that stopped while the person
    /// worked — their worktree is where it was, and what is in it is theirs.
    pub fn open(
        repo_dir: &std::path::Path,
        id: &str,
        after: Option<&Paused>,
    ) -> Result<StoppedAttach, EngineError> {
        let found = TaskAt::find(repo_dir, id)?;
        let lock = match RepoLock::acquire(&found.root) {
            Ok(lock) => lock,
            Err(LockError::Held { .. }) => {
                return Err(EngineError::usage(
                    "a run went live in this repository meanwhile",
                    format!("`breeze attach {id}` again: the live run pauses the task for you"),
                ));
            }
            Err(err) => return Err(err.into()),
        };
        // Read again under the lock: nothing changes it now.
        let snapshot = RunSnapshot::load(&found.run_dir.snapshot())?;
        let record = snapshot.task(id).cloned().unwrap_or(found.record);
        let task = TaskAt { record, live: false, ..found };
        task.check_attachable()?;
        let branch = task.branch()?.to_string();
        let repo = Repo::open(&task.root)?;
        let last_lane = last_lane(&task);
        let (worktree, temporary, saved_leftovers) = match worktree_of(&repo, &branch)? {
            Some(worktree) => (worktree, false, None),
            None => check_out(&repo, &task, &branch, last_lane)?,
        };
        // The person's git reads the lane's index file: a killed run's last commit may have
        // left it behind HEAD.
        repo.settle_lane_index(&worktree)?;
        if after.is_none() {
            // What a killed worker left is the worker's, not the person's.
            if let Err(err) =
                repo.commit_worktree(&worktree, "breeze: work left by an interrupted run")
            {
                tracing::warn!("{}: {err}; kept as it is", worktree.path.display());
            }
        }
        let before = match after {
            Some(paused) => Oid::from_str(&paused.head).map_err(|_| {
                EngineError::usage(
                    format!("the pause of task {id} names no commit: {:?}", paused.head),
                    "`breeze attach` the task again",
                )
            })?,
            None => repo.branch_tip(&branch)?.unwrap_or(worktree.base),
        };
        let paused = Paused {
            lane: last_lane.or(after.and_then(|paused| paused.lane)),
            worktree: worktree.path.clone(),
            branch,
            base: task.record.base.map_or(worktree.base, |base| base.0).to_string(),
            head: before.to_string(),
            session: task.record.session_id.clone(),
        };
        Ok(StoppedAttach {
            task,
            repo,
            worktree,
            temporary,
            before,
            paused,
            saved_leftovers,
            _lock: lock,
        })
    }

    /// Journals that the person stepped in (before their session opens).
    pub fn record_start(&self) -> Result<(), EngineError> {
        let event = EventKind::Attached {
            task: self.task.record.id.clone(),
            lane: self.paused.lane,
            worktree: self.worktree.path.display().to_string(),
        };
        let journal =
            crate::journal::Journal::open(&self.task.run_dir.events()).map_err(|err| {
                EngineError::io(
                    format!("cannot open {}", self.task.run_dir.events().display()),
                    err,
                )
            })?;
        journal
            .record(event)
            .map_err(|err| EngineError::io("cannot append to the journal", err))?;
        Ok(())
    }

    /// After the person's session: commits what they left and records their attempt, so
    /// that the next `breeze resume` reviews it (or goes on where the task was).
    pub fn finish(self) -> Result<StoppedReport, EngineError> {
        let id = self.task.record.id.clone();
        let message = format!("breeze: task {id}, changes by a person (breeze attach)");
        let attempt = match self.repo.commit_worktree(&self.worktree, &message) {
            Ok(outcome) if outcome.head() != self.before => {
                PersonAttempt::Changed { head: outcome.head().to_string() }
            }
            Ok(_) => PersonAttempt::Unchanged,
            Err(err) if crate::causes::worker_caused(&err) => {
                PersonAttempt::NotCommitted(err.to_string())
            }
            Err(err) => return Err(err.into()),
        };
        let run_dir = &self.task.run_dir;
        let mut snapshot = RunSnapshot::load(&run_dir.snapshot())?;
        let index = snapshot.tasks.iter().position(|task| task.id == id).ok_or_else(|| {
            EngineError::usage(
                format!("run {} has no task {id}", self.task.run_id),
                "`breeze status`",
            )
        })?;
        let mut events = Vec::new();
        let retried =
            matches!(snapshot.tasks[index].phase, TaskPhase::Escalated | TaskPhase::Failed);
        let unblocked = if retried {
            let cause = breeze_protocol::Cause::new(
                breeze_protocol::CauseKind::Person,
                "retried by a person (breeze attach)",
            );
            events.push(EventKind::TaskState {
                task: id.clone(),
                state: TaskState::Pending,
                reason: Some(cause.line()),
                cause: Some(cause),
            });
            crate::decision::retry_task(&mut snapshot, index, None)
        } else {
            Vec::new()
        };
        if let PersonAttempt::Changed { head } = &attempt {
            let head = ObjectId(Oid::from_str(head).map_err(EngineError::internal("a commit id"))?);
            let task = &mut snapshot.tasks[index];
            task.head = Some(head);
            task.phase = TaskPhase::Reviewing;
            task.set_cause(None);
            task.take_person_change(head);
        }
        events.push(attempt.event(&id));
        let next = match &attempt {
            PersonAttempt::Changed { .. } => "`breeze resume` reviews the change",
            _ => "`breeze resume` continues",
        };
        let stop_reason = format!("a person worked on task {id} (breeze attach); {next}");
        crate::decision::save_stopped(run_dir, &mut snapshot, stop_reason, events)?;
        let kept = self.put_away(&attempt);
        Ok(StoppedReport { attempt, retried, unblocked, kept })
    }

    /// Gives up the session before it opened (nothing is journaled): a worktree made for it
    /// alone goes; a lane it took (made anew, or a kept lane switched to the task's branch,
    /// its leftovers saved) stays on the task's branch, which the resumed run takes up.
    pub fn abandon(self) {
        self.put_away(&PersonAttempt::Unchanged);
    }

    /// Removes a worktree made for this session alone, unless the person left in it what
    /// could not be committed; the worktree that stays, if any.
    fn put_away(&self, attempt: &PersonAttempt) -> Option<std::path::PathBuf> {
        let path = self.worktree.path.clone();
        if !self.temporary {
            return matches!(attempt, PersonAttempt::NotCommitted(_)).then_some(path);
        }
        match self.repo.remove_worktree(&path, None, false) {
            Ok(breeze_git::RemoveOutcome::KeptDirty { .. }) => Some(path),
            Ok(_) => None,
            Err(err) => {
                tracing::warn!("cannot remove {}: {err}", path.display());
                Some(path)
            }
        }
    }
}

/// A worktree for the task's branch: named after its last lane (`last_lane`) when that is
/// free (the session of its agent was made there; the resumed run adopts it as that lane),
/// or that lane kept parked by its run, else a temporary `attach-<task>`. `true`:
/// temporary; with the branch that holds what changed in a kept lane since it was parked.
fn check_out(
    repo: &Repo,
    task: &TaskAt,
    branch: &str,
    last_lane: Option<u32>,
) -> Result<(Worktree, bool, Option<String>), EngineError> {
    if let Some(lane) = last_lane {
        let name = format!("lane-{lane}");
        if repo.worktree_name_free(&name)? {
            let reason = format!("breeze run {} (lane {lane})", task.run_id);
            return Ok((repo.create_worktree_on_branch(&name, branch, &reason)?, false, None));
        }
        // The lane the run kept, parked at main's tip: it takes the task's branch (what
        // changed in it since it was parked is saved on a branch first, as a run does when
        // it takes a kept lane), and is in use again, for the resumed run to adopt.
        let workdir = repo.workdir().to_path_buf();
        if let Some(record) = crate::lane_record::load(&workdir, &name)
            && let Some(parked) = repo.find_worktree(&name)?
            && record.parks(&parked)
        {
            let saved = record.save_leftovers(repo, &parked)?.map(|(saved, _)| saved);
            let switched = repo.switch_worktree(&parked, branch)?;
            let record = crate::lane_record::LaneRecord::in_use(&task.run_id, Some(record));
            crate::lane_record::save(&workdir, &name, &record);
            return Ok((switched, false, saved));
        }
    }
    let name = format!("attach-{}", Repo::slug(&task.record.id));
    let reason = format!("breeze attach (task {})", task.record.id);
    Ok((repo.create_worktree_on_branch(&name, branch, &reason)?, true, None))
}

/// The lane the task last had in its run, from the journal.
fn last_lane(task: &TaskAt) -> Option<u32> {
    let mut lane = None;
    let _ = crate::journal::for_each_event(&task.run_dir.events(), |event| {
        if let EventKind::TaskStarted { task: id, lane: n, .. } = event.event
            && id == task.record.id
        {
            lane = Some(n);
        }
    });
    lane
}
