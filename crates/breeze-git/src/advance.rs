//! Moving main onto a landing: the compare-and-swap of the main branch, with a safe
//! fast-forward of every checkout that has main checked out (the user's, usually) that
//! writes only the paths the landing touches — each atomically, announced to an observer
//! first (`checkout_update.rs`) — defers when one of them holds the user's work, and puts
//! the checkouts back when main cannot move.

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Oid, Repository, Tree};

use crate::checkout_update::{
    CheckoutObserver, CheckoutUpdate, INDEX_WAIT, IndexCopy, Scratch, TreeMove, Unobserved,
    replace_paths, write_index_entries,
};
use crate::error::{Context as _, GitError};
use crate::file_stamp::{Stamp, stamp};
use crate::handles::Handle;
use crate::index_file::fresh_index;
use crate::libgit2_checkout::{Versions, tree_diff_versions};
use crate::merge::conflict_paths;
use crate::objects::commit_tree;
use crate::paths::RepoPath;
use crate::repo::Repo;
use crate::state::ensure_clean_state;

/// Result of [`Repo::advance_main`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvanceOutcome {
    /// Main now points at the new commit; these checkouts of main were fast-forwarded.
    Advanced {
        /// CheckoutTool (the user's, usually) whose files and index were updated.
        updated_checkouts: Vec<PathBuf>,
    },
    /// Main has the branch checked out with uncommitted changes on paths the landing
    /// touches: nothing moved. The engine defers this landing and asks the user to commit
    /// or stash those files.
    Deferred {
        /// The checkout with the blocking changes.
        checkout: PathBuf,
        /// The blocking paths.
        paths: Vec<String>,
    },
    /// Main no longer points at `expected` (someone else moved it): nothing moved. The
    /// engine re-merges onto `actual` and tries again.
    Raced {
        /// Where main points now.
        actual: Oid,
    },
}

/// How far the update of one checkout got.
enum Written {
    /// Every touched path and the index.
    All,
    /// Nothing: these paths changed while the new versions were prepared.
    Nothing(Vec<String>),
    /// Some paths, not these (someone else's folder or link is in the way).
    Part(Vec<String>),
}

/// Waits (up to [`INDEX_WAIT`]) until no other git process holds the checkout's
/// `index.lock`; `Err(Locked)` when it is still held.
fn wait_for_index(repo: &Repository, at: &Path) -> Result<(), GitError> {
    let lock = repo.path().join("index.lock");
    let deadline = std::time::Instant::now() + INDEX_WAIT;
    while lock.exists() {
        if std::time::Instant::now() >= deadline {
            return Err(GitError::Locked {
                path: at.to_path_buf(),
                detail: format!("{} exists", lock.display()),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// One landing as the checkouts of main see it: their files go from `old_tree` (main's
/// tip, commit `from`) to `new_tree` (the landing, commit `to`) on the `touched` paths.
struct Change<'r, 'c> {
    /// Every checkout of main with its libgit2 handle.
    checkouts: &'c [(&'c Path, &'c Repository)],
    from: Oid,
    to: Oid,
    old_tree: Tree<'r>,
    new_tree: Tree<'r>,
    touched: Vec<RepoPath>,
    /// The versions of the touched paths on each side.
    old_versions: Versions,
    new_versions: Versions,
}

impl Change<'_, '_> {
    /// The update of checkout `at`, as the journal records it.
    fn update_of(&self, at: &Path) -> CheckoutUpdate {
        CheckoutUpdate {
            checkout: at.to_path_buf(),
            from: self.from,
            to: self.to,
            paths: self.touched.len(),
        }
    }
}

impl Repo {
    /// Compare-and-swap of the main branch from `expected` to `new` (a descendant of it).
    ///
    /// Where main is checked out (the user's checkout, usually), the paths the landing
    /// touches are fast-forwarded first, safely: a touched path with uncommitted changes
    /// (or an untracked or ignored file in the way) gives [`AdvanceOutcome::Deferred`] and
    /// nothing moves; untouched paths, staged or not, and untracked files stay exactly as
    /// the user left them. Each path is replaced atomically (see [`CheckoutUpdate`]). If
    /// main moved meanwhile, [`AdvanceOutcome::Raced`] (and the checkout is put back). A
    /// checkout mid-merge/rebase is refused with an error.
    pub fn advance_main(&self, expected: Oid, new: Oid) -> Result<AdvanceOutcome, GitError> {
        self.advance_main_observed(expected, new, &mut Unobserved)
    }

    /// [`Repo::advance_main`], telling `observer` about each checkout update: before its
    /// first path is written (the engine journals it there, so that `breeze resume` can
    /// finish or undo an update a kill cut short: [`Repo::finish_checkout_update`]), after
    /// each path, and once it is complete.
    pub fn advance_main_observed(
        &self,
        expected: Oid,
        new: Oid,
        observer: &mut dyn CheckoutObserver,
    ) -> Result<AdvanceOutcome, GitError> {
        let _landing = self.landing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut primary = self.git()?;
        let refname = self.main_ref();
        let actual = match primary.refname_to_id(&refname) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => {
                return Err(self.main_not_found(&primary));
            }
            Err(e) => return Err(e).ctx(|| format!("could not read {refname}")),
        };
        if actual != expected {
            return Ok(AdvanceOutcome::Raced { actual });
        }
        if new == expected {
            return Ok(AdvanceOutcome::Advanced { updated_checkouts: Vec::new() });
        }
        primary
            .find_commit(new)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: new })?;
        if !primary.graph_descendant_of(new, expected).unwrap_or(false) {
            return Err(GitError::NotFastForward {
                branch: self.main_branch.clone(),
                from: expected,
                to: new,
            });
        }

        // Where main is checked out; the primary checkout reuses the primary handle.
        let (in_primary, mut others) = self.checkouts_of_main(&primary)?;
        primary.set_keep(false);
        for (_, handle) in &mut others {
            handle.set_keep(false);
        }
        let mut checkouts: Vec<(&Path, &Repository)> = Vec::new();
        if in_primary {
            checkouts.push((&self.workdir, &*primary));
        }
        checkouts.extend(others.iter().map(|(path, handle)| (path.as_path(), &**handle)));
        // The handles of the checkouts are not pooled again: their index is the landing's
        // scratch copy (`Scratch::take_index`).
        let outcome = self.advance_in(&primary, &checkouts, &refname, (expected, new), observer)?;
        drop(checkouts);
        if !in_primary {
            primary.set_keep(true);
        }
        Ok(outcome)
    }

    /// Where main is checked out, as a landing updates it: whether in the primary checkout
    /// (`primary` is its handle), and the other checkouts with a handle each. A registered
    /// worktree whose folder is gone has no files to update and is left out.
    pub(crate) fn checkouts_of_main(
        &self,
        primary: &Repository,
    ) -> Result<(bool, Vec<(PathBuf, Handle<'_>)>), GitError> {
        let mut in_primary = false;
        let mut others = Vec::new();
        for path in self.checkouts_of_branch(primary, &self.main_ref()) {
            if !path.join(".git").exists() {
                continue;
            }
            if path == self.workdir {
                in_primary = true;
            } else {
                let handle = self.handle(&path)?;
                others.push((path, handle));
            }
        }
        Ok((in_primary, others))
    }

    /// The three phases of [`Repo::advance_main`] once the checkouts of main are known.
    fn advance_in(
        &self,
        repo: &Repository,
        checkouts: &[(&Path, &Repository)],
        refname: &str,
        (expected, new): (Oid, Oid),
        observer: &mut dyn CheckoutObserver,
    ) -> Result<AdvanceOutcome, GitError> {
        let old_tree = commit_tree(repo, expected)?;
        let new_tree = commit_tree(repo, new)?;
        let (touched, old_versions, new_versions) = tree_diff_versions(repo, &old_tree, &new_tree)?;
        let change = Change {
            checkouts,
            from: expected,
            to: new,
            old_tree,
            new_tree,
            touched,
            old_versions,
            new_versions,
        };
        // Each checkout's index is read once, from a copy in its landing's scratch folder.
        let mut prepared = Vec::new();
        for &(path, crepo) in checkouts {
            let scratch = Scratch::fresh(crepo.path())?;
            let kept = self.landed_indexes.take(crepo.path());
            let taken = scratch.take_index(crepo, path, kept)?;
            prepared.push((scratch, Some(taken)));
        }
        let outcome = self.check_and_move(repo, &change, &mut prepared, refname, observer);
        for (scratch, _) in &prepared {
            if let Err(e) = scratch.remove() {
                tracing::warn!(error = %e, "could not remove a landing's scratch folder");
            }
        }
        outcome
    }

    /// Phases 1 to 3 of [`Repo::advance_main`] with each checkout's scratch folder and
    /// index copy.
    fn check_and_move(
        &self,
        repo: &Repository,
        change: &Change<'_, '_>,
        prepared: &mut [(Scratch, Option<IndexCopy>)],
        refname: &str,
        observer: &mut dyn CheckoutObserver,
    ) -> Result<AdvanceOutcome, GitError> {
        if let Err(deferred) = self.check_checkouts(change)? {
            return Ok(deferred);
        }
        let updated = match self.fast_forward_checkouts(change, prepared, observer)? {
            Ok(updated) => updated,
            Err(deferred) => return Ok(deferred),
        };
        self.swap_main(repo, change, &updated, refname)
    }

    /// Phase 1: every checkout of main must be able to take the change; `Ok(Err(_))` is
    /// the deferral naming the first that cannot. Paths that already hold exactly the new
    /// content do not block (they are rewritten with it).
    fn check_checkouts(
        &self,
        change: &Change<'_, '_>,
    ) -> Result<Result<(), AdvanceOutcome>, GitError> {
        for &(path, crepo) in change.checkouts {
            ensure_clean_state(crepo, path)?;
            // Unresolved conflicts (say, from `git stash pop`) block any checkout: the user
            // has to resolve them first, wherever they are.
            let index = fresh_index(crepo, path)?;
            if index.has_conflicts() {
                return Ok(Err(AdvanceOutcome::Deferred {
                    checkout: path.to_path_buf(),
                    paths: conflict_paths(&index)?,
                }));
            }
            drop(index);
            let blocking = self.checkout_tool()?.blocking_paths(
                crepo,
                path,
                &change.touched,
                &change.old_tree,
                &change.new_tree,
            )?;
            if !blocking.is_empty() {
                return Ok(Err(AdvanceOutcome::Deferred {
                    checkout: path.to_path_buf(),
                    paths: blocking,
                }));
            }
        }
        Ok(Ok(()))
    }

    /// Phase 2: fast-forwards the touched paths of every checkout of main while HEAD still
    /// names the old tip; returns the indexes of the checkouts updated (all of them). A
    /// checkout whose index another git process holds is waited for first. If one cannot
    /// take the change (`Ok(Err(deferral))`) or fails, the ones already written are put
    /// back and nothing moves.
    fn fast_forward_checkouts(
        &self,
        change: &Change<'_, '_>,
        prepared: &mut [(Scratch, Option<IndexCopy>)],
        observer: &mut dyn CheckoutObserver,
    ) -> Result<Result<Vec<usize>, AdvanceOutcome>, GitError> {
        let mut updated: Vec<usize> = Vec::new();
        for (i, (&(path, crepo), (scratch, taken))) in
            change.checkouts.iter().zip(prepared.iter_mut()).enumerate()
        {
            let result = wait_for_index(crepo, path).and_then(|()| {
                self.update_checkout(change, path, crepo, (scratch, taken.take()), observer)
            });
            match result {
                Ok(Written::All) => updated.push(i),
                Ok(Written::Nothing(paths)) => {
                    self.put_back(change, &updated);
                    let checkout = path.to_path_buf();
                    return Ok(Err(AdvanceOutcome::Deferred { checkout, paths }));
                }
                Ok(Written::Part(paths)) => {
                    updated.push(i);
                    self.put_back(change, &updated);
                    let checkout = path.to_path_buf();
                    return Ok(Err(AdvanceOutcome::Deferred { checkout, paths }));
                }
                Err(e) => {
                    // Some of its paths may be written: it goes back with the others.
                    updated.push(i);
                    self.put_back(change, &updated);
                    return Err(e);
                }
            }
        }
        Ok(Ok(updated))
    }

    /// Writes the new versions of the touched paths of one checkout of main, each
    /// atomically, then their index entries. The versions are written into the scratch
    /// folder first; a touched file the user changed meanwhile stops the update before
    /// anything is written; the observer hears of the update before its first path.
    fn update_checkout(
        &self,
        change: &Change<'_, '_>,
        at: &Path,
        crepo: &Repository,
        (scratch, taken): (&Scratch, Option<IndexCopy>),
        observer: &mut dyn CheckoutObserver,
    ) -> Result<Written, GitError> {
        let seen: Vec<Option<Stamp>> =
            change.touched.iter().map(|path| stamp(&at.join(path.as_path()))).collect();
        let versions = scratch.dir("new");
        let new = (&change.new_tree, &change.new_versions);
        self.checkout_tool()?.stage_versions(crepo, at, new, &change.touched, &versions)?;
        let changed: Vec<String> = change
            .touched
            .iter()
            .zip(&seen)
            .filter(|(path, seen)| stamp(&at.join(path.as_path())) != **seen)
            .map(|(path, _)| path.display())
            .collect();
        if !changed.is_empty() {
            return Ok(Written::Nothing(changed));
        }
        let update = change.update_of(at);
        observer.updating(&update).map_err(|e| GitError::io("record the update of", at, e))?;
        let mut placed = |done: usize, total: usize| observer.placed(done, total);
        let in_the_way =
            replace_paths(at, &versions, &change.new_versions, &change.touched, &mut placed)?;
        if !in_the_way.is_empty() {
            return Ok(Written::Part(in_the_way.iter().map(RepoPath::display).collect()));
        }
        let moves = TreeMove { from: change.old_tree.id(), to: change.new_tree.id() };
        let written = write_index_entries(
            crepo,
            at,
            &change.new_versions,
            (&change.touched, &[]),
            Some(moves),
            scratch,
            taken,
        )?;
        observer.updated(&update);
        if let Some(written) = written {
            // A landing main does not follow puts the paths back: the index written then
            // has another stamp, and the next landing reads the file.
            self.landed_indexes.keep(crepo.path(), written);
        }
        Ok(Written::All)
    }

    /// Phase 3: the compare-and-swap of `refname` from `expected` to `new`; the `updated`
    /// checkouts are put back when it fails.
    fn swap_main(
        &self,
        repo: &Repository,
        change: &Change<'_, '_>,
        updated: &[usize],
        refname: &str,
    ) -> Result<AdvanceOutcome, GitError> {
        let (expected, new) = (change.from, change.to);
        let message = format!("breeze: land {new}");
        match repo.reference_matching(refname, new, true, expected, &message) {
            Ok(_) => {
                tracing::info!(branch = %self.main_branch, from = %expected, to = %new, "main advanced");
                Ok(AdvanceOutcome::Advanced {
                    updated_checkouts: updated
                        .iter()
                        .map(|&i| change.checkouts[i].0.to_path_buf())
                        .collect(),
                })
            }
            Err(e) if e.code() == ErrorCode::Modified || e.code() == ErrorCode::Locked => {
                self.put_back(change, updated);
                let actual =
                    repo.refname_to_id(refname).ctx(|| format!("could not read {refname}"))?;
                if actual == expected {
                    // Locked by a concurrent writer that has not moved it (yet).
                    return Err(GitError::Locked {
                        path: self.common_dir.clone(),
                        detail: e.message().to_string(),
                    });
                }
                Ok(AdvanceOutcome::Raced { actual })
            }
            Err(e) => {
                self.put_back(change, updated);
                Err(e).ctx(|| format!("could not move {refname} to {new}"))
            }
        }
    }

    /// Undoes phase 2 of [`Repo::advance_main`] after a failure: the `updated` checkouts get
    /// the old versions of the touched paths back, each atomically, index included.
    fn put_back(&self, change: &Change<'_, '_>, updated: &[usize]) {
        for &i in updated {
            let (path, crepo) = change.checkouts[i];
            if let Err(e) = self.restore_checkout(change, path, crepo) {
                tracing::error!(checkout = %path.display(), error = %e, "could not restore the checkout after a failed landing");
            }
        }
    }

    /// Puts the touched paths of the checkout at `at` back to their old versions.
    fn restore_checkout(
        &self,
        change: &Change<'_, '_>,
        at: &Path,
        crepo: &Repository,
    ) -> Result<(), GitError> {
        let scratch = Scratch::fresh(crepo.path())?;
        let versions = scratch.dir("old");
        let old = (&change.old_tree, &change.old_versions);
        self.checkout_tool()?.stage_versions(crepo, at, old, &change.touched, &versions)?;
        let in_the_way =
            replace_paths(at, &versions, &change.old_versions, &change.touched, &mut |_, _| {})?;
        let placed: Vec<RepoPath> =
            change.touched.iter().filter(|path| !in_the_way.contains(path)).cloned().collect();
        let paths = (placed.as_slice(), &[][..]);
        write_index_entries(crepo, at, &change.old_versions, paths, None, &scratch, None)?;
        scratch.remove()
    }
}
