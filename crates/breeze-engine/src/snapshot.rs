//! `run.json`: the atomic snapshot of a run, rewritten after every change
//! (temporary file, fsync, rename, fsync of the directory).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use breeze_protocol::{
    AdvisorGuidance, BreezeStatus, BreezeStatusV1, ConflictInfo, ReviewFeedback, RunState,
    TaskState, TaskStatus, Usage, VerifyFailure,
};
use serde::{Deserialize, Serialize};

/// Version of the `run.json` layout; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

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
    pub main_tip_at_start: String,
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
}

/// Where a task is in its flow; what `resume` does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Not started.
    Queued,
    /// A worker has (or had) the task.
    Working,
    /// The worker's result (`head`) waits for the gates and the reviewer: `resume` goes
    /// straight to the review.
    Reviewing,
    /// Approved; landing is next.
    Approved,
    /// Finished (landed, escalated, blocked or failed).
    Done,
}

/// One task's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Visible state.
    pub state: TaskState,
    /// Flow stage.
    pub stage: Stage,
    /// Why escalated/blocked/failed/deferred.
    #[serde(default)]
    pub reason: Option<String>,
    /// Write group.
    #[serde(default)]
    pub group: Option<u32>,
    /// Worker attempts.
    #[serde(default)]
    pub attempts: u32,
    /// Review verdicts (gate failures included).
    #[serde(default)]
    pub rounds: u32,
    /// Successful advisor consults.
    #[serde(default)]
    pub advisor_consults: u32,
    /// Landing conflicts / verify failures sent back.
    #[serde(default)]
    pub land_bounces: u32,
    /// Task branch.
    #[serde(default)]
    pub branch: Option<String>,
    /// Base commit of the work.
    #[serde(default)]
    pub base: Option<String>,
    /// Latest commit of the work.
    #[serde(default)]
    pub head: Option<String>,
    /// Round that approved `head`.
    #[serde(default)]
    pub approved_round: Option<u32>,
    /// The reviewer's own verdict in that round when breeze normalized it to APPROVE.
    #[serde(default)]
    pub reviewer_said: Option<String>,
    /// Landing commit on main.
    #[serde(default)]
    pub commit: Option<String>,
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
    pub conflict_onto: Option<String>,
    /// Verify failure to fix in the next attempt.
    #[serde(default)]
    pub verify_failure: Option<VerifyFailure>,
    /// Blocking-gap file sets per round (plateau detection).
    #[serde(default)]
    pub gap_files: Vec<BTreeSet<String>>,
    /// Cost and tokens.
    #[serde(default)]
    pub usage: Usage,
}

impl TaskRecord {
    /// What the landing's `Breeze-Review` trailer says, once the task is approved.
    pub fn review_trailer(&self) -> Option<breeze_git::ReviewTrailer> {
        Some(breeze_git::ReviewTrailer {
            round: self.approved_round?,
            reviewer_said: self.reviewer_said.clone(),
        })
    }

    /// A fresh record.
    pub fn new(id: &str, title: &str, group: Option<u32>) -> TaskRecord {
        TaskRecord {
            id: id.to_string(),
            title: title.to_string(),
            state: TaskState::Pending,
            stage: Stage::Queued,
            reason: None,
            group,
            attempts: 0,
            rounds: 0,
            advisor_consults: 0,
            land_bounces: 0,
            branch: None,
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
        }
    }
}

impl RunSnapshot {
    /// The `breeze-status.v1` view.
    pub fn status(&self) -> BreezeStatus {
        let mut usage = Usage::default();
        for task in &self.tasks {
            usage.add(&task.usage);
        }
        BreezeStatus {
            schema_version: BreezeStatusV1,
            run_id: self.run_id.clone(),
            state: self.state,
            workers: self.workers,
            plan: Some(self.plan.clone()),
            started_at: Some(self.started_at.clone()),
            updated_at: Some(self.updated_at.clone()),
            tasks: self
                .tasks
                .iter()
                .map(|task| TaskStatus {
                    id: task.id.clone(),
                    title: task.title.clone(),
                    state: task.state,
                    attempts: task.attempts,
                    rounds: task.rounds,
                    advisor_consults: task.advisor_consults,
                    commit: task.commit.clone(),
                    reason: task.reason.clone(),
                    group: task.group,
                    usage: task.usage,
                    review: task.review_trailer().map(|trailer| trailer.to_string()),
                })
                .collect(),
            usage,
            containment: self.containment.clone(),
        }
    }

    /// Finds a task record by id.
    pub fn task(&self, id: &str) -> Option<&TaskRecord> {
        self.tasks.iter().find(|task| task.id == id)
    }

    /// Writes the snapshot atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_atomically(path, &text)
    }

    /// Reads a snapshot.
    pub fn load(path: &Path) -> Result<RunSnapshot, SnapshotError> {
        let text = std::fs::read(path).map_err(|err| SnapshotError {
            path: path.display().to_string(),
            message: err.to_string(),
        })?;
        let snapshot: RunSnapshot = serde_json::from_slice(&text).map_err(|err| SnapshotError {
            path: path.display().to_string(),
            message: err.to_string(),
        })?;
        if snapshot.format_version != FORMAT_VERSION {
            return Err(SnapshotError {
                path: path.display().to_string(),
                message: format!(
                    "format_version {} is not supported by this breeze (expects {FORMAT_VERSION})",
                    snapshot.format_version
                ),
            });
        }
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

/// Temporary file in the same directory, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let temp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, path)?;
    if let Ok(dir_handle) = std::fs::File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}
