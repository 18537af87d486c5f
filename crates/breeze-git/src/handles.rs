//! The pool of libgit2 handles a `Repo` keeps on its checkouts (primary checkout, lanes,
//! integration worktree), lent out one operation at a time.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use git2::Repository;

use crate::error::{Context as _, GitError};
use crate::untrusted::gitfile_target;

/// At most this many idle libgit2 handles are kept (primary checkout, lanes, integration).
const MAX_IDLE_HANDLES: usize = 16;

/// A handle lent out this many times is dropped instead of going back to the pool.
///
/// Each libgit2 handle keeps a cache of the objects it read (commits and trees under 4 KB:
/// every landing's new trees, read back by the checkouts' tree diffs) that is emptied only
/// when the handle is dropped, up to libgit2's global cap of 256 MiB. A long run would keep
/// some of every task it landed (measured: about 28 KB per task on a 300-file repository,
/// more on larger ones). Retiring a handle bounds that to the objects of its last few
/// hundred operations; the cost is one fresh open per retirement (the index read again:
/// about 80 ms at 100,000 files, so well under a millisecond per operation).
const RETIRE_AFTER_BORROWS: u32 = 256;

/// How long a step waits for the handle of its checkout that is out being read ahead
/// ([`HandlePool::take_ahead`]) before it opens one of its own: far longer than any read
/// takes, so only a read ahead that is stuck costs a step this.
const AHEAD_WAIT: Duration = Duration::from_secs(10);

/// An idle handle and how many times it was lent out.
struct Idle {
    repo: Pooled,
    borrows: u32,
}

/// A repository the pool opened: known to `index_tree.rs` from its opening until it is
/// dropped, wherever that happens (back from a handle, out of the pool, replaced).
struct Pooled(Repository);

impl Pooled {
    fn new(repo: Repository) -> Pooled {
        crate::index_tree::register(&repo);
        Pooled(repo)
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        crate::index_tree::unregister(&self.0);
    }
}

/// Idle libgit2 handles, by the path of the checkout they were opened on.
#[derive(Default)]
pub(crate) struct HandlePool {
    slots: Mutex<Slots>,
    /// Told when a handle that was out being read ahead comes back.
    back: Condvar,
}

#[derive(Default)]
struct Slots {
    idle: HashMap<PathBuf, Idle>,
    /// The checkouts whose handle is out being read ahead: a step waits for it rather than
    /// open another handle and read the same index again (about 60 ms at 100,000 files,
    /// on the core the read ahead is using).
    ahead: HashSet<PathBuf>,
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
        self.take_marked(path, still_valid, open, false)
    }

    /// [`HandlePool::take_with`] for reading ahead: until the handle comes back, a step
    /// that asks for a handle on the same checkout waits for it (up to [`AHEAD_WAIT`]).
    pub(crate) fn take_ahead(
        &self,
        path: &Path,
        still_valid: impl FnOnce(&Repository) -> bool,
        open: impl FnOnce() -> Result<Repository, GitError>,
    ) -> Result<Handle<'_>, GitError> {
        self.take_marked(path, still_valid, open, true)
    }

    fn take_marked(
        &self,
        path: &Path,
        still_valid: impl FnOnce(&Repository) -> bool,
        open: impl FnOnce() -> Result<Repository, GitError>,
        ahead: bool,
    ) -> Result<Handle<'_>, GitError> {
        let pooled = {
            let mut slots = self.wait_for_ahead(path);
            if ahead {
                slots.ahead.insert(path.to_path_buf());
            }
            slots.idle.remove(path)
        };
        let mut handle = Handle {
            repo: None,
            key: path.to_path_buf(),
            pool: self,
            keep: true,
            borrows: 1,
            ahead,
        };
        match pooled.filter(|idle| still_valid(&idle.repo.0)) {
            Some(idle) => (handle.repo, handle.borrows) = (Some(idle.repo), idle.borrows + 1),
            // A failed open drops the handle, which takes the mark away.
            None => handle.repo = Some(Pooled::new(open()?)),
        }
        Ok(handle)
    }

    /// The pool, once no handle of the checkout at `path` is out being read ahead (or
    /// [`AHEAD_WAIT`] passed).
    fn wait_for_ahead(&self, path: &Path) -> std::sync::MutexGuard<'_, Slots> {
        let deadline = Instant::now() + AHEAD_WAIT;
        let mut slots = self.lock();
        while slots.ahead.contains(path) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::debug!(checkout = %path.display(), "gave up waiting for the read ahead");
                break;
            }
            slots = match self.back.wait_timeout(slots, left) {
                Ok((slots, _)) => slots,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        slots
    }

    /// Drops the pooled handle of a checkout that is removed or replaced.
    pub(crate) fn forget(&self, path: &Path) {
        self.lock().idle.remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A libgit2 handle on one checkout, lent out of the [`HandlePool`] for one operation.
///
/// Reusing handles matters on large repositories: opening a fresh one re-reads and
/// re-hashes the whole index (about 80 ms for 100k files), while a kept handle re-reads it
/// only when it changed on disk (libgit2 checks its stamp). An operation that changes the
/// in-memory index calls [`Handle::set_keep`]`(false)` first and `(true)` once the index is
/// written (or, after a lane's commit, noted behind HEAD: `index_behind.rs`), so a failure
/// half-way never leaves a half-staged index in the pool.
pub(crate) struct Handle<'r> {
    repo: Option<Pooled>,
    key: PathBuf,
    pool: &'r HandlePool,
    keep: bool,
    /// How many times this handle was lent out, this time included.
    borrows: u32,
    /// Out being read ahead ([`HandlePool::take_ahead`]).
    ahead: bool,
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
        &self.repo.as_ref().expect("handle used after drop").0
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        let keep = self.keep && self.borrows < RETIRE_AFTER_BORROWS && !std::thread::panicking();
        let mut repo = self.repo.take();
        let mut slots = self.pool.lock();
        if let Some(kept) = repo.take_if(|_| keep) {
            if slots.idle.len() < MAX_IDLE_HANDLES || slots.idle.contains_key(&self.key) {
                slots.idle.insert(self.key.clone(), Idle { repo: kept, borrows: self.borrows });
            } else {
                repo = Some(kept);
            }
        }
        if self.ahead {
            slots.ahead.remove(&self.key);
            drop(slots);
            self.pool.back.notify_all();
        } else {
            drop(slots);
        }
        // A handle not kept is closed outside the pool's lock (its index freed).
        drop(repo);
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
            let Some(gitdir) = gitfile_target(path) else { return false };
            gitdir
        }
        _ => return false,
    };
    match (std::fs::canonicalize(target), std::fs::canonicalize(repo.path())) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A step that asks for a checkout whose handle is out being read ahead waits for it
    /// and takes it, rather than open another (and read the same index again).
    #[test]
    fn a_step_takes_the_handle_read_ahead_instead_of_opening_another() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init(dir.path()).unwrap();
        let pool = HandlePool::default();
        let opens = std::sync::atomic::AtomicUsize::new(0);
        let open = || {
            opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Repository::open(dir.path()).unwrap())
        };
        let ahead = pool.take_ahead(dir.path(), |_| true, open).unwrap();
        std::thread::scope(|scope| {
            let step = scope.spawn(|| drop(pool.take_with(dir.path(), |_| true, open).unwrap()));
            // Gives the step the time to ask first (were it not to wait, it would open).
            std::thread::sleep(Duration::from_millis(100));
            drop(ahead);
            step.join().unwrap();
        });
        assert_eq!(opens.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A read ahead whose open failed leaves no mark behind.
        let failed = pool.take_ahead(
            Path::new("/nonexistent"),
            |_| true,
            || {
                Err(GitError::io(
                    "open",
                    Path::new("/nonexistent"),
                    std::io::ErrorKind::NotFound.into(),
                ))
            },
        );
        assert!(failed.is_err());
        assert!(pool.lock().ahead.is_empty());
    }

    /// A handle goes back to the pool until it was lent out `RETIRE_AFTER_BORROWS` times;
    /// then it is dropped with its object cache and the next borrow opens a fresh one.
    #[test]
    fn a_handle_is_retired_after_its_borrows() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init(dir.path()).unwrap();
        let pool = HandlePool::default();
        let opens = Cell::new(0);
        let borrow = || {
            let handle = pool
                .take_with(
                    dir.path(),
                    |_| true,
                    || {
                        opens.set(opens.get() + 1);
                        Ok(Repository::open(dir.path()).unwrap())
                    },
                )
                .unwrap();
            drop(handle);
        };
        for _ in 0..RETIRE_AFTER_BORROWS {
            borrow();
        }
        assert_eq!(opens.get(), 1, "one handle serves its first borrows");
        borrow();
        assert_eq!(opens.get(), 2, "the retired handle was replaced by a fresh one");
        for _ in 1..RETIRE_AFTER_BORROWS {
            borrow();
        }
        assert_eq!(opens.get(), 2);
    }
}
