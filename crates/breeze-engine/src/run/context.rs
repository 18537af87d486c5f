//! What every part of a run shares: the repository, plan, config, run files, roles,
//! and the snapshot behind a mutex (never held across an await).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use breeze_git::Repo;
use breeze_plan::{Analysis, Plan, Task};
use breeze_protocol::{EventKind, TaskBrief, TaskState};
use tokio_util::sync::CancellationToken;

use crate::clock;
use crate::config::Config;
use crate::error::EngineError;
use crate::journal::{Cycles, Journal};
use crate::progress::{ProgressEvent, ProgressSink};
use crate::roles::RoleRunner;
use crate::run_dir::RunDir;
use crate::snapshot::{RunSnapshot, TaskRecord};

/// Shared state of one run.
pub(crate) struct RunContext {
    pub run_id: String,
    /// Main when the run started: landings of this run are searched back to here.
    pub main_tip_at_start: breeze_git::Oid,
    pub repo: Arc<Repo>,
    pub config: Config,
    pub plan: Plan,
    pub analysis: Analysis,
    pub run_dir: RunDir,
    pub journal: Arc<Journal>,
    pub cycles: Cycles,
    pub roles: RoleRunner,
    pub supervisor: breeze_supervise::Supervisor,
    pub backoff: crate::roles::backoff::BackoffSettings,
    pub snapshot: Mutex<RunSnapshot>,
    /// Reviewer verdicts are serial (DESIGN §3).
    pub review_lock: tokio::sync::Mutex<()>,
    /// Landings are serial (DESIGN §3).
    pub land_lock: tokio::sync::Mutex<()>,
    pub cancel: CancellationToken,
    pub progress: ProgressSink,
    /// Repository-relative path of the plan when it is a Plans.md tracked on main.
    pub tracked_plans_file: Option<String>,
    /// Lane worktrees, created on first use and moved from task to task.
    pub lanes: Mutex<Vec<Option<breeze_git::Worktree>>>,
}

impl RunContext {
    /// The plan task at `index`.
    pub fn task(&self, index: usize) -> &Task {
        &self.plan.tasks[index]
    }

    /// A copy of the task's record.
    pub fn record(&self, index: usize) -> TaskRecord {
        let snapshot = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        snapshot.tasks[index].clone()
    }

    /// Mutates the snapshot and saves it atomically.
    pub fn update<R>(&self, change: impl FnOnce(&mut RunSnapshot) -> R) -> Result<R, EngineError> {
        let mut snapshot = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        let result = change(&mut snapshot);
        snapshot.updated_at = clock::now_rfc3339();
        snapshot.save(&self.run_dir.snapshot()).map_err(|err| {
            EngineError::io(format!("cannot save {}", self.run_dir.snapshot().display()), err)
        })?;
        Ok(result)
    }

    /// Mutates one task's record and saves.
    pub fn update_task<R>(
        &self,
        index: usize,
        change: impl FnOnce(&mut TaskRecord) -> R,
    ) -> Result<R, EngineError> {
        self.update(|snapshot| change(&mut snapshot.tasks[index]))
    }

    /// Sets a task's visible state, journals it, and saves.
    pub fn set_state(
        &self,
        index: usize,
        state: TaskState,
        reason: Option<String>,
    ) -> Result<(), EngineError> {
        let id = self.task(index).id.to_string();
        self.update_task(index, |record| {
            record.state = state;
            record.reason = reason.clone();
        })?;
        self.journal(EventKind::TaskState { task: id, state, reason })
    }

    /// Appends a journal event.
    pub fn journal(&self, event: EventKind) -> Result<(), EngineError> {
        self.journal.record(event).map_err(|err| {
            EngineError::io(format!("cannot append to {}", self.journal.path().display()), err)
        })
    }

    /// Tells the driver.
    pub fn report(&self, event: ProgressEvent) {
        (self.progress)(&event);
    }

    /// The task as roles see it.
    pub fn brief(&self, index: usize) -> TaskBrief {
        let task = self.task(index);
        TaskBrief {
            id: task.id.to_string(),
            title: task.title.clone(),
            dod: task.dod.clone(),
            writes: task.writes.entries().to_vec(),
            depends_on: task.depends_on.iter().map(ToString::to_string).collect(),
            risk: task.risk.iter().map(|flag| flag.as_str().to_string()).collect(),
        }
    }

    /// Runs blocking git work off the async threads, with a fresh handle.
    pub async fn git<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Repo) -> Result<T, breeze_git::GitError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let repo = self.repo.clone();
        tokio::task::spawn_blocking(move || work(&repo))
            .await
            .map_err(|err| {
                EngineError::io("a git task panicked", std::io::Error::other(err.to_string()))
            })?
            .map_err(EngineError::from)
    }

    /// Waits out a backend's trouble before `role` of `task` is called again: journaled,
    /// logged with the task named, cut short by a stop. Err: the bound is used up (or no
    /// login), and the run stops resumably.
    pub async fn wait_out(
        &self,
        backoff: &mut crate::roles::backoff::Backoff,
        trouble: &crate::roles::backoff::Trouble,
        task: &str,
        role: breeze_protocol::Role,
    ) -> Result<(), EngineError> {
        let who = format!("the {} of task {task}", role.as_str());
        let wait = backoff.next_wait(trouble, &who)?;
        self.journal(EventKind::BackendTrouble {
            task: task.to_string(),
            role,
            trouble: trouble.kind().to_string(),
            message: crate::advice::bound_text(trouble.message(), 2000),
            wait_ms: wait.as_millis() as u64,
        })?;
        tracing::warn!(
            task,
            role = role.as_str(),
            "{who}: {} — {}; trying again in {}s (the attempt does not count)",
            trouble.kind(),
            crate::advice::signature_line(trouble.message()),
            wait.as_secs().max(1)
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.cancel.cancelled() => {}
        }
        Ok(())
    }

    /// Runs blocking engine work (file-system checks) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, EngineError> {
        tokio::task::spawn_blocking(work).await.map_err(|err| {
            EngineError::io("a blocking task panicked", std::io::Error::other(err.to_string()))
        })?
    }

    /// Runs one of the project's own commands (`worktree.setup`, `land.verify`) under
    /// supervision. Unlike roles, they get the engine's environment: they are the
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
        let journal = self.journal.clone();
        let (task, purpose_text) = (task.to_string(), purpose.to_string());
        let on_spawn = move |pid, start_ticks| {
            let _ = journal.record(EventKind::CommandStarted {
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
        self.journal(EventKind::CommandEnded {
            pid: outcome.pid,
            outcome: outcome.ending.to_string(),
        })?;
        Ok(outcome)
    }

    /// The contract file of a task.
    pub fn contract_path(&self, index: usize) -> PathBuf {
        self.run_dir.contract(&crate::run_dir::file_slug(self.task(index).id.as_str()))
    }
}
