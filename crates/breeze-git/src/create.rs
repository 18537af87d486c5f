//! Creating worktrees in the worktree folder (`worktree_root.rs`): idempotent (a complete worktree on the
//! requested branch is returned as it is), replacing only what an interrupted add left,
//! and rolled back completely on failure (no admin directory, no directory, no branch the
//! add created). breeze registers a worktree itself (admin folder, `.git` file), the way
//! `git worktree add --no-checkout` does; who then checks the files out (libgit2 or
//! `git read-tree`) is decided in `checkout_tool.rs`.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, WorktreePruneOptions};

use crate::error::{Context as _, GitError};
use crate::names::{branch_ref, symbolic_target, validate_branch_name, validate_worktree_name};
use crate::paths::{path_string, remove_dir_if_exists, same_path};
use crate::repo::Repo;
use crate::untrusted::replace_file;
use crate::worktree::Worktree;
use crate::worktree_root;

/// A directory left by an interrupted add: empty, or only a `.git` file.
fn is_leftover_dir(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    let entries: Vec<_> = entries.flatten().collect();
    entries.iter().all(|entry| {
        entry.file_name() == ".git" && entry.file_type().map(|t| t.is_file()).unwrap_or(false)
    })
}

impl Repo {
    /// Creates worktree `name` at `<worktree folder>/<name>` ([`Repo::worktree_root`]) on
    /// a new branch `branch` at `base`, locked with `lock_reason`.
    ///
    /// Idempotent: when that worktree already exists, complete and on `branch`, it is
    /// returned as it is. A failed add leaves nothing behind (no admin directory, no
    /// directory, no branch it created). Large trees (see [`crate::OpenOptions`]) and
    /// repositories with external filters are checked out by the `git` CLI.
    pub fn create_worktree(
        &self,
        name: &str,
        branch: &str,
        base: Oid,
        lock_reason: &str,
    ) -> Result<Worktree, GitError> {
        self.add_worktree(name, branch, Some(base), lock_reason)
    }

    /// Like [`Repo::create_worktree`], but checks out the existing branch `branch` at its
    /// tip (a task that already has work, e.g. on resume after its lane worktree was lost).
    /// The returned `base` is where the branch left main (their merge base).
    pub fn create_worktree_on_branch(
        &self,
        name: &str,
        branch: &str,
        lock_reason: &str,
    ) -> Result<Worktree, GitError> {
        self.add_worktree(name, branch, None, lock_reason)
    }

    /// `base: Some` creates `branch` there; `None` uses the existing branch.
    fn add_worktree(
        &self,
        name: &str,
        branch: &str,
        base: Option<Oid>,
        lock_reason: &str,
    ) -> Result<Worktree, GitError> {
        validate_worktree_name(name)?;
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let refname = branch_ref(branch);
        let new_branch = base.is_some();
        let base = match base {
            Some(base) => {
                repo.find_commit(base)
                    .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?;
                base
            }
            None => {
                let tip = self.existing_branch_tip(&repo, branch)?;
                self.task_base(&repo, tip)
            }
        };
        let root = self.worktree_root()?;
        let path = root.join(name);
        let worktree = Worktree {
            name: name.to_string(),
            path: path.clone(),
            branch: branch.to_string(),
            base,
        };

        self.ensure_excluded()?;
        self.ensure_dirs(&root)?;
        if self.clear_way_for(&repo, name, &path, Some(&refname))? {
            tracing::debug!(worktree = name, "worktree already exists");
            return Ok(worktree);
        }

        self.forget(&path);
        let created_branch = if new_branch {
            self.ensure_branch_at(&repo, branch, base)?
        } else {
            self.ensure_not_checked_out(&repo, branch)?;
            false
        };
        // A new worktree of this name starts without what an earlier one left on record.
        self.forget_baseline(name)?;
        let finished = self
            .register_worktree(name, &path, &format!("ref: {refname}"), lock_reason)
            .and_then(|()| self.check_out_registered(&repo, &path))
            .and_then(|()| self.write_marker(name));
        if let Err(e) = finished {
            self.rollback_add(&repo, name, &path, created_branch.then_some(branch));
            return Err(e);
        }
        tracing::info!(worktree = name, branch, %base, "created worktree");
        Ok(worktree)
    }

    /// The worktree folder ([`Repo::worktree_root`]), made when missing, recorded in
    /// `.breeze/worktree-root` and named by `.harness-worktrees/README`: what making a
    /// worktree does first, and what a run does at its start, so that the note is there
    /// before any lane is.
    pub fn prepare_worktree_folder(&self) -> Result<PathBuf, GitError> {
        let root = self.worktree_root()?;
        worktree_root::prepare(&root, &self.workdir)?;
        Ok(root)
    }

    /// Creates the worktree folder (recorded, and named by the checkout's note: see
    /// [`Repo::prepare_worktree_folder`]) and `.git/worktrees`: libgit2 creates the latter
    /// with a check-then-create that fails when two worktrees are added at the same time.
    pub(crate) fn ensure_dirs(&self, root: &Path) -> Result<(), GitError> {
        worktree_root::prepare(root, &self.workdir)?;
        let admins = self.common_dir.join("worktrees");
        std::fs::create_dir_all(&admins).map_err(|e| GitError::io("create directory", &admins, e))
    }

    /// Makes the worktree's name and path free: retires a worktree of that name breeze
    /// made elsewhere (`elsewhere.rs`), prunes stale registrations, removes leftovers of
    /// interrupted adds, refuses anything else. Returns an existing complete worktree on
    /// `refname` (detached when `None`) when there is one: `Ok(true)`, the idempotent case.
    pub(crate) fn clear_way_for(
        &self,
        repo: &Repository,
        name: &str,
        path: &Path,
        refname: Option<&str>,
    ) -> Result<bool, GitError> {
        let elsewhere = repo
            .find_worktree(name)
            .ok()
            .map(|existing| existing.path().to_path_buf())
            .filter(|at| !same_path(at, path) && self.has_marker(name));
        if let Some(at) = elsewhere {
            self.retire_in_the_way(name, &at)?;
        }
        if let Ok(existing) = repo.find_worktree(name) {
            if existing.validate().is_ok()
                && self.is_the_requested(&existing, name, path, refname)?
            {
                return Ok(true);
            }
            // Stale (its directory is gone) or an interrupted add: drop it entirely.
            let _ = existing.unlock();
            existing
                .prune(Some(
                    WorktreePruneOptions::new().valid(true).locked(true).working_tree(true),
                ))
                .ctx(|| format!("could not prune the stale worktree `{name}`"))?;
            remove_dir_if_exists(&self.admin_dir(name))?;
        }
        if path.exists() {
            if is_leftover_dir(path) {
                remove_dir_if_exists(path)?;
            } else {
                return Err(GitError::WorktreeConflict {
                    name: name.to_string(),
                    path: path.to_path_buf(),
                    problem: "the directory exists and is not a git worktree; move it away \
                              (breeze never deletes what it did not create)"
                        .to_string(),
                });
            }
        }
        Ok(false)
    }

    /// Removes the checkout `name` at `path` when a repository deleted and made again at
    /// this path left it ([`Repo::is_orphaned_checkout`]). Only for breeze's detached
    /// checkouts (review, advice, integration): breeze rewrites them for each task and no
    /// one's work is in them. Lanes are never removed this way: a new lane takes another
    /// name, and `breeze clean --force` removes the old one. On every review's way: while
    /// the checkout is registered, this is one `stat` of its admin folder.
    pub(crate) fn remove_orphaned_checkout(&self, path: &Path) -> Result<(), GitError> {
        if !self.is_orphaned_checkout(path) {
            return Ok(());
        }
        tracing::warn!(
            checkout = %path.display(),
            "removing a checkout an earlier repository at this path left"
        );
        remove_dir_if_exists(path)
    }

    /// Whether the folder at `path` is a checkout a repository deleted and made again at
    /// this repository's path left behind: its `.git` file names this repository's admin
    /// folder of the folder's name, and that admin folder is gone (git knows no such
    /// worktree: libgit2 finds a worktree by that folder).
    pub fn is_orphaned_checkout(&self, path: &Path) -> bool {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { return false };
        let admin = self.admin_dir(name);
        if std::fs::symlink_metadata(&admin).is_ok() {
            return false;
        }
        // A link is never followed into: only a folder of the worktree folder is looked at.
        if !std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
            return false;
        }
        let Some(gitdir) = crate::untrusted::gitfile_target(path) else { return false };
        // The admin folder is gone, so compare its name and its (existing) parent folder.
        gitdir.file_name() == admin.file_name()
            && matches!((gitdir.parent(), admin.parent()), (Some(a), Some(b)) if same_path(a, b))
    }

    /// Judges the valid registered worktree `existing` named `name`: `Ok(true)` when it is
    /// breeze's complete worktree at `path` on `refname` (detached when `None`), `Ok(false)`
    /// when it is an interrupted add holding nothing but checkout output (to be replaced);
    /// anything else is refused.
    fn is_the_requested(
        &self,
        existing: &git2::Worktree,
        name: &str,
        path: &Path,
        refname: Option<&str>,
    ) -> Result<bool, GitError> {
        let conflict = |problem: String| GitError::WorktreeConflict {
            name: name.to_string(),
            path: path.to_path_buf(),
            problem,
        };
        let registered_path = existing.path();
        let head = self.admin_head(name);
        let head_ref = symbolic_target(&head);
        let on_requested = match refname {
            Some(refname) => head_ref == Some(refname),
            None => head_ref.is_none(),
        };
        if !same_path(registered_path, path) {
            return Err(conflict(format!(
                "a worktree with this name is registered at {}; remove it with \
                 `git worktree remove {}` or pick another name",
                registered_path.display(),
                registered_path.display()
            )));
        }
        if self.has_marker(name) {
            if on_requested {
                return Ok(true);
            }
            return Err(conflict(format!(
                "it exists but has `{}` checked out instead of `{}`; move it with \
                 `move_worktree` or remove it first",
                head_ref.unwrap_or("a detached HEAD"),
                refname.unwrap_or("a detached HEAD")
            )));
        }
        // Registered, not marked complete: an add interrupted by a crash, unless it holds
        // work (someone else's worktree). Only an untouched one is replaced.
        if !(on_requested && self.holds_only_checkout_output(path)?) {
            return Err(conflict(
                "a worktree breeze did not create is registered there; remove it with \
                 `git worktree remove` (after saving its work) or pick another name"
                    .to_string(),
            ));
        }
        tracing::info!(worktree = name, "replacing an interrupted worktree add");
        Ok(false)
    }

    /// Whether a worktree holds nothing but (part of) the checkout of its HEAD: every file
    /// present is tracked and unchanged, or untracked with exactly the content HEAD has at
    /// that path (written before the crash, index not yet written). Anything else is work.
    fn holds_only_checkout_output(&self, path: &Path) -> Result<bool, GitError> {
        let mut wrepo = self.handle(path)?;
        wrepo.set_keep(false);
        let Ok(head_tree) = wrepo.head().and_then(|h| h.peel_to_tree()) else {
            return Ok(false);
        };
        let statuses = wrepo
            .statuses(Some(
                git2::StatusOptions::new().include_untracked(true).recurse_untracked_dirs(true),
            ))
            .ctx(|| format!("could not read the status of {}", path.display()))?;
        let harmless =
            git2::Status::INDEX_DELETED | git2::Status::WT_DELETED | git2::Status::WT_NEW;
        for entry in statuses.iter() {
            let status = entry.status();
            if !harmless.contains(status) {
                return Ok(false);
            }
            if status.contains(git2::Status::WT_NEW) {
                let rel = path_string(entry.path_bytes());
                let Ok(tree_entry) = head_tree.get_path(Path::new(&rel)) else {
                    return Ok(false);
                };
                let on_disk = Oid::hash_file(git2::ObjectType::Blob, path.join(&rel));
                if on_disk.ok() != Some(tree_entry.id()) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Registers linked worktree `name` at `path` as `git worktree add --no-checkout` does:
    /// its admin folder `.git/worktrees/<name>` with `commondir`, `gitdir`, `HEAD` (`head`:
    /// `ref: refs/heads/<branch>`, or a commit id for a detached one) and `locked` (with
    /// `lock_reason`), and the folder `path` with its `.git` file naming the admin folder.
    /// Neither may exist yet ([`Repo::clear_way_for`] made sure).
    ///
    /// Not libgit2's `git_worktree_add`: it asks `git_branch_is_checked_out`, which opens
    /// every other worktree through its `.git` file — a file in reach of that lane's worker
    /// (and naming the worker's private git directory while it runs). breeze checks that
    /// the branch is free from the admin folders' HEAD files instead.
    pub(crate) fn register_worktree(
        &self,
        name: &str,
        path: &Path,
        head: &str,
        lock_reason: &str,
    ) -> Result<(), GitError> {
        let admin = self.admin_dir(name);
        std::fs::create_dir(&admin).map_err(|e| GitError::io("create directory", &admin, e))?;
        let gitdir = format!("{}\n", path.join(".git").display());
        let head = format!("{head}\n");
        for (file, text) in [
            // Locked first: a crash half-way leaves a locked admin folder without breeze's
            // marker, which the next add replaces.
            ("locked", lock_reason),
            ("commondir", "../..\n"),
            ("gitdir", gitdir.as_str()),
            ("HEAD", head.as_str()),
        ] {
            replace_file(&admin.join(file), text.as_bytes())?;
        }
        std::fs::create_dir(path).map_err(|e| GitError::io("create directory", path, e))?;
        replace_file(&path.join(".git"), format!("gitdir: {}\n", admin.display()).as_bytes())
    }

    /// Checks the files of the worktree just registered at `path` out (see
    /// [`crate::checkout_tool::CheckoutTool::check_out_new`]), from the primary checkout `repo`.
    pub(crate) fn check_out_registered(
        &self,
        repo: &Repository,
        path: &Path,
    ) -> Result<(), GitError> {
        let mut wrepo = self.handle(path)?;
        wrepo.set_keep(false);
        self.checkout_tool()?.check_out_new(repo, &self.workdir, &wrepo, path, &self.bounds.stop)
    }

    /// Removes everything a failed or interrupted add may have left: the admin directory, the
    /// worktree directory (which did not exist before the add) and the branch if it was
    /// created for the add.
    pub(crate) fn rollback_add(
        &self,
        repo: &Repository,
        name: &str,
        path: &Path,
        created_branch: Option<&str>,
    ) {
        // The admin directory is ours unless it records another worktree's path.
        let admin = self.admin_dir(name);
        let recorded = std::fs::read_to_string(admin.join("gitdir")).ok();
        let foreign =
            recorded.is_some_and(|gitdir| !same_path(Path::new(gitdir.trim()), &path.join(".git")));
        if !foreign && let Err(e) = remove_dir_if_exists(&admin) {
            tracing::warn!(error = %e, "rollback of worktree add");
        }
        if let Err(e) = remove_dir_if_exists(path) {
            tracing::warn!(error = %e, "rollback of worktree add");
        }
        if let Some(branch) = created_branch {
            self.delete_branch_quietly(repo, branch);
        }
    }
}
