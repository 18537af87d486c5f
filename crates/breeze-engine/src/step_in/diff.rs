//! `breeze diff TASK`: the task's change so far, against the commit its work started from —
//! from its worktree as it is now while one holds its branch (what the worker has not
//! committed yet included), else from its branch, else (its branch gone after landing)
//! the landing commit.

use std::path::{Path, PathBuf};

use breeze_git::{ChangeTip, ChangeView, Repo};

use super::task::{TaskAt, worktree_of};
use crate::error::EngineError;

/// Where the change shown was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeSource {
    /// The worktree holding the task's branch, committed and not.
    Worktree(PathBuf),
    /// The task's branch.
    Branch(String),
    /// The commit that landed the task (its branch is gone).
    Landing(String),
}

/// A task's change, as text.
#[derive(Debug, Clone)]
pub struct TaskChange {
    /// The patch (or the stats).
    pub text: String,
    /// The commit it is shown against (12 hex digits).
    pub base: String,
    /// Where it was read.
    pub source: ChangeSource,
}

/// Task `id`'s change in the latest run, as a patch or as stats.
pub fn task_change(repo_dir: &Path, id: &str, view: ChangeView) -> Result<TaskChange, EngineError> {
    let task = TaskAt::find(repo_dir, id)?;
    let branch = task.branch()?.to_string();
    let config = crate::config::Config::load(&task.root)?;
    // Nothing above the size gate's limit is read: such files show as binary.
    let repo = Repo::open(&task.root)?.with_max_file_bytes(config.max_file_bytes);
    let record = &task.record;
    let (base, source) = match (record.base, repo.branch_tip(&branch)?) {
        (Some(base), Some(_)) => match worktree_of(&repo, &branch)? {
            Some(worktree) => (base.0, ChangeSource::Worktree(worktree.path)),
            None => (base.0, ChangeSource::Branch(branch.clone())),
        },
        // Landed, and its branch removed with the lanes: the landing commit against main
        // before it.
        (_, None) => match record.commit {
            Some(commit) => match repo.first_parent(commit.0)? {
                Some(parent) => (parent, ChangeSource::Landing(commit.short())),
                None => return Err(no_branch(id, &branch)),
            },
            None => return Err(no_branch(id, &branch)),
        },
        (None, Some(_)) => return Err(no_branch(id, &branch)),
    };
    let tip = match &source {
        ChangeSource::Worktree(path) => ChangeTip::Checkout(path),
        ChangeSource::Branch(name) => ChangeTip::Commit(repo.branch_tip(name)?.unwrap_or(base)),
        ChangeSource::Landing(_) => ChangeTip::Commit(record.commit.map_or(base, |c| c.0)),
    };
    let text = repo.show_change(base, tip, view)?;
    Ok(TaskChange { text, base: base.to_string()[..12].to_string(), source })
}

fn no_branch(id: &str, branch: &str) -> EngineError {
    EngineError::usage(
        format!("task {id}'s branch `{branch}` is gone and nothing of it landed"),
        "`breeze status` shows the task's state; `breeze logs ID` what its roles did",
    )
}
