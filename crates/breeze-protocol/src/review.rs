//! `review-result.v1` (Reviewer → Lead) and `review-input.v1` (Lead → Reviewer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Gap, MemoryUpdate, TaskBrief};
use crate::version::{ReviewInputV1, ReviewResultV1};

/// The Reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The change may land.
    Approve,
    /// The change goes back to its worker with the critical and major gaps.
    RequestChanges,
}

impl Verdict {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "APPROVE",
            Self::RequestChanges => "REQUEST_CHANGES",
        }
    }
}

/// What kind of review this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewType {
    /// A code change.
    Code,
    /// A plan.
    Plan,
    /// A scope question.
    Scope,
}

/// How the reviewer verified the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewerProfile {
    /// Reading the diff.
    Static,
    /// Running the contract's commands.
    Runtime,
    /// Driving a browser.
    Browser,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// The check held.
    Passed,
    /// The check did not hold.
    Failed,
    /// The check was not run.
    Skipped,
}

/// One check of a review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    /// Check id, e.g. `dod-primary`.
    pub id: String,
    /// Outcome.
    pub status: CheckStatus,
    /// Where the check comes from, e.g. `sprint-contract`.
    #[serde(default)]
    pub source: String,
}

/// `review-result.v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewResult {
    /// Always `review-result.v1`.
    pub schema_version: ReviewResultV1,
    /// `APPROVE` or `REQUEST_CHANGES`.
    pub verdict: Verdict,
    /// Kind of review (default `code`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub review_type: Option<ReviewType>,
    /// How the change was verified (default `static`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_profile: Option<ReviewerProfile>,
    /// Checks run.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// Findings.
    #[serde(default)]
    pub gaps: Vec<Gap>,
    /// Missing artifacts or items to re-verify.
    #[serde(default)]
    pub followups: Vec<String>,
    /// Lessons to remember.
    #[serde(default)]
    pub memory_updates: Vec<MemoryUpdate>,
    /// Set when the engine normalized the result: the task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Set when the engine normalized the result: the reviewed commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_hash: Option<String>,
    /// Set when the engine normalized the result: UTC time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<String>,
}

impl ReviewResult {
    /// The verdict the gaps imply: any critical or major gap means `REQUEST_CHANGES`,
    /// minor-only means `APPROVE`.
    pub fn implied_verdict(&self) -> Verdict {
        if self.gaps.iter().any(|gap| gap.severity.blocks()) {
            Verdict::RequestChanges
        } else {
            Verdict::Approve
        }
    }

    /// The gaps that block landing.
    pub fn blocking_gaps(&self) -> impl Iterator<Item = &Gap> {
        self.gaps.iter().filter(|gap| gap.severity.blocks())
    }
}

/// Outcome of one mechanical gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateStatus {
    /// The gate held.
    Passed,
    /// The gate failed; the task goes back to its worker.
    Failed,
    /// A `[review] checks` command failed, the same way as on main's tip the change starts
    /// from: main's failure, not the change's. The task is not sent back for it.
    Inherited,
    /// The gate found what the reviewer must look at before approving (agent
    /// configuration, content the diff cannot show plainly), named in `detail` and `paths`.
    /// The task is not sent back for it.
    Attention,
}

/// One mechanical gate run before review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GateResult {
    /// Gate id, e.g. `write-set`.
    pub id: String,
    /// Outcome.
    pub status: GateStatus,
    /// What was checked or what failed, with the offending paths.
    #[serde(default)]
    pub detail: String,
    /// The offending paths, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// `review-input.v1`: what the reviewer role is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewInput {
    /// Always `review-input.v1`.
    pub schema_version: ReviewInputV1,
    /// The run.
    pub run_id: String,
    /// The task under review.
    pub task: TaskBrief,
    /// 1-based review round.
    pub round: u32,
    /// Commit the task started from.
    pub base: String,
    /// Commit under review.
    pub head: String,
    /// Paths changed between base and head (rename-aware; both sides of a rename).
    pub changed_paths: Vec<String>,
    /// Path of a file with the unified diff base..head.
    pub diff_path: String,
    /// Mechanical gate results.
    pub gates: Vec<GateResult>,
    /// Path of the task's `sprint-contract.v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_path: Option<String>,
    /// The line breeze adds under "Unreleased" in the project's changelog when the task
    /// lands, from the worker's report (`changelog`), exactly as it will land; the file at
    /// `diff_path` ends with that change. Absent: the landing adds nothing to the changelog
    /// (no line, or `land.changelog = "off"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog: Option<String>,
}
