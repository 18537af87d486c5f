//! Task and lane worktrees in the worktree folder as they are: the [`Worktree`] handed
//! to a worker, finding one breeze created (resume), listing every linked worktree,
//! whether one holds uncommitted work, and removing one. Creating worktrees is in
//! `create.rs`, moving a lane between tasks in `lane.rs`.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, WorktreeLockStatus, WorktreePruneOptions};

use crate::error::{Context as _, GitError};
use crate::names::{CREATED_MARKER, symbolic_target, validate_worktree_name};
use crate::paths::{WorkdirChanges, normalize, remove_dir_if_exists, same_path};
use crate::repo::Repo;
use crate::untrusted::{read_small, replace_file};

/// A worktree breeze created and hands to a worker (or to the verify command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Flat name, also the directory name in the worktree folder (`lane-1`, `attach-<slug>`).
    pub name: String,
    /// Absolute path of the worktree.
    pub path: PathBuf,
    /// Branch checked out in it, without `refs/heads/` (`task/<slug>`); empty for a lane
    /// parked between runs (a detached HEAD at main's tip).
    pub branch: String,
    /// The commit the current task started from.
    pub base: Oid,
}

/// One linked worktree as git sees it (`git worktree list --porcelain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Name of its admin directory (`.git/worktrees/<name>`).
    pub name: String,
    /// Where it is checked out.
    pub path: PathBuf,
    /// Checked-out branch (without `refs/heads/`), `None` when detached.
    pub branch: Option<String>,
    /// Commit HEAD points at, when it resolves.
    pub head: Option<Oid>,
    /// `Some(reason)` when locked (`Some("")` when locked without a reason).
    pub locked: Option<String>,
    /// Uncommitted or untracked work; `None` when the directory is missing.
    pub dirty: Option<bool>,
    /// It lives in the worktree folder ([`Repo::worktree_root`]; breeze only ever touches
    /// its own worktrees, and only the ones its journal says it created).
    pub under_breeze_root: bool,
    /// breeze finished creating it (its admin directory carries breeze's marker).
    pub created_by_breeze: bool,
}

/// What [`Repo::remove_worktree`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveOutcome {
    /// The worktree and its admin data are gone.
    Removed {
        /// The requested branch was deleted.
        branch_deleted: bool,
    },
    /// It has uncommitted work and `force` was not given: nothing was touched.
    KeptDirty {
        /// The changed or untracked paths.
        paths: Vec<String>,
    },
    /// No such worktree (already removed); the branch was still deleted when asked.
    NotFound {
        /// The requested branch was deleted.
        branch_deleted: bool,
    },
}

impl Repo {
    /// Marks linked worktree `name` as complete.
    pub(crate) fn write_marker(&self, name: &str) -> Result<(), GitError> {
        replace_file(&self.admin_dir(name).join(CREATED_MARKER), b"created by breeze\n")
    }

    /// The text of linked worktree `name`'s HEAD file (empty when unreadable, or when it is
    /// not a regular file: see `untrusted.rs`).
    pub(crate) fn admin_head(&self, name: &str) -> String {
        read_small(&self.admin_dir(name).join("HEAD")).ok().flatten().unwrap_or_default()
    }

    /// The worktree `name` breeze created in the worktree folder (how resume adopts a
    /// lane, and a later run a lane kept from an earlier one), with its current branch and
    /// the base that branch left main at — or, for a lane parked at the end of a run
    /// ([`Repo::park_worktree`]: a detached HEAD), no branch and its HEAD commit as the
    /// base. `None` when there is no such worktree, its directory is gone, or breeze did
    /// not create it.
    pub fn find_worktree(&self, name: &str) -> Result<Option<Worktree>, GitError> {
        validate_worktree_name(name)?;
        let path = self.worktree_root()?.join(name);
        self.breeze_worktree_at(name, &path)
    }

    /// The worktree `name` breeze created, when git has it registered at `path` and its
    /// directory is there (see [`Repo::find_worktree`]).
    pub(crate) fn breeze_worktree_at(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<Option<Worktree>, GitError> {
        let repo = self.git()?;
        let Ok(registered) = repo.find_worktree(name) else { return Ok(None) };
        if registered.validate().is_err()
            || !same_path(registered.path(), path)
            || !path.is_dir()
            || !self.has_marker(name)
        {
            return Ok(None);
        }
        let path = path.to_path_buf();
        let head = self.admin_head(name);
        let Some(refname) = symbolic_target(&head) else {
            let Ok(at) = Oid::from_str(head.trim()) else {
                return Err(GitError::WorktreeConflict {
                    name: name.to_string(),
                    path,
                    problem: "its HEAD names neither a branch nor a commit; remove the \
                              worktree (`breeze clean --force`)"
                        .to_string(),
                });
            };
            return Ok(Some(Worktree {
                name: name.to_string(),
                path,
                branch: String::new(),
                base: at,
            }));
        };
        let branch = refname.strip_prefix("refs/heads/").unwrap_or(refname).to_string();
        let tip = self.existing_branch_tip(&repo, &branch)?;
        let base = self.task_base(&repo, tip);
        Ok(Some(Worktree { name: name.to_string(), path, branch, base }))
    }

    /// Whether the checkout at `path` has uncommitted or untracked work (ignored files do
    /// not count), as [`Repo::remove_worktree`] judges it.
    pub fn is_worktree_dirty(&self, path: &Path) -> Result<bool, GitError> {
        let handle = self.handle(path)?;
        Ok(!self.dirty_paths_of(&handle, path, WorkdirChanges::Unknown)?.is_empty())
    }

    /// Refuses with [`GitError::Dirty`] when `wt` has uncommitted or untracked work (looking
    /// at `changes` of its working tree, and at its index).
    pub(crate) fn ensure_no_work(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<(), GitError> {
        let dirty = self.dirty_paths_of(wrepo, &wt.path, changes)?;
        if dirty.is_empty() {
            Ok(())
        } else {
            Err(GitError::Dirty { path: wt.path.clone(), paths: dirty })
        }
    }

    /// Every linked worktree of the repository (not the primary checkout), sorted by name.
    pub fn list_worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let repo = self.git()?;
        // Without a worktree folder, nothing is under it.
        let root = self.worktree_root().unwrap_or_default();
        let names = repo.worktrees().ctx(|| "could not list worktrees".to_string())?;
        let mut infos: Vec<WorktreeInfo> = names
            .iter()
            .flatten()
            .flatten()
            .filter_map(|name| self.worktree_info(&repo, name, &root))
            .collect();
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(infos)
    }

    /// What git and breeze know of linked worktree `name`; `None` when git cannot find it.
    fn worktree_info(&self, repo: &Repository, name: &str, root: &Path) -> Option<WorktreeInfo> {
        let wt = repo.find_worktree(name).ok()?;
        let path = wt.path().to_path_buf();
        let head_text = self.admin_head(name);
        let (branch, head) = match symbolic_target(&head_text) {
            Some(target) => (
                Some(target.strip_prefix("refs/heads/").unwrap_or(target).to_string()),
                repo.refname_to_id(target).ok(),
            ),
            None => (None, Oid::from_str(head_text.trim()).ok()),
        };
        let locked = match wt.is_locked() {
            Ok(WorktreeLockStatus::Locked(reason)) => Some(reason.unwrap_or_default()),
            _ => None,
        };
        let dirty = if path.is_dir() {
            self.handle(&path)
                .ok()
                .and_then(|wrepo| self.dirty_paths_of(&wrepo, &path, WorkdirChanges::Unknown).ok())
                .map(|paths| !paths.is_empty())
        } else {
            None
        };
        let under_breeze_root = !root.as_os_str().is_empty() && normalize(&path).starts_with(root);
        Some(WorktreeInfo {
            name: name.to_string(),
            path,
            branch,
            head,
            locked,
            dirty,
            under_breeze_root,
            created_by_breeze: self.has_marker(name),
        })
    }

    /// Removes a worktree breeze created (directory, admin data and, for a lane, its
    /// private git directory under `.breeze/lanes/`), then deletes `delete_branch` when
    /// given and not checked out elsewhere.
    ///
    /// A worktree with uncommitted or untracked work is kept unless `force`; ignored files
    /// (build outputs) do not count as work. Only breeze's worktrees are removed: those in
    /// the worktree folder or in `.harness-worktrees/` (an earlier breeze's), and those
    /// breeze marked as its own in a folder of this repository's key (a worktree folder
    /// configured before); anything else is refused.
    pub fn remove_worktree(
        &self,
        path: &Path,
        delete_branch: Option<&str>,
        force: bool,
    ) -> Result<RemoveOutcome, GitError> {
        self.remove_worktree_changed(path, delete_branch, force, WorkdirChanges::Unknown)
    }

    /// [`Repo::remove_worktree`] when the caller knows where the worktree may have changed
    /// since it last agreed with git (the lane's file-system watch): with
    /// [`WorkdirChanges::Only`] the check for work left in it looks at those paths and at
    /// its index, not at every file.
    pub fn remove_worktree_changed(
        &self,
        path: &Path,
        delete_branch: Option<&str>,
        force: bool,
        changes: WorkdirChanges<'_>,
    ) -> Result<RemoveOutcome, GitError> {
        let absolute = self.managed_path(path)?;
        let repo = self.git()?;
        let registered = repo
            .worktrees()
            .ctx(|| "could not list worktrees".to_string())?
            .iter()
            .flatten()
            .flatten()
            .filter_map(|name| repo.find_worktree(name).ok())
            .find(|wt| same_path(wt.path(), &absolute));

        // The lane's private git directory goes with it (or after it, when git forgot the
        // worktree already).
        let private = absolute.file_name().map(|name| name.to_string_lossy().into_owned());
        let Some(wt) = registered else {
            if absolute.exists() {
                return Err(GitError::NotManaged {
                    path: absolute,
                    problem: "exists but is not a registered git worktree; breeze leaves it \
                              alone, remove it yourself if it is not needed"
                        .to_string(),
                });
            }
            if let Some(name) = &private {
                self.remove_private_git(name)?;
            }
            let branch_deleted = self.delete_branch_if_free(&repo, delete_branch)?;
            return Ok(RemoveOutcome::NotFound { branch_deleted });
        };

        if absolute.exists() && !force {
            let dirty = self.work_in(&absolute, changes)?;
            if !dirty.is_empty() {
                return Ok(RemoveOutcome::KeptDirty { paths: dirty });
            }
        }
        let name = wt.name().ok().flatten().unwrap_or_default().to_string();
        self.forget(&absolute);
        self.forget(wt.path());
        let _ = wt.unlock();
        // The files go first, by the standard library: it unlinks what each listing names
        // without a `stat` per file (libgit2's removal stats every entry). Links are not
        // followed. Then git forgets the worktree.
        remove_dir_if_exists(&absolute)?;
        wt.prune(Some(WorktreePruneOptions::new().valid(true).locked(true).working_tree(true)))
            .ctx(|| format!("could not remove worktree {}", absolute.display()))?;
        if !name.is_empty() {
            remove_dir_if_exists(&self.admin_dir(&name))?;
        }
        if let Some(name) = &private {
            self.remove_private_git(name)?;
        }
        let branch_deleted = self.delete_branch_if_free(&repo, delete_branch)?;
        tracing::info!(path = %absolute.display(), branch_deleted, "removed worktree");
        Ok(RemoveOutcome::Removed { branch_deleted })
    }

    /// `path` (relative to the primary checkout, or absolute) normalized, when it is one of
    /// breeze's worktrees (see [`Repo::remove_worktree`]) both as written and resolved;
    /// else [`GitError::NotManaged`].
    fn managed_path(&self, path: &Path) -> Result<PathBuf, GitError> {
        let absolute = normalize(&if path.is_relative() {
            self.workdir.join(path)
        } else {
            path.to_path_buf()
        });
        let resolved = std::fs::canonicalize(&absolute).unwrap_or_else(|_| absolute.clone());
        let roots: Vec<PathBuf> = [self.worktree_root().ok(), Some(self.worktrees_note_dir())]
            .into_iter()
            .flatten()
            .collect();
        let inside = |p: &Path| roots.iter().any(|root| p.starts_with(root) && p != root);
        let marked_elsewhere = || resolved == absolute && self.is_marked_elsewhere(&absolute);
        if (inside(&absolute) && inside(&resolved)) || marked_elsewhere() {
            return Ok(absolute);
        }
        let shown: Vec<String> = roots.iter().map(|root| root.display().to_string()).collect();
        Err(GitError::NotManaged {
            path: path.to_path_buf(),
            problem: format!(
                "not under {}; breeze removes only worktrees it created there (use \
                 `git worktree remove` for others)",
                shown.join(" or ")
            ),
        })
    }

    /// The uncommitted or untracked paths of the worktree at `path`, which is about to be
    /// removed; one that cannot be checked is refused.
    fn work_in(&self, path: &Path, changes: WorkdirChanges<'_>) -> Result<Vec<String>, GitError> {
        let wrepo = self.handle(path).map_err(|e| GitError::NotManaged {
            path: path.to_path_buf(),
            problem: format!(
                "cannot be checked for uncommitted work ({e}); remove it with force if it \
                 holds nothing you need"
            ),
        })?;
        let dirty = self.dirty_paths_of(&wrepo, path, changes)?;
        if !dirty.is_empty() {
            // Kept for a person to look at: the index file agrees with HEAD for their git.
            crate::index_behind::settle(&wrepo, path)?;
        }
        Ok(dirty)
    }

    /// [`CheckoutTool::dirty_paths`](crate::checkout_tool::CheckoutTool::dirty_paths) under this
    /// repository's size limit and stop signal.
    ///
    /// Paths that hold their state in the lane's baseline (what breeze's own steps left
    /// there) do not count.
    pub(crate) fn dirty_paths_of(
        &self,
        wrepo: &Repository,
        path: &Path,
        changes: WorkdirChanges<'_>,
    ) -> Result<Vec<String>, GitError> {
        // The entries a commit left behind HEAD in the index file are not uncommitted work.
        self.checkout_tool()?.index_ready(wrepo, path)?;
        let baseline = self.baseline_of(path);
        self.checkout_tool()?.dirty_paths(wrepo, path, changes, &self.bounds, &baseline)
    }
}
