//! What a task changed between its base and head, as the repository answers it:
//! rename-aware path changes for the gates and the write-set check, the unified diff for
//! the reviewer, and the change as a person asks for it (`breeze diff`), from a commit or
//! from a lane's working state. How the diffs are found and rendered is `diff.rs`.

use git2::Oid;

use crate::diff::{
    ChangeTip, ChangeView, NewSides, PathChange, checkout_diff, path_changes, render, task_diff,
};
use crate::error::GitError;
use crate::repo::Repo;

impl Repo {
    /// Every path changed between `base` and `head` (commits), with renames paired up;
    /// mode-only changes and type changes included. Sorted by path.
    pub fn changed_paths(&self, base: Oid, head: Oid) -> Result<Vec<PathChange>, GitError> {
        let repo = self.objects()?;
        let diff = task_diff(&repo, base, head, self.bounds.max_file_bytes)?;
        Ok(path_changes(&diff))
    }

    /// The unified diff `base..head` (renames detected, 3 lines of context), for the
    /// reviewer, written by breeze from the bytes of each file (`file_patch.rs`), whatever
    /// `.gitattributes` says: text in full, text with a few odd bytes (a NUL, a terminal
    /// escape) in full with those bytes escaped, binary content named by its type and size.
    /// Files above the repository's size limit ([`Repo::with_max_file_bytes`]) are shown by
    /// their size, unread. Ends early with [`GitError::Cancelled`] once breeze is stopping.
    pub fn diff_patch(&self, base: Oid, head: Oid) -> Result<String, GitError> {
        let repo = self.objects()?;
        let diff = task_diff(&repo, base, head, self.bounds.max_file_bytes)?;
        let doing = "write the diff for the reviewer";
        Ok(render(&repo, &diff, ChangeView::Patch, NewSides::Objects, &self.bounds, doing)?.text)
    }

    /// A task's change from `base` to `tip` as a person reads it: a patch or stats, renames
    /// detected, rendered as [`Repo::diff_patch`] renders it (files above the repository's
    /// size limit shown by their size, unread). From a checkout, what is not committed yet
    /// counts too (a lane while its worker works), read from its files.
    pub fn show_change(
        &self,
        base: Oid,
        tip: ChangeTip<'_>,
        view: ChangeView,
    ) -> Result<String, GitError> {
        let max = self.bounds.max_file_bytes;
        let doing = "show the change";
        let shown = match tip {
            ChangeTip::Commit(head) => {
                let repo = self.objects()?;
                let diff = task_diff(&repo, base, head, max)?;
                render(&repo, &diff, view, NewSides::Objects, &self.bounds, doing)?
            }
            ChangeTip::Checkout(path) => {
                let repo = self.handle(path)?;
                let diff = checkout_diff(&repo, base, path, max)?;
                render(&repo, &diff, view, NewSides::Worktree(path), &self.bounds, doing)?
            }
        };
        Ok(shown.text)
    }

    /// The tree of `commit`: what a check of the commit's files depends on (two commits
    /// with one tree verify alike).
    pub fn tree_of(&self, commit: Oid) -> Result<Oid, GitError> {
        let repo = self.objects()?;
        let found = repo
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        Ok(found.tree_id())
    }

    /// The first parent of `commit`; `None` for a root commit.
    pub fn first_parent(&self, commit: Oid) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        let found = repo
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        Ok(found.parent_ids().next())
    }
}
