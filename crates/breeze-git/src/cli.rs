//! The `git` command, used only where libgit2 falls short: full checkouts of large trees
//! (libgit2 checks out about half as fast as git) and checkouts in repositories whose
//! `.gitattributes` name external filters such as git-lfs (libgit2 never runs them). Which
//! operation uses it is decided in `checkouts.rs`.
//!
//! Every invocation runs with hooks disabled (libgit2 never runs hooks either, so both paths
//! behave the same) and without the `GIT_*` variables that would redirect it to another
//! repository.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

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

/// Whether a `git` executable can be run; `Err` carries the reason for messages.
pub(crate) fn probe() -> Result<String, String> {
    let output = Command::new("git")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(format!("`git --version` exited with {}", output.status))
    }
}

/// Variables the `git` CLI gets from the engine's environment; nothing else (no tokens, no
/// keys) reaches it or anything a repository's configuration could make it run.
const KEPT_VARS: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"];

/// Runs `git -C <dir> <args>` and returns its standard output.
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

/// [`run`] with variables of its own and a standard input.
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
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
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
    let output = match (child.stdin.take(), extra.stdin) {
        (Some(mut pipe), Some(input)) => std::thread::scope(|scope| {
            // Fed from a thread of its own: git may fill its output pipes before it has
            // read all of its input.
            scope.spawn(move || {
                use std::io::Write as _;
                let _ = pipe.write_all(input);
            });
            child.wait_with_output()
        }),
        _ => child.wait_with_output(),
    }
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

/// `git status` of the checkout at `dir` as `(XY, path)` pairs: changed, staged, untracked
/// (every file) and, with `ignored`, ignored files. Used instead of libgit2's status where
/// external filters apply: libgit2 would hash files without the clean filter and see
/// changes that are not there.
pub(crate) fn status(dir: &Path, ignored: bool) -> Result<Vec<(String, String)>, GitError> {
    let mut args = vec!["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all"];
    if ignored {
        args.push("--ignored=matching");
    }
    let out = run(dir, args, "read the status of a checkout")?;
    Ok(out
        .split('\0')
        .filter(|record| record.len() > 3)
        .map(|record| (record[..2].to_string(), record[3..].to_string()))
        .collect())
}
