//! `run.json`: the atomic snapshot of a run (a temporary file in the same folder, fsync,
//! rename, fsync of the folder), and `run-changes.jsonl` beside it: the task records
//! changed since `run.json` was last written whole, one fsynced line per change.
//!
//! A change to one task appends that task's record (and the run's own fields, when they
//! changed), not the whole run: what is written per event does not grow with the plan.
//! The engine writes `run.json` whole again once the change lines outweigh it (so a
//! reader folds at most about as much again as the file itself) and when a run ends.
//! Each whole `run.json` has a new `generation`; a change line counts only for the
//! generation it was written against, so lines left by a kill between a whole write and
//! the removal of the older lines are never applied twice. [`RunSnapshot::load`] folds the
//! lines in: every reader sees the state as of the last fsynced change.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use breeze_protocol::{
    AdvisorGuidance, BreezeStatus, BreezeStatusV1, Cause, ConflictInfo, ReviewFeedback, RunState,
    ScopeDecision, TaskState, TaskStatus, Usage, VerifyFailure,
};
use serde::{Deserialize, Serialize};

/// Version of the `run.json` layout; bumped on incompatible changes (2: one `phase` per
/// task instead of a state and a stage; commit ids checked when read; 3: changes since the
/// last whole write in `run-changes.jsonl`, which a breeze reading 2 would not see).
pub const FORMAT_VERSION: u32 = 3;

/// The oldest layout this breeze still reads (2 differs only by having no change lines).
const OLDEST_READABLE: u32 = 2;

/// A git object id as run files keep it: 40 hex digits, checked when the file is read,
/// so no code parses commit ids out of strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub breeze_git::Oid);

impl ObjectId {
    /// The first 12 hex digits, for messages.
    pub fn short(&self) -> String {
        self.0.to_string()[..12].to_string()
    }
}

impl From<breeze_git::Oid> for ObjectId {
    fn from(oid: breeze_git::Oid) -> ObjectId {
        ObjectId(oid)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for ObjectId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ObjectId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        breeze_git::Oid::from_str(&text)
            .map(ObjectId)
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a git object id")))
    }
}

/// Everything needed to show or resume a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSnapshot {
    /// Layout version.
    pub format_version: u32,
    /// Run id (uuid v7).
    pub run_id: String,
    /// Plan file, as given.
    pub plan: String,
    /// Run state.
    pub state: RunState,
    /// Lanes.
    pub workers: u32,
    /// Branch work lands on.
    pub main_branch: String,
    /// Main tip when the run started.
    pub main_tip_at_start: ObjectId,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Why the run stopped, when interrupted.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Tasks in plan order.
    pub tasks: Vec<TaskRecord>,
    /// Trigger hashes consulted in this run → saved response file.
    #[serde(default)]
    pub consulted: BTreeMap<String, String>,
    /// Universal lessons from reviews, injected into later worker briefings.
    #[serde(default)]
    pub universal_violations: Vec<String>,
    /// How role processes are confined (set at each start and resume).
    #[serde(default)]
    pub containment: Option<breeze_protocol::ContainmentStatus>,
    /// What the run may spend (set at each start and resume).
    #[serde(default)]
    pub budget: BudgetRecord,
    /// Which whole write this is: the change lines of `run-changes.jsonl` written against
    /// another generation are not this file's.
    #[serde(default)]
    pub generation: u64,
    /// What the run waits for, as it last said (`run_waiting`): the status shows each wait
    /// with the tasks still waiting for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<breeze_protocol::RunWait>,
    /// Each backend's usage windows as last reported (`crate::quota`): a resumed run pauses
    /// on them as the stopped one did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<breeze_protocol::UsageWindow>,
}

/// A run's budget: the caps in force and what `breeze resume --budget-*` raised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetRecord {
    /// The caps in force since the latest start or resume: `[budget]` with the raises.
    #[serde(default)]
    pub caps: breeze_protocol::BudgetCaps,
    /// The run cap `breeze resume --budget-usd` set (kept for later resumes).
    #[serde(default)]
    pub raised_usd: Option<f64>,
    /// The token cap `breeze resume --budget-tokens` set.
    #[serde(default)]
    pub raised_tokens: Option<u64>,
}

/// Where a task is in its flow — the one state of a task. What `breeze status` shows
/// ([`TaskPhase::visible`]) and what `resume` does next both follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskPhase {
    /// Not started.
    Queued,
    /// A worker has (or had) the task; `resume` runs it again.
    Working,
    /// The worker's result (`head`) waits for the gates and the reviewer; `resume` reviews
    /// it rather than redoing it.
    Reviewing,
    /// Approved; landing is next.
    Approved,
    /// Approved, but landing waits for the user's checkout (or a lock).
    Deferred,
    /// Approved by the reviewer; landing waits for `breeze approve` (`land.require_approval`).
    AwaitingApproval,
    /// Pushed as a pull request (`land.to = "pull-request"`); lands when its change reaches
    /// the target branch.
    PrOpen,
    /// On main.
    Landed,
    /// Given up: attempts, rounds, stalls, an Advisor STOP or the worker's own word.
    Escalated,
    /// A dependency did not land.
    Blocked,
    /// An error outside the task's control.
    Failed,
}

impl TaskPhase {
    /// Whether the task is done for this run.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Landed | Self::Escalated | Self::Blocked | Self::Failed)
    }

    /// Whether a task in this phase still waits for `what`: awaiting approval, its pull
    /// request open, its landing deferred — or being tried again (a deferred landing's
    /// retry is the same wait).
    pub fn still_waits_for(self, what: breeze_protocol::WaitingFor) -> bool {
        match what {
            breeze_protocol::WaitingFor::Approval => self == Self::AwaitingApproval,
            breeze_protocol::WaitingFor::PullRequests => self == Self::PrOpen,
            breeze_protocol::WaitingFor::Checkout => {
                matches!(self, Self::Deferred | Self::Approved)
            }
        }
    }

    /// Approved, and waiting to land: for the user's checkout, a person's approval or its
    /// pull request's merge. It holds no lane, but tasks that conflict with it do not start.
    pub fn waits_to_land(self) -> bool {
        matches!(self, Self::Deferred | Self::AwaitingApproval | Self::PrOpen)
    }

    /// What the user sees. While no engine runs the run (`live` false), a task not yet
    /// started is `pending` and one whose work had started is `interrupted`: nothing works
    /// on it until `breeze resume`.
    pub fn visible(self, live: bool) -> TaskState {
        match self {
            Self::Landed => TaskState::Landed,
            Self::Escalated => TaskState::Escalated,
            Self::Blocked => TaskState::Blocked,
            Self::Failed => TaskState::Failed,
            Self::Deferred => TaskState::Deferred,
            Self::AwaitingApproval => TaskState::AwaitingApproval,
            Self::PrOpen => TaskState::PrOpen,
            Self::Queued => TaskState::Pending,
            _ if !live => TaskState::Interrupted,
            Self::Working => TaskState::Running,
            Self::Reviewing => TaskState::Reviewing,
            Self::Approved => TaskState::Landing,
        }
    }
}

/// One task's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Where the task is.
    pub phase: TaskPhase,
    /// Why escalated/blocked/failed/deferred, why it stopped, or why it was sent back to
    /// work: `cause` as one line.
    #[serde(default)]
    pub reason: Option<String>,
    /// The cause behind `reason` (set together, through [`TaskRecord::set_cause`]).
    #[serde(default)]
    pub cause: Option<Cause>,
    /// Write group.
    #[serde(default)]
    pub group: Option<u32>,
    /// Worker attempts.
    #[serde(default)]
    pub attempts: u32,
    /// Reviewer verdicts (gate and check failures are not rounds).
    #[serde(default)]
    pub rounds: u32,
    /// Gate and check failures sent back to the worker, in all.
    #[serde(default)]
    pub gate_failures: u32,
    /// Gate and check failures since the gates last passed (three escalate).
    #[serde(default)]
    pub gate_failures_in_row: u32,
    /// Successful advisor consults.
    #[serde(default)]
    pub advisor_consults: u32,
    /// Landing conflicts / verify failures sent back.
    #[serde(default)]
    pub land_bounces: u32,
    /// Task branch.
    #[serde(default)]
    pub branch: Option<String>,
    /// Branches with earlier work of the task, set aside by `breeze retry --fresh`.
    #[serde(default)]
    pub earlier_branches: Vec<String>,
    /// Base commit of the work.
    #[serde(default)]
    pub base: Option<ObjectId>,
    /// Latest commit of the work.
    #[serde(default)]
    pub head: Option<ObjectId>,
    /// Round that approved `head`.
    #[serde(default)]
    pub approved_round: Option<u32>,
    /// The reviewer's own verdict in that round when breeze normalized it to APPROVE.
    #[serde(default)]
    pub reviewer_said: Option<String>,
    /// Landing commit on main.
    #[serde(default)]
    pub commit: Option<ObjectId>,
    /// Backend session to resume for fix rounds.
    #[serde(default)]
    pub session_id: Option<String>,
    /// That session's running totals after its last run.
    #[serde(default)]
    pub session_usage: Option<Usage>,
    /// Guidance for the next attempt.
    #[serde(default)]
    pub guidance: Option<AdvisorGuidance>,
    /// Gaps to fix in the next attempt.
    #[serde(default)]
    pub feedback: Option<ReviewFeedback>,
    /// Landing conflict to resolve in the next attempt.
    #[serde(default)]
    pub conflict: Option<ConflictInfo>,
    /// Main tip the landing conflicted with.
    #[serde(default)]
    pub conflict_onto: Option<ObjectId>,
    /// Verify failure to fix in the next attempt.
    #[serde(default)]
    pub verify_failure: Option<VerifyFailure>,
    /// Blocking-gap file sets per round (plateau detection).
    #[serde(default)]
    pub gap_files: Vec<BTreeSet<String>>,
    /// Cost and tokens.
    #[serde(default)]
    pub usage: Usage,
    /// Paths granted to the task's write set by scope requests.
    #[serde(default)]
    pub granted_writes: Vec<String>,
    /// Scope requests made.
    #[serde(default)]
    pub scope_requests: u32,
    /// The answer to the last scope request, for the next attempt.
    #[serde(default)]
    pub scope_decision: Option<ScopeDecision>,
    /// Completed reports sent back because their self-review did not hold.
    #[serde(default)]
    pub self_review_bounces: u32,
    /// The worker's line for the project's changelog, added when the task lands (kept only,
    /// with `land.changelog = "off"`).
    #[serde(default)]
    pub changelog: Option<String>,
    /// The saved file of the task's last Advisor answer (`prior_advisor_response`).
    #[serde(default)]
    pub last_advice: Option<String>,
    /// A person approved the reviewed work for landing (`breeze approve`).
    #[serde(default)]
    pub human_approved: bool,
    /// A note from the person who retried the task, for its next attempt.
    #[serde(default)]
    pub note: Option<String>,
    /// The commit a person's `breeze attach` left on the task's branch, reviewed as their
    /// attempt (its `cycles.jsonl` line is the person's).
    #[serde(default)]
    pub person_head: Option<ObjectId>,
    /// Its pull request (`land.to = "pull-request"`), once its branch was pushed.
    #[serde(default)]
    pub pull_request: Option<PullRequestRecord>,
}

/// A task's pull request as the run keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequestRecord {
    /// The remote.
    pub remote: String,
    /// The branch breeze pushes (`breeze/3`).
    pub branch: String,
    /// The branch it merges into: the target branch, or the branch of the task it is
    /// stacked on.
    pub base_branch: String,
    /// The task it is stacked on (`land.stack`), if any.
    #[serde(default)]
    pub stacked_on: Option<String>,
    /// The commit breeze pushed last.
    pub commit: ObjectId,
    /// The commit that one was built on (the target's tip then): what was on the target
    /// branch before, so never a sign of the merge.
    pub onto: ObjectId,
    /// The first URL the pull-request command printed.
    #[serde(default)]
    pub url: Option<String>,
    /// The pull-request command was started for it (a retry after a kill may find the
    /// pull request already there).
    #[serde(default)]
    pub command_started: bool,
    /// The pull-request command succeeded. (Whether its change reached the target branch
    /// is the task's phase: landed. A `merged` field of earlier run files is ignored.)
    #[serde(default)]
    pub opened: bool,
    /// What following it on the forge found and did.
    #[serde(default)]
    pub follow: PrFollowRecord,
}

/// What following a pull request on the forge found and did (`land.pr_checks_command`,
/// `land.pr_reviews_command`): what lasts between looks and across a resume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrFollowRecord {
    /// Follow-up rounds started: failed checks or review comments sent back to the worker.
    #[serde(default)]
    pub rounds: u32,
    /// What its checks said at the last look.
    #[serde(default)]
    pub checks: Option<breeze_protocol::PrChecks>,
    /// What its reviews said at the last look.
    #[serde(default)]
    pub review: Option<breeze_protocol::PrReview>,
    /// The pushed commit whose failed checks went back to the worker: charged once.
    #[serde(default)]
    pub charged: Option<ObjectId>,
    /// The pushed commit `reruns` are about.
    #[serde(default)]
    pub rerun_on: Option<ObjectId>,
    /// The checks asked to run again on `rerun_on` (each once).
    #[serde(default)]
    pub reruns: Vec<String>,
    /// The reviews and comments handed to the worker, by key: never handed again.
    #[serde(default)]
    pub handed: Vec<String>,
    /// Each follow-up round: what went back, in one line (the description tells them).
    #[serde(default)]
    pub history: Vec<String>,
    /// The last `pull_request_followed` event, as JSON: a look that finds the same says
    /// nothing.
    #[serde(default)]
    pub said: Option<String>,
}

impl TaskRecord {
    /// A fresh record.
    pub fn new(id: &str, title: &str, group: Option<u32>) -> TaskRecord {
        TaskRecord {
            id: id.to_string(),
            title: title.to_string(),
            phase: TaskPhase::Queued,
            reason: None,
            cause: None,
            group,
            attempts: 0,
            rounds: 0,
            gate_failures: 0,
            gate_failures_in_row: 0,
            advisor_consults: 0,
            land_bounces: 0,
            branch: None,
            earlier_branches: Vec::new(),
            base: None,
            head: None,
            approved_round: None,
            reviewer_said: None,
            commit: None,
            session_id: None,
            session_usage: None,
            guidance: None,
            feedback: None,
            conflict: None,
            conflict_onto: None,
            verify_failure: None,
            gap_files: Vec::new(),
            usage: Usage::default(),
            granted_writes: Vec::new(),
            scope_requests: 0,
            scope_decision: None,
            self_review_bounces: 0,
            changelog: None,
            last_advice: None,
            human_approved: false,
            note: None,
            pull_request: None,
            person_head: None,
        }
    }

    /// Sets why the task is where it is: the cause and its line together (`None` clears
    /// both).
    pub fn set_cause(&mut self, cause: Option<Cause>) {
        self.reason = cause.as_ref().map(Cause::line);
        self.cause = cause;
    }

    /// A person's change (`breeze attach`) at `head` is the task's work now: it goes to a
    /// review of its own; an earlier approval, conflict or verify failure is not its.
    pub fn take_person_change(&mut self, head: ObjectId) {
        self.person_head = Some(head);
        self.human_approved = false;
        self.conflict = None;
        self.verify_failure = None;
    }

    /// What the landing's `Breeze-Review` trailer says, once the task is approved.
    pub fn review_trailer(&self) -> Option<breeze_git::ReviewTrailer> {
        Some(breeze_git::ReviewTrailer {
            round: self.approved_round?,
            reviewer_said: self.reviewer_said.clone(),
        })
    }

    /// The task as `breeze status` shows it.
    pub fn status(&self, live: bool) -> TaskStatus {
        TaskStatus {
            id: self.id.clone(),
            title: self.title.clone(),
            state: self.phase.visible(live),
            attempts: self.attempts,
            rounds: self.rounds,
            gate_failures: self.gate_failures,
            advisor_consults: self.advisor_consults,
            commit: self.commit.map(|commit| commit.to_string()),
            reason: self.reason.clone(),
            cause: self.cause.clone(),
            group: self.group,
            usage: self.usage,
            review: self.review_trailer().map(|trailer| trailer.to_string()),
            granted_writes: self.granted_writes.clone(),
            pull_request: self.pull_request.as_ref().map(|pr| breeze_protocol::PullRequestStatus {
                url: pr.url.clone(),
                branch: pr.branch.clone(),
                target: format!("{}/{}", pr.remote, pr.base_branch),
                commit: pr.commit.to_string(),
                merged: self.phase == TaskPhase::Landed,
                checks: pr.follow.checks,
                review: pr.follow.review,
                follow_ups: pr.follow.rounds,
            }),
            branch: self.branch.clone(),
            earlier_branches: self.earlier_branches.clone(),
        }
    }
}

impl RunSnapshot {
    /// The `breeze-status.v1` view, as the engine running the run sees it.
    pub fn status(&self) -> BreezeStatus {
        self.status_as(self.state, self.state == RunState::Running)
    }

    /// The `breeze-status.v1` view as a reader outside the engine sees it: a run whose
    /// state file says `running` while no engine holds the repository (`engine_alive`
    /// false) was killed — it is `interrupted`, and so is each task whose work had started.
    pub fn status_seen(&self, engine_alive: bool) -> BreezeStatus {
        if self.state == RunState::Running && !engine_alive {
            self.status_as(RunState::Interrupted, false)
        } else {
            self.status()
        }
    }

    /// The view with the run in `state`, its tasks as seen with (`live`) or without an
    /// engine working on them.
    fn status_as(&self, state: RunState, live: bool) -> BreezeStatus {
        let usage = self.spent();
        BreezeStatus {
            schema_version: BreezeStatusV1,
            run_id: self.run_id.clone(),
            state,
            workers: self.workers,
            plan: Some(self.plan.clone()),
            lands_on: (!self.main_branch.is_empty()).then(|| self.main_branch.clone()),
            started_at: Some(self.started_at.clone()),
            updated_at: Some(self.updated_at.clone()),
            tasks: self.tasks.iter().map(|task| task.status(live)).collect(),
            usage,
            budget: self.budget.caps.any().then_some(self.budget.caps),
            containment: self.containment.clone(),
            waiting: self.waits_left(),
            windows: self.windows.clone(),
        }
    }

    /// The run's waits with only the tasks still waiting for each (a task approved, merged
    /// or landed meanwhile is not), and none left empty.
    fn waits_left(&self) -> Vec<breeze_protocol::RunWait> {
        let still = |wait: &breeze_protocol::RunWait, id: &String| {
            self.task(id).is_some_and(|task| task.phase.still_waits_for(wait.waiting_for))
        };
        self.waiting
            .iter()
            .map(|wait| {
                let tasks = wait.tasks.iter().filter(|id| still(wait, id)).cloned().collect();
                breeze_protocol::RunWait { tasks, ..wait.clone() }
            })
            .filter(|wait| !wait.tasks.is_empty())
            .collect()
    }

    /// What the run has spent: the sum of its tasks'.
    pub fn spent(&self) -> Usage {
        let mut usage = Usage::default();
        for task in &self.tasks {
            usage.add(&task.usage);
        }
        usage
    }

    /// Finds a task record by id.
    pub fn task(&self, id: &str) -> Option<&TaskRecord> {
        self.tasks.iter().find(|task| task.id == id)
    }

    /// The snapshot as written to `run.json`.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec_pretty(self)
    }

    /// Writes the snapshot whole and atomically, as a new generation: the change lines
    /// written before it are set aside.
    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        self.generation += 1;
        let bytes = self.to_json().map_err(std::io::Error::other)?;
        self.write_whole(path, bytes)
    }

    /// Reads a snapshot.
    pub fn load(path: &Path) -> Result<RunSnapshot, SnapshotError> {
        let error = |message: String| SnapshotError { path: path.display().to_string(), message };
        let text = std::fs::read(path).map_err(|err| error(err.to_string()))?;
        let version: serde_json::Value =
            serde_json::from_slice(&text).map_err(|err| error(err.to_string()))?;
        let found = version.get("format_version").and_then(serde_json::Value::as_u64);
        if !found
            .is_some_and(|v| (u64::from(OLDEST_READABLE)..=u64::from(FORMAT_VERSION)).contains(&v))
        {
            return Err(error(format!(
                "format_version {} is not supported by this breeze (expects {FORMAT_VERSION}); finish the run with the breeze that started it, or give it up with `breeze abort`",
                found.map_or("(none)".to_string(), |v| v.to_string())
            )));
        }
        let mut snapshot: RunSnapshot =
            serde_json::from_value(version).map_err(|err| error(err.to_string()))?;
        snapshot.fold_changes(path).map_err(error)?;
        Ok(snapshot)
    }
}

/// A `run.json` that cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot read run state {path}: {message}")]
pub struct SnapshotError {
    /// File.
    pub path: String,
    /// Why.
    pub message: String,
}

/// A temporary file in the same folder, fsync, rename over `path`, fsync of the folder: a
/// reader sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".").suffix(".tmp").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|err| err.error)?;
    if let Ok(dir_handle) = std::fs::File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_tasks_show_as_interrupted_when_no_engine_runs_them() {
        assert_eq!(TaskPhase::Working.visible(true), TaskState::Running);
        assert_eq!(TaskPhase::Working.visible(false), TaskState::Interrupted);
        assert_eq!(TaskPhase::Reviewing.visible(true), TaskState::Reviewing);
        assert_eq!(TaskPhase::Reviewing.visible(false), TaskState::Interrupted);
        assert_eq!(TaskPhase::Approved.visible(true), TaskState::Landing);
        assert_eq!(TaskPhase::Approved.visible(false), TaskState::Interrupted);
        assert_eq!(TaskPhase::Queued.visible(false), TaskState::Pending);
        assert_eq!(TaskPhase::Deferred.visible(false), TaskState::Deferred);
        assert_eq!(TaskPhase::Landed.visible(false), TaskState::Landed);
    }

    #[test]
    fn a_run_whose_engine_was_killed_reads_as_interrupted_task_by_task() {
        let oid = breeze_git::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let mut tasks = vec![
            TaskRecord::new("1", "Working", None),
            TaskRecord::new("2", "Queued", None),
            TaskRecord::new("3", "Landed", None),
        ];
        tasks[0].phase = TaskPhase::Working;
        tasks[2].phase = TaskPhase::Landed;
        let snapshot = RunSnapshot {
            format_version: FORMAT_VERSION,
            run_id: "r".into(),
            plan: "plan.toml".into(),
            // What a killed engine leaves: it never wrote how the run ended.
            state: RunState::Running,
            workers: 1,
            main_branch: "main".into(),
            main_tip_at_start: ObjectId(oid),
            started_at: String::new(),
            updated_at: String::new(),
            stop_reason: None,
            tasks,
            consulted: BTreeMap::new(),
            universal_violations: Vec::new(),
            containment: None,
            budget: BudgetRecord::default(),
            generation: 0,
            waiting: Vec::new(),
            windows: Vec::new(),
        };
        let states = |status: BreezeStatus| {
            (status.state, status.tasks.iter().map(|task| task.state).collect::<Vec<_>>())
        };
        assert_eq!(
            states(snapshot.status_seen(false)),
            (
                RunState::Interrupted,
                vec![TaskState::Interrupted, TaskState::Pending, TaskState::Landed]
            )
        );
        assert_eq!(
            states(snapshot.status_seen(true)),
            (RunState::Running, vec![TaskState::Running, TaskState::Pending, TaskState::Landed])
        );
    }

    #[test]
    fn object_ids_are_checked_when_a_run_file_is_read() {
        let oid = breeze_git::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let json = serde_json::to_string(&ObjectId(oid)).unwrap();
        assert_eq!(json, "\"0123456789abcdef0123456789abcdef01234567\"");
        assert_eq!(serde_json::from_str::<ObjectId>(&json).unwrap(), ObjectId(oid));
        let err = serde_json::from_str::<ObjectId>("\"main\"").unwrap_err();
        assert!(err.to_string().contains("not a git object id"), "{err}");
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
