//! One role call and how it went: what breeze asks of a role ([`RoleCall`]) and what comes
//! back ([`RoleReply`], its [`RoleOutcome`]), whatever the backend.

use std::path::PathBuf;

use breeze_protocol::{Role, Usage};
use breeze_supervise::Ending;
use serde_json::Value;

use super::backoff::Trouble;

/// One invocation of a role.
#[derive(Debug, Clone)]
pub struct RoleCall {
    /// Which role.
    pub role: Role,
    /// Task id.
    pub task_id: String,
    /// `BREEZE_ATTEMPT` (worker attempt, or the consult/round number for other roles).
    pub attempt: u32,
    /// `BREEZE_ROUND`.
    pub round: u32,
    /// Working directory: the task worktree.
    pub cwd: PathBuf,
    /// Base commit.
    pub base: String,
    /// The structured input (`worker-input.v1`, `advisor-request.v1`, `review-input.v1`).
    pub input: Value,
    /// The rendered prompt (stdin).
    pub prompt: String,
    /// Backend session to continue (same worker for fix rounds), if any.
    pub resume_session: Option<String>,
    /// Names this call's files (unique per task and role): the attempt, consult or
    /// `round-<k>.try-<n>`.
    pub label: String,
    /// With `resume_session`: the session's totals after its previous run, so a resumed
    /// run's usage counts only itself.
    pub resume_baseline: Option<Usage>,
    /// The worker's lane: its git gets the lane's private git directory while it runs.
    pub lane: Option<breeze_git::Worktree>,
    /// The lane's number and ports (`BREEZE_LANE`, `BREEZE_PORT_BASE`): every role of a
    /// task gets its lane's; a role outside a run (the scaffolder) none.
    pub lane_env: Option<crate::lane_env::LaneEnv>,
}

/// How a role process ended when it did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleEnding {
    /// Exited with a non-zero code.
    Exited(i32),
    /// Killed by a signal it did not get from breeze.
    Signaled(i32),
    /// Wall-clock timeout.
    TimedOut,
    /// No output and no worktree change for the stall timeout.
    Stalled,
}

impl std::fmt::Display for RoleEnding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Stalled => f.write_str("stalled (no output and no file changes)"),
        }
    }
}

/// How a role call went — one of these, never a mix.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleOutcome {
    /// It exited 0 with a JSON result (not yet validated against its message type).
    Answered(Value),
    /// It exited 0 without a usable result; why.
    NoAnswer(String),
    /// It ended otherwise.
    Ended(RoleEnding),
    /// The backend failed, not the task: wait it out or stop (never an attempt).
    Trouble(Trouble),
    /// breeze is stopping.
    Cancelled,
    /// It could not be started (program missing, not executable, confinement).
    CouldNotStart(String),
    /// The budget let it not start: its task, or the run, has spent its cap.
    OverBudget(crate::budget::OverBudget),
}

/// A backend session to continue in a later call.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Claude `session_id` / codex `thread_id`.
    pub id: String,
    /// The session's running totals, for the next `resume_baseline`.
    pub usage: Option<Usage>,
}

/// What a role invocation produced.
#[derive(Debug, Clone)]
pub struct RoleReply {
    /// How it went.
    pub outcome: RoleOutcome,
    /// The end of stderr (or stdout), for error messages and failure signatures.
    pub diagnostics: String,
    /// Cost and tokens.
    pub usage: Usage,
    /// The backend session, to continue later.
    pub session: Option<Session>,
    /// Paths the agent wrote (or tried to) outside the write set, seen in its stream.
    pub write_violations: Vec<String>,
    /// What the process changed outside its lane that breeze found afterwards (only
    /// possible without kernel confinement): the run must stop before any of it lands.
    pub escaped: Vec<String>,
    /// What a worker did to its lane's links to the shared repository (repaired).
    pub lane_problems: Vec<String>,
    /// Log file stem of this invocation.
    pub log_path: PathBuf,
    /// Where the backend's usage windows stood at the end of the call, as reported.
    pub windows: Vec<breeze_protocol::UsageWindow>,
}

impl RoleReply {
    /// A reply with `outcome` and nothing else.
    pub(crate) fn of(outcome: RoleOutcome, log_path: PathBuf) -> RoleReply {
        RoleReply {
            outcome,
            diagnostics: String::new(),
            usage: Usage::default(),
            session: None,
            write_violations: Vec::new(),
            escaped: Vec::new(),
            lane_problems: Vec::new(),
            log_path,
            windows: Vec::new(),
        }
    }

    /// The outcome of a process that ran: its result if it exited 0, else how it ended.
    pub(crate) fn from_ending(
        ending: Ending,
        result: Result<Value, impl std::fmt::Display>,
    ) -> RoleOutcome {
        match ending {
            Ending::Exited(0) => match result {
                Ok(value) => RoleOutcome::Answered(value),
                Err(why) => RoleOutcome::NoAnswer(why.to_string()),
            },
            Ending::Exited(code) => RoleOutcome::Ended(RoleEnding::Exited(code)),
            Ending::Signaled(signal) => RoleOutcome::Ended(RoleEnding::Signaled(signal)),
            Ending::TimedOut => RoleOutcome::Ended(RoleEnding::TimedOut),
            Ending::Stalled => RoleOutcome::Ended(RoleEnding::Stalled),
            Ending::Cancelled => RoleOutcome::Cancelled,
        }
    }
}
