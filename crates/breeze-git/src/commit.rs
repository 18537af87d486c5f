//! Committing what a worker left in its worktree.

use std::path::Path;

use git2::{Oid, Repository, Signature, Status};

use crate::checkout::path_string;
use crate::cli;
use crate::error::{Context as _, GitError};
use crate::repo::{Repo, ensure_clean_state, fresh_index};
use crate::worktree::Worktree;

/// Committer (and author of engine-made commits) when the repository has no identity.
pub const FALLBACK_NAME: &str = "breeze";
/// E-mail of the fallback identity.
pub const FALLBACK_EMAIL: &str = "breeze@localhost";

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

/// The repository's `user.name`/`user.email`, or `breeze <breeze@localhost>`.
pub(crate) fn identity(repo: &Repository) -> Result<Signature<'static>, GitError> {
    match repo.signature() {
        Ok(sig) => Ok(sig),
        Err(_) => Signature::now(FALLBACK_NAME, FALLBACK_EMAIL)
            .ctx(|| "could not build the fallback committer identity".to_string()),
    }
}

/// A file still carries conflict markers when it has both a `<<<<<<< ` and a `>>>>>>> ` line.
fn has_conflict_markers(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else { return false };
    let starts_line = |marker: &[u8]| {
        bytes.starts_with(marker)
            || bytes.windows(marker.len() + 1).any(|w| w[0] == b'\n' && &w[1..] == marker)
    };
    starts_line(b"<<<<<<< ") && starts_line(b">>>>>>> ")
}

impl Repo {
    /// Stages everything the worker left in `wt` (new, modified and deleted files, honouring
    /// .gitignore; a nested repository is staged as a gitlink so the `nested-repo` gate sees
    /// it) and commits it on the worktree's branch with `message`, as the repository's
    /// identity. Hooks do not run.
    ///
    /// Errors, naming what to do, when HEAD is no longer on `wt.branch`, when the branch no
    /// longer descends from `wt.base`, when the worktree is mid-merge/rebase, or when files
    /// from a conflicted rebase still contain conflict markers.
    pub fn commit_worktree(&self, wt: &Worktree, message: &str) -> Result<CommitOutcome, GitError> {
        let mut handle = self.handle(&wt.path)?;
        handle.set_keep(false);
        let outcome = self.commit_in(&handle, wt, message)?;
        handle.set_keep(true);
        Ok(outcome)
    }

    fn commit_in(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        message: &str,
    ) -> Result<CommitOutcome, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        let refname = format!("refs/heads/{}", wt.branch);
        let head_ref = wrepo
            .find_reference("HEAD")
            .ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        match head_ref.symbolic_target().ok().flatten() {
            Some(target) if target == refname => {}
            Some(target) => {
                return Err(GitError::HeadMoved {
                    path: wt.path.clone(),
                    expected: wt.branch.clone(),
                    found: format!(
                        "branch `{}`",
                        target.strip_prefix("refs/heads/").unwrap_or(target)
                    ),
                });
            }
            None => {
                let at = head_ref.target().map(|o| o.to_string()).unwrap_or_default();
                return Err(GitError::HeadMoved {
                    path: wt.path.clone(),
                    expected: wt.branch.clone(),
                    found: format!("detached at {at}"),
                });
            }
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

        let staged = if self.external_filters.is_some() {
            // `git add -A` runs the clean filters (LFS pointers instead of raw content).
            let unresolved = self.unresolved_conflicts(wrepo, &wt.path)?;
            if !unresolved.is_empty() {
                return Err(GitError::UnresolvedConflicts {
                    path: wt.path.clone(),
                    paths: unresolved,
                });
            }
            cli::run(&wt.path, ["add", "-A"], "stage the worker's changes")?;
            0
        } else {
            self.stage_all(wrepo, &wt.path)?
        };
        // Re-read picks up the CLI's `git add` (filters); a no-op when libgit2 staged.
        let mut index = fresh_index(wrepo, &wt.path)?;
        let tree = index
            .write_tree()
            .ctx(|| format!("could not write the tree of {}", wt.path.display()))?;
        if tree == head.tree_id() {
            return Ok(CommitOutcome::Unchanged { head: head.id() });
        }
        let tree = wrepo.find_tree(tree).ctx(|| format!("could not read tree {tree}"))?;
        let signature = identity(wrepo)?;
        let new = wrepo
            .commit(Some("HEAD"), &signature, &signature, message, &tree, &[&head])
            .ctx(|| format!("could not commit in {}", wt.path.display()))?;
        tracing::info!(worktree = %wt.name, commit = %new, "committed the worker's changes");
        Ok(CommitOutcome::Committed { head: new, paths: staged })
    }

    /// Conflicted index entries whose files still contain conflict markers.
    fn unresolved_conflicts(&self, wrepo: &Repository, at: &Path) -> Result<Vec<String>, GitError> {
        let index = fresh_index(wrepo, at)?;
        if !index.has_conflicts() {
            return Ok(Vec::new());
        }
        let mut paths = Vec::new();
        for conflict in
            index.conflicts().ctx(|| format!("could not read conflicts in {}", at.display()))?
        {
            let conflict =
                conflict.ctx(|| format!("could not read conflicts in {}", at.display()))?;
            let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
            if let Some(entry) = entry {
                let path = path_string(&entry.path);
                if has_conflict_markers(&at.join(&path)) {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// Stages every change in the worktree with libgit2; returns how many paths.
    fn stage_all(&self, wrepo: &Repository, at: &Path) -> Result<usize, GitError> {
        let unresolved = self.unresolved_conflicts(wrepo, at)?;
        if !unresolved.is_empty() {
            return Err(GitError::UnresolvedConflicts {
                path: at.to_path_buf(),
                paths: unresolved,
            });
        }
        // Working tree against the index only; what the worker staged itself is in the
        // index already and ends up in the tree written below.
        let mut options = crate::checkout::workdir_status_options();
        let statuses = wrepo
            .statuses(Some(&mut options))
            .ctx(|| format!("could not read the status of {}", at.display()))?;
        let mut index = fresh_index(wrepo, at)?;
        let workdir_change = Status::WT_NEW
            | Status::WT_MODIFIED
            | Status::WT_DELETED
            | Status::WT_TYPECHANGE
            | Status::CONFLICTED;
        // The names as git has them: bytes, not necessarily UTF-8 (a lossy spelling would
        // name another file, and the real one would be dropped).
        let changed: Vec<Vec<u8>> = statuses
            .iter()
            .filter(|entry| entry.status().intersects(workdir_change))
            .map(|entry| {
                let bytes = entry.path_bytes();
                bytes.strip_suffix(b"/").unwrap_or(bytes).to_vec()
            })
            .collect();
        drop(statuses);
        let rel_of = |bytes: &[u8]| {
            Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
                .to_path_buf()
        };
        // Deletions first: a directory that replaced a file (or a file that replaced a
        // directory) can only be staged once the old entries are out of the way.
        let (gone, present): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) =
            changed.iter().partition(|bytes| at.join(rel_of(bytes)).symlink_metadata().is_err());
        for bytes in &gone {
            // Deleted (or a conflicted file the worker resolved by deleting it).
            index.remove_path(&rel_of(bytes)).ctx(|| {
                format!(
                    "could not stage the deletion of `{}` in {}",
                    path_string(bytes),
                    at.display()
                )
            })?;
        }
        for bytes in &present {
            let rel = rel_of(bytes);
            let path = path_string(bytes);
            let context = || format!("could not stage `{path}` in {}", at.display());
            let full = at.join(&rel);
            let meta = full.symlink_metadata().map_err(|e| GitError::io("read", &full, e))?;
            let replaces_a_file = index.get_path(&rel, 0).is_some();
            if meta.is_dir() && replaces_a_file && !full.join(".git").exists() {
                // A directory where the index has a file: the file goes, what the directory
                // holds (not ignored) comes in. (A nested repository is staged as a gitlink,
                // below, for the nested-repo gate to see.)
                index.remove_path(&rel).ctx(context)?;
                index.add_all([rel.join("*")], git2::IndexAddOption::DEFAULT, None).ctx(context)?;
            } else {
                if !meta.is_dir() {
                    // A file where the index has a directory: its entries go first.
                    index.remove_dir(&rel, 0).ctx(context)?;
                }
                index.add_path(&rel).ctx(context)?;
            }
        }
        let count = changed.len();
        index.write().ctx(|| format!("could not write the index of {}", at.display()))?;
        Ok(count)
    }
}
