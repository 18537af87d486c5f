//! Fast lanes: moving a clean lane worktree to the next task (a new branch at a new base)
//! or back onto a task branch that already has work, writing only the paths that differ so
//! ignored build outputs stay and builds stay warm.

use git2::{Oid, Repository};

use crate::error::{Context as _, GitError};
use crate::libgit2_checkout::{IndexFile, Mode, checkout_paths};
use crate::names::{branch_ref, validate_branch_name};
use crate::paths::{RepoPath, WorkdirChanges};
use crate::repo::Repo;
use crate::state::ensure_clean_state;
use crate::worktree::Worktree;

impl Repo {
    /// Fast lane: moves the clean worktree `wt` to `base` on a new branch `branch`, writing
    /// only the paths that differ between its current HEAD and `base` (ignored files such as
    /// build outputs stay). The previous branch is left in place for the caller to delete.
    ///
    /// Refuses (nothing changed) when the worktree has uncommitted or untracked work or is
    /// mid-operation. Calling it again after it succeeded is a no-op. The lane's index file
    /// agrees with HEAD afterwards: another git may read it next.
    pub fn move_worktree(
        &self,
        wt: &Worktree,
        branch: &str,
        base: Oid,
    ) -> Result<Worktree, GitError> {
        let moved = self.move_worktree_changed(wt, branch, base, WorkdirChanges::Unknown)?;
        self.settle_lane_index(&moved)?;
        Ok(moved)
    }

    /// [`Repo::move_worktree`] when the caller knows where the worktree may have changed
    /// since it was last committed or checked: with [`WorkdirChanges::Only`] the check for
    /// uncommitted work looks at those paths (and the index) rather than the whole
    /// worktree. The move itself writes only the paths that differ between the two trees
    /// either way. The lane's index file is left behind HEAD at those paths (its run's
    /// move: the worker's git reads a copy written from memory, [`Repo::seal_lane`]);
    /// [`Repo::settle_lane_index`] writes it before another git reads the lane.
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
        self.put_back_baseline_in_way(wrepo, &wt.path, &head_tree, &base_tree)?;

        let created_branch = self.ensure_branch_at(repo, branch, base)?;
        let written = self
            .checkout_tool()?
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
        crate::index_behind::settle(&wrepo, &wt.path)?;
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
        self.put_back_baseline_in_way(wrepo, &wt.path, &head_tree, &tip_tree)?;
        let written =
            self.checkout_tool()?.switch_branch(wrepo, &wt.path, branch, &head_tree, &tip_tree)?;
        tracing::info!(worktree = %wt.name, branch, files = written, "switched worktree");
        Ok(switched)
    }
}

// Lanes that outlive a run.
impl Repo {
    /// Writes the index file of lane `wt` when a commit or the run's move left it behind
    /// HEAD (`index_behind.rs`): what breeze does before another git reads it — a
    /// project's command in the lane, or a person's (a parked or kept lane). The worker's
    /// git reads a copy written from memory instead ([`Repo::seal_lane`]).
    pub fn settle_lane_index(&self, wt: &Worktree) -> Result<(), GitError> {
        crate::index_behind::settle(&*self.handle(&wt.path)?, &wt.path)
    }

    /// Parks the clean lane `wt` at `commit` with a detached HEAD, writing only the paths
    /// that differ (ignored build outputs and the lane's baseline stay): how a lane waits
    /// for the next run, its task branch free to be deleted. With [`WorkdirChanges::Only`]
    /// the check for uncommitted work looks at those paths (and the index). Refuses
    /// (nothing changed) when the lane holds uncommitted work or is mid-operation. The
    /// returned worktree has no branch and `commit` as its base. Its index file ends in its
    /// SHA-1 (`index_file::hash_for_later`), for whichever breeze takes it next.
    pub fn park_worktree(
        &self,
        wt: &Worktree,
        commit: Oid,
        changes: WorkdirChanges<'_>,
    ) -> Result<Worktree, GitError> {
        let repo = self.git()?;
        let target = repo
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let written = self.park_in(&wrepo, wt, &target, changes)?;
        wrepo.set_keep(true);
        drop(wrepo);
        // The worker's copy of the index holds the same entries as the lane's from now on:
        // the next run takes both as breeze's own writes and patches them in place
        // (`index_file::read_ahead`).
        self.park_private_index(wt);
        match self.handle(&wt.path) {
            Ok(wrepo) => crate::index_file::hash_for_later(&wrepo, &wt.path),
            Err(err) => {
                tracing::warn!(worktree = %wt.name, "could not hash the parked index: {err}");
            }
        }
        let parked = Worktree { branch: String::new(), base: commit, ..wt.clone() };
        if let Some(written) = written {
            tracing::info!(worktree = %wt.name, %commit, files = written, "parked the lane");
        }
        Ok(parked)
    }

    /// [`Repo::park_worktree`] on the lane's handle; `None` when it was parked there
    /// already, else how many paths were written.
    fn park_in(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        target: &git2::Commit<'_>,
        changes: WorkdirChanges<'_>,
    ) -> Result<Option<Option<usize>>, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        let head = wrepo.head().ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        if head.name().ok() == Some("HEAD") && head.target() == Some(target.id()) {
            // A parked lane's index file is what a person's git reads: it agrees with HEAD
            // (the move below writes it otherwise).
            crate::index_behind::settle(wrepo, &wt.path)?;
            return Ok(None);
        }
        self.ensure_no_work(wrepo, wt, changes)?;
        let head_tree = head
            .peel_to_tree()
            .ctx(|| format!("could not read the tree of HEAD in {}", wt.path.display()))?;
        let target_tree =
            target.tree().ctx(|| format!("could not read the tree of {}", target.id()))?;
        self.put_back_baseline_in_way(wrepo, &wt.path, &head_tree, &target_tree)?;
        let written = self.checkout_tool()?.detach_at(
            wrepo,
            &wt.path,
            target.id(),
            &head_tree,
            &target_tree,
        )?;
        Ok(Some(written))
    }

    /// Saves and undoes what changed in the parked lane `wt` since it was parked (found at
    /// `changes`, or everywhere when unknown): the uncommitted paths — not its baseline —
    /// are committed on a new branch `breeze/leftovers/<lane>` (`-2`, … when taken) whose
    /// parent is the lane's HEAD, then put back to HEAD in the lane, files and index, so
    /// that the lane is clean again without being checked out anew. `None` when nothing
    /// had changed. Errors as committing does (a file above the size limit is refused and
    /// nothing is touched).
    pub fn save_lane_leftovers(
        &self,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<Option<(String, Vec<String>)>, GitError> {
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let saved = self.save_leftovers_in(&wrepo, wt, changes)?;
        wrepo.set_keep(true);
        Ok(saved)
    }

    fn save_leftovers_in(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<Option<(String, Vec<String>)>, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        let dirty = self.dirty_paths_of(wrepo, &wt.path, changes)?;
        if dirty.is_empty() {
            return Ok(None);
        }
        let baseline = self.baseline_of(&wt.path);
        self.checkout_tool()?.stage_all(wrepo, &wt.path, changes, &self.bounds, &baseline)?;
        let head = wrepo
            .head()
            .and_then(|head| head.peel_to_commit())
            .ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        let mut index = crate::index_file::fresh_index(wrepo, &wt.path)?;
        let tree_id = index
            .write_tree()
            .ctx(|| format!("could not write the tree of {}", wt.path.display()))?;
        let tree = wrepo.find_tree(tree_id).ctx(|| format!("could not read tree {tree_id}"))?;
        let signature = crate::objects::identity(wrepo)?;
        let message = format!(
            "breeze: what changed in {} between runs\n\nSaved before the lane was put back to {} for the next run.",
            wt.name,
            head.id()
        );
        let saved = wrepo
            .commit(None, &signature, &signature, &message, &tree, &[&head])
            .ctx(|| format!("could not save the changes in {}", wt.path.display()))?;
        let repo = self.git()?;
        let branch = (1..)
            .map(|n| match n {
                1 => format!("breeze/leftovers/{}", wt.name),
                n => format!("breeze/leftovers/{}-{n}", wt.name),
            })
            .find(|name| repo.refname_to_id(&branch_ref(name)).is_err())
            .unwrap_or_else(|| format!("breeze/leftovers/{}", wt.name));
        repo.reference(&branch_ref(&branch), saved, false, "breeze: leftovers of a parked lane")
            .ctx(|| format!("could not create branch `{branch}`"))?;
        // Back to HEAD: the index first, then the files (untracked ones removed).
        let head_tree = head.tree().ctx(|| format!("could not read the tree of {}", head.id()))?;
        crate::index_tree::forget(&index);
        index
            .read_tree(&head_tree)
            .ctx(|| format!("could not reset the index of {}", wt.path.display()))?;
        crate::index_file::write(wrepo, &mut index, &wt.path, &[])?;
        crate::index_behind::written(wrepo)?;
        let paths: Vec<RepoPath> = dirty.iter().map(|p| RepoPath(p.as_bytes().to_vec())).collect();
        if let Err(conflicts) =
            checkout_paths(wrepo, &head_tree, &paths, (Mode::Force, IndexFile::Written), &wt.path)?
        {
            return Err(GitError::Dirty { path: wt.path.clone(), paths: conflicts });
        }
        tracing::info!(worktree = %wt.name, %branch, paths = ?dirty, "saved and undid what changed in a parked lane");
        Ok(Some((branch, dirty)))
    }
}
