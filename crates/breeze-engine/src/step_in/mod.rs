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

use std::path::{Path, PathBuf};

use breeze_git::Repo;

use crate::error::EngineError;
use crate::lock::RepoLock;
use crate::run_dir::RunDir;
use crate::snapshot::{TaskPhase, TaskRecord};

/// A task of the latest run, as a person stepping in finds it.
#[derive(Debug, Clone)]
pub struct TaskAt {
    /// The repository root.
    pub root: PathBuf,
    /// The run.
    pub run_id: String,
    /// Its folder.
    pub run_dir: RunDir,
    /// The task's record as `run.json` has it now.
    pub record: TaskRecord,
    /// Whether an engine runs the run now.
    pub live: bool,
}

impl TaskAt {
    /// Task `id` of the latest run of the repository containing `repo_dir`; an unknown task
    /// is a usage error naming the run.
    pub fn find(repo_dir: &Path, id: &str) -> Result<TaskAt, EngineError> {
        let repo = Repo::open(repo_dir)?;
        let root = repo.workdir().to_path_buf();
        let (run_id, snapshot) = crate::decision::latest(&root)?;
        let run_dir = RunDir::new(&root, &run_id);
        let Some(record) = snapshot.task(id).cloned() else {
            let ids: Vec<&str> = snapshot.tasks.iter().map(|task| task.id.as_str()).collect();
            return Err(EngineError::usage(
                format!("run {run_id} has no task {id}"),
                format!("its tasks are {}; `breeze status` shows their states", ids.join(", ")),
            ));
        };
        let live = RepoLock::is_held(&root);
        Ok(TaskAt { root, run_id, run_dir, record, live })
    }

    /// The task's branch, or why it has none yet.
    pub fn branch(&self) -> Result<&str, EngineError> {
        self.record.branch.as_deref().ok_or_else(|| {
            EngineError::usage(
                format!(
                    "task {} has not started: it has no branch yet ({})",
                    self.record.id,
                    self.record.phase.visible(self.live).as_str()
                ),
                "`breeze status` shows which tasks have started",
            )
        })
    }

    /// Checks that a person may step into the task: it has not landed, is not blocked and,
    /// while no run is live, has started.
    pub fn check_attachable(&self) -> Result<(), EngineError> {
        let id = &self.record.id;
        match self.record.phase {
            TaskPhase::Landed => Err(EngineError::usage(
                format!("task {id} has landed; there is nothing to step into"),
                format!("`breeze diff {id}` shows what landed"),
            )),
            TaskPhase::Blocked => Err(EngineError::usage(
                format!(
                    "task {id} is blocked ({}); it cannot run until that changes",
                    self.record.reason.as_deref().unwrap_or("a dependency did not land")
                ),
                "attach to the task it waits for instead; `breeze status` shows which",
            )),
            TaskPhase::Queued if !self.live => Err(EngineError::usage(
                format!("task {id} has not started: there is no worktree to step into yet"),
                format!(
                    "run `breeze resume` and attach while it runs: `breeze attach {id}` pauses it before its first attempt"
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// The worktree breeze made that has `branch` checked out (a lane, or the one an attach
/// made between runs), if any.
pub fn worktree_of(repo: &Repo, branch: &str) -> Result<Option<breeze_git::Worktree>, EngineError> {
    for info in repo.list_worktrees()? {
        if info.under_breeze_root
            && info.created_by_breeze
            && info.branch.as_deref() == Some(branch)
            && info.path.is_dir()
        {
            return Ok(repo.find_worktree(&info.name)?);
        }
    }
    Ok(None)
}

/// How the person's latest attempt at task `id` ended, as the run's journal says.
pub fn last_person_attempt(run_dir: &RunDir, id: &str) -> Option<stopped::PersonAttempt> {
    let mut last = None;
    let _ = crate::journal::for_each_event(&run_dir.events(), |event| {
        if let breeze_protocol::EventKind::PersonAttempt { task, outcome, head, error } =
            event.event
            && task == id
        {
            last = Some(stopped::PersonAttempt::of_event(&outcome, head, error));
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
