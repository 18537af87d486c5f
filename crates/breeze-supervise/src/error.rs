//! Why a role process could not be started.

use std::io;
use std::path::PathBuf;

/// A role process could not be started. Every message names the program and says what to
/// check; nothing was left running.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// `argv` was empty.
    #[error(
        "the role command is empty: give at least a program name (check the role's `command` in breeze.toml)"
    )]
    EmptyCommand,

    /// The working directory does not exist or is not a directory.
    #[error(
        "cannot start `{program}`: the working directory {} does not exist or is not a directory; \
         check that the worktree was created and not removed",
        cwd.display()
    )]
    CwdMissing {
        /// `argv[0]` as configured.
        program: String,
        /// The missing directory.
        cwd: PathBuf,
    },

    /// No file of that name was found.
    #[error(
        "cannot start `{program}`: not found {searched}; check the role's `command` in breeze.toml, \
         install the program, or put its directory on PATH (the role sees only its scrubbed environment)"
    )]
    ProgramNotFound {
        /// `argv[0]` as configured.
        program: String,
        /// Where it was looked for, e.g. `in PATH=/usr/bin:/bin` or `at /repo/run.sh`.
        searched: String,
    },

    /// A file was found but it cannot be executed.
    #[error(
        "cannot start `{program}`: {} is not an executable file; make it executable (`chmod +x`) \
         or run it through its interpreter, e.g. [\"bash\", \"{program}\"]",
        path.display()
    )]
    NotExecutable {
        /// `argv[0]` as configured.
        program: String,
        /// The file that was found.
        path: PathBuf,
    },

    /// The operating system refused to run the program.
    #[error(
        "cannot start `{program}` ({}): {source}; check that it is a valid executable for this \
         machine (a script needs a `#!` line naming an installed interpreter)",
        path.display()
    )]
    Exec {
        /// `argv[0]` as configured.
        program: String,
        /// The resolved path that was executed.
        path: PathBuf,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },

    /// A log file for the role's output could not be created.
    #[error(
        "cannot start `{program}`: cannot create the log file {}: {source}; check that the run \
         directory exists and is writable",
        path.display()
    )]
    Log {
        /// `argv[0]` as configured.
        program: String,
        /// The log file.
        path: PathBuf,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },

    /// The kernel confinement could not be set up; the process was not started.
    #[error("cannot start `{program}` confined: {source}")]
    Sandbox {
        /// `argv[0]` as configured.
        program: String,
        /// What failed.
        #[source]
        source: crate::SandboxError,
    },
}
