//! What a run reads ahead, on a thread of its own while its first task's lane moves on
//! the other core: the first task otherwise waits for each in turn (at 100,000 files,
//! about 40 ms to walk main's trees for the first cache-tree, 60 ms for the review
//! checkout's index, 60 ms for the user's index at the first landing).
//!
//! Each is what a later step would do anyway, done earlier: a failure is only logged, and
//! what changes meanwhile is read again by that step (the review checkout's and the user's
//! index are taken only while their files are as read).

use crate::checkout_update::Scratch;
use crate::repo::Repo;

impl Repo {
    /// Reads ahead what the run's first task needs: the trees of main's tip for the
    /// cache-trees of the index files breeze writes, the kept review checkout `review`'s
    /// index, and the index of each checkout of main for the first landing.
    pub fn preload_for_run(&self, review: &str) {
        self.preload_main_trees();
        self.preload_review_checkout(review);
        self.preload_landing_indexes();
    }

    /// Walks the trees of main's tip into the memo the cache-tree of every index breeze
    /// writes is made from (`index_file.rs`): the lanes', the review checkout's and the
    /// user's indexes are that tree but for a task's paths.
    fn preload_main_trees(&self) {
        let warmed = self.git().and_then(|repo| {
            let tip = self.main_tip()?;
            crate::index_file::warm_trees(&repo, tip)
        });
        if let Err(err) = warmed {
            tracing::debug!("could not walk main's trees ahead: {err}");
        }
    }

    /// Reads the index of each checkout of main (the user's) ahead of the run's first
    /// landing, and keeps it as a landing keeps the index it wrote: the first landing takes
    /// it when the file is still as read. Under the landing's own lock: both use the
    /// checkout's scratch folder.
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
