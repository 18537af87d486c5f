//! Task and lane worktrees under `.harness-worktrees/`: create (idempotent, rolled back on
//! failure), move to a new base touching only differing paths, list, remove, and the
//! detached integration worktree used by `land.verify`.

use std::path::{Component, Path, PathBuf};

use git2::{
    BranchType, ErrorCode, Oid, Repository, WorktreeAddOptions, WorktreeLockStatus,
    WorktreePruneOptions,
};

use crate::checkout::{self, Mode};
use crate::cli;
use crate::error::{Context as _, GitError};
use crate::repo::{Repo, ensure_clean_state};

/// Name of the detached worktree in which `land.verify` runs.
pub const INTEGRATION_WORKTREE: &str = "integration";

/// File breeze writes into a worktree's admin directory (`.git/worktrees/<name>/`) once the
/// worktree is complete; git ignores unknown files there and deletes it with the worktree.
const CREATED_MARKER: &str = "breeze-created";

/// A worktree breeze created and hands to a worker (or to the verify command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Flat name, also the directory name under `.harness-worktrees/` (`task-<slug>`, `lane-1`).
    pub name: String,
    /// Absolute path of the worktree.
    pub path: PathBuf,
    /// Branch checked out in it, without `refs/heads/` (`task/<slug>`).
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
    /// It lives under `.harness-worktrees/` (breeze only ever touches those, and only the
    /// ones its journal says it created).
    pub under_breeze_root: bool,
    /// breeze finished creating it (its admin directory carries breeze's marker).
    pub created_by_breeze: bool,
}

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

/// Checks a worktree name: a single safe path component.
pub(crate) fn validate_worktree_name(name: &str) -> Result<(), GitError> {
    let bad = |reason: &str| GitError::InvalidName {
        what: "worktree name",
        name: name.to_string(),
        reason: format!(
            "{reason}; use letters, digits, `.`, `_` and `-` only (for example \
             `task-<slug>` with `breeze_git::slug`)"
        ),
    };
    if name.is_empty() || name.len() > 100 {
        return Err(bad("it must be 1 to 100 bytes long"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(bad("it contains a character that is not allowed"));
    }
    if name.starts_with(['.', '-']) || name.contains("..") || name.ends_with(".lock") {
        return Err(bad("it may not start with `.` or `-`, contain `..` or end in `.lock`"));
    }
    Ok(())
}

/// Checks a local branch name (without `refs/heads/`).
pub(crate) fn validate_branch_name(branch: &str) -> Result<(), GitError> {
    if branch.starts_with('-')
        || branch == "HEAD"
        || !git2::Reference::is_valid_name(&format!("refs/heads/{branch}"))
    {
        return Err(GitError::InvalidName {
            what: "branch name",
            name: branch.to_string(),
            reason: "it is not a valid git branch name (see `git check-ref-format --branch`); \
                     use `task/<slug>` with `breeze_git::slug`"
                .to_string(),
        });
    }
    Ok(())
}

/// Removes `.` and `..` lexically (no file-system access), so a path cannot sneak out of a
/// directory with `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Same file-system object, or the same normalized path when one side does not exist.
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => normalize(a) == normalize(b),
    }
}

fn remove_dir_if_exists(path: &Path) -> Result<(), GitError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove directory", path, e)),
    }
}

/// A directory left by an interrupted `git worktree add`: empty, or only a `.git` file.
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
    /// The admin directory of linked worktree `name`.
    fn admin_dir(&self, name: &str) -> PathBuf {
        self.common_dir.join("worktrees").join(name)
    }

    fn has_marker(&self, name: &str) -> bool {
        self.admin_dir(name).join(CREATED_MARKER).is_file()
    }

    fn write_marker(&self, name: &str) -> Result<(), GitError> {
        let marker = self.admin_dir(name).join(CREATED_MARKER);
        std::fs::write(&marker, b"created by breeze\n")
            .map_err(|e| GitError::io("write", &marker, e))
    }

    /// Creates the worktree root and `.git/worktrees`: libgit2 creates the latter with a
    /// check-then-create that fails when two worktrees are added at the same time.
    fn ensure_dirs(&self, root: &Path) -> Result<(), GitError> {
        for dir in [root.to_path_buf(), self.common_dir.join("worktrees")] {
            std::fs::create_dir_all(&dir).map_err(|e| GitError::io("create directory", &dir, e))?;
        }
        Ok(())
    }

    /// Whether fresh checkouts should go through `git worktree add`.
    fn use_cli_for_full_checkout(&self, repo: &Repository) -> bool {
        if self.external_filters.is_some() {
            return true;
        }
        if self.git_cli().is_err() {
            return false;
        }
        if self.cli_checkout_min_files == 0 {
            return true;
        }
        crate::repo::fresh_index(repo, &self.workdir)
            .map(|index| index.len() >= self.cli_checkout_min_files)
            .unwrap_or(false)
    }

    /// `git worktree add -q [flags] <path> <what>` from the primary checkout.
    fn cli_worktree_add(
        &self,
        path: &Path,
        flags: &[&str],
        what: &str,
        action: &'static str,
    ) -> Result<(), GitError> {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["worktree".as_ref(), "add".as_ref(), "-q".as_ref()];
        args.extend(flags.iter().map(|flag| std::ffi::OsStr::new(*flag)));
        args.push(path.as_os_str());
        args.push(what.as_ref());
        cli::run(&self.workdir, args, action).map(|_| ())
    }

    /// The checkout whose HEAD names `refname`, if any (primary checkout or linked worktree).
    pub(crate) fn checkout_of_branch(&self, repo: &Repository, refname: &str) -> Option<PathBuf> {
        self.checkouts_of_branch(repo, refname).into_iter().next()
    }

    /// Every checkout whose HEAD names `refname`. Reads the HEAD files directly, so a
    /// worktree whose directory went missing still counts (git treats it so too).
    pub(crate) fn checkouts_of_branch(&self, repo: &Repository, refname: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let names_ref = |head_file: &Path| {
            std::fs::read_to_string(head_file)
                .map(|text| text.trim().strip_prefix("ref:").map(str::trim) == Some(refname))
                .unwrap_or(false)
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

    /// Creates `branch` at `base`, or accepts it when it already points there and is not
    /// checked out. Returns whether it was created (so a rollback knows to delete it).
    fn ensure_branch_at(
        &self,
        repo: &Repository,
        branch: &str,
        base: Oid,
    ) -> Result<bool, GitError> {
        let refname = format!("refs/heads/{branch}");
        match repo.refname_to_id(&refname) {
            Ok(actual) if actual == base => {
                if let Some(path) = self.checkout_of_branch(repo, &refname) {
                    return Err(GitError::BranchCheckedOut { branch: branch.to_string(), path });
                }
                Ok(false)
            }
            Ok(actual) => {
                Err(GitError::BranchExists { branch: branch.to_string(), actual, expected: base })
            }
            Err(e) if e.code() == ErrorCode::NotFound => {
                let commit = repo
                    .find_commit(base)
                    .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?;
                repo.branch(branch, &commit, false)
                    .ctx(|| format!("could not create branch `{branch}` at {base}"))?;
                Ok(true)
            }
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    fn delete_branch_quietly(&self, repo: &Repository, branch: &str) {
        if let Ok(mut b) = repo.find_branch(branch, BranchType::Local)
            && let Err(e) = b.delete()
        {
            tracing::warn!(branch, error = %e, "could not delete branch during rollback");
        }
    }

    /// Removes everything a failed or interrupted add may have left: the admin directory, the
    /// worktree directory (which did not exist before the add) and the branch if it was
    /// created for the add.
    fn rollback_add(
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

    /// Makes the worktree's name and path free: prunes stale registrations, removes
    /// leftovers of interrupted adds, refuses anything else. Returns an existing complete
    /// worktree on `refname` (detached when `None`) when there is one: `Ok(true)`, the
    /// idempotent case.
    fn clear_way_for(
        &self,
        repo: &Repository,
        name: &str,
        path: &Path,
        refname: Option<&str>,
    ) -> Result<bool, GitError> {
        if let Ok(existing) = repo.find_worktree(name) {
            let registered_path = existing.path().to_path_buf();
            if existing.validate().is_ok() {
                let head =
                    std::fs::read_to_string(self.admin_dir(name).join("HEAD")).unwrap_or_default();
                let head_ref = head.trim().strip_prefix("ref:").map(str::trim);
                let on_requested = match refname {
                    Some(refname) => head_ref == Some(refname),
                    None => head_ref.is_none(),
                };
                if !same_path(&registered_path, path) {
                    return Err(GitError::WorktreeConflict {
                        name: name.to_string(),
                        path: path.to_path_buf(),
                        problem: format!(
                            "a worktree with this name is registered at {}; remove it with \
                             `git worktree remove {}` or pick another name",
                            registered_path.display(),
                            registered_path.display()
                        ),
                    });
                }
                if self.has_marker(name) {
                    if on_requested {
                        return Ok(true);
                    }
                    return Err(GitError::WorktreeConflict {
                        name: name.to_string(),
                        path: path.to_path_buf(),
                        problem: format!(
                            "it exists but has `{}` checked out instead of `{}`; move it with \
                             `move_worktree` or remove it first",
                            head_ref.unwrap_or("a detached HEAD"),
                            refname.unwrap_or("a detached HEAD")
                        ),
                    });
                }
                // Registered, not marked complete: an add interrupted by a crash, unless it
                // holds work (someone else's worktree). Only an untouched one is replaced.
                if !(on_requested && self.holds_only_checkout_output(path)?) {
                    return Err(GitError::WorktreeConflict {
                        name: name.to_string(),
                        path: path.to_path_buf(),
                        problem: "a worktree breeze did not create is registered there; \
                                  remove it with `git worktree remove` (after saving its work) \
                                  or pick another name"
                            .to_string(),
                    });
                }
                tracing::info!(worktree = name, "replacing an interrupted worktree add");
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

    /// Whether a worktree holds nothing but (part of) the checkout of its HEAD: every file
    /// present is tracked and unchanged, or untracked with exactly the content HEAD has at
    /// that path (written before the crash, index not yet written). Anything else is work.
    fn holds_only_checkout_output(&self, path: &Path) -> Result<bool, GitError> {
        let wrepo =
            Repository::open(path).ctx(|| format!("could not open worktree {}", path.display()))?;
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
                let rel = checkout::path_string(entry.path_bytes());
                let Ok(tree_entry) = head_tree.get_path(Path::new(&rel)) else {
                    return Ok(false);
                };
                let on_disk = git2::Oid::hash_file(git2::ObjectType::Blob, path.join(&rel));
                if on_disk.ok() != Some(tree_entry.id()) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Creates worktree `name` at `.harness-worktrees/<name>` on a new branch `branch` at
    /// `base`, locked with `lock_reason`.
    ///
    /// Idempotent: when that worktree already exists, complete and on `branch`, it is
    /// returned as it is. A failed add leaves nothing behind (no admin directory, no
    /// directory, no branch it created). Large trees (see [`crate::OpenOptions`]) and
    /// repositories with external filters are checked out by `git worktree add`.
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
        let refname = format!("refs/heads/{branch}");
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
        let root = self.worktree_root();
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
            if let Some(elsewhere) = self.checkout_of_branch(&repo, &refname) {
                return Err(GitError::BranchCheckedOut {
                    branch: branch.to_string(),
                    path: elsewhere,
                });
            }
            false
        };
        let added = if self.use_cli_for_full_checkout(&repo) {
            self.cli_worktree_add(&path, &[], branch, "check out a worktree")
        } else {
            repo.find_reference(&refname)
                .and_then(|reference| {
                    let mut options = WorktreeAddOptions::new();
                    options.reference(Some(&reference));
                    let _serial = self
                        .worktree_add_lock
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    repo.worktree(name, &path, Some(&options)).map(|_| ())
                })
                .ctx(|| format!("could not create worktree {} on `{branch}`", path.display()))
        };
        let finished = added
            .and_then(|()| self.check_admin_name(&repo, name, &path))
            .and_then(|()| self.lock_worktree(&repo, name, lock_reason))
            .and_then(|()| self.write_marker(name));
        if let Err(e) = finished {
            self.rollback_add(&repo, name, &path, created_branch.then_some(branch));
            return Err(e);
        }
        tracing::info!(worktree = name, branch, %base, "created worktree");
        Ok(worktree)
    }

    /// The tip of an existing local branch, or [`GitError::NoSuchBranch`].
    fn existing_branch_tip(&self, repo: &Repository, branch: &str) -> Result<Oid, GitError> {
        match repo.refname_to_id(&format!("refs/heads/{branch}")) {
            Ok(tip) => Ok(tip),
            Err(e) if e.code() == ErrorCode::NotFound => {
                Err(GitError::NoSuchBranch { branch: branch.to_string() })
            }
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Where a task branch left main: the merge base of its tip and the main tip (the tip
    /// itself when there is none).
    fn task_base(&self, repo: &Repository, tip: Oid) -> Oid {
        repo.refname_to_id(&self.main_ref())
            .and_then(|main| repo.merge_base(main, tip))
            .unwrap_or(tip)
    }

    /// `git worktree add` names the admin directory after the path's last component, adding
    /// a number when that name is taken; breeze relies on it being exactly `name`.
    fn check_admin_name(&self, repo: &Repository, name: &str, path: &Path) -> Result<(), GitError> {
        let registered =
            repo.find_worktree(name).map(|wt| same_path(wt.path(), path)).unwrap_or(false);
        if registered {
            return Ok(());
        }
        // Undo git's registration under the other name; the caller's rollback does the rest.
        if let Ok(names) = repo.worktrees() {
            for other in names.iter().flatten().flatten() {
                if let Ok(wt) = repo.find_worktree(other)
                    && same_path(wt.path(), path)
                {
                    let _ = wt.unlock();
                    let _ = wt.prune(Some(
                        WorktreePruneOptions::new().valid(true).locked(true).working_tree(true),
                    ));
                }
            }
        }
        Err(GitError::WorktreeConflict {
            name: name.to_string(),
            path: path.to_path_buf(),
            problem: format!(
                "git registered it under another name because `.git/worktrees/{name}` is taken; \
                 run `git worktree prune` and try again"
            ),
        })
    }

    fn lock_worktree(&self, repo: &Repository, name: &str, reason: &str) -> Result<(), GitError> {
        let wt = repo.find_worktree(name).ctx(|| format!("could not find worktree `{name}`"))?;
        match wt.is_locked() {
            Ok(WorktreeLockStatus::Locked(_)) => Ok(()),
            _ => wt.lock(Some(reason)).ctx(|| format!("could not lock worktree `{name}`")),
        }
    }

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
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let moved = self.move_in(&repo, &wrepo, wt, branch, base)?;
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
    ) -> Result<Worktree, GitError> {
        let base_commit = repo
            .find_commit(base)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?;
        ensure_clean_state(wrepo, &wt.path)?;
        let moved = Worktree { base, branch: branch.to_string(), ..wt.clone() };
        let refname = format!("refs/heads/{branch}");

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
        let dirty = checkout::dirty_paths(wrepo, &wt.path, self.external_filters.is_some())?;
        if !dirty.is_empty() {
            return Err(GitError::Dirty { path: wt.path.clone(), paths: dirty });
        }
        let head_tree = head
            .peel_to_tree()
            .ctx(|| format!("could not read the tree of HEAD in {}", wt.path.display()))?;
        let base_tree = base_commit.tree().ctx(|| format!("could not read the tree of {base}"))?;

        let created_branch = self.ensure_branch_at(repo, branch, base)?;
        let rollback = |e: GitError| {
            if created_branch {
                self.delete_branch_quietly(repo, branch);
            }
            e
        };
        if self.external_filters.is_some() {
            // `git checkout` writes only differing files and runs the filters.
            cli::run(&wt.path, ["checkout", "-q", branch], "check out a worktree")
                .map_err(rollback)?;
            return Ok(moved);
        }
        let touched = checkout::tree_diff_paths(wrepo, &head_tree, &base_tree).map_err(rollback)?;
        if let Err(conflicts) =
            checkout::checkout_paths(wrepo, &base_tree, &touched, Mode::Safe, &wt.path)
                .map_err(rollback)?
        {
            return Err(rollback(GitError::Dirty { path: wt.path.clone(), paths: conflicts }));
        }
        wrepo
            .set_head(&refname)
            .ctx(|| format!("could not switch {} to `{branch}`", wt.path.display()))
            .map_err(rollback)?;
        tracing::info!(worktree = %wt.name, branch, %base, files = touched.len(), "moved worktree");
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
        let refname = format!("refs/heads/{branch}");
        let head = wrepo.head().ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        if head.name().ok() == Some(refname.as_str()) {
            return Ok(switched);
        }
        let dirty = checkout::dirty_paths(wrepo, &wt.path, self.external_filters.is_some())?;
        if !dirty.is_empty() {
            return Err(GitError::Dirty { path: wt.path.clone(), paths: dirty });
        }
        if let Some(elsewhere) = self.checkout_of_branch(repo, &refname) {
            return Err(GitError::BranchCheckedOut { branch: branch.to_string(), path: elsewhere });
        }
        if self.external_filters.is_some() {
            cli::run(&wt.path, ["checkout", "-q", branch], "check out a worktree")?;
            return Ok(switched);
        }
        let head_tree = head
            .peel_to_tree()
            .ctx(|| format!("could not read the tree of HEAD in {}", wt.path.display()))?;
        let tip_tree = wrepo
            .find_commit(tip)
            .and_then(|c| c.tree())
            .map_err(|_| GitError::MissingObject { what: "commit", oid: tip })?;
        let touched = checkout::tree_diff_paths(wrepo, &head_tree, &tip_tree)?;
        if let Err(conflicts) =
            checkout::checkout_paths(wrepo, &tip_tree, &touched, Mode::Safe, &wt.path)?
        {
            return Err(GitError::Dirty { path: wt.path.clone(), paths: conflicts });
        }
        wrepo
            .set_head(&refname)
            .ctx(|| format!("could not switch {} to `{branch}`", wt.path.display()))?;
        tracing::info!(worktree = %wt.name, branch, files = touched.len(), "switched worktree");
        Ok(switched)
    }

    /// The worktree `name` breeze created under `.harness-worktrees/` (how resume adopts a
    /// lane), with its current branch and the base that branch left main at. `None` when
    /// there is no such worktree, its directory is gone, or breeze did not create it.
    pub fn find_worktree(&self, name: &str) -> Result<Option<Worktree>, GitError> {
        validate_worktree_name(name)?;
        let repo = self.git()?;
        let Ok(registered) = repo.find_worktree(name) else { return Ok(None) };
        let path = self.worktree_root().join(name);
        if registered.validate().is_err()
            || !same_path(registered.path(), &path)
            || !path.is_dir()
            || !self.has_marker(name)
        {
            return Ok(None);
        }
        let head = std::fs::read_to_string(self.admin_dir(name).join("HEAD")).unwrap_or_default();
        let Some(refname) = head.trim().strip_prefix("ref:").map(str::trim) else {
            return Err(GitError::WorktreeConflict {
                name: name.to_string(),
                path,
                problem: "its HEAD is detached, not on a task branch; check out the task's \
                          branch there (`git switch task/<slug>`) or remove the worktree"
                    .to_string(),
            });
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
        Ok(!checkout::dirty_paths(&handle, path, self.external_filters.is_some())?.is_empty())
    }

    /// Whether local branch `branch` exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool, GitError> {
        validate_branch_name(branch)?;
        match self.git()?.refname_to_id(&format!("refs/heads/{branch}")) {
            Ok(_) => Ok(true),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Whether everything on local branch `branch` is already on main (its tip is main's
    /// tip or one of its ancestors): deleting it then loses nothing.
    pub fn branch_is_on_main(&self, branch: &str) -> Result<bool, GitError> {
        validate_branch_name(branch)?;
        let repo = self.git()?;
        let tip = repo
            .refname_to_id(&format!("refs/heads/{branch}"))
            .ctx(|| format!("could not read branch `{branch}`"))?;
        let main = self.main_tip()?;
        Ok(tip == main
            || repo
                .graph_descendant_of(main, tip)
                .ctx(|| format!("could not compare `{branch}` with main"))?)
    }

    /// Removes a worktree breeze created under `.harness-worktrees/` (directory and admin
    /// data), then deletes `delete_branch` when given and not checked out elsewhere.
    ///
    /// A worktree with uncommitted or untracked work is kept unless `force`; ignored files
    /// (build outputs) do not count as work. Paths outside `.harness-worktrees/` are refused.
    pub fn remove_worktree(
        &self,
        path: &Path,
        delete_branch: Option<&str>,
        force: bool,
    ) -> Result<RemoveOutcome, GitError> {
        let root = self.worktree_root();
        let absolute = normalize(&if path.is_relative() {
            self.workdir.join(path)
        } else {
            path.to_path_buf()
        });
        let resolved = std::fs::canonicalize(&absolute).unwrap_or_else(|_| absolute.clone());
        let inside = |p: &Path| p.starts_with(&root) && p != root;
        if !inside(&absolute) || !inside(&resolved) {
            return Err(GitError::NotManaged {
                path: path.to_path_buf(),
                problem: format!(
                    "not under {}; breeze removes only worktrees it created there (use \
                     `git worktree remove` for others)",
                    root.display()
                ),
            });
        }
        let repo = self.git()?;
        let registered = repo
            .worktrees()
            .ctx(|| "could not list worktrees".to_string())?
            .iter()
            .flatten()
            .flatten()
            .filter_map(|name| repo.find_worktree(name).ok())
            .find(|wt| same_path(wt.path(), &absolute));

        let Some(wt) = registered else {
            if absolute.exists() {
                return Err(GitError::NotManaged {
                    path: absolute,
                    problem: "exists but is not a registered git worktree; breeze leaves it \
                              alone, remove it yourself if it is not needed"
                        .to_string(),
                });
            }
            let branch_deleted = self.delete_branch_if_free(&repo, delete_branch)?;
            return Ok(RemoveOutcome::NotFound { branch_deleted });
        };

        if absolute.exists() && !force {
            let wrepo = self.handle(&absolute).map_err(|e| GitError::NotManaged {
                path: absolute.clone(),
                problem: format!(
                    "cannot be checked for uncommitted work ({e}); remove it with force if it \
                     holds nothing you need"
                ),
            })?;
            let dirty = checkout::dirty_paths(&wrepo, &absolute, self.external_filters.is_some())?;
            if !dirty.is_empty() {
                return Ok(RemoveOutcome::KeptDirty { paths: dirty });
            }
        }
        let name = wt.name().ok().flatten().unwrap_or_default().to_string();
        self.forget(&absolute);
        self.forget(wt.path());
        let _ = wt.unlock();
        wt.prune(Some(WorktreePruneOptions::new().valid(true).locked(true).working_tree(true)))
            .ctx(|| format!("could not remove worktree {}", absolute.display()))?;
        // libgit2 leaves the directory when it is not where the admin data says; be sure.
        remove_dir_if_exists(&absolute)?;
        if !name.is_empty() {
            remove_dir_if_exists(&self.admin_dir(&name))?;
        }
        let branch_deleted = self.delete_branch_if_free(&repo, delete_branch)?;
        tracing::info!(path = %absolute.display(), branch_deleted, "removed worktree");
        Ok(RemoveOutcome::Removed { branch_deleted })
    }

    fn delete_branch_if_free(
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

    /// The tip of local branch `branch`, `None` when it does not exist.
    pub fn branch_tip(&self, branch: &str) -> Result<Option<Oid>, GitError> {
        validate_branch_name(branch)?;
        match self.git()?.refname_to_id(&format!("refs/heads/{branch}")) {
            Ok(oid) => Ok(Some(oid)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
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
        let refname = format!("refs/heads/{branch}");
        if let Some(path) = self.checkout_of_branch(repo, &refname) {
            return Err(GitError::BranchCheckedOut { branch: branch.to_string(), path });
        }
        match repo.find_branch(branch, BranchType::Local) {
            Ok(mut b) => {
                b.delete().ctx(|| format!("could not delete branch `{branch}`"))?;
                Ok(true)
            }
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not read branch `{branch}`")),
        }
    }

    /// Every linked worktree of the repository (not the primary checkout), sorted by name.
    pub fn list_worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let repo = self.git()?;
        let root = self.worktree_root();
        let names = repo.worktrees().ctx(|| "could not list worktrees".to_string())?;
        let mut infos = Vec::new();
        for name in names.iter().flatten().flatten() {
            let Ok(wt) = repo.find_worktree(name) else { continue };
            let path = wt.path().to_path_buf();
            let head_text =
                std::fs::read_to_string(self.admin_dir(name).join("HEAD")).unwrap_or_default();
            let head_text = head_text.trim();
            let (branch, head) = match head_text.strip_prefix("ref:").map(str::trim) {
                Some(target) => (
                    Some(target.strip_prefix("refs/heads/").unwrap_or(target).to_string()),
                    repo.refname_to_id(target).ok(),
                ),
                None => (None, Oid::from_str(head_text).ok()),
            };
            let locked = match wt.is_locked() {
                Ok(WorktreeLockStatus::Locked(reason)) => Some(reason.unwrap_or_default()),
                _ => None,
            };
            let dirty = if path.is_dir() {
                self.handle(&path)
                    .ok()
                    .and_then(|wrepo| {
                        checkout::dirty_paths(&wrepo, &path, self.external_filters.is_some()).ok()
                    })
                    .map(|paths| !paths.is_empty())
            } else {
                None
            };
            let under_breeze_root = normalize(&path).starts_with(&root);
            infos.push(WorktreeInfo {
                name: name.to_string(),
                path,
                branch,
                head,
                locked,
                dirty,
                under_breeze_root,
                created_by_breeze: self.has_marker(name),
            });
        }
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(infos)
    }

    /// Puts the existing integration worktree at `commit`, discarding tracked changes and
    /// untracked files, keeping ignored ones, writing only what differs.
    fn reset_integration(
        &self,
        wrepo: &Repository,
        path: &Path,
        commit: Oid,
    ) -> Result<(), GitError> {
        if self.external_filters.is_some() {
            let sha = commit.to_string();
            cli::run(
                path,
                ["checkout", "-q", "-f", "--detach", sha.as_str()],
                "reset the integration worktree",
            )?;
            cli::run(path, ["clean", "-q", "-f", "-d"], "reset the integration worktree")?;
            return Ok(());
        }
        let head_tree = wrepo
            .head()
            .and_then(|h| h.peel_to_tree())
            .ctx(|| format!("could not read HEAD of {}", path.display()))?;
        let new_tree = wrepo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let mut touched = checkout::tree_diff_paths(wrepo, &head_tree, &new_tree)?;
        touched.extend(checkout::dirty_repo_paths(wrepo, path, false)?);
        touched.sort();
        touched.dedup();
        if let Err(conflicts) =
            checkout::checkout_paths(wrepo, &new_tree, &touched, Mode::Force, path)?
        {
            return Err(GitError::Dirty { path: path.to_path_buf(), paths: conflicts });
        }
        wrepo
            .set_head_detached(commit)
            .ctx(|| format!("could not move {} to {commit}", path.display()))
    }

    /// The integration worktree as `git commit` would see a landing about to be made: HEAD
    /// at `parent` (main's tip), and the index and files holding `tree` (the merged result),
    /// so that the repository's `pre-commit` hook finds the landing's change staged.
    pub fn integration_worktree_staged(&self, parent: Oid, tree: Oid) -> Result<PathBuf, GitError> {
        let path = self.integration_worktree(parent)?;
        let wrepo = self.handle(&path)?;
        let head_tree = commit_tree_of(&wrepo, parent)?;
        let new_tree = wrepo
            .find_tree(tree)
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        let touched = checkout::tree_diff_paths(&wrepo, &head_tree, &new_tree)?;
        if let Err(conflicts) =
            checkout::checkout_paths(&wrepo, &new_tree, &touched, Mode::Force, &path)?
        {
            return Err(GitError::Dirty { path: path.clone(), paths: conflicts });
        }
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

    /// The detached worktree `.harness-worktrees/integration` at `commit`, for running
    /// `land.verify` on a merged tree before main moves. Reused across landings: each call
    /// resets it to `commit`, discarding what the previous verify changed or left untracked
    /// (ignored build outputs stay, so builds stay warm).
    pub fn integration_worktree(&self, commit: Oid) -> Result<PathBuf, GitError> {
        let repo = self.git()?;
        let target = repo
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let root = self.worktree_root();
        let name = INTEGRATION_WORKTREE;
        let path = root.join(name);
        self.ensure_excluded()?;
        self.ensure_dirs(&root)?;

        if self.clear_way_for(&repo, name, &path, None)? {
            let mut wrepo = self.handle(&path)?;
            wrepo.set_keep(false);
            self.reset_integration(&wrepo, &path, commit)?;
            wrepo.set_keep(true);
            return Ok(path);
        }
        self.forget(&path);

        // libgit2 adds worktrees only on a branch: add on a temporary one, then detach.
        let temp_branch = format!("breeze/integration-{}", std::process::id());
        let sha = commit.to_string();
        let added = if self.use_cli_for_full_checkout(&repo) {
            self.cli_worktree_add(&path, &["--detach"], &sha, "check out the integration worktree")
        } else {
            (|| {
                let mut branch = repo.branch(&temp_branch, &target, true)?;
                let result = (|| {
                    let mut options = WorktreeAddOptions::new();
                    let reference = repo.find_reference(&format!("refs/heads/{temp_branch}"))?;
                    options.reference(Some(&reference));
                    let _serial = self
                        .worktree_add_lock
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    let wt = repo.worktree(name, &path, Some(&options))?;
                    Repository::open_from_worktree(&wt)?.set_head_detached(commit)
                })();
                branch.delete()?;
                result
            })()
            .ctx(|| format!("could not create the integration worktree {}", path.display()))
        };
        let finished = added
            .and_then(|()| self.check_admin_name(&repo, name, &path))
            .and_then(|()| {
                self.lock_worktree(&repo, name, "breeze integration worktree (land.verify)")
            })
            .and_then(|()| self.write_marker(name));
        if let Err(e) = finished {
            self.rollback_add(&repo, name, &path, None);
            self.delete_branch_quietly(&repo, &temp_branch);
            return Err(e);
        }
        Ok(path)
    }
}

fn commit_tree_of<'r>(repo: &'r Repository, oid: Oid) -> Result<git2::Tree<'r>, GitError> {
    repo.find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(|_| GitError::MissingObject { what: "commit", oid })
}
