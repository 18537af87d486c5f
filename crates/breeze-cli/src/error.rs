//! The command-line error: what kind of failure it is, what went wrong, the error that
//! caused it, and what to do next.
//!
//! The kind alone decides the exit code, so a script can tell a command line to fix (2)
//! from a disk that failed (4) or a defect of breeze (5); the README's exit-code table
//! lists them. The engine's errors take their kind from what they are.

use std::error::Error;
use std::fmt;

use breeze_engine::EngineError;
use breeze_protocol::ExitCode;

/// What kind of failure stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command line asks for what cannot be done as asked: an unknown task or message
    /// type, an option out of range, no goal, nothing to resume or watch, no editor set, a
    /// file or directory named that does not exist.
    Usage,
    /// `breeze.toml` is invalid.
    Config,
    /// The plan cannot be run: its syntax, ids, write sets or dependencies.
    Plan,
    /// The preflight found problems before a run (programs, confinement, logins, the
    /// lanes' setup); nothing was created.
    Preflight,
    /// The repository is not one breeze can work in as it is: not a repository, a merge in
    /// progress, main missing, another run holding it, a remote that refused.
    Repository,
    /// The work cannot go on until a person acts: a task spent its budget, or the run's
    /// saved state cannot be read (damaged, or written by another breeze version).
    Unfinished,
    /// Stopped before the work was done (Ctrl-C, `breeze abort`, the run's budget, a full
    /// disk); `breeze resume` continues.
    Interrupted,
    /// The system failed breeze: a file or the terminal could not be read or written, a
    /// process or the async runtime could not be started.
    Io,
    /// A defect of breeze itself.
    Internal,
}

impl ErrorKind {
    /// How the process exits after an error of this kind.
    pub fn exit_code(self) -> ExitCode {
        match self {
            ErrorKind::Usage
            | ErrorKind::Config
            | ErrorKind::Plan
            | ErrorKind::Preflight
            | ErrorKind::Repository => ExitCode::Usage,
            ErrorKind::Unfinished => ExitCode::Unfinished,
            ErrorKind::Interrupted => ExitCode::Interrupted,
            ErrorKind::Io => ExitCode::Io,
            ErrorKind::Internal => ExitCode::Internal,
        }
    }

    /// The kind of a failed read or write of a path the command line named (`-C DIR`,
    /// `validate FILE`): one that is not there is a usage error, else the system failed.
    pub fn of_named_path(err: &std::io::Error) -> ErrorKind {
        match err.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => ErrorKind::Usage,
            _ => ErrorKind::Io,
        }
    }
}

/// An error shown to the user: its kind, its message, the error that caused it (kept for
/// code that looks into it; its words are in the message already) and hints on what to
/// do next ("run `breeze resume`").
#[derive(Debug)]
pub struct CliError {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
    hints: Vec<String>,
}

impl CliError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), source: None, hints: Vec::new() }
    }

    /// A usage error: the command line asks for what cannot be done (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }

    /// A failed read or write while `doing` ("cannot write breeze.toml"): the message is
    /// `doing` and the system's words.
    pub fn io(doing: impl fmt::Display, source: std::io::Error) -> Self {
        Self::new(ErrorKind::Io, format!("{doing}: {source}")).caused_by(source)
    }

    /// A failed read or write of a path the command line named, while `doing`: a usage
    /// error when the path is not there (see [`ErrorKind::of_named_path`]).
    pub fn named_path(doing: impl fmt::Display, source: std::io::Error) -> Self {
        let kind = ErrorKind::of_named_path(&source);
        Self::new(kind, format!("{doing}: {source}")).caused_by(source)
    }

    /// A defect of breeze while `doing`: the message is `doing` and the cause's words.
    pub fn internal(doing: impl fmt::Display, source: impl Error + Send + Sync + 'static) -> Self {
        Self::new(ErrorKind::Internal, format!("{doing}: {source}")).caused_by(source)
    }

    /// Keeps `source` as the error this one comes from.
    pub fn caused_by(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// The message with `what` in front of it (`no run to watch: ...`).
    pub fn after(mut self, what: &str) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// How the process exits: as its kind says.
    pub fn exit_code(&self) -> ExitCode {
        self.kind.exit_code()
    }

    /// What went wrong, as one line or a few.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to do about it.
    pub fn hints(&self) -> &[String] {
        &self.hints
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for CliError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn Error + 'static))
    }
}

/// The error as it is printed on stderr: `error: ` and the message, then one `hint: ` line
/// per hint, control characters shown escaped (messages can quote role output).
pub fn render_error(err: &CliError) -> String {
    use crate::escape::escape_controls;
    let mut out = format!("error: {}\n", escape_controls(&err.message));
    for hint in &err.hints {
        out.push_str(&format!("hint: {}\n", escape_controls(hint)));
    }
    out
}

/// A read or write that failed with nothing more known than the system's words (writing
/// to stdout, mostly).
impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        CliError::new(ErrorKind::Io, err.to_string()).caused_by(err)
    }
}

/// An engine error keeps its message and hints; its kind is what it is.
impl From<EngineError> for CliError {
    fn from(err: EngineError) -> Self {
        let mut cli = CliError::new(engine_kind(&err), err.to_string());
        cli.hints = err.hints();
        cli.caused_by(err)
    }
}

/// A git error as the engine would report it.
impl From<breeze_git::GitError> for CliError {
    fn from(err: breeze_git::GitError) -> Self {
        CliError::from(EngineError::from(err))
    }
}

/// The kind of an engine error. The engine says which stops are resumable (a full disk,
/// the run's budget): those are interruptions.
fn engine_kind(err: &EngineError) -> ErrorKind {
    let resumable = err.exit_code() == ExitCode::Interrupted;
    match err {
        EngineError::Plan(_) => ErrorKind::Plan,
        EngineError::Config(_) => ErrorKind::Config,
        EngineError::Preflight(_) => ErrorKind::Preflight,
        EngineError::Git(git) => git_kind(git),
        EngineError::Locked(_) => ErrorKind::Repository,
        EngineError::Usage { .. } => ErrorKind::Usage,
        EngineError::Io { .. } if resumable => ErrorKind::Interrupted,
        EngineError::Io { .. } => ErrorKind::Io,
        EngineError::Snapshot(_) => ErrorKind::Unfinished,
        EngineError::Cancelled => ErrorKind::Interrupted,
        EngineError::OverBudget(_) if resumable => ErrorKind::Interrupted,
        EngineError::OverBudget(_) => ErrorKind::Unfinished,
        EngineError::Internal { .. } => ErrorKind::Internal,
    }
}

/// The kind of a git error that reaches the command line: before or outside a run, the
/// user must act on the repository first — unless the system failed or breeze is stopping.
fn git_kind(err: &breeze_git::GitError) -> ErrorKind {
    match err {
        breeze_git::GitError::Io { .. } => ErrorKind::Io,
        breeze_git::GitError::Cancelled { .. } => ErrorKind::Interrupted,
        _ => ErrorKind::Repository,
    }
}

/// The result of a command: the exit code to use when it did not fail outright.
pub type CliResult = Result<ExitCode, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    fn os_error(code: i32) -> std::io::Error {
        std::io::Error::from_raw_os_error(code)
    }

    #[test]
    fn an_io_error_exits_four_not_as_a_usage_error_and_keeps_its_cause() {
        let err = CliError::io("cannot write breeze.toml", os_error(5));
        assert_eq!((err.kind(), err.exit_code().code()), (ErrorKind::Io, 4));
        assert!(err.message().starts_with("cannot write breeze.toml: "), "{}", err.message());
        let cause = err.source().and_then(|source| source.downcast_ref::<std::io::Error>());
        assert_eq!(cause.and_then(std::io::Error::raw_os_error), Some(5));
        let bare = CliError::from(os_error(5));
        assert_eq!(bare.exit_code(), ExitCode::Io);
    }

    #[test]
    fn a_named_path_that_is_not_there_is_a_usage_error_and_one_that_fails_is_not() {
        let missing = CliError::named_path("cannot read nope.json", os_error(2));
        assert_eq!(missing.exit_code(), ExitCode::Usage);
        let failing = CliError::named_path("cannot read disk.json", os_error(5));
        assert_eq!(failing.exit_code(), ExitCode::Io);
    }

    #[test]
    fn engine_errors_take_their_kind_from_what_they_are() {
        let internal = CliError::from(EngineError::internal("saving run.json")("bad key"));
        assert_eq!((internal.kind(), internal.exit_code().code()), (ErrorKind::Internal, 5));
        assert!(internal.source().is_some_and(|source| source.is::<EngineError>()));
        let io = CliError::from(EngineError::io("cannot save run.json", os_error(13)));
        assert_eq!(io.exit_code(), ExitCode::Io);
        let full = CliError::from(EngineError::io("cannot save run.json", os_error(28)));
        assert_eq!(full.kind(), ErrorKind::Interrupted, "a full disk stops the run resumably");
        let usage = CliError::from(EngineError::usage("nothing to resume", "run `breeze run`"));
        assert_eq!((usage.kind(), usage.hints().len()), (ErrorKind::Usage, 1));
        let git = CliError::from(EngineError::Git(breeze_git::GitError::Io {
            action: "create directory",
            path: "/x".into(),
            source: os_error(5),
        }));
        assert_eq!(git.exit_code(), ExitCode::Io);
    }
}
