//! A checkout's git state as every operation needs it: an index entry for a tree's file,
//! the entries at a path set to a tree's, the refusal of a checkout in the middle of a
//! merge or rebase, and libgit2's lock error said plainly.

use std::collections::HashMap;
use std::path::Path;

use git2::{ErrorCode, Index, IndexEntry, ObjectType, Repository, RepositoryState, Tree};

use crate::error::GitError;
use crate::paths::bytes_path;

/// Whether `entry` records the stat data of the file `meta` describes (size, modification
/// time, inode), as git decides a file is unchanged without reading it. The index keeps 32
/// bits of each; a file of 4 GiB or more never matches (its truncated size could match
/// anything).
pub(crate) fn stat_matches(entry: &IndexEntry, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(size) = u32::try_from(meta.size()) else { return false };
    entry.file_size == size
        && entry.mtime.seconds() == meta.mtime() as i32
        && entry.mtime.nanoseconds() == meta.mtime_nsec() as u32
        && entry.ino == meta.ino() as u32
}

/// An index entry at `path` for the tree entry `entry` (a file, link or submodule), with
/// zero stat data: git compares the file's content again next time it looks.
pub(crate) fn unstatted_entry(entry: &git2::TreeEntry<'_>, path: &[u8]) -> IndexEntry {
    IndexEntry {
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

/// The index entries at `path` and below it (a folder) set to what `tree` has there, in
/// memory: an entry `tree` has as it is stays, with its stat data; the others go (a folder
/// that was a file, a removed file, another version, a conflict's stages), and what `tree`
/// has that the index lacks comes in with zero stat data (git compares the file's content).
pub(crate) fn set_entries_to(
    repo: &Repository,
    index: &mut Index,
    tree: &Tree<'_>,
    path: &[u8],
) -> Result<(), git2::Error> {
    let rel = bytes_path(path);
    if (1..=3).any(|stage| index.get_path(rel, stage).is_some()) {
        crate::index_tree::forget(index);
        index.conflict_remove(rel)?;
    }
    // What `tree` has at `path` and below it (a folder), as unstatted index entries.
    let mut prefix = path.to_vec();
    prefix.push(b'/');
    let mut wanted: HashMap<Vec<u8>, IndexEntry> = HashMap::new();
    match tree.get_path(rel).ok() {
        Some(entry) if entry.kind() == Some(ObjectType::Tree) => {
            repo.find_tree(entry.id())?.walk(git2::TreeWalkMode::PreOrder, |dir, child| {
                if child.kind() != Some(ObjectType::Tree) {
                    let mut full = prefix.clone();
                    full.extend_from_slice(dir.as_bytes());
                    full.extend_from_slice(child.name_bytes());
                    wanted.insert(full.clone(), unstatted_entry(child, &full));
                }
                git2::TreeWalkResult::Ok
            })?;
        }
        Some(entry) => {
            wanted.insert(path.to_vec(), unstatted_entry(&entry, path));
        }
        None => {}
    }
    // The index's entries there.
    let mut there: Vec<IndexEntry> = index.get_path(rel, 0).into_iter().collect();
    if let Ok(start) = index.find_prefix(prefix.as_slice()) {
        there.extend(
            (start..index.len())
                .map_while(|i| index.get(i).filter(|entry| entry.path.starts_with(&prefix))),
        );
    }
    // The tree the index is known to make follows the entries that change (`index_tree.rs`).
    let mut changed: Vec<Vec<u8>> = Vec::new();
    let result = replace_entries(index, there, wanted, &mut changed);
    crate::index_tree::follow((repo, index), result, &changed)
}

/// Removes the entries of `there` that `wanted` does not hold as they are, and adds the
/// rest of `wanted`; `changed` gets the path of each entry removed or added.
fn replace_entries(
    index: &mut Index,
    there: Vec<IndexEntry>,
    mut wanted: HashMap<Vec<u8>, IndexEntry>,
    changed: &mut Vec<Vec<u8>>,
) -> Result<(), git2::Error> {
    for entry in there {
        let same = wanted
            .get(&entry.path)
            .is_some_and(|want| want.id == entry.id && want.mode == entry.mode);
        if same {
            wanted.remove(&entry.path);
        } else {
            index.remove_path(bytes_path(&entry.path))?;
            changed.push(entry.path);
        }
    }
    for entry in wanted.values() {
        index.add(entry)?;
        changed.push(entry.path.clone());
    }
    Ok(())
}
