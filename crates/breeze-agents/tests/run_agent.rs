//! `run_agent` end to end: the fake `claude` and `codex` of `tests/fake-bin/` are put on
//! the role's PATH, record their argv, stdin and environment, and replay recorded streams.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_agents::{AgentCall, AgentError, AgentFailure, AgentKind, AgentResult, run_agent};
use breeze_protocol::Role;
use breeze_supervise::{Ending, SpawnError, Supervisor};
use common::{fake_bin, fixture, src_only};
use serde_json::json;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A worktree, a log directory and the fake CLI's record files in one temporary directory.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("wt/src")).unwrap();
        Setup { dir }
    }

    fn worktree(&self) -> PathBuf {
        self.dir.path().join("wt")
    }

    fn record(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A call of `kind`/`role` replaying `fixture_name`, with the fake CLIs first on PATH.
    fn call(&self, kind: AgentKind, role: Role, fixture_name: &str) -> AgentCall {
        let mut call = AgentCall::new(
            kind,
            role,
            self.worktree(),
            "Implement task 2.",
            self.dir.path().join("run/logs/2-worker-1"),
        );
        call.scratch_dir = self.dir.path().join("run/scratch");
        let path =
            format!("{}:{}", fake_bin().display(), std::env::var("PATH").unwrap_or_default());
        call.env = vec![
            ("PATH".into(), path),
            ("HOME".into(), self.dir.path().display().to_string()),
            ("BREEZE_ROLE".into(), role.as_str().into()),
            ("FAKE_AGENT_ARGV".into(), self.record("argv").display().to_string()),
            ("FAKE_AGENT_STDIN".into(), self.record("stdin").display().to_string()),
            ("FAKE_AGENT_ENV".into(), self.record("env").display().to_string()),
            (
                "FAKE_AGENT_FIXTURE".into(),
                fixture(kind.as_str(), fixture_name).display().to_string(),
            ),
        ];
        call.engine_env = vec![
            ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
            ("OPENAI_API_KEY".into(), "sk-openai-test".into()),
            ("CODEX_HOME".into(), "/engine/codex-home".into()),
            ("GITHUB_TOKEN".into(), "ghp_test".into()),
        ];
        call.timeout = Duration::from_secs(120);
        call.stall_timeout = Duration::from_secs(120);
        if matches!(role, Role::Worker | Role::Scaffolder) {
            call.in_write_set = Some(src_only());
        }
        call
    }

    fn argv(&self) -> Vec<String> {
        let bytes = std::fs::read(self.record("argv")).expect("the fake CLI recorded its argv");
        let text = String::from_utf8(bytes).unwrap();
        text.split_terminator('\0').map(str::to_owned).collect()
    }

    fn stdin(&self) -> String {
        std::fs::read_to_string(self.record("stdin")).expect("the fake CLI recorded its stdin")
    }

    fn env_names(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.record("env")).unwrap();
        let mut names: Vec<String> =
            text.lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k.to_owned()).collect();
        names.sort();
        names
    }
}

fn supervisor() -> Supervisor {
    Supervisor::new()
        .with_watchdog_interval(Duration::from_millis(50))
        .with_leak_timeout(Duration::from_millis(300))
}

/// Runs `call`, checking that `on_spawn` reported the pid the result names.
async fn run(call: AgentCall) -> AgentResult {
    let spawned = Arc::new(Mutex::new(None));
    let seen = spawned.clone();
    let result = run_agent(&supervisor(), call, CancellationToken::new(), move |pid, _| {
        *seen.lock().unwrap() = Some(pid);
    })
    .await
    .expect("the fake CLI starts");
    assert_eq!(*spawned.lock().unwrap(), Some(result.pid), "on_spawn got the pid");
    assert!(result.answer.is_some() != result.answer_error.is_some(), "{result:?}");
    result
}

fn with_env(mut call: AgentCall, name: &str, value: &str) -> AgentCall {
    call.env.push((name.into(), value.into()));
    call
}

#[tokio::test]
async fn claude_worker_fix_round_resumes_its_session_with_the_prompt_on_stdin() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Worker, "worker-success");
    // Larger than Linux's 128 KiB per-argument limit: only stdin can carry it.
    let prompt =
        format!("Fix the review gaps.\n{}\nEND OF PROMPT", "context line\n".repeat(20_000));
    call.prompt = prompt.clone();
    call.resume_session = Some("5f1c2a7e-8b3d-4e6f-9a0b-1c2d3e4f5a6b".into());
    call.model = "sonnet".into();
    call.max_turns = Some(100);
    call.allowed_tools = vec!["Read".into(), "Write".into(), "Edit".into(), "Bash".into()];
    call.disallowed_tools = vec!["Agent".into()];
    let result = run(call).await;

    let wt = setup.dir.path().join("wt");
    let scratch = setup.dir.path().join("run/scratch");
    assert_eq!(
        setup.argv(),
        [
            "-p".to_string(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--permission-mode".into(),
            "dontAsk".into(),
            "--setting-sources".into(),
            "user".into(),
            "--model".into(),
            "sonnet".into(),
            "--max-turns".into(),
            "100".into(),
            "--resume".into(),
            "5f1c2a7e-8b3d-4e6f-9a0b-1c2d3e4f5a6b".into(),
            "--tools".into(),
            "Read,Write,Edit,Bash".into(),
            "--allowedTools".into(),
            format!("Edit(/{}/**)", wt.display()),
            format!("Edit(/{}/**)", scratch.display()),
            "Read".into(),
            "Bash".into(),
            "--disallowedTools".into(),
            "Agent".into(),
            "AskUserQuestion".into(),
        ]
    );
    assert_eq!(setup.stdin(), prompt);
    assert_eq!(result.ending, Ending::Exited(0));
    assert!(result.succeeded(), "{}", result.diagnostics);
    assert_eq!(result.session_id.as_deref(), Some("5f1c2a7e-8b3d-4e6f-9a0b-1c2d3e4f5a6b"));
    assert_eq!(result.answer.as_ref().unwrap()["status"], "completed");
    assert_eq!(result.usage.input_tokens, 21 + 6241 + 48210);
    assert_eq!(result.usage.output_tokens, 1187);
    assert!((result.usage.cost_usd.unwrap() - 0.04127).abs() < 1e-9);
    assert!(result.write_violations.is_empty(), "{:?}", result.write_violations);
    // The raw stream is in the log, byte for byte as printed (with the real worktree path).
    let log = std::fs::read_to_string(&result.stdout_log).unwrap();
    assert!(log.contains(&format!("{}/src/greet.rs", setup.worktree().display())));
    assert_eq!(log.lines().count(), 10);
}

#[tokio::test]
async fn claude_worker_write_outside_the_write_set_is_reported_as_it_streams() {
    let setup = Setup::new();
    let result = run(setup.call(AgentKind::Claude, Role::Worker, "worker-write-outside")).await;
    assert_eq!(result.write_violations, ["docs/NOTES.md"]);
    assert!(
        result.diagnostics.contains("wrote outside the write set: docs/NOTES.md"),
        "{}",
        result.diagnostics
    );
}

#[tokio::test]
async fn claude_reviewer_is_read_only_and_answers_through_the_schema() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Reviewer, "reviewer-success");
    let schema = json!({"type": "object", "required": ["schema_version", "verdict", "gaps"]});
    call.output_schema = Some(schema.clone());
    call.disallowed_tools = vec!["Write".into(), "Edit".into(), "Bash".into(), "Agent".into()];
    let result = run(call).await;

    let argv = setup.argv();
    let at = |flag: &str| {
        argv.iter().position(|a| a == flag).unwrap_or_else(|| panic!("{flag} in {argv:?}"))
    };
    assert_eq!(argv[at("--permission-mode") + 1], "dontAsk");
    let passed: serde_json::Value = serde_json::from_str(&argv[at("--json-schema") + 1]).unwrap();
    assert_eq!(passed, schema);
    assert_eq!(
        argv[at("--disallowedTools") + 1..],
        ["Write", "Edit", "Bash", "Agent", "AskUserQuestion", "MultiEdit", "NotebookEdit"]
    );
    assert!(!argv.iter().any(|a| a.contains("dangerously")));
    assert_eq!(result.answer.as_ref().unwrap()["verdict"], "REQUEST_CHANGES");
    assert_eq!(result.failure, None);
}

#[tokio::test]
async fn claude_not_logged_in_is_an_auth_failure_despite_subtype_success() {
    let setup = Setup::new();
    let call =
        with_env(setup.call(AgentKind::Claude, Role::Worker, "auth-error"), "FAKE_AGENT_EXIT", "1");
    let result = run(call).await;
    assert_eq!(result.ending, Ending::Exited(1));
    assert!(!result.succeeded());
    assert_eq!(result.answer, None);
    assert!(
        matches!(&result.failure, Some(AgentFailure::Auth { message }) if message.contains("Not logged in")),
        "{:?}",
        result.failure
    );
    assert!(result.diagnostics.contains("pass_credentials"), "{}", result.diagnostics);
}

#[tokio::test]
async fn claude_rate_limit_and_quota_are_limits_not_task_failures() {
    let setup = Setup::new();
    let call =
        with_env(setup.call(AgentKind::Claude, Role::Worker, "rate-limit"), "FAKE_AGENT_EXIT", "1");
    let result = run(call).await;
    let failure = result.failure.expect("a failure");
    assert!(matches!(failure, AgentFailure::RateLimited { .. }), "{failure:?}");
    assert!(failure.is_limit());
    // The reset time in the fixture has passed: retry at once.
    assert_eq!(failure.retry_after(), Some(Duration::ZERO));

    let setup = Setup::new();
    let call = with_env(
        setup.call(AgentKind::Claude, Role::Advisor, "usage-limit"),
        "FAKE_AGENT_EXIT",
        "1",
    );
    let result = run(call).await;
    assert!(matches!(result.failure, Some(AgentFailure::Quota { .. })), "{:?}", result.failure);
}

#[tokio::test]
async fn claude_max_turns_is_reported() {
    let setup = Setup::new();
    let call =
        with_env(setup.call(AgentKind::Claude, Role::Worker, "max-turns"), "FAKE_AGENT_EXIT", "1");
    let result = run(call).await;
    assert!(matches!(result.failure, Some(AgentFailure::MaxTurns { .. })), "{:?}", result.failure);
    assert!(
        (result.usage.cost_usd.unwrap() - 0.02254).abs() < 1e-9,
        "the cost of a failed attempt still counts"
    );
}

#[tokio::test]
async fn claude_malformed_lines_do_not_hide_the_result() {
    let setup = Setup::new();
    let result = run(setup.call(AgentKind::Claude, Role::Worker, "malformed")).await;
    assert!(result.succeeded(), "{}", result.diagnostics);
    assert_eq!(result.malformed_lines, 5);
    assert_eq!(result.answer.as_ref().unwrap()["task"], "3");
}

#[tokio::test]
async fn claude_truncated_stream_is_a_crash_even_with_exit_zero() {
    let setup = Setup::new();
    let result = run(setup.call(AgentKind::Claude, Role::Worker, "truncated")).await;
    assert_eq!(result.ending, Ending::Exited(0));
    assert!(!result.succeeded());
    assert_eq!(result.session_id.as_deref(), Some("e5f6a7b8-c9d0-4e1f-8a2b-4c5d6e7f8a9b"));
    assert!(matches!(result.failure, Some(AgentFailure::Crashed { .. })), "{:?}", result.failure);
    assert!(result.answer_error.unwrap().contains("without a `result` line"));
    assert!(result.usage.input_tokens > 0, "tokens seen before the cut are kept");
}

#[tokio::test]
async fn a_cli_failing_before_its_stream_is_classified_from_stderr() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Worker, "worker-success");
    call.env.retain(|(k, _)| k != "FAKE_AGENT_FIXTURE");
    let call = with_env(call, "FAKE_AGENT_STDERR", "Error: Invalid API key · Please run /login");
    let call = with_env(call, "FAKE_AGENT_EXIT", "1");
    let result = run(call).await;
    assert!(
        matches!(&result.failure, Some(AgentFailure::Auth { message }) if message.contains("Invalid API key")),
        "{:?}",
        result.failure
    );
    assert!(
        result.diagnostics.contains("stderr: Error: Invalid API key"),
        "{}",
        result.diagnostics
    );

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Worker, "worker-success");
    call.env.retain(|(k, _)| k != "FAKE_AGENT_FIXTURE");
    let call = with_env(call, "FAKE_AGENT_STDERR", "Error: the sandbox could not be set up");
    let call = with_env(call, "FAKE_AGENT_EXIT", "2");
    let result = run(call).await;
    match &result.failure {
        Some(AgentFailure::Crashed { message }) => {
            assert_eq!(
                message,
                "codex exited with code 2: the stream ended without `turn.completed` after 0 lines"
            );
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[tokio::test]
async fn credentials_reach_the_cli_only_when_configured() {
    let setup = Setup::new();
    run(setup.call(AgentKind::Claude, Role::Worker, "worker-success")).await;
    let names = setup.env_names();
    assert!(
        !names.iter().any(|n| n.starts_with("ANTHROPIC_") || n.starts_with("OPENAI_")),
        "{names:?}"
    );
    assert!(!names.contains(&"GITHUB_TOKEN".to_owned()));
    assert!(names.contains(&"BREEZE_ROLE".to_owned()));

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Worker, "worker-success");
    call.pass_credentials = true;
    run(call).await;
    let names = setup.env_names();
    assert!(names.contains(&"ANTHROPIC_API_KEY".to_owned()), "{names:?}");
    assert!(!names.contains(&"OPENAI_API_KEY".to_owned()), "another CLI's key stays out");
    assert!(!names.contains(&"GITHUB_TOKEN".to_owned()));

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Worker, "worker-success");
    call.pass_credentials = true;
    run(call).await;
    let names = setup.env_names();
    assert!(
        names.contains(&"OPENAI_API_KEY".to_owned()) && names.contains(&"CODEX_HOME".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"ANTHROPIC_API_KEY".to_owned()));
}

#[tokio::test]
async fn the_cli_runs_with_the_roles_own_home_even_with_credentials_passed() {
    for (kind, var) in [(AgentKind::Claude, "CLAUDE_CONFIG_DIR"), (AgentKind::Codex, "CODEX_HOME")]
    {
        let setup = Setup::new();
        let mut call = setup.call(kind, Role::Worker, "worker-success");
        call.pass_credentials = true;
        call.engine_env.push(("CLAUDE_CONFIG_DIR".into(), "/engine/claude".into()));
        let home = setup.dir.path().join("homes/1.worker");
        call.home = Some(home.clone());
        run(call).await;
        let env = std::fs::read_to_string(setup.record("env")).unwrap();
        let line = format!("{var}={}", home.display());
        assert!(env.lines().any(|l| l == line), "{kind}: {line} in {env}");
        assert_eq!(env.lines().filter(|l| l.starts_with(&format!("{var}="))).count(), 1);
    }
}

#[tokio::test]
async fn codex_worker_fix_round_resumes_its_thread_with_the_prompt_on_stdin() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Worker, "worker-success");
    call.resume_session = Some("0199a213-81c0-7800-8aa1-bbab2a035a53".into());
    call.model = "gpt-5.4".into();
    call.extra_args = vec!["-c".into(), "model_reasoning_effort=\"high\"".into()];
    call.prompt = "Fix: greet() panics on an empty name.".into();
    let result = run(call).await;
    assert_eq!(
        setup.argv(),
        [
            "exec",
            "--json",
            "--sandbox",
            "workspace-write",
            "-c",
            "sandbox_workspace_write.exclude_slash_tmp=true",
            "-c",
            "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            "-c",
            &format!(
                "sandbox_workspace_write.writable_roots=[\"{}\"]",
                setup.dir.path().join("run/scratch").display()
            ),
            "-c",
            "project_doc_max_bytes=0",
            "-c",
            "skills.include_instructions=false",
            "--model",
            "gpt-5.4",
            "-c",
            "model_reasoning_effort=\"high\"",
            "resume",
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "-",
        ]
    );
    assert_eq!(setup.stdin(), "Fix: greet() panics on an empty name.");
    assert!(result.succeeded(), "{}", result.diagnostics);
    assert_eq!(result.session_id.as_deref(), Some("0199a213-81c0-7800-8aa1-bbab2a035a53"));
    assert_eq!(result.usage.input_tokens, 24763);
    assert_eq!(result.usage.cached_input_tokens, 24448);
    assert_eq!(result.usage.output_tokens, 1122);
    assert!(result.write_violations.is_empty());
}

#[tokio::test]
async fn codex_file_change_outside_the_write_set_is_reported() {
    let setup = Setup::new();
    let result = run(setup.call(AgentKind::Codex, Role::Worker, "worker-write-outside")).await;
    assert_eq!(result.write_violations, ["Cargo.toml"]);
}

#[tokio::test]
async fn codex_reviewer_gets_a_read_only_sandbox_and_a_schema_file() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Reviewer, "reviewer-success");
    let schema = json!({
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES"]}},
        "required": ["verdict"],
        "additionalProperties": false
    });
    call.output_schema = Some(schema.clone());
    let scratch = call.scratch_dir.clone();
    let result = run(call).await;
    let argv = setup.argv();
    assert_eq!(argv[..4], ["exec", "--json", "--sandbox", "read-only"]);
    assert_eq!(
        argv[4..8],
        ["-c", "project_doc_max_bytes=0", "-c", "skills.include_instructions=false"]
    );
    assert_eq!(argv[8], "--output-schema");
    let schema_file = Path::new(&argv[9]);
    assert!(schema_file.starts_with(&scratch), "{}", schema_file.display());
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_file).unwrap()).unwrap();
    assert_eq!(written, schema);
    assert_eq!(argv.last().map(String::as_str), Some("-"));
    assert_eq!(result.answer.as_ref().unwrap()["verdict"], "APPROVE");
    assert_eq!(result.failure, None);
}

#[tokio::test]
async fn codex_failures_are_classified() {
    for (fixture_name, check) in [
        (
            "turn-failed",
            (|f: &AgentFailure| matches!(f, AgentFailure::Failed { .. }))
                as fn(&AgentFailure) -> bool,
        ),
        (
            "usage-limit",
            |f| matches!(f, AgentFailure::Quota { retry_after: Some(d), .. } if *d == Duration::from_secs(7500)),
        ),
        ("rate-limit", |f| matches!(f, AgentFailure::RateLimited { .. })),
        ("error-auth", |f| matches!(f, AgentFailure::Auth { .. })),
        (
            "truncated",
            |f| matches!(f, AgentFailure::Crashed { message } if message.starts_with("codex exited with code 1: the stream ended")),
        ),
    ] {
        let setup = Setup::new();
        let call = with_env(
            setup.call(AgentKind::Codex, Role::Worker, fixture_name),
            "FAKE_AGENT_EXIT",
            "1",
        );
        let result = run(call).await;
        assert_eq!(result.ending, Ending::Exited(1));
        let failure = result.failure.as_ref().expect("a failure");
        assert!(check(failure), "{fixture_name}: {failure:?}");
        assert_eq!(result.answer, None, "{fixture_name}");
        // The failure is said once: the answer error would only repeat it.
        assert!(result.diagnostics.contains(&failure.to_string()), "{}", result.diagnostics);
        assert!(!result.diagnostics.contains("no answer"), "{}", result.diagnostics);
    }
}

#[tokio::test]
async fn codex_malformed_lines_and_questions_are_tolerated() {
    let setup = Setup::new();
    let result = run(setup.call(AgentKind::Codex, Role::Worker, "malformed")).await;
    assert!(result.succeeded(), "{}", result.diagnostics);
    assert_eq!(result.malformed_lines, 4);
    assert!(
        result.diagnostics.contains("Should I also update the README?"),
        "{}",
        result.diagnostics
    );
}

#[tokio::test]
async fn a_stalled_cli_is_terminated_and_says_what_was_missing() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Reviewer, "truncated");
    call.stall_timeout = Duration::from_secs(1);
    let result = run(with_env(call, "FAKE_AGENT_HANG", "1")).await;
    assert_eq!(result.ending, Ending::Stalled);
    assert_eq!(result.failure, Some(AgentFailure::Terminated { ending: Ending::Stalled }));
    let error = result.answer_error.unwrap();
    assert!(error.starts_with("claude stalled"), "{error}");
    assert!(error.contains("before its `result` line"), "{error}");
    assert!(result.diagnostics.contains(&format!("no answer: {error}")), "{}", result.diagnostics);
    assert_eq!(result.session_id.as_deref(), Some("e5f6a7b8-c9d0-4e1f-8a2b-4c5d6e7f8a9b"));
}

#[tokio::test]
async fn a_limit_reported_before_a_hang_wins_over_the_termination() {
    let setup = Setup::new();
    let call = setup.call(AgentKind::Codex, Role::Worker, "error-auth");
    let call = with_env(call, "FAKE_AGENT_HANG", "1");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    // Cancelled as soon as it started: the engine shutting down.
    let result =
        run_agent(&supervisor(), call, cancel, move |_, _| trigger.cancel()).await.unwrap();
    assert_eq!(result.ending, Ending::Cancelled);
    // Cancelled before (or after) printing: either way not a limit, so breeze's reason.
    assert_eq!(result.failure, Some(AgentFailure::Terminated { ending: Ending::Cancelled }));

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Reviewer, "usage-limit");
    call.stall_timeout = Duration::from_secs(1);
    let result = run(with_env(call, "FAKE_AGENT_HANG", "1")).await;
    assert_eq!(result.ending, Ending::Stalled);
    assert!(matches!(result.failure, Some(AgentFailure::Quota { .. })), "{:?}", result.failure);
}

#[tokio::test]
async fn start_errors_name_what_to_fix() {
    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Claude, Role::Worker, "worker-success");
    call.program = "claude-not-installed".into();
    let err =
        run_agent(&supervisor(), call, CancellationToken::new(), |_, _| {}).await.unwrap_err();
    assert!(matches!(err, AgentError::Spawn(SpawnError::ProgramNotFound { .. })), "{err:?}");
    assert!(err.to_string().contains("claude-not-installed"), "{err}");

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Advisor, "advisor-success");
    call.output_schema = Some(json!({"type": "object"}));
    let blocker = setup.record("not-a-directory");
    std::fs::write(&blocker, "").unwrap();
    call.scratch_dir = blocker.join("scratch");
    let err =
        run_agent(&supervisor(), call, CancellationToken::new(), |_, _| {}).await.unwrap_err();
    assert!(matches!(err, AgentError::SchemaFile { .. }), "{err:?}");
    assert!(err.to_string().contains("scratch directory"), "{err}");
}

#[tokio::test]
async fn a_resumed_codex_run_counts_only_its_own_tokens() {
    // First run of the thread (a real capture): its running total is the baseline.
    let setup = Setup::new();
    let first = run(setup.call(AgentKind::Codex, Role::Worker, "real-reviewer")).await;
    let baseline = first.session_usage.expect("codex reports the thread's total");
    assert_eq!(baseline.input_tokens, 1001);

    let setup = Setup::new();
    let mut call = setup.call(AgentKind::Codex, Role::Worker, "real-resume");
    call.resume_session = first.session_id.clone();
    call.resume_baseline = Some(baseline);
    let second = run(call).await;
    assert_eq!(second.session_usage.map(|u| u.input_tokens), Some(2003));
    assert_eq!(second.usage.input_tokens, 1002);
    assert_eq!(second.usage.cached_input_tokens, 200);
    assert_eq!(second.usage.output_tokens, 30);
    assert!(
        setup
            .argv()
            .windows(2)
            .any(|w| w[0] == "resume" && Some(&w[1]) == first.session_id.as_ref())
    );
}
