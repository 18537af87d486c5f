//! `breeze-plan.v1`: what `breeze plan --json` prints — the plan as breeze reads it, its
//! write groups, the conflicts between tasks and how many lanes a run would use.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::BreezePlanV1;

/// The analysed plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanReport {
    /// Always `breeze-plan.v1`.
    pub schema_version: BreezePlanV1,
    /// The plan file.
    pub plan: PlanSource,
    /// Lanes a run would use: `min(max_workers, size of parallelism.widest)`
    /// (`max_workers` when `parallelism.exact` is false).
    pub workers: u32,
    /// The lane cap it was analysed with.
    pub max_workers: u32,
    /// How much of the plan can run at once.
    pub parallelism: PlanParallelism,
    /// Write groups (connected sets of conflicting tasks), numbered from 1 by first task.
    pub groups: Vec<PlanGroup>,
    /// Runnable tasks, in id order.
    pub tasks: Vec<PlannedTask>,
    /// Pairs of tasks that may not run at the same time, by ids.
    pub conflicts: Vec<PlanConflict>,
    /// Exact files claimed by more than one task → the only task allowed to write it, or
    /// `null` when they conflict.
    pub shared_files: BTreeMap<String, Option<String>>,
    /// Done rows and archived ids (they satisfy dependencies).
    pub done: Vec<String>,
    /// Tasks not scheduled: marked blocked, or depending on one that is.
    pub blocked: Vec<String>,
    /// What breeze read around (unknown dependencies, misaligned rows…).
    pub warnings: Vec<PlanNote>,
    /// How much work the conflict analysis did.
    pub stats: PlanStats,
}

/// The plan file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSource {
    /// As given.
    pub path: String,
    /// `plans-md` or `toml`.
    pub format: String,
}

/// How much of the plan can run at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanParallelism {
    /// The widest set of tasks that can run together — pairwise without conflict and
    /// without dependency (direct or through others) — by ids, in id order.
    pub widest: Vec<String>,
    /// Whether `widest` is proven widest; `false`: a greedy lower bound (large plans).
    pub exact: bool,
    /// The longest chain of dependencies, by ids, each task depending on the one before.
    pub critical_path: Vec<String>,
}

/// One write group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanGroup {
    /// From 1.
    pub id: u32,
    /// Its tasks' ids, in id order.
    pub tasks: Vec<String>,
}

/// One runnable task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlannedTask {
    /// Its id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Definition of done.
    pub dod: String,
    /// 1-based line in the plan file.
    pub line: u64,
    /// The Plans.md status marker as written (`null` in plan.toml).
    pub marker: Option<String>,
    /// Its write set (globs); empty: not declared, it runs alone.
    pub writes: Vec<String>,
    /// Whether it conflicts with every other task.
    pub runs_alone: bool,
    /// Ids it waits for.
    pub depends_on: Vec<String>,
    /// Ids waiting for it.
    pub dependents: Vec<String>,
    /// Its write group.
    pub group: u32,
    /// Longest chain of dependents: higher starts first.
    pub priority: u32,
    /// Risk flags (`needs-spike`, `security-sensitive`, `state-migration`).
    pub risk: Vec<String>,
    /// Whether it consults the Advisor before its first attempt.
    pub advisor_required: bool,
    /// plan.toml extension tables (`[task.sim]` → `sim`), as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// Two tasks that may not run at the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanConflict {
    /// One task's id.
    pub a: String,
    /// The other's.
    pub b: String,
    /// Why.
    #[serde(flatten)]
    pub reason: ConflictReason,
}

/// Why two tasks conflict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum ConflictReason {
    /// Their write sets meet: `witness` is a path both may write, or a file one may write
    /// where the other may need a folder of that name.
    Overlap {
        /// A path in both write sets, or `d — a file in task A, a folder in task B
        /// (d/three)`.
        witness: String,
    },
    /// `task` declares no write set, so it runs alone.
    NoWriteSet {
        /// The task without a write set.
        task: String,
    },
}

/// Something breeze read around, with its line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanNote {
    /// 1-based line, when it has one.
    pub line: Option<u64>,
    /// What happened and what breeze did about it.
    pub message: String,
}

/// How much work the conflict analysis did (for benchmarks and curiosity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStats {
    /// Tasks analysed.
    pub tasks: u64,
    /// Write-set entries over all tasks.
    pub entries: u64,
    /// All task pairs: what a naive comparison would look at.
    pub task_pairs: u64,
    /// Entry pairs whose literal prefixes can meet: the only ones looked at.
    pub candidate_pairs: u64,
    /// Pairs decided by comparing strings.
    pub string_checks: u64,
    /// Pairs that needed an automaton.
    pub automaton_checks: u64,
    /// Of those, product searches (glob against glob or directory).
    pub product_searches: u64,
}
