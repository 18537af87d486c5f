//! What every part of a run shares: the repository, plan, config, run files, the task book,
//! roles, the serial-step locks and the cancel signal. Each task's own state is its
//! driver's ([`super::driver::TaskDriver`]); this holds nothing of one task alone.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use breeze_git::Repo;
use breeze_plan::{Analysis, Plan, Task};
use breeze_protocol::{EventKind, TaskBrief};
use tokio_util::sync::CancellationToken;

use super::book::TaskBook;
use super::scope::WriteSets;
use crate::config::Config;
use crate::error::EngineError;
use crate::roles::RoleRunner;
use crate::roles::backoff::BackoffSettings;
use crate::run_dir::RunDir;
use crate::snapshot::ObjectId;

/// Shared state of one run.
pub(crate) struct RunContext {
    pub run_id: String,
    /// Main when the run started: landings of this run are searched back to here.
    pub main_tip_at_start: ObjectId,
    pub repo: Arc<Repo>,
    pub config: Config,
    pub plan: Plan,
    pub analysis: Analysis,
    pub run_dir: RunDir,
    /// Every task's record; the one place a task changes state.
    pub book: TaskBook,
    pub roles: RoleRunner,
    pub supervisor: breeze_supervise::Supervisor,
    pub backoff: BackoffSettings,
    /// Reviewer verdicts are serial.
    pub review_lock: tokio::sync::Mutex<()>,
    /// Landings are serial.
    pub land_lock: tokio::sync::Mutex<()>,
    pub cancel: CancellationToken,
    /// Repository-relative path of the plan when it is a Plans.md tracked on main.
    pub tracked_plans_file: Option<String>,
    /// Lane worktrees, created on first use and moved from task to task.
    pub lanes: Mutex<Vec<Option<breeze_git::Worktree>>>,
    /// Every task's write set now: the plan's, widened by granted scope requests.
    pub write_sets: Arc<WriteSets>,
    /// Tasks waiting for a scope grant.
    pub scope_waiting: Mutex<std::collections::BTreeSet<usize>>,
    /// `notify.command`, told of escalations, deferrals, approvals awaited and the end.
    pub notifier: Option<Arc<crate::notify::Notifier>>,
}

impl RunContext {
    /// The plan task at `index`.
    pub fn task(&self, index: usize) -> &Task {
        &self.plan.tasks[index]
    }

    /// The task as roles see it.
    pub fn brief(&self, index: usize) -> TaskBrief {
        let task = self.task(index);
        TaskBrief {
            id: task.id.to_string(),
            title: task.title.clone(),
            dod: task.dod.clone(),
            writes: self.write_sets.get(index).entries().to_vec(),
            depends_on: task.depends_on.iter().map(ToString::to_string).collect(),
            risk: task.risk.iter().map(|flag| flag.as_str().to_string()).collect(),
        }
    }

    /// The worktree lane `lane` holds, if any.
    pub fn lane(&self, lane: u32) -> Option<breeze_git::Worktree> {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1].clone()
    }

    /// Records the worktree lane `lane` holds now.
    pub fn set_lane(&self, lane: u32, worktree: breeze_git::Worktree) {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1] = Some(worktree);
    }

    /// Runs blocking git work off the async threads, with a fresh handle. A step the stop
    /// cut short ([`breeze_git::GitError::Cancelled`]) is [`EngineError::Cancelled`].
    pub async fn git<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Repo) -> Result<T, breeze_git::GitError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let repo = self.repo.clone();
        tokio::task::spawn_blocking(move || work(&repo))
            .await
            .map_err(EngineError::internal("running a git operation"))?
            .map_err(|err| match err {
                breeze_git::GitError::Cancelled { .. } => EngineError::Cancelled,
                other => EngineError::Git(other),
            })
    }

    /// Runs blocking engine work (file-system checks) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, EngineError> {
        tokio::task::spawn_blocking(work).await.map_err(EngineError::internal("a blocking task"))?
    }

    /// Runs one of the project's own commands (`worktree.setup`, `land.verify`, hooks)
    /// under supervision. Unlike roles, they get the engine's environment: they are the
    /// project's checks, like CI steps. Their pids are journaled for `breeze resume`.
    pub async fn run_project_command(
        &self,
        task: &str,
        purpose: &str,
        argv: &[String],
        cwd: &std::path::Path,
        log: &std::path::Path,
        timeout: std::time::Duration,
    ) -> Result<breeze_supervise::Outcome, EngineError> {
        let mut spec = breeze_supervise::ProcessSpec::new(argv.to_vec(), cwd, log);
        spec.env = std::env::vars().collect();
        spec.timeout = Some(timeout);
        let store = self.book.store().clone();
        let (task, purpose_text) = (task.to_string(), purpose.to_string());
        let on_spawn = move |pid, start_ticks| {
            store.record_later(EventKind::CommandStarted {
                task,
                purpose: purpose_text,
                pid,
                start_ticks,
            });
        };
        let outcome =
            self.supervisor.run(spec, None, self.cancel.clone(), on_spawn, |_| {}).await.map_err(
                |err| {
                    EngineError::usage(
                        format!("`{purpose}` could not start: {err}"),
                        format!("check {purpose} in breeze.toml"),
                    )
                },
            )?;
        self.book
            .journal(EventKind::CommandEnded {
                pid: outcome.pid,
                outcome: outcome.ending.to_string(),
            })
            .await?;
        Ok(outcome)
    }

    /// The contract file of a task.
    pub fn contract_path(&self, index: usize) -> PathBuf {
        self.run_dir.contract(&crate::run_dir::file_slug(self.task(index).id.as_str()))
    }
}
