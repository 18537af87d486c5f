//! The `git` command, used only where libgit2 falls short: full checkouts of large trees
//! (libgit2 checks out about half as fast as git) and checkouts in repositories whose
//! `.gitattributes` name external filters such as git-lfs (libgit2 never runs them) — which
//! checkout operation uses it is decided in `checkout_tool.rs` — and fetching from and
//! pushing to remotes (`remote.rs`), the throwaway checkout (`trial.rs`).
//!
//! Every invocation runs with hooks disabled (libgit2 never runs hooks either, so both paths
//! behave the same) and without the `GIT_*` variables that would redirect it to another
//! repository.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::bounds::StopFlag;
use crate::error::GitError;

/// Variables that would make `git` act on another repository or index than asked.
pub(crate) const REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// Why no `git` executable can be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoGit {
    /// It could not be started (not on PATH, not executable).
    #[error("{0}")]
    NotStarted(std::io::Error),
    /// `git --version` ran and failed.
    #[error("`git --version` exited with {0}")]
    Failed(std::process::ExitStatus),
}

/// The version of the `git` executable on PATH (`git version 2.47.1`), or why none runs.
pub(crate) fn probe() -> Result<String, NoGit> {
    let output = Command::new("git")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(NoGit::NotStarted)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(NoGit::Failed(output.status))
    }
}

/// Variables the `git` CLI gets from the engine's environment; nothing else (no tokens, no
/// keys) reaches it or anything a repository's configuration could make it run.
const KEPT_VARS: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"];

/// How long a `git` child ended by a stop has after SIGTERM (git removes its lock files on
/// it) before its process group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// How long the output of an exited git is waited for (a process that left its group
/// may hold the pipe).
const PIPE_PATIENCE: Duration = Duration::from_secs(5);

/// Runs `git -C <dir> <args>` to its end and returns its standard output. Only for the
/// primary checkout; a lane's checkout goes through [`run_in`] or [`run_in_stoppable`].
pub(crate) fn run<I, S>(dir: &Path, args: I, purpose: &'static str) -> Result<String, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_with(dir, args, Extra::default(), purpose)
}

/// What a `git` call gets beyond its arguments.
#[derive(Default)]
pub(crate) struct Extra<'a> {
    /// Variables set for this call only (`GIT_INDEX_FILE` for a scratch index).
    pub(crate) env: &'a [(&'a str, &'a OsStr)],
    /// Its standard input (`--stdin` lists).
    pub(crate) stdin: Option<&'a [u8]>,
}

/// [`run`] with variables of its own and a standard input (the primary checkout only).
pub(crate) fn run_with<I, S>(
    dir: &Path,
    args: I,
    extra: Extra<'_>,
    purpose: &'static str,
) -> Result<String, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_at(dir, None, args, purpose, None, extra)
}

/// Runs `git --git-dir=<git_dir> --work-tree=<work_tree> <args>` in `work_tree` to its end
/// and returns its standard output. For what must not be cut short once begun (moving a
/// lane). The checkout's git directory is the one breeze names (a lane's admin folder
/// `.git/worktrees/<name>`), never the one its `.git` file names: in a lane that file is in
/// the worker's reach, and while a worker runs it names the worker's private git directory.
pub(crate) fn run_in<I, S>(
    git_dir: &Path,
    work_tree: &Path,
    args: I,
    purpose: &'static str,
) -> Result<String, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_at(work_tree, Some(git_dir), args, purpose, None, Extra::default())
}

/// [`run_in`], ended — its whole process group, filters included: SIGTERM, then SIGKILL
/// after [`STOP_GRACE`] — once `stop` is raised, with [`GitError::Cancelled`]. For long
/// steps that can be done again (a new worktree's checkout, staging, resetting the
/// integration worktree).
pub(crate) fn run_in_stoppable<I, S>(
    git_dir: &Path,
    work_tree: &Path,
    args: I,
    purpose: &'static str,
    stop: &StopFlag,
) -> Result<String, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_at(work_tree, Some(git_dir), args, purpose, Some(stop), Extra::default())
}

/// `git -C <dir> [--git-dir=<git_dir> --work-tree=<dir>] <args>` with `extra`'s variables
/// and input, ended once `stop` (when given) is raised.
fn run_at<I, S>(
    dir: &Path,
    git_dir: Option<&Path>,
    args: I,
    purpose: &'static str,
    stop: Option<&StopFlag>,
    extra: Extra<'_>,
) -> Result<String, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut args: Vec<std::ffi::OsString> =
        args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    if let Some(git_dir) = git_dir {
        let mut named = vec![
            std::ffi::OsString::from(format!("--git-dir={}", git_dir.display())),
            std::ffi::OsString::from(format!("--work-tree={}", dir.display())),
        ];
        named.append(&mut args);
        args = named;
    }
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        // No hooks, no file-system monitor program: a repository's configuration must not
        // make breeze run code (libgit2 never runs either).
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"])
        .args(["-c", "advice.detachedHead=false"])
        .args(&args)
        .stdin(if extra.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a Ctrl-C on the terminal reaches breeze, which decides
        // what to end, and ending it ends its filter processes too.
        .process_group(0)
        .env_clear()
        .envs(KEPT_VARS.iter().filter_map(|name| Some((*name, std::env::var_os(name)?))))
        .envs(extra.env.iter().copied())
        .env("LC_ALL", "C");
    debug_assert!(REDIRECTING_VARS.iter().all(|var| !KEPT_VARS.contains(var)));
    let shown = || {
        let mut line = format!("git -C {}", dir.display());
        for arg in &args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    };
    tracing::debug!(command = %shown(), "running git CLI fallback");
    let missing = |e: std::io::Error| GitError::CliMissing { purpose, detail: e.to_string() };
    let mut child = command.spawn().map_err(missing)?;
    let input = child.stdin.take().zip(extra.stdin);
    let output = std::thread::scope(|scope| {
        if let Some((mut pipe, input)) = input {
            // Fed from a thread of its own: git may fill its output pipes before it has
            // read all of its input.
            scope.spawn(move || {
                use std::io::Write as _;
                let _ = pipe.write_all(input);
            });
        }
        match stop {
            None => Ok(child.wait_with_output()),
            Some(stop) => wait_or_stop(child, stop, purpose),
        }
    })?
    .map_err(missing)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(GitError::Cli {
            command: shown(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Waits for `child` (its output read as it comes), ending its process group once `stop`
/// is raised.
fn wait_or_stop(
    child: Child,
    stop: &StopFlag,
    purpose: &'static str,
) -> Result<std::io::Result<Output>, GitError> {
    wait_bounded(child, &|| stop.is_raised(), None)
        .map_err(|_: CutShort| GitError::Cancelled { action: purpose })
}

/// Why [`wait_bounded`] ended a child before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CutShort {
    /// `stop` said so.
    Stopped,
    /// The deadline passed.
    TimedOut,
}

/// Waits for `child`, its output read as it comes from threads of its own, ending its
/// process group ([`end_group`]) once `stop` says so or `deadline` passes. A process that
/// left the group may still hold a pipe after `child` exited: it is not waited for long.
pub(crate) fn wait_bounded(
    mut child: Child,
    stop: &dyn Fn() -> bool,
    deadline: Option<Instant>,
) -> Result<std::io::Result<Output>, CutShort> {
    let (sender, receiver) = std::sync::mpsc::channel::<(bool, Vec<u8>)>();
    for (is_stdout, pipe) in [
        (true, child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>)),
        (false, child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>)),
    ] {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = sender.send((is_stdout, bytes));
        });
    }
    drop(sender);
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(err) => return Ok(Err(err)),
        }
        let cut = if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            Some(CutShort::TimedOut)
        } else if stop() {
            Some(CutShort::Stopped)
        } else {
            None
        };
        if let Some(cut) = cut {
            end_group(&mut child);
            return Err(cut);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    let mut output = Output { status, stdout: Vec::new(), stderr: Vec::new() };
    for _ in 0..2 {
        match receiver.recv_timeout(PIPE_PATIENCE) {
            Ok((true, bytes)) => output.stdout = bytes,
            Ok((false, bytes)) => output.stderr = bytes,
            Err(_) => break,
        }
    }
    Ok(Ok(output))
}

/// Ends the process group `child` leads: SIGTERM (git removes its lock files), then SIGKILL
/// after [`STOP_GRACE`]; reaps the child.
fn end_group(child: &mut Child) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    let group = Pid::from_raw(child.id() as i32);
    let _ = killpg(group, Signal::SIGTERM);
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            // Its children (filters) may linger in the group; they get SIGKILL below.
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = killpg(group, Signal::SIGKILL);
    let _ = child.wait();
}

/// `git status` of the checkout at `dir` as `(XY, path)` pairs: changed, staged, untracked
/// (every file) and, with `ignored`, ignored files. Used instead of libgit2's status where
/// external filters apply: libgit2 would hash files without the clean filter and see
/// changes that are not there. For the primary checkout; a lane's goes through
/// [`status_in`].
pub(crate) fn status(dir: &Path, ignored: bool) -> Result<Vec<(String, String)>, GitError> {
    status_at(dir, None, ignored)
}

/// [`status`] of the checkout at `work_tree` whose git directory is `git_dir` (see
/// [`run_in`]).
pub(crate) fn status_in(
    git_dir: &Path,
    work_tree: &Path,
    ignored: bool,
) -> Result<Vec<(String, String)>, GitError> {
    status_at(work_tree, Some(git_dir), ignored)
}

fn status_at(
    dir: &Path,
    git_dir: Option<&Path>,
    ignored: bool,
) -> Result<Vec<(String, String)>, GitError> {
    let mut args = vec!["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all"];
    if ignored {
        args.push("--ignored=matching");
    }
    if git_dir.is_some() {
        // A worktree of breeze's: what it never counts as work stays out.
        args.push("--");
        args.extend(crate::names::LANE_IGNORE_PATHSPECS);
    }
    let out = run_at(dir, git_dir, args, "read the status of a checkout", None, Extra::default())?;
    Ok(out
        .split('\0')
        .filter(|record| record.len() > 3)
        .map(|record| (record[..2].to_string(), record[3..].to_string()))
        .collect())
}

/// The `git` command for the crate's unit tests: its output, or a panic naming its error.
#[cfg(test)]
pub(crate) fn git_for_test(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}
