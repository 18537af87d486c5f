//! `breeze mcp` in the agent sessions people work in: the REAL Claude Code CLI with the
//! repository's plugin installed from its path (`claude plugin marketplace add`, `claude
//! plugin install breeze@breeze`), against the scripted model server playing a Lead that
//! calls the breeze tools (`plan`, `run`, `wait`, `approve`, `resume`, `report`;
//! MOCK-BREEZE-LEAD in `tests/fixtures/agents/capture/mock-model-server.py`). The team itself
//! runs on the scripted roles; what is real is the CLI, its plugin loading, its MCP client
//! and `breeze mcp` started by it from PATH.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::real_agents::{ModelServer, clis, with_clis};
use crate::support::{SCRIPTED_CONFIG, both, git, project_root, repo_with, toml_task};

/// `claude args…` with the pinned CLIs, node and the `breeze` binary on PATH, the test's
/// HOME and the mock server's address.
fn claude(bin: &Path, home: &Path, port: u16, args: &[&str]) -> Command {
    let node = Command::new("sh").args(["-c", "dirname \"$(command -v node)\""]).output().unwrap();
    let node_dir = String::from_utf8_lossy(&node.stdout).trim().to_string();
    let breeze_dir = Path::new(env!("CARGO_BIN_EXE_breeze")).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:{node_dir}:/usr/local/bin:/usr/bin:/bin",
        bin.display(),
        breeze_dir.display()
    );
    let mut command = with_clis(Command::new(bin.join("claude")), &path, home, port);
    // The MCP tools offered to the model directly, not behind the tool search.
    command.env("ENABLE_TOOL_SEARCH", "false").args(args).stdin(Stdio::null());
    command
}

fn succeeded(output: &Output, what: &str) {
    assert_eq!(output.status.code(), Some(0), "{what}: {}", both(output));
}

/// The breeze tools the session called, in order, from its stream-json lines.
fn tools_called(stream: &str) -> Vec<String> {
    let lines = stream.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok());
    let mut called = Vec::new();
    for line in lines.filter(|line| line["type"] == "assistant") {
        for block in line["message"]["content"].as_array().into_iter().flatten() {
            if let Some(name) =
                block["name"].as_str().and_then(|n| n.strip_prefix("mcp__plugin_breeze_breeze__"))
            {
                called.push(name.to_string());
            }
        }
    }
    called
}

#[test]
fn claude_code_with_the_plugin_plans_runs_approves_and_reports_a_run_through_breeze_mcp() {
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-mcp-").tempdir_in("/tmp").unwrap();
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "Add a", &["a.txt"], "");
    let (_repo_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let server = ModelServer::start_with(temp.path(), &[]);
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plugin_repo = project_root().canonicalize().unwrap();
    let plugin_repo = plugin_repo.to_str().unwrap();
    let added = claude(&bin, &home, server.port, &["plugin", "marketplace", "add", plugin_repo])
        .output()
        .unwrap();
    succeeded(&added, "marketplace add");
    let installed =
        claude(&bin, &home, server.port, &["plugin", "install", "breeze@breeze"]).output().unwrap();
    succeeded(&installed, "plugin install");

    let session = claude(
        &bin,
        &home,
        server.port,
        &[
            "-p",
            "MOCK-BREEZE-LEAD: breeze the plan",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "mcp__plugin_breeze_breeze",
        ],
    )
    .current_dir(&root)
    .output()
    .unwrap();
    let stream = String::from_utf8_lossy(&session.stdout).into_owned();
    let mock = std::fs::read_to_string(&server.errors).unwrap_or_default();
    succeeded(&session, &format!("the session (mock server: {mock})"));
    assert!(stream.contains(r#""name":"plugin:breeze:breeze","status":"connected""#), "{stream}");
    assert_eq!(
        tools_called(&stream),
        ["plan", "run", "wait", "approve", "resume", "wait", "report"],
        "{stream}"
    );
    let result = stream.lines().last().and_then(|l| serde_json::from_str::<Value>(l).ok());
    let result = result.expect("a result line");
    assert_eq!(result["is_error"], false, "{stream}");
    let text = result["result"].as_str().unwrap_or_default();
    assert!(text.contains("- state: **succeeded**"), "the session saw the report: {text}");
    assert!(text.contains("| 1 | Add a | landed |"), "{text}");
    assert_eq!(git(&root, &["rev-list", "--count", "main"]).trim(), "2", "task 1 landed");
    assert!(git(&root, &["show", "--stat", "main"]).contains("a.txt"));
}
