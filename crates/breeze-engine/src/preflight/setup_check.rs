//! The preflight's `setup` check: `worktree.setup` once in a throwaway checkout
//! (`setup_trial.rs`), unless skipped, cached, or pointless (its program is missing,
//! another run holds the repository).

use std::path::PathBuf;

use breeze_git::Repo;
use breeze_protocol::{CheckOutcome, SetupTrial};
use tokio_util::sync::CancellationToken;

use super::found::{Preflight, PreflightOptions, Stage};
use super::setup_trial;
use crate::config::Config;
use crate::progress::ProgressEvent;

/// `worktree.setup` once in a throwaway checkout, unless skipped, cached, or pointless (its
/// program is missing, another run holds the repository).
pub(super) async fn setup_check(
    found: &mut Preflight,
    repo: &Repo,
    config: &Config,
    options: &PreflightOptions,
    cancel: &CancellationToken,
) {
    if !options.setup_check {
        cached_or_skipped(found, repo, config, options.stage);
        return;
    }
    let program_missing = found.checks.iter().any(|check| {
        check.outcome == CheckOutcome::Problem && check.subject.split(", ").any(|s| s == SUBJECT)
    });
    if program_missing {
        return;
    }
    if crate::lock::RepoLock::is_held(repo.workdir()) {
        found.push(
            "setup",
            SUBJECT,
            CheckOutcome::Skipped,
            "worktree.setup was not tried: a run is going on in this repository",
            None,
        );
        return;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let containment = match crate::containment::Containment::decide(config, home.as_deref()) {
        Ok(containment) => containment,
        Err(err) => {
            let hint = err.hints().into_iter().next();
            found.push("setup", SUBJECT, CheckOutcome::Problem, err.to_string(), hint);
            return;
        }
    };
    let command = config.worktree_setup.join(" ");
    let starting = || {
        (options.progress)(&ProgressEvent::Notice {
            message: format!(
                "preflight: trying worktree.setup (`{command}`) once in a throwaway checkout of main, to see what it creates in each lane (skip: {})",
                skip_flag(options.stage)
            ),
        });
    };
    let trial = setup_trial::run_trial(
        repo,
        config,
        &containment,
        (&options.supervisor, &options.env),
        cancel,
        starting,
    );
    match trial.await {
        Ok((trial, _)) if trial.succeeded => {
            found.push("setup", SUBJECT, CheckOutcome::Ok, setup_line(&trial), None);
            found.setup = Some(trial);
        }
        Ok((trial, refused)) => failed(found, repo, &command, trial, refused),
        Err(err) => found.push(
            "setup",
            SUBJECT,
            CheckOutcome::Problem,
            format!("worktree.setup could not be tried: {err}"),
            Some(
                "check worktree.setup in breeze.toml, or skip the trial with --skip-setup-check"
                    .into(),
            ),
        ),
    }
}

/// What the checks name the setup by.
const SUBJECT: &str = "worktree.setup";

/// The flag that skips the trial, in the command at `stage`.
fn skip_flag(stage: Stage) -> &'static str {
    if stage == Stage::Doctor { "--no-setup" } else { "--skip-setup-check" }
}

/// The trial not asked for: its cached result, if its inputs have not changed, else that
/// it was skipped.
fn cached_or_skipped(found: &mut Preflight, repo: &Repo, config: &Config, stage: Stage) {
    if let Some(trial) = setup_trial::cached_trial(repo, config) {
        found.push("setup", SUBJECT, CheckOutcome::Ok, setup_line(&trial), None);
        found.setup = Some(trial);
        return;
    }
    found.push(
        "setup",
        SUBJECT,
        CheckOutcome::Skipped,
        format!("worktree.setup was not tried ({})", skip_flag(stage)),
        None,
    );
}

/// A trial that failed, as a problem: how it ended, the line of its output that tells, and
/// what to do — the `sandbox.writable` hint when a write was `refused`.
fn failed(
    found: &mut Preflight,
    repo: &Repo,
    command: &str,
    trial: SetupTrial,
    refused: Option<String>,
) {
    let tail = trial.output_tail.clone().unwrap_or_default();
    let telling = breeze_protocol::telling_line(&tail).unwrap_or_default();
    let log = setup_trial::cache_path(repo.workdir()).with_file_name("setup.stderr");
    let mut message =
        format!("worktree.setup (`{command}`) {} in a fresh checkout of main", trial.ending);
    if !telling.is_empty() {
        message.push_str(&format!(": {telling}"));
    }
    let hint = match refused {
        Some(refused) => format!("{refused} (its output: {})", log.display()),
        None => format!("fix it so it works in a fresh checkout (its output: {})", log.display()),
    };
    found.push("setup", SUBJECT, CheckOutcome::Problem, message, Some(hint));
    found.setup = Some(trial);
}

/// A successful trial as one line.
fn setup_line(trial: &SetupTrial) -> String {
    let mut message = format!("worktree.setup: {}", trial.summary);
    if trial.cached {
        message.push_str(&format!(" (as tried at {}; its inputs have not changed)", trial.ran_at));
    }
    message
}
