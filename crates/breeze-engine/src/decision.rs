//! A person's say in a run: `breeze approve` and `breeze reject` decide about reviewed work
//! that `land.require_approval` holds back, `breeze retry` gives an escalated or failed task
//! a fresh start.
//!
//! Approvals and rejections are decision files in the run folder, which the engine — live,
//! or on `breeze resume` — takes and acts on: a file, not a signal, so it works whether or
//! not an engine is running, and nothing is lost if one stops.

use std::path::Path;

use breeze_protocol::{EventKind, RunState, TaskState};
use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::lock::{LockError, RepoLock};
use crate::run_dir::{RunDir, file_slug, latest_run};
use crate::snapshot::{RunSnapshot, TaskPhase, TaskRecord};

/// What a person decided about a task awaiting approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum HumanDecision {
    /// It lands.
    Approve,
    /// It goes back to the same worker, with the note as a critical finding.
    Reject {
        /// What is wrong.
        note: String,
    },
}

/// Leaves `decision` for task `id` of the run in `run_dir`.
pub fn leave(run_dir: &RunDir, id: &str, decision: &HumanDecision) -> Result<(), EngineError> {
    let path = run_dir.decision(&file_slug(id));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|err| EngineError::io(format!("cannot create {}", parent.display()), err))?;
    }
    let text = serde_json::to_vec_pretty(decision).map_err(EngineError::internal("a decision"))?;
    crate::snapshot::write_atomically(&path, &text)
        .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
}

/// Takes the decision left for task `id`, if there is one (the file is removed once read).
/// An unreadable file is left where it is and reported.
pub fn take(run_dir: &RunDir, id: &str) -> Option<HumanDecision> {
    let path = run_dir.decision(&file_slug(id));
    let bytes = std::fs::read(&path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(decision) => {
            let _ = std::fs::remove_file(&path);
            Some(decision)
        }
        Err(err) => {
            tracing::warn!("{} is not a decision breeze understands: {err}", show(&path));
            None
        }
    }
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

/// What `decide` did.
#[derive(Debug, Clone)]
pub struct DecideReport {
    /// The run.
    pub run_id: String,
    /// Whether an engine runs it now (it acts on the decisions within a second; otherwise
    /// `breeze resume` does).
    pub live: bool,
}

/// Leaves `decision` for each of the tasks `ids` of the latest run; every one must be
/// awaiting approval.
pub fn decide(
    repo_dir: &Path,
    ids: &[String],
    decision: &HumanDecision,
) -> Result<DecideReport, EngineError> {
    let repo = breeze_git::Repo::open(repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let (run_id, snapshot) = latest(&root)?;
    for id in ids {
        let Some(task) = snapshot.task(id) else {
            return Err(EngineError::usage(
                format!("run {run_id} has no task {id}"),
                "`breeze status` lists the tasks and their states",
            ));
        };
        if task.phase != TaskPhase::AwaitingApproval {
            return Err(EngineError::usage(
                format!(
                    "task {id} is {}, not awaiting approval",
                    task.phase.visible(true).as_str()
                ),
                "only reviewed tasks held by `land.require_approval` take a decision; `breeze status` shows which",
            ));
        }
    }
    let run_dir = RunDir::new(&root, &run_id);
    for id in ids {
        leave(&run_dir, id, decision)?;
    }
    Ok(DecideReport { run_id, live: RepoLock::is_held(&root) })
}

/// What `retry` did.
#[derive(Debug, Clone)]
pub struct RetryReport {
    /// The run.
    pub run_id: String,
    /// The branch holding the task's work so far, if it has one.
    pub branch: Option<String>,
    /// Tasks that were blocked by it and wait again.
    pub unblocked: Vec<String>,
}

/// Gives an escalated or failed task of the latest (stopped) run a fresh budget of attempts
/// and rounds, on its branch with its work so far, with `note` in its briefing; tasks it
/// blocked wait again. `breeze resume` runs it.
pub fn retry(repo_dir: &Path, id: &str, note: Option<&str>) -> Result<RetryReport, EngineError> {
    let repo = breeze_git::Repo::open(repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let _lock = match RepoLock::acquire(&root) {
        Ok(lock) => lock,
        Err(LockError::Held { .. }) => {
            return Err(EngineError::usage(
                "a run is live in this repository; a task is retried in a stopped run",
                "wait for it to end (or stop it with Ctrl-C), then `breeze retry` and `breeze resume`",
            ));
        }
        Err(err) => return Err(err.into()),
    };
    let (run_id, mut snapshot) = latest(&root)?;
    let Some(index) = snapshot.tasks.iter().position(|task| task.id == id) else {
        return Err(EngineError::usage(
            format!("run {run_id} has no task {id}"),
            "`breeze status` lists the tasks",
        ));
    };
    let phase = snapshot.tasks[index].phase;
    if !matches!(phase, TaskPhase::Escalated | TaskPhase::Failed) {
        return Err(EngineError::usage(
            format!(
                "task {id} is {}; retry takes an escalated or failed task",
                phase.visible(false).as_str()
            ),
            "`breeze status` shows each task's state",
        ));
    }
    let branch = snapshot.tasks[index].branch.clone();
    let unblocked = retry_task(&mut snapshot, index, note);
    let event = EventKind::TaskState {
        task: id.to_string(),
        state: TaskState::Pending,
        reason: Some("retried by a person".into()),
    };
    let stop_reason = format!("task {id} was retried; `breeze resume` runs it");
    save_stopped(&RunDir::new(&root, &run_id), &mut snapshot, stop_reason, vec![event])?;
    Ok(RetryReport { run_id, branch, unblocked })
}

/// Gives task `index` of `snapshot` a fresh budget of attempts and rounds (and `note` for
/// its briefing): it works again on its branch, or waits to start without one. Tasks it
/// blocked wait again (the scheduler blocks again what still cannot run); their ids.
pub(crate) fn retry_task(
    snapshot: &mut RunSnapshot,
    index: usize,
    note: Option<&str>,
) -> Vec<String> {
    let task = &mut snapshot.tasks[index];
    task.phase = if task.branch.is_some() { TaskPhase::Working } else { TaskPhase::Queued };
    fresh_budget(task, note);
    let mut unblocked = Vec::new();
    for other in snapshot.tasks.iter_mut().filter(|other| other.phase == TaskPhase::Blocked) {
        other.phase = TaskPhase::Queued;
        other.reason = None;
        unblocked.push(other.id.clone());
    }
    unblocked
}

/// Saves a person's change to a stopped run — `snapshot`, resumable with `stop_reason` —
/// and journals `events`, for the next `breeze resume` (the caller holds the run lock).
pub(crate) fn save_stopped(
    run_dir: &RunDir,
    snapshot: &mut RunSnapshot,
    stop_reason: String,
    events: Vec<EventKind>,
) -> Result<(), EngineError> {
    if !snapshot.state.is_resumable() {
        snapshot.state = RunState::Interrupted;
    }
    snapshot.stop_reason = Some(stop_reason);
    snapshot.updated_at = crate::clock::now_rfc3339();
    snapshot.save(&run_dir.snapshot()).map_err(|err| {
        EngineError::io(format!("cannot write {}", run_dir.snapshot().display()), err)
    })?;
    let journal = crate::journal::Journal::open(&run_dir.events()).map_err(|err| {
        EngineError::io(format!("cannot open {}", run_dir.events().display()), err)
    })?;
    for event in events {
        journal
            .record(event)
            .map_err(|err| EngineError::io("cannot append to the journal", err))?;
    }
    Ok(())
}

/// A fresh budget of attempts, rounds, bounces and scope requests for a task taken up
/// again, with `note` for its briefing.
pub(crate) fn fresh_budget(task: &mut TaskRecord, note: Option<&str>) {
    task.reason = None;
    task.gap_files.clear();
    task.land_bounces = 0;
    task.self_review_bounces = 0;
    task.scope_requests = 0;
    task.note = note.map(str::to_string).filter(|note| !note.trim().is_empty());
}

/// The latest run and its snapshot.
fn latest(root: &Path) -> Result<(String, RunSnapshot), EngineError> {
    let run_id = latest_run(root).ok_or_else(|| {
        EngineError::usage(
            "there are no runs in this repository",
            "start one with `breeze run PLAN`",
        )
    })?;
    let snapshot = RunSnapshot::load(&RunDir::new(root, &run_id).snapshot())?;
    Ok((run_id, snapshot))
}
