//! What to run ([`ProcessSpec`]) and how it ended ([`Outcome`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One role process to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The command line. `argv[0]` is resolved in the `PATH` of [`env`](Self::env) (not the
    /// engine's); a name containing `/` is a path, relative to [`cwd`](Self::cwd).
    pub argv: Vec<String>,
    /// The working directory (the task worktree).
    pub cwd: PathBuf,
    /// The **complete** environment: nothing is inherited from the engine. Build it with
    /// [`scrubbed_env`](crate::scrubbed_env).
    pub env: Vec<(String, String)>,
    /// Written to the role's stdin, which is then closed. Empty: stdin is `/dev/null`.
    /// Either way stdin is never the terminal (the process has no controlling terminal).
    pub stdin: Vec<u8>,
    /// Stem of the two raw, byte-exact log files `<log_path>.stdout` and `<log_path>.stderr`
    /// (see [`stream_log_paths`]). Parent directories are created.
    pub log_path: PathBuf,
    /// Wall-clock limit; then the group is terminated and the ending is
    /// [`Ending::TimedOut`].
    pub timeout: Option<Duration>,
    /// No output on either stream *and* no change reported by the activity probe for this
    /// long: the group is terminated and the ending is [`Ending::Stalled`].
    pub stall_timeout: Option<Duration>,
    /// Delay between SIGTERM and SIGKILL to the group (zero: SIGKILL at once).
    pub grace: Duration,
    /// Bytes of each stream kept in memory for [`Outcome::stdout_tail`] / `stderr_tail`.
    pub tail_bytes: usize,
    /// Lines longer than this are cut (on a character boundary) and marked
    /// `… [line truncated: N bytes]` before they reach the line callback.
    pub max_line_bytes: usize,
    /// Kernel confinement (Landlock) the child enforces on itself before `exec`. `None`:
    /// the process may write whatever the user may. Spawning fails if the confinement
    /// cannot be set up (never silently unconfined).
    pub confinement: Option<crate::Confinement>,
    /// How the process is kept apart from the person's terminal and from what it leaves
    /// behind: always a session of its own (no controlling terminal); by default also a
    /// PID namespace of its own where the machine allows it ([`crate::isolation_support`]),
    /// so that everything it starts ends with it. Independent of `confinement`.
    pub isolation: crate::Isolation,
    /// A value unique to this run, set as [`MARKER_VAR`](crate::MARKER_VAR) in the
    /// environment. Descendants that left the process group but kept the marker are ended
    /// with the group.
    pub marker: Option<String>,
    /// Where the process may connect: `None`, wherever the engine can; else a network
    /// namespace of its own whose only way out is the allow-list of [`crate::NetworkAccess`]
    /// (spawning fails where the machine cannot make one; add
    /// [`NetworkAccess::proxy_env`](crate::NetworkAccess::proxy_env) to `env`).
    pub network: Option<crate::NetworkAccess>,
}

impl ProcessSpec {
    /// Default delay between SIGTERM and SIGKILL.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
    /// Default size of each in-memory tail.
    pub const DEFAULT_TAIL_BYTES: usize = 64 * 1024;
    /// Default maximum line length handed to the line callback.
    pub const DEFAULT_MAX_LINE_BYTES: usize = 1024 * 1024;

    /// A spec with an empty environment, empty stdin, no timeouts, the default grace, tail
    /// and line sizes, no confinement and the default [`Isolation`](crate::Isolation). Set
    /// the public fields for the rest.
    pub fn new(argv: Vec<String>, cwd: impl Into<PathBuf>, log_path: impl Into<PathBuf>) -> Self {
        Self {
            argv,
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: Vec::new(),
            log_path: log_path.into(),
            timeout: None,
            stall_timeout: None,
            grace: Self::DEFAULT_GRACE,
            tail_bytes: Self::DEFAULT_TAIL_BYTES,
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            confinement: None,
            isolation: crate::Isolation::default(),
            marker: None,
            network: None,
        }
    }
}

/// The two log files written for a spec's `log_path`: `(<log_path>.stdout, <log_path>.stderr)`.
///
/// Each holds exactly the bytes the role wrote to that stream, so the stdout log can be
/// re-parsed (e.g. a stream of JSON events) and nothing is lost when a line is endless.
pub fn stream_log_paths(log_path: &Path) -> (PathBuf, PathBuf) {
    let with_suffix = |suffix: &str| {
        let mut name = log_path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    (with_suffix(".stdout"), with_suffix(".stderr"))
}

/// How a role process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// It exited on its own with this code (-1 in the never-seen case that its exit status
    /// could not be read).
    Exited(i32),
    /// It was ended by a signal it did not get from the supervisor (e.g. it crashed).
    Signaled(i32),
    /// The wall-clock timeout expired; the group was terminated.
    TimedOut,
    /// No output and no activity for the stall timeout; the group was terminated.
    Stalled,
    /// The cancellation token fired (engine shutdown, abort); the group was terminated.
    Cancelled,
}

impl Ending {
    /// `true` only for `Exited(0)`.
    pub fn is_success(self) -> bool {
        self == Self::Exited(0)
    }
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => match nix::sys::signal::Signal::try_from(*signal) {
                Ok(name) => write!(f, "killed by signal {signal} ({name})"),
                Err(_) => write!(f, "killed by signal {signal}"),
            },
            Self::TimedOut => f.write_str("timed out"),
            Self::Stalled => f.write_str("stalled (no output and no file changes)"),
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// The result of a supervised run. When it is returned, no live process of the role's group
/// is left (see [`survivors`](Self::survivors) for the one exception).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended. A termination reason (`TimedOut`, `Stalled`, `Cancelled`) wins over the
    /// exit status the process had after the signal.
    pub ending: Ending,
    /// The leader's pid, which is also the process group id.
    pub pid: u32,
    /// Lossy UTF-8 of the last [`ProcessSpec::tail_bytes`] of stdout.
    pub stdout_tail: String,
    /// Lossy UTF-8 of the last [`ProcessSpec::tail_bytes`] of stderr.
    pub stderr_tail: String,
    /// Total bytes read from stdout.
    pub stdout_bytes: u64,
    /// Total bytes read from stderr.
    pub stderr_bytes: u64,
    /// The last top-level JSON object in the last [`Supervisor::json_window`] bytes of
    /// stdout (pretty-printed or not, prose around it allowed).
    ///
    /// [`Supervisor::json_window`]: crate::Supervisor::json_window
    pub last_json: Option<serde_json::Value>,
    /// From spawn until the group was gone.
    pub duration: Duration,
    /// After the leader exited, other processes of its group stayed alive or held its output
    /// open past the leak timeout, and were killed (or, outside the group, abandoned).
    pub leaked: bool,
    /// SIGKILL had to be sent to the group (grace period expired, or leak clean-up).
    pub sigkilled: bool,
    /// Processes of the group still alive after SIGKILL (uninterruptible sleep). Empty in
    /// practice; the engine should record them if not.
    pub survivors: Vec<u32>,
    /// The raw stdout log.
    pub stdout_log: PathBuf,
    /// The raw stderr log.
    pub stderr_log: PathBuf,
    /// Writing a log file failed (e.g. disk full); the run went on, the log is incomplete.
    pub log_error: Option<String>,
    /// Processes that had left the group but carried the run's marker, ended with it.
    pub strays: Vec<u32>,
    /// It ran in a PID namespace of its own: everything it started ended with the group,
    /// wherever it went (no look for strays by their marker was needed).
    pub own_pid_namespace: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_paths_append_the_stream_name() {
        let (out, err) = stream_log_paths(Path::new("/run/logs/1.2-worker-1.log"));
        assert_eq!(out, Path::new("/run/logs/1.2-worker-1.log.stdout"));
        assert_eq!(err, Path::new("/run/logs/1.2-worker-1.log.stderr"));
    }

    #[test]
    fn endings_read_as_sentences() {
        assert_eq!(Ending::Exited(3).to_string(), "exited with code 3");
        assert_eq!(Ending::Signaled(9).to_string(), "killed by signal 9 (SIGKILL)");
        assert!(Ending::Exited(0).is_success());
        assert!(!Ending::TimedOut.is_success());
    }
}
