//! The tree a checkout's index in memory makes, known without making it again.
//!
//! libgit2 makes an index's tree (`Index::write_tree_to`) in a pass over every entry, after
//! a conflict check over all of them, and reads every tree of the result back into its
//! cache: about 4 ms a time at 100,000 files. A lane's task asked for it three times (the
//! move's look for staged changes, the worker's private index, the commit), and looked for
//! conflicts in two more passes. breeze changes a lane's index itself, at paths it knows
//! (the move's [`crate::index_file::set_entries`], the commit's staging), so the new tree
//! is the old one with those paths changed: made, when asked for, with libgit2's
//! `git_tree_create_updated`, which reads and writes only the folders on their way; and a
//! move from a known tree to another by the paths they differ in needs none ([`moved`]).
//!
//! A tree is known only:
//! - for the index of a handle from the pool (`handles.rs` registers each repository it
//!   opens and forgets it when the handle goes: an index object's address names it only
//!   while it lives), and only the repository's own index;
//! - after libgit2 made the tree once ([`tree_of`]);
//! - until a change breeze does not follow: a read of the file (`index_file::fresh_index`:
//!   another git wrote it), or a change made some other way than through [`follow`]
//!   ([`forget`], [`forget_repo`]).
//!
//! An index with a known tree has no conflicts: libgit2 makes no tree of one, and the
//! changes [`follow`] follows add none. Debug builds (the tests) compare every known tree
//! with the one libgit2 makes.
//!
//! The same changes are followed for the image of the index's last write (its file's
//! entries, [`keep_image`]): the next write serializes only the entries at the paths
//! changed since (`index_entries::patched`). An image is kept under the same rules as a
//! tree, and forgotten with it by [`forget`] and [`forget_repo`]; debug builds compare
//! every patched file with a pass over every entry.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, MutexGuard};

use git2::build::TreeUpdateBuilder;
use git2::{Binding as _, FileMode, Index, Oid, Repository};

use crate::index_entries::Image;
use crate::paths::bytes_path;

#[derive(Default)]
struct Known {
    /// The repositories of the pool's handles, by address: only their indexes' trees are
    /// kept.
    handles: HashSet<usize>,
    /// By index address: the repository it belongs to, and what is known of its tree.
    trees: HashMap<usize, (usize, Tree)>,
    /// By index address: the repository it belongs to, and the image of its last write.
    images: HashMap<usize, (usize, Image)>,
}

/// At most this many images are kept (a few lanes, the review and advice checkouts), each
/// the size of its index file.
const MAX_IMAGES: usize = 8;

/// What is known of the tree an index makes.
#[derive(Clone, PartialEq, Eq)]
enum Tree {
    /// It makes this tree.
    Made(Oid),
    /// It makes `base` with the entries it now holds at `paths` (or none there).
    Changed { base: Oid, paths: Vec<Vec<u8>> },
}

static KNOWN: LazyLock<Mutex<Known>> = LazyLock::new(Mutex::default);

fn known_trees() -> MutexGuard<'static, Known> {
    KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn repo_key(repo: &Repository) -> usize {
    repo.raw() as usize
}

fn index_key(index: &Index) -> usize {
    index.raw() as usize
}

/// A handle's repository, just opened by the pool: its index's tree may be kept. Not for
/// a repository whose index folds case (`core.ignorecase`): its paths do not name tree
/// entries exactly.
pub(crate) fn register(repo: &Repository) {
    let folds_case =
        repo.config().and_then(|config| config.get_bool("core.ignorecase")).unwrap_or(false);
    if !folds_case {
        known_trees().handles.insert(repo_key(repo));
    }
}

/// A handle's repository about to go: nothing of it is kept.
pub(crate) fn unregister(repo: &Repository) {
    let key = repo_key(repo);
    let mut known = known_trees();
    known.handles.remove(&key);
    known.trees.retain(|_, (owner, _)| *owner != key);
    known.images.retain(|_, (owner, _)| *owner != key);
}

/// `repo` was given another index (`Repository::set_index`): the trees known of its old
/// one go.
pub(crate) fn forget_repo(repo: &Repository) {
    let key = repo_key(repo);
    let mut known = known_trees();
    known.trees.retain(|_, (owner, _)| *owner != key);
    known.images.retain(|_, (owner, _)| *owner != key);
}

/// `index` changed in a way [`follow`] did not (read again, entries set otherwise).
pub(crate) fn forget(index: &Index) {
    let mut known = known_trees();
    known.trees.remove(&index_key(index));
    known.images.remove(&index_key(index));
}

/// The image of the last write of `repo`'s own `index`, taken (the caller keeps the next
/// one), with the paths changed since.
pub(crate) fn take_image(repo: &Repository, index: &Index) -> Option<Image> {
    let mut known = known_trees();
    let (owner, _) = known.images.get(&index_key(index))?;
    if *owner != repo_key(repo) {
        return None;
    }
    known.images.remove(&index_key(index)).map(|(_, image)| image)
}

/// Whether an image of `index` is kept.
pub(crate) fn has_image(index: &Index) -> bool {
    known_trees().images.contains_key(&index_key(index))
}

/// Keeps `image`, just written from `index`, when `index` is the own index of a handle's
/// repository `repo` and there is room; else gives it back.
pub(crate) fn keep_image(repo: &Repository, index: &Index, image: Image) -> Option<Image> {
    let own = repo.index().is_ok_and(|own| own.raw() == index.raw());
    let mut known = known_trees();
    let room = known.images.len() < MAX_IMAGES || known.images.contains_key(&index_key(index));
    if !own || !room || !known.handles.contains(&repo_key(repo)) {
        return Some(image);
    }
    known.images.insert(index_key(index), (repo_key(repo), image));
    None
}

/// The tree `index` (`repo`'s own) makes: the known one, else made by libgit2 and then
/// known. libgit2's error as it is (`ErrorCode::Unmerged` for conflicts).
pub(crate) fn tree_of(repo: &Repository, index: &mut Index) -> Result<Oid, git2::Error> {
    if let Some(tree) = known(repo, index)? {
        return Ok(tree);
    }
    let tree = index.write_tree_to(repo)?;
    remember(repo, index, tree);
    Ok(tree)
}

/// The known tree of `repo`'s own `index`, if there is one (no conflicts then). Debug
/// builds check it against the tree libgit2 makes: a difference is an error.
pub(crate) fn known(repo: &Repository, index: &mut Index) -> Result<Option<Oid>, git2::Error> {
    let found = match lookup(repo, index) {
        None => None,
        Some(Tree::Made(tree)) => Some(tree),
        Some(Tree::Changed { base, mut paths }) => {
            paths.sort();
            paths.dedup();
            let made = updated(repo, index, base, &paths);
            set(repo, index, made.map(Tree::Made));
            made
        }
    };
    #[cfg(debug_assertions)]
    if let Some(tree) = found {
        let made = index.write_tree_to(repo)?;
        if made != tree {
            return Err(git2::Error::from_str(&format!(
                "breeze took {tree} for the tree of the index of {}, which makes {made}",
                repo.path().display()
            )));
        }
    }
    Ok(found)
}

fn lookup(repo: &Repository, index: &Index) -> Option<Tree> {
    let known = known_trees();
    let (owner, tree) = known.trees.get(&index_key(index))?;
    (*owner == repo_key(repo)).then(|| tree.clone())
}

/// What is known of `index`'s tree becomes `tree` (`None`: nothing).
fn set(repo: &Repository, index: &Index, tree: Option<Tree>) {
    let mut known = known_trees();
    match tree {
        Some(tree) => known.trees.insert(index_key(index), (repo_key(repo), tree)),
        None => known.trees.remove(&index_key(index)),
    };
}

/// Keeps `tree` as what `index` makes, when `index` is the own index of a handle's
/// repository `repo`.
fn remember(repo: &Repository, index: &Index, tree: Oid) {
    if !known_trees().handles.contains(&repo_key(repo)) {
        return;
    }
    // The repository's own index: loaded already (the caller read it through `repo`).
    if repo.index().is_ok_and(|own| own.raw() == index.raw()) {
        set(repo, index, Some(Tree::Made(tree)));
    }
}

/// Follows a change breeze made to `repo`'s own `index` at `paths`, whose outcome is
/// `changed`: done, each path now has the entry the index holds for it (or none), and the
/// known tree, if there is one, becomes that tree with those paths so, made when it is
/// asked for; failed half-way, nothing is known. When the tree cannot be made that way (a
/// path that is a folder in the index, a file where a folder was, an entry of an unusual
/// mode), nothing is known then either, and [`tree_of`] asks libgit2.
pub(crate) fn follow<T, E>(
    (repo, index): (&Repository, &Index),
    changed: Result<T, E>,
    paths: impl IntoIterator<Item = impl AsRef<[u8]>>,
) -> Result<T, E> {
    if changed.is_err() {
        forget(index);
        return changed;
    }
    let mut paths = paths.into_iter().map(|path| path.as_ref().to_vec()).peekable();
    if paths.peek().is_none() {
        return changed;
    }
    let paths: Vec<Vec<u8>> = paths.collect();
    if let Some((_, image)) = known_trees().images.get_mut(&index_key(index)) {
        image.changed.extend(paths.iter().cloned());
    }
    let (base, mut known) = match lookup(repo, index) {
        None => return changed,
        Some(Tree::Made(base)) => (base, Vec::new()),
        Some(Tree::Changed { base, paths }) => (base, paths),
    };
    known.extend(paths);
    set(repo, index, Some(Tree::Changed { base, paths: known }));
    changed
}

/// `index` (`repo`'s own) was moved from tree `from` to tree `to` by [`follow`]ed changes
/// of `paths`, every path the two trees differ in: when it made `from` before, it makes
/// `to`, and no tree need be made.
pub(crate) fn moved(
    (repo, index): (&Repository, &Index),
    (from, to): (Oid, Oid),
    paths: impl IntoIterator<Item = impl AsRef<[u8]>>,
) {
    let Some(Tree::Changed { base, paths: changed }) = lookup(repo, index) else { return };
    let mut paths = paths.into_iter();
    let same = changed.iter().all(|a| paths.next().is_some_and(|b| a == b.as_ref()))
        && paths.next().is_none();
    if base == from && same {
        set(repo, index, Some(Tree::Made(to)));
    }
}

/// The tree `before` with the entries `index` holds at `paths` (sorted, no repeats);
/// `None` when it cannot be made from them alone.
fn updated(repo: &Repository, index: &Index, before: Oid, paths: &[Vec<u8>]) -> Option<Oid> {
    let base = repo.find_tree(before).ok()?;
    let mut builder = TreeUpdateBuilder::new();
    for path in paths {
        let rel = bytes_path(path);
        if (1..=3).any(|stage| index.get_path(rel, stage).is_some()) {
            return None;
        }
        // Entries below the path: a folder the caller names for what is in it.
        let mut below = path.clone();
        below.push(b'/');
        if index.find_prefix(below.as_slice()).is_ok() {
            return None;
        }
        match index.get_path(rel, 0) {
            Some(entry) => {
                builder.upsert(rel, entry.id, file_mode(entry.mode)?);
            }
            None => {
                if base.get_path(rel).is_ok() {
                    builder.remove(rel);
                }
            }
        }
    }
    builder.create_updated(repo, &base).ok()
}

/// The tree entry mode of an index entry's mode; `None` for one git does not write.
fn file_mode(mode: u32) -> Option<FileMode> {
    match mode {
        0o100644 => Some(FileMode::Blob),
        0o100755 => Some(FileMode::BlobExecutable),
        0o120000 => Some(FileMode::Link),
        0o160000 => Some(FileMode::Commit),
        _ => None,
    }
}
