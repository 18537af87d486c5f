//! A lane's baseline: what breeze's own steps — `worktree.setup` before a worker starts,
//! `[review] checks` after it — left in the lane besides the task's change (the
//! `package-lock.json` an install writes, the `Cargo.lock` a test run creates), each path
//! with the state it was left in: content id, mode, size, modification time and inode, or
//! absent (a step removed it).
//!
//! A path that still holds its baseline state is not the task's work: committing leaves it
//! out, the check for work left in a lane and the check before removing one do not count
//! it, and moving the lane puts it back to what the lane's HEAD has when the next tree
//! writes that path. Once the path holds anything else, the worker changed it: the entry is
//! dropped and the path is committed (and gated) like any other change — a task that needs
//! a new lockfile still gets it.
//!
//! Kept per lane in `.breeze/lanes/<lane>/baseline.json` (breeze's folder for the lane, not
//! the worker's), so a resumed run, `breeze abort` and a later run that reuses the lane
//! know it too. Whether a path holds its state is decided from `lstat` when size, mode,
//! modification time and inode all match, and otherwise by hashing the file as git would
//! (never a file above the size limit: that one has changed).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid};
use serde::{Deserialize, Serialize};

use crate::error::GitError;
use crate::paths::WorkdirChanges;
use crate::untrusted::replace_file;

/// Name of the baseline file in a lane's folder under `.breeze/lanes/`.
pub(crate) const BASELINE_FILE: &str = "baseline.json";

/// Format of the baseline file.
const FORMAT: u32 = 1;

/// The state a baseline path was left in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Held {
    /// Git's blob id of the content (of the link's target for a symbolic link); `None` for
    /// a file above the size limit, which is compared by `lstat` alone.
    id: Option<String>,
    /// Git's mode: `0o100644`, `0o100755` or `0o120000`.
    mode: u32,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
    ino: u64,
}

/// On disk.
#[derive(Debug, Default, Serialize, Deserialize)]
struct BaselineFile {
    format: u32,
    /// Repository-relative path → its state (`null`: absent).
    paths: BTreeMap<String, Option<Held>>,
}

/// A lane's baseline, loaded from its file.
#[derive(Debug, Default, Clone)]
pub(crate) struct Baseline {
    paths: BTreeMap<String, Option<Held>>,
    /// Where it is kept (`None`: not a lane, nothing to keep).
    file: Option<PathBuf>,
    /// Files above this size are never hashed.
    max_file_bytes: u64,
}

impl Baseline {
    /// An empty baseline that is never saved (a checkout that is not a lane).
    pub(crate) fn none() -> Baseline {
        Baseline::default()
    }

    /// The baseline kept in `file` (empty when there is none). A file breeze cannot read is
    /// an empty baseline: every path then counts as work, which loses nothing.
    pub(crate) fn load(file: PathBuf, max_file_bytes: u64) -> Baseline {
        let paths = match std::fs::read(&file) {
            Ok(bytes) => match serde_json::from_slice::<BaselineFile>(&bytes) {
                Ok(read) if read.format == FORMAT => read.paths,
                Ok(read) => {
                    tracing::warn!(file = %file.display(), format = read.format, "unknown baseline format; the lane's baseline is ignored");
                    BTreeMap::new()
                }
                Err(err) => {
                    tracing::warn!(file = %file.display(), "unreadable baseline ({err}); the lane's baseline is ignored");
                    BTreeMap::new()
                }
            },
            Err(_) => BTreeMap::new(),
        };
        Baseline { paths, file: Some(file), max_file_bytes }
    }

    /// Whether it is kept in a file (a lane's): one that is not is never saved.
    pub(crate) fn is_kept(&self) -> bool {
        self.file.is_some()
    }

    /// Whether it names no path.
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The paths it names, sorted.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.paths.keys().map(String::as_str)
    }

    /// Whether `rel` is a baseline path that holds its baseline state in the checkout `at`.
    pub(crate) fn holds(&self, at: &Path, rel: &str) -> bool {
        let Some(recorded) = self.paths.get(rel) else { return false };
        let full = at.join(rel);
        match (recorded, std::fs::symlink_metadata(&full)) {
            (None, Err(err)) => err.kind() == std::io::ErrorKind::NotFound,
            (None, Ok(_)) | (Some(_), Err(_)) => false,
            (Some(held), Ok(meta)) => {
                let Some(mode) = git_mode(&meta) else { return false };
                if mode != held.mode || meta.size() != held.size {
                    return false;
                }
                if stamp_matches(held, &meta) {
                    return true;
                }
                held.id.is_some() && content_id(&full, &meta, self.max_file_bytes) == held.id
            }
        }
    }

    /// Records `rel` in the state it has now in `at` (absent when it is gone); `false` when
    /// it cannot be (not UTF-8, not a file or link).
    pub(crate) fn record(&mut self, at: &Path, rel: &str) -> bool {
        let full = at.join(rel);
        let state = match std::fs::symlink_metadata(&full) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return false,
            Ok(meta) => {
                let Some(mode) = git_mode(&meta) else { return false };
                Some(Held {
                    id: content_id(&full, &meta, self.max_file_bytes),
                    mode,
                    size: meta.size(),
                    mtime: meta.mtime(),
                    mtime_nsec: meta.mtime_nsec(),
                    ino: meta.ino(),
                })
            }
        };
        self.paths.insert(rel.to_string(), state);
        true
    }

    /// Forgets `rel`.
    pub(crate) fn forget(&mut self, rel: &str) -> bool {
        self.paths.remove(rel).is_some()
    }

    /// The baseline paths that `changes` may have touched (all of them when unknown) and
    /// that no longer hold their state: what the worker changed since.
    pub(crate) fn changed(&self, at: &Path, changes: WorkdirChanges<'_>) -> Vec<String> {
        self.paths()
            .filter(|rel| in_scope(changes, rel) && !self.holds(at, rel))
            .map(str::to_string)
            .collect()
    }

    /// Writes it back (an empty baseline removes the file).
    pub(crate) fn save(&self) -> Result<(), GitError> {
        let Some(file) = &self.file else { return Ok(()) };
        if self.paths.is_empty() {
            return match std::fs::remove_file(file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(GitError::io("remove", file, e))
                }
                _ => Ok(()),
            };
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| GitError::io("create directory", dir, e))?;
        }
        let on_disk = BaselineFile { format: FORMAT, paths: self.paths.clone() };
        let text = serde_json::to_vec_pretty(&on_disk).map_err(|e| {
            GitError::io("write", file, std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })?;
        replace_file(file, &text)
    }
}

/// Whether `rel` is one of `changes` or beneath one (a folder stands for what it holds).
pub(crate) fn in_scope(changes: WorkdirChanges<'_>, rel: &str) -> bool {
    match changes {
        WorkdirChanges::Unknown => true,
        WorkdirChanges::Only(paths) => {
            paths.iter().any(|changed| Path::new(rel).starts_with(changed))
        }
    }
}

/// Git's mode for what `meta` describes; `None` for a folder or a special file.
fn git_mode(meta: &std::fs::Metadata) -> Option<u32> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        Some(0o120000)
    } else if kind.is_file() {
        Some(if meta.mode() & 0o111 != 0 { 0o100755 } else { 0o100644 })
    } else {
        None
    }
}

fn stamp_matches(held: &Held, meta: &std::fs::Metadata) -> bool {
    meta.mtime() == held.mtime && meta.mtime_nsec() == held.mtime_nsec && meta.ino() == held.ino
}

/// Git's blob id of the file or link at `full` (not above `max_bytes`).
fn content_id(full: &Path, meta: &std::fs::Metadata, max_bytes: u64) -> Option<String> {
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(full).ok()?;
        use std::os::unix::ffi::OsStrExt as _;
        return Oid::hash_object(ObjectType::Blob, target.as_os_str().as_bytes())
            .ok()
            .map(|id| id.to_string());
    }
    if meta.size() > max_bytes {
        return None;
    }
    // A regular file (checked by the caller): opened without following a link put there
    // since, as `read_prefix` does.
    let bytes = crate::untrusted::read_prefix(full, max_bytes.saturating_add(1)).ok()??;
    Oid::hash_object(ObjectType::Blob, &bytes).ok().map(|id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_holds_its_state_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path();
        std::fs::write(at.join("lock.json"), "{}\n").unwrap();
        let mut baseline = Baseline::load(at.join("state/baseline.json"), 1 << 20);
        assert!(baseline.record(at, "lock.json") && baseline.record(at, "gone.txt"));
        baseline.save().unwrap();
        let baseline = Baseline::load(at.join("state/baseline.json"), 1 << 20);
        assert!(baseline.holds(at, "lock.json") && baseline.holds(at, "gone.txt"));
        // Rewritten with the same bytes (a new inode and time): still the baseline.
        std::fs::remove_file(at.join("lock.json")).unwrap();
        std::fs::write(at.join("lock.json"), "{}\n").unwrap();
        assert!(baseline.holds(at, "lock.json"));
        std::fs::write(at.join("lock.json"), "{\"a\":1}\n").unwrap();
        std::fs::write(at.join("gone.txt"), "back\n").unwrap();
        assert!(!baseline.holds(at, "lock.json") && !baseline.holds(at, "gone.txt"));
        assert_eq!(baseline.changed(at, WorkdirChanges::Unknown), ["gone.txt", "lock.json"]);
        let only = [PathBuf::from("gone.txt")];
        assert_eq!(baseline.changed(at, WorkdirChanges::Only(&only)), ["gone.txt"]);
        assert!(!baseline.holds(at, "other.txt"), "a path it does not name is not baseline");
    }
}
