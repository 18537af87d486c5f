//! Reading a file a role wrote (its `$BREEZE_OUTPUT`) without trusting it: the role may have
//! made it a symbolic link, a FIFO, a device or a sparse file of many gigabytes.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest role result breeze reads (the protocol's messages are a few kilobytes).
pub const MAX_ROLE_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Why a role's file was not read.
#[derive(Debug, thiserror::Error)]
pub enum RoleFileError {
    /// It is not a regular file (a link, a FIFO, a device, a directory).
    #[error(
        "{path} is not a regular file (a {kind}); breeze reads only regular files a role writes"
    )]
    NotRegular {
        /// The path.
        path: String,
        /// What it is instead.
        kind: &'static str,
    },
    /// It is larger than the bound.
    #[error("{path} is {size} bytes, more than the {limit} bytes breeze reads")]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        size: u64,
        /// The bound.
        limit: u64,
    },
    /// Reading failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },
}

/// Reads `path` if it exists: `Ok(None)` when it does not. Symbolic links are not followed,
/// only regular files are read, and never more than `limit` bytes (a larger file is an
/// error, checked on the open file so it cannot be swapped in between).
pub fn read_role_file(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, RoleFileError> {
    let shown = path.display().to_string();
    let io_error = |source| RoleFileError::Io { path: shown.clone(), source };
    let file = match File::options()
        .read(true)
        // O_NOFOLLOW: a link is refused; O_NONBLOCK: opening a FIFO does not wait for a writer.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(RoleFileError::NotRegular { path: shown, kind: "symbolic link" });
        }
        Err(err) => return Err(io_error(err)),
    };
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let kind = match meta.file_type() {
            t if t.is_dir() => "directory",
            t if t.is_fifo() => "FIFO",
            t if t.is_char_device() || t.is_block_device() => "device",
            t if t.is_socket() => "socket",
            _ => "special file",
        };
        return Err(RoleFileError::NotRegular { path: shown, kind });
    }
    if meta.len() > limit {
        return Err(RoleFileError::TooLarge { path: shown, size: meta.len(), limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after the check: never read past the bound.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(RoleFileError::TooLarge { path: shown, size: bytes.len() as u64, limit });
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_missing_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        assert!(read_role_file(&path, 100).unwrap().is_none());
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(read_role_file(&path, 100).unwrap().unwrap(), b"{}");
    }

    #[test]
    fn links_devices_and_huge_sparse_files_are_refused_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_role_file(&link, 100).unwrap_err();
        assert!(matches!(err, RoleFileError::NotRegular { kind: "symbolic link", .. }), "{err}");
        let err = read_role_file(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(matches!(err, RoleFileError::NotRegular { kind: "device", .. }), "{err}");

        let sparse = dir.path().join("sparse.json");
        let file = File::create(&sparse).unwrap();
        file.set_len(2 * 1024 * 1024 * 1024).unwrap();
        let err = read_role_file(&sparse, MAX_ROLE_FILE_BYTES).unwrap_err();
        assert!(err.to_string().contains("2147483648 bytes"), "{err}");

        let fifo = dir.path().join("fifo.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let err = read_role_file(&fifo, 100).unwrap_err();
        assert!(matches!(err, RoleFileError::NotRegular { kind: "FIFO", .. }), "{err}");
    }
}
