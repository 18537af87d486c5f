//! Running an agent CLI under the supervisor and turning its stream into an
//! [`AgentResult`].

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use breeze_supervise::{ActivityProbe, Ending, Outcome, ProcessSpec, SpawnError, Supervisor};
use tokio_util::sync::CancellationToken;

use crate::args::{codex_schema_path, command_line};
use crate::call::{AgentCall, AgentFailure, AgentKind, AgentResult};
use crate::classify::{classify_text, failure_for, retry_after_in_text};
use crate::claude::{ClaudeStream, strongest};
use crate::codex::CodexStream;
use crate::parsed::{Parsed, clip, tail, usage_since};

/// Longest stream line handed to the parsers. Claude's `result` line carries the whole
/// final text (and the structured answer) on one line; the supervisor's 1 MiB default
/// could cut it. One line of this size is the most the parser holds at a time.
pub const AGENT_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The diagnostics text is cut to about this many bytes.
const MAX_DIAGNOSTICS: usize = 4096;

/// An agent run could not be started.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The supervisor could not start the CLI (not found, not executable, no worktree...).
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The codex `--output-schema` file could not be written.
    #[error(
        "cannot write the codex output schema file {}: {source}; check that the scratch \
         directory exists and is writable",
        path.display()
    )]
    SchemaFile {
        /// The file.
        path: PathBuf,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },
}

/// Either parser.
#[allow(clippy::large_enum_variant)] // One per run, on the stack of `run_agent`.
enum Stream {
    Claude(ClaudeStream),
    Codex(CodexStream),
}

impl Stream {
    fn new(call: &AgentCall) -> Stream {
        let check = call.in_write_set.clone().map(|check| (call.cwd.as_path(), check));
        let schema = call.output_schema.is_some();
        match call.kind {
            AgentKind::Claude => Stream::Claude(ClaudeStream::new(check, schema)),
            AgentKind::Codex => Stream::Codex(CodexStream::new(check, schema)),
        }
    }

    fn feed(&mut self, line: &str) {
        match self {
            Stream::Claude(stream) => stream.feed(line),
            Stream::Codex(stream) => stream.feed(line),
        }
    }

    fn finish(self, now: SystemTime) -> Parsed {
        match self {
            Stream::Claude(stream) => stream.finish_at(now),
            Stream::Codex(stream) => stream.finish_at(now),
        }
    }
}

/// The environment the CLI gets: `call.env`, plus — only with `pass_credentials` — the
/// engine's variables matching [`AgentKind::credential_patterns`] (`ANTHROPIC_*`,
/// `CLAUDE_*` / `OPENAI_*`, `CODEX_*`). Values already in `call.env` win. The role's home
/// ([`AgentCall::home`]) wins over both: `CLAUDE_CONFIG_DIR` / `CODEX_HOME`. Sorted by name.
pub fn agent_env(call: &AgentCall) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = call.env.iter().cloned().collect();
    if let Some(home) = &call.home {
        env.insert(call.kind.home_var().to_string(), home.display().to_string());
    }
    if call.pass_credentials {
        let patterns = call.kind.credential_patterns();
        for (name, value) in &call.engine_env {
            let matches = patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == p,
            });
            if matches && !env.contains_key(name) {
                env.insert(name.clone(), value.clone());
            }
        }
    }
    env.into_iter().collect()
}

/// Runs one role through its agent CLI and reads its stream as it arrives.
///
/// - argv from [`command_line`]; the prompt on stdin; the environment from [`agent_env`];
///   for codex with a schema, the schema file is written first (atomically).
/// - Writing roles (worker, scaffolder) get the worktree as their activity probe (the
///   call's [`AgentCall::activity`], else a [`breeze_supervise::TreeWatch`] of their own),
///   so a long build without output is not a stall; read-only roles are judged on output.
/// - `on_spawn(pid, start_ticks)` runs right after the spawn (journal it).
///
/// Every way the CLI can end — a missing `result`, malformed lines, `is_error`, a
/// timeout — is an [`AgentResult`]; only a CLI that cannot be started is an error.
pub async fn run_agent(
    supervisor: &Supervisor,
    call: AgentCall,
    cancel: CancellationToken,
    on_spawn: impl FnOnce(u32, Option<u64>) + Send,
) -> Result<AgentResult, AgentError> {
    if let (Some(path), Some(schema)) = (codex_schema_path(&call), &call.output_schema) {
        // Codex sends the schema in OpenAI's strict mode, which accepts only a subset.
        let strict = crate::strict::codex_strict_schema(schema);
        write_atomically(&path, strict.to_string().as_bytes())
            .map_err(|source| AgentError::SchemaFile { path, source })?;
    }
    let mut spec = ProcessSpec::new(command_line(&call), &call.cwd, &call.log_path);
    spec.env = agent_env(&call);
    spec.stdin = call.prompt.clone().into_bytes();
    spec.timeout = Some(call.timeout);
    spec.stall_timeout = Some(call.stall_timeout);
    spec.grace = call.grace;
    spec.max_line_bytes = AGENT_MAX_LINE_BYTES;
    spec.confinement = call.confinement.clone();
    spec.network = call.network.clone();
    spec.marker = call.marker.clone();
    let activity: Option<Arc<dyn ActivityProbe>> = match &call.activity {
        Some(probe) if call.writes() => Some(probe.clone()),
        Some(_) => None,
        None => call.writes().then(|| {
            Arc::new(breeze_supervise::TreeWatch::start(&call.cwd)) as Arc<dyn ActivityProbe>
        }),
    };
    tracing::debug!(kind = %call.kind, role = %call.role, argv = ?spec.argv, "starting agent CLI");

    let mut stream = Stream::new(&call);
    let outcome =
        supervisor.run(spec, activity, cancel, on_spawn, |line| stream.feed(line)).await?;
    let mut parsed = stream.finish(SystemTime::now());
    // Codex's strict form spells optional properties it left out as null: taken out again,
    // so the answer reads as the original schema means it.
    if let (AgentKind::Codex, Some(schema)) = (call.kind, &call.output_schema) {
        parsed.answer = parsed
            .answer
            .take()
            .map(|answer| crate::strict::without_optional_nulls(answer, schema));
    }
    if call.kind == AgentKind::Codex
        && call.resume_session.is_some()
        && let (Some(total), Some(earlier)) = (&parsed.session_usage, &call.resume_baseline)
    {
        parsed.usage = usage_since(total, earlier);
    }
    if let (AgentKind::Codex, Some(home), Some(thread)) =
        (call.kind, &call.home, &parsed.session_id)
    {
        parsed.windows = crate::windows::codex_windows(home, thread, SystemTime::now());
    }
    Ok(combine(call.kind, parsed, outcome, SystemTime::now()))
}

/// Writes a file through a temporary sibling and a rename, so that a reader never sees it
/// half-written.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // Unique per process and call: concurrent calls may write the same schema file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}-{unique}", std::process::id()));
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// Merges what the stream said with how the process ended.
fn combine(kind: AgentKind, mut parsed: Parsed, outcome: Outcome, now: SystemTime) -> AgentResult {
    let stderr = outcome.stderr_tail.trim();
    let final_line = match kind {
        AgentKind::Claude => "`result` line",
        AgentKind::Codex => "`turn.completed`",
    };
    match outcome.ending {
        Ending::TimedOut | Ending::Stalled | Ending::Cancelled => {
            // A limit the CLI reported is the better explanation of a CLI that waited
            // until it was killed; anything else is breeze's termination.
            if !parsed.failure.as_ref().is_some_and(AgentFailure::is_limit) {
                parsed.failure = Some(AgentFailure::Terminated { ending: outcome.ending });
            }
            if !parsed.finished {
                parsed.answer_error = Some(format!(
                    "{kind} {} before its {final_line} ({} lines read)",
                    outcome.ending, parsed.lines
                ));
            }
        }
        Ending::Exited(code) if code != 0 => {
            let what = format!("{kind} exited with code {code}");
            parsed.failure = Some(match parsed.failure.take() {
                None => {
                    AgentFailure::Crashed { message: format!("{what} after reporting success") }
                }
                Some(AgentFailure::Crashed { message }) => {
                    crash_or_stderr_class(format!("{what}: {message}"), stderr, now)
                }
                Some(other) => other,
            });
        }
        Ending::Exited(_) => {
            if let Some(AgentFailure::Crashed { message }) = parsed.failure.take() {
                parsed.failure = Some(crash_or_stderr_class(message, stderr, now));
            }
        }
        Ending::Signaled(_) => {
            let what = format!("{kind} was {}", outcome.ending);
            parsed.failure = Some(match parsed.failure.take() {
                None | Some(AgentFailure::Crashed { .. }) => crash_or_stderr_class(
                    format!("{what} ({} lines read)", parsed.lines),
                    stderr,
                    now,
                ),
                Some(other) => other,
            });
        }
    }
    let diagnostics = diagnostics(kind, &outcome, &parsed);
    AgentResult {
        ending: outcome.ending,
        pid: outcome.pid,
        answer: parsed.answer,
        answer_error: parsed.answer_error,
        failure: parsed.failure,
        session_id: parsed.session_id,
        model: parsed.model,
        usage: parsed.usage,
        session_usage: parsed.session_usage,
        write_violations: parsed.write_violations,
        malformed_lines: parsed.malformed_lines,
        windows: parsed.windows,
        diagnostics,
        stdout_log: outcome.stdout_log,
        stderr_log: outcome.stderr_log,
    }
}

/// A crash, unless the CLI's stderr explains it as a limit or a login problem (a CLI
/// that fails before its stream starts says why on stderr only).
fn crash_or_stderr_class(message: String, stderr: &str, now: SystemTime) -> AgentFailure {
    let stderr = tail(stderr, 2000);
    match strongest(&[classify_text(stderr)]) {
        Some(class) => {
            let retry = retry_after_in_text(stderr, now);
            failure_for(class, clip(last_lines(stderr, 3), 500), retry)
        }
        None => AgentFailure::Crashed { message },
    }
}

/// The last `n` non-empty lines of `text`.
fn last_lines(text: &str, n: usize) -> &str {
    let trimmed = text.trim_end();
    let mut start = trimmed.len();
    for _ in 0..n {
        match trimmed[..start].trim_end().rfind('\n') {
            Some(at) => start = at,
            None => return trimmed.trim_start(),
        }
    }
    trimmed[start..].trim()
}

/// Short human text: what ended how, the failure, why there is no answer, notes, stderr.
fn diagnostics(kind: AgentKind, outcome: &Outcome, parsed: &Parsed) -> String {
    let mut parts = vec![format!("{kind} {}", outcome.ending)];
    if let Some(failure) = &parsed.failure {
        parts.push(failure.to_string());
    }
    // A failure the CLI reported is why there is no answer, and the answer error only
    // repeats it; after breeze ended the process, it says how far the stream got.
    let failure_explains = parsed
        .failure
        .as_ref()
        .is_some_and(|failure| !matches!(failure, AgentFailure::Terminated { .. }));
    if let Some(error) = parsed.answer_error.as_ref().filter(|_| !failure_explains) {
        parts.push(format!("no answer: {error}"));
    }
    if !parsed.write_violations.is_empty() {
        let more = match parsed.write_violations_dropped {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        parts.push(format!(
            "wrote outside the write set: {}{more}",
            parsed.write_violations.join(", ")
        ));
    }
    if parsed.malformed_lines > 0 {
        parts.push(format!(
            "{} of {} stream lines were not JSON (see {})",
            parsed.malformed_lines,
            parsed.lines,
            outcome.stdout_log.display()
        ));
    }
    parts.extend(parsed.notes.iter().cloned());
    if let Some(error) = &outcome.log_error {
        parts.push(format!("log incomplete: {error}"));
    }
    let stderr = outcome.stderr_tail.trim();
    if !stderr.is_empty() && !outcome.ending.is_success() {
        parts.push(format!("stderr: {}", tail(stderr, 1000)));
    }
    clip(&parts.join("; "), MAX_DIAGNOSTICS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_added_only_when_configured() {
        let mut call =
            AgentCall::new(AgentKind::Claude, breeze_protocol::Role::Worker, "/wt", "p", "/logs/x");
        call.env =
            vec![("PATH".into(), "/bin".into()), ("CLAUDE_CONFIG_DIR".into(), "/mine".into())];
        call.engine_env = vec![
            ("ANTHROPIC_API_KEY".into(), "sk-ant".into()),
            ("CLAUDE_CONFIG_DIR".into(), "/engine".into()),
            ("CLAUDE_CODE_OAUTH_TOKEN".into(), "oauth".into()),
            ("OPENAI_API_KEY".into(), "sk-openai".into()),
            ("GITHUB_TOKEN".into(), "ghp".into()),
        ];
        let names =
            |env: Vec<(String, String)>| env.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(names(agent_env(&call)), ["CLAUDE_CONFIG_DIR", "PATH"]);
        call.pass_credentials = true;
        let env = agent_env(&call);
        assert_eq!(
            names(env.clone()),
            ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "PATH"]
        );
        assert!(env.contains(&("CLAUDE_CONFIG_DIR".into(), "/mine".into())), "explicit values win");
        call.kind = AgentKind::Codex;
        assert_eq!(names(agent_env(&call)), ["CLAUDE_CONFIG_DIR", "OPENAI_API_KEY", "PATH"]);
    }

    #[test]
    fn the_roles_own_home_wins_over_the_environment_and_the_credentials() {
        let mut call =
            AgentCall::new(AgentKind::Claude, breeze_protocol::Role::Worker, "/wt", "p", "/logs/x");
        call.env = vec![("CLAUDE_CONFIG_DIR".into(), "/home/u/.claude".into())];
        call.engine_env = vec![("CLAUDE_CONFIG_DIR".into(), "/engine".into())];
        call.pass_credentials = true;
        call.home = Some("/run/homes/1.worker".into());
        let value = |env: Vec<(String, String)>, name: &str| {
            env.into_iter().find(|(key, _)| key == name).map(|(_, value)| value)
        };
        assert_eq!(
            value(agent_env(&call), "CLAUDE_CONFIG_DIR").as_deref(),
            Some("/run/homes/1.worker")
        );
        call.kind = AgentKind::Codex;
        let env = agent_env(&call);
        assert_eq!(value(env.clone(), "CODEX_HOME").as_deref(), Some("/run/homes/1.worker"));
        assert_eq!(AgentKind::Codex.home_in(&env), Some("/run/homes/1.worker".into()));
        assert_eq!(AgentKind::Codex.home_in(&[("CODEX_HOME".into(), "rel".into())]), None);
    }

    #[test]
    fn last_lines_are_found() {
        assert_eq!(last_lines("a\nb\nc\nd\n", 2), "c\nd");
        assert_eq!(last_lines("only", 3), "only");
        assert_eq!(last_lines("a\n\nb\n", 5), "a\n\nb");
    }
}
