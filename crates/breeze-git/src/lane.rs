//! Fast lanes: moving a clean lane worktree to the next task (a new branch at a new base)
//! or back onto a task branch that already has work, writing only the paths that differ so
//! ignored build outputs stay and builds stay warm.

use git2::{Oid, Repository};

use crate::error::{Context as _, GitError};
use crate::names::{branch_ref, validate_branch_name};
use crate::paths::WorkdirChanges;
use crate::repo::Repo;
use crate::state::ensure_clean_state;
use crate::worktree::Worktree;

impl Repo {
    /// Fast lane: moves the clean worktree `wt` to `base` on a new branch `branch`, writing
    /// only the paths that differ between its current HEAD and `base` (ignored files such as
    /// build outputs stay). The previous branch is left in place for the caller to delete.
    ///
    /// Refuses (nothing changed) when the worktree has uncommitted or untracked work or is
    /// mid-operation. Calling it again after it succeeded is a no-op.
    pub fn move_worktree(
        &self,
        wt: &Worktree,
        branch: &str,
        base: Oid,
    ) -> Result<Worktree, GitError> {
        self.move_worktree_changed(wt, branch, base, WorkdirChanges::Unknown)
    }

    /// [`Repo::move_worktree`] when the caller knows where the worktree may have changed
    /// since it was last committed or checked: with [`WorkdirChanges::Only`] the check for
    /// uncommitted work looks at those paths (and the index) rather than the whole
    /// worktree. The move itself writes only the paths that differ between the two trees
    /// either way.
    pub fn move_worktree_changed(
        &self,
        wt: &Worktree,
        branch: &str,
        base: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<Worktree, GitError> {
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let moved = self.move_in(&repo, &wrepo, wt, branch, base, changes)?;
        wrepo.set_keep(true);
        Ok(moved)
    }

    fn move_in(
        &self,
        repo: &Repository,
        wrepo: &Repository,
        wt: &Worktree,
        branch: &str,
        base: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<Worktree, GitError> {
        let base_commit = repo
            .find_commit(base)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?;
        ensure_clean_state(wrepo, &wt.path)?;
        let moved = Worktree { base, branch: branch.to_string(), ..wt.clone() };
        let refname = branch_ref(branch);

        let head = wrepo.head().ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        if head.name().ok() == Some(refname.as_str()) {
            // Already on the requested branch: fine when a previous call got here.
            return match head.target() {
                Some(at) if at == base => Ok(moved),
                Some(at) => Err(GitError::BranchExists {
                    branch: branch.to_string(),
                    actual: at,
                    expected: base,
                }),
                None => Err(GitError::MissingObject { what: "commit", oid: base }),
            };
        }
        self.ensure_no_work(wrepo, wt, changes)?;
        let head_tree = head
            .peel_to_tree()
            .ctx(|| format!("could not read the tree of HEAD in {}", wt.path.display()))?;
        let base_tree = base_commit.tree().ctx(|| format!("could not read the tree of {base}"))?;

        let created_branch = self.ensure_branch_at(repo, branch, base)?;
        let written = self
            .checkouts
            .switch_branch(wrepo, &wt.path, branch, &head_tree, &base_tree)
            .inspect_err(|_| {
                if created_branch {
                    self.delete_branch_quietly(repo, branch);
                }
            })?;
        tracing::info!(worktree = %wt.name, branch, %base, files = written, "moved worktree");
        Ok(moved)
    }

    /// Switches the clean worktree `wt` to the existing branch `branch` at its tip (a task
    /// that already has work, e.g. the next review round of a task whose lane moved on),
    /// writing only the paths that differ. The returned `base` is where the branch left
    /// main. A no-op when `wt` is already on `branch`.
    pub fn switch_worktree(&self, wt: &Worktree, branch: &str) -> Result<Worktree, GitError> {
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let tip = self.existing_branch_tip(&repo, branch)?;
        let base = self.task_base(&repo, tip);
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let switched = self.switch_in(&repo, &wrepo, wt, branch, tip, base)?;
        wrepo.set_keep(true);
        Ok(switched)
    }

    fn switch_in(
        &self,
        repo: &Repository,
        wrepo: &Repository,
        wt: &Worktree,
        branch: &str,
        tip: Oid,
        base: Oid,
    ) -> Result<Worktree, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        let switched = Worktree { base, branch: branch.to_string(), ..wt.clone() };
        let refname = branch_ref(branch);
        let head = wrepo.head().ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        if head.name().ok() == Some(refname.as_str()) {
            return Ok(switched);
        }
        self.ensure_no_work(wrepo, wt, WorkdirChanges::Unknown)?;
        self.ensure_not_checked_out(repo, branch)?;
        let head_tree = head
            .peel_to_tree()
            .ctx(|| format!("could not read the tree of HEAD in {}", wt.path.display()))?;
        let tip_tree = wrepo
            .find_commit(tip)
            .and_then(|c| c.tree())
            .map_err(|_| GitError::MissingObject { what: "commit", oid: tip })?;
        let written =
            self.checkouts.switch_branch(wrepo, &wt.path, branch, &head_tree, &tip_tree)?;
        tracing::info!(worktree = %wt.name, branch, files = written, "switched worktree");
        Ok(switched)
    }
}
