//! Updating a checkout of main (the user's, usually) for a landing so that a kill at any
//! moment leaves each path either as it was or as the landing has it — never half-written.
//!
//! The versions are first written into a scratch folder in the checkout's git folder
//! (`<git dir>/breeze-landing/`: on the checkout's file system, never in its working tree),
//! then moved into place one path at a time by `rename`, removals first, so that a folder
//! that becomes a file and a file that becomes a folder find their place free. A path on
//! another file system than the git folder is copied next to its place first
//! (`.<name>.breeze-landing`) and renamed from there. The index entries of exactly those
//! paths are then set, with the stat data of the files now there (so `git status` has
//! nothing to re-hash), the index written by breeze (`index_file::write_users`: none of
//! the user's staged trees made in their repository) and the index file replaced by one
//! `rename` under git's `index.lock`.
//!
//! The index a landing wrote stays parsed in memory ([`KeptIndexes`]): the next landing
//! on the same checkout takes it instead of reading the file again (8.9 MB, each entry
//! allocated and the whole file hashed, at 100,000 files) when the file's stamp is still
//! the one that landing left — no other process wrote the index since.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use git2::{Index, ObjectType, Oid, Repository};

use crate::file_stamp::{Stamp, stamp};
use crate::index_file::{self, TreesInMemory, UsersImage, set_entries};
use crate::libgit2_checkout::Versions;

use crate::error::{Context as _, GitError};
use crate::paths::{RepoPath, remove_dir_if_exists};

/// The scratch folder of a landing in a checkout's git folder.
pub(crate) const SCRATCH_DIR: &str = "breeze-landing";
/// Suffix of a version copied next to its place (a path on another file system).
const NEAR_SUFFIX: &str = ".breeze-landing";
/// How long a landing waits for another git process to release a checkout's index.
pub(crate) const INDEX_WAIT: Duration = Duration::from_secs(5);

/// An update of one checkout of main for a landing, as the engine journals it before the
/// first path is written: enough for `breeze resume` to finish or undo it
/// ([`crate::Repo::finish_checkout_update`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutUpdate {
    /// The checkout (the user's, usually): its root.
    pub checkout: PathBuf,
    /// Its HEAD's commit before the landing: main's tip the landing builds on.
    pub from: Oid,
    /// The landing commit.
    pub to: Oid,
    /// How many paths change.
    pub paths: usize,
}

/// Told about each checkout update of [`crate::Repo::advance_main_observed`].
pub trait CheckoutObserver {
    /// Before the first path of `update` is written; an error stops the landing with
    /// nothing written (the engine journals the update here).
    fn updating(&mut self, update: &CheckoutUpdate) -> std::io::Result<()>;

    /// After each path is in place: `done` of `total`.
    fn placed(&mut self, _done: usize, _total: usize) {}

    /// After every path and the index of `update` are written, before main moves.
    fn updated(&mut self, _update: &CheckoutUpdate) {}
}

/// An observer that hears nothing (plain [`crate::Repo::advance_main`]).
pub(crate) struct Unobserved;

impl CheckoutObserver for Unobserved {
    fn updating(&mut self, _update: &CheckoutUpdate) -> std::io::Result<()> {
        Ok(())
    }
}

/// A landing's scratch folder in one checkout's git folder.
pub(crate) struct Scratch {
    root: PathBuf,
}

impl Scratch {
    /// The scratch folder of the checkout whose git folder is `git_dir`, empty (what a
    /// killed landing left there is removed first).
    pub(crate) fn fresh(git_dir: &Path) -> Result<Scratch, GitError> {
        remove_leftovers(git_dir)?;
        let root = git_dir.join(SCRATCH_DIR);
        std::fs::create_dir_all(&root).map_err(|e| GitError::io("create directory", &root, e))?;
        Ok(Scratch { root })
    }

    /// A place named `name` in it.
    pub(crate) fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Removes it.
    pub(crate) fn remove(&self) -> Result<(), GitError> {
        remove_dir_if_exists(&self.root)
    }

    /// The index of the checkout `crepo` (at `at`) read as [`Scratch::take_index`] reads
    /// it, to be held for the next landing as if the last one had written it; this folder
    /// is removed (the index in memory needs no file). `None` when the checkout has no
    /// index file.
    pub(crate) fn read_ahead(
        self,
        crepo: &Repository,
        at: &Path,
    ) -> Result<Option<KeptIndex>, GitError> {
        let context = || format!("could not read the index of {}", at.display());
        let IndexCopy { before, .. } = self.take_index(crepo, at, None)?;
        let index = crepo.index().ctx(context)?;
        self.remove()?;
        let Some(stamp) = before else { return Ok(None) };
        let trees = TreesInMemory::over(crepo).ctx(context)?;
        Ok(keep_index(index, KeptIndex { trees, stamp, tree: None, image: None }))
    }

    /// Copies the index of the checkout `crepo` into this folder, reads the copy and makes
    /// it the handle's index: the conflict check, the status of the touched paths and the
    /// entry update of one landing then share one read of the index (each is about 13 ms
    /// at 20,000 files), and the copy is what replaces the index when no other process
    /// wrote it meanwhile ([`write_index_entries`]). The handle must not be pooled after:
    /// its index is this scratch file.
    /// `kept`: the index the last landing on this checkout wrote, taken instead of copying
    /// and reading the file when it is still what that landing left.
    pub(crate) fn take_index(
        &self,
        crepo: &Repository,
        at: &Path,
        kept: Option<KeptIndex>,
    ) -> Result<IndexCopy, GitError> {
        if let Some(kept) = kept
            && let Some(taken) = self.reuse_index(crepo, at, kept)?
        {
            return Ok(taken);
        }
        let (before, mut index) = self.copy_index(crepo, at)?;
        crepo
            .set_index(&mut index)
            .ctx(|| format!("could not read the index of {}", at.display()))?;
        crate::index_tree::forget_repo(crepo);
        Ok(IndexCopy { before, trees: None, tree: None, image: None })
    }

    /// The `kept` index made the handle's when the checkout's index file still has the
    /// stamp the landing that wrote it left. The index is not copied into this folder: a
    /// stand-in that no git can read takes the copy's place, known as the file breeze
    /// wrote from that index ([`index_file::adopt`]), so the handle never reads it; a read
    /// would fail loudly instead of taking some other index. The landing writes the copy
    /// whole from memory anyway ([`write_index_entries`]). `None` when the index changed
    /// since.
    fn reuse_index(
        &self,
        crepo: &Repository,
        at: &Path,
        kept: KeptIndex,
    ) -> Result<Option<IndexCopy>, GitError> {
        let index_file = crepo.path().join("index");
        let copy = self.dir("index");
        let before = stamp(&index_file);
        if before != Some(kept.stamp) {
            return Ok(None);
        }
        let _ = std::fs::remove_file(&copy);
        std::fs::write(&copy, HELD_IN_MEMORY).map_err(|e| GitError::io("write", &copy, e))?;
        let context = || format!("could not read the index of {}", at.display());
        let KeptIndex { trees, tree, image, .. } = kept;
        let mut index = trees.repo().index().ctx(context)?;
        // The holder lets go of it first (a repository handle that lets go of its index
        // clears the index's owner, which must be the checkout's handle: libgit2 looks
        // through it at the work tree).
        let mut empty = Index::new().ctx(context)?;
        trees.repo().set_index(&mut empty).ctx(context)?;
        if index.path() != Some(copy.as_path()) {
            return Ok(None);
        }
        crepo.set_index(&mut index).ctx(context)?;
        crate::index_tree::forget_repo(crepo);
        index_file::adopt(&index, &copy);
        Ok(Some(IndexCopy { before, trees: Some(trees), tree, image }))
    }

    /// The checkout's index copied to `index` in this folder (replacing an older copy) and
    /// read, with the stamp the index file had when it was copied.
    fn copy_index(
        &self,
        crepo: &Repository,
        at: &Path,
    ) -> Result<(Option<Stamp>, Index), GitError> {
        let index_file = crepo.path().join("index");
        let copy = self.dir("index");
        let before = stamp(&index_file);
        let _ = std::fs::remove_file(&copy);
        if before.is_some() {
            std::fs::copy(&index_file, &copy).map_err(|e| GitError::io("copy", &index_file, e))?;
        }
        let index =
            Index::open(&copy).ctx(|| format!("could not read the index of {}", at.display()))?;
        Ok((before, index))
    }
}

/// What stands in a landing's scratch folder for the copy of an index held in memory
/// ([`Scratch::take_index`]): not an index (git and libgit2 refuse its first bytes).
const HELD_IN_MEMORY: &[u8] = b"breeze: this landing holds the index in memory\n";

/// The index of a checkout as [`Scratch::take_index`] copied it: the stamp the index file
/// had then, and for an index a landing kept, the in-memory trees its cache-tree may name.
pub(crate) struct IndexCopy {
    before: Option<Stamp>,
    trees: Option<TreesInMemory>,
    /// The tree the kept index equals, when the landing that wrote it knew.
    tree: Option<Oid>,
    /// The bytes of the kept index's last write.
    image: Option<UsersImage>,
}

/// The index of a checkout of main as a landing wrote it: parsed, with the stamp the index
/// file had once replaced. git2's `Index` cannot move between threads; a repository handle
/// can, so the in-memory repository its cache-tree's trees were made in holds it.
pub(crate) struct KeptIndex {
    trees: TreesInMemory,
    stamp: Stamp,
    /// The tree the index equals, when the landing knew it (see [`TreeMove`]).
    tree: Option<Oid>,
    /// The bytes that landing wrote, which the next write is patched from.
    image: Option<UsersImage>,
}

/// A landing's move of a checkout's tree: an index that was the tree `from` is, once the
/// landing's paths are set, the tree `to` (the paths that differ between the two are
/// exactly those set). The cache-tree is then `to`'s, and no tree is made for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeMove {
    pub(crate) from: Oid,
    pub(crate) to: Oid,
}

/// The index each checkout of main had after the last landing, by the checkout's git
/// folder: what [`Scratch::take_index`] takes instead of reading the file again.
#[derive(Default)]
pub(crate) struct KeptIndexes {
    by_git_dir: Mutex<std::collections::HashMap<PathBuf, KeptIndex>>,
}

impl KeptIndexes {
    /// The index kept for the checkout whose git folder is `git_dir` (no longer kept: its
    /// taker changes it).
    pub(crate) fn take(&self, git_dir: &Path) -> Option<KeptIndex> {
        self.lock().remove(git_dir)
    }

    /// Whether an index is kept for the checkout whose git folder is `git_dir`.
    pub(crate) fn holds(&self, git_dir: &Path) -> bool {
        self.lock().contains_key(git_dir)
    }

    /// Keeps `index` for the checkout whose git folder is `git_dir`.
    pub(crate) fn keep(&self, git_dir: &Path, index: KeptIndex) {
        self.lock().insert(git_dir.to_path_buf(), index);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<PathBuf, KeptIndex>> {
        self.by_git_dir.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Removes what a killed landing left in the checkout whose git folder is `git_dir`: its
/// scratch folder, and git's `index.lock` when it is the scratch copy of the index (killed
/// between taking the lock and renaming it over the index). Whether there was anything.
pub(crate) fn remove_leftovers(git_dir: &Path) -> Result<bool, GitError> {
    let root = git_dir.join(SCRATCH_DIR);
    match std::fs::symlink_metadata(&root) {
        Err(_) => return Ok(false),
        Ok(meta) if !meta.is_dir() => {
            // Not breeze's making (breeze makes a folder): nothing is looked at through it.
            std::fs::remove_file(&root).map_err(|e| GitError::io("remove", &root, e))?;
            return Ok(true);
        }
        Ok(_) => {}
    }
    let lock = git_dir.join("index.lock");
    if let (Ok(ours), Ok(held)) =
        (std::fs::symlink_metadata(root.join("index")), std::fs::symlink_metadata(&lock))
        && (ours.dev(), ours.ino()) == (held.dev(), held.ino())
    {
        std::fs::remove_file(&lock).map_err(|e| GitError::io("remove", &lock, e))?;
    }
    remove_dir_if_exists(&root)?;
    Ok(true)
}

/// Removes the copies a killed landing left next to the places of `paths` in the checkout
/// at `at` (`.<name>.breeze-landing`, for paths on another file system).
pub(crate) fn remove_near_copies(at: &Path, paths: &[RepoPath]) -> Result<(), GitError> {
    for path in paths {
        let near = near_copy(&at.join(path.as_path()));
        if std::fs::symlink_metadata(&near).is_ok_and(|meta| !meta.is_dir()) {
            std::fs::remove_file(&near).map_err(|e| GitError::io("remove", &near, e))?;
        }
    }
    Ok(())
}

/// Where a version is copied next to `place` before it is renamed over it.
fn near_copy(place: &Path) -> PathBuf {
    let name = place.file_name().unwrap_or_default().to_string_lossy();
    place.with_file_name(format!(".{name}{NEAR_SUFFIX}"))
}

/// Puts `paths` of the checkout at `at` as `target` has them: a path `target` has is
/// renamed into place from `staged` (where its version was written), a path it lacks is
/// removed (and the folders it leaves empty). Removals go first, deepest first. Nothing is
/// written through a symbolic link or over a folder that is not empty: such paths are in
/// someone else's way and returned, unwritten. `placed` hears after every path.
pub(crate) fn replace_paths(
    at: &Path,
    staged: &Path,
    target: &Versions,
    paths: &[RepoPath],
    placed: &mut dyn FnMut(usize, usize),
) -> Result<Vec<RepoPath>, GitError> {
    let total = paths.len();
    let (writes, removals): (Vec<&RepoPath>, Vec<&RepoPath>) =
        paths.iter().partition(|path| target.get(path).is_some());
    let mut in_the_way = Vec::new();
    let mut done = 0;
    for path in removals.iter().rev() {
        remove_path(at, path)?;
        done += 1;
        placed(done, total);
    }
    let mut folders: HashSet<PathBuf> = HashSet::new();
    for path in writes {
        let kind = target.get(path).map(|(_, _, kind)| kind);
        if !write_path(at, staged, path, kind == Some(ObjectType::Commit), &mut folders)? {
            in_the_way.push(path.clone());
        }
        done += 1;
        placed(done, total);
    }
    Ok(in_the_way)
}

/// How the folders above a path stand.
enum Folders {
    /// All there, real folders.
    Ready,
    /// One is missing (created when asked).
    Missing,
    /// A file or a symbolic link stands where a folder must be.
    Blocked,
}

/// Checks the folders of `at` above `path`, creating missing ones when `create`; `known`
/// remembers the folders found or made.
fn folders_above(
    at: &Path,
    path: &Path,
    create: bool,
    known: &mut HashSet<PathBuf>,
) -> Result<Folders, GitError> {
    let Some(parent) = path.parent() else { return Ok(Folders::Ready) };
    let mut current = PathBuf::new();
    for component in parent.components() {
        current.push(component);
        if known.contains(&current) {
            continue;
        }
        let full = at.join(&current);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(Folders::Blocked),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if !create {
                    return Ok(Folders::Missing);
                }
                match std::fs::create_dir(&full) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists && full.is_dir() => {}
                    Err(e) => return Err(GitError::io("create directory", &full, e)),
                }
            }
            Err(e) => return Err(GitError::io("look at", &full, e)),
        }
        known.insert(current.clone());
    }
    Ok(Folders::Ready)
}

/// Removes the file or link at `path` (a folder there stays: its files are paths of their
/// own), then the folders it leaves empty.
fn remove_path(at: &Path, path: &RepoPath) -> Result<(), GitError> {
    let rel = path.as_path();
    if !matches!(folders_above(at, rel, false, &mut HashSet::new())?, Folders::Ready) {
        return Ok(()); // nothing can be there: no link is followed
    }
    let full = at.join(rel);
    match std::fs::symlink_metadata(&full) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(GitError::io("remove", &full, e)),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(GitError::io("look at", &full, e)),
    }
    let mut folder = rel.parent();
    while let Some(dir) = folder.filter(|dir| !dir.as_os_str().is_empty()) {
        if std::fs::remove_dir(at.join(dir)).is_err() {
            break; // not empty (or gone): git leaves it too
        }
        folder = dir.parent();
    }
    Ok(())
}

/// Renames the version of `path` staged in `staged` into place in `at` (a gitlink gets
/// its empty folder); `false` when something of someone else's is in the way.
fn write_path(
    at: &Path,
    staged: &Path,
    path: &RepoPath,
    gitlink: bool,
    folders: &mut HashSet<PathBuf>,
) -> Result<bool, GitError> {
    let rel = path.as_path();
    if let Folders::Blocked = folders_above(at, rel, true, folders)? {
        return Ok(false);
    }
    let place = at.join(rel);
    let there = std::fs::symlink_metadata(&place).ok();
    if gitlink {
        if there.is_none() {
            std::fs::create_dir(&place).map_err(|e| GitError::io("create directory", &place, e))?;
        }
        return Ok(true);
    }
    if there.is_some_and(|meta| meta.is_dir()) && std::fs::remove_dir(&place).is_err() {
        return Ok(false); // a folder with files in it
    }
    move_into_place(&staged.join(rel), &place)?;
    Ok(true)
}

/// Renames `version` over `place`; across file systems, copies it next to `place` first.
fn move_into_place(version: &Path, place: &Path) -> Result<(), GitError> {
    match std::fs::rename(version, place) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::CrossesDevices => {
            let near = near_copy(place);
            let _ = std::fs::remove_file(&near);
            let meta =
                std::fs::symlink_metadata(version).map_err(|e| GitError::io("read", version, e))?;
            if meta.file_type().is_symlink() {
                let target =
                    std::fs::read_link(version).map_err(|e| GitError::io("read", version, e))?;
                std::os::unix::fs::symlink(target, &near)
                    .map_err(|e| GitError::io("write", &near, e))?;
            } else {
                std::fs::copy(version, &near).map_err(|e| GitError::io("write", &near, e))?;
            }
            std::fs::rename(&near, place).map_err(|e| GitError::io("write", place, e))
        }
        Err(e) => Err(GitError::io("write", place, e)),
    }
}

/// Sets the index entries of the checkout at `at` (handle `crepo`) to what `target` has:
/// for `placed` paths (their files just written) with the stat data of those files, for
/// `unstatted` ones (a file of the user's stands there) with none, so git looks at the file.
/// A path `target` lacks loses its entry. The index is changed in a copy in `scratch` and
/// replaced in one rename under `index.lock` (waited for up to [`INDEX_WAIT`]); an index
/// another process writes meanwhile is read again. `taken`: the copy the landing read
/// already ([`Scratch::take_index`]), used while the index is still what it copied.
/// `moves`: when `target` is a whole tree's move and `placed` every path it changes.
/// Returns the index as written, for the next landing ([`KeptIndexes`]); `None` when
/// nothing was to change.
pub(crate) fn write_index_entries(
    crepo: &Repository,
    at: &Path,
    target: &Versions,
    (placed, unstatted): (&[RepoPath], &[RepoPath]),
    moves: Option<TreeMove>,
    scratch: &Scratch,
    mut taken: Option<IndexCopy>,
) -> Result<Option<KeptIndex>, GitError> {
    if placed.is_empty() && unstatted.is_empty() {
        return Ok(None);
    }
    let index_file = crepo.path().join("index");
    let lock = crepo.path().join("index.lock");
    let copy = scratch.dir("index");
    let context = || format!("could not write the index of {}", at.display());
    let deadline = Instant::now() + INDEX_WAIT;
    // The paths breeze just wrote, sorted, whose entries need no look at their content.
    let mut fresh = placed.to_vec();
    fresh.sort();
    // Where the index's trees are made: with a kept index, the ones its cache-tree names.
    let trees = match taken.as_mut().and_then(|taken| taken.trees.take()) {
        Some(trees) => trees,
        None => TreesInMemory::over(crepo).ctx(context)?,
    };
    let kept_tree = taken.as_ref().and_then(|taken| taken.tree);
    let mut kept_image = taken.as_mut().and_then(|taken| taken.image.take());
    loop {
        // The copy the landing already read (the handle's index), while the index is still
        // what was copied; else a fresh copy.
        let read =
            taken.take().filter(|taken| stamp(&index_file) == taken.before).and_then(|taken| {
                let index = crepo.index().ok()?;
                (index.path() == Some(copy.as_path())).then_some((taken.before, index))
            });
        let (before, mut index, known, mut image) = match read {
            Some((before, index)) => (before, index, kept_tree, kept_image.take()),
            None => {
                let (before, index) = scratch.copy_index(crepo, at)?;
                (before, index, None, None)
            }
        };
        if let Some(image) = &mut image {
            image.changed(placed.iter().chain(unstatted).cloned());
        }
        // The tree the index will be, when it was the move's old one (no staged changes).
        let moved = moves.and_then(|moves| {
            let tree = known.or_else(|| trees.existing_tree(&mut index))?;
            (tree == moves.from).then_some(moves.to)
        });
        set_entries((crepo, &mut index), at, &|path| target.get(path), placed, unstatted)?;
        let tree = (before.as_ref(), moved);
        index_file::write_users(crepo, &trees, (&mut index, &mut image), at, &fresh, tree)?;
        // The copy is about to move: what breeze remembers of it would name a missing file.
        index_file::forget(&index);
        if take_lock(&copy, &lock)? {
            if stamp(&index_file) == before {
                std::fs::rename(&lock, &index_file)
                    .map_err(|e| GitError::io("replace", &index_file, e))?;
                std::fs::remove_file(&copy).map_err(|e| GitError::io("remove", &copy, e))?;
                // The stamp after the copy's link is gone (that changes the file's ctime).
                let kept = |stamp| KeptIndex { trees, stamp, tree: moved, image };
                return Ok(stamp(&index_file).and_then(|stamp| keep_index(index, kept(stamp))));
            }
            // Another git process wrote the index since it was copied: start again.
            std::fs::remove_file(&lock).map_err(|e| GitError::io("remove", &lock, e))?;
        }
        if Instant::now() >= deadline {
            return Err(GitError::Locked {
                path: at.to_path_buf(),
                detail: format!("{} exists", lock.display()),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `index` held for the next landing by `kept`'s in-memory repository; `None` when it
/// cannot be held (the next landing then reads the file).
fn keep_index(mut index: Index, kept: KeptIndex) -> Option<KeptIndex> {
    kept.trees.repo().set_index(&mut index).ok()?;
    Some(kept)
}

/// Takes git's `index.lock` with `content` as what it holds: a hard link, which fails if
/// the lock exists (one step, so a kill leaves either no lock or one whose content is
/// complete and recognizably breeze's). `false`: another process holds it.
fn take_lock(content: &Path, lock: &Path) -> Result<bool, GitError> {
    match std::fs::hard_link(content, lock) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(_) => {
            // A file system without hard links: create the lock, then fill it.
            let bytes = std::fs::read(content).map_err(|e| GitError::io("read", content, e))?;
            match std::fs::OpenOptions::new().write(true).create_new(true).open(lock) {
                Ok(mut file) => {
                    use std::io::Write as _;
                    file.write_all(&bytes).map_err(|e| GitError::io("write", lock, e))?;
                    Ok(true)
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(GitError::io("create", lock, e)),
            }
        }
    }
}
