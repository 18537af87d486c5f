//! What breeze checks that role processes did not change: the links that tie a lane to the
//! shared repository, the shared `.git` (config, hooks, info, HEAD, refs), a checkout's
//! uncommitted state, and whether main moved onto a commit made inside a lane.
//!
//! Where the kernel confines roles (Landlock), these are a second line; where it cannot,
//! they are how breeze notices that a role wrote outside its lane.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use git2::{ErrorCode, Oid, Repository, Status};

use crate::checkout::workdir_status_options;
use crate::error::{Context as _, GitError};
use crate::names::{INTEGRATION_WORKTREE, WORKTREE_ROOT};
use crate::paths::{path_string, read_gitfile, read_regular_file};
use crate::repo::Repo;
use crate::worktree::Worktree;

/// Files bigger than this are fingerprinted by size and time instead of content.
const HASHED_FILE_LIMIT: u64 = 1 << 20;

/// A fingerprint of some state: a display path (`.git/config`, `refs/heads/x`, `README.md`)
/// mapped to a value that changes when that thing changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint(BTreeMap<String, String>);

impl Fingerprint {
    /// The paths that were added, removed or changed since `before`, sorted.
    pub fn changes_since(&self, before: &Fingerprint) -> Vec<String> {
        let mut changed: Vec<String> = self
            .0
            .iter()
            .filter(|(path, value)| before.0.get(*path) != Some(*value))
            .map(|(path, _)| path.clone())
            .chain(before.0.keys().filter(|path| !self.0.contains_key(*path)).cloned())
            .collect();
        changed.sort();
        changed.dedup();
        changed
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A commit made inside a lane that main now contains without a breeze landing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneCommitOnMain {
    /// The commit main now contains.
    pub commit: Oid,
    /// Where it came from: `task/<slug>` or a lane's HEAD (`.harness-worktrees/lane-1`).
    pub source: String,
    /// main's tip now.
    pub main: Oid,
}

/// The fingerprint of one file: its content hash for small files, else size and time;
/// `missing` when it is not there, `link:<target>` for a symbolic link.
fn file_print(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return "missing".into() };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return format!("link:{}", target.display());
    }
    if meta.is_dir() {
        return "dir".into();
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode();
    // Only a regular file is read, and no more than the limit even if it grew meanwhile:
    // a FIFO a role left would block the read forever.
    if meta.len() <= HASHED_FILE_LIMIT
        && let Ok(Some(bytes)) = read_regular_file(path, HASHED_FILE_LIMIT)
    {
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        return format!("{:x}:{mode:o}", hasher.finish());
    }
    format!("{}:{mtime}:{mode:o}", meta.len())
}

/// Whether two paths name the same existing file or folder (`join` keeps an absolute
/// second path as it is).
fn same_place(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Every file under `dir` (recursively, links not followed), fingerprinted, keyed by
/// `prefix/<relative path>`; at most `limit` entries.
fn tree_print(dir: &Path, prefix: &str, into: &mut BTreeMap<String, String>, limit: usize) {
    let mut stack = vec![(dir.to_path_buf(), prefix.to_string())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if into.len() >= limit {
                return;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = format!("{prefix}/{name}");
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => {
                    into.insert(key.clone(), "dir".into());
                    stack.push((path, key));
                }
                _ => {
                    into.insert(key, file_print(&path));
                }
            }
        }
    }
}

/// The worktree side of [`Repo::check_lane_links`]: `.git` in `wt` must be a file naming
/// the lane's admin directory `admin`. A changed or deleted one is rewritten; anything else
/// there is moved aside as `.git.quarantined-<n>` first. Describes what was wrong into
/// `problems`.
fn repair_gitfile(wt: &Worktree, admin: &Path, problems: &mut Vec<String>) -> Result<(), GitError> {
    let dotgit = wt.path.join(".git");
    let expected_gitfile = format!("gitdir: {}\n", admin.display());
    match std::fs::symlink_metadata(&dotgit) {
        Ok(meta) if meta.is_file() => {
            let text = read_gitfile(&dotgit).unwrap_or_default();
            let named = text.trim().strip_prefix("gitdir:").map(str::trim).unwrap_or("");
            if !same_place(&wt.path.join(named), admin) {
                problems.push(format!(
                    "{} was changed to `{}`",
                    dotgit.display(),
                    text.trim().chars().take(200).collect::<String>()
                ));
                std::fs::write(&dotgit, &expected_gitfile)
                    .map_err(|e| GitError::io("repair", &dotgit, e))?;
            }
        }
        Ok(_) => {
            let aside = (1..)
                .map(|n| wt.path.join(format!(".git.quarantined-{n}")))
                .find(|path| std::fs::symlink_metadata(path).is_err())
                .unwrap_or_else(|| wt.path.join(".git.quarantined"));
            problems.push(format!(
                "{} was replaced by a directory or link (moved aside to {})",
                dotgit.display(),
                aside.display()
            ));
            std::fs::rename(&dotgit, &aside).map_err(|e| GitError::io("move aside", &dotgit, e))?;
            std::fs::write(&dotgit, &expected_gitfile)
                .map_err(|e| GitError::io("repair", &dotgit, e))?;
        }
        Err(_) => {
            problems.push(format!("{} was deleted", dotgit.display()));
            std::fs::write(&dotgit, &expected_gitfile)
                .map_err(|e| GitError::io("repair", &dotgit, e))?;
        }
    }
    Ok(())
}

impl Repo {
    /// The lane's admin directory, `.git/worktrees/<name>`.
    pub fn lane_admin_dir(&self, wt: &Worktree) -> PathBuf {
        self.admin_dir(&wt.name)
    }

    /// What a worker in `wt` needs to write besides the worktree itself: the lane's admin
    /// directory (its index, HEAD and logs) and the 256 loose-object folders
    /// `.git/objects/00` … `ff` (created here if missing), so `git add` works while the
    /// shared `config`, `hooks/`, `info/`, refs, packs and other lanes stay out of reach.
    pub fn lane_git_writable(&self, wt: &Worktree) -> Result<Vec<PathBuf>, GitError> {
        let mut paths = vec![self.lane_admin_dir(wt)];
        let objects = self.common_dir.join("objects");
        for byte in 0..=255u8 {
            let dir = objects.join(format!("{byte:02x}"));
            if !dir.is_dir() {
                std::fs::create_dir_all(&dir).map_err(|e| GitError::io("create", &dir, e))?;
            }
            paths.push(dir);
        }
        Ok(paths)
    }

    /// Checks the links between lane `wt` and the shared repository, which a worker can
    /// reach (the `.git` file is in its worktree, the admin directory is writable for its
    /// index): `.git` must be a file naming the lane's admin directory, whose `commondir`
    /// and `gitdir` must name the shared `.git` and the lane, with no `config.worktree`
    /// (breeze never makes one; git would read it). What is wrong is repaired — a `.git`
    /// that is no longer a file is moved aside as `.git.quarantined-<n>` — and described.
    /// Empty: all was in order.
    pub fn check_lane_links(&self, wt: &Worktree) -> Result<Vec<String>, GitError> {
        let mut problems = Vec::new();
        let admin = self.lane_admin_dir(wt);
        repair_gitfile(wt, &admin, &mut problems)?;
        self.repair_admin_links(&admin, &wt.path.join(".git"), &mut problems)?;
        if !problems.is_empty() {
            self.forget(&wt.path);
        }
        Ok(problems)
    }

    /// The admin-directory side of [`Repo::check_lane_links`]: `admin` must name
    /// the shared `.git` (`commondir`) and the lane's `.git` file `dotgit` (`gitdir`), and
    /// hold no `config.worktree`. Repairs and describes what is wrong into `problems`.
    fn repair_admin_links(
        &self,
        admin: &Path,
        dotgit: &Path,
        problems: &mut Vec<String>,
    ) -> Result<(), GitError> {
        let links = [("commondir", self.common_dir.clone()), ("gitdir", dotgit.to_path_buf())];
        for (file, target) in links {
            let path = admin.join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let named = text.trim();
            if named.is_empty() || !same_place(&admin.join(named), &target) {
                problems.push(format!("{} was changed to `{}`", path.display(), named));
                let value = if file == "commondir" {
                    // What git writes: relative to the admin directory.
                    "../..".to_string()
                } else {
                    target.display().to_string()
                };
                std::fs::write(&path, format!("{value}\n"))
                    .map_err(|e| GitError::io("repair", &path, e))?;
            }
        }
        let worktree_config = admin.join("config.worktree");
        if std::fs::symlink_metadata(&worktree_config).is_ok() {
            problems.push(format!("{} was created", worktree_config.display()));
            std::fs::remove_file(&worktree_config)
                .map_err(|e| GitError::io("remove", &worktree_config, e))?;
        }
        Ok(())
    }

    /// The shared repository state no role may change: `.git/config`, everything under
    /// `hooks/` and `info/`, the primary checkout's `HEAD`, and every ref except main, the
    /// task branches breeze moves itself (`refs/heads/task/…`) and remote-tracking refs.
    pub fn shared_git_print(&self) -> Result<Fingerprint, GitError> {
        let mut print = BTreeMap::new();
        for name in ["config", "HEAD", "commondir"] {
            print.insert(format!(".git/{name}"), file_print(&self.common_dir.join(name)));
        }
        for dir in ["hooks", "info"] {
            tree_print(&self.common_dir.join(dir), &format!(".git/{dir}"), &mut print, 10_000);
        }
        let repo = self.git()?;
        let main_ref = self.main_ref();
        let refs = repo.references().ctx(|| "could not list the refs".to_string())?;
        for reference in refs.flatten() {
            let Ok(name) = reference.name() else { continue };
            // breeze moves main and the task branches itself; remote-tracking refs move
            // when the user fetches, and breeze never pushes.
            if name == main_ref
                || name.starts_with("refs/heads/task/")
                || name.starts_with("refs/remotes/")
            {
                continue;
            }
            let value = match reference.symbolic_target() {
                Ok(Some(target)) => format!("-> {target}"),
                _ => reference.target().map(|oid| oid.to_string()).unwrap_or_default(),
            };
            print.insert(name.to_string(), value);
        }
        Ok(Fingerprint(print))
    }

    /// The uncommitted state of the checkout at `path` (the user's, or a lane): each changed,
    /// staged or untracked path with its status and file fingerprint. Ignored files do not
    /// count. Costs one status pass over the checkout.
    pub fn checkout_print(&self, path: &Path) -> Result<Fingerprint, GitError> {
        let repo = self.handle(path)?;
        let mut options = workdir_status_options();
        options.show(git2::StatusShow::IndexAndWorkdir);
        let statuses = repo
            .statuses(Some(&mut options))
            .ctx(|| format!("could not read the status of {}", path.display()))?;
        let mut print = BTreeMap::new();
        for entry in statuses.iter() {
            let status = entry.status();
            if status == Status::CURRENT || status.is_ignored() {
                continue;
            }
            let rel = path_string(entry.path_bytes());
            let value = format!("{:x}:{}", status.bits(), file_print(&path.join(&rel)));
            print.insert(rel, value);
        }
        Ok(Fingerprint(print))
    }

    /// Whether main now contains a commit made inside a lane — one reachable from a task
    /// branch (`refs/heads/task/…`) or from a lane worktree's HEAD — that `since` (main as
    /// breeze last knew it) did not contain. breeze's own landings are new commits on main,
    /// never lane commits, so a hit means a role (or a hand) moved main onto unreviewed work.
    pub fn lane_commit_on_main(&self, since: Oid) -> Result<Option<LaneCommitOnMain>, GitError> {
        let repo = self.git()?;
        let main = match repo.refname_to_id(&self.main_ref()) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(e).ctx(|| format!("could not read {}", self.main_ref())),
        };
        if main == since {
            return Ok(None);
        }
        for (source, tip) in self.lane_tips(&repo)? {
            let Ok(meeting) = repo.merge_base(tip, main) else { continue };
            let known =
                meeting == since || repo.graph_descendant_of(since, meeting).unwrap_or(false);
            if !known {
                return Ok(Some(LaneCommitOnMain { commit: meeting, source, main }));
            }
        }
        Ok(None)
    }

    /// Task branch tips and the HEADs of the worktrees under `.harness-worktrees/`.
    fn lane_tips(&self, repo: &Repository) -> Result<Vec<(String, Oid)>, GitError> {
        let mut tips = Vec::new();
        let refs = repo
            .references_glob("refs/heads/task/*")
            .ctx(|| "could not list the task branches".to_string())?;
        for reference in refs.flatten() {
            if let (Ok(name), Some(oid)) = (reference.shorthand(), reference.target()) {
                tips.push((name.to_string(), oid));
            }
        }
        let root = self.workdir.join(WORKTREE_ROOT);
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            for entry in entries.flatten() {
                let admin = entry.path();
                let gitdir = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
                // breeze's own integration worktree holds landing commits, not lane work.
                let integration = root.join(INTEGRATION_WORKTREE);
                if !Path::new(gitdir.trim()).starts_with(&root)
                    || Path::new(gitdir.trim()).starts_with(&integration)
                {
                    continue;
                }
                let head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
                if let Ok(oid) = Oid::from_str(head.trim()) {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    tips.push((format!("{WORKTREE_ROOT}/{name} (detached HEAD)"), oid));
                }
            }
        }
        Ok(tips)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(items: &[(&str, &str)]) -> Fingerprint {
        Fingerprint(items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn changes_are_added_removed_and_changed_paths() {
        let before = print(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let after = print(&[("a", "1"), ("b", "9"), ("d", "4")]);
        assert_eq!(after.changes_since(&before), ["b", "c", "d"]);
        assert!(before.changes_since(&before).is_empty());
    }
}
