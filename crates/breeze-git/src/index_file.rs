//! The index files of breeze's lanes and review checkout, written by breeze itself.
//!
//! libgit2 writes an index whole and hashes it with SHA-1DC, its collision-detecting SHA-1:
//! at 100,000 files that is 8.9 MB and about 46 ms a write, 36 of them hashing (perf, in
//! `scripts/bench/README.md`), and a task's lane move and review checkout each wrote one.
//! [`write`] writes the same file from the handle's index in memory, as libgit2 writes it
//! (a test compares the two): the entries (version 2), the cache-tree extension git reads
//! to skip unchanged folders (`TREE`, from the tree the index makes, folder by folder from
//! [`TreeMemo`]), and the trailing SHA-1, hashed with the CPU's SHA instructions where it
//! has them. What this writer leaves to libgit2: other versions, conflicts, entries with
//! extended flags (intent-to-add, skip-worktree), entries out of byte order.
//!
//! The user's own index (a landing's) stays libgit2's: its cache-tree would name trees of
//! their staged changes, which git trusts to exist, and breeze does not write trees into
//! their repository for that.
//!
//! Racily clean entries are smudged first, as git and libgit2 do: an entry whose file time
//! is not older than the index file it was last written into may hide a change made in the
//! same clock tick, so its file is compared by content and, if it differs, its size is set
//! to 0 (git then looks at it).
//!
//! libgit2 decides that its index in memory is stale by comparing the file's trailing
//! checksum with the one it last read or wrote itself: after breeze wrote the file that
//! differs, and the next status or checkout would read all 8.9 MB again. So each write is
//! remembered for the index object that made it ([`OwnWrites`]); [`fresh_index`] sees that
//! the file is still that one (nothing to read), and the checkouts and status reads that
//! follow it are told not to read it themselves (`refresh(false)`, `no_refresh`).

use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use git2::{Binding as _, Index, IndexEntry, IndexTime, ObjectType, Oid, Repository};
use sha1::{Digest as _, Sha1};

use crate::error::{Context as _, GitError};
use crate::paths::RepoPath;

/// One path's version in a tree: its id, mode and kind (a blob, or a commit for a gitlink).
pub(crate) type Version = (Oid, i32, ObjectType);

/// libgit2's flags of an index entry (include/git2/index.h): assume-valid, the stage, the
/// length of the name; of its extended flags, intent-to-add and skip-worktree (written).
const ASSUME_VALID: u16 = 0x8000;
const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: usize = 0x0fff;
const EXTENDED_WRITTEN: u16 = (1 << 13) | (1 << 14);
/// Where an entry's file size is: after ctime, mtime, dev, ino, mode, uid and gid.
const SIZE_OFFSET: usize = 36;

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
    let context = || format!("could not write the index of {}", at.display());
    let Some(file) = index.path().map(Path::to_path_buf) else {
        return Err(GitError::Git {
            context: context(),
            cause: git2::Error::from_str("the index has no file"),
        });
    };
    let before = stamp(&file);
    if index.version() != 2 {
        return write_by_libgit2(index, at);
    }
    let Some(mut written) = entries(index, before.as_ref(), fresh) else {
        return write_by_libgit2(index, at);
    };
    smudge_racily_clean(index, at, &mut written).ctx(context)?;
    let Ok(root) = index.write_tree_to(repo) else {
        // An index libgit2 cannot make a tree of is left to libgit2's writer.
        return write_by_libgit2(index, at);
    };
    let mut bytes = written.bytes;
    let tree = TREES.extension(repo, root).ctx(context)?;
    bytes.extend_from_slice(b"TREE");
    bytes.extend_from_slice(&(tree.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&tree);
    let checksum = Sha1::digest(&bytes);
    bytes.extend_from_slice(&checksum[..]);
    replace_file(&file, &bytes, at)?;
    OWN_WRITES.remember(index, &file);
    Ok(())
}

/// The repository's index, re-read from disk if another process changed it since this
/// handle last read or wrote it (`Repository::index` alone returns the cached one).
pub(crate) fn fresh_index(repo: &Repository, at: &Path) -> Result<Index, GitError> {
    let context = || format!("could not read the index of {}", at.display());
    let mut index = repo.index().ctx(context)?;
    // libgit2 would see a file breeze wrote as changed (`OwnWrites`); a file someone else
    // wrote since is read whole, whatever its checksum says.
    match OWN_WRITES.file_of(&index) {
        OwnFile::Current => {}
        OwnFile::WrittenSince => index.read(true).ctx(context)?,
        OwnFile::NotOurs => index.read(false).ctx(context)?,
    }
    Ok(index)
}

/// What a file looked like: enough to see that someone changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

/// The stamp of what is at `path` (links not followed); `None` when nothing is.
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        mode: meta.mode(),
    })
}

impl Stamp {
    /// The file's modification time: seconds and nanoseconds.
    pub(crate) fn mtime(&self) -> (i64, i64) {
        self.mtime
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

/// Sets the entries of `placed` and `unstatted` paths of the checkout at `at` to the
/// versions `target` gives them (a path with none loses its entry): `placed` ones with the
/// stat data of their files, just written, `unstatted` ones with none (git compares their
/// content). Removals first: a folder's entries go before a file takes its name, and the
/// other way round.
pub(crate) fn set_entries(
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
    })
}

/// An index file's header and entries, and where its racily clean entries are.
struct Entries {
    bytes: Vec<u8>,
    /// The offset of each racily clean entry, and its path.
    racy: Vec<(usize, Vec<u8>)>,
}

/// The header and entries of `index` as a version 2 index file, in one pass; racily clean
/// are the entries modified no earlier than the file `before` describes, but for `fresh`
/// ones (see [`write`]). `None` for what
/// [`write`] leaves to libgit2: a conflict (stages), an entry with extended flags
/// (intent-to-add, skip-worktree), entries out of git's order (a case-insensitive index).
fn entries(index: &Index, before: Option<&Stamp>, fresh: &[RepoPath]) -> Option<Entries> {
    let count = index.len();
    // The file is rewritten at about its size; entries average under 96 bytes.
    let capacity = before.map_or(count * 96, |stamp| stamp.size() as usize + 4096);
    let mut bytes = Vec::with_capacity(capacity);
    bytes.extend_from_slice(b"DIRC");
    bytes.extend_from_slice(&2u32.to_be_bytes());
    bytes.extend_from_slice(&(count as u32).to_be_bytes());
    let since = before.map(Stamp::mtime);
    let mut racy = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    for (at, entry) in index.iter().enumerate() {
        if entry.flags & STAGE_MASK != 0
            || entry.flags_extended & EXTENDED_WRITTEN != 0
            || (at > 0 && last.as_slice() >= entry.path.as_slice())
        {
            return None;
        }
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
        let modified = (i64::from(entry.mtime.seconds()), i64::from(entry.mtime.nanoseconds()));
        if since.is_some_and(|since| modified >= since)
            && entry.file_size != 0
            && fresh.binary_search_by(|path| path.0.as_slice().cmp(&entry.path)).is_err()
        {
            racy.push((start, entry.path.clone()));
        }
        last = entry.path;
    }
    Some(Entries { bytes, racy })
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

/// Replaces `file` with `bytes`: written to `index.lock` beside it (created only if absent,
/// as git takes the lock), then renamed over it.
fn replace_file(file: &Path, bytes: &[u8], at: &Path) -> Result<(), GitError> {
    let mut lock_name = file.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = PathBuf::from(lock_name);
    let mut out = match std::fs::OpenOptions::new().write(true).create_new(true).open(&lock) {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(GitError::Locked {
                path: at.to_path_buf(),
                detail: format!("{} exists", lock.display()),
            });
        }
        Err(e) => return Err(GitError::io("create", &lock, e)),
    };
    if let Err(e) = out.write_all(bytes) {
        drop(out);
        let _ = std::fs::remove_file(&lock);
        return Err(GitError::io("write", &lock, e));
    }
    drop(out);
    std::fs::rename(&lock, file).map_err(|e| {
        let _ = std::fs::remove_file(&lock);
        GitError::io("replace", file, e)
    })
}

/// The index files breeze wrote, by the index object (libgit2's, in memory) that wrote them.
struct OwnWrites {
    by_index: Mutex<HashMap<usize, (PathBuf, Stamp)>>,
}

/// What an index's file is to breeze's last write from that index.
enum OwnFile {
    /// Still the file breeze wrote: the index in memory is at least as new.
    Current,
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

    fn remember(&self, index: &Index, file: &Path) {
        let mut writes = self.lock();
        if writes.len() >= MAX_OWN_WRITES {
            writes.clear();
        }
        match stamp(file) {
            Some(written) => writes.insert(Self::key(index), (file.to_path_buf(), written)),
            None => writes.remove(&Self::key(index)),
        };
    }

    /// What the file of `index` is to breeze's last write from it; a write that is no longer
    /// current is forgotten.
    fn file_of(&self, index: &Index) -> OwnFile {
        let key = Self::key(index);
        let mut writes = self.lock();
        let Some((file, written)) = writes.get(&key) else { return OwnFile::NotOurs };
        if index.path() == Some(file.as_path()) && stamp(file).as_ref() == Some(written) {
            return OwnFile::Current;
        }
        writes.remove(&key);
        OwnFile::WrittenSince
    }

    fn forget(&self, index: &Index) {
        self.lock().remove(&Self::key(index));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, (PathBuf, Stamp)>> {
        self.by_index.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The cache-tree extension of a tree, folder by folder, by tree id: a folder's part
/// depends only on its tree, so a task's new root reads only the folders it changed.
struct TreeMemo {
    nodes: Mutex<MemoNodes>,
}

#[derive(Default)]
struct MemoNodes {
    by_tree: HashMap<Oid, (Arc<Node>, u64)>,
    generation: u64,
}

/// One folder of the extension: how many index entries are below it, how many folders
/// directly in it, and its folders' records (name, counts, id, and theirs in turn).
struct Node {
    entries: usize,
    subtrees: usize,
    body: Vec<u8>,
}

/// Folders kept when the memo is pruned: those used by the last few extensions.
const MEMO_KEEP_GENERATIONS: u64 = 16;
/// The memo is pruned once it holds this many folders.
const MEMO_MAX_NODES: usize = 200_000;

static TREES: LazyLock<TreeMemo> =
    LazyLock::new(|| TreeMemo { nodes: Mutex::new(MemoNodes::default()) });

impl TreeMemo {
    /// The `TREE` extension's data for an index whose tree is `root`.
    fn extension(&self, repo: &Repository, root: Oid) -> Result<Vec<u8>, git2::Error> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        nodes.generation += 1;
        let node = nodes.node(repo, root)?;
        if nodes.by_tree.len() > MEMO_MAX_NODES {
            let oldest = nodes.generation.saturating_sub(MEMO_KEEP_GENERATIONS);
            nodes.by_tree.retain(|_, (_, used)| *used >= oldest);
        }
        let mut out = Vec::with_capacity(node.body.len() + 64);
        record(&mut out, b"", root, &node);
        Ok(out)
    }
}

impl MemoNodes {
    fn node(&mut self, repo: &Repository, id: Oid) -> Result<Arc<Node>, git2::Error> {
        let generation = self.generation;
        if let Some((node, used)) = self.by_tree.get_mut(&id) {
            *used = generation;
            return Ok(Arc::clone(node));
        }
        let tree = repo.find_tree(id)?;
        let mut node = Node { entries: 0, subtrees: 0, body: Vec::new() };
        for entry in tree.iter() {
            if entry.kind() == Some(ObjectType::Tree) {
                let child = self.node(repo, entry.id())?;
                record(&mut node.body, entry.name_bytes(), entry.id(), &child);
                node.entries += child.entries;
                node.subtrees += 1;
            } else {
                node.entries += 1;
            }
        }
        let node = Arc::new(node);
        self.by_tree.insert(id, (Arc::clone(&node), generation));
        Ok(node)
    }
}

/// One folder's record in git's format: name, NUL, entry count, space, folder count,
/// newline, tree id; then its folders' records.
fn record(out: &mut Vec<u8>, name: &[u8], id: Oid, node: &Node) {
    out.extend_from_slice(name);
    out.push(0);
    out.extend_from_slice(format!("{} {}\n", node.entries, node.subtrees).as_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&node.body);
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;
    use std::process::Command;

    use git2::{IndexEntry, IndexTime, Oid, Repository};

    use super::{fresh_index, write};

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// A cache-tree record: the folder, "entries folders", the tree id.
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
            let id = data[newline + 1..newline + 21].to_vec();
            data = &data[newline + 21..];
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
        let zero = IndexTime::new(0, 0);
        let entry = |path: &str| IndexEntry {
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
        };
        index.add(&entry("in-memory.txt")).unwrap();
        let again = fresh_index(&repo, root).unwrap();
        assert!(again.get_path(Path::new("in-memory.txt"), 0).is_some(), "read again");
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        git(root, &["add", "new.txt"]);
        let again = fresh_index(&repo, root).unwrap();
        assert!(again.get_path(Path::new("new.txt"), 0).is_some(), "git's write not read");
        assert!(again.get_path(Path::new("in-memory.txt"), 0).is_none());
    }
}
