//! Path-limited checkouts and cleanliness checks: the pieces that let breeze touch only the
//! files that differ, in task worktrees and in the user's checkout alike.

use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{
    CheckoutNotificationType, ErrorCode, Repository, Status, StatusOptions, StatusShow, Tree,
};

use crate::error::{Context as _, GitError};

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
        use std::os::unix::ffi::OsStrExt;
        Path::new(std::ffi::OsStr::from_bytes(&self.0))
    }

    /// For messages (lossy).
    pub(crate) fn display(&self) -> String {
        path_string(&self.0)
    }
}

/// Display strings of `paths`.
pub(crate) fn display_all(paths: &[RepoPath]) -> Vec<String> {
    paths.iter().map(RepoPath::display).collect()
}

/// Paths with uncommitted changes: staged, modified, deleted, conflicted or untracked (not
/// ignored). Ignored files (build outputs, provisioned `.env`) do not count. With
/// `use_cli` (external filters in play) the `git` CLI computes it.
/// Status of the working tree against the index only, untracked files included, ignored
/// ones not. Comparing HEAD with the index would read every tree of HEAD; what is staged
/// is found through the index instead.
pub(crate) fn workdir_status_options() -> StatusOptions {
    let mut options = StatusOptions::new();
    options
        .show(StatusShow::Workdir)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .renames_index_to_workdir(false);
    options
}

pub(crate) fn dirty_paths(
    repo: &Repository,
    at: &Path,
    use_cli: bool,
) -> Result<Vec<String>, GitError> {
    Ok(display_all(&dirty_repo_paths(repo, at, use_cli)?))
}

/// [`dirty_paths`] as git names them (bytes).
pub(crate) fn dirty_repo_paths(
    repo: &Repository,
    at: &Path,
    use_cli: bool,
) -> Result<Vec<RepoPath>, GitError> {
    if use_cli {
        let mut paths: Vec<RepoPath> = crate::cli::status(at, false)?
            .into_iter()
            .map(|(_, p)| RepoPath(p.into_bytes()))
            .collect();
        paths.sort();
        paths.dedup();
        return Ok(paths);
    }
    // Working tree against the index only: comparing HEAD with the index means reading
    // every tree of HEAD, so staged changes are found through the index's tree instead.
    let mut options = workdir_status_options();
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| map_lock_error(e, at))
        .map_err(|e| retext(e, || format!("could not read the status of {}", at.display())))?;
    let mut paths: Vec<RepoPath> = statuses
        .iter()
        .filter(|entry| entry.status() != Status::CURRENT && !entry.status().is_ignored())
        .map(|entry| RepoPath(entry.path_bytes().to_vec()))
        .collect();
    drop(statuses);
    paths.extend(staged_repo_paths(repo, at)?);
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Paths whose index entry differs from HEAD (staged changes, conflicts). Cheap when
/// nothing is staged: the index's tree (cached in the index) equals HEAD's tree.
fn staged_repo_paths(repo: &Repository, at: &Path) -> Result<Vec<RepoPath>, GitError> {
    let context = || format!("could not read the index of {}", at.display());
    let mut index = crate::repo::fresh_index(repo, at)?;
    if index.has_conflicts() {
        let mut paths = Vec::new();
        for conflict in index.conflicts().ctx(context)? {
            let conflict = conflict.ctx(context)?;
            for entry in [conflict.ancestor, conflict.our, conflict.their].into_iter().flatten() {
                paths.push(RepoPath(entry.path));
            }
        }
        return Ok(paths);
    }
    let head_tree = repo.head().and_then(|head| head.peel_to_tree()).ok();
    let index_tree = index.write_tree().ctx(context)?;
    if head_tree.as_ref().map(|t| t.id()) == Some(index_tree) {
        return Ok(Vec::new());
    }
    let diff = repo
        .diff_tree_to_index(head_tree.as_ref(), Some(&index), None)
        .ctx(|| format!("could not compare HEAD with the index in {}", at.display()))?;
    Ok(diff
        .deltas()
        .flat_map(|d| {
            [d.old_file().path_bytes(), d.new_file().path_bytes()]
                .map(|path| path.map(|bytes| RepoPath(bytes.to_vec())))
        })
        .flatten()
        .collect())
}

/// Paths (both sides, no rename pairing) that differ between two trees, sorted.
///
/// Walks only subtrees whose ids differ; libgit2's tree diff reads every tree of both sides,
/// which on a 100k-file repository costs more than the rest of a one-file landing.
pub(crate) fn tree_diff_paths(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
) -> Result<Vec<RepoPath>, GitError> {
    let mut paths = Vec::new();
    diff_subtrees(repo, Some(old), Some(new), b"", &mut paths)?;
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// One side of a tree entry: id, mode, whether it is a tree.
type Side = (git2::Oid, i32, bool);

fn diff_subtrees(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
    prefix: &[u8],
    out: &mut Vec<RepoPath>,
) -> Result<(), GitError> {
    let mut entries: std::collections::BTreeMap<Vec<u8>, (Option<Side>, Option<Side>)> =
        std::collections::BTreeMap::new();
    let side = |entry: &git2::TreeEntry<'_>| {
        (entry.id(), entry.filemode(), entry.kind() == Some(git2::ObjectType::Tree))
    };
    for entry in old.into_iter().flat_map(|t| t.iter()) {
        entries.entry(entry.name_bytes().to_vec()).or_default().0 = Some(side(&entry));
    }
    for entry in new.into_iter().flat_map(|t| t.iter()) {
        entries.entry(entry.name_bytes().to_vec()).or_default().1 = Some(side(&entry));
    }
    let subtree = |oid: git2::Oid| repo.find_tree(oid).ctx(|| format!("could not read tree {oid}"));
    for (name, (before, after)) in entries {
        if before == after {
            continue;
        }
        let path = [prefix, &name].concat();
        let old_tree = match before {
            Some((oid, _, true)) => Some(subtree(oid)?),
            _ => None,
        };
        let new_tree = match after {
            Some((oid, _, true)) => Some(subtree(oid)?),
            _ => None,
        };
        if old_tree.is_some() || new_tree.is_some() {
            let dir = [&path[..], b"/"].concat();
            diff_subtrees(repo, old_tree.as_ref(), new_tree.as_ref(), &dir, out)?;
        }
        let file_before = matches!(before, Some((_, _, false)));
        let file_after = matches!(after, Some((_, _, false)));
        if file_before || file_after {
            out.push(RepoPath(path));
        }
    }
    Ok(())
}

/// Whether a path-limited checkout updates the index.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexWrite {
    /// Updated and written at the end of the checkout (libgit2's default).
    Update,
    /// Left alone: only files are written (undoing a checkout whose index write failed,
    /// so the index on disk is still the one before).
    FilesOnly,
}

/// How a path-limited checkout treats files that differ from HEAD.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Only files that still match HEAD (or are absent) are written; others are conflicts.
    Safe,
    /// Overwrite and remove untracked files on the listed paths (breeze's own worktrees).
    Force,
}

/// Checks `tree` out for exactly `paths` in `repo`'s working tree and index. HEAD is left
/// alone; with [`Mode::Safe`] HEAD is the baseline, so call this before moving HEAD.
/// Returns `Ok(Err(paths))` when files in the way would be overwritten (nothing is written
/// then).
pub(crate) fn checkout_paths(
    repo: &Repository,
    tree: &Tree<'_>,
    paths: &[RepoPath],
    mode: Mode,
    at: &Path,
) -> Result<Result<(), Vec<String>>, GitError> {
    checkout_paths_with(repo, tree, paths, mode, IndexWrite::Update, at)
}

/// [`checkout_paths`] with the choice of when the index is written.
pub(crate) fn checkout_paths_with(
    repo: &Repository,
    tree: &Tree<'_>,
    paths: &[RepoPath],
    mode: Mode,
    index: IndexWrite,
    at: &Path,
) -> Result<Result<(), Vec<String>>, GitError> {
    if paths.is_empty() {
        return Ok(Ok(()));
    }
    // libgit2 refuses objects looked up through another handle, even of the same repository.
    let tree = repo.find_tree(tree.id()).ctx(|| format!("could not read tree {}", tree.id()))?;
    let tree = &tree;
    let mut conflicts: Vec<String> = Vec::new();
    let result = {
        let mut builder = CheckoutBuilder::new();
        match mode {
            Mode::Safe => builder.safe(),
            Mode::Force => builder.force().remove_untracked(true),
        };
        builder.disable_pathspec_match(true);
        if index == IndexWrite::FilesOnly {
            builder.update_index(false);
        }
        for path in paths {
            builder.path(path.as_path());
        }
        builder.notify_on(CheckoutNotificationType::CONFLICT);
        builder.notify(|kind, path, _, _, _| {
            if kind.contains(CheckoutNotificationType::CONFLICT)
                && let Some(path) = path
            {
                conflicts.push(path.to_string_lossy().into_owned());
            }
            true
        });
        repo.checkout_tree(tree.as_object(), Some(&mut builder))
    };
    match result {
        Ok(()) => Ok(Ok(())),
        Err(e) if e.code() == ErrorCode::Conflict || !conflicts.is_empty() => {
            conflicts.sort();
            conflicts.dedup();
            if conflicts.is_empty() {
                conflicts.push(e.message().to_string());
            }
            Ok(Err(conflicts))
        }
        Err(e) => Err(retext(map_lock_error(e, at), || {
            format!("could not check out tree {} in {}", tree.id(), at.display())
        })),
    }
}

/// libgit2 reports a held `index.lock` as `Locked`; say so plainly.
pub(crate) fn map_lock_error(e: git2::Error, at: &Path) -> Result<git2::Error, GitError> {
    if e.code() == ErrorCode::Locked {
        Err(GitError::Locked { path: at.to_path_buf(), detail: e.message().to_string() })
    } else {
        Ok(e)
    }
}

fn retext(e: Result<git2::Error, GitError>, context: impl FnOnce() -> String) -> GitError {
    match e {
        Ok(cause) => GitError::Git { context: context(), cause },
        Err(mapped) => mapped,
    }
}

#[cfg(test)]
mod tests {
    use super::tree_diff_paths;
    use git2::{FileMode, Repository, build::TreeUpdateBuilder};

    /// The subtree-skipping diff must list exactly what libgit2's full diff lists.
    #[test]
    fn tree_diff_paths_matches_libgit2() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = |s: &str| repo.blob(s.as_bytes()).unwrap();
        let empty = repo.find_tree(repo.treebuilder(None).unwrap().write().unwrap()).unwrap();
        let mut old = TreeUpdateBuilder::new();
        for path in [
            "a.txt",
            "same/x.txt",
            "same/deep/y.txt",
            "gone/z.txt",
            "gone/w/v.txt",
            "becomes_dir",
            "dir_becomes_file/q",
            "mode.sh",
            "link",
        ] {
            old.upsert(path, blob(path), FileMode::Blob);
        }
        let old = repo.find_tree(old.create_updated(&repo, &empty).unwrap()).unwrap();
        let mut removed = TreeUpdateBuilder::new();
        removed
            .remove("gone/z.txt")
            .remove("gone/w/v.txt")
            .remove("becomes_dir")
            .remove("dir_becomes_file/q");
        let removed = repo.find_tree(removed.create_updated(&repo, &old).unwrap()).unwrap();
        let mut new = TreeUpdateBuilder::new();
        new.upsert("a.txt", blob("changed"), FileMode::Blob)
            .upsert("becomes_dir/inner.txt", blob("inner"), FileMode::Blob)
            .upsert("dir_becomes_file", blob("file"), FileMode::Blob)
            .upsert("mode.sh", blob("mode.sh"), FileMode::BlobExecutable)
            .upsert("link", blob("target"), FileMode::Link)
            .upsert("added/new/file.txt", blob("n"), FileMode::Blob);
        let new = repo.find_tree(new.create_updated(&repo, &removed).unwrap()).unwrap();

        let ours: Vec<String> =
            tree_diff_paths(&repo, &old, &new).unwrap().iter().map(|p| p.display()).collect();
        let mut options = git2::DiffOptions::new();
        options.include_typechange(true);
        let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options)).unwrap();
        let mut theirs: Vec<String> = diff
            .deltas()
            .flat_map(|d| [d.old_file().path(), d.new_file().path()])
            .flatten()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        theirs.sort();
        theirs.dedup();
        assert_eq!(ours, theirs);
        assert!(
            ours.contains(&"becomes_dir/inner.txt".to_string())
                && ours.contains(&"dir_becomes_file/q".to_string())
        );
        assert!(tree_diff_paths(&repo, &new, &new).unwrap().is_empty());
    }
}
