//! The preflight: everything that can be checked before a run creates anything — no run
//! folder, lane, branch or lock exists while it runs — so that a missing CLI, program or
//! key fails in a second with what to do, not after lanes were made and a worker ran.
//! `breeze run`, `breeze resume` and `breeze doctor` make the same checks.
//!
//! | check | what | problem when |
//! |---|---|---|
//! | `config` | `breeze.toml` parses, no unknown key | it does not (each unknown key a line) |
//! | `plan` | the plan loads and is not `breeze init`'s untouched template | it is ([`template`]) |
//! | `backend` | the CLI of every role the run uses (`claude`, `codex`, a `command` role's programs) | not found where the role will look |
//! | `login` | claude/codex logged in, from files and variables only (`login.rs`) | certainly not; "not checked" when it cannot be told |
//! | `program` | the programs of `worktree.setup`, `[review] checks`, `land.verify` and, with `[land] to = "pull-request"`, `land.pr_command` (`programs.rs`); the module of a `python -m MODULE` command | not found on the PATH they run with; the module not importable by that python (a warning when `worktree.setup` may install it) |
//! | `remote` | with `[land] to` a remote: it is configured and answers, the branch pull requests merge into exists (`preflight/remote.rs`) | it does not |
//! | `review` | the reviewer and the Advisor run on another backend or model than the worker (`review.rs`) | `[review] independent = "require"` and one does not (a warning under "warn") |
//! | `budget` | every role's backend reports what a `[budget]` cap counts (`spend.rs`) | never: a warning when one does not |
//! | `setup` | `worktree.setup` once in a throwaway checkout of main ([`setup_trial`]) | it fails |
//! | `lane` | (`breeze doctor` only) each lane kept between runs and its disk use | never |
//!
//! A new check is one more function adding `DoctorCheck`s in [`check`].

mod backends;
mod caches;
mod commands;
mod config_file;
mod found;
mod login;
mod plan;
mod programs;
mod remote;
mod repository;
mod review;
mod setup_check;
pub mod setup_trial;
mod spend;
pub mod template;

use breeze_git::Repo;
use breeze_protocol::CheckOutcome;
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::progress::ProgressEvent;

pub use found::{Preflight, PreflightOptions, Stage, line};
pub(crate) use programs::wait_within;

/// Makes every check of `options.stage`.
pub async fn check(options: &PreflightOptions, cancel: &CancellationToken) -> Preflight {
    let mut found = Preflight::default();
    let repo = match Repo::open(&options.repo_dir) {
        Ok(repo) => repo,
        Err(err) => {
            let message = err.to_string();
            let hint = EngineError::from(err).hints().into_iter().next();
            found.push("repository", "git", CheckOutcome::Problem, message, hint);
            return found;
        }
    };
    let root = repo.workdir().to_path_buf();
    found.root = Some(root.clone());
    let Some(config) = config_file::config_checks(&mut found, &root, options.config.as_ref())
    else {
        return found;
    };
    // The run's worktrees, and the setup check's throwaway checkout, go where it says.
    let repo = repo.with_worktree_root(&crate::worktree_folder::choice(&config));
    repository::worktree_folder_check(&mut found, &repo);
    let (plan, has_commit) = match options.stage {
        Stage::Resume => (None, true),
        Stage::NewRun | Stage::Doctor => {
            repository::landing_branch_check(&mut found, &repo, &config);
            let has_commit = repository::first_commit_check(&mut found, &repo);
            (plan::plan_checks(&mut found, &root, options), has_commit)
        }
    };
    let engine_env = &options.env;
    backends::backend_checks(&mut found, &root, &config, engine_env);
    commands::program_checks(&mut found, &root, &config, engine_env);
    caches::cache_checks(&mut found, &root, &config, engine_env);
    remote::landing_target_checks(&mut found, &repo, &config, engine_env);
    review::review_checks(&mut found, &root, &config);
    spend::spend_checks(&mut found, &root, &config, plan.as_ref(), options);
    // Without a commit there is no checkout of main to try the setup in; the missing
    // commit is the problem to name.
    if options.stage != Stage::Resume && !config.worktree_setup.is_empty() && has_commit {
        setup_check::setup_check(&mut found, &repo, &config, options, cancel).await;
    }
    if options.stage == Stage::Doctor {
        repository::kept_lane_checks(&mut found, &repo);
    }
    found
}

/// The preflight of `breeze run` / `breeze resume` with the run's options (see
/// [`run_may_start`]).
pub(crate) async fn before_run(
    options: &crate::RunOptions,
    stage: Stage,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    let preflight_options = PreflightOptions {
        repo_dir: options.repo_dir.clone(),
        plan: options.plan.clone(),
        config: options.config.clone(),
        stage,
        setup_check: !options.skip_setup_check,
        supervisor: options.supervisor.clone(),
        progress: options.progress.clone(),
        env: std::env::vars().collect(),
        budget_raise: options.budget_raise,
    };
    run_may_start(&preflight_options, cancel).await
}

/// The preflight of `breeze run` / `breeze resume`: warnings and the setup's report are
/// told as notices; problems are the error, before anything is created.
pub(crate) async fn run_may_start(
    options: &PreflightOptions,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    // A token cancelled before the start is left to the run (it ends interrupted at once);
    // Ctrl-C during the preflight stops here, with nothing created.
    let cancelled_before = cancel.is_cancelled();
    let found = check(options, cancel).await;
    if !cancelled_before && cancel.is_cancelled() {
        return Err(EngineError::usage(
            "stopped during the preflight; nothing was created",
            "run it again when you are ready",
        ));
    }
    for check in &found.checks {
        let tell = match check.outcome {
            // The run start says every pairing, with what to change.
            CheckOutcome::Warning => check.check != "review",
            CheckOutcome::Ok => check.check == "setup",
            _ => false,
        };
        if tell && found.is_ok() {
            (options.progress)(&ProgressEvent::Notice { message: line(check) });
        }
    }
    found.into_error()
}
