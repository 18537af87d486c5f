//! What to run ([`AgentCall`]) and what came back ([`AgentResult`], [`AgentFailure`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use breeze_protocol::{Role, Usage};
use breeze_supervise::Ending;
use serde_json::Value;

/// Decides whether a worktree-relative path (`src/lib.rs`, `/`-separated) is in the task's
/// write set.
pub type WriteSetCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Which agent CLI runs the role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// Claude Code: `claude -p --output-format stream-json --verbose`.
    Claude,
    /// OpenAI Codex: `codex exec --json`.
    Codex,
}

impl AgentKind {
    /// The config spelling and the default program name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }

    /// Name patterns of this CLI's own credential and configuration variables, copied from
    /// the engine's environment only when [`AgentCall::pass_credentials`] is set.
    pub fn credential_patterns(self) -> &'static [&'static str] {
        match self {
            Self::Claude => &["ANTHROPIC_*", "CLAUDE_*"],
            Self::Codex => &["OPENAI_*", "CODEX_*"],
        }
    }

    /// The variable that moves this CLI's whole state folder: `CLAUDE_CONFIG_DIR` (claude
    /// then keeps `.claude.json`, `settings.json`, `CLAUDE.md`, `projects/`, `sessions/` …
    /// inside it) or `CODEX_HOME`.
    pub fn home_var(self) -> &'static str {
        match self {
            Self::Claude => "CLAUDE_CONFIG_DIR",
            Self::Codex => "CODEX_HOME",
        }
    }

    /// The CLI home `env` sets ([`home_var`](Self::home_var)), if it names an absolute path.
    pub fn home_in(self, env: &[(String, String)]) -> Option<PathBuf> {
        env.iter()
            .find(|(name, _)| name == self.home_var())
            .map(|(_, value)| PathBuf::from(value))
            .filter(|home| home.is_absolute())
    }

    /// Arguments that keep the CLI from loading configuration and instructions from its
    /// working folder, which a task can write: claude `--setting-sources user` (no
    /// `.claude/settings*.json` hooks, no `CLAUDE.md`/`AGENTS.md`, no `.claude/agents`,
    /// `skills`, `commands`, no `.mcp.json` servers of the folder or its parents; the user
    /// settings and memory in its home still load); codex `-c project_doc_max_bytes=0` (no
    /// `AGENTS.md` of the folder; `$CODEX_HOME/AGENTS.md` still loads) and
    /// `-c skills.include_instructions=false` (no skills list, which would include the
    /// folder's `.agents/skills` and `.codex/skills`, read even in an untrusted project).
    /// Found by running claude 2.1.332 and codex 0.171.0.
    pub fn no_project_config_args(self) -> &'static [&'static str] {
        match self {
            Self::Claude => &["--setting-sources", "user"],
            Self::Codex => {
                &["-c", "project_doc_max_bytes=0", "-c", "skills.include_instructions=false"]
            }
        }
    }
}

/// Where an agent CLI keeps its state (login, settings, sessions, history): the person's own
/// (from the engine's environment), or a role's home (from the role's, which sets
/// [`AgentKind::home_var`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatePaths {
    /// Folders (created by the caller if missing).
    pub dirs: Vec<PathBuf>,
    /// Single files (created empty by the caller if missing).
    pub files: Vec<PathBuf>,
}

impl AgentKind {
    /// The state this CLI reads and writes with environment `env`: claude
    /// `$CLAUDE_CONFIG_DIR` (else `~/.claude/` and `~/.claude.json`); codex `$CODEX_HOME`
    /// (else `~/.codex/`). Empty without a `HOME` and without the override.
    pub fn state_paths(self, env: &[(String, String)]) -> StatePaths {
        let var = |name: &str| {
            env.iter().find(|(key, _)| key == name).map(|(_, value)| PathBuf::from(value))
        };
        let home = var("HOME").filter(|home| home.is_absolute());
        let (override_var, dir, file) = match self {
            Self::Claude => ("CLAUDE_CONFIG_DIR", ".claude", Some(".claude.json")),
            Self::Codex => ("CODEX_HOME", ".codex", None),
        };
        if let Some(dir) = var(override_var).filter(|dir| dir.is_absolute()) {
            return StatePaths { dirs: vec![dir], files: Vec::new() };
        }
        let Some(home) = home else { return StatePaths::default() };
        StatePaths {
            dirs: vec![home.join(dir)],
            files: file.map(|file| home.join(file)).into_iter().collect(),
        }
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of a role through an agent CLI.
#[derive(Clone)]
pub struct AgentCall {
    /// Which CLI.
    pub kind: AgentKind,
    /// Which role: decides what it may write (workers write their worktree; the advisor,
    /// the reviewer and the scaffolder are read-only).
    pub role: Role,
    /// `claude` / `codex`, or a path; resolved in the `PATH` of [`env`](Self::env).
    pub program: String,
    /// The task worktree (the process's working directory).
    pub cwd: PathBuf,
    /// The full prompt. It always goes to stdin, never into argv (it may exceed the
    /// 128 KiB per-argument limit, and argv is visible to every user in `ps`).
    pub prompt: String,
    /// The scrubbed environment built by the engine (including `BREEZE_*`).
    pub env: Vec<(String, String)>,
    /// Add this CLI's credential variables ([`AgentKind::credential_patterns`]) from
    /// [`engine_env`](Self::engine_env). Off: the CLI uses the login in its home.
    pub pass_credentials: bool,
    /// The role's own CLI home: set as [`AgentKind::home_var`] in the CLI's environment,
    /// whatever `env` or the credential variables say. The caller fills it (login,
    /// settings, instructions) before the run. `None`: the CLI's state is wherever `env`
    /// puts it.
    pub home: Option<PathBuf>,
    /// The engine's own environment, the source of the credential variables.
    pub engine_env: Vec<(String, String)>,
    /// Stem of the raw logs (`<log_path>.stdout` / `.stderr`).
    pub log_path: PathBuf,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// No output and (for writing roles) no worktree change for this long = stalled.
    pub stall_timeout: Duration,
    /// Between SIGTERM and SIGKILL when the process is stopped.
    pub grace: Duration,
    /// Advisor/reviewer: force the final answer to this JSON Schema (claude
    /// `--json-schema`, codex `--output-schema <file>`).
    pub output_schema: Option<Value>,
    /// Continue this claude `session_id` / codex `thread_id` (a worker's fix round).
    pub resume_session: Option<String>,
    /// With `resume_session`: the [`AgentResult::session_usage`] of the previous run of that
    /// session. Codex reports the thread's running total after a resume; this is
    /// subtracted so that [`AgentResult::usage`] is this run's alone. Without it a resumed
    /// codex run's usage includes the earlier runs.
    pub resume_baseline: Option<Usage>,
    /// Model name; empty = the CLI's default.
    pub model: String,
    /// Extra CLI arguments from the config (`roles.<role>.args`), placed before the
    /// tool lists (claude) or before the prompt marker (codex).
    pub extra_args: Vec<String>,
    /// Tools offered to the role (role definition `tools`; claude only). Editing tools in
    /// it are approved only inside the worktree and the scratch folder; the others are
    /// approved as they are. Empty: claude's default set, with the same approvals.
    pub allowed_tools: Vec<String>,
    /// Tools the role may not use (role definition `disallowedTools`; claude only).
    pub disallowed_tools: Vec<String>,
    /// What the kernel lets the CLI write (breeze's Landlock confinement). Confined, codex
    /// runs its commands without its own sandbox, which runs no command at all inside
    /// another ruleset. Not confined: codex's sandbox keeps writes in the worktree and the
    /// scratch folder (not `/tmp`).
    pub confinement: Option<breeze_supervise::Confinement>,
    /// Where the CLI may connect (a network namespace of its own and the proxy's
    /// allow-list); `None`: wherever the engine can.
    pub network: Option<breeze_supervise::NetworkAccess>,
    /// Marks every process of the run, so descendants that leave the CLI's process group
    /// end with it (`breeze_supervise::ProcessSpec::marker`).
    pub marker: Option<String>,
    /// Turn limit (role definition `maxTurns`; claude only).
    pub max_turns: Option<u32>,
    /// What this call may spend, in US dollars (claude `--max-budget-usd`, checked by the
    /// CLI after each model response; codex has no such option). The engine passes what is
    /// left of the task's and the run's budget.
    pub max_budget_usd: Option<f64>,
    /// Worker: checks each file write as it appears in the stream.
    pub in_write_set: Option<WriteSetCheck>,
    /// The role's private scratch folder (its `TMPDIR`); also holds the codex
    /// `--output-schema` file.
    pub scratch_dir: PathBuf,
    /// A worker's private git directory (its lane's `.git` names it while it runs): where
    /// its git writes besides the worktree. Unconfined, codex's sandbox gets it as a
    /// writable root.
    pub private_git: Option<PathBuf>,
    /// What tells the stall clock that a writing role is working without printing (the
    /// engine passes its lane's [`breeze_supervise::TreeWatch`]). `None`: a writing role
    /// gets a watch of its own over `cwd`, a read-only role none.
    pub activity: Option<Arc<dyn breeze_supervise::ActivityProbe>>,
}

impl AgentCall {
    /// A call with the defaults: program = the CLI's name, empty env, no credentials,
    /// 45 min timeout, 600 s stall timeout, no schema, no resume, no tool lists, no
    /// write check, scratch dir = the directory of `log_path`. Set the public fields for
    /// the rest.
    pub fn new(
        kind: AgentKind,
        role: Role,
        cwd: impl Into<PathBuf>,
        prompt: impl Into<String>,
        log_path: impl Into<PathBuf>,
    ) -> AgentCall {
        let log_path = log_path.into();
        let scratch_dir = log_path.parent().map(PathBuf::from).unwrap_or_default();
        AgentCall {
            kind,
            role,
            program: kind.as_str().to_owned(),
            cwd: cwd.into(),
            prompt: prompt.into(),
            env: Vec::new(),
            pass_credentials: false,
            home: None,
            engine_env: Vec::new(),
            log_path,
            timeout: Duration::from_secs(45 * 60),
            stall_timeout: Duration::from_secs(600),
            grace: breeze_supervise::ProcessSpec::DEFAULT_GRACE,
            output_schema: None,
            resume_session: None,
            resume_baseline: None,
            model: String::new(),
            extra_args: Vec::new(),
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            max_turns: None,
            max_budget_usd: None,
            in_write_set: None,
            confinement: None,
            network: None,
            marker: None,
            scratch_dir,
            private_git: None,
            activity: None,
        }
    }

    /// Whether the role may change files (worker) or is read-only (advisor, reviewer,
    /// scaffolder).
    pub fn writes(&self) -> bool {
        role_writes(self.role)
    }

    /// Whether breeze confines the CLI with the kernel.
    pub fn confined(&self) -> bool {
        self.confinement.is_some()
    }
}

/// Whether a role changes files: only workers. The scaffolder proposes write sets in its
/// answer and changes nothing itself.
pub(crate) fn role_writes(role: Role) -> bool {
    matches!(role, Role::Worker)
}

impl fmt::Debug for AgentCall {
    // By hand: the write-set closure has no Debug, and the prompt and the engine's
    // environment (which holds secrets) must not end up in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentCall")
            .field("kind", &self.kind)
            .field("role", &self.role)
            .field("program", &self.program)
            .field("cwd", &self.cwd)
            .field("prompt_bytes", &self.prompt.len())
            .field("env_names", &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("pass_credentials", &self.pass_credentials)
            .field("home", &self.home)
            .field("log_path", &self.log_path)
            .field("timeout", &self.timeout)
            .field("stall_timeout", &self.stall_timeout)
            .field("output_schema", &self.output_schema.is_some())
            .field("resume_session", &self.resume_session)
            .field("resume_baseline", &self.resume_baseline)
            .field("model", &self.model)
            .field("extra_args", &self.extra_args)
            .field("allowed_tools", &self.allowed_tools)
            .field("disallowed_tools", &self.disallowed_tools)
            .field("max_turns", &self.max_turns)
            .field("in_write_set", &self.in_write_set.is_some())
            .field("private_git", &self.private_git)
            .field("confinement", &self.confinement)
            .field("network", &self.network)
            .field("marker", &self.marker)
            .field("scratch_dir", &self.scratch_dir)
            .field("activity", &self.activity.is_some())
            .finish()
    }
}

/// Why an agent run did not produce a usable answer, classified so that the engine can
/// treat limits apart from task failures.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentFailure {
    /// Requests were throttled (HTTP 429, 529 overloaded, "rate limit", a rejected claude
    /// `rate_limit_event`). Wait and retry; not the task's fault.
    RateLimited {
        /// The CLI's words.
        message: String,
        /// When to retry, if the CLI said.
        retry_after: Option<Duration>,
    },
    /// A usage allowance or the billing quota is exhausted ("usage limit", "quota",
    /// "credit balance"). Park the run until it resets; not the task's fault.
    Quota {
        /// The CLI's words.
        message: String,
        /// When it resets, if the CLI said.
        retry_after: Option<Duration>,
    },
    /// The CLI is not logged in or its credentials were refused.
    Auth {
        /// The CLI's words.
        message: String,
    },
    /// The model API failed in another way (5xx, invalid request).
    Api {
        /// HTTP status, if reported.
        status: Option<u16>,
        /// The CLI's words.
        message: String,
    },
    /// The turn limit (`--max-turns`) was reached before an answer.
    MaxTurns {
        /// The CLI's words.
        message: String,
    },
    /// The agent ran and reported a failure of the task itself (claude
    /// `error_during_execution`, a codex `turn.failed` not classified above, ...).
    Failed {
        /// The CLI's words.
        message: String,
    },
    /// The stream ended without its final line (`result` / `turn.completed`), or the CLI
    /// exited non-zero or was killed by a signal of its own.
    Crashed {
        /// What was seen.
        message: String,
    },
    /// breeze ended the process: wall-clock timeout, stall, or cancellation.
    Terminated {
        /// Which of the three.
        ending: Ending,
    },
}

impl AgentFailure {
    /// A rate limit or an exhausted quota: retry later, do not count it against the task.
    pub fn is_limit(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Quota { .. })
    }

    /// When to retry, for limits that said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Quota { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A failure of the model API that passes by itself: a 5xx, an overloaded or cut
    /// stream, a reset connection. Retry after a pause; not the task's fault.
    pub fn is_transient(&self) -> bool {
        const PHRASES: &[&str] = &[
            "stream disconnected",
            "stream ended",
            "connection reset",
            "econnreset",
            "socket hang up",
            "connection closed",
            "internal server error",
            "bad gateway",
            "service unavailable",
            "gateway timeout",
            "upstream connect error",
            "network error",
            "fetch failed",
            "error sending request",
        ];
        let transient_text = |message: &str| {
            let lower = message.to_lowercase();
            PHRASES.iter().any(|phrase| lower.contains(phrase))
        };
        match self {
            Self::Api { status: Some(status), .. } => (500..600).contains(status),
            Self::Api { status: None, message }
            | Self::Failed { message }
            | Self::Crashed { message } => transient_text(message),
            _ => false,
        }
    }

    /// A short machine-friendly name: `rate-limited`, `quota`, `auth`, `api`, `max-turns`,
    /// `failed`, `crashed`, `terminated`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate-limited",
            Self::Quota { .. } => "quota",
            Self::Auth { .. } => "auth",
            Self::Api { .. } => "api",
            Self::MaxTurns { .. } => "max-turns",
            Self::Failed { .. } => "failed",
            Self::Crashed { .. } => "crashed",
            Self::Terminated { .. } => "terminated",
        }
    }
}

impl fmt::Display for AgentFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let retry = |f: &mut fmt::Formatter<'_>, after: &Option<Duration>| match after {
            Some(after) => write!(f, " (retry in {}s)", after.as_secs()),
            None => Ok(()),
        };
        match self {
            Self::RateLimited { message, retry_after } => {
                write!(f, "rate limited: {message}")?;
                retry(f, retry_after)
            }
            Self::Quota { message, retry_after } => {
                write!(f, "usage quota exhausted: {message}")?;
                retry(f, retry_after)
            }
            Self::Auth { message } => write!(
                f,
                "authentication failed: {message} (log the CLI in as the user breeze runs as, \
                 or set pass_credentials = true for the role and export the API key)"
            ),
            Self::Api { status: Some(status), message } => {
                write!(f, "model API error (HTTP {status}): {message}")
            }
            Self::Api { status: None, message } => write!(f, "model API error: {message}"),
            Self::MaxTurns { message } => write!(f, "turn limit reached: {message}"),
            Self::Failed { message } => write!(f, "the agent reported a failure: {message}"),
            Self::Crashed { message } => write!(f, "the agent crashed: {message}"),
            Self::Terminated { ending } => write!(f, "stopped by breeze: {ending}"),
        }
    }
}

/// What an agent run produced.
#[derive(Debug, Clone)]
pub struct AgentResult {
    /// How the process ended.
    pub ending: Ending,
    /// Its pid (= process group id).
    pub pid: u32,
    /// The role's JSON answer: claude's `structured_output`, else the last JSON object in
    /// the final `result` text; codex: the last `agent_message` (a JSON string under
    /// `--output-schema`), else the last JSON object in it.
    pub answer: Option<Value>,
    /// Why there is no answer (no `result` line, `is_error`, `turn.failed`, no JSON in the
    /// final text, ...).
    pub answer_error: Option<String>,
    /// The classified failure, if the run failed.
    pub failure: Option<AgentFailure>,
    /// Claude `session_id` / codex `thread_id`, to resume.
    pub session_id: Option<String>,
    /// The model the CLI reported (claude `system/init`), if any.
    pub model: Option<String>,
    /// Cost (claude only) and tokens of this run. `input_tokens` counts all input tokens
    /// including cached ones; `cached_input_tokens` is the part read from cache.
    pub usage: Usage,
    /// The session's running totals, where the CLI reports them (claude: the whole
    /// session's cost and tokens, earlier runs included; codex: the thread's tokens). Keep
    /// it to pass as [`AgentCall::resume_baseline`] when resuming the session.
    pub session_usage: Option<Usage>,
    /// Worktree-relative paths (or absolute ones outside the worktree) the agent wrote or
    /// tried to write outside the write set, in order of first appearance.
    pub write_violations: Vec<String>,
    /// Stream lines that were not JSON (kept in the raw log only).
    pub malformed_lines: u64,
    /// Where the backend's usage windows stood at the end of the call, as far as the CLI
    /// reported them (subscriptions only): claude's `rate_limit_event`, codex's last
    /// `token_count` rate limits of the thread.
    pub windows: Vec<breeze_protocol::UsageWindow>,
    /// Short human text for errors: the failure, notes from the stream, the stderr tail.
    pub diagnostics: String,
    /// The raw stdout log.
    pub stdout_log: PathBuf,
    /// The raw stderr log.
    pub stderr_log: PathBuf,
}

impl AgentResult {
    /// Exited 0 with an answer and no failure.
    pub fn succeeded(&self) -> bool {
        self.ending.is_success() && self.failure.is_none() && self.answer.is_some()
    }
}
