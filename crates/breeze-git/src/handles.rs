//! The pool of libgit2 handles a `Repo` keeps on its checkouts (primary checkout, lanes,
//! integration worktree), lent out one operation at a time.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::Repository;

use crate::error::{Context as _, GitError};
use crate::untrusted::read_small;

/// At most this many idle libgit2 handles are kept (primary checkout, lanes, integration).
const MAX_IDLE_HANDLES: usize = 16;

/// Idle libgit2 handles, by the path of the checkout they were opened on.
#[derive(Default)]
pub(crate) struct HandlePool {
    idle: Mutex<HashMap<PathBuf, Repository>>,
}

impl HandlePool {
    /// A handle on the checkout (primary or linked worktree) at `path`, opened through its
    /// `.git`: a pooled one if idle and still on the same git directory, else a fresh one.
    /// For the primary checkout and worktrees breeze did not create; breeze's lanes go
    /// through [`HandlePool::take_with`].
    pub(crate) fn take(&self, path: &Path) -> Result<Handle<'_>, GitError> {
        self.take_with(
            path,
            |repo| still_points_at(repo, path),
            || {
                Repository::open(path)
                    .ctx(|| format!("could not open the repository at {}", path.display()))
            },
        )
    }

    /// A handle on the checkout at `path`: a pooled one if idle and `still_valid`, else
    /// `open()`.
    pub(crate) fn take_with(
        &self,
        path: &Path,
        still_valid: impl FnOnce(&Repository) -> bool,
        open: impl FnOnce() -> Result<Repository, GitError>,
    ) -> Result<Handle<'_>, GitError> {
        let pooled = self.lock().remove(path).filter(|repo| still_valid(repo));
        let repo = match pooled {
            Some(repo) => repo,
            None => open()?,
        };
        Ok(Handle { repo: Some(repo), key: path.to_path_buf(), pool: self, keep: true })
    }

    /// Drops the pooled handle of a checkout that is removed or replaced.
    pub(crate) fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Repository>> {
        self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A libgit2 handle on one checkout, lent out of the [`HandlePool`] for one operation.
///
/// Reusing handles matters on large repositories: opening a fresh one re-reads and
/// re-hashes the whole index (about 80 ms for 100k files), while a kept handle re-reads it
/// only when it changed on disk (libgit2 checks its stamp). An operation that changes the
/// in-memory index calls [`Handle::set_keep`]`(false)` first and `(true)` once the index is
/// written, so a failure half-way never leaves a half-staged index in the pool.
pub(crate) struct Handle<'r> {
    repo: Option<Repository>,
    key: PathBuf,
    pool: &'r HandlePool,
    keep: bool,
}

impl Handle<'_> {
    /// Whether the handle goes back to the pool when dropped.
    pub(crate) fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
    }
}

impl Deref for Handle<'_> {
    type Target = Repository;
    fn deref(&self) -> &Repository {
        // Invariant: `repo` is `Some` from construction until `drop`.
        self.repo.as_ref().expect("handle used after drop")
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        if !self.keep || std::thread::panicking() {
            return;
        }
        if let Some(repo) = self.repo.take() {
            let mut pool = self.pool.lock();
            if pool.len() < MAX_IDLE_HANDLES || pool.contains_key(&self.key) {
                pool.insert(std::mem::take(&mut self.key), repo);
            }
        }
    }
}

/// Whether `path`'s `.git` (directory, or gitfile of a linked worktree) still leads to the
/// git directory this handle was opened on; a worktree removed and re-created under the
/// same path may have a new admin directory.
fn still_points_at(repo: &Repository, path: &Path) -> bool {
    let dotgit = path.join(".git");
    let target = match std::fs::symlink_metadata(&dotgit) {
        Ok(meta) if meta.is_dir() => dotgit,
        Ok(meta) if meta.is_file() => {
            let Ok(Some(text)) = read_small(&dotgit) else { return false };
            match text.trim().strip_prefix("gitdir:") {
                Some(gitdir) => path.join(gitdir.trim()),
                None => return false,
            }
        }
        _ => return false,
    };
    match (std::fs::canonicalize(target), std::fs::canonicalize(repo.path())) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
