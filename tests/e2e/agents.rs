//! The `claude` backend end to end: a fake `claude` on PATH plays the team in the real
//! stream-json format, and the run must resume the worker's session for its fix round,
//! run the reviewer read-only with a forced schema, and account the cost.

use std::path::Path;

use crate::support::{both, breeze, git, one_task_plan, repo_with, status_json, toml_task};

/// A stand-in for Claude Code: records each call, then answers as the role in
/// `$BREEZE_ROLE` would, in the stream-json format.
fn fake_claude(calls: &Path) -> String {
    format!(
        r#"#!/bin/sh
printf '%s|%s|%s\n' "$BREEZE_ROLE" "$BREEZE_ROUND" "$*" >> "{calls}"
cat > /dev/null
init() {{ printf '{{"type":"system","subtype":"init","session_id":"%s","model":"fake","permissionMode":"x","tools":[]}}\n' "$1"; }}
case "$BREEZE_ROLE" in
worker)
  init sess-worker-1
  echo "round $BREEZE_ROUND" >> notes.txt
  printf '%s\n' '{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"done"}}]}},"session_id":"sess-worker-1"}}'
  printf '%s\n' '{{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done.\n{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"wrote notes\"}}","session_id":"sess-worker-1","total_cost_usd":0.25,"usage":{{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":10}}}}'
  ;;
reviewer)
  init sess-review-$BREEZE_ROUND
  if [ "$BREEZE_ROUND" = 1 ]; then
    verdict='"verdict":"REQUEST_CHANGES","gaps":[{{"severity":"major","location":"notes.txt:1","issue":"needs a second line","suggestion":"add it"}}]'
  else
    verdict='"verdict":"APPROVE","gaps":[]'
  fi
  printf '{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"","session_id":"sess-review-%s","total_cost_usd":0.5,"usage":{{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}},"structured_output":{{"schema_version":"review-result.v1",%s}}}}\n' "$BREEZE_ROUND" "$verdict"
  ;;
*)
  printf '{{"type":"result","subtype":"success","is_error":true,"result":"unexpected role","session_id":"x"}}\n'
  ;;
esac
"#,
        calls = calls.display()
    )
}

#[test]
fn the_claude_backend_resumes_the_worker_session_and_reviews_read_only() {
    // The fake records its calls in a file outside the repository, which a confined role
    // could not write: this test runs with detection only (the real CLIs run confined in
    // real_agents.rs).
    let config = r#"
[roles.worker]
backend = "claude"
pass_credentials = true
[roles.reviewer]
backend = "claude"
pass_credentials = true
[roles.advisor]
backend = "scripted"
[sandbox]
mode = "detect"
"#;
    let plan = toml_task("1", "Notes", &["notes.txt"], "");
    let (temp, root) = repo_with(&[("breeze.toml", config), ("plan.toml", &plan)]);
    let bin = temp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = temp.path().join("calls.log");
    let claude = bin.join("claude");
    std::fs::write(&claude, fake_claude(&calls)).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&claude).status().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    // A key passed through is a login as far as the preflight can tell.
    let output = breeze()
        .current_dir(&root)
        .env("PATH", path)
        .env("ANTHROPIC_API_KEY", "sk-fake")
        .args(["run"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));

    let calls = std::fs::read_to_string(&calls).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 4, "worker, reviewer, worker, reviewer: {calls}");
    let (worker1, review1, worker2, review2) = (lines[0], lines[1], lines[2], lines[3]);
    for line in [worker1, review1, worker2, review2] {
        assert!(
            line.contains("-p")
                && line.contains("--output-format stream-json")
                && line.contains("--verbose"),
            "{line}"
        );
    }
    assert!(worker1.starts_with("worker|1|") && !worker1.contains("--resume"), "{worker1}");
    assert!(worker1.contains("--permission-mode dontAsk"), "{worker1}");
    let lane = crate::support::lane(&root, "lane-1");
    assert!(
        worker1.contains(&format!("--allowedTools Edit(/{}/**)", lane.display())),
        "edits are approved inside the lane only: {worker1}"
    );
    assert!(
        worker2.starts_with("worker|2|") && worker2.contains("--resume sess-worker-1"),
        "the fix round continues the session: {worker2}"
    );
    for review in [review1, review2] {
        assert!(review.contains("--permission-mode dontAsk"), "{review}");
        assert!(!review.contains("Edit("), "reviewer is read-only: {review}");
        assert!(review.contains("--json-schema"), "reviewer answer is schema-forced: {review}");
    }
    assert_eq!(git(&root, &["show", "main:notes.txt"]), "round 1\nround 2\n");

    let status = status_json(&root);
    let cost = status["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 1.5).abs() < 1e-9, "two worker runs at 0.25 and two reviews at 0.5: {status}");
    assert_eq!(status["tasks"][0]["rounds"], 2);
}

#[test]
fn a_missing_agent_cli_stops_the_run_before_it_starts_with_a_hint() {
    let config = "[roles.worker]\nbackend = \"codex\"\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n";
    let (temp, root) = repo_with(&[("breeze.toml", config), ("plan.toml", &one_task_plan())]);
    let empty = temp.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = format!("{}:/usr/bin:/bin", empty.display());
    let output = breeze().current_dir(&root).env("PATH", path).args(["run"]).output().unwrap();
    // The preflight: exit 2, one line naming the CLI, the role and how to install it —
    // before a run folder, a lane or a branch exists, and without the PATH printed.
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let text = crate::support::stderr(&output);
    assert!(
        text.contains("\n  ✗ codex not found on PATH (the backend of roles.worker): install codex: npm i -g @openai/codex, or set another backend in [roles.worker] of breeze.toml\n"),
        "{text}"
    );
    assert!(!text.contains("PATH="), "{text}");
    assert!(!root.join(".breeze/runs").exists() && !root.join(".harness-worktrees").exists());
    assert_eq!(git(&root, &["branch", "--format=%(refname:short)"]), "main\n");
}
