//! Running a role once, whatever its backend: the role process protocol.
//!
//! `RoleRunner::invoke` gives the process a private scratch folder, writes its structured
//! input to `$BREEZE_INPUT`, asks [`crate::containment`] what it may write, runs the
//! backend (`Backend`: `command`, `claude`/`codex`, `scripted`) and checks afterwards what
//! it changed outside its lane. The reply says in one [`RoleOutcome`] how the call went.

pub mod backoff;
pub mod definition;
pub mod prompt;
pub mod scripted;

mod agent;
#[cfg(test)]
mod backends_doc;
mod command;
mod metered;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use breeze_protocol::{EventKind, Role, Usage};
use breeze_supervise::{Confinement, Ending, Supervisor, TreeChanges, TreeWatch};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{BackendKind, Config, RoleConfig};
use crate::containment::RoleGuard;
use crate::journal::RunStore;
use crate::run_dir::{RunDir, file_slug};
use backoff::Trouble;

/// One invocation of a role.
#[derive(Debug, Clone)]
pub struct RoleCall {
    /// Which role.
    pub role: Role,
    /// Task id.
    pub task_id: String,
    /// `BREEZE_ATTEMPT` (worker attempt, or the consult/round number for other roles).
    pub attempt: u32,
    /// `BREEZE_ROUND`.
    pub round: u32,
    /// Working directory: the task worktree.
    pub cwd: PathBuf,
    /// Base commit.
    pub base: String,
    /// The structured input (`worker-input.v1`, `advisor-request.v1`, `review-input.v1`).
    pub input: Value,
    /// The rendered prompt (stdin).
    pub prompt: String,
    /// Backend session to continue (same worker for fix rounds), if any.
    pub resume_session: Option<String>,
    /// Names this call's files (unique per task and role): the attempt, consult or
    /// `round-<k>.try-<n>`.
    pub label: String,
    /// With `resume_session`: the session's totals after its previous run, so a resumed
    /// run's usage counts only itself.
    pub resume_baseline: Option<Usage>,
    /// The worker's lane: its git gets the lane's private git directory while it runs.
    pub lane: Option<breeze_git::Worktree>,
    /// The lane's number and ports (`BREEZE_LANE`, `BREEZE_PORT_BASE`): every role of a
    /// task gets its lane's; a role outside a run (the scaffolder) none.
    pub lane_env: Option<crate::lane_env::LaneEnv>,
}

/// How a role process ended when it did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleEnding {
    /// Exited with a non-zero code.
    Exited(i32),
    /// Killed by a signal it did not get from breeze.
    Signaled(i32),
    /// Wall-clock timeout.
    TimedOut,
    /// No output and no worktree change for the stall timeout.
    Stalled,
}

impl std::fmt::Display for RoleEnding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Stalled => f.write_str("stalled (no output and no file changes)"),
        }
    }
}

/// How a role call went — one of these, never a mix.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleOutcome {
    /// It exited 0 with a JSON result (not yet validated against its message type).
    Answered(Value),
    /// It exited 0 without a usable result; why.
    NoAnswer(String),
    /// It ended otherwise.
    Ended(RoleEnding),
    /// The backend failed, not the task: wait it out or stop (never an attempt).
    Trouble(Trouble),
    /// breeze is stopping.
    Cancelled,
    /// It could not be started (program missing, not executable, confinement).
    CouldNotStart(String),
    /// The budget let it not start: its task, or the run, has spent its cap.
    OverBudget(crate::budget::OverBudget),
}

/// A backend session to continue in a later call.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Claude `session_id` / codex `thread_id`.
    pub id: String,
    /// The session's running totals, for the next `resume_baseline`.
    pub usage: Option<Usage>,
}

/// What a role invocation produced.
#[derive(Debug, Clone)]
pub struct RoleReply {
    /// How it went.
    pub outcome: RoleOutcome,
    /// The end of stderr (or stdout), for error messages and failure signatures.
    pub diagnostics: String,
    /// Cost and tokens.
    pub usage: Usage,
    /// The backend session, to continue later.
    pub session: Option<Session>,
    /// Paths the agent wrote (or tried to) outside the write set, seen in its stream.
    pub write_violations: Vec<String>,
    /// What the process changed outside its lane that breeze found afterwards (only
    /// possible without kernel confinement): the run must stop before any of it lands.
    pub escaped: Vec<String>,
    /// What a worker did to its lane's links to the shared repository (repaired).
    pub lane_problems: Vec<String>,
    /// Log file stem of this invocation.
    pub log_path: PathBuf,
}

impl RoleReply {
    /// A reply with `outcome` and nothing else.
    pub(crate) fn of(outcome: RoleOutcome, log_path: PathBuf) -> RoleReply {
        RoleReply {
            outcome,
            diagnostics: String::new(),
            usage: Usage::default(),
            session: None,
            write_violations: Vec::new(),
            escaped: Vec::new(),
            lane_problems: Vec::new(),
            log_path,
        }
    }

    /// The outcome of a process that ran: its result if it exited 0, else how it ended.
    fn from_ending(ending: Ending, result: Result<Value, String>) -> RoleOutcome {
        match ending {
            Ending::Exited(0) => match result {
                Ok(value) => RoleOutcome::Answered(value),
                Err(why) => RoleOutcome::NoAnswer(why),
            },
            Ending::Exited(code) => RoleOutcome::Ended(RoleEnding::Exited(code)),
            Ending::Signaled(signal) => RoleOutcome::Ended(RoleEnding::Signaled(signal)),
            Ending::TimedOut => RoleOutcome::Ended(RoleEnding::TimedOut),
            Ending::Stalled => RoleOutcome::Ended(RoleEnding::Stalled),
            Ending::Cancelled => RoleOutcome::Cancelled,
        }
    }
}

/// The file-system watches of the lane worktrees, one [`TreeWatch`] per worktree for the
/// whole run (started when the lane is created, so a worker's start costs no walk of its
/// lane): the worker's activity for the stall clock, and the paths changed since the lane
/// last agreed with git, which committing and moving the lane look at instead of the whole
/// worktree.
#[derive(Default)]
pub(crate) struct LaneWatches(std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<TreeWatch>>>);

impl LaneWatches {
    fn map(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<PathBuf, Arc<TreeWatch>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The watch of the worktree at `path`, if it has one.
    pub fn get(&self, path: &Path) -> Option<Arc<TreeWatch>> {
        self.map().get(path).cloned()
    }

    /// The watch of the worktree at `path`, started if it has none (one listing of its
    /// folders: blocking). `agrees_with_git`: the worktree is a fresh checkout, so only what
    /// changes from now on can differ; otherwise the first look is a full pass.
    pub fn watch(&self, path: &Path, agrees_with_git: bool) -> Arc<TreeWatch> {
        if let Some(watch) = self.get(path) {
            return watch;
        }
        let watch = Arc::new(TreeWatch::start(path));
        if !agrees_with_git {
            watch.assume_unknown();
        }
        self.map().entry(path.to_path_buf()).or_insert(watch).clone()
    }

    /// Stops watching the worktree at `path` (given up, or removed).
    pub fn forget(&self, path: &Path) {
        self.map().remove(path);
    }
}

/// The watch's changes as breeze-git takes them.
pub(crate) fn workdir_changes(changes: &TreeChanges) -> breeze_git::WorkdirChanges<'_> {
    match changes.paths() {
        Some(paths) => breeze_git::WorkdirChanges::Only(paths),
        None => breeze_git::WorkdirChanges::Unknown,
    }
}

/// One invocation on its way to a backend.
pub(crate) struct Invocation<'a> {
    pub call: &'a RoleCall,
    pub settings: RoleConfig,
    /// The role's environment (scrubbed, with the protocol variables).
    pub env: Vec<(String, String)>,
    /// `$BREEZE_OUTPUT` of a `command` role (in its scratch folder).
    pub output_path: PathBuf,
    /// Where the result is kept for the record (`io/…output.json`).
    pub record_path: PathBuf,
    pub log_path: PathBuf,
    /// The role's private scratch folder (`TMPDIR`).
    pub scratch: PathBuf,
    /// What the kernel lets it write, when roles are confined.
    pub confinement: Option<Confinement>,
    /// A worker's private git directory (its lane's `.git` names it while it runs): what
    /// the worker's git writes, besides the lane.
    pub private_git: Option<PathBuf>,
    /// Marks every process of this invocation (see `breeze_supervise::MARKER_VAR`).
    pub marker: String,
    /// A worker's lane watch: its activity for the stall clock.
    pub activity: Option<Arc<TreeWatch>>,
    /// What the call may spend (what is left of its task's and the run's budget).
    pub max_budget_usd: Option<f64>,
}

/// A future a backend returns.
pub(crate) type BackendFuture<'a> = Pin<Box<dyn Future<Output = RoleReply> + Send + 'a>>;

/// A way of running a role: a process following the protocol, an agent CLI, the simulator.
pub(crate) trait Backend: Send + Sync {
    /// Runs the invocation to its end.
    fn run<'a>(
        &'a self,
        run: &'a Invocation<'a>,
        cancel: &'a CancellationToken,
    ) -> BackendFuture<'a>;
}

/// Journals the start and end of role processes, so `resume` can end what a killed engine
/// left behind.
#[derive(Clone)]
pub(crate) struct ProcessLog {
    store: RunStore,
}

impl ProcessLog {
    /// The `on_spawn` callback of a call: journals the pid with its start time.
    pub fn started(
        &self,
        call: &RoleCall,
        log_path: &Path,
    ) -> impl FnOnce(u32, Option<u64>) + Send + use<> {
        let store = self.store.clone();
        let (task, role, log) = (call.task_id.clone(), call.role, log_path.display().to_string());
        move |pid, start_ticks| {
            store.record_later(EventKind::ProcessStarted { task, role, pid, start_ticks, log });
        }
    }

    /// Journals that the process of `call` ended.
    pub fn ended(&self, call: &RoleCall, pid: u32, ending: Ending, usage: Usage) {
        self.store.record_later(EventKind::ProcessEnded {
            task: call.task_id.clone(),
            role: call.role,
            pid,
            exit_code: match ending {
                Ending::Exited(code) => Some(code),
                _ => None,
            },
            outcome: match ending {
                Ending::Exited(_) => "exited",
                Ending::Signaled(_) => "signaled",
                Ending::TimedOut => "timeout",
                Ending::Stalled => "stalled",
                Ending::Cancelled => "cancelled",
            }
            .into(),
            usage,
        });
    }
}

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
    command: command::CommandBackend,
    claude: agent::AgentBackend,
    codex: agent::AgentBackend,
    scripted: scripted::ScriptedBackend,
    /// Numbers the invocations of the run (their process markers).
    invocations: std::sync::atomic::AtomicU64,
    /// The run files, for journaling waits.
    store: RunStore,
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
    pub write_sets: std::collections::BTreeMap<String, breeze_agents::WriteSetCheck>,
    /// The simulator's settings per task (`[task.sim]`).
    pub sims: std::collections::BTreeMap<String, scripted::SimSpec>,
    /// The run's budget.
    pub budget: Arc<crate::budget::Budget>,
}

impl RoleRunner {
    pub fn new(parts: RoleRunnerParts) -> RoleRunner {
        let store = parts.store.clone();
        let log = ProcessLog { store: parts.store };
        let write_sets = Arc::new(parts.write_sets);
        // Logins a killed engine left in this run's role homes go before any role starts.
        crate::role_home::sweep(&crate::role_home::homes_root(&parts.run_dir));
        let agent = |kind| agent::AgentBackend {
            kind,
            supervisor: parts.supervisor.clone(),
            log: log.clone(),
            repo_root: parts.repo_root.clone(),
            engine_env: parts.engine_env.clone(),
            write_sets: write_sets.clone(),
        };
        RoleRunner {
            claude: agent(breeze_agents::AgentKind::Claude),
            codex: agent(breeze_agents::AgentKind::Codex),
            command: command::CommandBackend { supervisor: parts.supervisor.clone(), log },
            scripted: scripted::ScriptedBackend::new(parts.sims, write_sets.clone()),
            config: parts.config,
            run_dir: parts.run_dir,
            run_id: parts.run_id,
            repo_root: parts.repo_root,
            engine_env: parts.engine_env,
            guard: parts.guard,
            budget: parts.budget,
            watches: Default::default(),
            invocations: Default::default(),
            store,
        }
    }

    /// Waits out a backend's trouble before `role` of `task` is called again: journaled,
    /// logged with the task named, cut short by `cancel`. Err: the bound is used up (or no
    /// login), and the run stops resumably.
    pub async fn wait_out(
        &self,
        backoff: &mut backoff::Backoff,
        trouble: &Trouble,
        task: &str,
        role: Role,
        cancel: &CancellationToken,
    ) -> Result<(), crate::error::EngineError> {
        let who = format!("the {} of task {task}", role.as_str());
        let wait = backoff.next_wait(trouble, &who)?;
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

    /// The repository root.
    pub fn repo_root(&self) -> &Path {
        &self.repo_root
    }

    fn backend(&self, kind: BackendKind) -> &dyn Backend {
        match kind {
            BackendKind::Command => &self.command,
            BackendKind::Claude => &self.claude,
            BackendKind::Codex => &self.codex,
            BackendKind::Scripted => &self.scripted,
        }
    }

    /// Runs `call` to its end: in a private scratch folder, confined where the kernel can,
    /// checked afterwards for what it changed outside its lane.
    pub async fn invoke(&self, mut call: RoleCall, cancel: &CancellationToken) -> RoleReply {
        let settings = self.config.role(call.role).clone();
        let files = self.call_files(&call);
        let failed = |message: String| {
            RoleReply::of(RoleOutcome::CouldNotStart(message), files.log_path.clone())
        };
        let input_text = match serde_json::to_vec_pretty(&call.input) {
            Ok(text) => text,
            Err(err) => return failed(format!("cannot serialize the role input: {err}")),
        };
        if let Err(err) = std::fs::write(&files.input_path, input_text) {
            return failed(format!("cannot write {}: {err}", files.input_path.display()));
        }
        let _ = std::fs::remove_file(&files.record_path);
        // A short path under the system temp folder: CLIs put sockets there, whose paths
        // are limited to 108 bytes. Removed with everything in it when the role is done.
        let scratch = match tempfile::Builder::new().prefix("breeze-").tempdir() {
            Ok(dir) => dir,
            Err(err) => return failed(format!("cannot create a scratch folder: {err}")),
        };
        call.prompt.push_str(&prompt::answer_instructions(call.role, settings.backend));
        let env = self.role_env(&call, &settings, &files.input_path, scratch.path());
        // A worker's git works on its lane's private git directory while it runs; the lane
        // check after it (also on every early return below) points the lane back.
        let private_git = match self.seal_lane(&call).await {
            Ok(dir) => dir,
            Err(message) => return failed(message),
        };
        let confinement = match self.confinement_of(&call, &settings, scratch.path(), &env) {
            Ok(confinement) => confinement,
            Err(message) => {
                self.release_lane(&call).await;
                return failed(message);
            }
        };
        let marker = format!(
            "{}/{}",
            self.run_id,
            self.invocations.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let guard = self.guard.clone();
        let watch = match tokio::task::spawn_blocking(move || guard.before()).await {
            Ok(Ok(watch)) => watch,
            Ok(Err(err)) => {
                self.release_lane(&call).await;
                return failed(format!("cannot take the state before the role: {err}"));
            }
            Err(err) => {
                self.release_lane(&call).await;
                return failed(format!("cannot take the state before the role: {err}"));
            }
        };
        // A worker's activity: its lane's watch, started when the lane was taken (started
        // here only for a worktree that has none).
        let activity = match (call.role, &call.lane) {
            (Role::Worker, Some(_)) => {
                let (watches, cwd) = (self.watches.clone(), call.cwd.clone());
                tokio::task::spawn_blocking(move || watches.watch(&cwd, false)).await.ok()
            }
            _ => None,
        };
        let mut run = Invocation {
            call: &call,
            activity,
            max_budget_usd: None,
            settings,
            env,
            output_path: scratch.path().join("output.json"),
            record_path: files.record_path,
            log_path: files.log_path,
            scratch: scratch.path().to_path_buf(),
            confinement,
            private_git,
            marker,
        };
        let mut reply = self.metered(&mut run, cancel).await;
        self.check_after(&mut reply, watch, call.lane.clone()).await;
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
    /// variables, the scratch folder as `TMPDIR`, `$BREEZE_OUTPUT` for `command` roles, and
    /// for `claude`/`codex` roles their own CLI home as `CLAUDE_CONFIG_DIR` / `CODEX_HOME`
    /// ([`crate::role_home`]; it wins over the person's own, which the role never writes).
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
        if settings.backend == BackendKind::Command {
            set.push(("BREEZE_OUTPUT".into(), scratch.join("output.json").display().to_string()));
        }
        if let Some(kind) = crate::role_home::agent_kind(settings.backend) {
            let home = crate::role_home::home_dir(&self.run_dir, &call.task_id, call.role);
            set.push((kind.home_var().into(), home.display().to_string()));
        }
        set.extend(lane_vars(call));
        let mut env = breeze_supervise::scrubbed_env(engine_env, &settings.env, &set);
        // Named in the role's `env` or not, a shared build folder is never a lane's.
        crate::tool_caches::without_output_dirs(&mut env);
        env
    }

    /// Seals a worker's lane (`RoleGuard::seal_lane`): its private git directory, or `None`
    /// for other roles. Err: why the worker cannot start.
    async fn seal_lane(&self, call: &RoleCall) -> Result<Option<PathBuf>, String> {
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
                Err(format!("cannot prepare the worker's private git directory: {err}"))
            }
            Err(err) => Err(format!("cannot prepare the worker's private git directory: {err}")),
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
    fn confinement_of(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
        scratch: &Path,
        env: &[(String, String)],
    ) -> Result<Option<Confinement>, String> {
        let lane_git = match &call.lane {
            Some(lane) => self.guard.lane_git_writable(lane),
            None => Vec::new(),
        };
        self.guard
            .containment
            .confinement(call.role, settings.backend, &call.cwd, &lane_git, scratch, env)
            .map_err(|err| err.to_string())
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

/// Keeps a role's result in the run files, for the record.
fn keep_for_the_record(record_path: &Path, value: &Value) {
    let _ = std::fs::write(record_path, serde_json::to_vec_pretty(value).unwrap_or_default());
}

/// The last few lines of stderr, else of stdout: what a human needs to see of a failure.
fn diagnostics(stderr: &str, stdout: &str) -> String {
    let source = if stderr.trim().is_empty() { stdout } else { stderr };
    let lines: Vec<&str> = source.lines().filter(|line| !line.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(20);
    crate::advice::bound_text(&lines[start..].join("\n"), 4096)
}
