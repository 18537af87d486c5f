//! The Scaffolder's messages: `scaffold-input.v1` (Lead → Scaffolder) asks it to propose
//! write sets for tasks that have none, or to draft tasks from a goal; `plan-draft.v1`
//! (Scaffolder → Lead) is its answer. The Lead validates the draft before it touches the
//! plan file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::{PlanDraftV1, ScaffoldInputV1};

/// What the Scaffolder is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScaffoldMode {
    /// Propose a write set for each task in `tasks` (they have none).
    FillWrites,
    /// Turn `goal` into new tasks (ids not among `other_tasks`).
    Draft,
}

/// One task as the Scaffolder reads and proposes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftTask {
    /// Task id.
    pub id: String,
    /// What the task does.
    pub title: String,
    /// Definition of done.
    #[serde(default)]
    pub dod: String,
    /// Repository-relative paths the task may change: files, directories ending in `/`,
    /// globs.
    #[serde(default)]
    pub writes: Vec<String>,
    /// Ids of tasks that must land first.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Risk flags: `needs-spike`, `security-sensitive`, `state-migration`.
    #[serde(default)]
    pub risk: Vec<String>,
}

/// A bounded view of the repository: its tracked files at main's tip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepositoryView {
    /// Tracked paths, sorted (at most a bounded number).
    pub files: Vec<String>,
    /// How many tracked files there are in all.
    pub total_files: u64,
    /// Whether `files` was cut short.
    pub truncated: bool,
}

/// Two tasks of the last proposal that may not run side by side, with a path both may
/// write (or a file one may write where the other needs a folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftConflict {
    /// One task.
    pub a: String,
    /// The other.
    pub b: String,
    /// A path both write sets include, or `d — a file in task A, a folder in task B
    /// (d/three)`.
    pub witness: String,
}

/// `scaffold-input.v1`: what the Scaffolder is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaffoldInput {
    /// Always `scaffold-input.v1`.
    pub schema_version: ScaffoldInputV1,
    /// What to do.
    pub mode: ScaffoldMode,
    /// The plan file.
    pub plan_path: String,
    /// `draft`: the goal, or an issue's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// `fill-writes`: the tasks to propose write sets for (their `writes` are empty).
    #[serde(default)]
    pub tasks: Vec<DraftTask>,
    /// The plan's other tasks, with their write sets (proposals should not overlap them).
    #[serde(default)]
    pub other_tasks: Vec<DraftTask>,
    /// The repository's tracked files.
    pub repository: RepositoryView,
    /// Why the previous answer was refused, when this is a second try.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Conflicts the previous proposal left that narrower write sets may remove.
    #[serde(default)]
    pub conflicts: Vec<DraftConflict>,
}

/// `plan-draft.v1`: the Scaffolder's proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanDraft {
    /// Always `plan-draft.v1`.
    pub schema_version: PlanDraftV1,
    /// One entry per task: for `fill-writes` the tasks asked about (only `writes` is
    /// used), for `draft` the new tasks.
    pub tasks: Vec<DraftTask>,
    /// Anything the Lead should know (shown to the user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}
