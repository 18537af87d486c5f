//! Running a role once, whatever its backend: [`RoleRunner::invoke`] gives the process a
//! private scratch folder, writes its structured input to `$BREEZE_INPUT`, asks
//! [`crate::containment`] what it may write, runs the backend its settings name — the one
//! place that picks how a role runs, from what its backend's description says runs it —
//! and checks afterwards what it changed outside its lane.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use breeze_protocol::{EventKind, Role};
use breeze_supervise::{Confinement, Supervisor};
use tokio_util::sync::CancellationToken;

use super::agent::AgentBackend;
use super::backoff::{Backoff, Trouble};
use super::call::{RoleCall, RoleOutcome, RoleReply};
use super::command::CommandBackend;
use super::invocation::{Backend, Invocation, ProcessLog};
use super::lane_watches::LaneWatches;
use super::prompt;
use super::scripted::{ScriptedBackend, SimSpec};
use crate::backend::{Answers, BackendKind, Runs};
use crate::config::{Config, RoleConfig};
use crate::containment::RoleGuard;
use crate::journal::RunStore;
use crate::run_dir::{RunDir, file_slug};

/// Runs roles for one run.
pub(crate) struct RoleRunner {
    pub config: Config,
    pub run_dir: RunDir,
    pub run_id: String,
    pub repo_root: PathBuf,
    /// The engine's environment, the source of each role's scrubbed one.
    pub engine_env: Vec<(String, String)>,
    /// Confinement and the checks around every role process.
    pub guard: Arc<RoleGuard>,
    /// The lanes' file-system watches.
    pub watches: Arc<LaneWatches>,
    /// What the run may spend and has spent: asked before every call.
    pub budget: Arc<crate::budget::Budget>,
    /// Where the backends' usage windows stand: told after every call.
    pub quotas: Arc<crate::quota::Quotas>,
    /// Every call passes a gate that waits for a paused backend (a run's calls); else
    /// [`wait_out`](Self::wait_out) waits for the reset itself.
    calls_pass_the_gate: bool,
    command: CommandBackend,
    agent: AgentBackend,
    scripted: ScriptedBackend,
    /// Numbers the invocations of the run (their process markers).
    invocations: AtomicU64,
    /// The run files, for journaling waits and spending.
    pub(super) store: RunStore,
}

/// What a [`RoleRunner`] is built from.
pub(crate) struct RoleRunnerParts {
    pub config: Config,
    pub run_dir: RunDir,
    pub run_id: String,
    pub repo_root: PathBuf,
    pub store: RunStore,
    pub supervisor: Supervisor,
    pub engine_env: Vec<(String, String)>,
    pub guard: Arc<RoleGuard>,
    /// Each task's write set, for the scripted worker and the agents' write checks.
    pub write_sets: BTreeMap<String, breeze_agents::WriteSetCheck>,
    /// The simulator's settings per task (`[task.sim]`).
    pub sims: BTreeMap<String, SimSpec>,
    /// The run's budget.
    pub budget: Arc<crate::budget::Budget>,
    /// The usage windows known before the first call (a resumed run's).
    pub windows: Vec<breeze_protocol::UsageWindow>,
    /// Every call passes `RunContext::call_role`, which waits for a paused backend.
    pub calls_pass_the_gate: bool,
    /// The lanes' watches (some started ahead of the run: `run/prepare.rs`).
    pub watches: Arc<LaneWatches>,
}

/// Why a role call could not start.
#[derive(Debug, thiserror::Error)]
enum CannotStart {
    /// Its input does not serialize.
    #[error("cannot serialize the role input: {0}")]
    Input(#[source] serde_json::Error),
    /// Its input file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteInput {
        /// `$BREEZE_INPUT`.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// No scratch folder.
    #[error("cannot create a scratch folder: {0}")]
    Scratch(#[source] std::io::Error),
    /// A worker's private git directory cannot be made ready.
    #[error("cannot prepare the worker's private git directory: {0}")]
    PrivateGit(#[source] crate::error::EngineError),
    /// What it may write cannot be set up.
    #[error("{0}")]
    Confinement(#[source] crate::error::EngineError),
    /// The state it is checked against afterwards cannot be taken.
    #[error("cannot take the state before the role: {0}")]
    StateBefore(#[source] crate::error::EngineError),
    /// A step on a blocking thread ended without an answer.
    #[error("cannot {doing}: {source}")]
    Interrupted {
        /// What the step was.
        doing: &'static str,
        /// How it ended.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// What a call's process gets before it runs, besides its settings and environment.
struct Prepared {
    private_git: Option<PathBuf>,
    confinement: Option<Confinement>,
    watch: crate::containment::Watch,
}

impl RoleRunner {
    pub fn new(parts: RoleRunnerParts) -> RoleRunner {
        let store = parts.store.clone();
        let log = ProcessLog::new(parts.store);
        let write_sets = Arc::new(parts.write_sets);
        // Logins a killed engine left in this run's role homes go before any role starts.
        crate::role_home::sweep(&crate::role_home::homes_root(&parts.run_dir));
        let quotas = Arc::new(crate::quota::Quotas::new(parts.config.pause_at, parts.windows));
        RoleRunner {
            agent: AgentBackend {
                supervisor: parts.supervisor.clone(),
                log: log.clone(),
                repo_root: parts.repo_root.clone(),
                engine_env: parts.engine_env.clone(),
                write_sets: write_sets.clone(),
            },
            command: CommandBackend { supervisor: parts.supervisor.clone(), log },
            scripted: ScriptedBackend::new(parts.sims, write_sets),
            config: parts.config,
            run_dir: parts.run_dir,
            run_id: parts.run_id,
            repo_root: parts.repo_root,
            engine_env: parts.engine_env,
            guard: parts.guard,
            budget: parts.budget,
            quotas,
            calls_pass_the_gate: parts.calls_pass_the_gate,
            watches: parts.watches,
            invocations: Default::default(),
            store,
        }
    }

    /// Waits out a backend's trouble before `role` of `task` is called again: journaled,
    /// logged with the task named, cut short by `cancel`. Err: the bound is used up (or no
    /// login), and the run stops resumably.
    pub async fn wait_out(
        &self,
        backoff: &mut Backoff,
        trouble: &Trouble,
        task: &str,
        role: Role,
        cancel: &CancellationToken,
    ) -> Result<(), crate::error::EngineError> {
        let who = format!("the {} of task {task}", role.as_str());
        // A spent window with a known reset is waited for however long, and is no failed
        // try: in a run, by the next call at the gate (`RunContext::call_role`).
        let wait = match self.paused_for(trouble, role) {
            Some(_) if self.calls_pass_the_gate => return Ok(()),
            Some(left) => left + std::time::Duration::from_secs(1),
            None => backoff.next_wait(trouble, &who)?,
        };
        self.store
            .record(EventKind::BackendTrouble {
                task: task.to_string(),
                role,
                trouble: trouble.kind().to_string(),
                message: crate::advice::bound_text(trouble.message(), 2000),
                wait_ms: wait.as_millis() as u64,
            })
            .await
            .map_err(|err| crate::error::EngineError::io("cannot append to the journal", err))?;
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
            () = cancel.cancelled() => {}
        }
        Ok(())
    }

    /// How long until the reset `role`'s backend is paused for, when `trouble` is a limit
    /// and the backend reported a window beyond `[quota] pause_at` (or the limit named a
    /// reset further ahead than any backoff wait: the backend is paused until then).
    fn paused_for(&self, trouble: &Trouble, role: Role) -> Option<std::time::Duration> {
        let Trouble::Limited { retry_after, .. } = trouble else { return None };
        let backend = self.config.role(role).backend.as_str();
        let now = std::time::SystemTime::now();
        if let Some(after) = retry_after.filter(|after| *after > super::backoff::MAX_WAIT) {
            self.quotas.report(&[crate::quota::stated_reset(backend, now + after)]);
        }
        self.quotas.pause(backend, now).map(|pause| pause.left(now))
    }

    /// The repository root.
    pub fn repo_root(&self) -> &Path {
        &self.repo_root
    }

    /// How a role on `kind` runs: the one place that picks it, from what the backend's
    /// description says runs its roles.
    pub(super) fn backend(&self, kind: BackendKind) -> &dyn Backend {
        match kind.describe().runs {
            Runs::InProcess => &self.scripted,
            Runs::Program => &self.command,
            Runs::Agent(_) => &self.agent,
        }
    }

    /// Runs `call` to its end: in a private scratch folder, confined where the kernel can,
    /// checked afterwards for what it changed outside its lane.
    pub async fn invoke(&self, call: RoleCall, cancel: &CancellationToken) -> RoleReply {
        let settings = self.config.role(call.role).clone();
        self.invoke_with(call, settings, cancel).await
    }

    /// [`invoke`](Self::invoke) with these settings (the role's own, or its fallback's),
    /// telling the run's [`crate::quota::Quotas`] the usage windows the call reported.
    pub async fn invoke_with(
        &self,
        mut call: RoleCall,
        settings: RoleConfig,
        cancel: &CancellationToken,
    ) -> RoleReply {
        self.within_session_cap(&mut call, &settings);
        let files = self.call_files(&call);
        let failed = |why: CannotStart| {
            RoleReply::of(RoleOutcome::CouldNotStart(why.to_string()), files.log_path.clone())
        };
        let scratch = match write_input(&call, &files) {
            Ok(scratch) => scratch,
            Err(why) => return failed(why),
        };
        call.prompt.push_str(&prompt::answer_instructions(call.role, settings.backend));
        let mut env = self.role_env(&call, &settings, &files.input_path, scratch.path());
        let network = self.network_of(&call, &settings, &env);
        if let Some(network) = &network {
            env.extend(network.proxy_env());
        }
        let prepared = match self.prepare(&call, &settings, scratch.path(), &env).await {
            Ok(prepared) => prepared,
            Err(why) => return failed(why),
        };
        let marker =
            format!("{}/{}", self.run_id, self.invocations.fetch_add(1, Ordering::Relaxed));
        let mut run = Invocation {
            call: &call,
            activity: self.activity_of(&call).await,
            max_budget_usd: None,
            settings,
            env,
            output_path: scratch.path().join("output.json"),
            record_path: files.record_path,
            log_path: files.log_path,
            scratch: scratch.path().to_path_buf(),
            confinement: prepared.confinement,
            network,
            private_git: prepared.private_git,
            marker,
        };
        let mut reply = self.metered(&mut run, cancel).await;
        self.quotas.report(&reply.windows);
        self.check_after(&mut reply, prepared.watch, call.lane.clone()).await;
        drop(scratch);
        reply
    }

    /// The input, record and log files of a call. A call that repeats an earlier one's
    /// label (resumed after a stop) keeps both logs.
    fn call_files(&self, call: &RoleCall) -> CallFiles {
        let slug = file_slug(&call.task_id);
        let role = call.role.as_str();
        let log_path =
            crate::run_dir::unused_log_stem(self.run_dir.log(&slug, role, &call.label), |k| {
                self.run_dir.log(&slug, role, &format!("{}.again-{k}", call.label))
            });
        CallFiles {
            input_path: self.run_dir.io_file(&slug, role, &call.label, "input"),
            record_path: self.run_dir.io_file(&slug, role, &call.label, "output"),
            log_path,
        }
    }

    /// The role's complete environment: the scrubbed engine environment, the protocol's
    /// variables, the scratch folder as `TMPDIR`, `$BREEZE_OUTPUT` for a role that answers
    /// in a file (`command`), and for a role on an agent CLI its own CLI home as
    /// `CLAUDE_CONFIG_DIR` / `CODEX_HOME` ([`crate::role_home`]; it wins over the person's
    /// own, which the role never writes).
    fn role_env(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
        input: &Path,
        scratch: &Path,
    ) -> Vec<(String, String)> {
        // BREEZE_* variables of the engine's own environment are not passed: the protocol
        // variables are the only ones a role should trust.
        let engine_env =
            self.engine_env.iter().filter(|(name, _)| !name.starts_with("BREEZE_")).cloned();
        let mut set = vec![
            ("BREEZE_ROLE".to_string(), call.role.as_str().to_string()),
            ("BREEZE_RUN_ID".into(), self.run_id.clone()),
            ("BREEZE_TASK_ID".into(), call.task_id.clone()),
            ("BREEZE_ATTEMPT".into(), call.attempt.to_string()),
            ("BREEZE_ROUND".into(), call.round.to_string()),
            ("BREEZE_INPUT".into(), input.display().to_string()),
            ("BREEZE_WORKTREE".into(), call.cwd.display().to_string()),
            ("BREEZE_BASE".into(), call.base.clone()),
        ];
        for name in ["TMPDIR", "TMP", "TEMP"] {
            set.push((name.into(), scratch.display().to_string()));
        }
        let backend = settings.backend.describe();
        if backend.answers == Answers::OutputFile {
            set.push(("BREEZE_OUTPUT".into(), scratch.join("output.json").display().to_string()));
        }
        if let Some(cli) = backend.agent() {
            let home = crate::role_home::home_dir(&self.run_dir, &call.task_id, call.role);
            set.push((cli.kind.home_var().into(), home.display().to_string()));
        }
        set.extend(lane_vars(call));
        let mut env = breeze_supervise::scrubbed_env(engine_env, &settings.env, &set);
        // Named in the role's `env` or not, a shared build folder is never a lane's.
        crate::tool_caches::without_output_dirs(&mut env);
        env
    }

    /// What the process gets before it runs: a worker's lane sealed (its git works on the
    /// lane's private git directory while it runs), what it may write, the state it is
    /// checked against afterwards. A call that cannot start leaves the lane pointing back
    /// at its admin folder (the lane check after a call that ran does it then).
    async fn prepare(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
        scratch: &Path,
        env: &[(String, String)],
    ) -> Result<Prepared, CannotStart> {
        let private_git = self.seal_lane(call).await?;
        let confinement = match self.confinement_of(call, settings, scratch, env) {
            Ok(confinement) => confinement,
            Err(why) => {
                self.release_lane(call).await;
                return Err(why);
            }
        };
        let guard = self.guard.clone();
        let watch = match tokio::task::spawn_blocking(move || guard.before()).await {
            Ok(Ok(watch)) => watch,
            Ok(Err(err)) => {
                self.release_lane(call).await;
                return Err(CannotStart::StateBefore(err));
            }
            Err(source) => {
                self.release_lane(call).await;
                return Err(CannotStart::Interrupted {
                    doing: "take the state before the role",
                    source,
                });
            }
        };
        Ok(Prepared { private_git, confinement, watch })
    }

    /// A worker's activity: its lane's watch, started when the lane was taken (started
    /// here only for a worktree that has none).
    async fn activity_of(&self, call: &RoleCall) -> Option<Arc<breeze_supervise::TreeWatch>> {
        let (Role::Worker, Some(_)) = (call.role, &call.lane) else { return None };
        let (watches, cwd) = (self.watches.clone(), call.cwd.clone());
        tokio::task::spawn_blocking(move || watches.watch(&cwd, false)).await.ok()
    }

    /// Seals a worker's lane (`RoleGuard::seal_lane`): its private git directory, or `None`
    /// for other roles. Err: why the worker cannot start.
    async fn seal_lane(&self, call: &RoleCall) -> Result<Option<PathBuf>, CannotStart> {
        let (Role::Worker, Some(lane)) = (call.role, call.lane.clone()) else { return Ok(None) };
        let guard = self.guard.clone();
        let sealed = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let sealed = guard.seal_lane(&lane);
            tracing::debug!(
                lane = %lane.name,
                micros = started.elapsed().as_micros() as u64,
                "synced the worker's private git directory"
            );
            sealed
        })
        .await;
        match sealed {
            Ok(Ok(dir)) => Ok(Some(dir)),
            Ok(Err(err)) => {
                self.release_lane(call).await;
                Err(CannotStart::PrivateGit(err))
            }
            Err(source) => Err(CannotStart::Interrupted {
                doing: "prepare the worker's private git directory",
                source,
            }),
        }
    }

    /// Points a worker's lane back at its admin folder after a call that never ran (the
    /// lane check does it after one that ran).
    async fn release_lane(&self, call: &RoleCall) {
        let (Role::Worker, Some(lane)) = (call.role, call.lane.clone()) else { return };
        let guard = self.guard.clone();
        let checked = tokio::task::spawn_blocking(move || guard.check_lane_links(&lane)).await;
        if let Ok(Err(err)) = checked {
            tracing::warn!("cannot restore the lane's links: {err}");
        }
    }

    /// What the call's process may write, when roles are confined.
    /// Where the role may connect: its backend's API, the endpoints its settings name and
    /// `sandbox.network` — or anywhere, with the network open.
    fn network_of(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
        env: &[(String, String)],
    ) -> Option<breeze_supervise::NetworkAccess> {
        let refusals = crate::network_policy::Refusals {
            store: Some(self.store.clone()),
            task: call.task_id.clone(),
            by: call.role.as_str().to_string(),
        };
        let runs = settings.backend.describe().runs;
        crate::network_policy::for_role(
            &self.guard.containment.network,
            runs,
            &[settings.command.as_slice(), settings.args.as_slice()].concat(),
            env,
            refusals,
        )
    }

    fn confinement_of(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
        scratch: &Path,
        env: &[(String, String)],
    ) -> Result<Option<Confinement>, CannotStart> {
        let lane_git = match &call.lane {
            Some(lane) => self.guard.lane_git_writable(lane),
            None => Vec::new(),
        };
        let runs = settings.backend.describe().runs;
        self.guard
            .containment
            .confinement(call.role, runs, &call.cwd, &lane_git, scratch, env)
            .map_err(CannotStart::Confinement)
    }

    /// Checks a worker's lane links (pointing its `.git` back at its admin folder) and what
    /// the process changed outside its lane. The lane comes first: what the worker did to
    /// its own lane's admin folder is its attempt's problem, not an escape.
    async fn check_after(
        &self,
        reply: &mut RoleReply,
        watch: crate::containment::Watch,
        lane: Option<breeze_git::Worktree>,
    ) {
        let guard = self.guard.clone();
        let checked = tokio::task::spawn_blocking(move || {
            let lane_problems = match &lane {
                Some(lane) => guard.check_lane_links(lane)?,
                None => Vec::new(),
            };
            let escaped = guard.after(watch)?;
            Ok::<_, crate::error::EngineError>((escaped, lane_problems))
        })
        .await;
        match checked {
            Ok(Ok((escaped, lane_problems))) => {
                reply.escaped = escaped;
                reply.lane_problems = lane_problems;
            }
            Ok(Err(err)) => reply.escaped.push(format!("breeze could not check: {err}")),
            Err(err) => reply.escaped.push(format!("breeze could not check: {err}")),
        }
    }
}

/// Writes the call's input to `$BREEZE_INPUT` (its earlier record gone) and makes its
/// scratch folder: a short path under the system temp folder — CLIs put sockets there,
/// whose paths are limited to 108 bytes — removed with everything in it when the role is
/// done.
fn write_input(call: &RoleCall, files: &CallFiles) -> Result<tempfile::TempDir, CannotStart> {
    let text = serde_json::to_vec_pretty(&call.input).map_err(CannotStart::Input)?;
    std::fs::write(&files.input_path, text)
        .map_err(|source| CannotStart::WriteInput { path: files.input_path.clone(), source })?;
    let _ = std::fs::remove_file(&files.record_path);
    crate::scratch::scratch_folder().map_err(CannotStart::Scratch)
}

/// The call's lane variables (`BREEZE_LANE`, `BREEZE_PORT_BASE`, `BREEZE_PORT_COUNT`), if
/// it runs for a task on a lane.
fn lane_vars(call: &RoleCall) -> Vec<(String, String)> {
    call.lane_env.map(|env| env.vars()).unwrap_or_default()
}

/// The files of one call.
struct CallFiles {
    input_path: PathBuf,
    record_path: PathBuf,
    log_path: PathBuf,
}
