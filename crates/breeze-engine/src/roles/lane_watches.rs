//! The file-system watches of the lane worktrees, kept for the whole run: a worker's
//! activity for the stall clock, and what changed in a lane since it last agreed with git.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use breeze_supervise::{KnownFolders, TreeChanges, TreeWatch};

/// The file-system watches of the lane worktrees, one [`TreeWatch`] per worktree for the
/// whole run (started when the lane is created, so a worker's start costs no walk of its
/// lane): the worker's activity for the stall clock, and the paths changed since the lane
/// last agreed with git, which committing and moving the lane look at instead of the whole
/// worktree.
///
/// A parked checkout's watch may be started ahead of the run (`run/prepare.rs`): setting
/// one costs an `inotify_add_watch` a folder (about 30 ms at 100,000 files). It becomes
/// the run's at the run's first [`LaneWatches::watch_known`] of the checkout, and what
/// changed in between is among its changes. A watch is in its slot once started: a look
/// that comes while it starts waits for it, so no checkout is watched twice.
#[derive(Default)]
pub(crate) struct LaneWatches(Mutex<HashMap<PathBuf, Watched>>);

struct Watched {
    slot: Slot,
    /// Taken by the run; `false` while only started ahead.
    taken: bool,
}

/// A watch, held locked until it is started.
type Slot = Arc<Mutex<Option<Arc<TreeWatch>>>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl LaneWatches {
    fn map(&self) -> MutexGuard<'_, HashMap<PathBuf, Watched>> {
        lock(&self.0)
    }

    /// The run's watch of the worktree at `path`, if it has one (waiting for it while it
    /// starts).
    pub fn get(&self, path: &Path) -> Option<Arc<TreeWatch>> {
        let slot = self.map().get(path).filter(|watched| watched.taken)?.slot.clone();
        lock(&slot).clone()
    }

    /// The watch of the worktree at `path`, started if it has none (one listing of its
    /// folders: blocking). `agrees_with_git`: the worktree is a fresh checkout, so only what
    /// changes from now on can differ; otherwise the first look is a full pass. A watch
    /// started ahead from the parked folders is not the one asked for: it is dropped.
    pub fn watch(&self, path: &Path, agrees_with_git: bool) -> Arc<TreeWatch> {
        self.take_or_start(path, false, || {
            let watch = TreeWatch::start(path);
            if !agrees_with_git {
                watch.assume_unknown();
            }
            watch
        })
    }

    /// The watch of the worktree at `path`, started from the folders an earlier run's watch
    /// of it knew if it has none (no listing: a lane parked since, see `lane_record`): its
    /// first changes are the known folders that are gone. Takes the watch started ahead.
    pub fn watch_known(&self, path: &Path, known: &KnownFolders) -> Arc<TreeWatch> {
        self.take_or_start(path, true, || TreeWatch::start_known(path, known))
    }

    /// Starts watching the parked checkout at `path` from the folders its record knows,
    /// ahead of the run's first look at it, unless it is watched already. Blocking.
    pub fn watch_ahead(&self, path: &Path, known: &KnownFolders) {
        let slot = Slot::default();
        let mut started = lock(&slot);
        match self.map().entry(path.to_path_buf()) {
            Entry::Occupied(_) => return,
            Entry::Vacant(vacant) => vacant.insert(Watched { slot: slot.clone(), taken: false }),
        };
        *started = Some(Arc::new(TreeWatch::start_known(path, known)));
    }

    /// The run's watch of `path`: the one it has (or that is starting), the one started
    /// ahead when `take_ahead`, else one `start` makes.
    fn take_or_start(
        &self,
        path: &Path,
        take_ahead: bool,
        start: impl FnOnce() -> TreeWatch,
    ) -> Arc<TreeWatch> {
        let slot = Slot::default();
        let mut started = lock(&slot);
        let existing = {
            let mut map = self.map();
            match map.get_mut(path) {
                Some(watched) if watched.taken || take_ahead => {
                    watched.taken = true;
                    Some(watched.slot.clone())
                }
                _ => {
                    map.insert(path.to_path_buf(), Watched { slot: slot.clone(), taken: true });
                    None
                }
            }
        };
        if let Some(existing) = existing {
            drop(started);
            // Started by now, or being started by the step that holds the slot; its start
            // cut short (a panic), this look starts it.
            let mut guard = lock(&existing);
            if let Some(watch) = guard.clone() {
                return watch;
            }
            let watch = Arc::new(start());
            *guard = Some(watch.clone());
            return watch;
        }
        let watch = Arc::new(start());
        *started = Some(watch.clone());
        watch
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The folders a watch of `root` knows, as an earlier run records them when parking.
    fn known_folders(root: &Path) -> KnownFolders {
        TreeWatch::start(root).folders().expect("a complete watch")
    }

    /// A watch started ahead of the run is the one its first look takes: what changed in
    /// between is among its changes. A look that wants a full pass gets a new watch.
    #[test]
    fn the_first_look_takes_the_watch_started_ahead_with_what_changed_since() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/a.rs"), "a\n").unwrap();
        let known = known_folders(root);
        let watches = LaneWatches::default();
        watches.watch_ahead(root, &known);
        assert!(watches.get(root).is_none(), "not the run's until its first look");
        std::fs::write(root.join("src/deep/a.rs"), "changed before the first look\n").unwrap();
        let watch = watches.watch_known(root, &known);
        let changes = watch.changes();
        assert_eq!(changes.paths(), Some(&[PathBuf::from("src/deep/a.rs")][..]));
        assert!(Arc::ptr_eq(&watch, &watches.get(root).unwrap()));

        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("docs")).unwrap();
        let known = known_folders(other.path());
        watches.watch_ahead(other.path(), &known);
        std::fs::write(other.path().join("docs/b.md"), "b\n").unwrap();
        let full = watches.watch(other.path(), true);
        assert_eq!(full.changes().paths(), Some(&[][..]), "a new watch, from now on");
    }
}
