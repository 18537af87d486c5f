//! Exit codes of the `breeze` command, stable across versions.

/// How `breeze` ends. Scripts may rely on these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitCode {
    /// Every task landed (or the command did what was asked).
    Success,
    /// The run finished with escalated, blocked or failed tasks; `breeze validate`
    /// found problems; the work cannot go on until a person acts (a task spent its
    /// budget, the run's saved state cannot be read).
    Unfinished,
    /// What was asked cannot be done as things stand: a usage, configuration or plan
    /// error, a preflight problem, a repository breeze cannot work in as it is (another
    /// run holds it, a merge in progress); `breeze validate` got something that is not JSON.
    Usage,
    /// Interrupted; `breeze resume` continues.
    Interrupted,
    /// breeze could not read or write what it needed (a file, the run's folder, the
    /// terminal) or start a process; nothing is wrong with what was asked.
    Io,
    /// A defect of breeze itself (please report it); what a run saved stays.
    Internal,
}

impl ExitCode {
    /// The process exit status.
    pub const fn code(self) -> i32 {
        match self {
            Self::Success => 0,
            Self::Unfinished => 1,
            Self::Usage => 2,
            Self::Interrupted => 3,
            Self::Io => 4,
            Self::Internal => 5,
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // The codes are 0..=5, so the cast cannot truncate.
        std::process::ExitCode::from(code.code() as u8)
    }
}
