//! The command-line error: a message, hints on what to do next, and the exit code.

use breeze_protocol::ExitCode;

/// An error shown to the user. Hints say what to do next ("run `breeze resume`").
#[derive(Debug)]
pub struct CliError {
    /// How the process exits.
    pub exit: ExitCode,
    /// One line (or a few) saying what went wrong.
    pub message: String,
    /// What to do about it.
    pub hints: Vec<String>,
}

impl CliError {
    /// A usage, configuration or plan error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self { exit: ExitCode::Usage, message: message.into(), hints: Vec::new() }
    }

    /// An error with an explicit exit code.
    pub fn with_exit(exit: ExitCode, message: impl Into<String>) -> Self {
        Self { exit, message: message.into(), hints: Vec::new() }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
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

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        CliError::usage(err.to_string())
    }
}

/// The result of a command: the exit code to use when it did not fail outright.
pub type CliResult = Result<ExitCode, CliError>;
