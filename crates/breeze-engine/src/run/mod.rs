//! Starting, resuming and inspecting runs: the public face of the engine.
//!
//! A run is preflighted ([`crate::preflight`]: nothing is created until it passes), then
//! `prepare`d (checks, plan, run folder), then goes on in a `session`: the
//! `dispatcher` asks the `schedule` what may start and gives each task a
//! `driver` on a lane; the driver takes the task through its `lanes` worktree,
//! `work`, `consult`, `review` and `landing` — on the target `[land] to` names
//! (`land_target`: the local main, a remote's branch in `land_remote`, pull requests in
//! `land_pr`, which the dispatcher follows until they merge); `verify_queue` judges
//! landings, one or a batch; `land_batch` lands batches from the dispatcher's landing
//! queue. Every change of a task's state goes
//! through the run's `book`; `cleanup` tidies up after a finished run; `recovery` sets
//! right what a killed engine left half-done when its run resumes.

mod attach_point;
mod book;
mod cleanup;
mod consult;
mod context;
mod dispatcher;
mod driver;
mod land_batch;
mod land_pr;
mod land_remote;
mod land_target;
mod landing;
mod lanes;
mod main_checks;
mod pr_body;
mod prepare;
mod recovery;
mod review;
mod review_checkout;
mod schedule;
mod scope;
mod send_back;
mod session;
mod verify_queue;
mod work;

use std::path::{Path, PathBuf};

use breeze_git::Repo;
use breeze_protocol::{BreezeStatus, ExitCode, RunState};
use breeze_supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::error::EngineError;
use crate::lock::RepoLock;
use crate::progress::ProgressSink;
use crate::run_dir::{RunDir, latest_run};
use crate::snapshot::RunSnapshot;

pub(crate) use recovery::finish_checkout_updates;
pub(crate) use session::end_orphans_of;
pub(crate) use work::worker_caused;

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
    /// 0 all landed, 1 some did not, 3 interrupted (resumable).
    pub fn exit_code(&self) -> ExitCode {
        match self.state {
            RunState::Succeeded => ExitCode::Success,
            RunState::Interrupted | RunState::Running => ExitCode::Interrupted,
            RunState::Failed | RunState::Aborted => ExitCode::Unfinished,
        }
    }
}

/// Starts a new run of a plan.
pub async fn run(
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    crate::preflight::before_run(&options, crate::preflight::Stage::NewRun, &cancel).await?;
    let prepared = prepare::new_run(&options)?;
    session::go_on(prepared, options, cancel).await
}

/// Continues the latest interrupted run.
pub async fn resume(
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    crate::preflight::before_run(&options, crate::preflight::Stage::Resume, &cancel).await?;
    let prepared = prepare::interrupted_run(&options)?;
    session::go_on(prepared, options, cancel).await
}

/// The snapshot of a run (the latest by default).
pub fn load_run(repo_dir: &Path, run_id: Option<&str>) -> Result<RunSnapshot, EngineError> {
    let repo = Repo::open(repo_dir)?;
    let root = repo.workdir();
    let run_id = match run_id {
        Some(id) => id.to_string(),
        None => latest_run(root).ok_or_else(|| {
            EngineError::usage(
                "there are no runs in this repository yet",
                "start one with `breeze run PLAN`",
            )
        })?,
    };
    let path = RunDir::new(root, &run_id).snapshot();
    if !path.is_file() {
        return Err(EngineError::usage(
            format!("there is no run {run_id}"),
            "list runs with `ls .breeze/runs`",
        ));
    }
    Ok(RunSnapshot::load(&path)?)
}

/// Whether an engine currently holds the repository's run lock.
pub fn engine_alive(repo_dir: &Path) -> bool {
    let Ok(repo) = Repo::open(repo_dir) else { return false };
    RepoLock::is_held(repo.workdir())
}
