//! What a run reads ahead, on threads of its own from the moment its repository is opened,
//! while the run's own start (the plan, the containment probe, the run folder) keeps one
//! core busy: at 100,000 files, each index libgit2 reads costs about 60 ms (it parses every
//! entry and hashes the whole file, whatever its trailer says), and the first task needs
//! its lane's, the review checkout's and the user's; read when each step comes, the first
//! task waited for each in turn.
//!
//! Each read is what a later step would do anyway, done earlier, into the handle that step
//! takes from the pool (a step that comes while the read is under way waits for it rather
//! than read the same file again): a failure is only logged, and a file that changes
//! meanwhile is read again by that step (a handle's index is taken only while its file is as read:
//! `index_file::fresh_index`, `Scratch::take_index`). Reading is all the first part does,
//! so it may start before the run holds the repository's lock; the user's indexes are read
//! into their checkouts' landing scratch folders, so only under the lock
//! ([`Repo::preload_landing_indexes`]).

use crate::checkout_update::Scratch;
use crate::index_file;
use crate::repo::Repo;

impl Repo {
    /// Walks the trees of main's tip for the cache-trees of the index files breeze writes
    /// (`tree_memo.rs`; nothing to do when opening walked them for `.gitattributes`, as it
    /// does where a filter command is configured).
    pub fn preload_main_trees(&self) {
        let warmed = self.objects().and_then(|repo| {
            let tip = self.main_tip()?;
            crate::tree_memo::warm(&repo, tip)
        });
        if let Err(err) = warmed {
            tracing::debug!("could not walk main's trees ahead: {err}");
        }
    }

    /// Reads ahead the index of breeze's checkout `name` (a kept lane, the review
    /// checkout) into the handle its first step takes; nothing when there is no such
    /// checkout. A failure is only logged.
    pub fn preload_checkout(&self, name: &str) {
        let Ok(root) = self.worktree_root() else { return };
        let path = root.join(name);
        let Some(admin) = self.lane_admin_of(&path).filter(|admin| admin.is_dir()) else {
            return;
        };
        // A lane's worker reads a private copy of its index, written from the same one.
        let copies: Vec<_> = name
            .starts_with("lane-")
            .then(|| self.private_git_dir_of(name).join("index"))
            .into_iter()
            .collect();
        let read = self
            .handle_ahead(&path, &admin)
            .and_then(|handle| index_file::read_ahead(&handle, &path, &copies));
        if let Err(err) = read {
            tracing::debug!(checkout = %name, "could not read the index ahead: {err}");
        }
    }

    /// Reads the index of each checkout of main (the user's) ahead of the run's first
    /// landing, and keeps it as a landing keeps the index it wrote: the first landing takes
    /// it when the file is still as read. Under the landing's own lock: both use the
    /// checkout's scratch folder; and only while the run holds the repository's lock.
    pub fn preload_landing_indexes(&self) {
        let _landing = self.landing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let read = self.git().and_then(|primary| {
            let (in_primary, others) = self.checkouts_of_main(&primary)?;
            let primary = in_primary.then(|| (self.workdir.clone(), primary));
            for (path, mut handle) in primary.into_iter().chain(others) {
                if self.landed_indexes.holds(handle.path()) {
                    continue;
                }
                // Its index becomes the scratch copy: the handle is not pooled again.
                handle.set_keep(false);
                let scratch = Scratch::fresh(handle.path())?;
                if let Some(kept) = scratch.read_ahead(&handle, &path)? {
                    self.landed_indexes.keep(handle.path(), kept);
                }
            }
            Ok(())
        });
        if let Err(err) = read {
            tracing::debug!("could not read the indexes of main's checkouts ahead: {err}");
        }
    }
}
