//! `advisor-request.v1` and `advisor-response.v1`: a worker's question and the
//! Advisor's answer, with the original harness's field names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::{AdvisorRequestV1, AdvisorResponseV1};

/// Why the Advisor is consulted.
///
/// The original harness documents six codes; their loop implementation emitted two more
/// (`high-risk-preflight`, `plateau-pre-escalation`). breeze accepts all eight and
/// emits only the documented six.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonCode {
    /// The same failure signature twice in a row.
    RetryThreshold,
    /// The task is tagged `[needs-spike]`.
    NeedsSpike,
    /// The task touches authentication, secrets or permissions.
    SecuritySensitive,
    /// The task migrates state or a schema.
    StateMigration,
    /// Review rounds plateaued on the same files.
    PivotRequired,
    /// The task carries `<!-- advisor:required -->`.
    AdvisorRequired,
    /// Seeds' loop name for a preflight consult (read, never written).
    HighRiskPreflight,
    /// Seeds' loop name for a plateau consult (read, never written).
    PlateauPreEscalation,
}

impl ReasonCode {
    /// The wire spelling, e.g. `retry-threshold`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RetryThreshold => "retry-threshold",
            Self::NeedsSpike => "needs-spike",
            Self::SecuritySensitive => "security-sensitive",
            Self::StateMigration => "state-migration",
            Self::PivotRequired => "pivot-required",
            Self::AdvisorRequired => "advisor-required",
            Self::HighRiskPreflight => "high-risk-preflight",
            Self::PlateauPreEscalation => "plateau-pre-escalation",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `advisor-request.v1`: executor → Lead → Advisor.
///
/// The requester side is deliberately lenient (unknown fields are kept out of the
/// typed view but not rejected), as the original harness requires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdvisorRequest {
    /// Always `advisor-request.v1`.
    pub schema_version: AdvisorRequestV1,
    /// The plan's task id, e.g. `43.3.1`.
    pub task_id: String,
    /// The run that asks (omitted by native consults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Why the Advisor is consulted.
    pub reason_code: ReasonCode,
    /// `<task_id>:<reason_code>:<normalized signature>`; one consult per hash per run.
    pub trigger_hash: String,
    /// One question for the Advisor.
    pub question: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The last failure text (bounded by the engine to 8 KiB, head and tail kept).
    pub last_error: String,
    /// Short facts: goal, scope, what was tried, evidence, open points.
    pub context_summary: Vec<String>,
    /// Plan, contracts and notes on what the context does not authorize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_context: Option<ExecutionContext>,
    /// A saved successful answer of the same run, restored instead of asking again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_advisor_response: Option<PriorAdvisorResponse>,
}

/// `execution_context` of an advisor request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionContext {
    /// The plan the task comes from.
    pub selected_plan: SelectedPlan,
    /// Sprint contracts relevant to the question.
    #[serde(default)]
    pub sprint_contracts: Vec<serde_json::Value>,
    /// Declared scope is inferred planning context, not authorization.
    #[serde(default)]
    pub scope_note: String,
    /// The engine supplies no user authorization.
    #[serde(default)]
    pub authorization_note: String,
    /// Evidence from earlier runs, labelled untrusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_evidence: Option<ResumeEvidence>,
}

/// The plan part of an execution context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SelectedPlan {
    /// Path of the plan file.
    pub path: String,
    /// Plan preamble: a string, or a list of lines in the original harness's example.
    #[serde(default)]
    pub background: serde_json::Value,
    /// The plan rows relevant to the task.
    #[serde(default)]
    pub task_rows: Vec<serde_json::Value>,
}

/// Evidence from earlier runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeEvidence {
    /// How far the evidence may be trusted.
    pub trust: String,
    /// The evidence items.
    #[serde(default)]
    pub items: Vec<serde_json::Value>,
}

/// A previously saved answer, passed back for context only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriorAdvisorResponse {
    /// How far the prior advice may be trusted.
    pub trust: String,
    /// Where the saved response lives.
    pub path: String,
    /// The saved response.
    pub response: AdvisorResponse,
}

/// The Advisor's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// Progress by reordering implementation, isolation or verification.
    Plan,
    /// Keep the plan; apply a local fix.
    Correction,
    /// The executor cannot continue alone; escalate.
    Stop,
}

impl Decision {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "PLAN",
            Self::Correction => "CORRECTION",
            Self::Stop => "STOP",
        }
    }
}

/// `advisor-response.v1`: Advisor → Lead → the same worker. Strict: no unknown fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdvisorResponse {
    /// Always `advisor-response.v1`.
    pub schema_version: AdvisorResponseV1,
    /// `PLAN`, `CORRECTION` or `STOP`.
    pub decision: Decision,
    /// Reason and observed evidence, briefly.
    #[schemars(length(min = 1))]
    pub summary: String,
    /// One to four one-line imperatives.
    #[schemars(length(min = 1, max = 4), inner(length(min = 1)))]
    pub executor_instructions: Vec<String>,
    /// Confidence in `[0, 1]`.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// Non-empty exactly when `decision` is `STOP`, `null` otherwise.
    // `required` makes schemars drop the null; `extend` puts it back.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub stop_reason: Option<String>,
}
