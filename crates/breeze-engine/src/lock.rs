//! One run per repository at a time.
//!
//! The lock is an OS file lock on `.breeze/run.lock`, so a killed engine releases it
//! automatically (a stale lock is simply free); the file also names the holder's pid
//! for the error message.
//!
//! The lock belongs to the open file, which a child forked by another thread shares until
//! it execs (or finishes `pre_exec`): a lock this process let go can look held for a
//! moment. So the process keeps a list of the locks it really holds, and a lock that names
//! this process without being on that list is waited out for a little while. The same
//! goes for what an engine forked just before it was killed (a role's process between its
//! fork and its `exec`): a lock whose named holder has ended is waited out too, so that
//! `breeze resume` right after a kill finds it free.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::run_dir::STATE_DIR;

/// How many 20 ms waits for a lock that names this very process but is not one it holds.
const OWN_LOCK_PATIENCE: u32 = 100;
/// How many 20 ms waits for a lock whose named holder has ended.
const ENDED_HOLDER_PATIENCE: u32 = 150;

/// The lock files this process holds through a live `RepoLock`.
static HELD_HERE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Held for the lifetime of a run; dropping it releases the lock.
#[derive(Debug)]
pub struct RepoLock {
    path: PathBuf,
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
        let path = lock_path(repo_root);
        let Ok(mut file) = OpenOptions::new().read(true).write(true).open(&path) else {
            return false;
        };
        match try_lock(&mut file, &path) {
            Ok(None) => {
                let _ = file.unlock();
                false
            }
            Ok(Some(_)) | Err(_) => true,
        }
    }

    /// Takes the repository's run lock, or says who holds it.
    pub fn acquire(repo_root: &Path) -> Result<RepoLock, LockError> {
        let path = lock_path(repo_root);
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        std::fs::create_dir_all(repo_root.join(STATE_DIR)).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        if let Some(pid) = try_lock(&mut file, &path).map_err(io)? {
            return Err(LockError::Held {
                pid: if pid.is_empty() { "unknown".into() } else { pid },
            });
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_data().map_err(io)?;
        held_here().push(path.clone());
        Ok(RepoLock { path, _file: file })
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        // Taken off the list before the file closes: a look in between waits it out.
        let mut held = held_here();
        if let Some(at) = held.iter().position(|path| *path == self.path) {
            held.swap_remove(at);
        }
    }
}

/// The lock file of the repository at `repo_root`, canonical when it can be, so two
/// spellings of one repository name one lock.
fn lock_path(repo_root: &Path) -> PathBuf {
    let root = std::fs::canonicalize(repo_root).unwrap_or_else(|_| repo_root.to_path_buf());
    root.join(STATE_DIR).join("run.lock")
}

fn held_here() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    HELD_HERE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Tries the lock: `None` when taken, or the pid the holder wrote. A lock naming this
/// process that it does not hold is a fork's passing copy (see the module's comment):
/// waited out, for a while.
fn try_lock(file: &mut File, path: &Path) -> std::io::Result<Option<String>> {
    let own = std::process::id().to_string();
    let mut patience = OWN_LOCK_PATIENCE;
    let mut ended_patience = ENDED_HOLDER_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(None),
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                file.seek(SeekFrom::Start(0))?;
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim().to_string();
                let passing = pid == own && !held_here().iter().any(|held| held == path);
                if passing && patience > 0 {
                    patience -= 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
                if pid != own && has_ended(&pid) && ended_patience > 0 {
                    ended_patience -= 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
                return Ok(Some(pid));
            }
            Err(TryLockError::Error(err)) => return Err(err),
        }
    }
}

/// Whether the process `pid` (as a lock file or a scratch folder's name gives it) has
/// ended: no `/proc` entry, where `/proc` shows processes at all.
pub(crate) fn has_ended(pid: &str) -> bool {
    pid.parse::<u32>().is_ok()
        && Path::new("/proc/self").exists()
        && !Path::new("/proc").join(pid).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_left_shared_by_a_killed_holder_is_waited_out() {
        // What a killed engine forked shares the lock's file until it execs: the lock looks
        // held for a moment after the engine (the pid it wrote) is gone.
        let dir = tempfile::tempdir().unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        let path = lock_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, ended.id().to_string()).unwrap();
        let leftover = File::open(&path).unwrap();
        leftover.lock().unwrap();
        let exec = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(leftover);
        });
        let lock = RepoLock::acquire(dir.path()).expect("free once the leftover is gone");
        exec.join().unwrap();
        drop(lock);
        // A live holder is named at once.
        let _live = RepoLock::acquire(dir.path()).unwrap();
        let err = RepoLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, LockError::Held { .. }));
    }

    #[test]
    fn a_lock_let_go_while_a_fork_still_shares_its_file_is_not_reported_held() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RepoLock::acquire(dir.path()).unwrap();
        assert!(RepoLock::is_held(dir.path()), "held while the run lives");
        // A child forked by another thread shares the open file until it execs; a clone
        // of the file stands in for it.
        let passing_copy = lock._file.try_clone().unwrap();
        drop(lock);
        let exec = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(passing_copy);
        });
        assert!(!RepoLock::is_held(dir.path()), "the run has ended");
        let again = RepoLock::acquire(dir.path()).expect("free once the copy is gone");
        exec.join().unwrap();
        drop(again);
    }

    #[test]
    fn a_second_take_by_the_process_holding_the_lock_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let _lock = RepoLock::acquire(dir.path()).unwrap();
        let err = RepoLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, LockError::Held { pid } if pid == std::process::id().to_string()));
    }
}
