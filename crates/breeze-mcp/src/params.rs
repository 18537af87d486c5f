//! The tools' parameters: what each tool's JSON schema says (field docs become the
//! schema's descriptions the agent reads).

use schemars::JsonSchema;
use serde::Deserialize;

/// `plan`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PlanParams {
    /// The plan file (Plans.md or plan.toml), relative to the repository; default:
    /// plan.toml, then Plans.md.
    pub plan: Option<String>,
    /// Lanes to plan for (1–3); default: run.max_workers from breeze.toml.
    pub max_workers: Option<u32>,
}

/// `draft`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DraftParams {
    /// The goal, in a sentence or a few lines (an issue's text will do).
    pub goal: String,
    /// The plan file to add the tasks to; default: the repository's plan.toml or Plans.md,
    /// else a new Plans.md.
    pub out: Option<String>,
}

/// `fill_ids` and `fill_writes`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PlanFileParams {
    /// The plan file; default: plan.toml, then Plans.md.
    pub plan: Option<String>,
}

/// `run`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RunParams {
    /// The plan file; default: plan.toml, then Plans.md.
    pub plan: Option<String>,
    /// Lanes (1–3); default: run.max_workers from breeze.toml.
    pub max_workers: Option<u32>,
    /// Skip trying worktree.setup in a throwaway checkout before the run (the preflight's
    /// slowest check).
    #[serde(default)]
    pub skip_setup_check: bool,
}

/// `resume`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ResumeParams {
    /// Raise the run's cost cap to this many US dollars in all (a run stopped at its
    /// budget goes on).
    pub budget_usd: Option<f64>,
    /// Raise the run's token cap to this many input + output tokens in all.
    pub budget_tokens: Option<u64>,
}

/// `status`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct StatusParams {
    /// A run id; default: the latest run.
    pub run: Option<String>,
}

/// `wait`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct WaitParams {
    /// Return after this many seconds at the latest (1–600; default 120).
    pub timeout_seconds: Option<u64>,
}

/// `approve`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApproveParams {
    /// Task ids awaiting approval (all must, or none is approved).
    pub tasks: Vec<String>,
}

/// `reject`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RejectParams {
    /// The task id (awaiting approval).
    pub task: String,
    /// What is wrong: it reaches the worker as a critical finding.
    pub note: String,
}

/// `retry`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RetryParams {
    /// Escalated or failed task ids (all must be, or none is retried).
    pub tasks: Vec<String>,
    /// A note for the worker's next briefing.
    pub note: Option<String>,
    /// Start over from main's tip on a new branch (the earlier branch is kept).
    #[serde(default)]
    pub fresh: bool,
}

/// `diff`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffParams {
    /// The task id.
    pub task: String,
    /// Only one line per changed file with its added and removed lines, and the totals.
    #[serde(default)]
    pub stat: bool,
    /// Cut the diff after this many bytes (default 65536, at most 1048576).
    pub max_bytes: Option<usize>,
}

/// `logs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LogsParams {
    /// The task id.
    pub task: String,
    /// A run id; default: the latest run.
    pub run: Option<String>,
    /// Keep only the last this many bytes (default 65536, at most 1048576).
    pub max_bytes: Option<usize>,
}
