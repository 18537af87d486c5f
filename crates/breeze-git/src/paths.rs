//! Paths: repository-relative paths as git stores them (bytes), their display form, and
//! the file-system helpers the worktree code shares (lexical normalization, comparing two
//! paths, removing a directory that may be gone).

use std::path::{Component, Path, PathBuf};

use crate::error::GitError;

/// Repository-relative path of a status or diff entry, lossy for non-UTF-8 names: for
/// messages and pattern matching, never to name a file to git or the file system.
pub(crate) fn path_string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A repository-relative path as git stores it: bytes, which need not be UTF-8 (a file
/// named in Latin-1 is still a file to check out, stage and land).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RepoPath(pub(crate) Vec<u8>);

impl AsRef<[u8]> for RepoPath {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl RepoPath {
    /// The path for the file system and libgit2.
    pub(crate) fn as_path(&self) -> &Path {
        bytes_path(&self.0)
    }

    /// For messages (lossy).
    pub(crate) fn display(&self) -> String {
        path_string(&self.0)
    }
}

/// Repository-relative path bytes as a file-system path, without loss.
pub(crate) fn bytes_path(bytes: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(bytes))
}

/// What the caller knows of where a worktree may differ from its index: from file-system
/// notifications (the engine's lane watch), the paths written since the worktree was last
/// known to agree with git.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WorkdirChanges<'a> {
    /// Nothing is known: one status pass over the whole worktree.
    #[default]
    Unknown,
    /// Only these paths (relative to the worktree; a directory stands for everything beneath
    /// it) may differ from the index; everything else is as the index has it. Changes staged
    /// in the index (a worker's own `git add` or `git rm --cached`) are found through the
    /// index whatever this says.
    Only(&'a [PathBuf]),
}

/// Display strings of `paths`.
pub(crate) fn display_all(paths: &[RepoPath]) -> Vec<String> {
    paths.iter().map(RepoPath::display).collect()
}

/// Removes `.` and `..` lexically (no file-system access), so a path cannot sneak out of a
/// directory with `..`.
pub(crate) fn normalize(path: &Path) -> PathBuf {
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
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => normalize(a) == normalize(b),
    }
}

/// Removes a directory and everything in it; one that is already gone is fine.
pub(crate) fn remove_dir_if_exists(path: &Path) -> Result<(), GitError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove directory", path, e)),
    }
}

/// Removes `entry` (a file, link or folder with everything in it) from the checkout at
/// `root`, without following a link, and then the folders above it that this emptied (an
/// empty `.claude/` left behind), up to the first that still holds something.
pub(crate) fn remove_with_emptied_parents(root: &Path, entry: &RepoPath) -> Result<(), GitError> {
    crate::untrusted::remove_entry(&root.join(entry.as_path()))?;
    let mut dir = entry.as_path().parent();
    while let Some(rel) = dir.filter(|rel| !rel.as_os_str().is_empty()) {
        if std::fs::remove_dir(root.join(rel)).is_err() {
            break;
        }
        dir = rel.parent();
    }
    Ok(())
}
