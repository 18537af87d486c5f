//! Starting, resuming and inspecting runs: the public face of the engine.
//!
//! A run is preflighted (`crate::preflight`: nothing is created until it passes), then
//! `prepare`d (checks, plan, run folder), then goes on in a `session`: the `dispatcher`
//! asks the `schedule` what may start and gives each task a driver on a lane (the `task`
//! wing: the driver and its steps); an approved task lands through the run's landing mode
//! (the `land` wing: local, remote, pull requests, batches behind one interface). Every
//! change of a task's state goes through the run's `book`; what every part shares is the
//! `context` (with the run's `write_sets` and `main_verdicts`); `cleanup` tidies up after
//! a finished run (`lane_removal` with a task's lane); `recovery` sets right what a killed
//! engine left half-done when its run resumes.

mod at_reset;
mod book;
mod cleanup;
mod context;
mod dispatcher;
mod land;
mod lane_removal;
mod main_verdicts;
mod options;
mod prepare;
mod quota_gate;
mod recovery;
mod schedule;
mod session;
mod task;
mod waiting;
mod write_sets;

use std::path::Path;

use breeze_git::Repo;
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::lock::RepoLock;
use crate::run_dir::{RunDir, latest_run};
use crate::snapshot::RunSnapshot;

pub use at_reset::reset_ahead;
pub use options::{RunOptions, RunOutcome};
pub(crate) use recovery::finish_checkout_updates;
pub(crate) use session::end_orphans_of;

/// Starts a new run of a plan.
pub async fn run(
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    // Opened first, so that reading ahead goes on beside the preflight's checks; a problem
    // opening it is told after the preflight's, which says them all with what to do.
    let opened = prepare::open_new_run(&options);
    crate::preflight::before_run(&options, crate::preflight::Stage::NewRun, &cancel).await?;
    let prepared = prepare::new_run(opened?)?;
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
