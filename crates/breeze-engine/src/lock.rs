//! One run per repository at a time.
//!
//! The lock is an OS file lock on `.breeze/run.lock`, so a killed engine releases it
//! automatically (a stale lock is simply free); the file also names the holder's pid
//! for the error message.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::run_dir::STATE_DIR;

/// How many 20 ms waits for a lock that names this very process (see `acquire`).
const OWN_LOCK_PATIENCE: u32 = 100;

/// Held for the lifetime of a run; dropping it releases the lock.
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
}

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live breeze process holds it.
    #[error("another breeze run is active in this repository (pid {pid})")]
    Held {
        /// The holder's pid, as it wrote it.
        pid: String,
    },
    /// The lock file could not be opened.
    #[error("cannot open {path}: {source}")]
    Io {
        /// Lock file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

impl RepoLock {
    /// Whether a live process holds the lock (checked without taking it for long and
    /// without touching the pid written in the file).
    pub fn is_held(repo_root: &Path) -> bool {
        let path = repo_root.join(STATE_DIR).join("run.lock");
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else { return false };
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                false
            }
            Err(_) => true,
        }
    }

    /// Takes the repository's run lock, or says who holds it.
    pub fn acquire(repo_root: &Path) -> Result<RepoLock, LockError> {
        let dir = repo_root.join(STATE_DIR);
        let path = dir.join("run.lock");
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        // The lock belongs to the open file, which a child forked by another thread shares
        // until it execs (or finishes `pre_exec`): a lock this process just let go can look
        // held for a moment. Only then is it worth waiting a little.
        let mut patience = OWN_LOCK_PATIENCE;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    file.seek(SeekFrom::Start(0)).map_err(io)?;
                    let _ = file.read_to_string(&mut pid);
                    let pid = pid.trim().to_string();
                    if pid == std::process::id().to_string() && patience > 0 {
                        patience -= 1;
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        continue;
                    }
                    return Err(LockError::Held {
                        pid: if pid.is_empty() { "unknown".into() } else { pid },
                    });
                }
                Err(TryLockError::Error(err)) => return Err(io(err)),
            }
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(RepoLock { _file: file })
    }
}
