//! Local branches: whether one exists and where its tip is, where a task branch left main,
//! which checkouts have a branch checked out, creating a task branch at its base, and
//! deleting branches only when nothing on them would be lost.

use std::path::{Path, PathBuf};

use git2::{BranchType, ErrorCode, Oid, Repository};

use crate::error::{Context as _, GitError};
use crate::names::{branch_ref, symbolic_target, validate_branch_name};
use crate::repo::Repo;
use crate::untrusted::read_small;

/// What [`Repo::delete_branch_if_landed`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchCleanup {
    /// Deleted: it held nothing that is not landed or on main.
    Deleted,
    /// No such branch.
    Missing,
    /// Kept: its tip holds work that did not land.
    Kept {
        /// The branch's tip.
        tip: Oid,
    },
}

impl Repo {
    /// Whether local branch `branch` exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool, GitError> {
        validate_branch_name(branch)?;
        match self.git()?.refname_to_id(&branch_ref(branch)) {
            Ok(_) => Ok(true),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// The tip of local branch `branch`, `None` when it does not exist.
    pub fn branch_tip(&self, branch: &str) -> Result<Option<Oid>, GitError> {
        validate_branch_name(branch)?;
        match self.git()?.refname_to_id(&branch_ref(branch)) {
            Ok(oid) => Ok(Some(oid)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Whether everything on local branch `branch` is already on main (its tip is main's
    /// tip or one of its ancestors): deleting it then loses nothing.
    pub fn branch_is_on_main(&self, branch: &str) -> Result<bool, GitError> {
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let tip = repo
            .refname_to_id(&branch_ref(branch))
            .ctx(|| format!("could not read branch `{branch}`"))?;
        let main = self.main_tip()?;
        Ok(tip == main
            || repo
                .graph_descendant_of(main, tip)
                .ctx(|| format!("could not compare `{branch}` with main"))?)
    }

    /// Deletes task branch `branch` only when nothing on it would be lost: its tip is
    /// `landed` (the head breeze landed from it) or already on main. A branch that moved on
    /// since — a commit the user added — is kept, and its tip returned.
    pub fn delete_branch_if_landed(
        &self,
        branch: &str,
        landed: Option<Oid>,
    ) -> Result<BranchCleanup, GitError> {
        let Some(tip) = self.branch_tip(branch)? else { return Ok(BranchCleanup::Missing) };
        if Some(tip) != landed && !self.branch_is_on_main(branch)? {
            return Ok(BranchCleanup::Kept { tip });
        }
        self.delete_branch(branch)?;
        Ok(BranchCleanup::Deleted)
    }

    /// Deletes local branch `branch` (e.g. a lane's previous task branch after landing).
    /// `Ok(false)` when it does not exist; refuses when it is checked out anywhere.
    pub fn delete_branch(&self, branch: &str) -> Result<bool, GitError> {
        validate_branch_name(branch)?;
        self.delete_branch_in(&*self.git()?, branch)
    }

    fn delete_branch_in(&self, repo: &Repository, branch: &str) -> Result<bool, GitError> {
        self.ensure_not_checked_out(repo, branch)?;
        match repo.find_branch(branch, BranchType::Local) {
            Ok(b) => {
                delete_ref(b).ctx(|| format!("could not delete branch `{branch}`"))?;
                Ok(true)
            }
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Deletes `branch` when given and not checked out anywhere (then it is kept, with a
    /// warning). Returns whether it was deleted.
    pub(crate) fn delete_branch_if_free(
        &self,
        repo: &Repository,
        branch: Option<&str>,
    ) -> Result<bool, GitError> {
        match branch {
            None => Ok(false),
            Some(branch) => match self.delete_branch_in(repo, branch) {
                Ok(deleted) => Ok(deleted),
                Err(GitError::BranchCheckedOut { branch, path }) => {
                    tracing::warn!(branch, path = %path.display(), "branch kept: checked out elsewhere");
                    Ok(false)
                }
                Err(e) => Err(e),
            },
        }
    }

    /// Deletes `branch` if it exists, only logging a failure (rollbacks).
    pub(crate) fn delete_branch_quietly(&self, repo: &Repository, branch: &str) {
        if let Ok(b) = repo.find_branch(branch, BranchType::Local)
            && let Err(e) = delete_ref(b)
        {
            tracing::warn!(branch, error = %e, "could not delete branch during rollback");
        }
    }

    /// Creates `branch` at `base`, or accepts it when it already points there and is not
    /// checked out. Returns whether it was created (so a rollback knows to delete it).
    pub(crate) fn ensure_branch_at(
        &self,
        repo: &Repository,
        branch: &str,
        base: Oid,
    ) -> Result<bool, GitError> {
        match repo.refname_to_id(&branch_ref(branch)) {
            Ok(actual) if actual == base => {
                self.ensure_not_checked_out(repo, branch)?;
                Ok(false)
            }
            Ok(actual) => {
                Err(GitError::BranchExists { branch: branch.to_string(), actual, expected: base })
            }
            Err(e) if e.code() == ErrorCode::NotFound => {
                let commit = repo
                    .find_commit(base)
                    .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?;
                let created = repo.branch(branch, &commit, false);
                let created = match created {
                    Err(e)
                        if e.code() == ErrorCode::Locked && self.remove_stale_ref_lock(branch) =>
                    {
                        repo.branch(branch, &commit, false)
                    }
                    other => other,
                };
                created.ctx(|| format!("could not create branch `{branch}` at {base}"))?;
                Ok(true)
            }
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Removes the lock file of `branch`'s ref when it is older than this process's first
    /// open of a repository: git holds a ref lock for microseconds, so such a lock was left
    /// by a process that died while it wrote the ref (an engine killed mid-landing), and
    /// the branch could never be made again. Whether one was removed.
    fn remove_stale_ref_lock(&self, branch: &str) -> bool {
        let lock = self.common_dir.join(format!("{}.lock", branch_ref(branch)));
        let modified = std::fs::metadata(&lock).and_then(|meta| meta.modified()).ok();
        let before_us = match (modified, crate::repo::FIRST_OPENED.get()) {
            (Some(modified), Some(opened)) => modified < *opened,
            _ => false,
        };
        if !before_us {
            return false;
        }
        tracing::warn!(lock = %lock.display(), "removing a ref lock a killed process left");
        std::fs::remove_file(&lock).is_ok()
    }

    /// The tip of an existing local branch, or [`GitError::NoSuchBranch`].
    pub(crate) fn existing_branch_tip(
        &self,
        repo: &Repository,
        branch: &str,
    ) -> Result<Oid, GitError> {
        match repo.refname_to_id(&branch_ref(branch)) {
            Ok(tip) => Ok(tip),
            Err(e) if e.code() == ErrorCode::NotFound => {
                Err(GitError::NoSuchBranch { branch: branch.to_string() })
            }
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Where a task branch left main: the merge base of its tip and the main tip (the tip
    /// itself when there is none).
    pub(crate) fn task_base(&self, repo: &Repository, tip: Oid) -> Oid {
        repo.refname_to_id(&self.main_ref())
            .and_then(|main| repo.merge_base(main, tip))
            .unwrap_or(tip)
    }

    /// Refuses with [`GitError::BranchCheckedOut`] when local branch `branch` is checked out
    /// in any checkout.
    pub(crate) fn ensure_not_checked_out(
        &self,
        repo: &Repository,
        branch: &str,
    ) -> Result<(), GitError> {
        match self.checkouts_of_branch(repo, &branch_ref(branch)).into_iter().next() {
            Some(path) => Err(GitError::BranchCheckedOut { branch: branch.to_string(), path }),
            None => Ok(()),
        }
    }

    /// Where `branch` is checked out — the primary checkout, linked worktrees (also one
    /// whose folder went missing) — which [`Repo::delete_branch`] refuses; empty when
    /// nowhere.
    pub fn branch_checkouts(&self, branch: &str) -> Result<Vec<PathBuf>, GitError> {
        validate_branch_name(branch)?;
        Ok(self.checkouts_of_branch(&*self.git()?, &branch_ref(branch)))
    }

    /// Every checkout whose HEAD names `refname` (primary checkout or linked worktree).
    /// Reads the HEAD files directly, so a worktree whose directory went missing still
    /// counts (git treats it so too); it is named by its admin directory then.
    pub(crate) fn checkouts_of_branch(&self, repo: &Repository, refname: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        // An admin folder's HEAD is read as an untrusted file: a link or FIFO planted there
        // (possible only without kernel confinement) names nothing.
        let names_ref = |head_file: &Path| {
            read_small(head_file)
                .ok()
                .flatten()
                .is_some_and(|text| symbolic_target(&text) == Some(refname))
        };
        if names_ref(&self.common_dir.join("HEAD")) {
            found.push(self.workdir.clone());
        }
        if let Ok(names) = repo.worktrees() {
            for name in names.iter().flatten().flatten() {
                if names_ref(&self.admin_dir(name).join("HEAD")) {
                    match repo.find_worktree(name) {
                        Ok(wt) => found.push(wt.path().to_path_buf()),
                        Err(_) => found.push(self.admin_dir(name)),
                    }
                }
            }
        }
        found
    }
}

/// Deletes a local branch's ref. Not `Branch::delete`: libgit2 first opens every worktree
/// through its `.git` file (in a worker's reach) to see whether the branch is checked out
/// there; breeze checks that itself from the admin folders' HEAD files
/// ([`Repo::ensure_not_checked_out`]).
fn delete_ref(branch: git2::Branch<'_>) -> Result<(), git2::Error> {
    branch.into_reference().delete()
}
