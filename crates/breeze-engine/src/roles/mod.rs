//! Running a role once, whatever its backend: the protocol of DESIGN §5.
//!
//! [`RoleRunner::invoke`] writes the role's structured input to `$BREEZE_INPUT`, runs the
//! backend with the rendered prompt on stdin and a scrubbed environment, journals the
//! process, and returns the JSON result — from `$BREEZE_OUTPUT`, else the last JSON
//! object on stdout — for the caller to validate against the expected message type.

pub mod backoff;
pub mod definition;
pub mod prompt;
pub mod scripted;
pub mod strict_schema;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use breeze_agents::{AgentCall, AgentKind};
use breeze_protocol::{EventKind, MessageKind, Role, Usage};
use breeze_supervise::{ActivityProbe, Confinement, DirActivity, Ending, ProcessSpec, Supervisor};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{BackendKind, Config, RoleConfig};
use crate::containment::RoleGuard;
use crate::journal::Journal;
use crate::run_dir::{RunDir, file_slug};
use scripted::{ScriptedReply, SimSpec};

/// Grace between SIGTERM and SIGKILL for role processes.
const GRACE: Duration = Duration::from_secs(5);

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
    /// The worker's lane (its git needs to write the lane's index and new objects).
    pub lane: Option<breeze_git::Worktree>,
}

/// How a role invocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleEnding {
    /// Exited with a code.
    Exited(i32),
    /// Killed by a signal it did not get from breeze.
    Signaled(i32),
    /// Wall-clock timeout.
    TimedOut,
    /// No output and no worktree change for the stall timeout.
    Stalled,
    /// breeze is shutting down.
    Cancelled,
    /// It could not be started (program missing, not executable).
    SpawnFailed(String),
}

impl std::fmt::Display for RoleEnding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Stalled => f.write_str("stalled (no output and no file changes)"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::SpawnFailed(message) => write!(f, "could not start: {message}"),
        }
    }
}

/// What a role invocation produced.
#[derive(Debug, Clone)]
pub struct RoleReply {
    /// How it ended.
    pub ending: RoleEnding,
    /// The JSON result, if one was found.
    pub result: Option<Value>,
    /// Why there is no result, if there is none.
    pub result_error: Option<String>,
    /// The end of stderr (or stdout), for error messages and failure signatures.
    pub diagnostics: String,
    /// Cost and tokens.
    pub usage: Usage,
    /// Backend session id, to continue later.
    pub session_id: Option<String>,
    /// The backend failed rather than the task (a rate limit, a passing API error, no
    /// login): the call is waited out or the run stops; it never counts as an attempt.
    pub trouble: Option<backoff::Trouble>,
    /// The session's running totals, for the next `resume_baseline`.
    pub session_usage: Option<Usage>,
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
    /// A reply with `ending` and nothing else: no result, usage or session. Backends
    /// fill in what they know with struct update syntax.
    fn ended(ending: RoleEnding, log_path: PathBuf) -> RoleReply {
        RoleReply {
            ending,
            result: None,
            result_error: None,
            diagnostics: String::new(),
            usage: Usage::default(),
            session_id: None,
            trouble: None,
            session_usage: None,
            write_violations: Vec::new(),
            escaped: Vec::new(),
            lane_problems: Vec::new(),
            log_path,
        }
    }

    /// A role that could not be started.
    fn spawn_failed(message: String, log_path: PathBuf) -> RoleReply {
        RoleReply::ended(RoleEnding::SpawnFailed(message), log_path)
    }
}

/// One invocation on its way to a backend: the call, its role's settings, the role's
/// environment (scrubbed, with the protocol variables), its result file and log stem.
struct Invocation<'a> {
    call: &'a RoleCall,
    settings: RoleConfig,
    env: Vec<(String, String)>,
    /// `$BREEZE_OUTPUT` of a `command` role (in its scratch folder).
    output_path: PathBuf,
    /// Where the result is kept for the record (`io/…output.json`).
    record_path: PathBuf,
    log_path: PathBuf,
    /// The role's private scratch folder (`TMPDIR`).
    scratch: PathBuf,
    /// What the kernel lets it write, when roles are confined.
    confinement: Option<Confinement>,
    /// Marks every process of this invocation (see `breeze_supervise::MARKER_VAR`).
    marker: String,
}

/// Runs roles for one run.
pub(crate) struct RoleRunner {
    pub config: Config,
    pub run_dir: RunDir,
    pub run_id: String,
    pub repo_root: PathBuf,
    pub journal: Arc<Journal>,
    pub supervisor: Supervisor,
    /// The engine's environment, the source of each role's scrubbed one.
    pub engine_env: Vec<(String, String)>,
    /// `[task.sim]` of each task, for the scripted backend.
    pub sims: BTreeMap<String, SimSpec>,
    /// Each task's write set, for the scripted worker and the agents' write checks.
    pub write_sets: BTreeMap<String, breeze_agents::WriteSetCheck>,
    /// Calls per (task, role) so far, for the simulator's "first call" behaviours.
    pub called: std::sync::Mutex<BTreeMap<(String, Role), u32>>,
    /// Confinement and the checks around every role process.
    pub guard: Arc<RoleGuard>,
    /// Numbers the invocations of the run (their process markers).
    pub invocations: std::sync::atomic::AtomicU64,
}

impl RoleRunner {
    /// The repository root.
    pub fn repo_root(&self) -> &std::path::Path {
        &self.repo_root
    }

    /// Runs `call` to its end: in a private scratch folder, confined where the kernel can,
    /// checked afterwards for what it changed outside its lane.
    pub async fn invoke(&self, mut call: RoleCall, cancel: &CancellationToken) -> RoleReply {
        let settings = self.config.role(call.role).clone();
        let slug = file_slug(&call.task_id);
        let role_name = call.role.as_str();
        let input_path = self.run_dir.io_file(&slug, role_name, &call.label, "input");
        let record_path = self.run_dir.io_file(&slug, role_name, &call.label, "output");
        // A call that repeats an earlier one's label (resumed after a stop) keeps both logs.
        let mut log_path = self.run_dir.log(&slug, role_name, &call.label);
        let mut again = 1;
        while breeze_supervise::stream_log_paths(&log_path).0.exists() {
            again += 1;
            log_path = self.run_dir.log(&slug, role_name, &format!("{}.again-{again}", call.label));
        }
        let failed = |message: String| RoleReply::spawn_failed(message, log_path.clone());
        let input_text = match serde_json::to_vec_pretty(&call.input) {
            Ok(text) => text,
            Err(err) => return failed(format!("cannot serialize the role input: {err}")),
        };
        if let Err(err) = std::fs::write(&input_path, input_text) {
            return failed(format!("cannot write {}: {err}", input_path.display()));
        }
        let _ = std::fs::remove_file(&record_path);
        // A short path under the system temp folder: CLIs put sockets there, whose paths
        // are limited to 108 bytes. Removed with everything in it when the role is done.
        let scratch = match tempfile::Builder::new().prefix("breeze-").tempdir() {
            Ok(dir) => dir,
            Err(err) => return failed(format!("cannot create a scratch folder: {err}")),
        };
        let scratch_path = scratch.path().to_path_buf();
        let output_path = scratch_path.join("output.json");
        call.prompt.push_str(&prompt::answer_instructions(call.role, settings.backend));
        // BREEZE_* variables of the engine's own environment are not passed: the protocol
        // variables are the only ones a role should trust.
        let engine_env =
            self.engine_env.iter().filter(|(name, _)| !name.starts_with("BREEZE_")).cloned();
        let mut set = self.protocol_env(&call, &input_path);
        for name in ["TMPDIR", "TMP", "TEMP"] {
            set.push((name.into(), scratch_path.display().to_string()));
        }
        if settings.backend == BackendKind::Command {
            set.push(("BREEZE_OUTPUT".into(), output_path.display().to_string()));
        }
        let env = breeze_supervise::scrubbed_env(engine_env, &settings.env, &set);
        let lane_git = match &call.lane {
            Some(lane) => match self.guard.lane_git_writable(lane) {
                Ok(paths) => paths,
                Err(err) => return failed(err.to_string()),
            },
            None => Vec::new(),
        };
        let confinement = match self.guard.containment.confinement(
            call.role,
            settings.backend,
            &call.cwd,
            &lane_git,
            &scratch_path,
            &env,
        ) {
            Ok(confinement) => confinement,
            Err(err) => return failed(err.to_string()),
        };
        let marker = format!(
            "{}/{}",
            self.run_id,
            self.invocations.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let guard = self.guard.clone();
        let watch = match tokio::task::spawn_blocking(move || guard.before()).await {
            Ok(Ok(watch)) => watch,
            Ok(Err(err)) => return failed(format!("cannot take the state before the role: {err}")),
            Err(err) => return failed(format!("cannot take the state before the role: {err}")),
        };
        let run = Invocation {
            call: &call,
            settings,
            env,
            output_path,
            record_path,
            log_path,
            scratch: scratch_path,
            confinement,
            marker,
        };
        let mut reply = match run.settings.backend {
            BackendKind::Command => self.run_command(&run, cancel).await,
            BackendKind::Scripted => self.run_scripted(&run, cancel).await,
            BackendKind::Claude => self.run_agent(AgentKind::Claude, &run, cancel).await,
            BackendKind::Codex => self.run_agent(AgentKind::Codex, &run, cancel).await,
        };
        let guard = self.guard.clone();
        let lane = call.lane.clone();
        let checked = tokio::task::spawn_blocking(move || {
            let escaped = guard.after(watch)?;
            let lane_problems = match &lane {
                Some(lane) => guard.check_lane_links(lane)?,
                None => Vec::new(),
            };
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
        drop(scratch);
        reply
    }

    /// Journals the start of a role process (called right after the spawn).
    fn journal_start(
        &self,
        call: &RoleCall,
        log_path: &std::path::Path,
    ) -> impl FnOnce(u32, Option<u64>) + Send + use<> {
        let journal = self.journal.clone();
        let (task, role, log) = (call.task_id.clone(), call.role, log_path.display().to_string());
        move |pid, start_ticks| {
            let _ = journal.record(EventKind::ProcessStarted { task, role, pid, start_ticks, log });
        }
    }

    /// Journals the end of a role process, so `resume` does not look for it.
    fn journal_end(&self, call: &RoleCall, pid: u32, ending: &RoleEnding, usage: Usage) {
        let _ = self.journal.record(EventKind::ProcessEnded {
            task: call.task_id.clone(),
            role: call.role,
            pid,
            exit_code: match ending {
                RoleEnding::Exited(code) => Some(*code),
                _ => None,
            },
            outcome: ending_word(ending).into(),
            usage,
        });
    }

    /// The protocol's environment variables for a call.
    fn protocol_env(&self, call: &RoleCall, input: &std::path::Path) -> Vec<(String, String)> {
        vec![
            ("BREEZE_ROLE".into(), call.role.as_str().into()),
            ("BREEZE_RUN_ID".into(), self.run_id.clone()),
            ("BREEZE_TASK_ID".into(), call.task_id.clone()),
            ("BREEZE_ATTEMPT".into(), call.attempt.to_string()),
            ("BREEZE_ROUND".into(), call.round.to_string()),
            ("BREEZE_INPUT".into(), input.display().to_string()),
            ("BREEZE_WORKTREE".into(), call.cwd.display().to_string()),
            ("BREEZE_BASE".into(), call.base.clone()),
        ]
    }

    async fn run_command(&self, run: &Invocation<'_>, cancel: &CancellationToken) -> RoleReply {
        let Invocation { call, settings, env, output_path, record_path, log_path, .. } = run;
        let log_path = log_path.clone();
        let mut spec = ProcessSpec::new(settings.command.clone(), &call.cwd, &log_path);
        spec.env = env.clone();
        spec.stdin = call.prompt.clone().into_bytes();
        spec.timeout = Some(settings.timeout);
        spec.stall_timeout = Some(settings.stall_timeout);
        spec.grace = GRACE;
        spec.confinement = run.confinement.clone();
        spec.marker = Some(run.marker.clone());
        let activity: Option<Arc<dyn ActivityProbe>> = match call.role {
            Role::Worker => Some(Arc::new(DirActivity::new(&call.cwd))),
            _ => None,
        };
        let on_spawn = self.journal_start(call, &log_path);
        let outcome =
            self.supervisor.run(spec, activity, cancel.clone(), on_spawn, |_line| {}).await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(err) => return RoleReply::spawn_failed(err.to_string(), log_path),
        };
        let ending = map_ending(outcome.ending);
        self.journal_end(call, outcome.pid, &ending, Usage::default());
        let (result, result_error) = read_result(output_path, record_path, outcome.last_json);
        RoleReply {
            result,
            result_error,
            diagnostics: diagnostics(&outcome.stderr_tail, &outcome.stdout_tail),
            ..RoleReply::ended(ending, log_path)
        }
    }

    async fn run_agent(
        &self,
        kind: AgentKind,
        run: &Invocation<'_>,
        cancel: &CancellationToken,
    ) -> RoleReply {
        let Invocation { call, settings, env, record_path, log_path, .. } = run;
        let log_path = log_path.clone();
        let definition = definition::load(&self.repo_root, call.role)
            .unwrap_or_else(|_| definition::builtin(call.role));
        let mut agent = AgentCall::new(kind, call.role, &call.cwd, call.prompt.clone(), &log_path);
        agent.env = env.clone();
        agent.engine_env = self.engine_env.clone();
        agent.pass_credentials = settings.pass_credentials;
        agent.timeout = settings.timeout;
        agent.stall_timeout = settings.stall_timeout;
        // `roles.<role>.model` wins; otherwise Claude Code gets the role definition's model
        // (`opus`, `sonnet`: aliases it knows). Codex keeps its own default: those names
        // mean nothing to it.
        agent.model = match kind {
            AgentKind::Claude if settings.model.is_empty() => definition.model.clone(),
            _ => settings.model.clone(),
        };
        agent.extra_args = settings.args.clone();
        agent.allowed_tools = definition.tools.clone();
        agent.disallowed_tools = definition.disallowed_tools.clone();
        agent.max_turns = definition.max_turns;
        agent.resume_session = call.resume_session.clone();
        agent.resume_baseline = call.resume_baseline;
        agent.scratch_dir = run.scratch.clone();
        agent.confinement = run.confinement.clone();
        agent.marker = Some(run.marker.clone());
        // Every role answers with its final message, in the shape its schema forces.
        let message_kind = match call.role {
            Role::Advisor => Some(MessageKind::AdvisorResponse),
            Role::Reviewer => Some(MessageKind::ReviewResult),
            Role::Worker => Some(MessageKind::WorkerReport),
            Role::Scaffolder => None,
        };
        agent.output_schema = message_kind.map(|message| match kind {
            AgentKind::Codex => strict_schema::strict(message.schema()),
            AgentKind::Claude => message.schema().clone(),
        });
        if call.role == Role::Worker {
            agent.in_write_set = self.write_sets.get(&call.task_id).cloned();
        }
        let on_spawn = self.journal_start(call, &log_path);
        let result =
            breeze_agents::run_agent(&self.supervisor, agent, cancel.clone(), on_spawn).await;
        let result = match result {
            Ok(result) => result,
            Err(err) => {
                let message =
                    format!("{err} (is the {} CLI installed and on PATH?)", kind.as_str());
                return RoleReply::spawn_failed(message, log_path);
            }
        };
        let ending = map_ending(result.ending);
        self.journal_end(call, result.pid, &ending, result.usage);
        // The agent's final answer; kept for the record like a command role's file. Codex's
        // strict form spells left-out optional properties as null: those are taken out.
        let answer = match (kind, message_kind, result.answer.clone()) {
            (AgentKind::Codex, Some(message), Some(answer)) => {
                Some(strict_schema::without_optional_nulls(answer, message.schema()))
            }
            (_, _, answer) => answer,
        };
        let (result_value, result_error) = (answer, result.answer_error.clone());
        if let Some(answer) = &result_value {
            let _ =
                std::fs::write(record_path, serde_json::to_vec_pretty(answer).unwrap_or_default());
        }
        let failure_text = result.failure.as_ref().map(ToString::to_string);
        // A failure the CLI reported (auth, API error, max turns) is a failed attempt even
        // when the process exited 0.
        let ending = match (&ending, &result.failure) {
            (RoleEnding::Exited(0), Some(failure)) if !failure.is_limit() => RoleEnding::Exited(1),
            _ => ending,
        };
        RoleReply {
            result: if result.failure.is_some() { None } else { result_value },
            result_error: failure_text.or(result_error),
            diagnostics: result.diagnostics.clone(),
            usage: result.usage,
            session_id: result.session_id.clone(),
            trouble: result.failure.as_ref().and_then(trouble_of),
            session_usage: result.session_usage,
            write_violations: result.write_violations.clone(),
            ..RoleReply::ended(ending, log_path)
        }
    }

    async fn run_scripted(&self, run: &Invocation<'_>, cancel: &CancellationToken) -> RoleReply {
        let Invocation { call, settings, log_path, .. } = run;
        let log_path = log_path.clone();
        let sim = self.sims.get(&call.task_id).cloned().unwrap_or_default();
        let call_number = {
            let mut called = self.called.lock().unwrap_or_else(|p| p.into_inner());
            let count = called.entry((call.task_id.clone(), call.role)).or_default();
            *count += 1;
            *count
        };
        let first_call = call_number == 1;
        if let Some(trouble) = sim.trouble(call.role, call_number) {
            let (stdout_log, stderr_log) = breeze_supervise::stream_log_paths(&log_path);
            let _ = std::fs::write(stdout_log, "");
            let _ = std::fs::write(stderr_log, format!("{}\n", trouble.message()));
            return RoleReply {
                diagnostics: trouble.message().to_string(),
                trouble: Some(trouble),
                ..RoleReply::ended(RoleEnding::Exited(1), log_path)
            };
        }
        let matcher = self.write_sets.get(&call.task_id).cloned();
        let in_write_set = move |path: &str| matcher.as_ref().is_none_or(|matches| matches(path));
        // The simulator runs in-process; the same clocks a process gets apply to it: the
        // stall timeout (it makes no output while it runs) and the wall-clock timeout.
        let limit = settings.stall_timeout.min(settings.timeout);
        let limit_ending = if settings.stall_timeout <= settings.timeout {
            RoleEnding::Stalled
        } else {
            RoleEnding::TimedOut
        };
        // A simulated hang is a future that never finishes: the clocks above end it.
        let play = async {
            match scripted::play(call.role, &call.input, &call.cwd, &sim, first_call, &in_write_set)
                .await
            {
                ScriptedReply::Hang => std::future::pending().await,
                exited => exited,
            }
        };
        let (ending, stdout, stderr) = tokio::select! {
            reply = tokio::time::timeout(limit, play) => match reply {
                Ok(ScriptedReply::Exited { exit_code, stdout, stderr }) => {
                    (RoleEnding::Exited(exit_code), stdout, stderr)
                }
                Ok(ScriptedReply::Hang) | Err(_) => (limit_ending, String::new(), String::new()),
            },
            () = cancel.cancelled() => (RoleEnding::Cancelled, String::new(), String::new()),
        };
        self.scripted_reply(ending, stdout, stderr, log_path)
    }

    /// Writes the simulated output to the log files, as a process's would be, and reads the
    /// result from stdout.
    fn scripted_reply(
        &self,
        ending: RoleEnding,
        stdout: String,
        stderr: String,
        log_path: PathBuf,
    ) -> RoleReply {
        let (stdout_log, stderr_log) = breeze_supervise::stream_log_paths(&log_path);
        let _ = std::fs::write(stdout_log, &stdout);
        let _ = std::fs::write(stderr_log, &stderr);
        let (result, result_error) = match breeze_supervise::last_json_object(stdout.as_bytes()) {
            Some(value) => (Some(value), None),
            None => (None, Some("no JSON object on stdout".to_string())),
        };
        RoleReply {
            result,
            result_error,
            diagnostics: diagnostics(&stderr, &stdout),
            ..RoleReply::ended(ending, log_path)
        }
    }
}

/// The backend's part of an agent's failure, if it is one.
fn trouble_of(failure: &breeze_agents::AgentFailure) -> Option<backoff::Trouble> {
    use breeze_agents::AgentFailure;
    let message = failure.to_string();
    match failure {
        failure if failure.is_limit() => {
            Some(backoff::Trouble::Limited { retry_after: failure.retry_after(), message })
        }
        AgentFailure::Auth { .. } => Some(backoff::Trouble::Auth { message }),
        failure if failure.is_transient() => Some(backoff::Trouble::Transient { message }),
        _ => None,
    }
}

fn map_ending(ending: Ending) -> RoleEnding {
    match ending {
        Ending::Exited(code) => RoleEnding::Exited(code),
        Ending::Signaled(signal) => RoleEnding::Signaled(signal),
        Ending::TimedOut => RoleEnding::TimedOut,
        Ending::Stalled => RoleEnding::Stalled,
        Ending::Cancelled => RoleEnding::Cancelled,
    }
}

fn ending_word(ending: &RoleEnding) -> &'static str {
    match ending {
        RoleEnding::Exited(_) => "exited",
        RoleEnding::Signaled(_) => "signaled",
        RoleEnding::TimedOut => "timeout",
        RoleEnding::Stalled => "stalled",
        RoleEnding::Cancelled => "cancelled",
        RoleEnding::SpawnFailed(_) => "spawn-failed",
    }
}

/// The result of a `command` role: `$BREEZE_OUTPUT` if the role wrote it (read with a size
/// bound, links and special files refused), else the last JSON object on stdout. A result
/// found is copied to `record_path` for the record.
fn read_result(
    output_path: &std::path::Path,
    record_path: &std::path::Path,
    last_json: Option<Value>,
) -> (Option<Value>, Option<String>) {
    let read = breeze_supervise::read_role_file(output_path, breeze_supervise::MAX_ROLE_FILE_BYTES);
    let (value, error) = match read {
        Ok(Some(bytes)) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => (Some(value), None),
            Err(err) => (None, Some(format!("$BREEZE_OUTPUT is not valid JSON: {err}"))),
        },
        Ok(None) => match last_json {
            Some(value) => (Some(value), None),
            None => (None, Some("no $BREEZE_OUTPUT file and no JSON object on stdout".to_string())),
        },
        Err(err) => (None, Some(format!("$BREEZE_OUTPUT refused: {err}"))),
    };
    if let Some(value) = &value {
        let _ = std::fs::write(record_path, serde_json::to_vec_pretty(value).unwrap_or_default());
    }
    (value, error)
}

/// The last few lines of stderr, else of stdout: what a human needs to see of a failure.
fn diagnostics(stderr: &str, stdout: &str) -> String {
    let source = if stderr.trim().is_empty() { stdout } else { stderr };
    let lines: Vec<&str> = source.lines().filter(|line| !line.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(20);
    crate::advice::bound_text(&lines[start..].join("\n"), 4096)
}
