//! A person stepping into a task of the latest run.
//!
//! - `breeze diff` shows the task's change so far ([`diff`]).
//! - `breeze attach` pauses the task at its next safe point, opens the worker's own session
//!   (or a shell) in the task's worktree for the person, and when they leave, the task goes
//!   on from there: what they changed is their attempt, which goes through the gates and
//!   review like a worker's change. While a run is live the driver pauses the task on an
//!   attach request ([`request`]); while none is, `breeze attach` prepares the worktree and
//!   records the person's attempt itself ([`stopped`]), and `breeze resume` reviews it. The
//!   session ([`session`]) has the worker's environment and, by default, its confinement.
//! - `breeze open` opens the task's worktree in the person's editor and pauses nothing
//!   ([`worktree_of`]).

pub mod diff;
pub mod request;
pub mod session;
pub mod stopped;
mod task;

use std::path::{Path, PathBuf};

use breeze_git::Repo;

use crate::error::EngineError;
use crate::run_dir::RunDir;

pub use task::{TaskAt, worktree_of};

/// How the person's latest attempt at task `id` ended, as the run's journal says.
pub fn last_person_attempt(run_dir: &RunDir, id: &str) -> Option<stopped::PersonAttempt> {
    let mut last = None;
    let _ = crate::journal::for_each_event(&run_dir.events(), |event| {
        if let breeze_protocol::EventKind::PersonAttempt { task, outcome, head, error } =
            event.event
            && task == id
        {
            last = Some(stopped::PersonAttempt::of_event(outcome, head, error));
        }
    });
    last
}

/// Where `breeze open` opens a task: its worktree, and the git directory the person's
/// editor is to use there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenPlace {
    /// The task's worktree.
    pub worktree: PathBuf,
    /// Its admin folder (`GIT_DIR` for the editor): the repository's configuration, never
    /// the worker's private git directory the worktree's `.git` names while it works.
    pub git_dir: Option<PathBuf>,
}

impl OpenPlace {
    /// Whether the person's variable `name` says where git's repository, index or
    /// configuration is: replaced by [`OpenPlace::git_env`] (or dropped) for the editor.
    pub fn sets(name: &str) -> bool {
        matches!(
            name,
            "GIT_DIR"
                | "GIT_WORK_TREE"
                | "GIT_COMMON_DIR"
                | "GIT_INDEX_FILE"
                | "GIT_OBJECT_DIRECTORY"
        ) || name.starts_with("GIT_CONFIG_")
    }

    /// The variables that make every `git` the editor runs use [`OpenPlace::git_dir`] (and
    /// never run an fsmonitor).
    pub fn git_env(&self) -> Vec<(String, String)> {
        let Some(git_dir) = &self.git_dir else { return Vec::new() };
        vec![
            ("GIT_DIR".into(), git_dir.display().to_string()),
            ("GIT_WORK_TREE".into(), self.worktree.display().to_string()),
            ("GIT_CONFIG_COUNT".into(), "1".into()),
            ("GIT_CONFIG_KEY_0".into(), "core.fsmonitor".into()),
            ("GIT_CONFIG_VALUE_0".into(), "false".into()),
        ]
    }
}

/// Where task `id` of the latest run is checked out now, for `breeze open`.
pub fn open_place(repo_dir: &Path, id: &str) -> Result<OpenPlace, EngineError> {
    let task = TaskAt::find(repo_dir, id)?;
    let branch = task.branch()?;
    let repo = Repo::open(&task.root)?;
    match worktree_of(&repo, branch)? {
        Some(worktree) => {
            let git_dir = repo.git_dir_for_person(&worktree.path);
            Ok(OpenPlace { worktree: worktree.path, git_dir })
        }
        None => Err(EngineError::usage(
            format!("task {id} is not checked out anywhere now (its branch `{branch}` is)"),
            format!(
                "`breeze attach {id}` checks it out and opens it; `breeze diff {id}` shows its change"
            ),
        )),
    }
}
