//! A person's say in a run: `breeze approve` and `breeze reject` decide about reviewed work
//! that `land.require_approval` holds back, `breeze retry` gives escalated or failed tasks
//! a fresh start (`--fresh`: from main's tip, their earlier branch set aside). Several tasks
//! are decided together or not at all: an unknown id, or a task in the wrong state, and
//! nothing is decided for any.
//!
//! Approvals and rejections are decision files in the run folder, which the engine — live,
//! or on `breeze resume` — takes and acts on: a file, not a signal, so it works whether or
//! not an engine is running, and nothing is lost if one stops.

use std::path::Path;

use breeze_protocol::{Cause, CauseKind, EventKind, RunState, TaskState};
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
/// awaiting approval. All or nothing: unknown ids or tasks not awaiting approval are an
/// error naming each of them, and no decision is left.
pub fn decide(
    repo_dir: &Path,
    ids: &[String],
    decision: &HumanDecision,
) -> Result<DecideReport, EngineError> {
    let repo = breeze_git::Repo::open(repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let (run_id, snapshot) = latest(&root)?;
    let ids = distinct(ids);
    let tasks = known_tasks(&run_id, &snapshot, &ids, "take a decision")?;
    let not_waiting: Vec<String> = tasks
        .iter()
        .filter(|task| task.phase != TaskPhase::AwaitingApproval)
        .map(|task| format!("{} is {}", task.id, task.phase.visible(true).as_str()))
        .collect();
    if !not_waiting.is_empty() {
        return Err(EngineError::usage(
            format!("not awaiting approval: {}; nothing was decided", not_waiting.join(", ")),
            "only reviewed tasks held by `land.require_approval` take a decision; `breeze status` shows which",
        ));
    }
    let run_dir = RunDir::new(&root, &run_id);
    let mut left: Vec<&str> = Vec::new();
    for id in &ids {
        if let Err(err) = leave(&run_dir, id, decision) {
            // All or nothing: the decisions already left are taken back.
            for done in left {
                let _ = std::fs::remove_file(run_dir.decision(&file_slug(done)));
            }
            return Err(err);
        }
        left.push(id);
    }
    Ok(DecideReport { run_id, live: RepoLock::is_held(&root) })
}

/// The ids once each, in the order given.
fn distinct(ids: &[String]) -> Vec<String> {
    let mut seen = Vec::new();
    for id in ids {
        if !seen.contains(id) {
            seen.push(id.clone());
        }
    }
    seen
}

/// The records of `ids`, or an error naming every id the run does not have.
fn known_tasks<'a>(
    run_id: &str,
    snapshot: &'a RunSnapshot,
    ids: &[String],
    what: &str,
) -> Result<Vec<&'a TaskRecord>, EngineError> {
    let unknown: Vec<&str> =
        ids.iter().filter(|id| snapshot.task(id).is_none()).map(String::as_str).collect();
    if !unknown.is_empty() {
        return Err(EngineError::usage(
            format!("run {run_id} has no task {}; nothing was decided", unknown.join(", ")),
            format!("`breeze status` lists the tasks that can {what}"),
        ));
    }
    Ok(ids.iter().filter_map(|id| snapshot.task(id)).collect())
}

/// What `retry` did.
#[derive(Debug, Clone)]
pub struct RetryReport {
    /// The run.
    pub run_id: String,
    /// Each task retried, in the order given.
    pub tasks: Vec<RetriedTask>,
    /// Tasks that were blocked by them and wait again.
    pub unblocked: Vec<String>,
}

/// One retried task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetriedTask {
    /// Task id.
    pub id: String,
    /// The branch it goes on with, holding its work so far (a plain retry).
    pub branch: Option<String>,
    /// With `fresh`: the branch its earlier work stays on, set aside; the task starts on a
    /// new branch from main's tip when `breeze resume` runs it.
    pub set_aside: Option<String>,
    /// With `fresh`: the attempts and rounds it had made; it starts again at attempt 1,
    /// round 1 (these counts stay in the journal).
    pub earlier: Option<EarlierCounts>,
}

/// What a task had done before a fresh retry started it again at attempt 1, round 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlierCounts {
    /// Worker attempts made.
    pub attempts: u32,
    /// Review rounds held.
    pub rounds: u32,
}

/// How `retry` starts the tasks again.
#[derive(Debug, Clone, Default)]
pub struct RetryOptions {
    /// A note for each task's next briefing.
    pub note: Option<String>,
    /// Start from main's tip on a new branch; the earlier branch is kept as it is.
    pub fresh: bool,
}

/// Gives escalated or failed tasks of the latest (stopped) run a fresh budget of attempts,
/// rounds and gate failures, with the note in their briefing — on their branch with their
/// work so far, or (`fresh`) from main's tip on a new branch, the earlier branch set aside
/// under its own name and listed by `breeze status` and `breeze clean`. Tasks they blocked
/// wait again. `breeze resume` runs them. All or nothing: unknown ids or tasks that are not
/// escalated or failed are an error naming each, and nothing is retried.
pub fn retry(
    repo_dir: &Path,
    ids: &[String],
    options: &RetryOptions,
) -> Result<RetryReport, EngineError> {
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
    let ids = distinct(ids);
    let tasks = known_tasks(&run_id, &snapshot, &ids, "be retried")?;
    let unfit: Vec<String> = tasks
        .iter()
        .filter(|task| !matches!(task.phase, TaskPhase::Escalated | TaskPhase::Failed))
        .map(|task| format!("{} is {}", task.id, task.phase.visible(false).as_str()))
        .collect();
    if !unfit.is_empty() {
        return Err(EngineError::usage(
            format!(
                "retry takes an escalated or failed task, and {}; nothing was retried",
                unfit.join(", ")
            ),
            "`breeze status` shows each task's state",
        ));
    }
    let note = options.note.clone().filter(|note| !note.trim().is_empty());
    let run_dir = RunDir::new(&root, &run_id);
    let mut retried = Vec::new();
    for id in &ids {
        let task = snapshot.tasks.iter_mut().find(|task| &task.id == id).expect("checked above");
        retried.push(start_again(task, note.clone(), options.fresh));
        if options.fresh {
            // Round 1 and attempt 1 come again: their files must not overwrite these.
            run_dir.set_aside_task_files(&file_slug(id)).map_err(|err| {
                EngineError::io(format!("cannot set aside the files of task {id}"), err)
            })?;
        }
    }
    let unblocked = unblock(&mut snapshot);
    let stop_reason = format!(
        "task{} {} retried; `breeze resume` runs {}",
        if ids.len() == 1 { "" } else { "s" },
        ids.join(", "),
        if ids.len() == 1 { "it" } else { "them" }
    );
    let events = retried
        .iter()
        .map(|task| {
            let mut detail = match &task.earlier {
                Some(earlier) => format!(
                    "retried from main's tip by a person: attempt 1, round 1 again (after {})",
                    earlier.said()
                ),
                None => "retried by a person".to_string(),
            };
            if let Some(branch) = &task.set_aside {
                detail.push_str(&format!("; the earlier work stays on branch `{branch}`"));
            }
            let cause = Cause::new(CauseKind::Person, detail);
            EventKind::TaskState {
                task: task.id.clone(),
                state: TaskState::Pending,
                reason: Some(cause.line()),
                cause: Some(cause),
            }
        })
        .collect();
    save_stopped(&run_dir, &mut snapshot, stop_reason, events)?;
    Ok(RetryReport { run_id, tasks: retried, unblocked })
}

impl EarlierCounts {
    /// `3 attempts and 2 rounds`.
    pub fn said(&self) -> String {
        let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        format!("{} and {}", plural(self.attempts, "attempt"), plural(self.rounds, "round"))
    }
}

/// Resets a task for another go: a fresh budget (review rounds, gate failures, bounces),
/// the note for its next briefing. `fresh` starts it over: its branch, base and everything
/// tied to them dropped, and its counts from zero — attempt 1, round 1, no gaps, gate
/// failures or consults behind it (the earlier counts are in [`RetriedTask::earlier`]); the
/// Advisor's guidance stays.
fn start_again(task: &mut TaskRecord, note: Option<String>, fresh: bool) -> RetriedTask {
    fresh_budget(task, note.as_deref());
    if !fresh {
        task.phase = if task.branch.is_some() { TaskPhase::Working } else { TaskPhase::Queued };
        let branch = task.branch.clone();
        return RetriedTask { id: task.id.clone(), branch, set_aside: None, earlier: None };
    }
    let earlier = EarlierCounts { attempts: task.attempts, rounds: task.rounds };
    task.attempts = 0;
    task.rounds = 0;
    task.gate_failures = 0;
    task.advisor_consults = 0;
    let set_aside = task.branch.take();
    if let Some(branch) = &set_aside
        && !task.earlier_branches.contains(branch)
    {
        task.earlier_branches.push(branch.clone());
    }
    task.phase = TaskPhase::Queued;
    task.base = None;
    task.head = None;
    task.approved_round = None;
    task.reviewer_said = None;
    task.feedback = None;
    task.conflict = None;
    task.conflict_onto = None;
    task.verify_failure = None;
    task.session_id = None;
    task.session_usage = None;
    task.changelog = None;
    task.human_approved = false;
    RetriedTask { id: task.id.clone(), branch: None, set_aside, earlier: Some(earlier) }
}

/// Gives task `index` of `snapshot` a fresh budget of attempts and rounds (and `note` for
/// its briefing) on its branch, as `breeze retry` does; tasks it blocked wait again. Their
/// ids.
pub(crate) fn retry_task(
    snapshot: &mut RunSnapshot,
    index: usize,
    note: Option<&str>,
) -> Vec<String> {
    start_again(&mut snapshot.tasks[index], note.map(str::to_string), false);
    unblock(snapshot)
}

/// Blocked tasks wait again (the scheduler blocks again what still cannot run); their ids.
fn unblock(snapshot: &mut RunSnapshot) -> Vec<String> {
    let mut unblocked = Vec::new();
    for other in snapshot.tasks.iter_mut().filter(|other| other.phase == TaskPhase::Blocked) {
        other.phase = TaskPhase::Queued;
        other.set_cause(None);
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
    // A person's change gives the run work to do: it no longer only waits.
    if !snapshot.state.is_resumable() || snapshot.state == RunState::Waiting {
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

/// A fresh budget of rounds, gate failures, bounces and scope requests for a task taken up
/// again, with `note` for its briefing.
pub(crate) fn fresh_budget(task: &mut TaskRecord, note: Option<&str>) {
    task.set_cause(None);
    task.gap_files.clear();
    task.land_bounces = 0;
    task.self_review_bounces = 0;
    task.scope_requests = 0;
    task.gate_failures_in_row = 0;
    task.note = note.map(str::to_string).filter(|note| !note.trim().is_empty());
}

/// The latest run and its snapshot.
pub(crate) fn latest(root: &Path) -> Result<(String, RunSnapshot), EngineError> {
    let run_id = latest_run(root).ok_or_else(|| {
        EngineError::usage(
            "there are no runs in this repository",
            "start one with `breeze run PLAN`",
        )
    })?;
    let snapshot = RunSnapshot::load(&RunDir::new(root, &run_id).snapshot())?;
    Ok((run_id, snapshot))
}
