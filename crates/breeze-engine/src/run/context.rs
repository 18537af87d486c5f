//! What every part of a run shares: the repository, plan, config, run files, the task book,
//! roles, the serial-step locks and the cancel signal. Each task's own state is its
//! driver's (in the `task` wing); this holds nothing of one task alone.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_git::Repo;
use breeze_plan::{Analysis, Plan, Task};
use breeze_protocol::{EventKind, TaskBrief};
use tokio_util::sync::CancellationToken;

use super::book::TaskBook;
use super::main_verdicts::MainChecks;
use super::write_sets::WriteSets;
use crate::config::Config;
use crate::error::EngineError;
use crate::lane_env::LaneEnv;
use crate::roles::RoleRunner;
use crate::roles::backoff::BackoffSettings;
use crate::run_dir::RunDir;
use crate::snapshot::ObjectId;

/// Shared state of one run.
pub(crate) struct RunContext {
    pub run_id: String,
    /// Main when the run started: landings of this run are searched back to here.
    pub main_tip_at_start: ObjectId,
    /// This run's landings on main, as far as main was read.
    pub landings_seen: Arc<crate::landings_seen::LandingsSeen>,
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
    /// Reviewer verdicts are serial (and the review checkout is the reviewer's).
    pub review_lock: tokio::sync::Mutex<()>,
    /// The Advisor's checkout is one consult's at a time.
    pub advice_lock: tokio::sync::Mutex<()>,
    /// Landings are serial.
    pub land_lock: tokio::sync::Mutex<()>,
    /// What `land.verify` said about trees before (passes across runs).
    pub verify_cache: crate::verify_cache::VerifyCache,
    /// What `[review] checks` said about main's trees in this run.
    pub main_checks: MainChecks,
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
    /// The user was told why main does not follow the remote branch (told once a run).
    pub told_main_stays: std::sync::atomic::AtomicBool,
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

    /// Makes `worktree` lane `lane`'s unless another lane holds it: checked and recorded at
    /// once, so two lanes taking up kept worktrees side by side never take the same one.
    /// What the lane held before, or `None` when another lane holds it.
    pub fn claim_lane(
        &self,
        lane: u32,
        worktree: &breeze_git::Worktree,
    ) -> Option<Option<breeze_git::Worktree>> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let slot = lane as usize - 1;
        let elsewhere = lanes.iter().enumerate().any(|(other, held)| {
            other != slot && held.as_ref().is_some_and(|held| held.path == worktree.path)
        });
        (!elsewhere).then(|| lanes[slot].replace(worktree.clone()))
    }

    /// Gives lane `lane` back what it held before a [`Self::claim_lane`] it could not use.
    pub fn release_lane(&self, lane: u32, before: Option<breeze_git::Worktree>) {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1] = before;
    }

    /// The landing commit on main of task `index`, when a run cut short landed it already
    /// (found by its trailers since the run started).
    pub async fn landed_on_main(
        &self,
        index: usize,
    ) -> Result<Option<breeze_git::Oid>, EngineError> {
        let (seen, run_id, task_id) =
            (self.landings_seen.clone(), self.run_id.clone(), self.task(index).id.to_string());
        let stop_at = self.main_tip_at_start.0;
        self.git(move |repo| seen.find(repo, &run_id, &task_id, stop_at)).await
    }

    /// Whether a lane other than `lane` holds the worktree at `path`.
    pub fn held_by_another_lane(&self, lane: u32, path: &Path) -> bool {
        let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        lanes.iter().enumerate().any(|(other, held)| {
            other != lane as usize - 1 && held.as_ref().is_some_and(|held| held.path == path)
        })
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

    /// [`RunContext::git`] on the checkout at `path` with what its watch saw change since it
    /// was last settled (everything when it has no watch); the watch is settled once `work`
    /// succeeded: what it looked at agrees with git. What `work` writes stays a change
    /// until the next look.
    pub async fn git_watched<T: Send + 'static>(
        &self,
        path: &Path,
        work: impl FnOnce(&Repo, breeze_git::WorkdirChanges<'_>) -> Result<T, breeze_git::GitError>
        + Send
        + 'static,
    ) -> Result<T, EngineError> {
        let watch = self.roles.watches.get(path);
        self.git(move |repo| {
            let changes =
                watch.as_ref().map_or_else(breeze_supervise::TreeChanges::unknown, |w| w.changes());
            let done = work(repo, crate::roles::workdir_changes(&changes))?;
            if let Some(watch) = &watch {
                watch.settle(&changes);
            }
            Ok(done)
        })
        .await
    }

    /// One of breeze's detached checkouts at `path` (the integration worktree, a review
    /// checkout) put in place by `place`, told where it changed since breeze last placed it:
    /// its file-system watch's paths (what a verify, a hook or a person wrote), so that
    /// placing it again does not look at every file. The watch starts once the checkout
    /// agrees with git (after the first placing: a full pass or a fresh checkout). The
    /// checkout has a writer while breeze places it: no role running meanwhile is blamed.
    pub async fn placed_checkout(
        &self,
        path: &Path,
        place: impl FnOnce(
            &Repo,
            breeze_git::WorkdirChanges<'_>,
        ) -> Result<PathBuf, breeze_git::GitError>
        + Send
        + 'static,
    ) -> Result<PathBuf, EngineError> {
        let _placing = self.roles.guard.lane_writer(path);
        let watches = self.roles.watches.clone();
        let placed = self.git_watched(path, place).await?;
        let at = placed.clone();
        self.blocking(move || Ok(watches.watch(&at, true))).await?;
        Ok(placed)
    }

    /// Runs blocking engine work (file-system checks) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, EngineError> {
        tokio::task::spawn_blocking(work).await.map_err(EngineError::internal("a blocking task"))?
    }

    /// Runs one of the project's own commands (`worktree.setup`, `[review] checks`,
    /// `land.verify`, hooks) under supervision. They run code that agents wrote, so they
    /// are kept like roles: an allow-listed environment (the roles' list, the toolchains'
    /// variables and `sandbox.env`; never the engine's tokens) with their lane's number and
    /// ports (`BREEZE_LANE`, `BREEZE_PORT_BASE`); where roles are confined they are too —
    /// they read what roles read, write only their checkout, what `command` adds,
    /// `sandbox.writable` and a scratch folder of their own (their `TMPDIR`), and reach
    /// only `sandbox.network`. Their pids are journaled for `breeze resume`.
    pub async fn run_project_command(
        &self,
        command: ProjectCommand<'_>,
    ) -> Result<ProjectRun, EngineError> {
        let (task, purpose) = (command.task, command.purpose);
        let could_not_start = |err: String| {
            EngineError::usage(
                format!("`{purpose}` could not start: {err}"),
                format!("check {purpose} in breeze.toml"),
            )
        };
        // Removed with everything in it when the command is done.
        let scratch = crate::scratch::scratch_folder()
            .map_err(|err| could_not_start(format!("cannot create a scratch folder: {err}")))?;
        let spec = self.project_spec(&command, scratch.path());
        let confinement = spec.confinement.clone();
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
        let outcome = self
            .supervisor
            .run(spec, None, self.cancel.clone(), on_spawn, |_| {})
            .await
            .map_err(|err| could_not_start(err.to_string()))?;
        drop(scratch);
        self.book
            .journal(EventKind::CommandEnded {
                pid: outcome.pid,
                outcome: crate::journal_endings::command_ending(outcome.ending),
            })
            .await?;
        let refused = match &confinement {
            Some(confinement) if !outcome.ending.is_success() => {
                let output = format!("{}\n{}", outcome.stdout_tail, outcome.stderr_tail);
                crate::sandbox_hint::sandbox_refusal_hint(&output, confinement)
            }
            _ => None,
        };
        if let Some(hint) = &refused {
            tracing::warn!("`{purpose}` {}: {hint}", outcome.ending);
        }
        Ok(ProjectRun { outcome, refused })
    }

    /// How `command` runs: the engine's environment with the lane's variables and no
    /// shared build-output folder, its timeout, and — confined — writing only where it
    /// may, with `scratch` its `TMPDIR`.
    fn project_spec(
        &self,
        command: &ProjectCommand<'_>,
        scratch: &Path,
    ) -> breeze_supervise::ProcessSpec {
        let mut spec =
            breeze_supervise::ProcessSpec::new(command.argv.to_vec(), command.cwd, command.log);
        let engine_env =
            std::env::vars().filter(|(name, _)| !LaneEnv::NAMES.contains(&name.as_str()));
        let lane_vars = command.lane.vars();
        spec.env = match command.confined {
            true => crate::network_policy::command_env(&self.config, engine_env, &lane_vars),
            // The person's own forge tool (`land.pr_command`): their credentials.
            false => engine_env.chain(lane_vars).collect(),
        };
        let containment = &self.roles.guard.containment;
        if command.confined {
            let refusals = crate::network_policy::Refusals {
                store: Some(self.book.store().clone()),
                task: command.task.to_string(),
                by: command.purpose.to_string(),
            };
            spec.network = crate::network_policy::for_command(&containment.network, refusals);
        }
        if let Some(network) = &spec.network {
            spec.env.extend(network.proxy_env());
        }
        // Each checkout builds in its own `target/`, never a shared folder elsewhere.
        crate::tool_caches::without_output_dirs(&mut spec.env);
        spec.timeout = Some(command.timeout);
        spec.confinement = match command.confined {
            true => containment.project_confinement(
                command.cwd,
                &command.also_writable,
                &command.files,
                scratch,
            ),
            false => None,
        };
        if spec.confinement.is_some() {
            spec.env.retain(|(name, _)| !matches!(name.as_str(), "TMPDIR" | "TMP" | "TEMP"));
            for name in ["TMPDIR", "TMP", "TEMP"] {
                spec.env.push((name.into(), scratch.display().to_string()));
            }
        }
        spec
    }

    /// The contract file of a task.
    pub fn contract_path(&self, index: usize) -> PathBuf {
        self.run_dir.contract(&crate::run_dir::file_slug(self.task(index).id.as_str()))
    }
}

/// One of the project's own commands, and what it may write besides its checkout.
pub(crate) struct ProjectCommand<'a> {
    /// The task it runs for.
    pub task: &'a str,
    /// `worktree.setup`, `review.checks`, `land.verify`, `land.run_hooks (pre-commit)`.
    pub purpose: &'a str,
    pub argv: &'a [String],
    /// Where it runs — a lane or the integration checkout — and may write.
    pub cwd: &'a Path,
    /// Stem of its two log files.
    pub log: &'a Path,
    pub timeout: Duration,
    /// The lane it runs for (the integration checkout's for verify and hooks).
    pub lane: LaneEnv,
    /// Folders it may write besides `cwd`, `sandbox.writable` and its scratch folder.
    pub also_writable: Vec<PathBuf>,
    /// Single files it may write (not delete or replace).
    pub files: Vec<PathBuf>,
    /// Confined for writing (the default): it runs code agents wrote. Off only for the
    /// user's own tools that run none (`land.pr_command`: a forge CLI keeping its own
    /// credentials and state), like `[notify] command`.
    pub confined: bool,
}

impl<'a> ProjectCommand<'a> {
    /// `argv` for `purpose` of `task`, in `cwd` for `lane`, writing only there (and
    /// `sandbox.writable` and its scratch folder).
    pub fn new(
        task: &'a str,
        purpose: &'a str,
        argv: &'a [String],
        (cwd, lane): (&'a Path, LaneEnv),
        log: &'a Path,
        timeout: Duration,
    ) -> Self {
        Self {
            task,
            purpose,
            argv,
            cwd,
            log,
            timeout,
            lane,
            also_writable: Vec::new(),
            files: Vec::new(),
            confined: true,
        }
    }
}

/// How a project command ended.
pub(crate) struct ProjectRun {
    pub outcome: breeze_supervise::Outcome,
    /// When it failed confined and its output reports a write refused outside what it may
    /// write: the hint naming those paths and `sandbox.writable`.
    pub refused: Option<String>,
}
