//! `breeze mcp` as an MCP client sees it: the real binary started as a child process,
//! spoken to over its stdin and stdout by rmcp's client, on real repositories with the
//! scripted roles.

use std::path::Path;
use std::process::Stdio;

use breeze_test_support::plan::toml_task;
use breeze_test_support::{TestRepo, git_line, hermetic};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const SCRIPTED_CONFIG: &str = "[run]\nmax_workers = 3\n[roles.worker]\nbackend = \"scripted\"\nstall_timeout = \"3s\"\n[roles.advisor]\nbackend = \"scripted\"\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.scaffolder]\nbackend = \"scripted\"\n";

/// Every tool the server must offer.
const TOOLS: [&str; 15] = [
    "abort",
    "approve",
    "diff",
    "draft",
    "fill_ids",
    "fill_writes",
    "logs",
    "plan",
    "reject",
    "report",
    "resume",
    "retry",
    "run",
    "status",
    "wait",
];

/// A `breeze mcp` child serving `root`, and the client session talking to it.
struct Session {
    client: RunningService<RoleClient, ()>,
    _server: tokio::process::Child,
}

/// What a tool call returned: whether it is a tool error, and its text.
struct Answer {
    is_error: bool,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|err| panic!("{err}: {}", self.text))
    }
}

async fn connect(root: &Path) -> Session {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_breeze"));
    hermetic(&mut command).arg("mcp").current_dir(root);
    let mut command = tokio::process::Command::from(command);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
    let mut server = command.spawn().expect("breeze mcp starts");
    let stdout = server.stdout.take().expect("its stdout");
    let stdin = server.stdin.take().expect("its stdin");
    let client = ().serve((stdout, stdin)).await.expect("the MCP session starts");
    Session { client, _server: server }
}

impl Session {
    async fn call(&self, tool: &str, arguments: Value) -> Answer {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = self.client.call_tool(params).await.expect("the tool call is answered");
        let text = result
            .content
            .iter()
            .filter_map(|content| content.as_text().map(|text| text.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Answer { is_error: result.is_error == Some(true), text }
    }

    /// Calls `wait` until the run has ended; the status it ended with.
    async fn wait_until_ended(&self) -> Value {
        loop {
            let waited = self.call("wait", json!({"timeout_seconds": 60})).await;
            assert!(!waited.is_error, "{}", waited.text);
            let waited = waited.json();
            if waited["outcome"] == "ended" {
                return waited["status"].clone();
            }
        }
    }
}

fn breeze_in(root: &Path, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_breeze"));
    hermetic(&mut command).args(args).current_dir(root).output().expect("breeze runs")
}

fn task_state(status: &Value, id: &str) -> String {
    let tasks = status["tasks"].as_array().expect("tasks");
    let task = tasks.iter().find(|task| task["id"] == id).expect("the task");
    task["state"].as_str().unwrap_or_default().to_string()
}

fn repo(config: &str, plan: &str) -> TestRepo {
    TestRepo::with_files(&[("breeze.toml", config), ("plan.toml", plan)])
}

#[tokio::test(flavor = "multi_thread")]
async fn every_breeze_command_is_a_tool_with_a_typed_input_schema() {
    let repo = repo(SCRIPTED_CONFIG, &toml_task("1", "A", &["a.txt"], ""));
    let session = connect(&repo.root).await;
    let tools = session.client.list_all_tools().await.expect("the tools are listed");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    let schema = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).expect("the tool");
        assert!(tool.description.as_deref().is_some_and(|text| !text.is_empty()), "{name}");
        Value::Object(tool.input_schema.as_ref().clone())
    };
    for name in TOOLS {
        assert_eq!(schema(name)["type"], "object", "{name}");
    }
    let reject = schema("reject");
    assert_eq!(reject["required"], json!(["task", "note"]), "{reject}");
    assert_eq!(reject["properties"]["note"]["type"], "string", "{reject}");
    let approve = schema("approve");
    assert_eq!(approve["properties"]["tasks"]["type"], "array", "{approve}");
    let wait = schema("wait");
    assert!(wait["properties"]["timeout_seconds"]["type"].to_string().contains("integer"));
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_gives_the_facts_of_breeze_plan_json() {
    let plan = toml_task("1", "A", &["src/a.rs"], "") + &toml_task("2", "B", &["src/a.rs"], "");
    let repo = repo(SCRIPTED_CONFIG, &plan);
    let session = connect(&repo.root).await;
    let answer = session.call("plan", json!({})).await;
    assert!(!answer.is_error, "{}", answer.text);
    let command_line = breeze_in(&repo.root, &["plan", "--json"]);
    let expected: Value = serde_json::from_slice(&command_line.stdout).expect("plan --json");
    assert_eq!(answer.json(), expected);
    assert!(answer.text.contains("src/a.rs"), "the conflict's witness path: {}", answer.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_tool_returns_the_command_lines_error_and_hint_as_a_tool_error() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a.txt exists | a.txt | - | cc:TODO |\n\n## Later\n\n- [ ] polish the docs `cc:TODO`\n";
    let repo = TestRepo::with_files(&[("Plans.md", plans), ("breeze.toml", SCRIPTED_CONFIG)]);
    let session = connect(&repo.root).await;
    let refused = session.call("run", json!({})).await;
    assert!(refused.is_error, "{}", refused.text);
    let command_line = breeze_in(&repo.root, &["run"]);
    let error = String::from_utf8_lossy(&command_line.stderr).into_owned();
    assert!(error.contains("hint: run `breeze plan --fill-ids`"), "{error}");
    assert!(refused.text.contains(error.trim_end()), "{} vs {error}", refused.text);
    assert!(!repo.root.join(".breeze/runs").exists(), "no run started");

    let unknown = session.call("approve", json!({"tasks": ["9"]})).await;
    assert!(unknown.is_error && unknown.text.starts_with("error: "), "{}", unknown.text);
    let option = session.call("approve", json!({"tasks": ["--help"]})).await;
    assert!(option.is_error, "a task id is never read as an option: {}", option.text);
    assert!(!option.text.contains("Usage:"), "no help printed: {}", option.text);
    let bad = session.call("reject", json!({"task": "1"})).await;
    assert!(bad.is_error, "a reject without a note is refused: {}", bad.text);

    let numbered = session.call("fill_ids", json!({})).await;
    assert!(!numbered.is_error, "{}", numbered.text);
    let after = std::fs::read_to_string(repo.root.join("Plans.md")).unwrap();
    assert!(after.contains("- [ ] 2 polish the docs"), "{after}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_returns_at_once_with_its_id_and_wait_follows_it_until_its_work_landed() {
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let repo = repo(SCRIPTED_CONFIG, &plan);
    let session = connect(&repo.root).await;
    let started = session.call("run", json!({})).await;
    assert!(!started.is_error, "{}", started.text);
    let run_id = started.json()["run_id"].as_str().unwrap().to_string();
    assert!(repo.root.join(".breeze/runs").join(&run_id).is_dir(), "{}", started.text);

    let status = session.wait_until_ended().await;
    assert_eq!(status["run_id"], run_id.as_str());
    assert_eq!(status["state"], "succeeded", "{status}");
    assert_eq!(task_state(&status, "1"), "landed");
    assert_eq!(task_state(&status, "2"), "landed");
    assert_eq!(git_line(&repo.root, &["rev-list", "--count", "main"]), "3", "two landings");

    let shown = session.call("status", json!({})).await;
    assert_eq!(shown.json()["schema_version"], "breeze-status.v1");
    let report = session.call("report", json!({})).await;
    assert!(report.text.starts_with(&format!("# breeze run {run_id}")), "{}", report.text);
    let logs = session.call("logs", json!({"task": "1", "max_bytes": 16})).await;
    assert!(
        !logs.is_error && logs.text.starts_with("[cut: showing the last 16 of "),
        "{}",
        logs.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_run_while_one_is_live_is_refused_and_abort_ends_the_first() {
    let plan = toml_task("1", "Slow", &["a.txt"], "[task.sim]\ndelay_ms = 600000");
    let repo = repo(SCRIPTED_CONFIG, &plan);
    let session = connect(&repo.root).await;
    let first = session.call("run", json!({})).await;
    assert!(!first.is_error, "{}", first.text);
    assert_eq!(first.json()["state"], "running", "{}", first.text);
    let second = session.call("run", json!({})).await;
    assert!(second.is_error, "{}", second.text);
    let command_line = breeze_in(&repo.root, &["run"]);
    let error = String::from_utf8_lossy(&command_line.stderr).into_owned();
    assert!(
        !error.is_empty() && second.text.contains(error.trim_end()),
        "{} vs {error}",
        second.text
    );

    let aborted = session.call("abort", json!({})).await;
    assert!(!aborted.is_error, "{}", aborted.text);
    let status = session.wait_until_ended().await;
    assert_eq!(status["state"], "aborted", "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_lets_a_task_held_for_approval_land_when_the_run_resumes() {
    let config = format!("{SCRIPTED_CONFIG}[land]\nrequire_approval = true\n");
    let repo = repo(&config, &toml_task("1", "A", &["a.txt"], ""));
    let session = connect(&repo.root).await;
    assert!(!session.call("run", json!({})).await.is_error);
    let status = session.wait_until_ended().await;
    assert_eq!(task_state(&status, "1"), "awaiting-approval", "{status}");
    let diff = session.call("diff", json!({"task": "1", "max_bytes": 10})).await;
    assert!(!diff.is_error && diff.text.contains("[cut: showing the first"), "{}", diff.text);
    let whole = session.call("diff", json!({"task": "1"})).await;
    assert!(whole.text.contains("a.txt") && !whole.text.contains("[cut:"), "{}", whole.text);

    let approved = session.call("approve", json!({"tasks": ["1"]})).await;
    assert!(!approved.is_error && approved.text.contains("approved 1"), "{}", approved.text);
    let resumed = session.call("resume", json!({})).await;
    assert!(!resumed.is_error, "{}", resumed.text);
    let status = session.wait_until_ended().await;
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
    assert_eq!(git_line(&repo.root, &["rev-list", "--count", "main"]), "2", "one landing");
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_retry_draft_and_fill_writes_do_what_their_commands_do() {
    let config = format!("{SCRIPTED_CONFIG}[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "")
        + &toml_task("2", "B", &["b.txt"], "[task.sim]\nfail_attempts = 3");
    let repo = repo(&config, &plan);
    let session = connect(&repo.root).await;
    assert!(!session.call("run", json!({})).await.is_error);
    let status = session.wait_until_ended().await;
    assert_eq!(task_state(&status, "1"), "awaiting-approval", "{status}");
    let rejected = session.call("reject", json!({"task": "1", "note": "name the file"})).await;
    assert!(!rejected.is_error && rejected.text.contains("rejected 1"), "{}", rejected.text);
    let retried = session.call("retry", json!({"tasks": ["2"], "note": "smaller"})).await;
    assert!(!retried.is_error && retried.text.contains("task 2"), "{}", retried.text);

    let drafted =
        session.call("draft", json!({"goal": "Add c in `c.txt`", "out": "Plans.md"})).await;
    assert!(!drafted.is_error, "{}", drafted.text);
    assert!(repo.root.join("Plans.md").is_file(), "{}", drafted.text);
    let drafted = std::fs::read_to_string(repo.root.join("Plans.md")).unwrap();
    assert!(drafted.contains("`c.txt`"), "the drafted task writes c.txt: {drafted}");

    let later = "# Plans\n\n| Task | Content | DoD | Depends | Status |\n|------|---------|-----|---------|--------|\n| 1 | Add the model in `src/model.rs` | model works | - | cc:TODO |\n";
    std::fs::write(repo.root.join("Later.md"), later).unwrap();
    let filled = session.call("fill_writes", json!({"plan": "Later.md"})).await;
    assert!(!filled.is_error, "{}", filled.text);
    let after = std::fs::read_to_string(repo.root.join("Later.md")).unwrap();
    assert!(after.contains("| `src/model.rs` |"), "{after}");
}

impl Session {
    /// The text of resource `uri`, or the error the server answered with.
    async fn read(&self, uri: &str) -> Result<String, String> {
        let params = ReadResourceRequestParams::new(uri);
        let result = self.client.read_resource(params).await.map_err(|err| err.to_string())?;
        let texts = result.contents.into_iter().map(|contents| match contents {
            ResourceContents::TextResourceContents { text, .. } => text,
            other => panic!("{other:?}"),
        });
        Ok(texts.collect())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_latest_runs_status_journal_and_report_are_resources() {
    let repo = repo(SCRIPTED_CONFIG, &toml_task("1", "A", &["a.txt"], ""));
    let session = connect(&repo.root).await;
    let none = session.read("breeze://run/status").await;
    assert!(none.as_ref().is_err_and(|err| err.contains("error: ")), "no run yet: {none:?}");
    assert!(!session.call("run", json!({})).await.is_error);
    session.wait_until_ended().await;

    let resources = session.client.list_all_resources().await.expect("the resources are listed");
    let mut uris: Vec<&str> = resources.iter().map(|resource| resource.uri.as_str()).collect();
    uris.sort_unstable();
    assert_eq!(uris, ["breeze://run/events", "breeze://run/report", "breeze://run/status"]);
    let status: Value = serde_json::from_str(&session.read("breeze://run/status").await.unwrap())
        .expect("the status is JSON");
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
    let events = session.read("breeze://run/events").await.unwrap();
    let first: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!(first["schema_version"], "breeze-event.v1", "{events}");
    let report = session.read("breeze://run/report").await.unwrap();
    assert!(report.starts_with("# breeze run "), "{report}");
    let unknown = session.read("breeze://run/nothing").await;
    assert!(unknown.is_err_and(|err| err.contains("breeze has no resource")));
}
