//! The error type of this crate, [`GitError`], and the reasons some of its variants carry:
//! every message says what went wrong and what to do next.

use std::path::{Path, PathBuf};

use git2::Oid;

/// Everything that can go wrong in the git layer.
///
/// Display messages are meant to be shown to the user as they are: they name the repository,
/// worktree, branch or path involved and end with what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// The path is not inside a git repository.
    #[error(
        "{} is not inside a git repository: run breeze from inside your repository, or create one \
         with `git init` and make a first commit",
        path.display()
    )]
    NotARepository {
        /// The path that was opened.
        path: PathBuf,
    },

    /// Bare repositories have no working tree to land into.
    #[error(
        "{} is a bare repository: breeze needs a working tree; clone it (`git clone {} <dir>`) \
         and run breeze in the clone",
        path.display(),
        path.display()
    )]
    BareRepository {
        /// The repository's git directory.
        path: PathBuf,
    },

    /// A repository feature libgit2 cannot handle (SHA-256, reftable, sparse checkout, ...).
    #[error("{}: {feature} is not supported by breeze: {todo}", path.display())]
    Unsupported {
        /// The repository.
        path: PathBuf,
        /// What was found, e.g. "a sparse checkout (core.sparseCheckout = true)".
        feature: String,
        /// What the user can do.
        todo: String,
    },

    /// The main branch has no commit yet.
    #[error(
        "branch `{branch}` has no commits yet: make a first commit (for example \
         `git commit --allow-empty -m init`) and run again"
    )]
    NoCommits {
        /// The main branch name.
        branch: String,
    },

    /// The main branch does not exist, though the repository has commits (renamed or
    /// deleted, or a configured name that is not there).
    #[error(
        "branch `{branch}` does not exist (was it renamed or deleted?): breeze lands on it; \
         create or restore it (`git branch {branch} <commit>`), or name another branch in \
         run.main_branch"
    )]
    MainMissing {
        /// The main branch name.
        branch: String,
    },

    /// A checkout is in the middle of a merge, rebase, cherry-pick, revert or bisect.
    #[error(
        "{} is in the middle of a {operation}: finish it, or abort it with `{abort}`, then run \
         again (breeze never touches a checkout in that state)",
        path.display()
    )]
    MidOperation {
        /// The checkout.
        path: PathBuf,
        /// e.g. "merge", "rebase".
        operation: &'static str,
        /// The command that aborts it.
        abort: &'static str,
    },

    /// A worktree or branch name that is not safe to use.
    #[error("invalid {what} `{name}`: {reason}")]
    InvalidName {
        /// "worktree name" or "branch name".
        what: &'static str,
        /// The rejected name.
        name: String,
        /// Why and what is allowed.
        reason: String,
    },

    /// Something already occupies the worktree's name or path.
    #[error("worktree `{name}` ({}): {problem}", path.display())]
    WorktreeConflict {
        /// Worktree name.
        name: String,
        /// Worktree path.
        path: PathBuf,
        /// What is in the way and what to do.
        problem: String,
    },

    /// The task branch exists already, at another commit than the requested base.
    #[error(
        "branch `{branch}` already exists at {actual}, not at the requested base {expected}: if it \
         is left over from an earlier run, delete it (`git branch -D {branch}`); otherwise use \
         another task id"
    )]
    BranchExists {
        /// Branch name (without `refs/heads/`).
        branch: String,
        /// Where it points.
        actual: Oid,
        /// Where it was expected to point.
        expected: Oid,
    },

    /// A branch that was expected to exist does not.
    #[error(
        "branch `{branch}` does not exist: the task's earlier work is not there (was the branch \
         deleted?); start the task again from the main tip"
    )]
    NoSuchBranch {
        /// Branch name.
        branch: String,
    },

    /// The branch is checked out in some worktree, so it cannot be used or deleted.
    #[error(
        "branch `{branch}` is checked out in {}: switch that checkout to another branch or remove \
         that worktree first",
        path.display()
    )]
    BranchCheckedOut {
        /// Branch name.
        branch: String,
        /// Where it is checked out.
        path: PathBuf,
    },

    /// A checkout has uncommitted changes where the operation needs it clean.
    #[error(
        "{} has uncommitted changes ({}): commit or discard them first",
        path.display(),
        list_paths(paths)
    )]
    Dirty {
        /// The checkout.
        path: PathBuf,
        /// The changed or untracked paths.
        paths: Vec<String>,
    },

    /// The worker switched branches or detached HEAD in its worktree.
    #[error(
        "HEAD in {} is {found}, not the task branch `{expected}`: the worker must stay on its \
         branch; run `git -C {} switch {expected}` (keeping its changes) and try again",
        path.display(),
        path.display()
    )]
    HeadMoved {
        /// The worktree.
        path: PathBuf,
        /// The expected branch.
        expected: String,
        /// What HEAD is instead.
        found: String,
    },

    /// The task branch no longer descends from the commit the task started from.
    #[error(
        "branch `{branch}` (at {head}) does not descend from the task's base {base}: the worker \
         rewrote history below its starting point; reset the branch onto {base} and re-apply \
         the work"
    )]
    NotFromBase {
        /// Branch name.
        branch: String,
        /// Its tip.
        head: Oid,
        /// The task's base commit.
        base: Oid,
    },

    /// The new main commit does not descend from the old one.
    #[error(
        "refusing to move `{branch}` from {from} to {to}: {to} does not descend from {from} \
         (landing commits must have the current tip as an ancestor); re-merge onto {from}"
    )]
    NotFastForward {
        /// Branch name.
        branch: String,
        /// Current tip.
        from: Oid,
        /// Proposed tip.
        to: Oid,
    },

    /// A path that breeze will not touch because it did not create it.
    #[error("{}: {problem}", path.display())]
    NotManaged {
        /// The path.
        path: PathBuf,
        /// Why breeze leaves it alone and what the user can do.
        problem: String,
    },

    /// A file in a place a role process could have written (a lane's admin folder, its
    /// private git directory) that breeze will not follow or read: a link, a FIFO, a device.
    #[error(
        "{}: {problem}; breeze does not follow links or open special files a role could have \
         planted there — remove it (the lane is repaired after its next role), then run again",
        path.display()
    )]
    Untrusted {
        /// The path.
        path: PathBuf,
        /// What it is, e.g. "is a symbolic link".
        problem: String,
    },

    /// Conflict markers are still in files the worker was asked to resolve.
    #[error(
        "{} still has unresolved conflicts in {}: edit those files to remove the conflict \
         markers (<<<<<<< ======= >>>>>>>) and keep the intended content",
        path.display(),
        list_paths(paths)
    )]
    UnresolvedConflicts {
        /// The worktree.
        path: PathBuf,
        /// The files still containing conflict markers.
        paths: Vec<String>,
    },

    /// A commit, tree or blob id that is not in the repository.
    #[error(
        "{what} {oid} is not in the repository: was it garbage-collected or created in another \
         repository? check the run journal for the right id"
    )]
    MissingObject {
        /// "commit", "tree", ...
        what: &'static str,
        /// The id.
        oid: Oid,
    },

    /// A repository-relative path that cannot be used as asked.
    #[error("path `{path}`: {problem}")]
    BadPath {
        /// The path.
        path: String,
        /// What is wrong with it.
        problem: String,
    },

    /// Another git process holds a lock in a checkout.
    #[error(
        "{} is locked by another git process ({detail}): wait for it to finish (or remove a stale \
         `index.lock` after checking no git command is running) and try again",
        path.display()
    )]
    Locked {
        /// The checkout.
        path: PathBuf,
        /// libgit2's message.
        detail: String,
    },

    /// There is no folder for breeze's worktrees (no `HOME`, or the one configured is
    /// inside the checkout or relative).
    #[error("no folder for breeze's worktrees: {problem}")]
    NoWorktreeRoot {
        /// Why, and what to set.
        problem: WorktreeRootProblem,
    },

    /// A file-system operation failed.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "create directory".
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The `git` executable is needed (a documented libgit2 gap) but was not found.
    #[error(
        "the `git` command is needed to {purpose}, but it could not be run ({detail}): install \
         git (and git-lfs for LFS repositories) and make sure it is on PATH"
    )]
    CliMissing {
        /// What it was needed for.
        purpose: &'static str,
        /// The spawn error.
        detail: String,
    },

    /// A `git` command used as a fallback failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Cli {
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// Its standard error, trimmed.
        stderr: String,
    },

    /// A remote could not be reached, fetched from or pushed to with the user's git setup.
    #[error(
        "could not {action} remote `{remote}`: {detail} (breeze uses your own git setup — ssh \
         agent, credential helpers — and never asks for a password; `git fetch {remote}` and \
         `git push {remote}` must work from your shell)"
    )]
    Remote {
        /// The remote's name.
        remote: String,
        /// `fetch from`, `push to`, `reach`.
        action: &'static str,
        /// git's message (its last lines), or that it gave no answer in time.
        detail: String,
    },

    /// A remote name that the repository does not configure.
    #[error(
        "the repository has no remote `{remote}` (it has: {}): add it with `git remote add \
         {remote} <url>`, or name one of those in [land] remote",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )]
    NoSuchRemote {
        /// The name asked for.
        remote: String,
        /// The remotes it has.
        known: Vec<String>,
    },

    /// The worker left files breeze does not read or commit: above the size limit, or
    /// nodes that are not files (a FIFO would block any reader). Nothing of the worktree
    /// was staged.
    #[error("{}", refused_files_message(too_big, *max_file_bytes, nodes))]
    FilesRefused {
        /// The worktree.
        path: PathBuf,
        /// Files above the limit, with their sizes in bytes (from `lstat`: never read).
        too_big: Vec<(String, u64)>,
        /// The limit (`gates.max_file_size`).
        max_file_bytes: u64,
        /// FIFOs, sockets and device nodes found, removed from the worktree where breeze could.
        nodes: Vec<SpecialNode>,
    },

    /// A long step ended early because breeze is stopping.
    #[error("stopped while trying to {action}: breeze is stopping; `breeze resume` does it again")]
    Cancelled {
        /// What the step was doing.
        action: &'static str,
    },

    /// A libgit2 call failed; `context` says what breeze was doing.
    #[error("{context}: {}", cause.message())]
    Git {
        /// What breeze was doing, naming the object or path.
        context: String,
        /// libgit2's error.
        cause: git2::Error,
    },
}

/// Why a repository has no folder for breeze's worktrees; each says what to set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorktreeRootProblem {
    /// `[worktree] root` names a relative folder.
    #[error(
        "the worktree folder {} is not an absolute path; name one such as \
         \"~/breeze-worktrees\" in `[worktree] root`",
        folder.display()
    )]
    NotAbsolute {
        /// The folder as configured.
        folder: PathBuf,
    },
    /// The default folder is wanted, but neither `XDG_DATA_HOME` nor `HOME` is set.
    #[error(
        "breeze keeps its worktrees outside the checkout, in $XDG_DATA_HOME/breeze/worktrees \
         or ~/.local/share/breeze/worktrees, but neither XDG_DATA_HOME nor HOME is set; \
         set HOME, or name a folder in `[worktree] root` of breeze.toml (e.g. \
         root = \"/var/tmp/breeze-worktrees\")"
    )]
    NoHome,
    /// The folder would be inside the checkout or its git directory.
    #[error(
        "the worktree folder {} is inside {place} ({}), where the project's own tools \
         (test runners, compilers, indexers) would see every lane; name a folder \
         outside it in `[worktree] root`",
        root.display(),
        inside.display()
    )]
    Inside {
        /// The folder it would be.
        root: PathBuf,
        /// `the checkout` or `its git directory`.
        place: &'static str,
        /// That checkout or git directory.
        inside: PathBuf,
    },
}

/// A worktree entry that is neither a file, a symlink nor a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialNode {
    /// Worktree-relative path.
    pub path: String,
    /// What it is: `a FIFO`, `a socket`, `a character device`, `a block device`.
    pub kind: &'static str,
    /// Whether breeze removed it from the worktree.
    pub removed: bool,
}

/// The detail of a failed `file-size` check: the files above `max` bytes, with what to do.
/// The gate and the check before staging say it alike.
pub(crate) fn file_size_detail(max: u64, too_big: &[(String, u64)]) -> String {
    let detail = too_big
        .iter()
        .map(|(path, size)| format!("`{path}` ({size} bytes)"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "files above the {max}-byte limit: {detail}. Remove them (generated files and \
         binaries do not belong in the commit; add them to .gitignore if the task writes \
         them) or raise the limit in the config"
    )
}

/// What breeze says about a worktree entry that is not a file, a symlink or a folder (the
/// `file-type` gate).
pub(crate) fn special_node_detail(node: &SpecialNode) -> String {
    let done = if node.removed {
        "breeze removed it from the worktree"
    } else {
        "breeze could not remove it: remove it"
    };
    format!(
        "`{}` is {}; only files, symlinks and folders can be committed ({done})",
        node.path, node.kind
    )
}

fn refused_files_message(too_big: &[(String, u64)], max: u64, nodes: &[SpecialNode]) -> String {
    let mut parts: Vec<String> = nodes.iter().map(special_node_detail).collect();
    if !too_big.is_empty() {
        parts.push(format!("gate `file-size` failed: {}", file_size_detail(max, too_big)));
    }
    format!("{}; nothing of this attempt was committed", parts.join("; "))
}

impl GitError {
    /// Wraps an I/O error with the action and path.
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        GitError::Io { action, path: path.to_path_buf(), source }
    }

    /// The libgit2 error code, when this is a libgit2 failure.
    pub fn git2_code(&self) -> Option<git2::ErrorCode> {
        match self {
            GitError::Git { cause, .. } => Some(cause.code()),
            _ => None,
        }
    }
}

/// Adds context to libgit2 results.
pub(crate) trait Context<T> {
    /// Wraps the error with a description of what was being done.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, GitError>;
}

impl<T> Context<T> for Result<T, git2::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, GitError> {
        self.map_err(|cause| GitError::Git { context: context(), cause })
    }
}

/// `a, b, c` or `a, b, c and 7 more`.
pub(crate) fn list_paths(paths: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut out = paths.iter().take(SHOWN).map(String::as_str).collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN {
        out.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    out
}
