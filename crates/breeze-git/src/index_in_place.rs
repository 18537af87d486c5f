//! An index file of breeze's own checkouts patched where it lies, instead of written whole
//! beside it and renamed over it.
//!
//! A task changes a few entries of a lane's private index and of the review checkout's
//! index; writing each file whole costs about 8 ms of CPU at 100,000 files (8.9 MB copied
//! into fresh pages, a new inode, the old one's pages and blocks freed, its writeback
//! started by the rename). When the file is still exactly the one breeze last wrote — the
//! same inode, one link, the same size and times (any write, truncation, link or rename
//! moves its change time) — only the entries that changed are written, with the cache-tree
//! and the trailer after them.
//!
//! The order keeps every state a kill can leave a valid index that hides nothing:
//!
//! 1. the cache-tree extension is renamed to an optional one git and libgit2 skip
//!    ([`SKIPPED_TREE`]), so no reader takes a folder for unchanged meanwhile;
//! 2. the size of each entry to change is set to 0, which makes git and libgit2 compare
//!    that file by content whatever its times say (git's own mark for a racily clean entry);
//! 3. each entry is written but for its size, then
//! 4. the sizes, four aligned bytes each (never split by a kill);
//! 5. the cache-tree and trailer, and last the extension's name again.
//!
//! Only breeze's own checkouts are patched so, never the user's index (git replaces that by
//! rename under `index.lock`, and so does breeze): no git runs in them while breeze writes
//! (their roles have ended, the lanes are breeze's), and a file another process replaced or
//! touched is written whole. A power loss can leave pages of two writes; the files are
//! breeze's derived state, written whole again by the next process.

use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use nix::fcntl::OFlag;

use crate::file_stamp::Stamp;
use crate::index_entries::SIZE_OFFSET;

/// The name of the cache-tree extension while its file is patched: an optional extension
/// (its first letter upper case) that git and libgit2 skip, so a file left half-patched
/// has no cache-tree rather than a wrong one.
const SKIPPED_TREE: &[u8; 4] = b"BRZT";

/// The new bytes of an index file and where they differ from the file's.
pub(crate) struct Patch<'a> {
    /// The whole file, as it must end.
    pub bytes: &'a [u8],
    /// Where the entries end: the extensions and the trailer follow, written whole.
    pub entries_end: usize,
    /// Where each rewritten entry starts and ends.
    pub entries: Vec<(usize, usize)>,
    /// Where each entry starts whose size may change: the rewritten ones and the racily
    /// clean ones.
    pub sizes: Vec<usize>,
}

/// Patches the index file `file` to `patch.bytes` when it is still the file stamped
/// `expected` and of the same length. `Ok(Some(stamp))`: patched, its stamp now.
/// `Ok(None)`: not that file, or git's `index.lock` is beside it (the caller writes it
/// whole, through the lock). An error may leave it half-patched, as described above.
pub(crate) fn patch(
    file: &Path,
    expected: &Stamp,
    patch: &Patch<'_>,
) -> std::io::Result<Option<Stamp>> {
    let mut lock = file.as_os_str().to_owned();
    lock.push(".lock");
    if std::fs::symlink_metadata(&lock).is_ok() {
        return Ok(None);
    }
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let Ok(out) = File::options().write(true).custom_flags(flags.bits()).open(file) else {
        return Ok(None);
    };
    let meta = out.metadata()?;
    let same = meta.is_file()
        && meta.nlink() == 1
        && Stamp::of(&meta) == *expected
        && meta.len() == patch.bytes.len() as u64;
    if !same {
        return Ok(None);
    }
    for (offset, written) in writes(patch) {
        out.write_all_at(written, offset as u64)?;
    }
    Ok(Some(Stamp::of(&out.metadata()?)))
}

/// The writes that patch a file into `patch.bytes`, in the order described in the module
/// docs: each, the offset and the bytes written there.
fn writes<'a>(patch: &Patch<'a>) -> Vec<(usize, &'a [u8])> {
    let &Patch { bytes, entries_end, ref entries, ref sizes } = patch;
    const ZERO: &[u8] = &[0; 4];
    let size_of = |start: usize| start + SIZE_OFFSET..start + SIZE_OFFSET + 4;
    let tree = bytes[entries_end..].starts_with(b"TREE");
    let mut writes = Vec::with_capacity(2 + 3 * entries.len() + 2 * sizes.len());
    if tree {
        writes.push((entries_end, &SKIPPED_TREE[..]));
    }
    writes.extend(sizes.iter().map(|&start| (start + SIZE_OFFSET, ZERO)));
    for &(start, end) in entries {
        writes.push((start, &bytes[start..start + SIZE_OFFSET]));
        writes.push((start + SIZE_OFFSET + 4, &bytes[start + SIZE_OFFSET + 4..end]));
    }
    for &start in sizes {
        let size = &bytes[size_of(start)];
        if size != ZERO {
            writes.push((start + SIZE_OFFSET, size));
        }
    }
    if tree {
        writes.push((entries_end + 4, &bytes[entries_end + 4..]));
        writes.push((entries_end, &bytes[entries_end..entries_end + 4]));
    } else {
        writes.push((entries_end, &bytes[entries_end..]));
    }
    writes
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::{Patch, patch, writes};
    use crate::file_stamp::stamp;
    use crate::git_cli::git_for_test as git;

    /// The index file git wrote in `repo`, as breeze writes its own (twenty zeros for the
    /// checksum), and where its entries end.
    fn index_bytes(repo: &Path) -> (Vec<u8>, usize) {
        let mut bytes = std::fs::read(repo.join(".git/index")).unwrap();
        let len = bytes.len();
        bytes[len - 20..].fill(0);
        let tree = bytes.windows(4).rposition(|w| w == b"TREE").expect("a cache-tree");
        (bytes, tree)
    }

    /// Where the entry of `path` starts and ends in the entries of an index file.
    fn entry_of(bytes: &[u8], path: &str) -> (usize, usize) {
        let mut at = 12;
        loop {
            let len = u16::from_be_bytes([bytes[at + 60], bytes[at + 61]]) as usize & 0xfff;
            let end = at + ((62 + len + 8) & !7);
            if &bytes[at + 62..at + 62 + len] == path.as_bytes() {
                return (at, end);
            }
            at = end;
        }
    }

    /// Files written `hours` ago: git finds none racily clean, and writes their entries as
    /// they are.
    fn write_old(path: &Path, contents: &str, hours: u32) {
        std::fs::write(path, contents).unwrap();
        let ago = format!("{hours} hours ago");
        let ok = Command::new("touch").args(["-d", &ago]).arg(path).status().unwrap();
        assert!(ok.success());
    }

    /// Whether git reads the index of `repo` as it stands and hides nothing: every path it
    /// takes for unchanged holds what the index says, and the tree the index makes (from
    /// its cache-tree where it has one) holds exactly its entries.
    fn hides_nothing(repo: &Path) -> Result<(), String> {
        let status = git(repo, &["status", "--porcelain=v1", "--untracked-files=no"]);
        for line in git(repo, &["ls-files", "-s"]).lines() {
            let (id, path) = (&line[7..47], &line[50..]);
            let on_disk = git(repo, &["hash-object", path]);
            let reported = status.lines().any(|s| &s[3..] == path && s.as_bytes()[1] == b'M');
            if on_disk.trim() != id && !reported {
                return Err(format!("{path} differs from its entry, and git says nothing"));
            }
        }
        let tree = git(repo, &["write-tree"]);
        let made = git(repo, &["ls-tree", "-r", tree.trim()]);
        let made: Vec<String> =
            made.lines().map(|l| format!("{} {}", &l[..6], &l[12..]).replace("\t", " ")).collect();
        let entries: Vec<String> = git(repo, &["ls-files", "-s"])
            .lines()
            .map(|l| format!("{} {} {}", &l[..6], &l[7..47], &l[50..]))
            .collect();
        if made != entries {
            return Err(format!("the tree it makes is not its entries: {made:?} {entries:?}"));
        }
        git2::Index::open(&repo.join(".git/index")).map_err(|e| format!("libgit2: {e}"))?;
        Ok(())
    }

    /// A patch applied in full gives exactly the new file; stopped after any of its writes
    /// (a kill), it leaves an index git and libgit2 read and that hides no change: the
    /// entry changed is compared by content until its size is final, and the cache-tree
    /// is skipped until it is whole.
    #[test]
    fn a_patch_stopped_after_any_write_leaves_an_index_that_hides_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(repo.join("dir")).unwrap();
        for (path, contents) in [("a.txt", "a\n"), ("dir/b.txt", "b\n"), ("dir/c.txt", "c\n")] {
            write_old(&repo.join(path), contents, 2);
        }
        git(repo, &["add", "-A"]);
        git(repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
        let (old, old_end) = index_bytes(repo);
        // The same path, new content of the same size: a task's edit.
        write_old(&repo.join("dir/b.txt"), "B\n", 1);
        git(repo, &["add", "dir/b.txt"]);
        git(repo, &["write-tree"]);
        let (new, entries_end) = index_bytes(repo);
        assert_eq!((old.len(), old_end), (new.len(), entries_end), "the same layout");
        let (start, end) = entry_of(&new, "dir/b.txt");
        assert_ne!(old[start..end], new[start..end]);
        assert_eq!(old[..start], new[..start], "git changed only the entry of dir/b.txt");
        assert_eq!(old[end..entries_end], new[end..entries_end]);
        let made =
            Patch { bytes: &new, entries_end, entries: vec![(start, end)], sizes: vec![start] };

        let index = repo.join(".git/index");
        let steps = writes(&made);
        for stop in 0..=steps.len() {
            let mut bytes = old.clone();
            for (offset, written) in &steps[..stop] {
                bytes[*offset..*offset + written.len()].copy_from_slice(written);
            }
            std::fs::write(&index, &bytes).unwrap();
            if let Err(why) = hides_nothing(repo) {
                panic!("stopped after {stop} of {} writes: {why}", steps.len());
            }
        }

        std::fs::write(&index, &old).unwrap();
        let before = stamp(&index).unwrap();
        let after = patch(&index, &before, &made).unwrap().expect("patched");
        assert!(std::fs::read(&index).unwrap() == new, "the patched file is the new one");
        assert_eq!(after, stamp(&index).unwrap());
        assert_eq!(git(repo, &["status", "--porcelain", "--untracked-files=no"]), "M  dir/b.txt\n");
    }

    /// A file changed, linked or locked since breeze's write is not patched: the caller
    /// writes it whole.
    #[test]
    fn a_file_touched_linked_or_locked_since_is_not_patched() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index");
        let bytes = b"DIRC\0\0\0\x02\0\0\0\0".iter().chain(&[0; 20]).copied().collect::<Vec<u8>>();
        let made = Patch { bytes: &bytes, entries_end: 12, entries: vec![], sizes: vec![] };
        std::fs::write(&file, &bytes).unwrap();
        let written = stamp(&file).unwrap();
        assert!(patch(&file, &written, &made).unwrap().is_some(), "the file as written");

        let written = stamp(&file).unwrap();
        std::fs::write(dir.path().join("index.lock"), "").unwrap();
        assert!(patch(&file, &written, &made).unwrap().is_none(), "locked");
        std::fs::remove_file(dir.path().join("index.lock")).unwrap();

        std::fs::hard_link(&file, dir.path().join("elsewhere")).unwrap();
        let linked = stamp(&file).unwrap();
        assert_ne!(linked, written, "a link moves the change time");
        assert!(patch(&file, &linked, &made).unwrap().is_none(), "linked");
        std::fs::remove_file(dir.path().join("elsewhere")).unwrap();

        let now = stamp(&file).unwrap();
        let same = std::fs::read(&file).unwrap();
        std::fs::write(&file, same).unwrap();
        assert!(patch(&file, &now, &made).unwrap().is_none(), "written since");
    }
}
