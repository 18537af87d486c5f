//! Diffs as breeze reads them, of two commits or of a commit and a checkout: libgit2 finds
//! what changed, looking only at the paths that differ, and pairs renames (by content alone
//! when a side is too big to compare); the changes become rename-aware [`PathChange`]s, and
//! breeze renders each file from its bytes (`diff_sides.rs`, `file_patch.rs`), so that
//! `.gitattributes` cannot hide what lands. What the repository answers with them — a
//! task's changed paths, the reviewer's patch, `breeze diff` — is `task_change.rs`.

use std::path::Path;

use git2::{Delta, Diff, DiffFindOptions, DiffOptions, FileMode, Oid, Repository, Tree};

use crate::bounds::Bounds;
pub(crate) use crate::diff_sides::NewSides;
use crate::diff_sides::SideReader;
use crate::error::{Context as _, GitError};
use crate::file_patch::{Opaque, file_patch, stat_text};
use crate::libgit2_checkout::tree_diff_paths;
use crate::paths::path_string;

/// Columns of a `--stat` line.
const STAT_WIDTH: usize = 80;

/// A diff as a person reads it, with what lands that it cannot show plainly.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// The patch or the stats.
    pub(crate) text: String,
    /// New sides that are binary or text with escaped bytes, by path.
    pub(crate) opaque: Vec<(String, Opaque)>,
}

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// New path.
    Added,
    /// Removed path.
    Deleted,
    /// Content or mode (e.g. the executable bit) changed.
    Modified,
    /// Moved (possibly with edits); both paths are set.
    Renamed,
    /// Copied from another path; both paths are set.
    Copied,
    /// Kind changed, e.g. a file became a symlink.
    TypeChanged,
}

/// What sits at one side of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryMode {
    /// Nothing (the side of an addition or deletion).
    Absent,
    /// A regular file.
    File,
    /// A regular file with the executable bit.
    Executable,
    /// A symbolic link.
    Symlink,
    /// A gitlink: a submodule or nested repository commit.
    Gitlink,
    /// Anything else (trees do not appear in file diffs).
    Other,
}

impl EntryMode {
    pub(crate) fn from_file_mode(mode: FileMode) -> EntryMode {
        match mode {
            FileMode::Unreadable => EntryMode::Absent,
            FileMode::Blob | FileMode::BlobGroupWritable => EntryMode::File,
            FileMode::BlobExecutable => EntryMode::Executable,
            FileMode::Link => EntryMode::Symlink,
            FileMode::Commit => EntryMode::Gitlink,
            FileMode::Tree => EntryMode::Other,
        }
    }
}

/// One changed path between two commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    /// How it changed.
    pub kind: ChangeKind,
    /// Path before (`None` for an addition).
    pub old_path: Option<String>,
    /// Path after (`None` for a deletion).
    pub new_path: Option<String>,
    /// What was there before.
    pub old_mode: EntryMode,
    /// What is there after.
    pub new_mode: EntryMode,
    /// Blob (or gitlink commit) id after the change; `None` for a deletion.
    pub new_id: Option<Oid>,
}

impl PathChange {
    /// The path to show: the new one, or the old one for a deletion.
    pub fn path(&self) -> &str {
        self.new_path.as_deref().or(self.old_path.as_deref()).unwrap_or_default()
    }

    /// Every path this change touches: both sides of a rename, the new side of a copy,
    /// the one path otherwise. This is what must lie inside the task's write set.
    pub fn touched_paths(&self) -> Vec<&str> {
        let mut paths = Vec::with_capacity(2);
        if self.kind != ChangeKind::Copied
            && let Some(old) = self.old_path.as_deref()
        {
            paths.push(old);
        }
        if let Some(new) = self.new_path.as_deref()
            && !paths.contains(&new)
        {
            paths.push(new);
        }
        paths
    }
}

/// A base..head diff with renames found, shared by the path list and the patch. No blob
/// above `max_blob_bytes` is loaded: the patch shows it as binary, and when an added or
/// deleted one is that big (a worker's own commit can hold anything), renames are paired
/// by identical content only, not by similarity (which reads both sides whole).
pub(crate) fn task_diff<'r>(
    repo: &'r Repository,
    base: Oid,
    head: Oid,
    max_blob_bytes: u64,
) -> Result<Diff<'r>, GitError> {
    let tree_of = |oid: Oid| {
        repo.find_commit(oid)
            .map_err(|_| GitError::MissingObject { what: "commit", oid })
            .and_then(|c| c.tree().ctx(|| format!("could not read the tree of {oid}")))
    };
    let (base_tree, head_tree) = (tree_of(base)?, tree_of(head)?);
    let mut options = DiffOptions::new();
    options.include_typechange(true).max_size(i64::try_from(max_blob_bytes).unwrap_or(i64::MAX));
    only_what_differs(repo, &base_tree, &head_tree, &mut options)?;
    let mut diff = repo
        .diff_tree_to_tree(Some(&base_tree), Some(&head_tree), Some(&mut options))
        .ctx(|| format!("could not diff {base}..{head}"))?;
    find_renames(repo, &mut diff, max_blob_bytes, &format!("{base}..{head}"))?;
    Ok(diff)
}

/// Limits a diff of `old` and `new` to the paths that differ: libgit2 walks both trees
/// whole, while these are found without opening a folder both sides share, and the diff
/// then looks at them alone (literal paths). When nothing differs no path is set, and the
/// diff of two equal trees finds nothing either way.
pub(crate) fn only_what_differs(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
    options: &mut DiffOptions,
) -> Result<(), GitError> {
    let changed = tree_diff_paths(repo, old, new)?;
    if !changed.is_empty() {
        options.disable_pathspec_match(true);
        for path in &changed {
            options.pathspec(path.as_path());
        }
    }
    Ok(())
}

/// Pairs the additions and deletions of `diff` (`what`, for the error) that are renames —
/// by identical content only when an added or deleted blob is above `max_blob_bytes`.
fn find_renames(
    repo: &Repository,
    diff: &mut Diff<'_>,
    max_blob_bytes: u64,
    what: &str,
) -> Result<(), GitError> {
    let mut find = DiffFindOptions::new();
    find.renames(true);
    if has_big_rename_candidate(repo, diff, max_blob_bytes)? {
        find.exact_match_only(true);
    }
    diff.find_similar(Some(&mut find)).ctx(|| format!("could not detect renames in {what}"))
}

/// Where the new side of a change shown to a person is.
#[derive(Debug, Clone, Copy)]
pub enum ChangeTip<'a> {
    /// A commit (a task's branch tip).
    Commit(Oid),
    /// The checkout at this path as it is now: its commits and what is not committed yet
    /// (staged, unstaged, untracked; ignored files left out).
    Checkout(&'a Path),
}

/// How a change is shown to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeView {
    /// A unified diff (`git diff`).
    Patch,
    /// One line per file with its added and removed lines, and the totals (`git diff --stat`).
    Stat,
}

/// Whether an added or deleted blob of `diff` is above `max` bytes (read from the object
/// headers).
fn has_big_rename_candidate(
    repo: &Repository,
    diff: &Diff<'_>,
    max: u64,
) -> Result<bool, GitError> {
    // Renames pair a deletion with an addition: without both there is nothing to compare.
    let has = |status: Delta| diff.deltas().any(|delta| delta.status() == status);
    if !has(Delta::Added) || !has(Delta::Deleted) {
        return Ok(false);
    }
    let odb = repo.odb().ctx(|| "could not open the object database".to_string())?;
    for delta in diff.deltas() {
        let file = match delta.status() {
            Delta::Added => delta.new_file(),
            Delta::Deleted => delta.old_file(),
            _ => continue,
        };
        if !matches!(file.mode(), FileMode::Blob | FileMode::BlobExecutable) {
            continue;
        }
        // A file of a working tree, not hashed yet: its size is the one it has on disk.
        if file.id().is_zero() {
            if file.size() > max {
                return Ok(true);
            }
            continue;
        }
        let (size, _) = odb
            .read_header(file.id())
            .map_err(|_| GitError::MissingObject { what: "blob", oid: file.id() })?;
        if size as u64 > max {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A diff of the commit `base` against the checkout at `at` (handle `repo`) as it is now:
/// its index and working tree, untracked files included, renames paired. No file or blob
/// above `max_bytes` is read.
pub(crate) fn checkout_diff<'r>(
    repo: &'r Repository,
    base: Oid,
    at: &Path,
    max_bytes: u64,
) -> Result<Diff<'r>, GitError> {
    let base_tree = repo
        .find_commit(base)
        .map_err(|_| GitError::MissingObject { what: "commit", oid: base })?
        .tree()
        .ctx(|| format!("could not read the tree of {base}"))?;
    let mut options = DiffOptions::new();
    options
        .include_typechange(true)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .max_size(i64::try_from(max_bytes).unwrap_or(i64::MAX));
    let mut diff = repo
        .diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut options))
        .ctx(|| format!("could not diff {} against {base}", at.display()))?;
    find_renames(repo, &mut diff, max_bytes, &at.display().to_string())?;
    Ok(diff)
}

/// `diff` as a patch or as stats, each file rendered from its bytes (`file_patch.rs`),
/// with what of the new sides the patch cannot show plainly. No side above the size limit
/// of `bounds` is read; ends early with [`GitError::Cancelled`] once its stop is raised
/// (`doing` names the step).
pub(crate) fn render(
    repo: &Repository,
    diff: &Diff<'_>,
    view: ChangeView,
    new_sides: NewSides<'_>,
    bounds: &Bounds,
    doing: &'static str,
) -> Result<Rendered, GitError> {
    let max = bounds.max_file_bytes;
    let odb = repo.odb().ctx(|| "could not open the object database".to_string())?;
    let sides = SideReader { repo, odb: &odb, max, new_sides };
    let mut rendered = Rendered::default();
    let mut stats = Vec::new();
    for delta in diff.deltas() {
        bounds.stop.check(doing)?;
        for (how, old, new) in sides.file_changes(&delta)? {
            let patch = file_patch(how, &old, &new, max)?;
            if let Some(found) = patch.opaque {
                rendered.opaque.push((path_string(&new.path), found));
            }
            stats.push(patch.stat);
            if view == ChangeView::Patch {
                rendered.text.push_str(&patch.text);
            }
        }
    }
    if view == ChangeView::Stat {
        rendered.text = stat_text(&stats, STAT_WIDTH);
    }
    Ok(rendered)
}

/// The unified diff (3 lines of context) that turns `old` into `new`, both the content of
/// the file at `path` (`None`: the file does not exist yet), with `diff --git` header —
/// for a change breeze itself makes at landing, shown to the reviewer beside the task's.
pub fn text_patch(path: &str, old: Option<&[u8]>, new: &[u8]) -> Result<String, GitError> {
    let mut options = DiffOptions::new();
    options.force_text(true);
    let old_path = old.is_some().then(|| Path::new(path));
    let mut patch = git2::Patch::from_buffers(
        old.unwrap_or_default(),
        old_path,
        new,
        Some(Path::new(path)),
        Some(&mut options),
    )
    .ctx(|| format!("could not diff the new `{path}`"))?;
    let text = patch.to_buf().ctx(|| format!("could not render the diff of `{path}`"))?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

pub(crate) fn path_changes(diff: &Diff<'_>) -> Vec<PathChange> {
    let mut changes: Vec<PathChange> = diff
        .deltas()
        .filter_map(|delta| {
            let kind = match delta.status() {
                Delta::Added | Delta::Untracked => ChangeKind::Added,
                Delta::Deleted => ChangeKind::Deleted,
                Delta::Modified => ChangeKind::Modified,
                Delta::Renamed => ChangeKind::Renamed,
                Delta::Copied => ChangeKind::Copied,
                Delta::Typechange => ChangeKind::TypeChanged,
                Delta::Unmodified | Delta::Ignored | Delta::Unreadable | Delta::Conflicted => {
                    return None;
                }
            };
            let old = delta.old_file();
            let new = delta.new_file();
            let old_path =
                (kind != ChangeKind::Added).then(|| old.path_bytes().map(path_string)).flatten();
            let new_path =
                (kind != ChangeKind::Deleted).then(|| new.path_bytes().map(path_string)).flatten();
            Some(PathChange {
                kind,
                old_mode: if kind == ChangeKind::Added {
                    EntryMode::Absent
                } else {
                    EntryMode::from_file_mode(old.mode())
                },
                new_mode: if kind == ChangeKind::Deleted {
                    EntryMode::Absent
                } else {
                    EntryMode::from_file_mode(new.mode())
                },
                new_id: (kind != ChangeKind::Deleted).then(|| new.id()),
                old_path,
                new_path,
            })
        })
        .collect();
    changes.sort_by(|a, b| a.path().cmp(b.path()));
    changes
}
