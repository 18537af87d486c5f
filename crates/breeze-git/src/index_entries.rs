//! The header and entries of a version 2 index file, serialized from libgit2's index in
//! memory: in one pass over every entry ([`all`]), or from the bytes of the last write of
//! the same index patched at the paths that changed since ([`patched`]).
//!
//! A pass over every entry copies each entry's path out of libgit2 (one allocation an
//! entry) and writes all of them again: about 4 ms at 100,000 files, twice on every task's
//! way (the worker's private index, the review checkout). A task changes a few paths; the
//! lanes' and review checkout's handles follow those paths (`index_tree.rs`), so their next
//! write copies the unchanged entries as they were and serializes only the others.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use git2::{Index, IndexEntry};

use crate::paths::RepoPath;

/// libgit2's flags of an index entry (include/git2/index.h): assume-valid, the stage, the
/// length of the name; of its extended flags, intent-to-add and skip-worktree (written).
const ASSUME_VALID: u16 = 0x8000;
pub(crate) const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: usize = 0x0fff;
const EXTENDED_WRITTEN: u16 = (1 << 13) | (1 << 14);
/// Where an entry's modification time (seconds, then nanoseconds), file size, flags and
/// path are: after ctime; after ctime, mtime, dev, ino, mode, uid and gid; after the id.
const MTIME_OFFSET: usize = 8;
pub(crate) const SIZE_OFFSET: usize = 36;
const FLAGS_OFFSET: usize = 60;
const PATH_OFFSET: usize = 62;

/// The offset of each racily clean entry, and its path.
pub(crate) type Racy = Vec<(usize, Vec<u8>)>;

/// An index file's header and entries, where each entry starts, and where its racily
/// clean entries are.
pub(crate) struct Entries {
    pub bytes: Vec<u8>,
    /// The offset of each entry, and the end of the last.
    pub offsets: Vec<u32>,
    pub racy: Racy,
    /// The paths of the entries as new as the time racily clean ones are taken against,
    /// `fresh` ones too (they are no longer fresh at the next write).
    pub recent: Vec<Vec<u8>>,
    /// When patched from an image by rewriting single entries where they were: that
    /// image's [`Image::generation`] and the positions of the entries rewritten. Every
    /// other byte is the image's, but for the sizes of racily clean entries.
    pub rewritten: Option<(u64, Vec<usize>)>,
}

/// Entries last written from an index, and the paths whose entries changed since (a path
/// stands for the entry there and every entry below it).
pub(crate) struct Image {
    pub bytes: Vec<u8>,
    pub offsets: Vec<u32>,
    /// The time racily clean entries were taken against then, and the paths of the
    /// entries as new as it: an entry that was not one, and has not changed, is not racily
    /// clean against a time no earlier.
    pub since: Option<(i64, i64)>,
    pub recent: Vec<Vec<u8>>,
    pub changed: Vec<Vec<u8>>,
    /// Names these bytes among every image of the process: a file known to hold an
    /// image's bytes is known by it (`index_file.rs`).
    pub generation: u64,
}

impl Image {
    /// The image of `written`, taken against `since`.
    pub fn of(written: Entries, since: Option<(i64, i64)>) -> Image {
        static GENERATIONS: AtomicU64 = AtomicU64::new(1);
        let Entries { bytes, offsets, recent, .. } = written;
        let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        Image { bytes, offsets, since, recent, changed: Vec::new(), generation }
    }
}

/// The header and entries of `index` as a version 2 index file, in one pass; racily clean
/// are the entries modified no earlier than `since` (the time of the file they were last
/// written into), but for `fresh` ones (their files were just written from them). `None`
/// for what only libgit2 writes: a conflict (stages), an entry with extended flags
/// (intent-to-add, skip-worktree), entries out of git's order (a case-insensitive index).
/// `capacity`: the bytes the file will take, about.
pub(crate) fn all(
    index: &Index,
    since: Option<(i64, i64)>,
    fresh: &[RepoPath],
    capacity: usize,
) -> Option<Entries> {
    let count = index.len();
    let mut bytes = BUFFERS.take(capacity);
    header(&mut bytes, count);
    let mut offsets = Vec::with_capacity(count + 1);
    let mut last: Vec<u8> = Vec::new();
    for (at, entry) in index.iter().enumerate() {
        if !writable(&entry) || (at > 0 && last.as_slice() >= entry.path.as_slice()) {
            BUFFERS.give_back(bytes);
            return None;
        }
        offsets.push(bytes.len() as u32);
        serialize(&mut bytes, &entry);
        last = entry.path;
    }
    offsets.push(bytes.len() as u32);
    let everyone = 0..offsets.len() - 1;
    let (racy, recent) = racily_clean(&bytes, &offsets, everyone, since, fresh);
    Some(Entries { bytes, offsets, racy, recent, rewritten: None })
}

/// [`all`], made from `image` (the entries last written from `index`) by serializing
/// only the entries at the paths that changed since, and below them: in the image's own
/// bytes when each change replaces one entry by one of the same path (the same length: a
/// task's edits), else copied around them. `None` when it cannot be made so — an entry
/// there that only libgit2 writes, or a count that does not add up (a change nobody
/// followed) — and the caller makes a pass over every entry.
pub(crate) fn patched(
    index: &Index,
    image: Image,
    since: Option<(i64, i64)>,
    fresh: &[RepoPath],
    capacity: usize,
) -> Option<Entries> {
    let Image {
        bytes: old_bytes,
        offsets: old_offsets,
        since: before,
        recent: was_recent,
        mut changed,
        generation,
    } = image;
    let old = Old { bytes: &old_bytes, offsets: &old_offsets };
    changed.sort();
    changed.dedup();
    // The old entries that go (at a changed path, or below one), as ranges of positions,
    // and the index's entries that come instead, in git's order.
    let mut gone: Vec<(usize, usize)> = Vec::new();
    let mut new: Vec<IndexEntry> = Vec::new();
    for path in &changed {
        let rel = crate::paths::bytes_path(path);
        let at = old.lower_bound(path);
        if old.path(at) == Some(path.as_slice()) {
            gone.push((at, at + 1));
        }
        let mut below = path.clone();
        below.push(b'/');
        let mut after = path.clone();
        after.push(b'/' + 1);
        gone.push((old.lower_bound(&below), old.lower_bound(&after)));
        if (1..=3).any(|stage| index.get_path(rel, stage).is_some()) {
            BUFFERS.give_back(old_bytes);
            return None;
        }
        new.extend(index.get_path(rel, 0));
        if let Ok(start) = index.find_prefix(below.as_slice()) {
            let under = (start..index.len()).map_while(|i| index.get(i));
            new.extend(under.take_while(|entry| entry.path.starts_with(&below)));
        }
    }
    gone.sort_unstable();
    let gone = merged(&gone);
    new.sort_by(|a, b| a.path.cmp(&b.path));
    new.dedup_by(|a, b| a.path == b.path);
    let removed: usize = gone.iter().map(|(from, to)| to - from).sum();
    let count = old.len() - removed + new.len();
    if count != index.len() || new.iter().any(|entry| !writable(entry)) {
        BUFFERS.give_back(old_bytes);
        return None;
    }
    let replaced_alike = gone.len() == new.len()
        && gone.iter().zip(&new).all(|(&(from, to), entry)| {
            to == from + 1 && old.path(from) == Some(entry.path.as_slice())
        });
    let (bytes, offsets, serialized) = if replaced_alike {
        in_place((old_bytes, old_offsets), &gone, &new)
    } else {
        let copied = around(&old, &gone, &new, capacity);
        BUFFERS.give_back(old_bytes);
        copied
    };
    let rewritten = replaced_alike.then(|| (generation, serialized.clone()));
    // Racily clean can be only what changed and what was racily clean before, when the
    // time they are taken against has not gone back; else every entry is looked at.
    let (racy, recent) = match (before, since) {
        (Some(before), Some(now)) if now >= before => {
            let written = Old { bytes: &bytes, offsets: &offsets };
            let mut candidates: Vec<usize> = was_recent
                .iter()
                .filter_map(|path| {
                    let at = written.lower_bound(path);
                    (written.path(at) == Some(path.as_slice())).then_some(at)
                })
                .chain(serialized)
                .collect();
            candidates.sort_unstable();
            candidates.dedup();
            racily_clean(&bytes, &offsets, candidates, since, fresh)
        }
        _ => racily_clean(&bytes, &offsets, 0..offsets.len() - 1, since, fresh),
    };
    Some(Entries { bytes, offsets, racy, recent, rewritten })
}

/// The entries of `old` with the single entries at `gone` overwritten by `new` (of the
/// same paths, so of the same lengths): the bytes, offsets, and the positions written.
fn in_place(
    (mut bytes, offsets): (Vec<u8>, Vec<u32>),
    gone: &[(usize, usize)],
    new: &[IndexEntry],
) -> (Vec<u8>, Vec<u32>, Vec<usize>) {
    let mut entry_bytes = Vec::with_capacity(256);
    let mut serialized = Vec::with_capacity(new.len());
    for (&(at, _), entry) in gone.iter().zip(new) {
        entry_bytes.clear();
        serialize(&mut entry_bytes, entry);
        let start = offsets[at] as usize;
        bytes[start..start + entry_bytes.len()].copy_from_slice(&entry_bytes);
        serialized.push(at);
    }
    (bytes, offsets, serialized)
}

/// The entries of `old` but those at `gone`, with `new` among them in order, copied into
/// a buffer of about `capacity` bytes: the bytes, offsets, and the positions of `new`.
fn around(
    old: &Old<'_>,
    gone: &[(usize, usize)],
    new: &[IndexEntry],
    capacity: usize,
) -> (Vec<u8>, Vec<u32>, Vec<usize>) {
    let count = old.len() - gone.iter().map(|(from, to)| to - from).sum::<usize>() + new.len();
    let mut bytes = BUFFERS.take(capacity.max(old.bytes.len() + new.len() * 128 + 4096));
    header(&mut bytes, count);
    let mut offsets = Vec::with_capacity(count + 1);
    let mut kept = Kept { old, gone, next_gone: 0, cursor: 0 };
    let mut serialized = Vec::with_capacity(new.len());
    for entry in new {
        kept.copy_until(old.lower_bound(&entry.path), &mut bytes, &mut offsets);
        serialized.push(offsets.len());
        offsets.push(bytes.len() as u32);
        serialize(&mut bytes, entry);
    }
    kept.copy_until(old.len(), &mut bytes, &mut offsets);
    offsets.push(bytes.len() as u32);
    (bytes, offsets, serialized)
}

/// Whether the version 2 writer writes `entry`: no conflict stage, no extended flags.
fn writable(entry: &IndexEntry) -> bool {
    entry.flags & STAGE_MASK == 0 && entry.flags_extended & EXTENDED_WRITTEN == 0
}

fn header(bytes: &mut Vec<u8>, count: usize) {
    bytes.extend_from_slice(b"DIRC");
    bytes.extend_from_slice(&2u32.to_be_bytes());
    bytes.extend_from_slice(&(count as u32).to_be_bytes());
}

/// Appends `entry` as a version 2 index file holds it.
fn serialize(bytes: &mut Vec<u8>, entry: &IndexEntry) {
    let start = bytes.len();
    for value in [
        entry.ctime.seconds() as u32,
        entry.ctime.nanoseconds(),
        entry.mtime.seconds() as u32,
        entry.mtime.nanoseconds(),
        entry.dev,
        entry.ino,
        entry.mode,
        entry.uid,
        entry.gid,
        entry.file_size,
    ] {
        bytes.extend_from_slice(&value.to_be_bytes());
    }
    bytes.extend_from_slice(entry.id.as_bytes());
    let flags = (entry.flags & ASSUME_VALID) | entry.path.len().min(NAME_MASK) as u16;
    bytes.extend_from_slice(&flags.to_be_bytes());
    bytes.extend_from_slice(&entry.path);
    // One to eight NULs, to a multiple of eight bytes.
    let padded = (bytes.len() - start + 8) & !7;
    bytes.resize(start + padded, 0);
}

/// Of the entries at `positions` (in order) of `bytes`, where each starts at `offsets`,
/// those modified no earlier than `since` and not empty, but for `fresh` ones (where they
/// are, and their paths); and the paths of all those, `fresh` ones too.
fn racily_clean(
    bytes: &[u8],
    offsets: &[u32],
    positions: impl IntoIterator<Item = usize>,
    since: Option<(i64, i64)>,
    fresh: &[RepoPath],
) -> (Racy, Vec<Vec<u8>>) {
    let Some(since) = since else { return (Vec::new(), Vec::new()) };
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (mut racy, mut recent) = (Vec::new(), Vec::new());
    for position in positions {
        let at = offsets[position] as usize;
        // As libgit2 holds them: signed seconds, unsigned nanoseconds.
        let modified =
            (i64::from(word(at + MTIME_OFFSET) as i32), i64::from(word(at + MTIME_OFFSET + 4)));
        if modified < since || word(at + SIZE_OFFSET) == 0 {
            continue;
        }
        let path = path_at(bytes, at);
        if fresh.binary_search_by(|fresh| fresh.0.as_slice().cmp(path)).is_err() {
            racy.push((at, path.to_vec()));
        }
        recent.push(path.to_vec());
    }
    (racy, recent)
}

/// The path of the entry at `at`.
fn path_at(bytes: &[u8], at: usize) -> &[u8] {
    let flags = u16::from_be_bytes([bytes[at + FLAGS_OFFSET], bytes[at + FLAGS_OFFSET + 1]]);
    let start = at + PATH_OFFSET;
    let len = match flags as usize & NAME_MASK {
        // A longer name ends at its first NUL.
        NAME_MASK => bytes[start..].iter().position(|b| *b == 0).unwrap_or(bytes.len() - start),
        len => len,
    };
    &bytes[start..start + len]
}

/// Overlapping or touching ranges joined, in order.
fn merged(ranges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &(from, to) in ranges.iter().filter(|(from, to)| from < to) {
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// The entries of an earlier write.
struct Old<'a> {
    bytes: &'a [u8],
    offsets: &'a [u32],
}

impl Old<'_> {
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn path(&self, at: usize) -> Option<&[u8]> {
        (at < self.len()).then(|| path_at(self.bytes, self.offsets[at] as usize))
    }

    /// The position of the first entry whose path is not before `path`.
    fn lower_bound(&self, path: &[u8]) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = (low + high) / 2;
            if path_at(self.bytes, self.offsets[middle] as usize) < path {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// The old entries that stay, copied in runs.
struct Kept<'a> {
    old: &'a Old<'a>,
    /// Ranges of positions that go, in order.
    gone: &'a [(usize, usize)],
    next_gone: usize,
    cursor: usize,
}

impl Kept<'_> {
    /// Copies the entries that stay from the cursor up to position `until`.
    fn copy_until(&mut self, until: usize, bytes: &mut Vec<u8>, offsets: &mut Vec<u32>) {
        while self.cursor < until {
            let run_end = match self.gone.get(self.next_gone) {
                Some(&(from, to)) if from <= self.cursor => {
                    self.cursor = self.cursor.max(to);
                    self.next_gone += 1;
                    continue;
                }
                Some(&(from, _)) => from.min(until),
                None => until,
            };
            let (start, end) =
                (self.old.offsets[self.cursor] as usize, self.old.offsets[run_end] as usize);
            let shift = bytes.len() as i64 - start as i64;
            offsets.extend(
                self.old.offsets[self.cursor..run_end].iter().map(|&o| (o as i64 + shift) as u32),
            );
            bytes.extend_from_slice(&self.old.bytes[start..end]);
            self.cursor = run_end;
        }
    }
}

/// Buffers index files are serialized into, kept between writes. A fresh one is the size
/// of the file (8.9 MB at 100,000 files), and every page of it is a page fault the first
/// time it is filled: measured, about 6 ms of each task at 100,000 files.
pub(crate) static BUFFERS: Buffers = Buffers { kept: Mutex::new(Vec::new()) };

/// At most this many buffers are kept (lanes, the review checkout and a landing write at
/// the same time), each of at most [`KEPT_BUFFER_BYTES`].
const KEPT_BUFFERS: usize = 3;
pub(crate) const KEPT_BUFFER_BYTES: usize = 64 << 20;

pub(crate) struct Buffers {
    kept: Mutex<Vec<Vec<u8>>>,
}

impl Buffers {
    /// An empty buffer of at least `capacity` bytes: a kept one when there is one.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let mut buffer = self.lock().pop().unwrap_or_default();
        buffer.clear();
        buffer.reserve(capacity);
        buffer
    }

    pub fn give_back(&self, buffer: Vec<u8>) {
        if buffer.capacity() > KEPT_BUFFER_BYTES {
            return;
        }
        let mut kept = self.lock();
        if kept.len() < KEPT_BUFFERS {
            kept.push(buffer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use git2::{IndexEntry, IndexTime, Oid};

    use super::{Image, all, patched};

    fn entry(path: &str, size: u32) -> IndexEntry {
        IndexEntry {
            ctime: IndexTime::new(1, 2),
            mtime: IndexTime::new(3, size),
            dev: 4,
            ino: 5,
            mode: 0o100644,
            uid: 6,
            gid: 7,
            file_size: size,
            id: Oid::hash_object(git2::ObjectType::Blob, path.as_bytes()).unwrap(),
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        }
    }

    /// An index of `paths` in memory (no file: nothing is read or written).
    fn index_of(paths: &[&str]) -> git2::Index {
        let mut index = git2::Index::new().unwrap();
        for path in paths {
            index.add(&entry(path, 1)).unwrap();
        }
        index
    }

    fn image_of(index: &git2::Index, changed: &[&str]) -> Image {
        let mut image = Image::of(all(index, None, &[], 0).unwrap(), None);
        image.changed = changed.iter().map(|p| p.as_bytes().to_vec()).collect();
        image
    }

    /// Each way an entry changes — replaced, added before, between and after the others,
    /// removed, a file becoming a folder and a folder a file, a name that sorts between a
    /// file and its folder's entries, a name longer than the flags can count — patches
    /// the last write into exactly the file a pass over every entry makes.
    #[test]
    fn a_patched_write_is_the_file_a_pass_over_every_entry_makes() {
        let long = format!("deep/{}", "x".repeat(5000));
        let mut index = index_of(&[
            "a.txt",
            "b",
            "b.txt",
            "dir/one",
            "dir/two/three",
            "dir/two/four",
            "m",
            "z/last",
            &long,
        ]);
        let image = image_of(&index, &["a.txt", "b", "dir/two", "m", "0first", "n", "zz", "z"]);
        index.add(&entry("a.txt", 9)).unwrap();
        index.remove_path(Path::new("b")).unwrap();
        for (path, size) in [("b/inside", 2), ("0first", 3), ("n", 4), ("zz", 5)] {
            index.add(&entry(path, size)).unwrap();
        }
        index.remove_dir(Path::new("dir/two"), 0).unwrap();
        index.add(&entry("dir/two", 6)).unwrap();
        index.remove_path(Path::new("m")).unwrap();
        index.remove_dir(Path::new("z"), 0).unwrap();
        // `b` became a folder: named by the change of `b` (its entry and those below).
        // `zz` was just written from its entry: not racily clean now, but at the next write.
        let fresh = [crate::paths::RepoPath(b"zz".to_vec())];
        let made = patched(&index, image, Some((3, 3)), &fresh, 0).expect("patched");
        let whole = all(&index, Some((3, 3)), &fresh, 0).unwrap();
        assert!(made.bytes == whole.bytes, "the patched file differs");
        assert_eq!(made.offsets, whole.offsets);
        assert_eq!(made.racy, whole.racy);
        assert!(!whole.racy.is_empty(), "entries as new as the file are racily clean");

        // Patched again from the patched write, against a later time: the long name
        // survives being copied, and the racily clean entries are found again without a
        // look at every entry.
        let mut again = Image::of(made, Some((3, 3)));
        again.changed = vec![b"n".to_vec()];
        index.add(&entry("n", 7)).unwrap();
        let made = patched(&index, again, Some((3, 4)), &[], 0).unwrap();
        let whole = all(&index, Some((3, 4)), &[], 0).unwrap();
        assert!(made.bytes == whole.bytes);
        assert_eq!(made.racy, whole.racy);
        assert!(whole.racy.iter().any(|(_, path)| path == b"zz"), "{:?}", whole.racy);
    }

    /// A change nobody followed leaves a count that does not add up: no patched file.
    #[test]
    fn a_change_the_image_was_not_told_of_is_never_patched_over() {
        let mut index = index_of(&["a", "b", "c"]);
        let image = image_of(&index, &["a"]);
        index.add(&entry("b2", 1)).unwrap();
        assert!(patched(&index, image, None, &[], 0).is_none());
    }
}
