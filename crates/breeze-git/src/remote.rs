//! Remotes: fetching the branch landings go to, asking a remote where a branch is, and
//! pushing to it with a lease — through the `git` CLI, because libgit2 here is built
//! without its network transports and because remote access must use the user's own git
//! setup (ssh keys and agent, credential helpers, `insteadOf`, proxies): git runs with the
//! engine's environment and the repository's configuration, never with a role's.
//!
//! Every call has a time limit and can be stopped; git runs in a process group of its own
//! (with the ssh or https helper it starts), ended as a whole. Nothing ever asks on the
//! terminal (`GIT_TERMINAL_PROMPT=0`): a remote that needs a password typed in fails with
//! git's message instead of hanging the run.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use git2::{ErrorCode, Oid};

use crate::error::{Context as _, GitError};
use crate::git_cli::{CutShort, REDIRECTING_VARS};
use crate::names::validate_branch_name;
use crate::repo::Repo;

/// How git reaches a remote for breeze.
#[derive(Clone)]
pub struct RemoteAccess {
    /// The environment git runs with: the user's own (the engine's), so that ssh-agent,
    /// askpass programs and credential helpers work as they do in the user's shell. The
    /// variables that would point git at another repository are left out.
    pub env: Vec<(String, String)>,
    /// How long one fetch, push or look-up may take.
    pub timeout: Duration,
    /// Whether the repository's hooks run (`pre-push`; `land.run_hooks`).
    pub run_hooks: bool,
    /// Asked while git runs; `true` ends it (the run is stopping).
    pub stop: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

impl RemoteAccess {
    /// Access with the current process's environment, no hooks, nothing to stop it.
    pub fn from_process(timeout: Duration) -> RemoteAccess {
        RemoteAccess { env: std::env::vars().collect(), timeout, run_hooks: false, stop: None }
    }
}

impl std::fmt::Debug for RemoteAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The environment may hold secrets: only its size is shown.
        f.debug_struct("RemoteAccess")
            .field("env", &format_args!("{} variables", self.env.len()))
            .field("timeout", &self.timeout)
            .field("run_hooks", &self.run_hooks)
            .finish_non_exhaustive()
    }
}

/// A branch of a remote: where landings go (`origin/main`) or a pull request's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteBranch {
    /// The remote's name in the repository's configuration (`origin`).
    pub remote: String,
    /// The branch on the remote (`main`, `breeze/3`).
    pub branch: String,
}

impl RemoteBranch {
    /// `remote`'s `branch`.
    pub fn new(remote: impl Into<String>, branch: impl Into<String>) -> RemoteBranch {
        RemoteBranch { remote: remote.into(), branch: branch.into() }
    }

    /// `refs/remotes/<remote>/<branch>`: where the last fetch left the branch's tip.
    pub fn tracking_ref(&self) -> String {
        format!("refs/remotes/{}/{}", self.remote, self.branch)
    }

    /// `refs/heads/<branch>`, as the remote names it.
    pub fn remote_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }
}

impl std::fmt::Display for RemoteBranch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.remote, self.branch)
    }
}

/// What a push with a lease did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The remote branch now points at the pushed commit (or already did).
    Pushed,
    /// The remote refused: its branch is not where the lease expected (someone else
    /// pushed), or a hook or a protection rule declined. `reason` is git's.
    Rejected {
        /// git's words, e.g. `stale info`, `fetch first`, `pre-receive hook declined`.
        reason: String,
    },
}

/// What a `git` call printed, and whether it succeeded.
struct Ran {
    success: bool,
    stdout: String,
    stderr: String,
}

/// The last lines of git's standard error, for messages.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" / ")
}

/// Runs `git -C dir args…` with `access`, within its time limit.
fn run_git(dir: &Path, args: &[OsString], access: &RemoteAccess) -> Result<Ran, GitError> {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    if !access.run_hooks {
        command.args(["-c", "core.hooksPath=/dev/null"]);
    }
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(
            access
                .env
                .iter()
                .filter(|(name, _)| !REDIRECTING_VARS.contains(&name.as_str()))
                .map(|(name, value)| (name, value)),
        )
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .process_group(0);
    let child = command
        .spawn()
        .map_err(|e| GitError::CliMissing { purpose: "reach a remote", detail: e.to_string() })?;
    let stop = || access.stop.as_ref().is_some_and(|stop| stop());
    let deadline = Instant::now() + access.timeout;
    match crate::git_cli::wait_bounded(child, &stop, Some(deadline)) {
        Ok(Ok(output)) => Ok(Ran {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }),
        Ok(Err(e)) => {
            Err(GitError::CliMissing { purpose: "reach a remote", detail: e.to_string() })
        }
        // git and what it started (ssh, the https helper) were ended as one group, SIGTERM
        // first, so that git removed its lock files (a fetch's `refs/remotes/….lock`).
        Err(CutShort::TimedOut) => Err(GitError::Cli {
            command: shown(args),
            status: format!("no answer within {}s", access.timeout.as_secs_f64().ceil()),
            stderr: String::new(),
        }),
        Err(CutShort::Stopped) => Err(GitError::Cancelled { action: "reach a remote" }),
    }
}

/// The command line as messages show it.
fn shown(args: &[OsString]) -> String {
    let mut line = "git".to_string();
    for arg in args {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Turns a failed call into the error naming the remote and what breeze was doing.
fn remote_error(remote: &str, action: &'static str, error: GitError) -> GitError {
    let detail = match error {
        // breeze is stopping: nothing is wrong with the remote.
        GitError::Cancelled { .. } => return error,
        GitError::Cli { status, stderr, .. } if stderr.is_empty() => status,
        GitError::Cli { stderr, .. } => stderr,
        other => other.to_string(),
    };
    GitError::Remote { remote: remote.to_string(), action, detail }
}

fn os_args<const N: usize>(args: [&str; N]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

impl Repo {
    /// The names of the repository's configured remotes, sorted.
    pub fn remote_names(&self) -> Result<Vec<String>, GitError> {
        let repo = self.git()?;
        let names = repo.remotes().ctx(|| "could not read the configured remotes".to_string())?;
        let mut names: Vec<String> = names.iter().flatten().flatten().map(str::to_string).collect();
        names.sort();
        Ok(names)
    }

    /// The fetch URL configured for `remote`, `None` when there is no such remote.
    pub fn remote_url(&self, remote: &str) -> Result<Option<String>, GitError> {
        let repo = self.git()?;
        match repo.find_remote(remote) {
            Ok(found) => Ok(Some(String::from_utf8_lossy(found.url_bytes()).into_owned())),
            Err(e) if e.code() == ErrorCode::NotFound || e.code() == ErrorCode::InvalidSpec => {
                Ok(None)
            }
            Err(e) => Err(e).ctx(|| format!("could not read remote `{remote}`")),
        }
    }

    /// Checks that `remote` is a configured remote and `branch` a valid branch name: only
    /// then do they reach git's command line (a name starting with `-` never does).
    fn check_remote_branch(&self, target: &RemoteBranch) -> Result<(), GitError> {
        validate_branch_name(&target.branch)?;
        if target.remote.starts_with('-') || self.remote_url(&target.remote)?.is_none() {
            return Err(GitError::NoSuchRemote {
                remote: target.remote.clone(),
                known: self.remote_names()?,
            });
        }
        Ok(())
    }

    /// The tip the last fetch recorded for `target` (`refs/remotes/<remote>/<branch>`), or
    /// `None` when none was fetched. No network.
    pub fn tracking_tip(&self, target: &RemoteBranch) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        let name = target.tracking_ref();
        match repo.refname_to_id(&name) {
            Ok(oid) => Ok(Some(oid)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).ctx(|| format!("could not read {name}")),
        }
    }

    /// Fetches `target` from its remote into `refs/remotes/<remote>/<branch>` (no tags, no
    /// other branch) and returns its tip; `None` when the remote has no such branch.
    pub fn fetch_branch(
        &self,
        target: &RemoteBranch,
        access: &RemoteAccess,
    ) -> Result<Option<Oid>, GitError> {
        self.check_remote_branch(target)?;
        let spec = format!("+{}:{}", target.remote_ref(), target.tracking_ref());
        let args = os_args(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"]);
        let args: Vec<OsString> =
            args.into_iter().chain([target.remote.clone().into(), spec.into()]).collect();
        let ran = run_git(&self.workdir, &args, access)
            .map_err(|e| remote_error(&target.remote, "fetch from", e))?;
        if !ran.success {
            if ran.stderr.contains("couldn't find remote ref") {
                return Ok(None);
            }
            return Err(GitError::Remote {
                remote: target.remote.clone(),
                action: "fetch from",
                detail: tail(&ran.stderr),
            });
        }
        self.tracking_tip(target)
    }

    /// Where `target`'s branch is on the remote now (`git ls-remote`), without fetching:
    /// `None` when the remote has no such branch. Tells whether the remote can be reached.
    pub fn remote_branch_tip(
        &self,
        target: &RemoteBranch,
        access: &RemoteAccess,
    ) -> Result<Option<Oid>, GitError> {
        self.check_remote_branch(target)?;
        let args: Vec<OsString> = os_args(["ls-remote", "--heads"])
            .into_iter()
            .chain([target.remote.clone().into(), target.remote_ref().into()])
            .collect();
        let ran = run_git(&self.workdir, &args, access)
            .map_err(|e| remote_error(&target.remote, "reach", e))?;
        if !ran.success {
            return Err(GitError::Remote {
                remote: target.remote.clone(),
                action: "reach",
                detail: tail(&ran.stderr),
            });
        }
        let wanted = target.remote_ref();
        Ok(ran.stdout.lines().find_map(|line| {
            let (oid, name) = line.split_once('\t')?;
            (name.trim() == wanted).then(|| Oid::from_str(oid.trim()).ok()).flatten()
        }))
    }

    /// Whether `ancestor` is `commit` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: Oid, commit: Oid) -> Result<bool, GitError> {
        if ancestor == commit {
            return Ok(true);
        }
        let repo = self.git()?;
        repo.graph_descendant_of(commit, ancestor)
            .ctx(|| format!("could not compare {commit} with {ancestor}"))
    }

    /// The best common ancestor of `a` and `b`, `None` when they share no history.
    pub fn merge_base(&self, a: Oid, b: Oid) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        match repo.merge_base(a, b) {
            Ok(oid) => Ok(Some(oid)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).ctx(|| format!("could not find where {a} and {b} meet")),
        }
    }

    /// Pushes `commit` to `target`'s branch only if the remote branch is at `expected`
    /// (`None`: only if it does not exist) — `git push --force-with-lease=<ref>:<expected>`,
    /// checked by git before it sends and by the remote when it updates the ref, so a push
    /// made by someone else in between is never overwritten. With `fast_forward_only`,
    /// `commit` must descend from `expected` or nothing is pushed (the branch landings go
    /// to); a branch of breeze's own (a pull request's) may be replaced by a rebuilt commit.
    pub fn push_with_lease(
        &self,
        target: &RemoteBranch,
        commit: Oid,
        expected: Option<Oid>,
        fast_forward_only: bool,
        access: &RemoteAccess,
    ) -> Result<PushOutcome, GitError> {
        self.check_remote_branch(target)?;
        if let Some(expected) = expected.filter(|_| fast_forward_only)
            && !self.is_ancestor(expected, commit)?
        {
            return Err(GitError::NotFastForward {
                branch: target.to_string(),
                from: expected,
                to: commit,
            });
        }
        let remote_ref = target.remote_ref();
        let lease = format!(
            "--force-with-lease={remote_ref}:{}",
            expected.map(|oid| oid.to_string()).unwrap_or_default()
        );
        let args: Vec<OsString> = os_args(["push", "--porcelain", "--no-recurse-submodules"])
            .into_iter()
            .chain([
                lease.into(),
                target.remote.clone().into(),
                format!("{commit}:{remote_ref}").into(),
            ])
            .collect();
        let ran = run_git(&self.workdir, &args, access)
            .map_err(|e| remote_error(&target.remote, "push to", e))?;
        match porcelain_line(&ran.stdout, &remote_ref) {
            Some(('!', summary)) => Ok(PushOutcome::Rejected { reason: rejection(&summary) }),
            Some((_, _)) if ran.success => Ok(PushOutcome::Pushed),
            _ => Err(GitError::Remote {
                remote: target.remote.clone(),
                action: "push to",
                detail: tail(&ran.stderr),
            }),
        }
    }
}

/// The flag and summary of `git push --porcelain`'s line for `remote_ref`
/// (`<flag>\t<from>:<to>\t<summary>`).
fn porcelain_line(stdout: &str, remote_ref: &str) -> Option<(char, String)> {
    stdout.lines().find_map(|line| {
        let mut fields = line.splitn(3, '\t');
        let flag = fields.next()?.chars().next()?;
        let (_, to) = fields.next()?.split_once(':')?;
        (to == remote_ref).then(|| (flag, fields.next().unwrap_or("").trim().to_string()))
    })
}

/// git's reason for a rejection: `[rejected] (stale info)` gives `stale info`.
fn rejection(summary: &str) -> String {
    match (summary.find('('), summary.rfind(')')) {
        (Some(open), Some(close)) if open < close => summary[open + 1..close].to_string(),
        _ => summary.trim_matches(['[', ']']).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_are_read_per_ref() {
        let out = "To /tmp/remote.git\n=\trefs/heads/x:refs/heads/x\t[up to date]\n!\tabc:refs/heads/main\t[rejected] (stale info)\nDone\n";
        assert_eq!(
            porcelain_line(out, "refs/heads/main"),
            Some(('!', "[rejected] (stale info)".to_string()))
        );
        assert_eq!(porcelain_line(out, "refs/heads/x").map(|(flag, _)| flag), Some('='));
        assert_eq!(porcelain_line(out, "refs/heads/y"), None);
        assert_eq!(rejection("[rejected] (stale info)"), "stale info");
        assert_eq!(
            rejection("[remote rejected] (pre-receive hook declined)"),
            "pre-receive hook declined"
        );
        assert_eq!(rejection("[rejected]"), "rejected");
    }

    #[test]
    fn stderr_tails_keep_the_last_lines() {
        assert_eq!(tail("a\n\nb\nc\nd\n"), "b / c / d");
        assert_eq!(tail(""), "");
    }
}
