//! What a role left in a worktree, seen through `lstat` before anything of it is read.
//! Staging hashes every changed file, a status hashes a file whose size and time leave it
//! in doubt, and libgit2 reads a file whole: a 64 GiB sparse file costs a worker one
//! `truncate` and would cost breeze minutes of reading, and a FIFO would block it forever.
//! So before a worktree is staged, checked or reset, files above the size limit and
//! FIFOs, sockets and device nodes (git cannot commit them) are found here first: a
//! commit refuses them (removing the nodes), a dirty check reports them, a reset of
//! breeze's own integration worktree removes them. Ignored paths do not count unless
//! tracked: git never reads them.

use std::path::{Component, Path, PathBuf};

use git2::{Index, Repository};

use crate::baseline::Baseline;
use crate::bounds::Bounds;
use crate::error::{GitError, SpecialNode};
use crate::index_file::fresh_index;
use crate::paths::WorkdirChanges;
use crate::state::stat_matches;
use crate::untrusted::kind_of;

/// What a worktree holds that breeze does not read: files above the size limit (with their
/// sizes) and nodes that are not files, symlinks or folders (with what they are).
#[derive(Debug, Default)]
pub(crate) struct Unreadable {
    too_big: Vec<(String, u64)>,
    nodes: Vec<(String, &'static str)>,
}

impl Unreadable {
    /// Whether nothing was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.too_big.is_empty() && self.nodes.is_empty()
    }

    /// Leaves out the paths that hold their state in the lane's baseline (breeze's own
    /// steps left them there: they are not read, staged or counted as work).
    pub(crate) fn without_baseline(mut self, baseline: &Baseline, at: &Path) -> Unreadable {
        if !baseline.is_empty() {
            self.too_big.retain(|(path, _)| !baseline.holds(at, path));
            self.nodes.retain(|(path, _)| !baseline.holds(at, path));
        }
        self
    }

    /// The paths found, sorted.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .too_big
            .iter()
            .map(|(path, _)| path.clone())
            .chain(self.nodes.iter().map(|(path, _)| path.clone()))
            .collect();
        paths.sort();
        paths
    }
}

/// Finds, from `lstat` alone, what git would stage (or compare) in the worktree at `at`
/// that breeze must not read: a file above the size limit of `bounds`, a FIFO, socket or
/// device. With [`WorkdirChanges::Only`] only those paths (folders: everything beneath)
/// are looked at; otherwise the whole worktree. Ends early once a stop is asked for.
pub(crate) fn find_unreadable(
    wrepo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    bounds: &Bounds,
) -> Result<Unreadable, GitError> {
    let index = fresh_index(wrepo, at)?;
    let max_file_bytes = bounds.max_file_bytes;
    let mut walk = Walk { wrepo, at, index: &index, max_file_bytes, found: Unreadable::default() };
    let mut pending: Vec<PathBuf> = match changes {
        WorkdirChanges::Unknown => vec![PathBuf::new()],
        WorkdirChanges::Only(paths) => paths.to_vec(),
    };
    while let Some(rel) = pending.pop() {
        bounds.stop.check("look at the worker's files")?;
        walk.visit(rel, &mut pending);
    }
    let mut found = walk.found;
    found.too_big.sort();
    found.too_big.dedup();
    found.nodes.sort();
    found.nodes.dedup();
    Ok(found)
}

/// Refuses, with [`GitError::FilesRefused`], a worktree in which [`find_unreadable`] finds
/// something that is not in the lane's `baseline`; the nodes are removed first (git cannot
/// commit them anyway).
pub(crate) fn refuse_unreadable(
    wrepo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    bounds: &Bounds,
    baseline: &Baseline,
) -> Result<(), GitError> {
    let found = find_unreadable(wrepo, at, changes, bounds)?.without_baseline(baseline, at);
    if found.is_empty() {
        return Ok(());
    }
    let nodes = found
        .nodes
        .into_iter()
        .map(|(path, kind)| {
            let removed = remove(at, &path);
            SpecialNode { path, kind, removed }
        })
        .collect();
    Err(GitError::FilesRefused {
        path: at.to_path_buf(),
        too_big: found.too_big,
        max_file_bytes: bounds.max_file_bytes,
        nodes,
    })
}

/// Removes what [`find_unreadable`] finds in the worktree at `at`, which breeze is about
/// to reset anyway (the integration worktree), so that resetting it reads none of it.
pub(crate) fn clear_unreadable(
    wrepo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    bounds: &Bounds,
) -> Result<(), GitError> {
    for path in find_unreadable(wrepo, at, changes, bounds)?.paths() {
        remove(at, &path);
    }
    Ok(())
}

/// Removes the node at `rel` (a file, FIFO, socket or device); whether it is gone.
fn remove(at: &Path, rel: &str) -> bool {
    let full = at.join(rel);
    let removed = std::fs::remove_file(&full).is_ok();
    if !removed {
        tracing::warn!(path = %full.display(), "could not remove it from a worktree");
    }
    removed
}

/// One pass over a worktree's changed paths.
struct Walk<'a> {
    wrepo: &'a Repository,
    at: &'a Path,
    index: &'a Index,
    max_file_bytes: u64,
    found: Unreadable,
}

impl Walk<'_> {
    /// Looks at the worktree-relative `rel` (`""`: the root); a folder's entries go to
    /// `pending`.
    fn visit(&mut self, rel: PathBuf, pending: &mut Vec<PathBuf>) {
        // The lane's own `.git` (a file naming its admin folder) is checked elsewhere.
        if rel.components().next() == Some(Component::Normal(".git".as_ref())) {
            return;
        }
        let full = self.at.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&full) else { return };
        let kind = meta.file_type();
        if kind.is_dir() {
            if rel.as_os_str().is_empty() || !self.skipped_dir(&rel) {
                let Ok(entries) = std::fs::read_dir(&full) else { return };
                pending.extend(entries.flatten().map(|entry| rel.join(entry.file_name())));
            }
        } else if kind.is_file() {
            if meta.len() > self.max_file_bytes
                && !self.as_indexed(&rel, &meta)
                && self.would_be_staged(&rel)
            {
                self.found.too_big.push((rel.to_string_lossy().into_owned(), meta.len()));
            }
        } else if !kind.is_symlink() && self.would_be_staged(&rel) {
            self.found.nodes.push((rel.to_string_lossy().into_owned(), kind_of(kind)));
        }
    }

    /// Whether git would stage (or, for a nested repository's `.git`, read) what is at
    /// `rel`: tracked, or not ignored.
    fn would_be_staged(&self, rel: &Path) -> bool {
        inside_nested_git(rel).is_some()
            || (0..=3).any(|stage| self.index.get_path(rel, stage).is_some())
            || !self.wrepo.is_path_ignored(rel).unwrap_or(false)
    }

    /// Whether the file at `rel` is as the index recorded it (size, modification time,
    /// inode): a big file the repository tracks and nobody touched is neither staged nor
    /// read. The index keeps 32 bits of each; a file of 4 GiB or more never passes for
    /// an indexed one (its truncated size could match anything).
    fn as_indexed(&self, rel: &Path, meta: &std::fs::Metadata) -> bool {
        self.index.get_path(rel, 0).is_some_and(|entry| stat_matches(&entry, meta))
    }

    /// A folder git never reads from: ignored and holding nothing tracked; inside a nested
    /// repository's `.git`, all but its refs (staging the repository as a gitlink reads its
    /// `HEAD`, config and refs, not its objects).
    fn skipped_dir(&self, rel: &Path) -> bool {
        if let Some(inside) = inside_nested_git(rel) {
            return !(inside.as_os_str().is_empty() || inside.starts_with("refs"));
        }
        if !self.wrepo.is_path_ignored(rel).unwrap_or(false) {
            return false;
        }
        let mut prefix = rel.as_os_str().as_encoded_bytes().to_vec();
        prefix.push(b'/');
        self.index.find_prefix(prefix).is_err()
    }
}

/// What follows the `.git` of a nested repository in `rel` (empty for that `.git` itself);
/// `None` when `rel` is not inside one.
fn inside_nested_git(rel: &Path) -> Option<PathBuf> {
    let parts: Vec<Component<'_>> = rel.components().collect();
    let at = parts.iter().skip(1).position(|part| *part == Component::Normal(".git".as_ref()))?;
    Some(parts[at + 2..].iter().collect())
}
