//! A task of the latest run as a person stepping in finds it ([`TaskAt`]): its run, its
//! record, whether an engine runs it now, and whether they may step in; and the worktree
//! that has its branch checked out.

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
