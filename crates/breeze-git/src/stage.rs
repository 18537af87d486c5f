//! Staging what a worker left in its worktree: the check for conflict markers left after a
//! conflicted rebase, and libgit2's staging of every change (the `git` CLI's `git add -A`
//! is chosen instead in `checkout_tool.rs` where external filters apply).

use std::path::Path;

use git2::{Index, Repository, Status};

use crate::baseline::Baseline;
use crate::bounds::StopFlag;
use crate::error::{Context as _, GitError};
use crate::index_file::fresh_index;
use crate::libgit2_checkout::{staged_repo_paths, workdir_statuses};
use crate::paths::{RepoPath, WorkdirChanges, bytes_path, path_string};
use crate::state::set_entries_to;
use crate::untrusted::read_prefix;

/// A file still carries conflict markers when it has both a `<<<<<<< ` and a `>>>>>>> ` line
/// (among its first `max_bytes`; only a regular file is opened, see [`read_prefix`]).
fn has_conflict_markers(path: &Path, max_bytes: u64) -> bool {
    let Ok(Some(bytes)) = read_prefix(path, max_bytes) else { return false };
    let starts_line = |marker: &[u8]| {
        bytes.starts_with(marker)
            || bytes.windows(marker.len() + 1).any(|w| w[0] == b'\n' && &w[1..] == marker)
    };
    starts_line(b"<<<<<<< ") && starts_line(b">>>>>>> ")
}

/// Refuses, with [`GitError::UnresolvedConflicts`], when conflicted index entries of the
/// checkout at `at` have files that still contain conflict markers (looked for in their
/// first `max_bytes`).
pub(crate) fn ensure_conflicts_resolved(
    wrepo: &Repository,
    at: &Path,
    max_bytes: u64,
) -> Result<(), GitError> {
    let unresolved = unresolved_conflicts(wrepo, at, max_bytes)?;
    if unresolved.is_empty() {
        Ok(())
    } else {
        Err(GitError::UnresolvedConflicts { path: at.to_path_buf(), paths: unresolved })
    }
}

/// Conflicted index entries whose files still contain conflict markers.
fn unresolved_conflicts(
    wrepo: &Repository,
    at: &Path,
    max_bytes: u64,
) -> Result<Vec<String>, GitError> {
    let mut index = fresh_index(wrepo, at)?;
    // An index whose tree is known has no conflicts (`index_tree.rs`): no pass over it.
    let known = crate::index_tree::known(wrepo, &mut index)
        .ctx(|| format!("could not read conflicts in {}", at.display()))?;
    if known.is_some() || !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    for conflict in
        index.conflicts().ctx(|| format!("could not read conflicts in {}", at.display()))?
    {
        let conflict = conflict.ctx(|| format!("could not read conflicts in {}", at.display()))?;
        let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
        if let Some(entry) = entry {
            let path = path_string(&entry.path);
            if has_conflict_markers(&at.join(&path), max_bytes) {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Stages every change in the worktree at `at` with libgit2 (new, modified and deleted
/// files, honouring .gitignore; a nested repository as a gitlink) in the handle's index,
/// in memory: the caller writes it, or notes it behind (`index_behind.rs`). With
/// [`WorkdirChanges::Only`] only those paths (and what is staged already) are looked at.
/// Returns the paths staged (a folder's stands for what is below it). The caller has
/// checked that no conflict markers are left and that no file is too big to read. Between
/// two files, a raised `stop` ends it, the index on disk untouched. Paths that hold their
/// state in the lane's `baseline` are not staged (their index entry stays HEAD's).
pub(crate) fn stage_all(
    wrepo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    stop: &StopFlag,
    baseline: &Baseline,
) -> Result<Vec<Vec<u8>>, GitError> {
    let mut changed = changed_in_workdir(wrepo, at, changes)?;
    if !baseline.is_empty() {
        changed.retain(|bytes| !baseline.holds(at, &path_string(bytes)));
    }
    if changed.is_empty() {
        return Ok(changed);
    }
    let mut index = fresh_index(wrepo, at)?;
    // Deletions first: a directory that replaced a file (or a file that replaced a
    // directory) can only be staged once the old entries are out of the way.
    let (gone, present): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) =
        changed.iter().partition(|bytes| at.join(bytes_path(bytes)).symlink_metadata().is_err());
    let staged = stage_each(&mut index, at, (&gone, &present), stop);
    // The index's tree, when known, follows (`index_tree.rs`): the commit makes no tree.
    crate::index_tree::follow((wrepo, &index), staged, &changed)?;
    Ok(changed)
}

/// Stages the deletions of `gone` and the files (links, folders) at `present`.
fn stage_each(
    index: &mut Index,
    at: &Path,
    (gone, present): (&[&Vec<u8>], &[&Vec<u8>]),
    stop: &StopFlag,
) -> Result<(), GitError> {
    for bytes in gone {
        // Deleted (or a conflicted file the worker resolved by deleting it).
        index.remove_path(bytes_path(bytes)).ctx(|| {
            format!("could not stage the deletion of `{}` in {}", path_string(bytes), at.display())
        })?;
    }
    for bytes in present {
        stop.check("stage the worker's changes")?;
        stage_present(index, at, bytes, stop)?;
    }
    Ok(())
}

/// Puts the index entries of the paths that hold their state in the lane's `baseline`
/// back to HEAD's (after the `git` CLI's `add -A` staged them with everything else).
pub(crate) fn unstage_baseline(
    wrepo: &Repository,
    at: &Path,
    baseline: &Baseline,
) -> Result<(), GitError> {
    let held: Vec<&str> = baseline.paths().filter(|rel| baseline.holds(at, rel)).collect();
    if held.is_empty() {
        return Ok(());
    }
    let context = || format!("could not leave breeze's own files out of {}", at.display());
    let head_tree = wrepo.head().and_then(|head| head.peel_to_tree()).ctx(context)?;
    let mut index = fresh_index(wrepo, at)?;
    for rel in held {
        set_entries_to(wrepo, &mut index, &head_tree, rel.as_bytes()).ctx(context)?;
    }
    crate::index_file::write(wrepo, &mut index, at, &[])
}

/// The paths the working tree changed against the index (what the worker staged itself is
/// in the index already and ends up in the tree written from it), as git has them: bytes,
/// not necessarily UTF-8 (a lossy spelling would name another file, and the real one would
/// be dropped).
///
/// With [`WorkdirChanges::Only`], the paths whose index entry differs from HEAD are looked
/// at too: a worker's `git rm --cached` leaves the file untracked in the working tree, and
/// it is staged again, as a full pass would.
fn changed_in_workdir(
    wrepo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
) -> Result<Vec<Vec<u8>>, GitError> {
    let staged: Vec<RepoPath> = match changes {
        WorkdirChanges::Unknown => Vec::new(),
        WorkdirChanges::Only(_) => staged_repo_paths(wrepo, at)?,
    };
    let workdir_change = Status::WT_NEW
        | Status::WT_MODIFIED
        | Status::WT_DELETED
        | Status::WT_TYPECHANGE
        | Status::CONFLICTED;
    Ok(workdir_statuses(wrepo, at, changes, &staged, false)?
        .into_iter()
        .filter(|(_, status)| status.intersects(workdir_change))
        .map(|(mut bytes, _)| {
            if bytes.ends_with(b"/") {
                bytes.pop();
            }
            bytes
        })
        .collect())
}

/// Stages the file, symlink or directory present at `bytes` (relative to `at`).
fn stage_present(
    index: &mut Index,
    at: &Path,
    bytes: &[u8],
    stop: &StopFlag,
) -> Result<(), GitError> {
    let rel = bytes_path(bytes);
    let path = path_string(bytes);
    let context = || format!("could not stage `{path}` in {}", at.display());
    let full = at.join(rel);
    let meta = full.symlink_metadata().map_err(|e| GitError::io("read", &full, e))?;
    let replaces_a_file = index.get_path(rel, 0).is_some();
    if meta.is_dir() && replaces_a_file && !full.join(".git").exists() {
        // A directory where the index has a file: the file goes, what the directory holds
        // (not ignored) comes in. (A nested repository is staged as a gitlink, below, for
        // the nested-repo gate to see.)
        index.remove_path(rel).ctx(context)?;
        // A negative answer aborts: breeze is stopping.
        let mut each = |_: &Path, _: &[u8]| if stop.is_raised() { -1 } else { 0 };
        let added = index.add_all([rel.join("*")], git2::IndexAddOption::DEFAULT, Some(&mut each));
        stop.check("stage the worker's changes")?;
        added.ctx(context)?;
    } else {
        if !meta.is_dir() {
            // A file where the index has a directory: its entries go first.
            index.remove_dir(rel, 0).ctx(context)?;
        }
        index.add_path(rel).ctx(context)?;
    }
    Ok(())
}
