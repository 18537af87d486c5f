//! What a run is asked to do (`RunOptions`) and how it ended (`RunOutcome`).

use std::path::PathBuf;

use breeze_protocol::{BreezeStatus, ExitCode, RunState};
use breeze_supervise::Supervisor;

use crate::config::Config;
use crate::progress::ProgressSink;

/// What to run and how.
#[derive(Clone)]
pub struct RunOptions {
    /// A directory inside the repository.
    pub repo_dir: PathBuf,
    /// The plan file; default: `plan.toml`, then `Plans.md`, at the repository root.
    pub plan: Option<PathBuf>,
    /// Lanes; default: `run.max_workers`.
    pub max_workers: Option<u32>,
    /// Use this configuration instead of reading `breeze.toml`.
    pub config: Option<Config>,
    /// Progress notifications.
    pub progress: ProgressSink,
    /// Told of every journal event of this run (after it is on disk).
    pub events: Option<crate::progress::EventSink>,
    /// Process supervisor settings (tests shorten the watchdog period).
    pub supervisor: Supervisor,
    /// How backend troubles (rate limits, passing API errors) are waited out.
    pub backoff: crate::roles::backoff::BackoffSettings,
    /// `breeze resume --budget-usd` / `--budget-tokens`: the resumed run's new caps (kept in
    /// `run.json`); a new run takes its caps from `[budget]` only.
    pub budget_raise: crate::budget::BudgetRaise,
    /// Do not try `worktree.setup` in a throwaway checkout before the run
    /// (`--skip-setup-check`).
    pub skip_setup_check: bool,
    /// `--wait`: when only people and forges can move the run (approvals, pull requests
    /// to merge, a checkout to clean), wait for them — decisions taken up as they are
    /// left, pull requests followed every `land.pr_poll` — rather than stop `waiting`.
    /// Default: off (the CLI turns it on on a terminal).
    pub wait: bool,
}

impl RunOptions {
    /// Options for the repository containing `repo_dir`, with defaults for the rest.
    pub fn new(repo_dir: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            repo_dir: repo_dir.into(),
            plan: None,
            max_workers: None,
            config: None,
            progress: crate::progress::silent(),
            events: None,
            supervisor: Supervisor::new(),
            backoff: Default::default(),
            budget_raise: Default::default(),
            skip_setup_check: false,
            wait: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Run id.
    pub run_id: String,
    /// Final (or interrupted) state.
    pub state: RunState,
    /// The status report.
    pub status: BreezeStatus,
    /// Why the run stopped early, with what to do.
    pub stop_reason: Option<String>,
    /// The run directory.
    pub run_dir: PathBuf,
}

impl RunOutcome {
    /// 0 all landed, 1 some did not, 3 interrupted or waiting (resumable).
    pub fn exit_code(&self) -> ExitCode {
        match self.state {
            RunState::Succeeded => ExitCode::Success,
            RunState::Interrupted | RunState::Waiting | RunState::Running => ExitCode::Interrupted,
            RunState::Failed | RunState::Aborted => ExitCode::Unfinished,
        }
    }
}
