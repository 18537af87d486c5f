//! The file-system watches of the lane worktrees, kept for the whole run: a worker's
//! activity for the stall clock, and what changed in a lane since it last agreed with git.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use breeze_supervise::{KnownFolders, TreeChanges, TreeWatch};

/// The file-system watches of the lane worktrees, one [`TreeWatch`] per worktree for the
/// whole run (started when the lane is created, so a worker's start costs no walk of its
/// lane): the worker's activity for the stall clock, and the paths changed since the lane
/// last agreed with git, which committing and moving the lane look at instead of the whole
/// worktree.
#[derive(Default)]
pub(crate) struct LaneWatches(Mutex<HashMap<PathBuf, Arc<TreeWatch>>>);

impl LaneWatches {
    fn map(&self) -> MutexGuard<'_, HashMap<PathBuf, Arc<TreeWatch>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The watch of the worktree at `path`, if it has one.
    pub fn get(&self, path: &Path) -> Option<Arc<TreeWatch>> {
        self.map().get(path).cloned()
    }

    /// The watch of the worktree at `path`, started if it has none (one listing of its
    /// folders: blocking). `agrees_with_git`: the worktree is a fresh checkout, so only what
    /// changes from now on can differ; otherwise the first look is a full pass.
    pub fn watch(&self, path: &Path, agrees_with_git: bool) -> Arc<TreeWatch> {
        if let Some(watch) = self.get(path) {
            return watch;
        }
        let watch = Arc::new(TreeWatch::start(path));
        if !agrees_with_git {
            watch.assume_unknown();
        }
        self.map().entry(path.to_path_buf()).or_insert(watch).clone()
    }

    /// The watch of the worktree at `path`, started from the folders an earlier run's watch
    /// of it knew if it has none (no listing: a lane parked since, see
    /// `lane_record`): its first changes are the known folders that are gone.
    pub fn watch_known(&self, path: &Path, known: &KnownFolders) -> Arc<TreeWatch> {
        if let Some(watch) = self.get(path) {
            return watch;
        }
        let watch = Arc::new(TreeWatch::start_known(path, known));
        self.map().entry(path.to_path_buf()).or_insert(watch).clone()
    }

    /// Stops watching the worktree at `path` (given up, or removed).
    pub fn forget(&self, path: &Path) {
        self.map().remove(path);
    }
}

/// The watch's changes as breeze-git takes them.
pub(crate) fn workdir_changes(changes: &TreeChanges) -> breeze_git::WorkdirChanges<'_> {
    match changes.paths() {
        Some(paths) => breeze_git::WorkdirChanges::Only(paths),
        None => breeze_git::WorkdirChanges::Unknown,
    }
}
