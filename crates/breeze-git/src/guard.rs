//! What breeze checks that role processes did not change: the links that tie a lane to the
//! shared repository, the shared `.git` (config, hooks, info, HEAD, refs), a checkout's
//! uncommitted state, and whether main moved onto a commit made inside a lane.
//!
//! Where the kernel confines roles (Landlock), these are a second line; where it cannot,
//! they are how breeze notices that a role wrote outside its lane.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use git2::{ErrorCode, Oid, Repository, Status};

use crate::error::{Context as _, GitError};
use crate::libgit2_checkout::workdir_status_options;
use crate::names::{
    SEALED_MAIN, STATE_DIR, TRIAL_CHECKOUT_PREFIX, WORKTREES_NOTE_DIR, is_detached_checkout,
};
use crate::paths::path_string;
use crate::repo::Repo;
use crate::untrusted::{kind_of, read_prefix, read_small};

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

    /// The paths of `before` that are gone or changed now, sorted (new paths do not count:
    /// for a store that only ever grows, such as the object store).
    pub fn lost_or_changed_since(&self, before: &Fingerprint) -> Vec<String> {
        before
            .0
            .iter()
            .filter(|(path, value)| self.0.get(*path) != Some(*value))
            .map(|(path, _)| path.clone())
            .collect()
    }
}

/// A commit made inside a lane that main now contains without a breeze landing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneCommitOnMain {
    /// The commit main now contains.
    pub commit: Oid,
    /// Where it came from: `task/<slug>` or a lane's HEAD (`<worktree folder>/lane-1`).
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
    if !meta.is_file() {
        // Never opened: a FIFO would block the read, a device could be endless.
        return format!("special:{}", kind_of(meta.file_type()));
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
        && let Ok(Some(bytes)) = read_prefix(path, HASHED_FILE_LIMIT)
    {
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        return format!("{:x}:{mode:o}", hasher.finish());
    }
    format!("{}:{mtime}:{mode:o}", meta.len())
}

/// A path's metadata (unread): inode, size, mode, modification and change times; for a
/// link its target.
fn stat_print(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return "missing".into() };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return format!("link:{}", target.display());
    }
    format!(
        "{}:{}:{:o}:{}.{}:{}.{}",
        meta.ino(),
        meta.size(),
        meta.mode(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// At most this many entries of the person's ignored folders are printed.
const IGNORED_PRINT_LIMIT: usize = 1_000_000;

/// Every entry under the ignored folder `dir` (recursively, links not followed) by its
/// metadata ([`stat_print`]), keyed by `prefix/<relative path>`; at most `limit` entries.
fn ignored_tree_print(dir: &Path, prefix: &str, into: &mut BTreeMap<String, String>, limit: usize) {
    let mut stack = vec![(dir.to_path_buf(), prefix.to_string())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if into.len() >= limit {
                return;
            }
            let key = format!("{prefix}/{}", entry.file_name().to_string_lossy());
            let path = entry.path();
            into.insert(key.clone(), stat_print(&path));
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                stack.push((path, key));
            }
        }
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

/// At most this many refs of a lane's private git directory are read.
const PRIVATE_REF_LIMIT: usize = 1000;

/// The commits the refs of the private git directory `dir` name (`HEAD` when detached,
/// `refs/**`, `packed-refs`), each file read as an untrusted one (`untrusted.rs`).
fn private_ref_tips(dir: &Path) -> Vec<Oid> {
    let mut texts = Vec::new();
    for file in ["HEAD", "packed-refs"] {
        texts.extend(read_small(&dir.join(file)).ok().flatten());
    }
    let mut stack = vec![dir.join("refs")];
    let mut seen = 0;
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > PRIVATE_REF_LIMIT {
                break;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                _ => texts.extend(read_small(&entry.path()).ok().flatten()),
            }
        }
    }
    let mut tips: Vec<Oid> = texts
        .iter()
        .flat_map(|text| text.lines())
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|word| Oid::from_str(word.trim_start_matches('^')).ok())
        .collect();
    tips.sort();
    tips.dedup();
    tips
}

impl Repo {
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

    /// The uncommitted state of the checkout at `path` (a lane): each changed, staged or
    /// untracked path with its status and file fingerprint. Ignored files do not count.
    /// Costs one status pass over the checkout.
    pub fn checkout_print(&self, path: &Path) -> Result<Fingerprint, GitError> {
        self.print_of(path)
    }

    /// [`Repo::checkout_print`] with every ignored file too (each one, inside ignored
    /// folders as well, by its metadata): the person's checkout, where a role's write to
    /// `.env` or `node_modules/.bin/jest` matters as much as one to a tracked file. breeze's
    /// own folders (`.breeze/`, `.harness-worktrees/`) are left out: breeze writes there.
    /// Costs one status pass and a walk of the ignored folders.
    pub fn checkout_print_with_ignored(&self, path: &Path) -> Result<Fingerprint, GitError> {
        let mut print = self.print_of(path)?;
        let repo = self.handle(path)?;
        let mut options = workdir_status_options();
        options.include_untracked(false).include_ignored(true).recurse_ignored_dirs(false);
        let statuses = repo
            .statuses(Some(&mut options))
            .ctx(|| format!("could not read the status of {}", path.display()))?;
        for entry in statuses.iter().filter(|entry| entry.status().is_ignored()) {
            let rel = path_string(entry.path_bytes());
            let rel = rel.trim_end_matches('/');
            if [STATE_DIR, WORKTREES_NOTE_DIR].contains(&rel) {
                continue;
            }
            let full = path.join(rel);
            print.0.insert(rel.to_string(), stat_print(&full));
            if std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_dir()) {
                ignored_tree_print(&full, rel, &mut print.0, IGNORED_PRINT_LIMIT);
            }
        }
        Ok(print)
    }

    fn print_of(&self, path: &Path) -> Result<Fingerprint, GitError> {
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

    /// The shared object store as it is: every loose object and pack file, keyed
    /// `.git/objects/<dir>/<file>`, with its inode, size and change time; compared by
    /// [`Repo::damaged_objects_since`]. Only needed without kernel confinement: with it no
    /// role can write there. Costs one listing of the store's folders.
    pub fn shared_objects_print(&self) -> Result<Fingerprint, GitError> {
        let objects = self.common_dir.join("objects");
        let mut print = BTreeMap::new();
        let Ok(dirs) = std::fs::read_dir(&objects) else { return Ok(Fingerprint(print)) };
        for dir in dirs.flatten() {
            let name = dir.file_name().to_string_lossy().into_owned();
            let loose = name.len() == 2 && name.chars().all(|c| c.is_ascii_hexdigit());
            if !loose && name != "pack" {
                continue;
            }
            let Ok(files) = std::fs::read_dir(dir.path()) else { continue };
            for file in files.flatten() {
                let Ok(meta) = std::fs::symlink_metadata(file.path()) else { continue };
                let value = format!(
                    "{}:{}:{}.{}:{}",
                    meta.ino(),
                    meta.len(),
                    meta.ctime(),
                    meta.ctime_nsec(),
                    kind_of(meta.file_type())
                );
                let key = format!(".git/objects/{name}/{}", file.file_name().to_string_lossy());
                print.insert(key, value);
            }
        }
        Ok(Fingerprint(print))
    }

    /// The objects of the store printed in `before` ([`Repo::shared_objects_print`]) that
    /// were overwritten or deleted since, as display paths (sorted). breeze only ever adds
    /// to the store; a loose object whose file changed or went is read back and hashed (git
    /// and libgit2 touch an object they write again, and `git gc` packs loose ones, so only
    /// one that no longer reads as itself counts); a pack file that changed or went counts.
    pub fn damaged_objects_since(&self, before: &Fingerprint) -> Result<Vec<String>, GitError> {
        let changed = self.shared_objects_print()?.lost_or_changed_since(before);
        if changed.is_empty() {
            return Ok(changed);
        }
        let repo = self.git()?;
        let odb = repo.odb().ctx(|| "could not open the object store".to_string())?;
        let intact = |key: &str| {
            let mut parts = key.trim_start_matches(".git/objects/").splitn(2, '/');
            let (Some(dir), Some(file)) = (parts.next(), parts.next()) else { return false };
            let Ok(oid) = Oid::from_str(&format!("{dir}{file}")) else { return false };
            odb.read(oid).is_ok_and(|object| {
                Oid::hash_object(object.kind(), object.data()).is_ok_and(|hash| hash == oid)
            })
        };
        Ok(changed
            .into_iter()
            .filter(|key| key.starts_with(".git/objects/pack/") || !intact(key))
            .collect())
    }

    /// Whether main now contains a commit made inside a lane — one reachable from a task
    /// branch (`refs/heads/task/…`), from a lane worktree's HEAD or from a ref of a lane's
    /// private git directory — that `since` (main as
    /// breeze last knew it) did not contain. breeze's own landings are new commits on main,
    /// never lane commits, so a hit means a role (or a hand) moved main onto unreviewed work.
    pub fn lane_commit_on_main(&self, since: Oid) -> Result<Option<LaneCommitOnMain>, GitError> {
        self.lane_commit_on_main_beyond(since, &[])
    }

    /// [`Repo::lane_commit_on_main`], where a commit on `also_known` (the remote branch
    /// landings go to, as last fetched: lanes start from it) is known too.
    pub fn lane_commit_on_main_beyond(
        &self,
        since: Oid,
        also_known: &[Oid],
    ) -> Result<Option<LaneCommitOnMain>, GitError> {
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
            let known = [since].iter().chain(also_known).any(|&known| {
                meeting == known || repo.graph_descendant_of(known, meeting).unwrap_or(false)
            });
            if !known {
                return Ok(Some(LaneCommitOnMain { commit: meeting, source, main }));
            }
        }
        Ok(None)
    }

    /// Task branch tips, the HEADs of breeze's lanes (in the worktree folder, or made
    /// elsewhere by an earlier breeze) and the refs of the lanes' private git directories.
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
        let roots: Vec<PathBuf> =
            [self.worktree_root().ok(), Some(self.workdir.join(WORKTREES_NOTE_DIR))]
                .into_iter()
                .flatten()
                .collect();
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            for entry in entries.flatten() {
                let admin = entry.path();
                let gitdir = read_small(&admin.join("gitdir")).ok().flatten().unwrap_or_default();
                // breeze's own detached checkouts hold landing commits and reviewed heads,
                // not lane work.
                let gitdir = Path::new(gitdir.trim());
                let Some(lane) = gitdir.parent() else { continue };
                let breeze_made = admin.join(crate::names::CREATED_MARKER).is_file();
                let in_root = roots.iter().any(|root| lane.parent() == Some(root.as_path()));
                let detached =
                    lane.file_name().and_then(|name| name.to_str()).is_some_and(|name| {
                        is_detached_checkout(name) || name.starts_with(TRIAL_CHECKOUT_PREFIX)
                    });
                if !(in_root || breeze_made) || detached {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let head = read_small(&admin.join("HEAD")).ok().flatten().unwrap_or_default();
                if let Ok(oid) = Oid::from_str(head.trim()) {
                    tips.push((format!("{} (detached HEAD)", lane.display()), oid));
                }
                // What the lane's worker committed in its private git directory: only there
                // unless it pushed it into the shared store itself.
                // main's tip as breeze wrote it there when it sealed the lane is not the
                // worker's (main may have moved onto it since by a landing of breeze's).
                let sealed_main = read_small(&self.lane_home(&name).join(SEALED_MAIN))
                    .ok()
                    .flatten()
                    .and_then(|text| Oid::from_str(text.trim()).ok());
                for oid in private_ref_tips(&self.private_git_dir_of(&name)) {
                    if Some(oid) != sealed_main {
                        tips.push((format!("the private git directory of {name}"), oid));
                    }
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
