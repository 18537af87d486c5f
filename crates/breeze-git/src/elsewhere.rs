//! breeze's worktrees outside its worktree folder: those an earlier breeze made in the
//! checkout's `.harness-worktrees/` (where the project's own tools saw them, see
//! `worktree_root.rs`), and those made in a worktree folder configured before. Each is
//! retired: removed when it holds nothing uncommitted (its branch stays: what it holds is
//! committed there), kept where it is when it holds uncommitted work — never lost — and
//! breeze's detached checkouts (`integration`, `review`, `advice`) go whatever they hold.
//! A new worktree whose name one of them still holds is retired first (`create.rs`).

use std::path::Path;

use git2::Oid;

use crate::error::{Context as _, GitError};
use crate::names::is_detached_checkout;
use crate::paths::{normalize, same_path};
use crate::repo::Repo;
use crate::worktree::{RemoveOutcome, Worktree};
use crate::worktree_root::repo_key;

impl Repo {
    /// The worktrees breeze made (its marker is in their admin folder) that git has
    /// registered outside the worktree folder — in `.harness-worktrees/`, or in a folder
    /// named with this repository's key — by name. A folder may be gone (git's record
    /// stays until it is retired): such a one has no branch.
    pub fn worktrees_elsewhere(&self) -> Result<Vec<Worktree>, GitError> {
        let repo = self.git()?;
        let root = self.worktree_root().ok();
        let names = repo.worktrees().ctx(|| "could not list worktrees".to_string())?;
        let mut found = Vec::new();
        for name in names.iter().flatten().flatten() {
            let Ok(registered) = repo.find_worktree(name) else { continue };
            let path = normalize(registered.path());
            let parent = path.parent();
            if !self.has_marker(name) || root.as_deref().is_some_and(|root| parent == Some(root)) {
                continue;
            }
            if parent != Some(self.worktrees_note_dir().as_path())
                && !self.is_marked_elsewhere(&path)
            {
                continue;
            }
            let worktree = match self.breeze_worktree_at(name, &path) {
                Ok(Some(worktree)) => worktree,
                _ => Worktree {
                    name: name.to_string(),
                    path,
                    branch: String::new(),
                    base: Oid::ZERO_SHA1,
                },
            };
            found.push(worktree);
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// Retires `wt`, one of [`Repo::worktrees_elsewhere`] (see the module docs): removed
    /// with its admin folder and private git directory, its branch kept; kept as it is
    /// ([`RemoveOutcome::KeptDirty`]) when it holds uncommitted work, unless it is one of
    /// breeze's detached checkouts.
    pub fn retire_worktree(&self, wt: &Worktree) -> Result<RemoveOutcome, GitError> {
        let scratch = is_detached_checkout(&wt.name);
        self.remove_worktree(&wt.path, None, scratch)
    }

    /// Whether a new worktree may be named `name`: nothing is at `<worktree folder>/<name>`,
    /// and no worktree of that name is registered elsewhere with its folder still there (a
    /// kept one of [`Repo::worktrees_elsewhere`]).
    pub fn worktree_name_free(&self, name: &str) -> Result<bool, GitError> {
        let path = self.worktree_root()?.join(name);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(false);
        }
        let repo = self.git()?;
        Ok(match repo.find_worktree(name) {
            Ok(registered) => same_path(registered.path(), &path) || !registered.path().exists(),
            Err(_) => true,
        })
    }

    /// Whether `path` is a worktree breeze marked as its own in a folder named with this
    /// repository's key other than the worktree folder (one configured before): its admin
    /// folder names it and holds breeze's marker.
    pub(crate) fn is_marked_elsewhere(&self, path: &Path) -> bool {
        let key = repo_key(&self.workdir, &self.common_dir);
        let in_key_folder =
            path.parent().and_then(Path::file_name).is_some_and(|folder| folder == key.as_str());
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        in_key_folder && self.lane_admin_of(path).is_some() && self.has_marker(name)
    }

    /// Clears the name `name` of the worktree breeze made at `elsewhere` (outside the
    /// worktree folder) for a new one: retired as [`Repo::retire_worktree`] does; one that
    /// holds uncommitted work is refused, with where it is.
    pub(crate) fn retire_in_the_way(&self, name: &str, elsewhere: &Path) -> Result<(), GitError> {
        let wt = Worktree {
            name: name.to_string(),
            path: elsewhere.to_path_buf(),
            branch: String::new(),
            base: Oid::ZERO_SHA1,
        };
        match self.retire_worktree(&wt)? {
            RemoveOutcome::KeptDirty { paths } => Err(GitError::WorktreeConflict {
                name: name.to_string(),
                path: elsewhere.to_path_buf(),
                problem: format!(
                    "an earlier breeze made a worktree of this name there, and it holds \
                     uncommitted work ({}); save it (commit it on its branch), then \
                     `breeze clean` removes it — or `breeze clean --force` discards it",
                    paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                ),
            }),
            RemoveOutcome::Removed { .. } | RemoveOutcome::NotFound { .. } => {
                tracing::info!(worktree = name, from = %elsewhere.display(), "retired a worktree made outside the worktree folder");
                Ok(())
            }
        }
    }
}
