//! breeze's detached checkouts beside the lanes, each reused: the integration worktree
//! `<worktree folder>/integration`, a merged tree where `land.verify` and the
//! repository's commit hooks run before main moves (and where those hooks are), with
//! `integration-2`, `integration-3`, … beside it for the landings the landing queue
//! verifies side by side; and the
//! review checkouts `review` and `advice`, where the reviewer and the Advisor read exactly
//! the commit they judge.

use std::path::PathBuf;

use git2::{Oid, Repository, Tree};

use crate::checkout_tool::Ignored;
use crate::error::{Context as _, GitError};
use crate::index_file::fresh_index;
use crate::libgit2_checkout::{self, IndexFile, Mode};
use crate::names::{ADVICE_CHECKOUT, REVIEW_CHECKOUT, REVIEW_CHECKOUTS, integration_checkout_name};
use crate::paths::WorkdirChanges;
use crate::repo::Repo;

impl Repo {
    /// The detached worktree `<worktree folder>/integration` at `commit`, for running
    /// `land.verify` on a merged tree before main moves. Reused across landings: each call
    /// resets it to `commit`, discarding what the previous verify changed or left untracked
    /// (ignored build outputs stay, so builds stay warm).
    pub fn integration_worktree(&self, commit: Oid) -> Result<PathBuf, GitError> {
        self.integration_worktree_changed(commit, WorkdirChanges::Unknown)
    }

    /// [`Repo::integration_worktree`] when the caller knows where the reused worktree may
    /// have changed since breeze last put it on a commit (its file-system watch): with
    /// [`WorkdirChanges::Only`] what the previous verify left is looked for at those paths
    /// only, and the reset writes those and the paths the two commits differ in.
    pub fn integration_worktree_changed(
        &self,
        commit: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<PathBuf, GitError> {
        self.integration_checkout(0, commit, changes)
    }

    /// Integration checkout `slot` ([`integration_checkout_name`]: 0 is
    /// [`Repo::integration_worktree`]'s) at `commit`, as [`Repo::integration_worktree_changed`]
    /// puts it there: the landing queue verifies landings side by side, each in its own.
    pub fn integration_checkout(
        &self,
        slot: usize,
        commit: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<PathBuf, GitError> {
        let reason = "breeze integration worktree (land.verify)";
        let name = integration_checkout_name(slot);
        self.detached_checkout(&name, reason, commit, changes, Ignored::Keep)
    }

    /// The detached checkout `<worktree folder>/<name>` of a reviewer or the Advisor
    /// ([`REVIEW_CHECKOUT`], [`ADVICE_CHECKOUT`]) at `commit`: exactly its tracked content —
    /// whatever the checkout held beyond it (a file changed, an untracked or ignored one)
    /// is gone, so a role run there sees the commit and nothing a worker left in its lane.
    /// Kept and reused: each call writes only the paths the previous commit and `commit`
    /// differ in, and looks for what changed since only at `changes` (its watch's paths;
    /// [`WorkdirChanges::Unknown`]: one status pass over the whole checkout).
    pub fn review_checkout(
        &self,
        name: &str,
        commit: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<PathBuf, GitError> {
        if !REVIEW_CHECKOUTS.contains(&name) {
            return Err(GitError::InvalidName {
                what: "review checkout",
                name: name.to_string(),
                reason: format!("it is `{REVIEW_CHECKOUT}` or `{ADVICE_CHECKOUT}`"),
            });
        }
        let reason = "breeze review checkout (the reviewer and the Advisor read it)";
        self.detached_checkout(name, reason, commit, changes, Ignored::Remove)
    }

    /// [`Repo::review_checkout`] for a run done with it: the checkout at `commit` for the
    /// next run, its index file ending in its SHA-1 again, for whichever breeze takes it
    /// (`index_file::hash_for_later`, best effort).
    pub fn park_review_checkout(
        &self,
        name: &str,
        commit: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<PathBuf, GitError> {
        let path = self.review_checkout(name, commit, changes)?;
        match self.handle(&path) {
            Ok(wrepo) => crate::index_file::hash_for_later(&wrepo, &path),
            Err(err) => tracing::warn!(checkout = name, "could not hash the parked index: {err}"),
        }
        Ok(path)
    }

    /// The detached worktree `<name>` at `commit`, created the first time (`reason` is its
    /// lock reason) and reset afterwards; `ignored` says whether ignored files go too.
    fn detached_checkout(
        &self,
        name: &str,
        reason: &str,
        commit: Oid,
        changes: WorkdirChanges<'_>,
        ignored: Ignored,
    ) -> Result<PathBuf, GitError> {
        let repo = self.git()?;
        repo.find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let root = self.worktree_root()?;
        let path = root.join(name);
        self.ensure_excluded()?;
        self.ensure_dirs(&root)?;
        self.remove_orphaned_checkout(&path)?;

        if self.clear_way_for(&repo, name, &path, None)? {
            let mut wrepo = self.handle(&path)?;
            remove_left_locks(wrepo.path())?;
            if remove_unreadable_index(&wrepo, &path)? {
                // What the failed read left in the handle's index is not kept.
                wrepo.set_keep(false);
                drop(wrepo);
                wrepo = self.handle(&path)?;
            }
            wrepo.set_keep(false);
            self.checkout_tool()?.reset_detached(
                &wrepo,
                &path,
                commit,
                changes,
                &self.bounds,
                ignored,
            )?;
            wrepo.set_keep(true);
            return Ok(path);
        }
        self.forget(&path);

        let finished = self
            .register_worktree(name, &path, &commit.to_string(), reason)
            .and_then(|()| self.check_out_registered(&repo, &path))
            .and_then(|()| self.write_marker(name));
        if let Err(e) = finished {
            self.rollback_add(&repo, name, &path, None);
            return Err(e);
        }
        Ok(path)
    }

    /// The integration worktree as `git commit` would see a landing about to be made: HEAD
    /// at `parent` (main's tip), and the index and files holding `tree` (the merged result),
    /// so that the repository's `pre-commit` hook finds the landing's change staged.
    pub fn integration_worktree_staged(&self, parent: Oid, tree: Oid) -> Result<PathBuf, GitError> {
        self.integration_worktree_staged_changed(parent, tree, WorkdirChanges::Unknown)
    }

    /// [`Repo::integration_worktree_staged`] with what the caller knows of where the
    /// worktree changed (see [`Repo::integration_worktree_changed`]).
    pub fn integration_worktree_staged_changed(
        &self,
        parent: Oid,
        tree: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<PathBuf, GitError> {
        let path = self.integration_worktree_changed(parent, changes)?;
        let wrepo = self.handle(&path)?;
        let head_tree = commit_tree_of(&wrepo, parent)?;
        let new_tree = wrepo
            .find_tree(tree)
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        libgit2_checkout::move_paths(
            &wrepo,
            &path,
            &head_tree,
            &new_tree,
            (Mode::Force, IndexFile::Written),
        )?;
        Ok(path)
    }

    /// Where the repository's hooks are: `core.hooksPath` (relative to the primary checkout)
    /// or `.git/hooks`.
    pub fn hooks_dir(&self) -> Result<PathBuf, GitError> {
        let repo = self.git()?;
        let config = repo.config().ctx(|| "could not read the git configuration".to_string())?;
        Ok(match config.get_path("core.hooksPath") {
            Ok(path) if path.is_absolute() => path,
            Ok(path) => self.workdir.join(path),
            Err(_) => self.common_dir.join("hooks"),
        })
    }
}

fn commit_tree_of(repo: &Repository, oid: Oid) -> Result<Tree<'_>, GitError> {
    repo.find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(|_| GitError::MissingObject { what: "commit", oid })
}

/// Removes the index file of breeze's detached checkout at `path` (handle `wrepo`) when
/// neither git nor libgit2 can read it (a disk or another program damaged it): the checkout
/// is breeze's, and without an index its next placing writes every path again, where a
/// damaged one would stop every placing. The read is the placing's own (kept for it).
/// Whether it was removed.
fn remove_unreadable_index(wrepo: &Repository, path: &std::path::Path) -> Result<bool, GitError> {
    let Err(GitError::Git { cause, .. }) = fresh_index(wrepo, path) else { return Ok(false) };
    if cause.class() != git2::ErrorClass::Index {
        return Ok(false);
    }
    let file = wrepo.path().join("index");
    tracing::warn!(checkout = %path.display(), "the index file is unreadable ({}): it is removed and every path placed again", cause.message());
    match std::fs::remove_file(&file) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(GitError::io("remove", &file, err))
        }
        _ => Ok(true),
    }
}

/// Removes the lock files a killed placing left in the admin folder `admin` of one of
/// breeze's detached checkouts. Only breeze writes there, one placing at a time, so a lock
/// found before a placing is left over, not held: without this, every later placing of the
/// checkout (a resumed run's every review) would fail on it.
fn remove_left_locks(admin: &std::path::Path) -> Result<(), GitError> {
    for name in ["HEAD.lock", "index.lock"] {
        let lock = admin.join(name);
        match std::fs::remove_file(&lock) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(GitError::io("remove", &lock, err)),
        }
        tracing::info!(lock = %lock.display(), "removed a lock a killed placing left");
    }
    Ok(())
}
