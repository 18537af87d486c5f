//! `breeze-event.v1`: one line of a run's append-only journal (`events.jsonl`).
//!
//! The journal is the source of truth for `breeze resume`: what breeze created
//! (worktrees, branches), which role processes it started, and what landed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::advisor::Decision;
use crate::review::Verdict;
use crate::status::{RunState, TaskState, Usage};
use crate::version::BreezeEventV1;

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreezeEvent {
    /// Always `breeze-event.v1`.
    pub schema_version: BreezeEventV1,
    /// 1-based sequence number within the run.
    pub seq: u64,
    /// RFC 3339 UTC time with milliseconds (`2026-11-30T12:00:00.123Z`).
    pub at: String,
    /// What happened.
    pub event: EventKind,
}

/// Which role a process plays.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Implements a task in its worktree.
    Worker,
    /// Answers worker questions; never writes.
    Advisor,
    /// Judges a finished task; never writes.
    Reviewer,
    /// Sets a project up (optional).
    Scaffolder,
}

impl Role {
    /// Wire spelling (`BREEZE_ROLE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Advisor => "advisor",
            Self::Reviewer => "reviewer",
            Self::Scaffolder => "scaffolder",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The events of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began (or resumed).
    RunStarted {
        /// Plan file.
        plan: String,
        /// Lanes.
        workers: u32,
        /// Main tip when the run started.
        main_tip: String,
        /// Whether this is `breeze resume`.
        #[serde(default)]
        resumed: bool,
    },
    /// breeze created a worktree and branch; only these are ever removed by breeze.
    WorktreeCreated {
        /// Task id (or lane name for lane worktrees).
        task: String,
        /// Absolute worktree path.
        path: String,
        /// Branch checked out there.
        branch: String,
        /// Base commit.
        base: String,
    },
    /// breeze removed a worktree it had created.
    WorktreeRemoved {
        /// Absolute worktree path.
        path: String,
        /// Branch deleted with it, if any.
        branch: Option<String>,
    },
    /// A role process started; its group is ended by `breeze resume` if the engine died.
    ProcessStarted {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Process id (= process group id).
        pid: u32,
        /// Start time from `/proc/<pid>/stat`, to guard against pid reuse.
        #[serde(default)]
        start_ticks: Option<u64>,
        /// Log file of the attempt.
        log: String,
    },
    /// A role process ended.
    ProcessEnded {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Process id.
        pid: u32,
        /// Exit code, if it exited.
        exit_code: Option<i32>,
        /// How it ended: `exited`, `timeout`, `stalled`, `cancelled`.
        outcome: String,
        /// Cost and tokens reported by the backend.
        #[serde(default)]
        usage: Usage,
    },
    /// What one role call cost, as breeze counted it against the budget: the backend's
    /// report, priced with `[budget.prices]` where it has tokens only; journaled for every
    /// call that reached its backend, the simulator's included.
    Spent {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Cost and tokens of the call (`unpriced_calls` 1 when its cost is unknown).
        usage: Usage,
    },
    /// A role's backend failed rather than the task (rate limit, passing API error, no
    /// login); the call is tried again after `wait_ms` (not an attempt).
    BackendTrouble {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// `rate-limited`, `transient` or `auth`.
        trouble: String,
        /// The backend's words (bounded).
        message: String,
        /// How long breeze waits before calling again, in milliseconds.
        wait_ms: u64,
    },
    /// One of the project's own commands (`worktree.setup`, `land.verify`) started.
    CommandStarted {
        /// Task id.
        task: String,
        /// The config key of the command, e.g. `land.verify`.
        purpose: String,
        /// Process id (= process group id).
        pid: u32,
        /// Start time from `/proc/<pid>/stat`, to guard against pid reuse.
        #[serde(default)]
        start_ticks: Option<u64>,
    },
    /// A project command ended.
    CommandEnded {
        /// Process id.
        pid: u32,
        /// How it ended.
        outcome: String,
    },
    /// A task changed state.
    TaskState {
        /// Task id.
        task: String,
        /// New state.
        state: TaskState,
        /// Why, for escalated/blocked/failed/deferred.
        #[serde(default)]
        reason: Option<String>,
    },
    /// A worker attempt finished.
    Attempt {
        /// Task id.
        task: String,
        /// 1-based attempt.
        attempt: u32,
        /// 1-based round.
        round: u32,
        /// `completed`, `failed`, `needs-advice`, `escalated`, `stalled`, `timeout`.
        outcome: String,
        /// Commit after the attempt.
        #[serde(default)]
        head: Option<String>,
        /// Failure text, if any.
        #[serde(default)]
        error: Option<String>,
    },
    /// The Advisor answered.
    AdvisorConsulted {
        /// Task id.
        task: String,
        /// `<task>:<reason>:<signature>`.
        trigger_hash: String,
        /// The decision.
        decision: Decision,
        /// Saved response file.
        response_path: String,
    },
    /// A review round ended (gate failures produce engine-made verdicts).
    Reviewed {
        /// Task id.
        task: String,
        /// 1-based round.
        round: u32,
        /// Normalized verdict.
        verdict: Verdict,
        /// Reviewed commit.
        head: String,
        /// Saved review file.
        result_path: String,
    },
    /// A task got a lane (started, or started again after a stop or a deferral).
    TaskStarted {
        /// Task id.
        task: String,
        /// Its title (first line).
        title: String,
        /// The lane, from 1.
        lane: u32,
    },
    /// The Lead answered a worker's scope request.
    ScopeDecided {
        /// Task id.
        task: String,
        /// The paths asked for.
        paths: Vec<String>,
        /// `granted`, `waiting` (other tasks may write them; granted once they are done) or
        /// `denied`.
        decision: String,
        /// Why (denied), or which tasks it waits for.
        #[serde(default)]
        reason: Option<String>,
    },
    /// A task landed on main.
    Landed {
        /// Task id.
        task: String,
        /// The landing commit.
        commit: String,
        /// Main before the landing.
        previous_main: String,
    },
    /// The run ended (or stopped resumably).
    RunFinished {
        /// Final state.
        state: RunState,
    },
}
