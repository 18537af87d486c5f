//! Exit codes of the `breeze` command, stable across versions.

/// How `breeze` ends. Scripts may rely on these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitCode {
    /// Every task landed (or the command did what was asked).
    Success,
    /// The run finished with escalated, blocked or failed tasks; `breeze validate`
    /// found problems.
    Unfinished,
    /// Usage, configuration or plan error; `breeze validate` got something that is not JSON.
    Usage,
    /// Interrupted; `breeze resume` continues.
    Interrupted,
}

impl ExitCode {
    /// The process exit status.
    pub const fn code(self) -> i32 {
        match self {
            Self::Success => 0,
            Self::Unfinished => 1,
            Self::Usage => 2,
            Self::Interrupted => 3,
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // The codes are 0..=3, so the cast cannot truncate.
        std::process::ExitCode::from(code.code() as u8)
    }
}
