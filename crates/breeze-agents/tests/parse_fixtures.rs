//! The stream parsers on the recorded streams in `tests/fixtures/agents/`, line by line
//! as the supervisor hands them over, with a fixed clock.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breeze_agents::{AgentFailure, ClaudeStream, CodexStream, Parsed};
use common::{fixture_lines, src_only};
use serde_json::{Value, json};

const WORKTREE: &str = "/srv/repo/.harness-worktrees/task-2";
/// "Now" for the retry delays: 1764000000 = 2025-11-24T16:00:00Z.
const NOW: u64 = 1_764_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

fn claude(name: &str, schema: bool) -> Parsed {
    let mut stream = ClaudeStream::new(Some((Path::new(WORKTREE), src_only())), schema);
    for line in fixture_lines("claude", name, WORKTREE) {
        stream.feed(&line);
    }
    stream.finish_at(now())
}

fn codex(name: &str, schema: bool) -> Parsed {
    let mut stream = CodexStream::new(Some((Path::new(WORKTREE), src_only())), schema);
    for line in fixture_lines("codex", name, WORKTREE) {
        stream.feed(&line);
    }
    stream.finish_at(now())
}

fn field<'a>(answer: &'a Option<Value>, key: &str) -> &'a Value {
    &answer.as_ref().unwrap_or_else(|| panic!("no answer"))[key]
}

#[test]
fn claude_worker_success_gives_session_usage_and_the_report() {
    let parsed = claude("worker-success", false);
    assert_eq!(parsed.session_id.as_deref(), Some("5f1c2a7e-8b3d-4e6f-9a0b-1c2d3e4f5a6b"));
    assert_eq!(parsed.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert!(parsed.finished);
    assert_eq!(parsed.failure, None);
    assert_eq!(parsed.answer_error, None);
    assert_eq!(field(&parsed.answer, "schema_version"), "worker-report.v1");
    assert_eq!(field(&parsed.answer, "files_changed"), &json!(["src/greet.rs", "src/lib.rs"]));
    // The result's usage: all input (fresh + cache writes + cache reads), cache reads apart.
    assert_eq!(parsed.usage.input_tokens, 21 + 6241 + 48210);
    assert_eq!(parsed.usage.cached_input_tokens, 48210);
    assert_eq!(parsed.usage.output_tokens, 1187);
    assert!((parsed.usage.cost_usd.unwrap() - 0.04127).abs() < 1e-9);
    assert!(parsed.write_violations.is_empty(), "{:?}", parsed.write_violations);
    assert_eq!(parsed.malformed_lines, 0);
    assert_eq!(parsed.lines, 10);
}

#[test]
fn claude_writes_outside_the_write_set_are_reported() {
    let parsed = claude("worker-write-outside", false);
    assert_eq!(parsed.write_violations, ["docs/NOTES.md"]);
    // The run itself succeeded: the engine decides what a violation costs.
    assert!(parsed.answer.is_some());
    assert_eq!(parsed.failure, None);
}

#[test]
fn claude_reviewer_answer_is_the_structured_output() {
    let parsed = claude("reviewer-success", true);
    assert_eq!(field(&parsed.answer, "verdict"), "REQUEST_CHANGES");
    assert_eq!(field(&parsed.answer, "gaps")[0]["severity"], "major");
    assert_eq!(parsed.usage.input_tokens, 9 + 3120 + 20480);
    assert!((parsed.usage.cost_usd.unwrap() - 0.01893).abs() < 1e-9);
    // A read-only role's Read calls are not writes.
    assert!(parsed.write_violations.is_empty());
}

#[test]
fn claude_advisor_answer_comes_from_the_final_text() {
    let parsed = claude("advisor-success", true);
    assert_eq!(field(&parsed.answer, "decision"), "PLAN");
    assert_eq!(field(&parsed.answer, "confidence"), 0.72);
}

#[test]
fn claude_success_subtype_with_is_error_is_an_auth_failure() {
    let parsed = claude("auth-error", false);
    assert!(parsed.finished);
    assert_eq!(parsed.answer, None);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Auth { message: "Not logged in · Please run /login".into() })
    );
    let error = parsed.answer_error.unwrap();
    assert!(error.contains("subtype `success`, is_error true"), "{error}");
}

#[test]
fn claude_rate_limit_is_classified_with_its_reset_time() {
    let parsed = claude("rate-limit", false);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::RateLimited {
            message: "API Error: Rate limit reached".into(),
            retry_after: Some(Duration::from_secs(3600)),
        })
    );
    // The earlier `allowed_warning` event is kept as a note, not as a failure.
    assert!(
        parsed.notes.iter().any(|n| n.contains("rate limit warning (five_hour)")),
        "{:?}",
        parsed.notes
    );
}

#[test]
fn claude_usage_limit_is_a_quota_with_the_reset_from_the_text() {
    let parsed = claude("usage-limit", true);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Quota {
            message: "Claude AI usage limit reached|1764010800".into(),
            retry_after: Some(Duration::from_secs(10_800)),
        })
    );
}

#[test]
fn claude_max_turns_is_its_own_failure() {
    let parsed = claude("max-turns", false);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::MaxTurns { message: "stopped after 3 turns (--max-turns)".into() })
    );
    assert_eq!(parsed.answer, None);
    assert!((parsed.usage.cost_usd.unwrap() - 0.02254).abs() < 1e-9);
}

/// The real claude 2.1.332 run with `--max-budget-usd 0.0001` (tests/fixtures/agents/claude/
/// real-max-budget.jsonl): it stops after the first model response, before running the tool
/// that response asked for, with zeros in `result.usage`.
#[test]
fn claude_stopped_by_its_own_budget_fails_with_the_runs_cost_and_tokens() {
    let parsed = claude("real-max-budget", false);
    match &parsed.failure {
        Some(AgentFailure::Failed { message }) => {
            assert!(message.contains("Reached maximum budget ($0.0001)"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(parsed.answer, None);
    assert_eq!(parsed.usage.cost_usd, Some(0.000411));
    // From model_usage_since_last_result: 103 input + 50 cache reads, 20 output.
    assert_eq!(
        (parsed.usage.input_tokens, parsed.usage.cached_input_tokens, parsed.usage.output_tokens),
        (153, 50, 20)
    );
}

#[test]
fn claude_malformed_lines_are_counted_and_skipped() {
    let parsed = claude("malformed", false);
    assert_eq!(field(&parsed.answer, "task"), "3");
    assert_eq!(parsed.failure, None);
    // A warning, half a line, a JSON array, coloured text, trailing garbage.
    assert_eq!(parsed.malformed_lines, 5);
    assert!(
        parsed.notes.iter().any(|n| n.contains("retried the API (attempt 1)")),
        "{:?}",
        parsed.notes
    );
}

#[test]
fn claude_truncated_stream_is_a_crash_with_usage_so_far() {
    let parsed = claude("truncated", false);
    assert!(!parsed.finished);
    assert_eq!(parsed.session_id.as_deref(), Some("e5f6a7b8-c9d0-4e1f-8a2b-4c5d6e7f8a9b"));
    assert_eq!(parsed.answer, None);
    assert_eq!(
        parsed.answer_error.as_deref(),
        Some("the stream ended without a `result` line after 6 lines")
    );
    match &parsed.failure {
        Some(AgentFailure::Crashed { message }) => {
            assert!(message.contains("last text: The parser rejects empty rows."), "{message}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    // Two assistant messages (the first printed twice, counted once); no cost without a result.
    assert_eq!(parsed.usage.input_tokens, (4 + 3000 + 8000) + (6 + 11000));
    assert_eq!(parsed.usage.output_tokens, 58 + 20);
    assert_eq!(parsed.usage.cached_input_tokens, 8000 + 11000);
    assert_eq!(parsed.usage.cost_usd, None);
    assert_eq!(parsed.malformed_lines, 1);
}

#[test]
fn claude_result_line_cut_by_the_supervisor_is_named() {
    let mut stream = ClaudeStream::new(None, false);
    stream.feed(r#"{"type":"system","subtype":"init","session_id":"s1"}"#);
    stream.feed(r#"{"type":"result","subtype":"success","is_error":false,"result":"aaaa… [line truncated: 9000000 bytes]"#);
    let parsed = stream.finish_at(now());
    let error = parsed.answer_error.unwrap();
    assert!(error.contains("`result` line was too long"), "{error}");
    assert!(error.contains("9000000 bytes"), "{error}");
}

#[test]
fn codex_worker_success_gives_thread_usage_and_the_report() {
    let parsed = codex("worker-success", false);
    assert_eq!(parsed.session_id.as_deref(), Some("0199a213-81c0-7800-8aa1-bbab2a035a53"));
    assert!(parsed.finished);
    assert_eq!(parsed.failure, None);
    assert_eq!(field(&parsed.answer, "summary"), "Added greet(); cargo test passes.");
    assert_eq!(parsed.usage.input_tokens, 24763);
    assert_eq!(parsed.usage.cached_input_tokens, 24448);
    assert_eq!(parsed.usage.output_tokens, 1122);
    assert_eq!(parsed.usage.cost_usd, None, "codex reports no cost");
    assert!(parsed.write_violations.is_empty(), "{:?}", parsed.write_violations);
    // The unknown-model-metadata warning item is noted, not fatal.
    assert!(parsed.notes.iter().any(|n| n.contains("Model metadata")), "{:?}", parsed.notes);
}

#[test]
fn codex_file_changes_outside_the_write_set_are_reported() {
    let parsed = codex("worker-write-outside", false);
    assert_eq!(parsed.write_violations, ["Cargo.toml"]);
}

#[test]
fn codex_structured_output_is_the_agent_message() {
    let parsed = codex("reviewer-success", true);
    assert_eq!(field(&parsed.answer, "verdict"), "APPROVE");
    let parsed = codex("advisor-success", true);
    assert_eq!(field(&parsed.answer, "decision"), "CORRECTION");
    assert_eq!(parsed.session_id.as_deref(), Some("0199c4d5-e6f7-7081-9a2b-3c4d5e6f7a8b"));
}

#[test]
fn codex_turn_failed_is_a_task_failure() {
    let parsed = codex("turn-failed", false);
    assert!(parsed.finished);
    assert_eq!(parsed.answer, None);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Failed {
            message:
                "stream disconnected before completion: stream closed before response.completed"
                    .into()
        })
    );
    assert!(parsed.answer_error.unwrap().starts_with("codex reported `turn.failed`"));
}

#[test]
fn codex_usage_and_rate_limits_are_classified() {
    let parsed = codex("usage-limit", false);
    match parsed.failure {
        Some(AgentFailure::Quota { retry_after, message }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(2 * 3600 + 5 * 60)));
            assert!(message.starts_with("You've hit your usage limit"));
        }
        other => panic!("expected a quota failure, got {other:?}"),
    }
    let parsed = codex("rate-limit", false);
    assert!(
        matches!(parsed.failure, Some(AgentFailure::RateLimited { retry_after: None, .. })),
        "{:?}",
        parsed.failure
    );
}

#[test]
fn codex_error_without_turn_end_is_classified() {
    let parsed = codex("error-auth", false);
    assert!(!parsed.finished);
    assert!(matches!(parsed.failure, Some(AgentFailure::Auth { .. })), "{:?}", parsed.failure);
    let error = parsed.answer_error.unwrap();
    assert!(error.contains("without `turn.completed` after 3 lines"), "{error}");
    assert!(error.contains("401 Unauthorized"), "{error}");
}

#[test]
fn codex_malformed_lines_and_unknown_events_are_tolerated() {
    let parsed = codex("malformed", false);
    assert_eq!(field(&parsed.answer, "task"), "4");
    assert_eq!(parsed.failure, None);
    assert_eq!(parsed.malformed_lines, 4);
    assert_eq!(parsed.usage.input_tokens, 3000);
    assert!(
        parsed.notes.iter().any(|n| n.contains("Should I also update the README?")),
        "{:?}",
        parsed.notes
    );
}

#[test]
fn codex_truncated_stream_is_a_crash() {
    let parsed = codex("truncated", false);
    assert_eq!(parsed.session_id.as_deref(), Some("019a2adb-ecfd-76e7-9a8b-9cadbecfd0e1"));
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Crashed {
            message: "the stream ended without `turn.completed` after 4 lines".into()
        })
    );
    assert_eq!(parsed.answer, None);
}

#[test]
fn codex_final_message_without_json_is_explained() {
    let mut stream = CodexStream::new(None, true);
    stream.feed(r#"{"type":"thread.started","thread_id":"t"}"#);
    stream.feed(
        r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"I approve."}}"#,
    );
    stream.feed(r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#);
    let parsed = stream.finish_at(now());
    assert_eq!(parsed.failure, None);
    assert_eq!(parsed.answer, None);
    let error = parsed.answer_error.unwrap();
    assert!(error.contains("not the JSON the output schema asked for: I approve."), "{error}");
}

#[test]
fn parsers_never_panic_on_arbitrary_lines() {
    let odd = [
        "",
        "{",
        "}",
        "{}",
        "null",
        "{\"type\":null}",
        "{\"type\":\"result\"}",
        "{\"type\":\"result\",\"usage\":\"x\",\"total_cost_usd\":\"free\",\"is_error\":\"yes\"}",
        "{\"type\":\"assistant\",\"message\":{\"content\":\"text\",\"usage\":[]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":\"Write\",\"input\":null}]}}",
        "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"rejected\",\"resetsAt\":-5}}",
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"file_change\",\"changes\":\"all\"}}",
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":7}}",
        "{\"type\":\"turn.failed\",\"error\":null}",
        "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":1e30}}",
        "\u{0}\u{1}binary",
        "é…",
    ];
    let mut claude = ClaudeStream::new(Some((Path::new(WORKTREE), src_only())), true);
    let mut codex = CodexStream::new(Some((Path::new(WORKTREE), src_only())), true);
    for line in odd {
        claude.feed(line);
        codex.feed(line);
    }
    let claude = claude.finish_at(now());
    let codex = codex.finish_at(now());
    // Whatever came in, exactly one of an answer and the reason for its absence.
    assert!(claude.answer.is_some() != claude.answer_error.is_some(), "{claude:?}");
    assert!(codex.answer.is_some() != codex.answer_error.is_some(), "{codex:?}");
}

// The `real-*` fixtures are captures of the real CLIs (claude 2.1.332, codex 0.171.0)
// driven against a scripted local model server (see tests/fixtures/agents/capture/).

#[test]
fn real_claude_worker_stream() {
    // A write set that excludes what the worker wrote, to see the check on a real stream.
    let docs_only: breeze_agents::WriteSetCheck =
        std::sync::Arc::new(|path: &str| path.starts_with("docs/"));
    let mut stream = ClaudeStream::new(Some((Path::new(WORKTREE), docs_only)), false);
    for line in fixture_lines("claude", "real-worker", WORKTREE) {
        stream.feed(&line);
    }
    let parsed = stream.finish_at(now());
    assert_eq!(parsed.session_id.as_deref(), Some("82723504-377d-4164-8623-4f4a3a599203"));
    assert_eq!(parsed.failure, None);
    assert_eq!(field(&parsed.answer, "files_changed"), &json!(["src/hello.txt"]));
    assert_eq!(parsed.write_violations, ["src/hello.txt"]);
    assert_eq!(parsed.usage.input_tokens, 203 + 100);
    assert_eq!(parsed.usage.cached_input_tokens, 100);
    assert_eq!(parsed.usage.output_tokens, 40);
    assert!((parsed.usage.cost_usd.unwrap() - 0.001632).abs() < 1e-9);
    assert_eq!(parsed.malformed_lines, 0);
}

#[test]
fn real_claude_reviewer_structured_output() {
    let parsed = claude("real-reviewer", true);
    assert_eq!(field(&parsed.answer, "verdict"), "APPROVE");
    assert_eq!(parsed.failure, None);
}

#[test]
fn real_claude_resume_keeps_the_session_and_counts_this_run_only() {
    let parsed = claude("real-resume", false);
    // `--resume` continued the worker's session under the same id.
    assert_eq!(parsed.session_id.as_deref(), Some("82723504-377d-4164-8623-4f4a3a599203"));
    // `total_cost_usd` covers both runs; this run's cost is the since-last-result part.
    assert!((parsed.usage.cost_usd.unwrap() - 0.001656).abs() < 1e-9, "{:?}", parsed.usage);
    assert_eq!(parsed.usage.input_tokens, 209 + 100);
    let session = parsed.session_usage.expect("modelUsage totals");
    assert!((session.cost_usd.unwrap() - 0.003288).abs() < 1e-9);
    assert_eq!(session.input_tokens, 412 + 200);
    assert_eq!(session.output_tokens, 80);
}

#[test]
fn real_claude_failures() {
    let parsed = claude("real-auth-error", false);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Auth { message: "Not logged in · Please run /login".into() })
    );
    let parsed = claude("real-rate-limit", false);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::RateLimited {
            message: "API Error: Request rejected (429) · Number of request tokens has exceeded \
                      your per-minute rate limit"
                .into(),
            retry_after: None,
        })
    );
    assert!(parsed.notes.iter().any(|n| n.contains("attempt 1")), "{:?}", parsed.notes);
}

#[test]
fn real_codex_streams() {
    let parsed = codex("real-reviewer", true);
    assert_eq!(parsed.session_id.as_deref(), Some("01a22caf-556d-7191-9302-8f697bd68480"));
    assert_eq!(field(&parsed.answer, "verdict"), "APPROVE");
    assert_eq!(parsed.usage.input_tokens, 1001);

    // After `codex exec resume`, turn.completed reports the thread's total (both runs).
    let parsed = codex("real-resume", false);
    assert_eq!(parsed.session_id.as_deref(), Some("01a22caf-556d-7191-9302-8f697bd68480"));
    assert_eq!(field(&parsed.answer, "status"), "completed");
    assert_eq!(parsed.session_usage.map(|u| u.input_tokens), Some(2003));

    let parsed = codex("real-rate-limit", false);
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::RateLimited {
            message: "exceeded retry limit, last status: 429 Too Many Requests".into(),
            retry_after: None,
        })
    );
}

#[test]
fn long_streams_keep_bounded_state() {
    let mut claude = ClaudeStream::new(Some((Path::new(WORKTREE), src_only())), false);
    let mut codex = CodexStream::new(Some((Path::new(WORKTREE), src_only())), false);
    let text = "x".repeat(10_000);
    for i in 0..20_000 {
        claude.feed(&format!(
            r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"{text}"}},{{"type":"tool_use","name":"Write","input":{{"file_path":"out/{i}.txt"}}}}],"usage":{{"input_tokens":1,"output_tokens":1}}}}}}"#
        ));
        claude.feed(r#"{"type":"system","subtype":"api_retry","attempt":1,"error":"overloaded"}"#);
        codex.feed(&format!(
            r#"{{"type":"item.completed","item":{{"type":"file_change","changes":[{{"path":"out/{i}.txt","kind":"add"}}]}}}}"#
        ));
        codex.feed(r#"{"type":"item.completed","item":{"type":"error","message":"warning"}}"#);
    }
    let claude = claude.finish_at(now());
    let codex = codex.finish_at(now());
    for parsed in [&claude, &codex] {
        assert_eq!(parsed.write_violations.len(), 200);
        assert_eq!(parsed.write_violations_dropped, 20_000 - 200);
        assert!(parsed.notes.len() <= 8);
    }
    // Every message's usage counted once, with no result line to take it from.
    assert_eq!(claude.usage.input_tokens, 20_000);
    match claude.failure {
        Some(AgentFailure::Crashed { message }) => {
            assert!(message.len() < 1500, "{}", message.len());
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[test]
fn recovered_claude_errors_do_not_classify_a_later_failure() {
    let mut stream = ClaudeStream::new(None, false);
    stream.feed(r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1764003600}}"#);
    stream.feed(r#"{"type":"assistant","error":"rate_limit","message":{"content":[{"type":"text","text":"API Error: Rate limit reached"}]}}"#);
    stream.feed(r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1764003600}}"#);
    stream.feed(
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Working on it."}]}}"#,
    );
    stream.feed(r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["Tool execution aborted"]}"#);
    let parsed = stream.finish_at(now());
    assert_eq!(
        parsed.failure,
        Some(AgentFailure::Failed { message: "Tool execution aborted".into() })
    );
}
