//! Committing what a worker left in its worktree (staged as `checkout_tool.rs` decides), as
//! the identity breeze commits as (`objects.rs`).

use git2::{Commit, Oid, Repository};

use crate::checkout_tool::Staged;
use crate::error::{Context as _, GitError};
use crate::index_behind;
use crate::index_file::fresh_index;
use crate::names::branch_ref;
use crate::objects::identity;
use crate::paths::WorkdirChanges;
use crate::repo::Repo;
use crate::state::ensure_clean_state;
use crate::worktree::Worktree;

/// What [`Repo::commit_worktree`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// A new commit with the worker's leftovers is now the branch tip.
    Committed {
        /// The new commit.
        head: Oid,
        /// How many paths it staged.
        paths: usize,
    },
    /// Nothing was left uncommitted; `head` is the branch tip (ahead of the base if the
    /// worker committed itself, equal to it if the task changed nothing).
    Unchanged {
        /// The branch tip.
        head: Oid,
    },
}

impl CommitOutcome {
    /// The branch tip after the call.
    pub fn head(&self) -> Oid {
        match self {
            CommitOutcome::Committed { head, .. } | CommitOutcome::Unchanged { head } => *head,
        }
    }
}

impl Repo {
    /// Stages everything the worker left in `wt` (new, modified and deleted files, honouring
    /// .gitignore; a nested repository is staged as a gitlink so the `nested-repo` gate sees
    /// it) and commits it on the worktree's branch with `message`, as the repository's
    /// identity. Hooks do not run.
    ///
    /// Errors, naming what to do, when HEAD is no longer on `wt.branch`, when the branch no
    /// longer descends from `wt.base`, when the worktree is mid-merge/rebase, when files
    /// from a conflicted rebase still contain conflict markers, and — before anything is
    /// read or staged — when a file is above the repository's size limit
    /// ([`Repo::with_max_file_bytes`]) or a FIFO, socket or device is there (removed):
    /// [`GitError::FilesRefused`].
    ///
    /// The lane's index file is written too (a person's or another process's git reads it
    /// next); [`Repo::commit_worktree_changed`] leaves it behind HEAD.
    pub fn commit_worktree(&self, wt: &Worktree, message: &str) -> Result<CommitOutcome, GitError> {
        let outcome = self.commit_worktree_changed(wt, message, WorkdirChanges::Unknown)?;
        self.settle_lane_index(wt)?;
        Ok(outcome)
    }

    /// [`Repo::commit_worktree`] when the caller knows where the worker wrote: with
    /// [`WorkdirChanges::Only`] (the paths its file-system notifications reported since the
    /// worktree was last committed or checked) only those paths are looked at, not the
    /// whole worktree; what is staged in the index is committed either way.
    ///
    /// The index file is not written (a whole index, 8.9 MB at 100,000 files): it is
    /// noted behind HEAD (`index_behind.rs`), and [`Repo::settle_lane_index`] writes it
    /// before another git reads it (the worker's git reads a copy written from memory).
    pub fn commit_worktree_changed(
        &self,
        wt: &Worktree,
        message: &str,
        changes: WorkdirChanges<'_>,
    ) -> Result<CommitOutcome, GitError> {
        let mut handle = self.handle(&wt.path)?;
        handle.set_keep(false);
        let outcome = self.commit_in(&handle, wt, message, changes)?;
        handle.set_keep(true);
        Ok(outcome)
    }

    fn commit_in(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        message: &str,
        changes: WorkdirChanges<'_>,
    ) -> Result<CommitOutcome, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        self.checkout_tool()?.index_ready(wrepo, &wt.path)?;
        let head = on_branch_from_base(wrepo, wt)?;
        // What breeze's own steps left in the lane is not the task's work, unless the
        // worker changed it since.
        let baseline = self.baseline_for_commit(wt, changes)?;
        let staged =
            self.checkout_tool()?.stage_all(wrepo, &wt.path, changes, &self.bounds, &baseline)?;
        // Re-read picks up the CLI's `git add` (filters); the in-memory index libgit2
        // staged in stays (the file did not change).
        let mut index = fresh_index(wrepo, &wt.path)?;
        // Known from HEAD's and the staged paths when breeze followed every change.
        let tree = crate::index_tree::tree_of(wrepo, &mut index)
            .ctx(|| format!("could not write the tree of {}", wt.path.display()))?;
        if tree == head.tree_id() {
            return Ok(CommitOutcome::Unchanged { head: head.id() });
        }
        // The index file is not written here: noted behind HEAD first, so that a kill once
        // HEAD moved leaves a marker (`index_behind.rs`).
        if let Staged::InMemory(paths) = &staged
            && !index_behind::note(wrepo, paths)?
        {
            crate::index_file::write(wrepo, &mut index, &wt.path, &[])?;
        }
        let tree = wrepo.find_tree(tree).ctx(|| format!("could not read tree {tree}"))?;
        let signature = identity(wrepo)?;
        let new = wrepo
            .commit(Some("HEAD"), &signature, &signature, message, &tree, &[&head])
            .ctx(|| format!("could not commit in {}", wt.path.display()))?;
        tracing::info!(worktree = %wt.name, commit = %new, "committed the worker's changes");
        Ok(CommitOutcome::Committed { head: new, paths: staged.count() })
    }
}

/// The tip of `wt`'s branch, after checking that HEAD is still on that branch and that the
/// branch still descends from `wt.base`.
fn on_branch_from_base<'r>(wrepo: &'r Repository, wt: &Worktree) -> Result<Commit<'r>, GitError> {
    let refname = branch_ref(&wt.branch);
    let head_ref = wrepo
        .find_reference("HEAD")
        .ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
    let found = match head_ref.symbolic_target().ok().flatten() {
        Some(target) if target == refname => None,
        Some(target) => {
            Some(format!("branch `{}`", target.strip_prefix("refs/heads/").unwrap_or(target)))
        }
        None => {
            let at = head_ref.target().map(|o| o.to_string()).unwrap_or_default();
            Some(format!("detached at {at}"))
        }
    };
    if let Some(found) = found {
        return Err(GitError::HeadMoved {
            path: wt.path.clone(),
            expected: wt.branch.clone(),
            found,
        });
    }
    let head = wrepo
        .head()
        .and_then(|h| h.peel_to_commit())
        .ctx(|| format!("could not read the tip of `{}`", wt.branch))?;
    if head.id() != wt.base && !wrepo.graph_descendant_of(head.id(), wt.base).unwrap_or(false) {
        return Err(GitError::NotFromBase {
            branch: wt.branch.clone(),
            head: head.id(),
            base: wt.base,
        });
    }
    Ok(head)
}
