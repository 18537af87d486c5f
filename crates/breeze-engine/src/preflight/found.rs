//! What the preflight runs with ([`PreflightOptions`], [`Stage`]) and what it found
//! ([`Preflight`]: one [`DoctorCheck`] per finding), with the helpers every check uses to
//! say what it found.

use std::path::PathBuf;

use breeze_protocol::{CheckOutcome, DoctorCheck, SetupTrial};
use breeze_supervise::Supervisor;

use super::programs::Lookup;
use crate::config::Config;
use crate::error::EngineError;
use crate::progress::ProgressSink;

/// Which command the preflight runs for: what it checks differs a little.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `breeze run`: everything.
    NewRun,
    /// `breeze resume`: the run's plan and lanes exist already — no template check, no
    /// setup trial.
    Resume,
    /// `breeze doctor`: everything; a missing plan is only a warning.
    Doctor,
}

/// What to check and how.
#[derive(Clone)]
pub struct PreflightOptions {
    /// A directory inside the repository.
    pub repo_dir: PathBuf,
    /// The plan given; default: `plan.toml`, then `Plans.md`, at the root.
    pub plan: Option<PathBuf>,
    /// Use this configuration instead of reading `breeze.toml` (not checked then).
    pub config: Option<Config>,
    /// For which command.
    pub stage: Stage,
    /// Run `worktree.setup` in a throwaway checkout (unless its result is cached).
    pub setup_check: bool,
    /// Runs the setup trial.
    pub supervisor: Supervisor,
    /// Told what takes time (the setup trial) while it goes on.
    pub progress: ProgressSink,
    /// The environment roles and the project's commands will be started from (their PATH,
    /// the credentials passed to agent CLIs): the engine's own.
    pub env: Vec<(String, String)>,
    /// `breeze resume --budget-usd` / `--budget-tokens`: the caps the resumed run will have.
    pub budget_raise: crate::budget::BudgetRaise,
}

impl PreflightOptions {
    /// The checks of `stage` for the repository containing `repo_dir`.
    pub fn new(repo_dir: impl Into<PathBuf>, stage: Stage) -> PreflightOptions {
        PreflightOptions {
            repo_dir: repo_dir.into(),
            plan: None,
            config: None,
            stage,
            setup_check: true,
            supervisor: Supervisor::new(),
            progress: crate::progress::silent(),
            env: std::env::vars().collect(),
            budget_raise: Default::default(),
        }
    }
}

/// What the preflight found.
#[derive(Debug, Clone, Default)]
pub struct Preflight {
    /// The repository's root, when `repo_dir` is in one.
    pub root: Option<PathBuf>,
    /// Every check, in the order made.
    pub checks: Vec<DoctorCheck>,
    /// The setup trial, when it ran or was cached.
    pub setup: Option<SetupTrial>,
}

impl Preflight {
    /// The checks that stop a run.
    pub fn problems(&self) -> impl Iterator<Item = &DoctorCheck> {
        self.checks.iter().filter(|check| check.outcome == CheckOutcome::Problem)
    }

    /// Whether nothing stops a run.
    pub fn is_ok(&self) -> bool {
        self.problems().next().is_none()
    }

    /// The problems as one line each, with what to do: the error `breeze run` stops with.
    pub fn into_error(self) -> Result<(), EngineError> {
        let lines: Vec<String> = self.problems().map(line).collect();
        if lines.is_empty() { Ok(()) } else { Err(EngineError::Preflight(lines)) }
    }

    pub(super) fn push(
        &mut self,
        check: &str,
        subject: impl Into<String>,
        outcome: CheckOutcome,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.checks.push(DoctorCheck {
            check: check.into(),
            subject: subject.into(),
            outcome,
            message: message.into(),
            hint,
            searched: Vec::new(),
        });
    }
}

/// A check as one line: `message: hint`.
pub fn line(check: &DoctorCheck) -> String {
    match &check.hint {
        Some(hint) => format!("{}: {hint}", check.message),
        None => check.message.clone(),
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and(items: &[impl AsRef<str>]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A program lookup as a check: a problem when it is not found, naming `what` needs it.
pub(super) fn push_lookup(
    found: &mut Preflight,
    check: &str,
    subject: &str,
    what: &str,
    lookup: Lookup,
) {
    let (outcome, message, hint) = match &lookup.found {
        Ok(_) => (CheckOutcome::Ok, format!("{lookup}, for {what}"), None),
        Err(_) => (
            CheckOutcome::Problem,
            format!("{lookup} for {what}"),
            Some(format!("install {}, or change {what} in breeze.toml", lookup.program)),
        ),
    };
    let searched = if lookup.found.is_err() { lookup.searched } else { Vec::new() };
    found.checks.push(DoctorCheck {
        check: check.into(),
        subject: subject.into(),
        outcome,
        message,
        hint,
        searched,
    });
}
