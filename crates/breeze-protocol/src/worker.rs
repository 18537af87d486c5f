//! `worker-input.v1` (Lead → Worker) and `worker-report.v1` (Worker → Lead).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::advisor::{AdvisorRequest, Decision};
use crate::common::{Gap, MemoryUpdate, TaskBrief};
use crate::version::{WorkerInputV1, WorkerReportV1};

/// Advice relayed to the worker (never shown to the reviewer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdvisorGuidance {
    /// `PLAN` or `CORRECTION`.
    pub decision: Decision,
    /// The Advisor's summary.
    pub summary: String,
    /// The Advisor's instructions.
    pub instructions: Vec<String>,
}

/// Critical and major gaps of the last review round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewFeedback {
    /// The round that requested changes.
    pub round: u32,
    /// The blocking gaps.
    pub gaps: Vec<Gap>,
}

/// Files that did not merge onto the current main tip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConflictInfo {
    /// Conflicted paths; the worktree was moved to the new base with them left to resolve.
    pub files: Vec<String>,
}

/// A failed `land.verify` run on the merged tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyFailure {
    /// The verify command.
    pub command: Vec<String>,
    /// Exit code, if the command exited.
    pub exit_code: Option<i32>,
    /// The end of its output.
    pub log_tail: String,
}

/// `worker-input.v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkerInput {
    /// Always `worker-input.v1`.
    pub schema_version: WorkerInputV1,
    /// The run.
    pub run_id: String,
    /// The task.
    pub task: TaskBrief,
    /// 1-based attempt.
    pub attempt: u32,
    /// 1-based round: 1 for the first implementation, k+1 after the k-th `REQUEST_CHANGES`.
    pub round: u32,
    /// Base commit of the worktree.
    pub base: String,
    /// Path of the task's `sprint-contract.v1`.
    pub contract_path: String,
    /// Advice to apply first, if any.
    pub advisor_guidance: Option<AdvisorGuidance>,
    /// Gaps to fix, if a review requested changes.
    pub review_feedback: Option<ReviewFeedback>,
    /// Landing conflict to resolve, if any.
    pub conflict: Option<ConflictInfo>,
    /// Failed verify run to fix, if any.
    #[serde(default)]
    pub verify_failure: Option<VerifyFailure>,
    /// Why the previous attempt of this round failed, if it did.
    #[serde(default)]
    pub last_failure: Option<String>,
    /// A note from the user who sent the task back (`breeze retry --note`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The Lead's answer to the worker's last scope request, if it made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_decision: Option<ScopeDecision>,
    /// Mistakes already found in this run that must not recur.
    pub universal_violations: Vec<String>,
}

/// Worker status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerStatus {
    /// The work is ready for review.
    #[serde(alias = "ready_for_review")]
    Completed,
    /// The attempt failed; the engine retries.
    Failed,
    /// The worker gives up on the task.
    Escalated,
    /// The worker asks the Advisor (`advisor_request` is set).
    NeedsAdvice,
    /// The worker needs to write paths outside its write set (`scope_request` is set); it
    /// has not written them.
    NeedsScope,
}

/// A worker's request to write paths outside its write set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeRequest {
    /// Repository-relative paths (files, `dir/`, globs), as in a write set.
    pub paths: Vec<String>,
    /// Why the task needs them.
    pub reason: String,
}

/// The Lead's answer to a scope request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeDecision {
    /// The paths asked for.
    pub paths: Vec<String>,
    /// Whether the write set now includes them.
    pub granted: bool,
    /// Why it was denied (or what the grant waited for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One self-review rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SelfReview {
    /// Rule id, e.g. `plans-cc-markers-untouched`.
    pub rule: String,
    /// Whether it holds.
    pub verified: bool,
    /// Evidence.
    #[serde(default)]
    pub evidence: String,
}

/// `worker-report.v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkerReport {
    /// Always `worker-report.v1`.
    pub schema_version: WorkerReportV1,
    /// `completed`, `failed`, `escalated` or `needs-advice`.
    pub status: WorkerStatus,
    /// Task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Files the worker changed.
    #[serde(default)]
    pub files_changed: Vec<String>,
    /// Commit the worker made, if any (the engine commits leftovers itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Branch worked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Worktree path (the original harness's camelCase name).
    #[serde(rename = "worktreePath", default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// What was done.
    #[serde(default)]
    pub summary: String,
    /// Lessons to remember.
    #[serde(default)]
    pub memory_updates: Vec<MemoryUpdate>,
    /// `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_applied: Option<String>,
    /// Whether the effort was enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_sufficient: Option<bool>,
    /// Agent turns used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_used: Option<u32>,
    /// Notes on complexity or stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_complexity_note: Option<String>,
    /// Self-review with evidence.
    #[serde(default)]
    pub self_review: Vec<SelfReview>,
    /// Why the worker failed or escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_reason: Option<String>,
    /// The question, when `status` is `needs-advice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisor_request: Option<AdvisorRequest>,
    /// The paths asked for, when `status` is `needs-scope`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_request: Option<ScopeRequest>,
    /// A line for the project's changelog (`CHANGELOG.md`, `CHANGES.rst`, …), which the Lead
    /// adds under "Unreleased" when the task lands (workers do not edit shared files such as
    /// the changelog themselves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog: Option<String>,
}
