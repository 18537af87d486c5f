//! Files in places a role process could have written: a lane's admin folder
//! (`.git/worktrees/<lane>/`: writable to no role under Landlock, to any role without it),
//! a lane's private git directory (writable to its worker), and a worktree's own files and
//! `.git` file. They are read without following links, only when they are regular files
//! (looked at with `lstat` before they are opened: a FIFO or device never is) and never
//! past a bound, and written by replacing what is there — a new file renamed over it —
//! never by opening it, so a planted link, FIFO or device neither redirects breeze's
//! writes nor blocks its reads.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt as _, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;

use crate::error::GitError;

/// Largest small file (HEAD, `gitdir`, `commondir`, a ref, a `.git` file) read from such a
/// place.
pub(crate) const SMALL_FILE_LIMIT: u64 = 64 * 1024;

/// Largest file copied out of such a place (a lane's index: about 10 MB for 100,000 files).
pub(crate) const COPY_LIMIT: u64 = 1 << 30;

/// What a file-system entry is, for messages: "a symbolic link", "a FIFO", ...
pub(crate) fn kind_of(file_type: std::fs::FileType) -> &'static str {
    match file_type {
        t if t.is_symlink() => "a symbolic link",
        t if t.is_dir() => "a directory",
        t if t.is_file() => "a regular file",
        t if t.is_fifo() => "a FIFO",
        t if t.is_char_device() => "a character device",
        t if t.is_block_device() => "a block device",
        t if t.is_socket() => "a socket",
        _ => "a special file",
    }
}

fn untrusted(path: &Path, problem: impl Into<String>) -> GitError {
    GitError::Untrusted { path: path.to_path_buf(), problem: problem.into() }
}

/// Opens `path` for reading when it is a regular file, with its size: anything else is
/// refused from its `lstat` without being opened, and the open itself neither follows a
/// link (`O_NOFOLLOW`) nor waits for a FIFO's writer (`O_NONBLOCK`) should the entry have
/// been swapped in between (the open file is checked again). `Ok(None)` when there is
/// nothing at `path`.
fn open_regular(path: &Path) -> Result<Option<(File, u64)>, GitError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(meta) => return Err(untrusted(path, format!("is {}", kind_of(meta.file_type())))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(GitError::io("inspect", path, e)),
    }
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let file = match File::options().read(true).custom_flags(flags.bits()).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(Errno::ELOOP as i32) => {
            return Err(untrusted(path, "is a symbolic link"));
        }
        Err(e) => return Err(GitError::io("open", path, e)),
    };
    let meta = file.metadata().map_err(|e| GitError::io("inspect", path, e))?;
    if !meta.is_file() {
        return Err(untrusted(path, format!("is {}", kind_of(meta.file_type()))));
    }
    Ok(Some((file, meta.len())))
}

/// [`open_regular`], refused when the file is larger than `limit` bytes.
fn open_regular_within(path: &Path, limit: u64) -> Result<Option<(File, u64)>, GitError> {
    let opened = open_regular(path)?;
    if let Some((_, len)) = &opened
        && *len > limit
    {
        return Err(untrusted(path, format!("is {len} bytes, more than {limit}")));
    }
    Ok(opened)
}

/// At most the first `limit` bytes of the regular file `path` (however much it grows
/// while it is read); `Ok(None)` when missing, an error when it is not a regular file (see
/// the module docs).
pub(crate) fn read_prefix(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, GitError> {
    let Some((file, _)) = open_regular(path)? else { return Ok(None) };
    read_up_to(file, path, limit).map(Some)
}

/// The text of the small regular file `path` (`Ok(None)` when missing), refused when it is
/// larger than [`SMALL_FILE_LIMIT`]; see the module docs.
pub(crate) fn read_small(path: &Path) -> Result<Option<String>, GitError> {
    let Some((file, _)) = open_regular_within(path, SMALL_FILE_LIMIT)? else { return Ok(None) };
    let bytes = read_up_to(file, path, SMALL_FILE_LIMIT)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Whether `path` is a regular file of one link (no other name writes through to it)
/// holding exactly `contents`.
pub(crate) fn holds_exactly(path: &Path, contents: &[u8]) -> bool {
    let Ok(Some((file, len))) = open_regular(path) else { return false };
    if len != contents.len() as u64 || !file.metadata().is_ok_and(|meta| meta.nlink() == 1) {
        return false;
    }
    read_up_to(file, path, len + 1).is_ok_and(|held| held == contents)
}

/// Where the `.git` file of the checkout at `checkout` points: its `gitdir:` line, a
/// relative one taken from `checkout`. `None` when the file is missing, not a small regular
/// file, or names nothing.
pub(crate) fn gitfile_target(checkout: &Path) -> Option<PathBuf> {
    let text = read_small(&checkout.join(".git")).ok()??;
    let named = text.trim().strip_prefix("gitdir:")?.trim();
    (!named.is_empty()).then(|| checkout.join(named))
}

/// At most `limit` bytes of the open `file` (at `path`, for the error).
fn read_up_to(file: File, path: &Path, limit: u64) -> Result<Vec<u8>, GitError> {
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).map_err(|e| GitError::io("read", path, e))?;
    Ok(bytes)
}

/// A fresh file next to `path`, created exclusively (a planted file or link of that name
/// makes the next name be tried, never followed).
fn create_beside(path: &Path) -> Result<(File, PathBuf), GitError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = path.with_file_name(format!(".{name}.breeze-{}-{n}", std::process::id()));
        match File::options()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
            .open(&temp)
        {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(GitError::io("create", &temp, e)),
        }
    }
}

/// Removes what [`create_beside`] left beside `path` when the process writing it was killed
/// before the rename (`.<name>.breeze-<pid>-<n>` of another process than this one): a lane's
/// `.git` replaced at a kill would otherwise leave one in the lane, to be committed as the
/// task's work. Only regular files and links are removed, never followed.
pub(crate) fn remove_stale_temps(path: &Path) -> Result<(), GitError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return Ok(()) };
    let prefix = format!(".{}.breeze-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let own = std::process::id().to_string();
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file_name.strip_prefix(&prefix) else { continue };
        let Some((pid, n)) = rest.split_once('-') else { continue };
        let ours = pid.chars().all(|c| c.is_ascii_digit()) && n.chars().all(|c| c.is_ascii_digit());
        let file = entry.file_type().is_ok_and(|kind| kind.is_file() || kind.is_symlink());
        if ours && file && pid != own {
            remove_entry(&entry.path())?;
        }
    }
    Ok(())
}

/// Renames `temp` over `path` (replacing a file or link there, never following it);
/// `temp` is removed when that fails.
fn rename_over(temp: &Path, path: &Path) -> Result<(), GitError> {
    std::fs::rename(temp, path).map_err(|e| {
        let _ = std::fs::remove_file(temp);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => untrusted(path, "is a directory"),
            _ => GitError::io("replace", path, e),
        }
    })
}

/// Writes `contents` to `path` by creating a new file beside it and renaming that over
/// `path`: whatever is at `path` (a link, a FIFO) is replaced, not written through.
pub(crate) fn replace_file(path: &Path, contents: &[u8]) -> Result<(), GitError> {
    let (mut file, temp) = create_beside(path)?;
    if let Err(e) = file.write_all(contents) {
        let _ = std::fs::remove_file(&temp);
        return Err(GitError::io("write", &temp, e));
    }
    drop(file);
    rename_over(&temp, path)
}

/// Copies the regular file `from` (refused if a link or special file, or larger than
/// [`COPY_LIMIT`]) to `to`, replacing what is there as [`replace_file`] does. `Ok(false)`
/// when there is no `from` (then `to` is removed, so it cannot hold something stale).
pub(crate) fn copy_file(from: &Path, to: &Path) -> Result<bool, GitError> {
    let Some((source, len)) = open_regular_within(from, COPY_LIMIT)? else {
        remove_entry(to)?;
        return Ok(false);
    };
    let (mut file, temp) = create_beside(to)?;
    if let Err(e) = io::copy(&mut source.take(len), &mut file) {
        let _ = std::fs::remove_file(&temp);
        return Err(GitError::io("copy", from, e));
    }
    drop(file);
    rename_over(&temp, to)?;
    Ok(true)
}

/// Removes whatever is at `path` — a file, link, special file or a whole directory (links
/// inside are removed, not followed). Nothing there is fine.
pub(crate) fn remove_entry(path: &Path) -> Result<(), GitError> {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(GitError::io("remove", path, e)),
        _ => Ok(()),
    }
}

/// Makes `path` a real directory: anything else there (a link, a file, a FIFO) is removed
/// first, and what it was is returned for the report.
pub(crate) fn ensure_dir(path: &Path) -> Result<Option<&'static str>, GitError> {
    let replaced = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(None),
        Ok(meta) => {
            remove_entry(path)?;
            Some(kind_of(meta.file_type()))
        }
        Err(_) => None,
    };
    match std::fs::create_dir(path) {
        Ok(()) => Ok(replaced),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(replaced),
        Err(e) => Err(GitError::io("create directory", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_killed_writer_left_beside_a_file_is_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let dotgit = dir.path().join(".git");
        std::fs::write(&dotgit, "gitdir: x\n").unwrap();
        let stale = dir.path().join("..git.breeze-999999-3");
        let own = dir.path().join(format!("..git.breeze-{}-0", std::process::id()));
        let other = dir.path().join("..git.breeze-notes");
        for file in [&stale, &own, &other] {
            std::fs::write(file, "gitdir: y\n").unwrap();
        }
        remove_stale_temps(&dotgit).unwrap();
        assert!(!stale.exists(), "a killed engine's half-written .git stays");
        assert!(own.exists() && other.exists() && dotgit.exists());
    }

    #[test]
    fn links_and_fifos_are_refused_unread_and_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("config");
        std::fs::write(&target, "mine\n").unwrap();
        let link = dir.path().join("HEAD");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = read_small(&link).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        replace_file(&link, b"ref: refs/heads/x\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n", "not written through");
        assert_eq!(read_small(&link).unwrap().unwrap(), "ref: refs/heads/x\n");

        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let err = read_small(&fifo).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        let err = copy_file(&fifo, &dir.path().join("copy")).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        assert_eq!(ensure_dir(&fifo).unwrap(), Some("a FIFO"));
        assert!(fifo.is_dir());
        assert!(read_small(&dir.path().join("missing")).unwrap().is_none());
        assert!(read_prefix(&dir.path().join("missing"), 10).unwrap().is_none());
    }

    #[test]
    fn reads_are_bounded_a_small_file_by_refusal_a_prefix_by_length() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("packed-refs");
        std::fs::write(&big, vec![b'x'; SMALL_FILE_LIMIT as usize + 1]).unwrap();
        let err = read_small(&big).unwrap_err();
        assert!(err.to_string().contains("more than 65536"), "{err}");
        assert_eq!(read_prefix(&big, 3).unwrap().unwrap(), b"xxx");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        let err = read_prefix(&link, 3).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
    }
}
