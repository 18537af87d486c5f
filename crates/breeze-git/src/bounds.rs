//! How far breeze goes in a worktree a role wrote: the largest file it reads, and the stop
//! signal long git steps watch — once breeze is stopping (Ctrl-C, SIGTERM), `git` children
//! are ended and loops over a worktree's files end early, so that a stop is honoured in
//! about a second whatever step is running.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::GitError;

/// Default size limit for one file: 10 MiB. The `file-size` gate's limit, and the largest
/// worktree file breeze stages or reads, unless the repository is given another.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Raised once, never lowered: the repository handle's steps stop early from then on.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Asks every step that watches this flag to end.
    pub(crate) fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub(crate) fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// [`GitError::Cancelled`] once a stop was asked for.
    pub(crate) fn check(&self, action: &'static str) -> Result<(), GitError> {
        if self.is_raised() { Err(GitError::Cancelled { action }) } else { Ok(()) }
    }
}

/// What one repository's operations on worktrees keep to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bounds {
    /// The largest file of a worktree breeze stages or reads (the `file-size` gate's limit).
    pub(crate) max_file_bytes: u64,
    /// Raised when breeze is stopping: long steps end early.
    pub(crate) stop: StopFlag,
}
