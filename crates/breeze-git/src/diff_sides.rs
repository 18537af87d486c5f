//! The two sides of each file of a libgit2 diff, as bytes for `file_patch.rs`: blobs from
//! the object database, or the files of a checkout as they are now. No blob or file above
//! the size limit is read (its size comes from the object header or from `lstat`); a
//! checkout's files are read without following links or opening anything but a regular
//! file (`untrusted.rs`); a gitlink shows as `Subproject commit <id>`, as git shows it.

use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use git2::{Delta, DiffDelta, DiffFile, FileMode, Odb, Oid, Repository};

use crate::error::GitError;
use crate::file_patch::{Body, How, Side};
use crate::paths::bytes_path;

/// Where the new side of each file is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NewSides<'p> {
    /// From the object database (a diff of two commits).
    Objects,
    /// From the files of the checkout at this path (a diff against a working tree).
    Worktree(&'p Path),
}

/// Reads the sides of a diff's files.
pub(crate) struct SideReader<'r> {
    pub(crate) repo: &'r Repository,
    pub(crate) odb: &'r Odb<'r>,
    /// The size limit: nothing larger is read.
    pub(crate) max: u64,
    pub(crate) new_sides: NewSides<'r>,
}

impl SideReader<'_> {
    /// The file changes `delta` stands for, with both sides read: one, or two for a type
    /// change (the old entry removed, the new one added, as git shows it); none for what
    /// did not change.
    pub(crate) fn file_changes(
        &self,
        delta: &DiffDelta<'_>,
    ) -> Result<Vec<(How, Side, Side)>, GitError> {
        let how = match delta.status() {
            Delta::Added | Delta::Untracked => How::Added,
            Delta::Deleted => How::Deleted,
            Delta::Modified | Delta::Unreadable => How::Modified,
            Delta::Renamed => How::Renamed,
            Delta::Copied => How::Copied,
            Delta::Typechange => {
                let (old, new) = (self.old_side(&delta.old_file())?, self.new_side(delta)?);
                let (gone, none) = (absent(&new.path), absent(&old.path));
                return Ok(vec![(How::Deleted, old, gone), (How::Added, none, new)]);
            }
            Delta::Unmodified | Delta::Ignored | Delta::Conflicted => return Ok(Vec::new()),
        };
        let old = match how {
            How::Added => absent(delta.new_file().path_bytes().unwrap_or_default()),
            _ => self.old_side(&delta.old_file())?,
        };
        let new = match how {
            How::Deleted => absent(delta.old_file().path_bytes().unwrap_or_default()),
            _ => self.new_side(delta)?,
        };
        Ok(vec![(how, old, new)])
    }

    fn old_side(&self, file: &DiffFile<'_>) -> Result<Side, GitError> {
        let body = self.object_body(file)?;
        Ok(side(file, body))
    }

    fn new_side(&self, delta: &DiffDelta<'_>) -> Result<Side, GitError> {
        let file = delta.new_file();
        let body = match self.new_sides {
            NewSides::Objects => self.object_body(&file)?,
            NewSides::Worktree(root) => self.worktree_body(root, &file)?,
        };
        Ok(side(&file, body))
    }

    /// A blob's content, or its size when above the limit (from the object's header).
    fn object_body(&self, file: &DiffFile<'_>) -> Result<Body, GitError> {
        let id = file.id();
        match file.mode() {
            FileMode::Unreadable => return Ok(Body::Absent),
            FileMode::Commit => return Ok(gitlink(id)),
            _ => {}
        }
        let missing = |_| GitError::MissingObject { what: "blob", oid: id };
        let (size, _) = self.odb.read_header(id).map_err(missing)?;
        if size as u64 > self.max {
            return Ok(Body::TooBig(size as u64));
        }
        let blob = self.repo.find_blob(id).map_err(missing)?;
        Ok(Body::Bytes(blob.content().to_vec()))
    }

    /// A checkout's file as it is now: a link's target, a regular file's bytes (its size
    /// alone when above the limit), a nested repository's commit.
    fn worktree_body(&self, root: &Path, file: &DiffFile<'_>) -> Result<Body, GitError> {
        let full = root.join(bytes_path(file.path_bytes().unwrap_or_default()));
        match file.mode() {
            FileMode::Unreadable => return Ok(Body::Absent),
            FileMode::Commit => return Ok(gitlink(file.id())),
            FileMode::Link => {
                let target =
                    std::fs::read_link(&full).map_err(|e| GitError::io("read", &full, e))?;
                return Ok(Body::Bytes(target.as_os_str().as_bytes().to_vec()));
            }
            _ => {}
        }
        let size = match std::fs::symlink_metadata(&full) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Body::Absent),
            Err(e) => return Err(GitError::io("inspect", &full, e)),
        };
        if size > self.max {
            return Ok(Body::TooBig(size));
        }
        let bytes = crate::untrusted::read_prefix(&full, self.max)?;
        Ok(bytes.map_or(Body::Absent, Body::Bytes))
    }
}

fn side(file: &DiffFile<'_>, body: Body) -> Side {
    Side {
        path: file.path_bytes().unwrap_or_default().to_vec(),
        mode: u32::from(file.mode()),
        id: file.id(),
        body,
    }
}

/// The side of a path that is not there.
fn absent(path: &[u8]) -> Side {
    Side { path: path.to_vec(), mode: 0, id: Oid::ZERO_SHA1, body: Body::Absent }
}

/// What git shows for a gitlink: the commit it records.
fn gitlink(id: Oid) -> Body {
    Body::Bytes(format!("Subproject commit {id}\n").into_bytes())
}
