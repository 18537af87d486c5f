//! `sprint-contract.v1`: what a task must achieve and how it is checked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::SprintContractV1;

/// `sprint-contract.v1`, one per task, written into the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SprintContract {
    /// Always `sprint-contract.v1`.
    pub schema_version: SprintContractV1,
    /// RFC 3339 UTC time of generation.
    pub generated_at: String,
    /// Where the task comes from.
    pub source: ContractSource,
    /// The task.
    pub task: ContractTask,
    /// Checks, risk flags and runtime validation.
    pub contract: ContractBody,
    /// Advisor settings for this task.
    pub advisor: ContractAdvisor,
    /// Review settings for this task.
    pub review: ContractReview,
}

/// `source` of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContractSource {
    /// Plan file, relative to the repository root.
    pub plans_file: String,
    /// Task id.
    pub task_id: String,
    /// References to real user approvals, if any.
    #[serde(default)]
    pub authorization_refs: Vec<String>,
}

/// `task` of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContractTask {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Definition of done.
    pub definition_of_done: String,
    /// Dependencies.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Status marker when the contract was generated, e.g. `cc:todo`.
    #[serde(default)]
    pub status_at_generation: String,
    /// The write set: inferred planning context, not proof of authorization.
    #[serde(default)]
    pub declared_scope: Vec<String>,
}

/// One contract check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContractCheck {
    /// Check id, e.g. `dod-primary`.
    pub id: String,
    /// Origin, e.g. `Plans.md.DoD`.
    pub source: String,
    /// What must hold.
    pub description: String,
}

/// A non-goal: a string, or `{description}` as the original harness's enrich step writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NonGoal {
    /// Plain text.
    Text(String),
    /// Object form.
    Described {
        /// The non-goal.
        description: String,
    },
}

/// A command run to validate the task at runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeValidation {
    /// Optional id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Short label.
    pub label: String,
    /// Shell command line.
    pub command: String,
    /// What it checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Artifacts it must produce.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_artifacts: Vec<String>,
}

/// `contract` of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContractBody {
    /// Checks; always at least `dod-primary`.
    pub checks: Vec<ContractCheck>,
    /// What the task must not do.
    #[serde(default)]
    pub non_goals: Vec<NonGoal>,
    /// Commands that validate the task at runtime.
    #[serde(default)]
    pub runtime_validation: Vec<RuntimeValidation>,
    /// Browser checks (browser profile only).
    #[serde(default)]
    pub browser_validation: Vec<RuntimeValidation>,
    /// Risk flags: `needs-spike`, `security-sensitive`, `state-migration`, ...
    #[serde(default)]
    pub risk_flags: Vec<String>,
    /// Whether TDD is required.
    #[serde(default)]
    pub tdd_required: bool,
    /// Detected test framework, or `none`.
    #[serde(default)]
    pub test_framework: String,
    /// Test cases to write first when TDD is required.
    #[serde(default)]
    pub test_todo_list: Vec<String>,
    /// Why TDD is skipped.
    #[serde(default)]
    pub skip_tdd_reason: Option<String>,
}

/// Model defaults for the Advisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelPolicy {
    /// Default model on the claude backend.
    pub claude_default: String,
    /// Default model on the codex backend.
    pub codex_default: String,
}

/// `advisor` of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContractAdvisor {
    /// Whether the Advisor may be consulted.
    pub enabled: bool,
    /// `on-demand`.
    pub mode: String,
    /// Consults allowed per task.
    pub max_consults: u32,
    /// Same-signature failures before a consult.
    pub retry_threshold: u32,
    /// Consult before escalating a plateau.
    pub pre_escalation_consult: bool,
    /// Preflight triggers: high-risk flags, plus `<!-- advisor:required -->`.
    #[serde(default)]
    pub triggers: Vec<String>,
    /// Model defaults.
    pub model_policy: ModelPolicy,
}

/// Review status of a contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContractStatus {
    /// Generated, not yet approved.
    Draft,
    /// Approved.
    Approved,
}

/// `review` of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContractReview {
    /// `draft` or `approved`.
    pub status: ContractStatus,
    /// `static`, `runtime`, `browser` or `ui-rubric`.
    pub reviewer_profile: String,
    /// Review rounds before escalation (breeze: 3).
    pub max_iterations: u32,
    /// Notes for the reviewer.
    #[serde(default)]
    pub reviewer_notes: Vec<String>,
    /// Known gaps.
    #[serde(default)]
    pub gaps: Vec<String>,
    /// Follow-ups.
    #[serde(default)]
    pub followups: Vec<String>,
    /// When the contract was approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
}
