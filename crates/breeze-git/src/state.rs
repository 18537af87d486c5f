//! A checkout's git state as every operation needs it: its index re-read from disk, an
//! index entry for a tree's file, the refusal of a checkout in the middle of a merge or
//! rebase, and libgit2's lock error said plainly.

use std::path::Path;

use git2::{ErrorCode, Repository, RepositoryState};

use crate::error::{Context as _, GitError};

/// The repository's index, re-read from disk if another process changed it since this
/// handle last read or wrote it (`Repository::index` alone returns the cached one).
pub(crate) fn fresh_index(repo: &Repository, at: &Path) -> Result<git2::Index, GitError> {
    let mut index = repo.index().ctx(|| format!("could not read the index of {}", at.display()))?;
    index.read(false).ctx(|| format!("could not read the index of {}", at.display()))?;
    Ok(index)
}

/// Whether `entry` records the stat data of the file `meta` describes (size, modification
/// time, inode), as git decides a file is unchanged without reading it. The index keeps 32
/// bits of each; a file of 4 GiB or more never matches (its truncated size could match
/// anything).
pub(crate) fn stat_matches(entry: &git2::IndexEntry, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(size) = u32::try_from(meta.size()) else { return false };
    entry.file_size == size
        && entry.mtime.seconds() == meta.mtime() as i32
        && entry.mtime.nanoseconds() == meta.mtime_nsec() as u32
        && entry.ino == meta.ino() as u32
}

/// An index entry at `path` for the tree entry `entry` (a file, link or submodule), with
/// zero stat data: git compares the file's content again next time it looks.
pub(crate) fn unstatted_entry(entry: &git2::TreeEntry<'_>, path: &[u8]) -> git2::IndexEntry {
    git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: entry.filemode() as u32,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: entry.id(),
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.to_vec(),
    }
}

/// Refuses a checkout that is mid-merge/rebase/...; `path` names it in the message.
pub(crate) fn ensure_clean_state(repo: &Repository, path: &Path) -> Result<(), GitError> {
    let (operation, abort) = match repo.state() {
        RepositoryState::Clean => return Ok(()),
        RepositoryState::Merge => ("merge", "git merge --abort"),
        RepositoryState::Revert | RepositoryState::RevertSequence => {
            ("revert", "git revert --abort")
        }
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => {
            ("cherry-pick", "git cherry-pick --abort")
        }
        RepositoryState::Bisect => ("bisect", "git bisect reset"),
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => ("rebase", "git rebase --abort"),
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
            ("`git am` session", "git am --abort")
        }
    };
    Err(GitError::MidOperation { path: path.to_path_buf(), operation, abort })
}

/// A libgit2 failure in the checkout at `at`: [`GitError::Locked`] when another process
/// holds its `index.lock` (libgit2 reports it as `Locked`), else the failure with
/// `context`.
pub(crate) fn locked_or(e: git2::Error, at: &Path, context: impl FnOnce() -> String) -> GitError {
    if e.code() == ErrorCode::Locked {
        GitError::Locked { path: at.to_path_buf(), detail: e.message().to_string() }
    } else {
        GitError::Git { context: context(), cause: e }
    }
}
