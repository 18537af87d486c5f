//! `breeze mcp` in the agent sessions people work in: the REAL Claude Code CLI with the
//! repository's plugin installed from its path (`claude plugin marketplace add`, `claude
//! plugin install breeze@breeze`), and the REAL Codex CLI with `codex mcp add breeze --
//! breeze mcp`, each against the scripted model server playing a Lead that
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
    let mut command = with_clis(Command::new(bin.join("claude")), &cli_path(bin), home, port);
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
                // `wait` returns at each task change: waits in a row are one wait.
                if !(name == "wait" && called.last().is_some_and(|last| last == "wait")) {
                    called.push(name.to_string());
                }
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

/// `codex args…` with the pinned CLIs, node and the `breeze` binary on PATH, and the
/// test's HOME (its `~/.codex`).
fn codex(bin: &Path, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(bin.join("codex"));
    command.env_clear().env("PATH", cli_path(bin)).env("HOME", home).env("LANG", "C.UTF-8");
    command.env("OPENAI_API_KEY", "sk-mock-openai").args(args).stdin(Stdio::null());
    command
}

/// The PATH the sessions run with: the CLIs, the `breeze` binary, node and the system.
fn cli_path(bin: &Path) -> String {
    let node = Command::new("sh").args(["-c", "dirname \"$(command -v node)\""]).output().unwrap();
    let node_dir = String::from_utf8_lossy(&node.stdout).trim().to_string();
    let breeze_dir = Path::new(env!("CARGO_BIN_EXE_breeze")).parent().unwrap().to_path_buf();
    format!("{}:{}:{node_dir}:/usr/local/bin:/usr/bin:/bin", bin.display(), breeze_dir.display())
}

/// The breeze tools a codex session called, in order, from its `--json` lines.
fn codex_tools_called(stream: &str) -> Vec<String> {
    let lines = stream.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok());
    lines
        .filter(|line| line["type"] == "item.completed")
        .filter(|line| {
            line["item"]["type"] == "mcp_tool_call" && line["item"]["server"] == "breeze"
        })
        .map(|line| line["item"]["tool"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn codex_with_breeze_mcp_added_plans_runs_approves_and_reports_a_run() {
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-mcp-").tempdir_in("/tmp").unwrap();
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "Add a", &["a.txt"], "");
    let (_repo_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let server = ModelServer::start_with(temp.path(), &[]);
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // As the README says.
    let added =
        codex(&bin, &home, &["mcp", "add", "breeze", "--", "breeze", "mcp"]).output().unwrap();
    succeeded(&added, "codex mcp add");
    let provider = format!(
        "model_providers.mock={{name=\"mock\",base_url=\"http://127.0.0.1:{}/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}}",
        server.port
    );
    let session = codex(
        &bin,
        &home,
        &[
            "exec",
            "--json",
            // `codex exec` never asks: the breeze tools are approved for the session.
            "-c",
            "mcp_servers.breeze.default_tools_approval_mode=\"approve\"",
            "-c",
            "model_provider=mock",
            "-c",
            &provider,
            "-m",
            "mock-model",
            "MOCK-BREEZE-LEAD: breeze the plan",
        ],
    )
    .current_dir(&root)
    .output()
    .unwrap();
    let stream = String::from_utf8_lossy(&session.stdout).into_owned();
    let mock = std::fs::read_to_string(&server.errors).unwrap_or_default();
    succeeded(&session, &format!("the session (mock server: {mock})"));
    assert_eq!(
        codex_tools_called(&stream),
        ["plan", "run", "wait", "approve", "resume", "wait", "report"],
        "{stream}"
    );
    let said = stream
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["item"]["type"] == "agent_message")
        .filter_map(|line| line["item"]["text"].as_str().map(str::to_string))
        .collect::<String>();
    assert!(said.contains("- state: **succeeded**"), "the session saw the report: {said}");
    assert!(said.contains("| 1 | Add a | landed |"), "{said}");
    assert_eq!(git(&root, &["rev-list", "--count", "main"]).trim(), "2", "task 1 landed");
}
