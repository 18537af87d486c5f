//! Engine errors: what went wrong, which exit code it means, and what to do next.

use breeze_protocol::ExitCode;

/// An error that stops a command before or during a run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The plan cannot be run.
    #[error("{0}")]
    Plan(#[from] breeze_plan::PlanError),
    /// `breeze.toml` is invalid.
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// The preflight found problems, one line each with what to do; nothing was created.
    #[error("{}", preflight_message(.0))]
    Preflight(Vec<String>),
    /// A git operation failed.
    #[error("{0}")]
    Git(#[from] breeze_git::GitError),
    /// Another run holds the repository.
    #[error("{0}")]
    Locked(#[from] crate::lock::LockError),
    /// Something the user must fix first (no plan file, bad sim table, nothing to resume).
    #[error("{message}")]
    Usage {
        /// What is wrong.
        message: String,
        /// What to do.
        hint: Option<String>,
    },
    /// Reading or writing run files failed.
    #[error("{context}: {source}")]
    Io {
        /// What breeze was doing.
        context: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The run state on disk cannot be read.
    #[error("{0}")]
    Snapshot(#[from] crate::snapshot::SnapshotError),
    /// The run is stopping (Ctrl-C, `breeze abort`, an error elsewhere): the step that
    /// was cut short is done again on `breeze resume`.
    #[error("stopped before the step finished; `breeze resume` continues")]
    Cancelled,
    /// A role call was not started: its task (it escalates) or the run (it stops resumably)
    /// has spent its budget.
    #[error("{0}")]
    OverBudget(crate::budget::OverBudget),
    /// A defect of breeze itself: a task that panicked, a value that would not serialize.
    #[error(
        "internal error while {context}: {message} — this is a bug in breeze; please report it with the run files (the run can be continued with `breeze resume`)"
    )]
    Internal {
        /// What breeze was doing.
        context: String,
        /// What went wrong.
        message: String,
    },
}

/// The preflight's problems under one heading, one indented line each.
fn preflight_message(problems: &[String]) -> String {
    let count = match problems.len() {
        1 => "a problem".to_string(),
        n => format!("{n} problems"),
    };
    let mut text = format!("breeze cannot start: {count} to fix first");
    for problem in problems {
        text.push_str("\n  ✗ ");
        text.push_str(problem);
    }
    text
}

impl EngineError {
    /// A usage error with a hint.
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> EngineError {
        EngineError::Usage { message: message.into(), hint: Some(hint.into()) }
    }

    /// A function turning any error into [`EngineError::Internal`] about `context`.
    pub fn internal<E: std::fmt::Display>(context: &str) -> impl FnOnce(E) -> EngineError + '_ {
        move |err| EngineError::Internal { context: context.to_string(), message: err.to_string() }
    }

    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> EngineError {
        EngineError::Io { context: context.into(), source }
    }

    /// Whether this error stops a run that `breeze resume` can continue once the user has
    /// acted (a configuration to fix, main to restore, space to free), rather than failing
    /// the task it happened in.
    pub fn stops_the_run(&self) -> bool {
        match self {
            EngineError::Usage { .. } => true,
            EngineError::Git(breeze_git::GitError::MainMissing { .. }) => true,
            EngineError::Io { source, .. } => is_out_of_space(source),
            _ => false,
        }
    }

    /// The exit code this error means.
    pub fn exit_code(&self) -> ExitCode {
        if let EngineError::Io { source, .. } = self
            && is_out_of_space(source)
        {
            return ExitCode::Interrupted;
        }
        match self {
            EngineError::Cancelled => ExitCode::Interrupted,
            EngineError::OverBudget(over) if over.stops_the_run() => ExitCode::Interrupted,
            EngineError::OverBudget(_) => ExitCode::Unfinished,
            // Git errors that reach the command line come before or outside a run (not a
            // repository, mid-merge, unsupported format): the user must act first.
            EngineError::Io { .. } | EngineError::Snapshot(_) | EngineError::Internal { .. } => {
                ExitCode::Unfinished
            }
            _ => ExitCode::Usage,
        }
    }

    /// What the user should do next, if breeze knows.
    pub fn hints(&self) -> Vec<String> {
        match self {
            EngineError::Plan(_) => vec!["fix the plan, then check it with `breeze plan`".into()],
            EngineError::Config(_) => vec!["every key with its default and what it does: `breeze init --print-config`".into()],
            EngineError::Locked(crate::lock::LockError::Held { .. }) => vec![
                "watch it with `breeze watch`, wait for it to finish, or stop it with `breeze abort`".into(),
            ],
            EngineError::Locked(crate::lock::LockError::Io { .. }) => vec![
                "breeze keeps its state in `.breeze/` at the repository root: it must be a folder you can write (rename a file of that name, or fix its permissions)".into(),
            ],
            EngineError::Usage { hint: Some(hint), .. } => vec![hint.clone()],
            EngineError::OverBudget(over) => vec![over.hint()],
            EngineError::Preflight(_) => vec![
                "nothing was created; `breeze doctor` makes the same checks and names the folders it searched".into(),
            ],
            EngineError::Snapshot(_) => vec!["`breeze abort` gives up on the run and sets its damaged state file aside; `breeze clean --force` then removes what it left".into()],
            EngineError::Io { source, .. } if is_out_of_space(source) => {
                vec!["free space on the disk, then `breeze resume` continues the run".into()]
            }

            _ => Vec::new(),
        }
    }
}

/// The disk (or the user's quota) is full, or the file system went read-only.
fn is_out_of_space(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc_codes::ENOSPC | libc_codes::EDQUOT))
        || err.kind() == std::io::ErrorKind::StorageFull
        || err.kind() == std::io::ErrorKind::QuotaExceeded
}

/// Errno values (Linux) for the out-of-space check.
mod libc_codes {
    pub const ENOSPC: i32 = 28;
    pub const EDQUOT: i32 = 122;
}

impl From<crate::target_branch::Refused> for EngineError {
    fn from(refused: crate::target_branch::Refused) -> EngineError {
        EngineError::usage(refused.message, refused.hint)
    }
}

impl From<crate::target_branch::NoLandingBranch> for EngineError {
    fn from(err: crate::target_branch::NoLandingBranch) -> EngineError {
        match err {
            crate::target_branch::NoLandingBranch::Git(err) => EngineError::Git(err),
            crate::target_branch::NoLandingBranch::Refused(refused) => refused.into(),
        }
    }
}

impl From<crate::budget::RaiseRefused> for EngineError {
    fn from(refused: crate::budget::RaiseRefused) -> EngineError {
        EngineError::usage(refused.message, refused.hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_stops_the_run_resumably_with_what_to_do() {
        let full = EngineError::io("cannot save run.json", std::io::Error::from_raw_os_error(28));
        assert!(full.stops_the_run());
        assert_eq!(full.exit_code(), ExitCode::Interrupted);
        assert!(
            full.hints()[0].contains("free space") && full.hints()[0].contains("breeze resume")
        );
        let other = EngineError::io("cannot save run.json", std::io::Error::from_raw_os_error(13));
        assert!(!other.stops_the_run());
        assert_eq!(other.exit_code(), ExitCode::Unfinished);
    }
}
