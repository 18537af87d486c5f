//! The links between a lane and the shared repository, checked and repaired after every
//! worker (and, without kernel confinement, after every role): the lane's `.git` file, its
//! admin folder's `commondir`, `gitdir` and `HEAD`, and what that folder holds — only
//! regular files and folders, none a link, FIFO, device or hard link to another file.
//! breeze's own git writes there (it appends to `logs/HEAD` when it commits in the lane) and
//! must not write into whatever a planted link names.
//!
//! Under Landlock no role can write the admin folder at all; the lane's `.git` file is in
//! the worker's reach either way (it is in the lane) and names the worker's private git
//! directory while it runs (`private_git.rs`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Context as _, GitError};
use crate::names::{branch_ref, symbolic_target, validate_worktree_name};
use crate::paths::same_path;
use crate::repo::Repo;
use crate::untrusted::{kind_of, read_small, remove_entry, replace_file};
use crate::worktree::Worktree;

/// At most this many entries of an admin folder are looked at (git keeps a handful).
const ADMIN_ENTRY_LIMIT: usize = 10_000;

/// Removes from the admin folder `admin` (recursively) every entry that is not a regular
/// file or a folder, and every regular file that has other hard links; describes each into
/// `problems` (`shown` names the folder) and returns their paths relative to `admin`.
fn clear_admin_folder(
    admin: &Path,
    shown: &str,
    problems: &mut Vec<String>,
) -> Result<Vec<PathBuf>, GitError> {
    let mut removed = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0;
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(admin.join(&rel)) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > ADMIN_ENTRY_LIMIT {
                problems.push(format!(
                    "{shown} holds more than {ADMIN_ENTRY_LIMIT} entries; only the first were checked"
                ));
                return Ok(removed);
            }
            let rel = rel.join(entry.file_name());
            let path = admin.join(&rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let what = if meta.is_dir() {
                stack.push(rel);
                continue;
            } else if meta.is_file() && meta.nlink() <= 1 {
                continue;
            } else if meta.is_file() {
                format!("a hard link to another file ({} links)", meta.nlink())
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                format!("a symbolic link to `{}`", target.display())
            } else {
                kind_of(meta.file_type()).to_string()
            };
            remove_entry(&path)?;
            problems.push(format!("`{}` in {shown} was {what}; removed", rel.display()));
            removed.push(rel);
        }
    }
    Ok(removed)
}

impl Repo {
    /// The lane's admin directory, `.git/worktrees/<name>`.
    pub fn lane_admin_dir(&self, wt: &Worktree) -> PathBuf {
        self.admin_dir(&wt.name)
    }

    /// What a worker in `wt` may write besides the lane itself: its private git directory
    /// ([`Repo::private_git_dir`], made by [`Repo::seal_lane`]). Nothing under the shared
    /// `.git`.
    pub fn lane_git_writable(&self, wt: &Worktree) -> Vec<PathBuf> {
        vec![self.private_git_dir(wt)]
    }

    /// Checks the links between lane `wt` and the shared repository after a role ran in it,
    /// and points the lane's `.git` back at its admin folder (undoing [`Repo::seal_lane`]):
    ///
    /// - `.git` must be a regular file naming the admin folder or the worker's private git
    ///   directory; a folder, link or anything else is moved aside as `.git.quarantined-<n>`;
    /// - the admin folder may hold only regular files and folders (a link, FIFO, device or
    ///   hard link there is removed; a removed `HEAD`, `index`, lock or marker is rewritten);
    /// - its `commondir` and `gitdir` must name the shared `.git` and the lane's `.git`, its
    ///   `HEAD` the lane's branch, and there must be no `config.worktree`.
    ///
    /// What was wrong is repaired and described; empty: all was in order.
    pub fn check_lane_links(&self, wt: &Worktree) -> Result<Vec<String>, GitError> {
        let mut problems = Vec::new();
        let admin = self.lane_admin_dir(wt);
        crate::untrusted::remove_stale_temps(&wt.path.join(".git"))?;
        self.repair_gitfile(wt, &admin, &mut problems)?;
        let removed = self.repair_admin_folder((&wt.name, &wt.path), &admin, &mut problems)?;
        let head = admin.join("HEAD");
        let wanted = branch_ref(&wt.branch);
        let named = read_small(&head).ok().flatten();
        if named.as_deref().and_then(symbolic_target) != Some(wanted.as_str()) {
            if !removed.iter().any(|path| path == Path::new("HEAD")) {
                let found = named.unwrap_or_default();
                problems.push(format!(
                    "{} was changed to `{}`",
                    head.display(),
                    found.trim().chars().take(200).collect::<String>()
                ));
            }
            replace_file(&head, format!("ref: {wanted}\n").as_bytes())?;
        }
        if !problems.is_empty() {
            self.forget(&wt.path);
        }
        if removed.iter().any(|path| path == Path::new("index")) {
            self.rebuild_index(wt)?;
        }
        Ok(problems)
    }

    /// Removes the lock files an engine killed mid-commit left for lane `wt`: its admin
    /// folder's `index.lock` and `HEAD.lock`, and its task branch's ref lock. Only the
    /// engine writes there, and only one engine runs on a repository: a lock found when a
    /// resumed run takes the lane up again is left over, not held, and without this every
    /// commit of the lane's task would fail on it. The locks removed.
    pub fn remove_left_lane_locks(&self, wt: &Worktree) -> Result<Vec<PathBuf>, GitError> {
        let admin = self.lane_admin_dir(wt);
        let mut locks = vec![admin.join("index.lock"), admin.join("HEAD.lock")];
        if !wt.branch.is_empty() {
            crate::names::validate_branch_name(&wt.branch)?;
            locks.push(self.common_dir.join(format!("refs/heads/{}.lock", wt.branch)));
        }
        let mut removed = Vec::new();
        for lock in locks {
            match std::fs::remove_file(&lock) {
                Ok(()) => removed.push(lock),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(GitError::io("remove", &lock, err)),
            }
        }
        Ok(removed)
    }

    /// Checks the admin folder of breeze's worktree `name` (a lane or the integration
    /// worktree) for what [`Repo::check_lane_links`] checks there, except HEAD: without
    /// kernel confinement any role could have written it. Repairs and describes. A folder
    /// without breeze's marker is not breeze's (a worktree of the user's that took the
    /// name) and is left alone.
    pub fn check_admin_folder(&self, name: &str) -> Result<Vec<String>, GitError> {
        let mut problems = Vec::new();
        let admin = self.admin_dir(name);
        if validate_worktree_name(name).is_err() || !admin.is_dir() || !self.has_marker(name) {
            return Ok(problems);
        }
        let path = self.worktree_root()?.join(name);
        self.repair_admin_folder((name, &path), &admin, &mut problems)?;
        if !problems.is_empty() {
            self.forget(&path);
        }
        Ok(problems)
    }

    /// `.git` in `wt` must be a regular file naming the admin folder `admin` or the lane's
    /// private git directory; anything else is described into `problems` (a folder, link or
    /// special file is moved aside first). It is left naming `admin`.
    pub(crate) fn repair_gitfile(
        &self,
        wt: &Worktree,
        admin: &Path,
        problems: &mut Vec<String>,
    ) -> Result<(), GitError> {
        let dotgit = wt.path.join(".git");
        let private = self.private_git_dir(wt);
        match std::fs::symlink_metadata(&dotgit) {
            Ok(meta) if meta.is_file() => {
                let text = read_small(&dotgit).ok().flatten().unwrap_or_default();
                let named = text.trim().strip_prefix("gitdir:").map(str::trim).unwrap_or("");
                let named = wt.path.join(named);
                if same_path(&named, admin) && meta.nlink() <= 1 {
                    return Ok(());
                }
                if !same_path(&named, &private) || meta.nlink() > 1 {
                    problems.push(format!(
                        "{} was changed to `{}`",
                        dotgit.display(),
                        text.trim().chars().take(200).collect::<String>()
                    ));
                }
            }
            Ok(meta) => {
                let aside = (1..)
                    .map(|n| wt.path.join(format!(".git.quarantined-{n}")))
                    .find(|path| std::fs::symlink_metadata(path).is_err())
                    .unwrap_or_else(|| wt.path.join(".git.quarantined"));
                problems.push(format!(
                    "{} was replaced by {} (moved aside to {})",
                    dotgit.display(),
                    kind_of(meta.file_type()),
                    aside.display()
                ));
                std::fs::rename(&dotgit, &aside)
                    .map_err(|e| GitError::io("move aside", &dotgit, e))?;
            }
            Err(_) => problems.push(format!("{} was deleted", dotgit.display())),
        }
        self.point_gitfile(wt, admin)
    }

    /// The admin-folder side of the checks (see [`Repo::check_lane_links`]) for worktree
    /// `name` at `path`, without HEAD. Returns the paths removed from the folder.
    fn repair_admin_folder(
        &self,
        (name, path): (&str, &Path),
        admin: &Path,
        problems: &mut Vec<String>,
    ) -> Result<Vec<PathBuf>, GitError> {
        let shown = format!("the admin folder of {name} ({})", admin.display());
        let removed = clear_admin_folder(admin, &shown, problems)?;
        let dotgit = path.join(".git");
        for (file, target) in [("commondir", self.common_dir.clone()), ("gitdir", dotgit.clone())] {
            let path = admin.join(file);
            let named = match read_small(&path) {
                Ok(text) => text.unwrap_or_default().trim().to_string(),
                Err(e) => e.to_string(),
            };
            if named.is_empty() || !same_path(&admin.join(&named), &target) {
                if !removed.iter().any(|p| p == Path::new(file)) {
                    problems.push(format!("{} was changed to `{named}`", path.display()));
                }
                let value = if file == "commondir" {
                    // What git writes: relative to the admin folder.
                    "../..".to_string()
                } else {
                    target.display().to_string()
                };
                if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
                    remove_entry(&path)?;
                }
                replace_file(&path, format!("{value}\n").as_bytes())?;
            }
        }
        let worktree_config = admin.join("config.worktree");
        if std::fs::symlink_metadata(&worktree_config).is_ok() {
            problems.push(format!("{} was created", worktree_config.display()));
            remove_entry(&worktree_config)?;
        }
        // A removed lock or marker is put back: the worktree stays locked and breeze's.
        for (file, text) in [
            ("locked", "breeze worktree (repaired)"),
            (crate::names::CREATED_MARKER, "created by breeze\n"),
        ] {
            if removed.iter().any(|p| p == Path::new(file)) {
                replace_file(&admin.join(file), text.as_bytes())?;
            }
        }
        Ok(removed)
    }

    /// Writes lane `wt`'s index afresh from its HEAD (after a planted one was removed): the
    /// files stay as they are, and what differs from HEAD is what the next commit stages.
    fn rebuild_index(&self, wt: &Worktree) -> Result<(), GitError> {
        let mut wrepo = self.handle(&wt.path)?;
        wrepo.set_keep(false);
        let tree = wrepo
            .head()
            .and_then(|head| head.peel_to_tree())
            .ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        let mut index =
            wrepo.index().ctx(|| format!("could not read the index of {}", wt.path.display()))?;
        crate::index_tree::forget(&index);
        index
            .read_tree(&tree)
            .and_then(|()| index.write())
            .ctx(|| format!("could not rebuild the index of {}", wt.path.display()))?;
        Ok(())
    }
}
