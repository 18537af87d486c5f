//! libgit2's side of checkouts: the uncommitted paths of a working tree, the paths two
//! trees differ in, path-limited checkouts that write only those paths, and which of them
//! a user's uncommitted work blocks, in task worktrees and in the user's checkout alike.
//! Whether libgit2 or the `git` CLI does a job is decided in `checkout_tool.rs`.

use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{
    CheckoutNotificationType, Delta, DiffOptions, ErrorCode, Index, IndexEntry, IndexTime, Oid,
    Repository, Status, StatusOptions, StatusShow, Statuses, Tree,
};

use crate::error::{Context as _, GitError};
use crate::index_behind;
use crate::index_file::{self, fresh_index};
use crate::paths::{RepoPath, WorkdirChanges, bytes_path};
use crate::state::locked_or;

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

/// Paths with uncommitted changes, as libgit2 sees them: staged, modified, deleted,
/// conflicted or untracked (not ignored). Ignored files (build outputs, provisioned
/// `.env`) do not count. Sorted, as git names them (bytes). With [`WorkdirChanges::Only`]
/// only those paths of the working tree are looked at (every staged change is found
/// through the index either way).
pub(crate) fn dirty_repo_paths_in(
    repo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
) -> Result<Vec<RepoPath>, GitError> {
    let mut paths = workdir_changed_paths(repo, at, changes)?;
    paths.extend(staged_repo_paths(repo, at)?);
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// The paths of [`dirty_repo_paths_in`] but what is staged: the working tree against the
/// index only (comparing HEAD with the index means reading every tree of HEAD, so staged
/// changes are found through the index's tree instead, [`staged_repo_paths`]). Unsorted.
pub(crate) fn workdir_changed_paths(
    repo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
) -> Result<Vec<RepoPath>, GitError> {
    status_paths(repo, at, changes, false)
}

/// The paths libgit2's status lists among `changes`: the changed and untracked ones, or
/// with `ignored` the ignored ones (an ignored folder as one entry, without its `/`).
fn status_paths(
    repo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    ignored: bool,
) -> Result<Vec<RepoPath>, GitError> {
    Ok(workdir_statuses(repo, at, changes, &[], ignored)?
        .into_iter()
        .filter(|(_, status)| {
            if ignored {
                status.is_ignored()
            } else {
                *status != Status::CURRENT && !status.is_ignored()
            }
        })
        .map(|(bytes, _)| {
            let bytes = if ignored { bytes.strip_suffix(b"/").unwrap_or(&bytes) } else { &bytes };
            RepoPath(bytes.to_vec())
        })
        .collect())
}

/// The working tree of the checkout at `at` against its index, as libgit2's status with
/// [`workdir_status_options`] lists it (with `ignored`, the ignored entries too, an ignored
/// folder as one): each path as libgit2 names it, with its status. With
/// [`WorkdirChanges::Only`] only those paths and `extra` are looked at (folders: all
/// beneath), and only their index entries are walked. libgit2's status walks every entry
/// of the index whatever its path list says (its index iterator cannot seek): a pass as
/// long as the repository at every look. So the working tree is compared with an index
/// of just the entries at those paths, found by binary search ([`entries_at`]).
pub(crate) fn workdir_statuses(
    repo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
    extra: &[RepoPath],
    ignored: bool,
) -> Result<Vec<(Vec<u8>, Status)>, GitError> {
    use std::os::unix::ffi::OsStrExt as _;
    let looked: Option<Vec<&[u8]>> = match changes {
        WorkdirChanges::Only(paths) => {
            let paths = paths.iter().map(|path| path.as_os_str().as_bytes());
            Some(paths.chain(extra.iter().map(|path| path.0.as_slice())).collect())
        }
        WorkdirChanges::Unknown => None,
    };
    // A path that stands for the whole working tree is looked at as nothing known.
    match looked.filter(|looked| looked.iter().all(|path| !path.is_empty())) {
        Some(looked) if looked.is_empty() => Ok(Vec::new()),
        Some(looked) => {
            let index = fresh_index(repo, at)?;
            let listed = if ignored { IgnoredFiles::Folders } else { IgnoredFiles::Left };
            workdir_changes_at(repo, at, (&index, file_time(&index)), &looked, listed)
        }
        None => {
            let mut options = workdir_status_options();
            if ignored {
                options.include_ignored(true).recurse_ignored_dirs(false);
            }
            let statuses = statuses_of(repo, at, &mut options)?;
            Ok(statuses.iter().map(|e| (e.path_bytes().to_vec(), e.status())).collect())
        }
    }
}

/// The working tree of the checkout at `at` against `index` (its index, racily clean
/// entries those not older than `racy_from`) at `looked` only (folders: all beneath), with
/// libgit2 walking only the entries there ([`entries_at`]): each changed, untracked and
/// (as `ignored` says) ignored path as libgit2 names it, with its status.
fn workdir_changes_at(
    repo: &Repository,
    at: &Path,
    (index, racy_from): (&Index, Option<(i64, i64)>),
    looked: &[&[u8]],
    ignored: IgnoredFiles,
) -> Result<Vec<(Vec<u8>, Status)>, GitError> {
    let context = || format!("could not read the status of {}", at.display());
    let entries = entries_at(index, looked, racy_from).ctx(context)?;
    let mut options = DiffOptions::new();
    options
        .include_typechange(true)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(ignored != IgnoredFiles::Left)
        .recurse_ignored_dirs(ignored == IgnoredFiles::Each)
        .disable_pathspec_match(true);
    for path in looked {
        options.pathspec(*path);
    }
    let diff = repo
        .diff_index_to_workdir(Some(&entries), Some(&mut options))
        .map_err(|e| locked_or(e, at, context))?;
    Ok(diff
        .deltas()
        .map(|delta| {
            let path = delta.new_file().path_bytes().or(delta.old_file().path_bytes());
            (path.unwrap_or_default().to_vec(), workdir_status(delta.status()))
        })
        .collect())
}

/// Which ignored files a look at the working tree lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IgnoredFiles {
    /// None.
    Left,
    /// An ignored folder as one entry (`git status --ignored`).
    Folders,
    /// Every ignored file (`git status --ignored=matching --untracked-files=all`).
    Each,
}

/// Each entry of `index` at `paths` and beneath them (every stage), found by binary
/// search, handed to `each`.
fn each_entry_at(
    index: &Index,
    paths: &[&[u8]],
    mut each: impl FnMut(IndexEntry) -> Result<(), git2::Error>,
) -> Result<(), git2::Error> {
    for path in paths {
        for stage in 0..=3 {
            if let Some(entry) = index.get_path(bytes_path(path), stage) {
                each(entry)?;
            }
        }
        let beneath = [path, &b"/"[..]].concat();
        if let Ok(mut position) = index.find_prefix(beneath.as_slice()) {
            while let Some(entry) = index.get(position).filter(|e| e.path.starts_with(&beneath)) {
                each(entry)?;
                position += 1;
            }
        }
    }
    Ok(())
}

/// The paths among `looked` and beneath them whose index entries differ from HEAD's (or
/// that HEAD has and the index lacks, or that are in conflict): what libgit2's status
/// lists as staged there, each entry found by binary search.
fn staged_at(
    repo: &Repository,
    index: &Index,
    looked: &[&[u8]],
) -> Result<Vec<RepoPath>, git2::Error> {
    let head = repo.head().and_then(|head| head.peel_to_tree()).ok();
    let in_head = |path: &[u8]| {
        let entry = head.as_ref()?.get_path(bytes_path(path)).ok()?;
        (entry.kind() != Some(git2::ObjectType::Tree)).then(|| (entry.id(), entry.filemode()))
    };
    let mut staged = Vec::new();
    each_entry_at(index, looked, |entry| {
        let conflicted = entry.flags & crate::index_entries::STAGE_MASK != 0;
        if conflicted || in_head(&entry.path) != Some((entry.id, entry.mode as i32)) {
            staged.push(RepoPath(entry.path));
        }
        Ok(())
    })?;
    for path in looked {
        let rel = bytes_path(path);
        let tracked = (0..=3).any(|stage| index.get_path(rel, stage).is_some());
        if !tracked && in_head(path).is_some() {
            staged.push(RepoPath(path.to_vec()));
        }
    }
    Ok(staged)
}

/// An in-memory index of the entries of `index` at `paths` and beneath them (every stage),
/// each found by binary search. Entries are racily clean, as git reads them, when not older
/// than `racy_from` (the time of the file they were last written into; `None`: unknown,
/// every entry): their times are cleared, so a file is hashed, not trusted on its stat
/// data (libgit2 never takes an entry of an index it did not read for racy).
fn entries_at(
    index: &Index,
    paths: &[&[u8]],
    racy_from: Option<(i64, i64)>,
) -> Result<Index, git2::Error> {
    let mut entries = Index::new()?;
    each_entry_at(index, paths, |mut entry| {
        let time = (i64::from(entry.mtime.seconds()), i64::from(entry.mtime.nanoseconds()));
        if racy_from.is_none_or(|from| time >= from) {
            entry.mtime = IndexTime::new(0, 0);
        }
        entries.add(&entry)
    })?;
    Ok(entries)
}

/// The time of the file `index` was read from and written to: where the stat data of its
/// entries were last recorded (`None` when it has none).
fn file_time(index: &Index) -> Option<(i64, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(index.path()?).ok()?;
    Some((meta.mtime(), meta.mtime_nsec()))
}

/// The status libgit2's status names a change between the index and the working tree with.
fn workdir_status(delta: Delta) -> Status {
    match delta {
        Delta::Untracked => Status::WT_NEW,
        Delta::Deleted => Status::WT_DELETED,
        Delta::Typechange => Status::WT_TYPECHANGE,
        Delta::Conflicted => Status::CONFLICTED,
        Delta::Ignored => Status::IGNORED,
        Delta::Unreadable => Status::WT_UNREADABLE,
        Delta::Unmodified => Status::CURRENT,
        Delta::Added | Delta::Modified | Delta::Renamed | Delta::Copied => Status::WT_MODIFIED,
    }
}

/// The status of the checkout at `at` with `options`, against the handle's index as
/// [`fresh_index`] leaves it: libgit2 is told not to read the index file itself, which it
/// would do whole after breeze wrote it (`index_file.rs`).
pub(crate) fn statuses_of<'r>(
    repo: &'r Repository,
    at: &Path,
    options: &mut StatusOptions,
) -> Result<Statuses<'r>, GitError> {
    fresh_index(repo, at)?;
    options.no_refresh(true);
    repo.statuses(Some(options))
        .map_err(|e| locked_or(e, at, || format!("could not read the status of {}", at.display())))
}

/// The ignored entries of the checkout at `at` — an ignored folder as one entry, as
/// `git status --ignored` lists them — among `changes` (everywhere when unknown), sorted.
pub(crate) fn ignored_repo_paths_in(
    repo: &Repository,
    at: &Path,
    changes: WorkdirChanges<'_>,
) -> Result<Vec<RepoPath>, GitError> {
    let mut paths = status_paths(repo, at, changes, true)?;
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Paths whose index entry differs from HEAD (staged changes, conflicts). Cheap when
/// nothing is staged: the index's tree (cached in the index) equals HEAD's tree.
pub(crate) fn staged_repo_paths(repo: &Repository, at: &Path) -> Result<Vec<RepoPath>, GitError> {
    let context = || format!("could not read the index of {}", at.display());
    let mut index = fresh_index(repo, at)?;
    // Each look for conflicts is a pass over every entry (libgit2 keeps no count), and
    // making the index's tree makes one: a tree is made only of an index without them.
    let index_tree = match crate::index_tree::tree_of(repo, &mut index) {
        Ok(tree) => tree,
        Err(e) if e.code() == ErrorCode::Unmerged => return conflicted_paths(&index, at),
        Err(e) => return Err(e).ctx(context),
    };
    let head_tree = repo.head().and_then(|head| head.peel_to_tree()).ok();
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

/// The paths of the conflicts in `index` (of the checkout at `at`), every side's.
fn conflicted_paths(index: &Index, at: &Path) -> Result<Vec<RepoPath>, GitError> {
    let context = || format!("could not read the index of {}", at.display());
    let mut paths = Vec::new();
    for conflict in index.conflicts().ctx(context)? {
        let conflict = conflict.ctx(context)?;
        for entry in [conflict.ancestor, conflict.our, conflict.their].into_iter().flatten() {
            paths.push(RepoPath(entry.path));
        }
    }
    Ok(paths)
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
    diff_subtrees(repo, Some(old), Some(new), b"", &mut |path, _, _| paths.push(path))?;
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// [`tree_diff_paths`] with the versions the two trees have of those paths, read in the
/// same walk (what [`Versions::of`] would read again).
pub(crate) fn tree_diff_versions(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
) -> Result<(Vec<RepoPath>, Versions, Versions), GitError> {
    let (mut olds, mut news) = (std::collections::HashMap::new(), std::collections::HashMap::new());
    let mut paths = Vec::new();
    diff_subtrees(repo, Some(old), Some(new), b"", &mut |path, before, after| {
        if let Some(version) = before {
            olds.insert(path.clone(), version);
        }
        if let Some(version) = after {
            news.insert(path.clone(), version);
        }
        paths.push(path);
    })?;
    paths.sort();
    paths.dedup();
    Ok((paths, Versions(olds), Versions(news)))
}

/// One side of a tree entry: its version, and whether it is a tree.
type Side = (Version, bool);

fn diff_subtrees(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
    prefix: &[u8],
    out: &mut dyn FnMut(RepoPath, Option<Version>, Option<Version>),
) -> Result<(), GitError> {
    let mut entries: std::collections::BTreeMap<Vec<u8>, (Option<Side>, Option<Side>)> =
        std::collections::BTreeMap::new();
    let side = |entry: &git2::TreeEntry<'_>| -> Option<Side> {
        let kind = entry.kind()?;
        Some(((entry.id(), entry.filemode(), kind), kind == git2::ObjectType::Tree))
    };
    for entry in old.into_iter().flat_map(|t| t.iter()) {
        entries.entry(entry.name_bytes().to_vec()).or_default().0 = side(&entry);
    }
    for entry in new.into_iter().flat_map(|t| t.iter()) {
        entries.entry(entry.name_bytes().to_vec()).or_default().1 = side(&entry);
    }
    let subtree = |oid: Oid| repo.find_tree(oid).ctx(|| format!("could not read tree {oid}"));
    for (name, (before, after)) in entries {
        if before == after {
            continue;
        }
        let path = [prefix, &name].concat();
        let old_tree = match before {
            Some(((oid, _, _), true)) => Some(subtree(oid)?),
            _ => None,
        };
        let new_tree = match after {
            Some(((oid, _, _), true)) => Some(subtree(oid)?),
            _ => None,
        };
        if old_tree.is_some() || new_tree.is_some() {
            let dir = [&path[..], b"/"].concat();
            diff_subtrees(repo, old_tree.as_ref(), new_tree.as_ref(), &dir, out)?;
        }
        let file_before = before.filter(|(_, tree)| !tree).map(|(version, _)| version);
        let file_after = after.filter(|(_, tree)| !tree).map(|(version, _)| version);
        if file_before.is_some() || file_after.is_some() {
            out(RepoPath(path), file_before, file_after);
        }
    }
    Ok(())
}

pub(crate) use crate::index_file::Version;

/// The versions a tree has of some paths, read in one walk: looking each path up would
/// read every tree above it again (libgit2 keeps no tree above 4 KiB in its cache), which
/// for 3,000 files in one folder means reading that folder 3,000 times.
pub(crate) struct Versions(std::collections::HashMap<RepoPath, Version>);

impl Versions {
    /// The versions `tree` has of `paths` (a path it lacks, or has as a folder, has none).
    pub(crate) fn of(
        repo: &Repository,
        tree: &Tree<'_>,
        paths: &[RepoPath],
    ) -> Result<Versions, GitError> {
        let wanted: std::collections::HashSet<&[u8]> =
            paths.iter().map(|path| path.0.as_slice()).collect();
        let mut folders: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        for path in paths {
            for (at, byte) in path.0.iter().enumerate() {
                if *byte == b'/' {
                    folders.insert(&path.0[..at]);
                }
            }
        }
        let mut found = std::collections::HashMap::new();
        collect_versions(repo, tree, b"", &wanted, &folders, &mut found)?;
        Ok(Versions(found))
    }

    /// The version of `path`, if any.
    pub(crate) fn get(&self, path: &RepoPath) -> Option<Version> {
        self.0.get(path).copied()
    }

    /// The paths of `paths` that have a version.
    pub(crate) fn present<'p>(&self, paths: &'p [RepoPath]) -> Vec<&'p RepoPath> {
        paths.iter().filter(|path| self.0.contains_key(*path)).collect()
    }
}

/// [`Versions::of`]: descends only into the folders above wanted paths.
fn collect_versions(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &[u8],
    wanted: &std::collections::HashSet<&[u8]>,
    folders: &std::collections::HashSet<&[u8]>,
    found: &mut std::collections::HashMap<RepoPath, Version>,
) -> Result<(), GitError> {
    for entry in tree.iter() {
        let path = [prefix, entry.name_bytes()].concat();
        match entry.kind() {
            Some(git2::ObjectType::Tree) if folders.contains(path.as_slice()) => {
                let subtree = repo
                    .find_tree(entry.id())
                    .ctx(|| format!("could not read tree {}", entry.id()))?;
                let prefix = [&path[..], b"/"].concat();
                collect_versions(repo, &subtree, &prefix, wanted, folders, found)?;
            }
            Some(git2::ObjectType::Tree) | None => {}
            Some(kind) => {
                if wanted.contains(path.as_slice()) {
                    found.insert(RepoPath(path), (entry.id(), entry.filemode(), kind));
                }
            }
        }
    }
    Ok(())
}

/// How a path-limited checkout treats files that differ from HEAD.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Only files that still match HEAD (or are absent) are written; others are conflicts.
    Safe,
    /// Overwrite and remove untracked files on the listed paths (breeze's own worktrees).
    Force,
}

/// Moves the checkout at `at` from tree `from` to tree `to` for the paths the two differ
/// in, index included; HEAD is left alone. Files in the way (see [`Mode`]) give
/// [`GitError::Dirty`] and nothing is written. Returns how many paths were written.
pub(crate) fn move_paths(
    repo: &Repository,
    at: &Path,
    from: &Tree<'_>,
    to: &Tree<'_>,
    (mode, index): (Mode, IndexFile),
) -> Result<usize, GitError> {
    let touched = tree_diff_paths(repo, from, to)?;
    if let Err(paths) = checkout_paths(repo, to, &touched, (mode, index), at)? {
        return Err(GitError::Dirty { path: at.to_path_buf(), paths });
    }
    // An index that made `from` makes `to` now: no tree need be made of it.
    let index = fresh_index(repo, at)?;
    crate::index_tree::moved((repo, &index), (from.id(), to.id()), &touched);
    Ok(touched.len())
}

/// Checks `tree` out for exactly `paths` in `repo`'s working tree and index. HEAD is left
/// alone; with [`Mode::Safe`] HEAD is the baseline, so call this before moving HEAD.
/// Returns `Ok(Err(paths))` when files in the way would be overwritten (nothing is written
/// then). `index`: what becomes of the index file once the entries are set in memory.
pub(crate) fn checkout_paths(
    repo: &Repository,
    tree: &Tree<'_>,
    paths: &[RepoPath],
    (mode, index_file): (Mode, IndexFile),
    at: &Path,
) -> Result<Result<(), Vec<String>>, GitError> {
    if paths.is_empty() {
        return Ok(Ok(()));
    }
    // libgit2 refuses objects looked up through another handle, even of the same repository.
    let tree = repo.find_tree(tree.id()).ctx(|| format!("could not read tree {}", tree.id()))?;
    let tree = &tree;
    // libgit2 neither reads the index (the handle's is current: `fresh_index`) nor writes
    // it: breeze sets the entries of `paths` and writes the file (`index_file.rs`).
    let mut index = fresh_index(repo, at)?;
    let mut conflicts: Vec<String> = Vec::new();
    let result = {
        let mut builder = CheckoutBuilder::new();
        match mode {
            Mode::Safe => builder.safe(),
            Mode::Force => builder.force().remove_untracked(true),
        };
        builder.disable_pathspec_match(true).update_index(false).refresh(false);
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
        Ok(()) => {
            let target = Versions::of(repo, tree, paths)?;
            let entries = (repo, &mut index);
            index_file::set_entries(entries, at, &|path| target.get(path), paths, &[])?;
            // `paths` are sorted, their files just written by this checkout.
            match index_file {
                IndexFile::Whole => {
                    index_file::write_known(repo, &mut index, at, paths, tree.id())?;
                }
                IndexFile::Written => index_file::write(repo, &mut index, at, paths)?,
                IndexFile::LeftBehind => {
                    let bytes: Vec<Vec<u8>> = paths.iter().map(|path| path.0.clone()).collect();
                    if !index_behind::note(repo, &bytes)? {
                        index_file::write(repo, &mut index, at, paths)?;
                        index_behind::written(repo)?;
                    }
                }
            }
            Ok(Ok(()))
        }
        Err(e) if e.code() == ErrorCode::Conflict || !conflicts.is_empty() => {
            conflicts.sort();
            conflicts.dedup();
            if conflicts.is_empty() {
                conflicts.push(e.message().to_string());
            }
            Ok(Err(conflicts))
        }
        Err(e) => Err(locked_or(e, at, || {
            format!("could not check out tree {} in {}", tree.id(), at.display())
        })),
    }
}

/// What a checkout of some paths does with the index file, once their entries are set in
/// the handle's index in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexFile {
    /// Written whole.
    Written,
    /// Written whole as the checked-out tree: the paths are every path where the index
    /// differs from it ([`index_file::write_known`]: no tree is made).
    Whole,
    /// Left behind HEAD at those paths, noted in the lane's marker (`index_behind.rs`; the
    /// caller moves HEAD to the tree next): a lane's move, whose index file breeze writes
    /// before another git reads it — the worker's git reads a copy written from memory
    /// (`Repo::seal_lane`). Written whole when the marker would be too long.
    LeftBehind,
}

/// Writes the versions `tree` has of `paths` (each present in it) into the folder `into`
/// instead of the working tree, as libgit2 checks them out (line-ending and `ident`
/// filters, modes, links); the index, the working tree and HEAD of `repo` stay as they
/// are. libgit2 skips a file whose path HEAD holds as a folder (a folder that becomes a
/// file) unless it finds a folder there: it gets one and a second pass; a file still
/// missing then is written from its blob, unfiltered (and said in the log).
pub(crate) fn stage_paths(
    repo: &Repository,
    (tree, versions): (&Tree<'_>, &Versions),
    paths: &[&RepoPath],
    into: &Path,
    at: &Path,
) -> Result<(), GitError> {
    checkout_into(repo, tree, paths, into, at)?;
    let mut missing: Vec<&RepoPath> = paths
        .iter()
        .filter(|path| std::fs::symlink_metadata(into.join(path.as_path())).is_err())
        .copied()
        .collect();
    if !missing.is_empty() {
        // libgit2 writes a file over a folder that HEAD has there when it finds one.
        for path in &missing {
            let dir = into.join(path.as_path());
            std::fs::create_dir_all(&dir).map_err(|e| GitError::io("create directory", &dir, e))?;
        }
        checkout_into(repo, tree, &missing, into, at)?;
        missing.retain(|path| {
            std::fs::symlink_metadata(into.join(path.as_path())).is_ok_and(|m| m.is_dir())
        });
        for path in &missing {
            let _ = std::fs::remove_dir(into.join(path.as_path()));
        }
    }
    if !missing.is_empty() {
        tracing::warn!(paths = ?display_all_refs(&missing), "written without line-ending filters (a folder became a file)");
    }
    write_blobs(repo, versions, &missing, into)
}

/// Display strings of `paths`.
fn display_all_refs(paths: &[&RepoPath]) -> Vec<String> {
    paths.iter().map(|path| path.display()).collect()
}

/// Writes the versions `tree` has of `paths` into the folder `into` straight from their
/// blobs: a file with its executable bit, a symbolic link as a link (a file holding its
/// target where `core.symlinks` is false), a gitlink not at all. What a checkout writes
/// where no filter applies.
pub(crate) fn write_blobs(
    repo: &Repository,
    versions: &Versions,
    paths: &[&RepoPath],
    into: &Path,
) -> Result<(), GitError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let symlinks = repo.config().and_then(|c| c.get_bool("core.symlinks")).unwrap_or(true);
    for path in paths {
        let Some((id, mode, git2::ObjectType::Blob)) = versions.get(path) else { continue };
        let blob =
            repo.find_blob(id).map_err(|_| GitError::MissingObject { what: "blob", oid: id })?;
        let dest = into.join(path.as_path());
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError::io("create directory", parent, e))?;
        }
        if mode == i32::from(git2::FileMode::Link) && symlinks {
            use std::os::unix::ffi::OsStrExt as _;
            let target = std::ffi::OsStr::from_bytes(blob.content());
            std::os::unix::fs::symlink(target, &dest)
                .map_err(|e| GitError::io("write", &dest, e))?;
            continue;
        }
        // The umask applies, as to git's own checkouts.
        let permissions =
            if mode == i32::from(git2::FileMode::BlobExecutable) { 0o777 } else { 0o666 };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(permissions)
            .open(&dest)
            .map_err(|e| GitError::io("write", &dest, e))?;
        file.write_all(blob.content()).map_err(|e| GitError::io("write", &dest, e))?;
    }
    Ok(())
}

/// libgit2's checkout of `paths` of `tree` into the folder `into`.
fn checkout_into(
    repo: &Repository,
    tree: &Tree<'_>,
    paths: &[&RepoPath],
    into: &Path,
    at: &Path,
) -> Result<(), GitError> {
    // libgit2 refuses objects looked up through another handle, even of the same repository.
    let tree = repo.find_tree(tree.id()).ctx(|| format!("could not read tree {}", tree.id()))?;
    let mut builder = CheckoutBuilder::new();
    // Forced into an empty folder: every listed path is written. Not refreshed: the index
    // in memory is neither re-read nor cleaned, and none is written.
    builder.force().update_index(false).refresh(false).disable_pathspec_match(true);
    builder.target_dir(into);
    for path in paths {
        builder.path(path.as_path());
    }
    repo.checkout_tree(tree.as_object(), Some(&mut builder)).map_err(|e| {
        locked_or(e, at, || {
            format!("could not write the files of tree {} for {}", tree.id(), at.display())
        })
    })
}

/// Paths among `touched` that the checkout has changed (staged or not) or that an
/// untracked or ignored file occupies: fast-forwarding would overwrite them. A changed
/// path that already holds exactly what `new_tree` has, with an index entry that is
/// HEAD's, the new one, or none, does not block (it is rewritten with the same content).
pub(crate) fn blocking_paths(
    repo: &Repository,
    at: &Path,
    touched: &[RepoPath],
    old_tree: &Tree<'_>,
    new_tree: &Tree<'_>,
) -> Result<Vec<String>, GitError> {
    if touched.is_empty() {
        return Ok(Vec::new());
    }
    let index = fresh_index(repo, at)?;
    let mut blocking: Vec<String> = changed_at(repo, at, &index, touched)?
        .into_iter()
        .filter(|path| !holds_target(at, path, &index, old_tree, new_tree))
        .map(|path| path.display())
        .collect();
    blocking.sort();
    blocking.dedup();
    Ok(blocking)
}

/// What `git status --ignored=matching --untracked-files=all` lists among `touched` in the
/// checkout at `at` (its index `index`): staged, changed, untracked and ignored paths,
/// unsorted, some twice. Only the index entries at those paths are looked at, not all.
fn changed_at(
    repo: &Repository,
    at: &Path,
    index: &Index,
    touched: &[RepoPath],
) -> Result<Vec<RepoPath>, GitError> {
    let looked: Vec<&[u8]> = touched.iter().map(|path| path.0.as_slice()).collect();
    // The landing's index is a copy (or held in memory): its file's time says nothing of
    // when the entries' stat data were recorded, so each file that matches its entry is
    // hashed (the landing's paths only).
    let in_way = workdir_changes_at(repo, at, (index, None), &looked, IgnoredFiles::Each)?;
    let mut changed: Vec<RepoPath> = in_way.into_iter().map(|(path, _)| RepoPath(path)).collect();
    let context = || format!("could not compare HEAD with the index in {}", at.display());
    changed.extend(staged_at(repo, index, &looked).ctx(context)?);
    Ok(changed)
}

/// Whether `path` in the checkout at `at` already is what `new_tree` says (content, kind,
/// executable bit, or absent) and its index entry holds nothing of the user's own.
fn holds_target(
    at: &Path,
    path: &RepoPath,
    index: &Index,
    old_tree: &Tree<'_>,
    new_tree: &Tree<'_>,
) -> bool {
    let blob_at =
        |tree: &Tree<'_>| tree.get_path(path.as_path()).ok().map(|e| (e.id(), e.filemode()));
    let target = blob_at(new_tree);
    let staged = index.get_path(path.as_path(), 0).map(|e| e.id);
    let old = blob_at(old_tree).map(|(id, _)| id);
    if staged.is_some() && staged != old && staged != target.map(|(id, _)| id) {
        return false;
    }
    let file = at.join(path.as_path());
    let meta = std::fs::symlink_metadata(&file).ok();
    match (target, meta) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some((id, mode)), Some(meta)) => {
            use std::os::unix::fs::PermissionsExt;
            let actual = if meta.file_type().is_symlink() {
                if mode != i32::from(git2::FileMode::Link) {
                    return false;
                }
                let Ok(target) = std::fs::read_link(&file) else { return false };
                use std::os::unix::ffi::OsStrExt;
                Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes())
            } else if meta.is_file() {
                let executable = meta.permissions().mode() & 0o111 != 0;
                let wanted = mode == i32::from(git2::FileMode::BlobExecutable);
                if executable != wanted || !(wanted || mode == i32::from(git2::FileMode::Blob)) {
                    return false;
                }
                Oid::hash_file(git2::ObjectType::Blob, &file)
            } else {
                return false;
            };
            actual.is_ok_and(|actual| actual == id)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{Versions, staged_repo_paths, tree_diff_paths, tree_diff_versions};
    use super::{changed_at, workdir_statuses};
    use git2::{FileMode, Repository, Status, build::TreeUpdateBuilder};

    use crate::git_cli::git_for_test as git;
    use crate::paths::{RepoPath, WorkdirChanges};

    /// Commits everything tracked in the repository at `root`, as a test identity.
    fn commit(root: &std::path::Path, message: &str) {
        git(root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message]);
    }

    /// A repository at `root` on `main` whose first commit holds `files` (path, text).
    fn committed(root: &std::path::Path, files: &[(&str, &str)]) {
        git(root, &["init", "-q", "-b", "main"]);
        for (path, text) in files {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        git(root, &["add", "."]);
        commit(root, "base");
    }

    /// Rewrites `path` (tracked, unchanged) in the repository at `root` with `text` of the
    /// same size in the tick its index entry was recorded in: the file and the index file
    /// get the entry's time back, and ctime is not trusted, so only its content tells.
    fn rewrite_in_its_tick(root: &std::path::Path, path: &str, text: &str) {
        git(root, &["config", "core.trustctime", "false"]);
        let recorded = std::fs::metadata(root.join(path)).unwrap().modified().unwrap();
        std::fs::write(root.join(path), text).unwrap();
        let same_tick = std::fs::FileTimes::new().set_modified(recorded);
        for file in [path, ".git/index"] {
            let file = std::fs::File::options().write(true).open(root.join(file)).unwrap();
            file.set_times(same_tick).unwrap();
        }
    }

    /// Leaves `path` (committed on main) in conflict in the repository at `root`: changed
    /// on a branch and on main, then merged.
    fn merge_in_conflict(root: &std::path::Path, path: &str) {
        git(root, &["checkout", "-qb", "other"]);
        std::fs::write(root.join(path), "theirs\n").unwrap();
        commit(root, "theirs");
        git(root, &["checkout", "-q", "main"]);
        std::fs::write(root.join(path), "ours\n").unwrap();
        commit(root, "ours");
        let merged = std::process::Command::new("git")
            .args(["merge", "-q", "other"])
            .current_dir(root)
            .output()
            .unwrap();
        assert!(!merged.status.success(), "the merge conflicts");
    }

    /// What a landing finds in its way at the paths it touches is what `git status` lists
    /// there: staged, changed, untracked and ignored files, a staged removal, a conflict,
    /// files beneath a touched folder, a file rewritten in the tick its entry was recorded
    /// in (the landing reads a copy of the index); nothing of the paths it does not touch.
    #[test]
    fn what_is_in_a_landings_way_is_what_git_status_lists_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = ["a.txt", "b.txt", "c.txt", "d/e.txt", "g.txt", "h.txt", "m.txt"]
            .map(|path| (path, format!("{path}\n")));
        let mut files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        files.push((".gitignore", "*.log\n"));
        committed(root, &files);
        merge_in_conflict(root, "m.txt");
        std::fs::write(root.join("a.txt"), "staged\n").unwrap();
        git(root, &["add", "a.txt"]);
        std::fs::write(root.join("b.txt"), "changed\n").unwrap();
        git(root, &["rm", "-q", "--cached", "c.txt"]);
        std::fs::write(root.join("d/f.txt"), "untracked\n").unwrap();
        std::fs::write(root.join("new.txt"), "untracked\n").unwrap();
        std::fs::write(root.join("x.log"), "ignored\n").unwrap();
        std::fs::write(root.join("g.txt"), "changed, not touched\n").unwrap();
        // The landing reads a copy of the index, newer than the entry.
        rewrite_in_its_tick(root, "h.txt", "H.TXT\n");
        let copy = dir.path().join(".git/landing-copy");
        std::fs::copy(root.join(".git/index"), &copy).unwrap();

        let touched = ["a.txt", "b.txt", "c.txt", "d", "h.txt", "m.txt", "new.txt", "x.log"];
        let repo = Repository::open(root).unwrap();
        let index = git2::Index::open(&copy).unwrap();
        let touched_paths: Vec<RepoPath> =
            touched.iter().map(|path| RepoPath(path.as_bytes().to_vec())).collect();
        let mut found: Vec<String> = changed_at(&repo, root, &index, &touched_paths)
            .unwrap()
            .iter()
            .map(RepoPath::display)
            .collect();
        found.sort();
        found.dedup();

        let mut args = vec![
            "-c",
            "status.renames=false",
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--",
        ];
        args.extend(touched);
        let listed =
            std::process::Command::new("git").args(&args).current_dir(root).output().unwrap();
        let mut expected: Vec<String> = String::from_utf8(listed.stdout)
            .unwrap()
            .split('\0')
            .filter(|record| record.len() > 3)
            .map(|record| record[3..].to_string())
            .collect();
        expected.sort();
        expected.dedup();
        assert_eq!(found, expected);
        assert_eq!(
            expected,
            ["a.txt", "b.txt", "c.txt", "d/f.txt", "h.txt", "m.txt", "new.txt", "x.log"]
                .map(String::from)
        );
    }

    /// A look limited to some paths compares the working tree with their index entries
    /// alone, and finds what a whole status finds there: a file rewritten in the tick its
    /// index file was written (same size, same time, ctime not trusted) is hashed, not
    /// taken on its stat data; a deletion; an untracked file in a new folder.
    #[test]
    fn a_look_at_some_paths_finds_what_a_whole_status_finds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        committed(root, &[("a.txt", "aaaa\n"), ("c.txt", "cccc\n"), ("d/b.txt", "bbbb\n")]);
        rewrite_in_its_tick(root, "a.txt", "AAAA\n");
        std::fs::remove_file(root.join("c.txt")).unwrap();
        std::fs::create_dir(root.join("new")).unwrap();
        std::fs::write(root.join("new/x.txt"), "x\n").unwrap();

        let repo = Repository::open(root).unwrap();
        let looked: Vec<PathBuf> = ["a.txt", "c.txt", "d", "new"].map(PathBuf::from).to_vec();
        let mut some =
            workdir_statuses(&repo, root, WorkdirChanges::Only(&looked), &[], false).unwrap();
        let mut whole = workdir_statuses(&repo, root, WorkdirChanges::Unknown, &[], false).unwrap();
        some.sort();
        whole.sort();
        let expected = vec![
            (b"a.txt".to_vec(), Status::WT_MODIFIED),
            (b"c.txt".to_vec(), Status::WT_DELETED),
            (b"new/x.txt".to_vec(), Status::WT_NEW),
        ];
        assert_eq!(whole, expected);
        assert_eq!(some, expected);
    }

    /// A merge left in conflict: its path is staged work (each side's entry), and a staged
    /// file beside it is not what is listed then; once resolved, what is staged is listed.
    #[test]
    fn staged_paths_name_a_conflict_and_then_what_is_staged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        committed(root, &[("a.txt", "base\n")]);
        merge_in_conflict(root, "a.txt");
        let repo = Repository::open(root).unwrap();
        let paths = staged_repo_paths(&repo, root).unwrap();
        assert_eq!(paths, vec![RepoPath(b"a.txt".to_vec()); 3]);
        std::fs::write(root.join("a.txt"), "resolved\n").unwrap();
        git(root, &["add", "a.txt"]);
        assert_eq!(staged_repo_paths(&repo, root).unwrap(), vec![RepoPath(b"a.txt".to_vec()); 2]);
    }

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

        // The versions read in the same walk are the ones a lookup of each tree finds.
        let (paths, old_versions, new_versions) = tree_diff_versions(&repo, &old, &new).unwrap();
        let (looked_old, looked_new) = (
            Versions::of(&repo, &old, &paths).unwrap(),
            Versions::of(&repo, &new, &paths).unwrap(),
        );
        for path in &paths {
            assert_eq!(old_versions.get(path), looked_old.get(path), "{}", path.display());
            assert_eq!(new_versions.get(path), looked_new.get(path), "{}", path.display());
        }
        let link = paths.iter().find(|p| p.display() == "link").unwrap();
        assert_eq!(new_versions.get(link).map(|(_, mode, _)| mode), Some(0o120000));
        let dir = paths.iter().find(|p| p.display() == "dir_becomes_file/q").unwrap();
        assert!(old_versions.get(dir).is_some() && new_versions.get(dir).is_none());
    }
}
