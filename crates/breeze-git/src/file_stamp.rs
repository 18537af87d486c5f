//! What a file looked like when breeze last wrote or read it: enough to see that someone
//! changed it since (any write, truncation, link, rename over or change of mode moves its
//! change time, which no process can set back).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// A file's identity and times.
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
    std::fs::symlink_metadata(path).ok().map(|meta| Stamp::of(&meta))
}

impl Stamp {
    /// The stamp of the file `meta` describes.
    pub(crate) fn of(meta: &Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
        }
    }

    /// The file's modification time: seconds and nanoseconds.
    pub(crate) fn mtime(&self) -> (i64, i64) {
        self.mtime
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}
