//! How `breeze attach` and a live run agree on a pause: three files in the run folder
//! (`attach/<task>.request.json`, `.paused.json`, `.left.json`), like the decisions of
//! `breeze approve` — files, not signals, so either side may stop without losing the other.
//!
//! 1. The person's `breeze attach` leaves a **request** naming its own process.
//! 2. The task's driver, at its next safe point, answers with **paused**: where the person
//!    may work. It then waits, holding the lane.
//! 3. When the person leaves their session, `breeze attach` writes **left**. The driver
//!    takes what they changed and removes all three files: the request is **taken**.
//!
//! Withdrawing (Ctrl-C while waiting) removes the request; a driver that had paused already
//! goes on as if the person had left without changing anything. A request whose process is
//! gone (the terminal closed) counts as left.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::run_dir::{RunDir, file_slug};

/// A person's request to step into a task's lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachRequest {
    /// The `breeze attach` process.
    pub pid: u32,
    /// Its start time (`/proc/<pid>/stat`), so a reused pid is not taken for it.
    #[serde(default)]
    pub start_ticks: Option<u64>,
    /// RFC 3339.
    pub requested_at: String,
}

impl AttachRequest {
    /// Whether the process that asked is still there.
    fn asker_alive(&self) -> bool {
        match breeze_supervise::process_start_ticks(self.pid) {
            Some(ticks) => self.start_ticks.is_none_or(|asked| asked == ticks),
            None => false,
        }
    }
}

/// Where the paused task waits for the person: what `breeze attach` opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paused {
    /// The lane (from 1), or none when no run is live.
    #[serde(default)]
    pub lane: Option<u32>,
    /// The task's worktree.
    pub worktree: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit the task's work started from.
    pub base: String,
    /// The task's latest commit when it paused.
    pub head: String,
    /// The worker's agent session (claude `session_id`, codex `thread_id`), if it has one.
    #[serde(default)]
    pub session: Option<String>,
}

/// How the person's time in the lane ended, as the paused driver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// They left their session.
    Left,
    /// They gave up before the session opened (Ctrl-C while waiting).
    Withdrawn,
    /// Their `breeze attach` is gone (its terminal closed, it was killed).
    AskerGone,
}

/// The files of one task's attach in one run.
#[derive(Debug, Clone)]
pub struct AttachFiles {
    request: PathBuf,
    paused: PathBuf,
    left: PathBuf,
}

impl AttachFiles {
    /// The attach files of task `id` in the run at `run_dir`.
    pub fn new(run_dir: &RunDir, id: &str) -> AttachFiles {
        let slug = file_slug(id);
        AttachFiles {
            request: run_dir.attach(&slug, "request"),
            paused: run_dir.attach(&slug, "paused"),
            left: run_dir.attach(&slug, "left"),
        }
    }

    /// Leaves this process's request — unless another person's is waiting or attached.
    pub fn request(&self) -> Result<(), EngineError> {
        let pid = std::process::id();
        if let Some(other) = self.pending().filter(|other| other.pid != pid) {
            return Err(EngineError::usage(
                format!(
                    "someone is attached to this task already (`breeze attach`, pid {}, since {})",
                    other.pid, other.requested_at
                ),
                "one person at a time: wait until they leave",
            ));
        }
        // A pause answered to an earlier request is not this one's.
        self.clear();
        let request = AttachRequest {
            pid,
            start_ticks: breeze_supervise::process_start_ticks(pid),
            requested_at: crate::clock::now_rfc3339(),
        };
        write(&self.request, &request)
    }

    /// The request waiting for the task, if its process is alive; a request whose process
    /// is gone is removed.
    pub(crate) fn pending(&self) -> Option<AttachRequest> {
        let request: AttachRequest = read(&self.request)?;
        if request.asker_alive() {
            Some(request)
        } else {
            self.clear();
            None
        }
    }

    /// Whether a request is waiting (without judging its process: for the dispatcher,
    /// which acts on it only through [`AttachFiles::pending`]).
    pub(crate) fn requested(&self) -> bool {
        self.request.exists()
    }

    /// The driver's answer: the task waits at `paused`.
    pub(crate) fn pause(&self, paused: &Paused) -> Result<(), EngineError> {
        write(&self.paused, paused)
    }

    /// Where the task waits, once the driver paused it for this request.
    pub fn paused(&self) -> Option<Paused> {
        read(&self.paused)
    }

    /// Whether the person's time in the lane ended, for the driver paused for `request`.
    pub(crate) fn ended(&self, request: &AttachRequest) -> Option<Ending> {
        if self.left.exists() {
            Some(Ending::Left)
        } else if !self.request.exists() {
            Some(Ending::Withdrawn)
        } else if !request.asker_alive() {
            Some(Ending::AskerGone)
        } else {
            None
        }
    }

    /// The person left their session.
    pub fn leave(&self) -> Result<(), EngineError> {
        write(&self.left, &serde_json::json!({ "left_at": crate::clock::now_rfc3339() }))
    }

    /// Whether the driver took what the person left (it removes the request then).
    pub fn taken(&self) -> bool {
        !self.request.exists()
    }

    /// Gives the request up (before the session opened).
    pub fn withdraw(&self) {
        let _ = std::fs::remove_file(&self.request);
    }

    /// Removes every file of the attach: taken, withdrawn or stale.
    pub(crate) fn clear(&self) {
        for path in [&self.left, &self.paused, &self.request] {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), EngineError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|err| EngineError::io(format!("cannot create {}", parent.display()), err))?;
    }
    let text = serde_json::to_vec_pretty(value).map_err(EngineError::internal("an attach file"))?;
    crate::snapshot::write_atomically(path, &text)
        .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
}

/// An attach file, if it is there and readable (written atomically, so never half).
fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(err) => {
            tracing::warn!("{} is not an attach file breeze understands: {err}", path.display());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> (tempfile::TempDir, AttachFiles) {
        let dir = tempfile::tempdir().unwrap();
        let files = AttachFiles::new(&RunDir::new(dir.path(), "r"), "auth/login");
        (dir, files)
    }

    #[test]
    fn a_request_is_paused_left_and_taken() {
        let (_dir, files) = files();
        assert!(files.pending().is_none());
        files.request().unwrap();
        let request = files.pending().expect("this process asked and is alive");
        assert_eq!(files.ended(&request), None);
        let paused = Paused {
            lane: Some(2),
            worktree: "/home/u/.local/share/breeze/worktrees/repo-0123456789/lane-2".into(),
            branch: "task/auth-login".into(),
            base: "b".into(),
            head: "h".into(),
            session: Some("s".into()),
        };
        files.pause(&paused).unwrap();
        assert_eq!(files.paused(), Some(paused));
        files.leave().unwrap();
        assert_eq!(files.ended(&request), Some(Ending::Left));
        assert!(!files.taken());
        files.clear();
        assert!(files.taken() && files.paused().is_none());
    }

    #[test]
    fn a_second_person_is_refused_while_the_first_is_attached() {
        let (_dir, files) = files();
        // Someone else, alive: this test's parent process.
        let parent = std::os::unix::process::parent_id();
        let other = AttachRequest {
            pid: parent,
            start_ticks: breeze_supervise::process_start_ticks(parent),
            requested_at: "t".into(),
        };
        write(&files.request, &other).unwrap();
        let err = files.request().unwrap_err().to_string();
        assert!(err.contains(&format!("pid {parent}")), "{err}");
        assert_eq!(files.pending(), Some(other), "theirs stays");
    }

    #[test]
    fn a_withdrawn_request_ends_the_pause_and_a_dead_askers_request_is_dropped() {
        let (_dir, files) = files();
        files.request().unwrap();
        let request = files.pending().unwrap();
        files.withdraw();
        assert_eq!(files.ended(&request), Some(Ending::Withdrawn));

        let dead = AttachRequest { pid: u32::MAX - 1, start_ticks: None, requested_at: "t".into() };
        write(&files.request, &dead).unwrap();
        assert!(files.requested());
        assert_eq!(files.ended(&dead), Some(Ending::AskerGone));
        assert!(files.pending().is_none(), "its process is gone");
        assert!(!files.requested(), "and the stale request with it");
    }
}
