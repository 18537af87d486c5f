//! Writing a large new file around the page cache (`O_DIRECT`): the index files breeze
//! writes whole (`index_file.rs`).
//!
//! An index of 100,000 entries is 8.9 MB. Written through the page cache, its pages stay
//! dirty until the file system's next journal commit; on ext4 (ordered data, the default)
//! that commit is made by the next `fdatasync` of anything — the run's journal, a moment
//! later on the next task's way — which then waits for those 8.9 MB to reach the disk: a
//! landing's rewrite of the user's index held the next task's worker start 4–7 ms
//! (`scripts/bench/README.md`). Written with `O_DIRECT`, the bytes reach the disk during
//! the write itself, on the thread that writes the index (a landing, beside the next
//! task), and the kernel does not copy them into the page cache first. What a file holds,
//! and when it is durable, is as before: nothing is synced here either way.
//!
//! Where the file system refuses `O_DIRECT` (tmpfs) or its writes (an alignment it needs
//! beyond 4 KiB), the file is written through the page cache, as before.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Files smaller than this go through the page cache: the commit's wait is for big ones.
pub(crate) const MIN_DIRECT_BYTES: usize = 1 << 20;
/// What `O_DIRECT` needs aligned: the buffer's address, the offset and the length of every
/// write (the logical block size of the device, 512 bytes or 4 KiB).
const BLOCK: usize = 4096;
/// Bytes copied into the aligned buffer and written at a time.
const CHUNK: usize = 1 << 20;

/// Writes `bytes` into the new, empty file `out` at `path`: with `O_DIRECT` when it is
/// [large](MIN_DIRECT_BYTES) and the file system takes it, else through the page cache.
pub(crate) fn write_new_file(out: &mut File, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.len() >= MIN_DIRECT_BYTES {
        match write_direct(path, bytes) {
            Ok(()) => return Ok(()),
            Err(err) => {
                tracing::debug!(path = %path.display(), "written through the page cache: {err}");
                // Whatever the direct write left is written over, from the start.
                out.set_len(0)?;
            }
        }
    }
    out.write_all(bytes)
}

/// Writes `bytes` into the file at `path` (empty, or written over) with `O_DIRECT`: a chunk
/// at a time through a buffer aligned to [`BLOCK`], the last chunk padded with zeros to a
/// whole block and the file then cut to `bytes.len()`.
fn write_direct(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .custom_flags(nix::fcntl::OFlag::O_DIRECT.bits())
        .open(path)?;
    let mut buffer = vec![0u8; CHUNK + BLOCK];
    // An aligned window of the buffer: `align_offset` is always in 0..BLOCK for bytes.
    let start = buffer.as_ptr().align_offset(BLOCK);
    for chunk in bytes.chunks(CHUNK) {
        let padded = chunk.len().div_ceil(BLOCK) * BLOCK;
        let window = &mut buffer[start..start + padded];
        window[..chunk.len()].copy_from_slice(chunk);
        window[chunk.len()..].fill(0);
        file.write_all(window)?;
    }
    file.set_len(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes no two blocks of which are alike, of `len` bytes.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 4093) as u8).collect()
    }

    fn written(dir: &Path, bytes: &[u8]) -> Vec<u8> {
        let path = dir.join("index.lock");
        let mut out = OpenOptions::new().write(true).create_new(true).open(&path).unwrap();
        write_new_file(&mut out, &path, bytes).unwrap();
        drop(out);
        let back = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        back
    }

    #[test]
    fn a_file_written_around_the_page_cache_holds_exactly_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        // Below the threshold, one block short of a chunk, a chunk and a ragged tail.
        for len in [1000, MIN_DIRECT_BYTES - 1, MIN_DIRECT_BYTES, CHUNK * 3 + 123] {
            let bytes = pattern(len);
            assert!(written(dir.path(), &bytes) == bytes, "{len} bytes");
        }
    }

    #[test]
    fn where_a_direct_write_cannot_be_made_the_file_is_written_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.lock");
        let mut out = OpenOptions::new().write(true).create_new(true).open(&path).unwrap();
        // The direct open fails (no such file there); the file open as `out` is written.
        let bytes = pattern(CHUNK * 2 + 5);
        write_new_file(&mut out, &dir.path().join("gone/index.lock"), &bytes).unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes);
    }

    #[test]
    fn on_a_disk_that_takes_them_direct_writes_are_made() {
        // The path the others may have taken around: on the test's disk (ext4 in CI) a
        // direct write must succeed, a misaligned one would be refused with EINVAL.
        let dir = tempfile::tempdir().unwrap();
        let on_tmpfs = nix::sys::statfs::statfs(dir.path())
            .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
        if on_tmpfs {
            return;
        }
        let path = dir.path().join("direct");
        std::fs::write(&path, b"").unwrap();
        let bytes = pattern(CHUNK + 1);
        write_direct(&path, &bytes).unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes);
    }
}
