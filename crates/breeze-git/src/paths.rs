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

/// At most the first `limit` bytes of the regular file at `path`: `Ok(None)` when it is not
/// a regular file. A symlink is not followed and a FIFO or device is never opened (it is
/// checked with `lstat` first, and opened with `O_NOFOLLOW | O_NONBLOCK`, the open file
/// checked again), so a node a role planted can neither block nor steer the read.
pub(crate) fn read_regular_file(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if !std::fs::symlink_metadata(path)?.is_file() {
        return Ok(None);
    }
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// The text of a `.git` file (one `gitdir:` line), at most 64 KiB of it; `None` when it is
/// not a regular file or cannot be read. A worker can write its lane's `.git`: whatever it
/// made of it, reading it costs little and cannot block.
pub(crate) fn read_gitfile(path: &Path) -> Option<String> {
    const GITFILE_LIMIT: u64 = 64 * 1024;
    let bytes = read_regular_file(path, GITFILE_LIMIT).ok().flatten()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Removes a directory and everything in it; one that is already gone is fine.
pub(crate) fn remove_dir_if_exists(path: &Path) -> Result<(), GitError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove directory", path, e)),
    }
}
