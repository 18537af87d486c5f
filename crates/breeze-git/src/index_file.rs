//! The index files of breeze's lanes, its review checkout and the user's checkouts of
//! main, written by breeze itself.
//!
//! libgit2 writes an index whole and hashes it with SHA-1DC, its collision-detecting SHA-1:
//! at 100,000 files that is 8.9 MB and about 46 ms a write, 36 of them hashing (perf, in
//! `scripts/bench/README.md`), and a task's lane move, review checkout and landing each
//! wrote one. [`write`] writes the same file from the handle's index in memory, as libgit2
//! writes it (a test compares the two): the entries (version 2), the cache-tree extension
//! git reads to skip unchanged folders (`TREE`, from the tree the index makes, folder by
//! folder from the memo in `tree_memo.rs`), and the trailing checksum (below). What this writer leaves
//! to libgit2: other versions, conflicts, entries with extended flags (intent-to-add,
//! skip-worktree), entries out of byte order.
//!
//! The user's own index (a landing's, [`write_users`]) may hold their staged changes,
//! whose trees exist nowhere: git trusts the trees a cache-tree names (`git commit` takes
//! them as they are), and breeze writes no object into their repository for them. Those
//! trees are made in memory ([`TreesInMemory`]) and their folders marked invalid, as git
//! marks a folder whose entries changed. Without staged changes the landing knows the
//! index's tree (main's new one) and no tree is made.
//!
//! Racily clean entries are smudged first, as git and libgit2 do: an entry whose file time
//! is not older than the index file it was last written into may hide a change made in the
//! same clock tick, so its file is compared by content and, if it differs, its size is set
//! to 0 (git then looks at it).
//!
//! libgit2 decides that its index in memory is stale by comparing the file's trailing
//! checksum with the one it last read or wrote itself: after breeze wrote the file that
//! differs, and the next status or checkout would read all 8.9 MB again. So each write is
//! remembered for the index object that made it ([`OwnWrites`]), and so is each read
//! [`fresh_index`] makes; [`fresh_index`] sees that the file is still that one (nothing to
//! read), and the checkouts and status reads that follow it are told not to read it
//! themselves (`refresh(false)`, `no_refresh`).
//!
//! A write that knows the tree its entries make ([`write_known`]: a detached checkout moved
//! to a commit, every differing path set) names it in the cache-tree without making it, and
//! [`known_tree`] says it until the file changes: the review checkout's next move then finds
//! nothing staged without making a tree (libgit2 would read every tree back).
//!
//! The index files of breeze's own checkouts (lanes, the review and advice checkouts) end in
//! twenty zeros instead of their SHA-1 ([`Checksum::Skipped`], git's `index.skipHash`); the
//! user's end in their SHA-1, hashed with the CPU's SHA instructions where it has them.

use std::collections::HashMap;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use git2::{Binding as _, Index, IndexEntry, IndexTime, ObjectType, Odb, Oid, Repository};
use sha1::{Digest as _, Sha1};

use crate::error::{Context as _, GitError};
use crate::file_stamp::{Stamp, stamp};
use crate::index_entries::{self, BUFFERS, Entries, Image, SIZE_OFFSET};
use crate::index_in_place::Patch;
use crate::paths::RepoPath;
use crate::tree_memo::TREES;

/// One path's version in a tree: its id, mode and kind (a blob, or a commit for a gitlink).
pub(crate) type Version = (Oid, i32, ObjectType);

/// Writes `index` (of the checkout at `at`) to its file, as described in the module docs.
/// The trees its cache-tree names are made in `repo`, the checkout's repository: git
/// trusts that they exist (`git commit` takes them as they are). The file is replaced in
/// one rename under git's `index.lock`; another process holding that lock is
/// [`GitError::Locked`]. `fresh`: paths (sorted) whose entries were just taken from the
/// files breeze's own checkout wrote, not compared by content again (libgit2 marks such
/// entries up to date; a large move would otherwise read every file it wrote twice).
pub(crate) fn write(
    repo: &Repository,
    index: &mut Index,
    at: &Path,
    fresh: &[RepoPath],
) -> Result<(), GitError> {
    write_own(index, at, fresh, Trees::Made(repo))
}

/// [`write`] and [`write_known`]: breeze's own checkout's file, without a checksum.
fn write_own(
    index: &mut Index,
    at: &Path,
    fresh: &[RepoPath],
    trees: Trees<'_>,
) -> Result<(), GitError> {
    let recorded = stamp(&file_of(index, at)?);
    write_with((index, None), at, fresh, recorded.as_ref(), (trees, Checksum::Skipped)).map(|_| ())
}

/// [`write`] into the file `copy` instead of `index`'s own, which is left as it is: the
/// index of a lane's private git directory, written from the lane handle's index in
/// memory (`Repo::seal_lane`) while the lane's own file may be behind HEAD
/// (`index_behind.rs`). Its racily clean entries are those not older than the lane's
/// own file, where the entries were last written. `Ok(false)`: not written, the index
/// being one only libgit2 writes (version 3 or 4, extended flags, conflicts); the caller
/// copies the file instead.
pub(crate) fn write_copy(
    repo: &Repository,
    index: &mut Index,
    at: &Path,
    copy: &Path,
) -> Result<bool, GitError> {
    let recorded = stamp(&file_of(index, at)?);
    let trees = (Trees::Made(repo), Checksum::Skipped);
    write_with((index, Some(copy)), at, &[], recorded.as_ref(), trees)
}

/// [`write`] for an index whose entries are known to make `tree` (a tree of `repo`): no
/// tree is made, and [`known_tree`] says it until the file or the index changes.
pub(crate) fn write_known(
    repo: &Repository,
    index: &mut Index,
    at: &Path,
    fresh: &[RepoPath],
    tree: Oid,
) -> Result<(), GitError> {
    write_own(index, at, fresh, Trees::Known { repo, tree })
}

/// The tree `index` makes, when breeze wrote its file knowing it and the file is still
/// that one ([`set_entries`] forgets it). Only for a checkout whose index breeze changes in
/// memory through [`set_entries`] alone (the detached ones: review, advice, integration):
/// an index changed in memory another way and left unwritten would be taken for its file.
pub(crate) fn known_tree(index: &Index) -> Option<Oid> {
    match OWN_WRITES.file_of(index) {
        OwnFile::Current(tree) => tree,
        OwnFile::WrittenSince | OwnFile::NotOurs => None,
    }
}

/// Writes the user's `index` (of their checkout at `at`, repository `repo`) to its file
/// as [`write`] does, but makes no object in their repository: the trees it makes (those of
/// their staged changes) are made in `trees` ([`TreesInMemory`]), and the cache-tree names
/// as valid only the folders whose trees `repo` has; the others are marked invalid, as git
/// marks a folder with a staged change, and git makes their trees when it needs them.
/// `recorded`: the stamp of the index file the entries were last written into (its racily
/// clean entries are those not older than it), when `index`'s own file is a copy. `tree`:
/// the tree `index` is known to equal (the landing's new tree, when the index was its old
/// one), a tree of `repo`: the cache-tree is that tree's, and no tree is made at all.
/// `last`: what the last landing's write of this index left ([`UsersImage`]), its
/// `changed` paths those set since; replaced by this write's.
pub(crate) fn write_users(
    repo: &Repository,
    trees: &TreesInMemory,
    (index, last): (&mut Index, &mut Option<UsersImage>),
    at: &Path,
    fresh: &[RepoPath],
    (recorded, tree): (Option<&Stamp>, Option<Oid>),
) -> Result<(), GitError> {
    let checksum = Checksum::Sha1(last);
    match tree {
        Some(tree) => {
            let trees = Trees::Known { repo, tree };
            write_with((index, None), at, fresh, recorded, (trees, checksum)).map(|_| ())
        }
        None => {
            let context = || format!("could not read the objects of {}", at.display());
            let known = repo.odb().ctx(context)?;
            let trees = Trees::InMemory { trees: &trees.repo, known: &known };
            write_with((index, None), at, fresh, recorded, (trees, checksum)).map(|_| ())
        }
    }
}

/// The bytes of a user's index as a landing last wrote them, kept with the index for the
/// next landing: the entries' image (`index_entries::Image`), whose `changed` paths the
/// landing sets, and the SHA-1's state after each [`HASHED_EVERY`] bytes of the entries,
/// so that the next write hashes again only from the first entry that changed.
pub(crate) struct UsersImage {
    image: Image,
    hashed: Vec<Sha1>,
}

impl UsersImage {
    /// Notes that the entries at `paths` (and below them) were set since the write.
    pub(crate) fn changed(&mut self, paths: impl IntoIterator<Item = RepoPath>) {
        self.image.changed.extend(paths.into_iter().map(|path| path.0));
    }
}

/// How often the hashing of a user's index keeps its state: the next write of a task's
/// edit hashes again from the last state before its first changed entry (half the file,
/// on average, instead of all 8.9 MB at 100,000 files).
const HASHED_EVERY: usize = 1 << 18;

/// The SHA-1 of `bytes`, whose first `same` bytes are those `hashed` was made along
/// (the states after each [`HASHED_EVERY`] bytes of the previous file's entries); and the
/// states along this file's first `entries_end` bytes.
fn sha1_resumed(
    bytes: &[u8],
    (same, entries_end): (usize, usize),
    mut hashed: Vec<Sha1>,
) -> ([u8; 20], Vec<Sha1>) {
    hashed.truncate(same / HASHED_EVERY);
    let mut hasher = hashed.last().cloned().unwrap_or_default();
    let mut at = hashed.len() * HASHED_EVERY;
    while at + HASHED_EVERY <= entries_end {
        hasher.update(&bytes[at..at + HASHED_EVERY]);
        at += HASHED_EVERY;
        hashed.push(hasher.clone());
    }
    hasher.update(&bytes[at..]);
    let hash: [u8; 20] = hasher.finalize().into();
    debug_assert!(hash[..] == Sha1::digest(bytes)[..], "a resumed SHA-1 differs");
    (hash, hashed)
}

/// Where the trees of an index's cache-tree are made.
enum Trees<'a> {
    /// In the checkout's repository (a lane's or the review checkout's: their trees are the
    /// tasks' own).
    Made(&'a Repository),
    /// In memory over the repository's objects, which `known` has.
    InMemory { trees: &'a Repository, known: &'a Odb<'a> },
    /// None made: the index is `tree`, of `repo`.
    Known { repo: &'a Repository, tree: Oid },
}

/// The last 20 bytes of an index file.
enum Checksum<'a> {
    /// The SHA-1 of the rest, as git writes it by default: the user's index, which any git
    /// they run may check (`git fsck` before git 2.40 fails on a zero one). With the image
    /// of its last write, which this write replaces.
    Sha1(&'a mut Option<UsersImage>),
    /// Twenty zeros: git's own `index.skipHash` (which `feature.manyFiles` turns on),
    /// for the files of breeze's own checkouts. git checks an index's checksum only in
    /// `git fsck`, which takes zeros for "not hashed" (git 2.40 on), as libgit2 does; the
    /// hash of 8.9 MB is 8 ms of every lane move and review checkout at 100,000 files.
    Skipped,
}

/// [`write`], [`write_copy`] and [`write_users`]: the file of `index` (or `copy`), its
/// racily clean entries those not older than `recorded`, its cache-tree's trees made as
/// `trees` says, ending in `checksum`. `Ok(false)`: `copy` not written, its entries being
/// such as only libgit2 writes (which writes an index to its own file only).
fn write_with(
    (index, copy): (&mut Index, Option<&Path>),
    at: &Path,
    fresh: &[RepoPath],
    recorded: Option<&Stamp>,
    (trees, mut checksum): (Trees<'_>, Checksum<'_>),
) -> Result<bool, GitError> {
    let context = || format!("could not write the index of {}", at.display());
    let file = match copy {
        Some(copy) => copy.to_path_buf(),
        None => file_of(index, at)?,
    };
    // The checkout's own repository: a pooled handle's index keeps its entries' image.
    let owner = match trees {
        Trees::Made(repo) | Trees::Known { repo, .. } => Some(repo),
        Trees::InMemory { .. } => None,
    };
    let since = recorded.map(Stamp::mtime);
    // The file is rewritten at about its size; entries average under 96 bytes.
    let capacity = recorded.map_or(index.len() * 96, |stamp| stamp.size() as usize + 4096);
    // The image this write is patched from: the user's index keeps its own.
    let (image, hashed) = match &mut checksum {
        Checksum::Sha1(last) => match last.take() {
            Some(UsersImage { image, hashed }) => (Some(image), hashed),
            None => (None, Vec::new()),
        },
        Checksum::Skipped => {
            (owner.and_then(|repo| crate::index_tree::take_image(repo, index)), Vec::new())
        }
    };
    let serialized = match index.version() {
        2 => entries_of(image, index, (since, fresh), capacity)
            .map_err(|e| GitError::Git { context: context(), cause: git2::Error::from_str(&e) })?,
        _ => None,
    };
    let Some(mut written) = serialized else {
        return match copy {
            None => write_by_libgit2(index, at).map(|()| true),
            Some(_) => Ok(false),
        };
    };
    smudge_racily_clean(index, at, &mut written).ctx(context)?;
    let rewritten = written.rewritten.take();
    let entries_end = written.bytes.len();
    let mut bytes = written.bytes;
    // The cache-tree, and the tree the entries make when it is one of the checkout's
    // repository. An index libgit2 cannot make a tree of is written without a cache-tree
    // (git makes one when it needs it). Not libgit2's writer: its cache-tree may name
    // trees made in memory.
    let (tree, made) = match trees {
        Trees::Made(repo) => match crate::index_tree::tree_of(repo, index) {
            Ok(root) => (Some(TREES.extension(repo, root).ctx(context)?), Some(root)),
            Err(_) => (None, None),
        },
        Trees::InMemory { trees, known } => match index.write_tree_to(trees) {
            Ok(root) => (Some(TREES.extension_known(trees, known, root).ctx(context)?), None),
            Err(_) => (None, None),
        },
        Trees::Known { repo, tree } => {
            (Some(TREES.extension(repo, tree).ctx(context)?), Some(tree))
        }
    };
    if let Some(tree) = tree {
        bytes.extend_from_slice(b"TREE");
        bytes.extend_from_slice(&(tree.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&tree);
    }
    // The entries rewritten where they were since the image this write was patched from.
    let step = rewritten.map(|(from, positions)| Step {
        from,
        entries: positions
            .iter()
            .map(|&p| (written.offsets[p] as usize, written.offsets[p + 1] as usize))
            .collect(),
        sizes: positions
            .iter()
            .map(|&p| written.offsets[p] as usize)
            .chain(written.racy.iter().map(|(offset, _)| *offset))
            .collect(),
    });
    let mut users_hashed = Vec::new();
    let patched = match &checksum {
        Checksum::Sha1(_) => {
            // The bytes before the first entry rewritten are the last write's.
            let same = step
                .as_ref()
                .map_or(0, |step| step.sizes.iter().copied().min().unwrap_or(entries_end));
            tracing::debug!(same, entries_end, kept = hashed.len(), "hashing the user's index");
            let (hash, hashed) = sha1_resumed(&bytes, (same, entries_end), hashed);
            bytes.extend_from_slice(&hash);
            users_hashed = hashed;
            None
        }
        Checksum::Skipped => {
            bytes.extend_from_slice(&[0; 20]);
            step.as_ref().and_then(|step| PATCHABLE.patch(&file, step, (&bytes, entries_end)))
        }
    };
    let now = match patched {
        Some(now) => Some(now),
        None => {
            replace_file(&file, &bytes, at)?;
            stamp(&file)
        }
    };
    if copy.is_none() {
        OWN_WRITES.remember(index, &file, made);
    }
    bytes.truncate(entries_end);
    written.bytes = bytes;
    let image = Image::of(written, since);
    let unkept = match checksum {
        Checksum::Sha1(last) => {
            *last = Some(UsersImage { image, hashed: users_hashed });
            None
        }
        Checksum::Skipped => {
            PATCHABLE.remember(&file, now, (image.generation, step));
            owner.and_then(|repo| crate::index_tree::keep_image(repo, index, image))
        }
    };
    if let Some(image) = unkept {
        BUFFERS.give_back(image.bytes);
    }
    Ok(true)
}

/// The header and entries of `index` (version 2): patched from `image`, the image of its
/// last write when one was kept (a handle's, `index_tree.rs`, or a landing's,
/// [`UsersImage`]), else in one pass. `None` for
/// what only libgit2 writes. Debug builds make both and fail on a difference: an image
/// that missed a change would be a wrong index file.
fn entries_of(
    image: Option<Image>,
    index: &Index,
    (since, fresh): (Option<(i64, i64)>, &[RepoPath]),
    capacity: usize,
) -> Result<Option<Entries>, String> {
    let Some(image) = image else {
        return Ok(index_entries::all(index, since, fresh, capacity));
    };
    #[cfg(debug_assertions)]
    let changed: Vec<String> =
        image.changed.iter().map(|path| String::from_utf8_lossy(path).into_owned()).collect();
    let patched = index_entries::patched(index, image, since, fresh, capacity);
    #[cfg(debug_assertions)]
    {
        let whole = index_entries::all(index, since, fresh, capacity);
        let same = match (&patched, &whole) {
            (Some(patched), Some(whole)) => {
                patched.bytes == whole.bytes
                    && patched.offsets == whole.offsets
                    && patched.racy == whole.racy
            }
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Err(format!(
                "breeze patched the entries of an index at {changed:?} and made another file than a pass over every entry makes (a change it did not follow)"
            ));
        }
        if let Some(whole) = whole {
            BUFFERS.give_back(whole.bytes);
        }
    }
    Ok(match patched {
        Some(patched) => Some(patched),
        None => index_entries::all(index, since, fresh, capacity),
    })
}

/// The file `index` is read from and written to.
fn file_of(index: &Index, at: &Path) -> Result<PathBuf, GitError> {
    index.path().map(Path::to_path_buf).ok_or_else(|| GitError::Git {
        context: format!("could not write the index of {}", at.display()),
        cause: git2::Error::from_str("the index has no file"),
    })
}

/// A repository whose objects are those of a user's repository and whose writes stay in
/// memory: where [`write_users`] makes the trees of the user's index. An index whose
/// cache-tree names trees made here must be written by [`write_users`] with the same one
/// (libgit2's writer would name them as valid), which is why it travels with the index
/// that a landing keeps; and such an index must not make its tree through libgit2 in the
/// user's repository (`Index::write_tree`: a tree there naming a tree only here). The
/// handles of a landing do neither.
pub(crate) struct TreesInMemory {
    repo: Repository,
    /// Over the same objects, with nowhere to write: [`TreesInMemory::existing_tree`].
    existing: Repository,
}

impl TreesInMemory {
    /// Over the objects of `repo` (its common folder's, with their alternates). Without
    /// them every tree is made in memory: slower, as right (what is valid is asked of
    /// `repo` itself).
    pub(crate) fn over(repo: &Repository) -> Result<TreesInMemory, git2::Error> {
        let odb = Odb::new()?;
        let objects = repo.commondir().join("objects");
        if let Err(e) = odb.add_disk_alternate(&objects.to_string_lossy()) {
            tracing::warn!(objects = %objects.display(), error = %e, "the landing's trees are all made in memory");
        }
        odb.add_new_mempack_backend(1000)?;
        let existing = Odb::new()?;
        existing.add_disk_alternate(&objects.to_string_lossy())?;
        Ok(TreesInMemory {
            repo: Repository::from_odb(odb)?,
            existing: Repository::from_odb(existing)?,
        })
    }

    /// The tree `index` makes when the user's repository has all of it, else `None`. Made
    /// where nothing can be written, so the trees libgit2 then keeps in the index's cache
    /// are all the repository's; cheap when the cache knows the root (git and breeze write
    /// it so for an index without staged changes), else every tree is read once.
    pub(crate) fn existing_tree(&self, index: &mut Index) -> Option<Oid> {
        index.write_tree_to(&self.existing).ok()
    }

    /// The in-memory repository: a holder for an index between landings, too.
    pub(crate) fn repo(&self) -> &Repository {
        &self.repo
    }
}

/// Tells that `index`'s file is one breeze wrote from it: `file` is a byte copy of a file
/// [`write_users`] wrote from `index`, unchanged since (the caller compared its stamp).
pub(crate) fn adopt(index: &Index, file: &Path) {
    OWN_WRITES.remember(index, file, None);
}

/// Forgets breeze's last write from `index`: its file was moved away.
pub(crate) fn forget(index: &Index) {
    OWN_WRITES.forget(index);
}

/// Gives the index file of breeze's own checkout at `at` (handle `repo`) its SHA-1 when it
/// ends without one ([`Checksum::Skipped`]): done when the checkout is parked for a later
/// run, which an older breeze may make (before this one, breeze took such a file for one
/// changed at every look, and lost what it had staged in memory). Under git's
/// `index.lock`, as git writes the file. Best effort: a failure is logged (this breeze
/// reads the file either way).
pub(crate) fn hash_for_later(repo: &Repository, at: &Path) {
    if let Err(err) = hash_file_for_later(repo, at) {
        tracing::warn!(checkout = %at.display(), "could not hash the parked index: {err}");
    }
}

fn hash_file_for_later(repo: &Repository, at: &Path) -> Result<(), GitError> {
    // The handle's index object, not read: it only says whether the handle holds the file.
    let index = repo.index().ctx(|| format!("could not read the index of {}", at.display()))?;
    let file = file_of(&index, at)?;
    // Most files have one already (a checkout parked again, a git's write): their last
    // bytes say so without reading the rest.
    if !ends_unhashed(&file) {
        return Ok(());
    }
    let lock = IndexLock::open(&file, at)?;
    // Whether the handle still holds the file, now that no git can write it.
    let current = match OWN_WRITES.file_of(&index) {
        OwnFile::Current(tree) => Some(tree),
        OwnFile::WrittenSince | OwnFile::NotOurs => None,
    };
    let mut bytes = std::fs::read(&file).map_err(|e| GitError::io("read", &file, e))?;
    let Some(end) = bytes.len().checked_sub(20).filter(|end| *end >= 12) else {
        return Ok(());
    };
    if bytes[end..] != [0; 20] {
        return Ok(());
    }
    let hash = Sha1::digest(&bytes[..end]);
    bytes[end..].copy_from_slice(&hash);
    lock.replace(&file, &bytes)?;
    // The same entries: what the handle holds is still the file.
    if let Some(tree) = current {
        OWN_WRITES.remember(&index, &file, tree);
    }
    Ok(())
}

/// Whether the index file `file` ends in twenty zeros ([`Checksum::Skipped`]); `false`
/// when it cannot be read.
fn ends_unhashed(file: &Path) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut last = [1u8; 20];
    std::fs::File::open(file)
        .and_then(|mut f| f.seek(SeekFrom::End(-20)).and_then(|_| f.read_exact(&mut last)))
        .is_ok()
        && last == [0; 20]
}

/// The repository's index, re-read from disk if another process changed it since this
/// handle last read or wrote it (`Repository::index` alone returns the cached one).
pub(crate) fn fresh_index(repo: &Repository, at: &Path) -> Result<Index, GitError> {
    let context = || format!("could not read the index of {}", at.display());
    let mut index = repo.index().ctx(context)?;
    // libgit2 would see a file breeze wrote as changed (`OwnWrites`); a file someone else
    // wrote since is read whole, whatever its checksum says.
    let force = match OWN_WRITES.file_of(&index) {
        OwnFile::Current(_) => return Ok(index),
        OwnFile::WrittenSince => true,
        OwnFile::NotOurs => false,
    };
    // What is read is remembered too: libgit2 would read a file without a checksum
    // (`Checksum::Skipped`) again at every look, its own being the hash it computed. The
    // stamp is taken first: a file replaced during the read is read again next time.
    let file = index.path().map(Path::to_path_buf);
    let before = file.as_deref().and_then(stamp);
    // What the index held in memory may be gone: its tree is no longer known.
    crate::index_tree::forget(&index);
    index.read(force).ctx(context)?;
    if let (Some(file), Some(before)) = (file, before) {
        OWN_WRITES.remember_as(&index, file, before, None);
    }
    Ok(index)
}

/// [`fresh_index`] of the checkout at `at` read ahead of its first step (`preload.rs`), the
/// file read then taken as if breeze had just written it from the index — when its entries
/// are exactly the bytes breeze writes from it (version 2: one of breeze's own checkouts,
/// last written by breeze, parked) — so that the step's write patches the few entries
/// that change in place instead of writing the whole file (8.9 MB at 100,000 files, each
/// of a later run's first index writes). `copies`: other files written from the same
/// index (a lane's private copy), taken alike when they hold the same entries. Anything
/// else — another writer's file, one changed meanwhile — is written whole, as before.
pub(crate) fn read_ahead(repo: &Repository, at: &Path, copies: &[PathBuf]) -> Result<(), GitError> {
    let index = fresh_index(repo, at)?;
    let Some((file, read)) = OWN_WRITES.held(&index) else { return Ok(()) };
    if index.version() != 2 || crate::index_tree::has_image(&index) {
        return Ok(());
    }
    // As a write at the file's own time would leave them: entries as new as it are the
    // racily clean ones (their sizes are 0 in the file, and so in the index read).
    let since = Some(read.mtime());
    let Some(entries) = index_entries::all(&index, since, &[], read.size() as usize + 4096) else {
        return Ok(());
    };
    if !holds_entries(&file, &read, &entries.bytes) {
        BUFFERS.give_back(entries.bytes);
        return Ok(());
    }
    let image = Image::of(entries, since);
    PATCHABLE.remember(&file, Some(read), (image.generation, None));
    for copy in copies {
        if let Some(copied) = stamp(copy).filter(|copied| holds_entries(copy, copied, &image.bytes))
        {
            PATCHABLE.remember(copy, Some(copied), (image.generation, None));
        }
    }
    if let Some(unkept) = crate::index_tree::keep_image(repo, &index, image) {
        BUFFERS.give_back(unkept.bytes);
    }
    Ok(())
}

/// Whether the index file `file`, stamped `stamped` before and after it is read, begins
/// with `entries` (its header and entries, as breeze serializes them). What follows — the
/// cache-tree and the checksum (a parked checkout's file has one) — a patch writes anew.
fn holds_entries(file: &Path, stamped: &Stamp, entries: &[u8]) -> bool {
    let Ok(bytes) = std::fs::read(file) else { return false };
    bytes.len() >= entries.len() + 20
        && bytes[..entries.len()] == *entries
        && stamp(file).as_ref() == Some(stamped)
}

/// Sets the entries of `placed` and `unstatted` paths of the checkout at `at` to the
/// versions `target` gives them (a path with none loses its entry): `placed` ones with the
/// stat data of their files, just written, `unstatted` ones with none (git compares their
/// content). Removals first: a folder's entries go before a file takes its name, and the
/// other way round.
///
/// `repo` is the checkout's handle: the tree its index is known to make follows the
/// change (`index_tree.rs`).
pub(crate) fn set_entries(
    (repo, index): (&Repository, &mut Index),
    at: &Path,
    target: &dyn Fn(&RepoPath) -> Option<Version>,
    placed: &[RepoPath],
    unstatted: &[RepoPath],
) -> Result<(), GitError> {
    // Changed in memory: the tree it was written as is no longer known (a change that
    // fails half-way leaves the file as it was, and the index no longer that file).
    OWN_WRITES.forget_tree(index);
    let changed = set_entries_in(index, at, target, placed, unstatted);
    crate::index_tree::follow((repo, index), changed, placed.iter().chain(unstatted))
}

fn set_entries_in(
    index: &mut Index,
    at: &Path,
    target: &dyn Fn(&RepoPath) -> Option<Version>,
    placed: &[RepoPath],
    unstatted: &[RepoPath],
) -> Result<(), GitError> {
    let context = || format!("could not update the index of {}", at.display());
    let every = || placed.iter().chain(unstatted);
    for path in every().filter(|path| target(path).is_none()) {
        index.remove_path(path.as_path()).ctx(context)?;
    }
    for path in placed {
        if let Some(version) = target(path) {
            index.add(&entry_of(at, path, version, true)?).ctx(context)?;
        }
    }
    for path in unstatted {
        if let Some(version) = target(path) {
            index.add(&entry_of(at, path, version, false)?).ctx(context)?;
        }
    }
    Ok(())
}

/// The index entry of `path` at `version`, with the stat data of its file when `statted`
/// (gitlinks have none).
fn entry_of(
    at: &Path,
    path: &RepoPath,
    (id, mode, kind): Version,
    statted: bool,
) -> Result<IndexEntry, GitError> {
    let zero = IndexTime::new(0, 0);
    let mut entry = IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode: mode as u32,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.0.clone(),
    };
    if statted && kind != ObjectType::Commit {
        let file = at.join(path.as_path());
        let meta =
            std::fs::symlink_metadata(&file).map_err(|e| GitError::io("look at", &file, e))?;
        // The index keeps 32 bits of each (git truncates the same way).
        entry.ctime = IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.mtime = IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
        entry.file_size = meta.len() as u32;
    }
    Ok(entry)
}

/// libgit2's writer, for what [`write`] does not handle.
fn write_by_libgit2(index: &mut Index, at: &Path) -> Result<(), GitError> {
    OWN_WRITES.forget(index);
    index.write().map_err(|e| {
        crate::state::locked_or(e, at, || format!("could not write the index of {}", at.display()))
    })?;
    if let Some(file) = index.path().map(Path::to_path_buf) {
        OWN_WRITES.remember(index, &file, None);
    }
    Ok(())
}

/// Smudges the racily clean entries of `written` whose files differ from them: their size
/// becomes 0, in the bytes and in `index`, so that git compares their content. A file whose
/// stat data no longer matches its entry needs nothing (git looks at it anyway); one that
/// matches is hashed (unfiltered: a filtered file counts as differing, which costs git one
/// look).
fn smudge_racily_clean(
    index: &mut Index,
    at: &Path,
    written: &mut Entries,
) -> Result<(), git2::Error> {
    for (offset, path) in &written.racy {
        let Some(mut entry) = index.get_path(crate::paths::bytes_path(path), 0) else {
            continue;
        };
        let file = at.join(crate::paths::bytes_path(path));
        let Ok(meta) = std::fs::symlink_metadata(&file) else { continue };
        if !crate::state::stat_matches(&entry, &meta) {
            continue;
        }
        let content = if meta.file_type().is_symlink() {
            std::fs::read_link(&file).ok().map(|target| target.into_os_string().into_vec())
        } else {
            std::fs::read(&file).ok()
        };
        let same = content
            .and_then(|content| Oid::hash_object(ObjectType::Blob, &content).ok())
            .is_some_and(|id| id == entry.id);
        if !same {
            entry.file_size = 0;
            index.add(&entry)?;
            written.bytes[offset + SIZE_OFFSET..offset + SIZE_OFFSET + 4].fill(0);
        }
    }
    Ok(())
}

/// git's `index.lock` beside an index file, created only if absent, as git takes it; gone
/// again when dropped unless it replaced the file.
struct IndexLock {
    out: std::fs::File,
    path: PathBuf,
}

impl IndexLock {
    /// The lock of `file` (the index of the checkout at `at`); another process holding it
    /// is [`GitError::Locked`].
    fn open(file: &Path, at: &Path) -> Result<IndexLock, GitError> {
        let mut name = file.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(out) => Ok(IndexLock { out, path }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(GitError::Locked {
                path: at.to_path_buf(),
                detail: format!("{} exists", path.display()),
            }),
            Err(e) => Err(GitError::io("create", &path, e)),
        }
    }

    /// Writes `bytes` into the lock (around the page cache when large: `direct_write.rs`)
    /// and renames it over `file`.
    fn replace(mut self, file: &Path, bytes: &[u8]) -> Result<(), GitError> {
        crate::direct_write::write_new_file(&mut self.out, &self.path, bytes)
            .map_err(|e| GitError::io("write", &self.path, e))?;
        std::fs::rename(&self.path, file).map_err(|e| GitError::io("replace", file, e))?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Replaces `file` (the index of the checkout at `at`) with `bytes`, through its
/// [`IndexLock`].
fn replace_file(file: &Path, bytes: &[u8], at: &Path) -> Result<(), GitError> {
    IndexLock::open(file, at)?.replace(file, bytes)
}

/// The index files of breeze's own checkouts that hold the bytes of an image
/// (`index_entries::Image`): by file, its stamp just after it was written and the image's
/// generation; and how each image was made from the one before when its entries were
/// rewritten where they were. A write patched from an image patches a file holding that
/// image, or one a few such steps before it, in place (`index_in_place.rs`) while the file
/// is still as written.
struct Patchable {
    state: Mutex<PatchableState>,
}

#[derive(Default)]
struct PatchableState {
    files: HashMap<PathBuf, (Stamp, u64)>,
    /// By the generation of the image it made.
    steps: HashMap<u64, Step>,
}

/// An image made from the image of generation `from` by rewriting entries where they
/// were: the byte ranges of those entries, and where the entries start whose size may
/// have changed (those, and the racily clean ones) — every byte that differs from that
/// image's but the cache-tree and the checksum after them.
struct Step {
    from: u64,
    entries: Vec<(usize, usize)>,
    sizes: Vec<usize>,
}

/// Most steps a file is patched across (a lane's own index file and its worker's copy are
/// written from the same image in turn), and most steps remembered.
const MAX_STEPS_ACROSS: usize = 8;
const MAX_STEPS: u64 = 256;

static PATCHABLE: LazyLock<Patchable> =
    LazyLock::new(|| Patchable { state: Mutex::new(PatchableState::default()) });

impl Patchable {
    /// Patches `file` in place to `bytes` (whose entries end at `entries_end`), made by
    /// `step`, when the file holds the image `step` was made from or one a few steps
    /// before: its stamp now, or `None` when the caller writes it whole (another file, or
    /// one changed since; a failure half-way is logged, and the whole write mends it).
    fn patch(
        &self,
        file: &Path,
        step: &Step,
        (bytes, entries_end): (&[u8], usize),
    ) -> Option<Stamp> {
        let mut patch =
            Patch { bytes, entries_end, entries: step.entries.clone(), sizes: step.sizes.clone() };
        let expected = {
            let mut state = self.lock();
            let (expected, held) = state.files.remove(file)?;
            let mut at = step.from;
            for _ in 0..MAX_STEPS_ACROSS {
                if at == held {
                    break;
                }
                let before = state.steps.get(&at)?;
                patch.entries.extend_from_slice(&before.entries);
                patch.sizes.extend_from_slice(&before.sizes);
                at = before.from;
            }
            if at != held {
                return None;
            }
            expected
        };
        let patched = match crate::index_in_place::patch(file, &expected, &patch) {
            Ok(patched) => patched,
            Err(err) => {
                tracing::warn!(file = %file.display(), "could not patch an index file in place, writing it whole: {err}");
                None
            }
        };
        #[cfg(debug_assertions)]
        if patched.is_some() {
            let on_disk = std::fs::read(file).unwrap_or_default();
            assert!(
                on_disk == bytes,
                "the index {} patched in place differs from the file a whole write makes",
                file.display()
            );
        }
        patched
    }

    /// Remembers that `file`, now stamped `now`, holds the image of generation
    /// `generation`, made by `step` when its entries were rewritten where they were.
    fn remember(&self, file: &Path, now: Option<Stamp>, (generation, step): (u64, Option<Step>)) {
        let mut state = self.lock();
        if let Some(step) = step {
            state.steps.insert(generation, step);
            state.steps.retain(|made, _| made + MAX_STEPS > generation);
        }
        let Some(now) = now else {
            state.files.remove(file);
            return;
        };
        if state.files.len() >= MAX_OWN_WRITES && !state.files.contains_key(file) {
            state.files.clear();
        }
        state.files.insert(file.to_path_buf(), (now, generation));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PatchableState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The index files breeze wrote or read, by the index object (libgit2's, in memory) that
/// holds them.
struct OwnWrites {
    by_index: Mutex<HashMap<usize, Held>>,
}

/// An index file as breeze last wrote or read it from an index object.
struct Held {
    file: PathBuf,
    stamp: Stamp,
    /// The tree the file's entries make, when breeze wrote it knowing it.
    tree: Option<Oid>,
}

/// What an index's file is to breeze's last write from that index.
enum OwnFile {
    /// Still the file breeze wrote (making the tree it names, if known): the index in
    /// memory is at least as new.
    Current(Option<Oid>),
    /// Replaced since by another process: read whole, whatever its checksum says.
    WrittenSince,
    /// breeze did not write it from this index: libgit2 decides (its checksum).
    NotOurs,
}

/// At most this many writes are remembered; forgetting one costs one read of its file.
const MAX_OWN_WRITES: usize = 64;

static OWN_WRITES: LazyLock<OwnWrites> =
    LazyLock::new(|| OwnWrites { by_index: Mutex::new(HashMap::new()) });

impl OwnWrites {
    /// The identity of `index`: libgit2's object, which a repository handle keeps for its
    /// life. An object made later at the same address read the file when it was made.
    fn key(index: &Index) -> usize {
        index.raw() as usize
    }

    /// Remembers that `index` holds `file` as it is now, whose entries make `tree` if
    /// known.
    fn remember(&self, index: &Index, file: &Path, tree: Option<Oid>) {
        match stamp(file) {
            Some(written) => self.remember_as(index, file.to_path_buf(), written, tree),
            None => self.forget(index),
        }
    }

    /// Remembers that `index` holds `file` as it was when its stamp was `stamp`.
    fn remember_as(&self, index: &Index, file: PathBuf, stamp: Stamp, tree: Option<Oid>) {
        let mut writes = self.lock();
        if writes.len() >= MAX_OWN_WRITES {
            writes.clear();
        }
        writes.insert(Self::key(index), Held { file, stamp, tree });
    }

    /// The file of `index` and its stamp when breeze last wrote or read it, while it still
    /// is that file.
    fn held(&self, index: &Index) -> Option<(PathBuf, Stamp)> {
        let writes = self.lock();
        let held = writes.get(&Self::key(index))?;
        (index.path() == Some(held.file.as_path()) && stamp(&held.file) == Some(held.stamp))
            .then(|| (held.file.clone(), held.stamp))
    }

    /// What the file of `index` is to breeze's last write from it; a write that is no longer
    /// current is forgotten.
    fn file_of(&self, index: &Index) -> OwnFile {
        let key = Self::key(index);
        let mut writes = self.lock();
        let Some(held) = writes.get(&key) else { return OwnFile::NotOurs };
        if index.path() == Some(held.file.as_path()) && stamp(&held.file) == Some(held.stamp) {
            return OwnFile::Current(held.tree);
        }
        writes.remove(&key);
        OwnFile::WrittenSince
    }

    fn forget(&self, index: &Index) {
        self.lock().remove(&Self::key(index));
    }

    /// Forgets which tree the file of `index` makes, not the file itself.
    fn forget_tree(&self, index: &Index) {
        if let Some(held) = self.lock().get_mut(&Self::key(index)) {
            held.tree = None;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Held>> {
        self.by_index.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;

    use git2::{IndexEntry, IndexTime, Oid, Repository};
    use sha1::Digest as _;

    use super::{TreesInMemory, fresh_index, write, write_users};

    use crate::git_cli::git_for_test as git;

    /// A cache-tree record: the folder, "entries folders", the tree id (none if invalid).
    type TreeRecord = (String, String, Vec<u8>);

    /// An index file's header and entries, and its cache-tree as (folder, entries below,
    /// folders in it, tree id) sorted (libgit2 orders a folder's folders its own way; git
    /// reads any order).
    fn split(file: &[u8]) -> (Vec<u8>, Vec<TreeRecord>) {
        let at = file.windows(4).position(|w| w == b"TREE").expect("a cache-tree");
        let mut data = &file[at + 8..file.len() - 20];
        let mut records = Vec::new();
        let mut parents: Vec<(String, usize)> = Vec::new();
        while !data.is_empty() {
            let nul = data.iter().position(|b| *b == 0).unwrap();
            let name = String::from_utf8(data[..nul].to_vec()).unwrap();
            let newline = data.iter().position(|b| *b == b'\n').unwrap();
            let counts = String::from_utf8(data[nul + 1..newline].to_vec()).unwrap();
            // An invalid folder (`-1` entries) has no id.
            let id_len = if counts.starts_with("-1 ") { 0 } else { 20 };
            let id = data[newline + 1..newline + 1 + id_len].to_vec();
            data = &data[newline + 1 + id_len..];
            while parents.last().is_some_and(|(_, left)| *left == 0) {
                parents.pop();
            }
            let path = match parents.last_mut() {
                Some((parent, left)) => {
                    *left -= 1;
                    format!("{parent}{name}/")
                }
                None => name,
            };
            let subtrees: usize = counts.split(' ').nth(1).unwrap().parse().unwrap();
            records.push((path.clone(), counts, id));
            parents.push((path, subtrees));
        }
        records.sort();
        (file[..at].to_vec(), records)
    }

    /// A repository with folders at several depths, an executable, a link, names that sort
    /// around `/` (`a-b`, `a.b`, `a/b`, `a0`) and a gitlink, all committed.
    fn sample() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        for (path, content) in [
            ("top.txt", "top\n"),
            ("a-b", "dash\n"),
            ("a.b", "dot\n"),
            ("a/b", "slash\n"),
            ("a0", "zero\n"),
            ("src/lib.rs", "lib\n"),
            ("src/deep/er/mod.rs", "deep\n"),
            ("src/deep/other.rs", "other\n"),
            ("docs/x.md", "x\n"),
        ] {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, content).unwrap();
        }
        let run = root.join("run.sh");
        std::fs::write(&run, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("top.txt", root.join("link")).unwrap();
        git(root, &["add", "-A"]);
        let gitlink = "1111111111111111111111111111111111111111";
        git(
            root,
            &["update-index", "--add", "--cacheinfo", &format!("160000,{gitlink},vendor/sub")],
        );
        std::fs::create_dir_all(root.join("vendor/sub")).unwrap();
        git(root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sample"]);
        let repo = Repository::open(root).unwrap();
        (dir, repo)
    }

    /// The file libgit2 writes from the same index: byte for byte its entries, the same
    /// cache-tree; and git reads it: the same entries, nothing to commit, the cache-tree's
    /// tree is HEAD's.
    #[test]
    fn the_file_is_the_one_libgit2_writes_and_git_reads_it() {
        let (dir, repo) = sample();
        let root = dir.path();
        let listed = git(root, &["ls-files", "-s", "--debug"]);
        let mut index = repo.index().unwrap();
        index.write_tree().unwrap();
        index.write().unwrap();
        let by_libgit2 = std::fs::read(root.join(".git/index")).unwrap();
        write(&repo, &mut index, root, &[]).unwrap();
        let by_breeze = std::fs::read(root.join(".git/index")).unwrap();
        assert_eq!(by_breeze.len(), by_libgit2.len());
        // git's `index.skipHash`: git and libgit2 read it, and `git fsck` takes it.
        assert_eq!(by_breeze[by_breeze.len() - 20..], [0; 20]);
        let (entries, tree) = split(&by_breeze);
        let (libgit2_entries, libgit2_tree) = split(&by_libgit2);
        assert!(entries == libgit2_entries, "the entries differ");
        assert_eq!(tree, libgit2_tree);
        assert_eq!(git(root, &["ls-files", "-s", "--debug"]), listed);
        assert_eq!(git(root, &["status", "--porcelain"]), "");
        assert_eq!(
            git(root, &["write-tree"]).trim(),
            git(root, &["rev-parse", "HEAD^{tree}"]).trim()
        );
        git(root, &["fsck", "--no-dangling"]);
    }

    /// The user's index with staged changes (a landing's): the cache-tree names as valid
    /// only folders whose trees the repository has (the others are `-1`, without an id),
    /// git makes the others when the user commits, and no object is written.
    #[test]
    fn the_users_index_names_only_trees_their_repository_has() {
        let (dir, repo) = sample();
        let root = dir.path();
        std::fs::write(root.join("src/deep/er/mod.rs"), "staged\n").unwrap();
        std::fs::create_dir_all(root.join("new/folder")).unwrap();
        std::fs::write(root.join("new/folder/file.txt"), "new\n").unwrap();
        git(root, &["add", "src/deep/er/mod.rs", "new/folder/file.txt"]);
        let objects = git(root, &["count-objects"]);
        let mut index = fresh_index(&repo, root).unwrap();
        let trees = TreesInMemory::over(&repo).unwrap();
        write_users(&repo, &trees, (&mut index, &mut None), root, &[], (None, None)).unwrap();
        assert_eq!(git(root, &["count-objects"]), objects, "no object is made");
        let file = std::fs::read(root.join(".git/index")).unwrap();
        let (content, checksum) = file.split_at(file.len() - 20);
        // Any git they run may check it (`git fsck` before 2.40 refuses zeros).
        assert_eq!(checksum, &sha1::Sha1::digest(content)[..], "the user's index is hashed");
        let (_, tree) = split(&file);
        let invalid = |(_, counts, _): &&TreeRecord| counts.starts_with("-1 ");
        let named: Vec<&str> =
            tree.iter().filter(invalid).map(|(path, _, _)| path.as_str()).collect();
        assert_eq!(named, ["", "new/", "new/folder/", "src/", "src/deep/", "src/deep/er/"]);
        for (path, _, id) in tree.iter().filter(|record| !invalid(record)) {
            let id = Oid::from_bytes(id).unwrap().to_string();
            assert_eq!(git(root, &["cat-file", "-t", &id]), "tree\n", "{path}");
        }
        assert_eq!(
            git(root, &["status", "--porcelain"]),
            "A  new/folder/file.txt\nM  src/deep/er/mod.rs\n"
        );
        git(root, &["fsck", "--no-dangling"]);
        git(root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the user's"]);
        assert_eq!(git(root, &["show", "HEAD:src/deep/er/mod.rs"]), "staged\n");
        assert_eq!(git(root, &["show", "HEAD:new/folder/file.txt"]), "new\n");
        assert_eq!(git(root, &["show", "HEAD:src/deep/other.rs"]), "other\n");
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    /// After a change staged in memory, the cache-tree git reads says the new tree: `git
    /// write-tree` (which trusts it) gives what libgit2 makes of the index.
    #[test]
    fn the_cache_tree_follows_a_change() {
        let (dir, repo) = sample();
        let root = dir.path();
        std::fs::write(root.join("src/deep/er/mod.rs"), "changed\n").unwrap();
        let mut index = fresh_index(&repo, root).unwrap();
        index.add_path(Path::new("src/deep/er/mod.rs")).unwrap();
        index.remove_path(Path::new("docs/x.md")).unwrap();
        write(&repo, &mut index, root, &[]).unwrap();
        let tree = index.write_tree().unwrap();
        assert_eq!(git(root, &["write-tree"]).trim(), tree.to_string());
        assert_eq!(
            git(root, &["diff", "--cached", "--name-only"]),
            "docs/x.md\nsrc/deep/er/mod.rs\n"
        );
    }

    /// A file changed within the clock tick its entry was taken in, to the same size and
    /// time: its entry is smudged, and git sees the change.
    #[test]
    fn a_racily_clean_entry_is_smudged() {
        let (dir, repo) = sample();
        let root = dir.path();
        let file = root.join("top.txt");
        let mut index = fresh_index(&repo, root).unwrap();
        // The entry's time is the index file's: racily clean.
        let written = std::fs::metadata(root.join(".git/index")).unwrap();
        let time = nix::sys::time::TimeSpec::new(
            std::os::unix::fs::MetadataExt::mtime(&written),
            std::os::unix::fs::MetadataExt::mtime_nsec(&written),
        );
        let set_time = || {
            nix::sys::stat::utimensat(
                nix::fcntl::AT_FDCWD,
                &file,
                &time,
                &time,
                nix::sys::stat::UtimensatFlags::NoFollowSymlink,
            )
            .unwrap();
        };
        std::fs::write(&file, "top\n").unwrap();
        set_time();
        index.add_path(Path::new("top.txt")).unwrap();
        std::fs::write(&file, "TOP\n").unwrap();
        set_time();
        write(&repo, &mut index, root, &[]).unwrap();
        assert_eq!(index.get_path(Path::new("top.txt"), 0).unwrap().file_size, 0);
        assert_eq!(git(root, &["status", "--porcelain"]), " M top.txt\n");
    }

    /// What the writer leaves to libgit2 — an intent-to-add entry, a conflict — is written
    /// all the same, and git reads it as it reads libgit2's.
    #[test]
    fn what_the_writer_does_not_handle_is_written_by_libgit2() {
        let (dir, repo) = sample();
        let root = dir.path();
        std::fs::write(root.join("later.txt"), "later\n").unwrap();
        git(root, &["add", "-N", "later.txt"]);
        let mut index = fresh_index(&repo, root).unwrap();
        write(&repo, &mut index, root, &[]).unwrap();
        assert_eq!(git(root, &["status", "--porcelain"]), " A later.txt\n");
        git(root, &["fsck", "--no-dangling"]);

        let entry = index.get_path(Path::new("top.txt"), 0).unwrap();
        index.remove_path(Path::new("top.txt")).unwrap();
        for stage in 1..=3u16 {
            let staged = IndexEntry {
                ctime: entry.ctime,
                mtime: entry.mtime,
                dev: entry.dev,
                ino: entry.ino,
                mode: entry.mode,
                uid: entry.uid,
                gid: entry.gid,
                file_size: entry.file_size,
                id: entry.id,
                flags: (entry.flags & !0x3000) | (stage << 12),
                flags_extended: 0,
                path: entry.path.clone(),
            };
            index.add(&staged).unwrap();
        }
        write(&repo, &mut index, root, &[]).unwrap();
        assert!(git(root, &["ls-files", "--unmerged"]).contains("top.txt"));
    }

    /// After breeze wrote the file, the handle's index is not read again (a change made in
    /// memory since stays); once another process writes the file, it is.
    #[test]
    fn the_handle_reads_the_file_again_only_when_someone_else_wrote_it() {
        let (dir, repo) = sample();
        let root = dir.path();
        let mut index = fresh_index(&repo, root).unwrap();
        write(&repo, &mut index, root, &[]).unwrap();
        index.add(&unstatted("in-memory.txt")).unwrap();
        let again = fresh_index(&repo, root).unwrap();
        assert!(again.get_path(Path::new("in-memory.txt"), 0).is_some(), "read again");
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        git(root, &["add", "new.txt"]);
        let again = fresh_index(&repo, root).unwrap();
        assert!(again.get_path(Path::new("new.txt"), 0).is_some(), "git's write not read");
        assert!(again.get_path(Path::new("in-memory.txt"), 0).is_none());
    }

    /// A file without a checksum (breeze's own checkouts'), read by another handle: that
    /// handle does not read it again at each look (libgit2 would, its checksum being the
    /// hash it computed), so a change it made in memory stays until someone writes the file.
    #[test]
    fn a_file_without_a_checksum_is_read_once_by_a_handle() {
        let (dir, repo) = sample();
        let root = dir.path();
        let mut index = fresh_index(&repo, root).unwrap();
        write(&repo, &mut index, root, &[]).unwrap();
        let file = std::fs::read(root.join(".git/index")).unwrap();
        assert_eq!(file[file.len() - 20..], [0; 20], "breeze's own checkouts are not hashed");
        let other = Repository::open(root).unwrap();
        let mut theirs = fresh_index(&other, root).unwrap();
        theirs.add(&unstatted("in-memory.txt")).unwrap();
        let again = fresh_index(&other, root).unwrap();
        assert!(again.get_path(Path::new("in-memory.txt"), 0).is_some(), "read again");
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    /// An entry for `path` without stat data (git compares its content).
    fn unstatted(path: &str) -> IndexEntry {
        let zero = IndexTime::new(0, 0);
        IndexEntry {
            ctime: zero,
            mtime: zero,
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: Oid::hash_object(git2::ObjectType::Blob, b"top\n").unwrap(),
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        }
    }
}
