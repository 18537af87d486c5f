//! Budgets on the REAL Claude Code and Codex CLIs against the project's model server, every
//! reply reporting the same known usage (`MOCK_FIXED_USAGE`: an Anthropic message 1000
//! input and 100 output tokens, an OpenAI response 1000 input of which 200 cached and 30
//! output tokens). Claude prices its tokens itself (`total_cost_usd`) and is given what is
//! left of the budget (`--max-budget-usd`); codex reports tokens, which breeze prices with
//! `[budget.prices]`. The figures each CLI reported are read back from the role logs and
//! compared with what breeze counted. Skipped without `BREEZE_AGENT_CLIS`, like
//! `real_agents.rs`.

use std::path::Path;

use serde_json::Value;

use crate::real_agents::{ModelServer, breeze_with_clis, clis, role_config};
use crate::support::{both, git, repo_with, status_json};
use breeze_test_support::landings_since as landings;

const TWO_TASKS: &str = r#"
[[task]]
id = "1"
title = "Add the greeting"
dod = "src/one.txt exists"
writes = ["src/one.txt"]

[[task]]
id = "2"
title = "Write the notes"
dod = "src/two.txt exists"
writes = ["src/two.txt"]
"#;

/// Tokens of one Anthropic message and one OpenAI response under `MOCK_FIXED_USAGE`.
const CLAUDE_REQUEST_TOKENS: u64 = 1000 + 100;
const CODEX_RESPONSE: (u64, u64, u64) = (1000, 200, 30);

/// The last line of `type` in each role log (`*.log.stdout`) of the run, by file name.
fn last_lines(root: &Path, kind: &str) -> Vec<(String, Value)> {
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(run.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".log.stdout") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let last = text
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|value| value["type"] == kind);
        if let Some(value) = last {
            found.push((name, value));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// What claude reported for each of its processes: (cost, input + output tokens).
fn claude_reports(root: &Path) -> Vec<(String, f64, u64)> {
    last_lines(root, "result")
        .into_iter()
        .map(|(name, result)| {
            assert!(result.get("model_usage_since_last_result").is_some(), "{result}");
            let tokens: u64 = result["modelUsage"]
                .as_object()
                .unwrap()
                .values()
                .map(|model| {
                    [
                        "inputTokens",
                        "outputTokens",
                        "cacheReadInputTokens",
                        "cacheCreationInputTokens",
                    ]
                    .iter()
                    .map(|key| model[key].as_u64().unwrap_or(0))
                    .sum::<u64>()
                })
                .sum();
            (name, result["total_cost_usd"].as_f64().unwrap(), tokens)
        })
        .collect()
}

fn messages_requests(server: &ModelServer) -> u64 {
    server.requests().lines().filter(|line| line.contains("\"path\": \"/v1/messages")).count()
        as u64
}

/// A repository with `plan` and `config` committed; its main at the start.
fn project(plan: &str, config: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (temp, root) =
        repo_with(&[("README.md", "mine\n"), ("plan.toml", plan), ("breeze.toml", config)]);
    let root = std::fs::canonicalize(root).unwrap();
    let start = git(&root, &["rev-parse", "main"]).trim().to_string();
    (temp, root, start)
}

/// The run cap stops claude itself (`--max-budget-usd`) within the first call, the run
/// stops resumably (exit 3) saying what was spent and what to raise; `breeze resume
/// --budget-usd` goes on and lands both tasks whole. breeze counts exactly the cost claude
/// reported.
#[test]
fn real_claude_run_stops_at_its_cap_and_resumes_with_a_raised_one() {
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-budget-").tempdir_in("/tmp").unwrap();
    let server = ModelServer::start_with(temp.path(), &[("MOCK_FIXED_USAGE", "1")]);
    let config = role_config("claude", "require", server.port)
        .replace("max_workers = 2", "max_workers = 1")
        + "[budget]\nrun_usd = 0.0001\n";
    let (_repo, root, start) = project(TWO_TASKS, &config);
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let breeze = |args: &[&str]| {
        breeze_with_clis(&bin, &home, server.port).current_dir(&root).args(args).output().unwrap()
    };

    let stopped = breeze(&["run", "plan.toml"]);
    let text = both(&stopped);
    let errors = std::fs::read_to_string(&server.errors).unwrap_or_default();
    assert_eq!(stopped.status.code(), Some(3), "{text}\nmock server: {errors}");
    assert!(text.contains("$ budget: run_usd = 0.0001 ($0.00 spent)"), "{text}");
    // Claude held itself to what was left: it stopped after its first reply.
    assert!(text.contains("Reached maximum budget ($0.0001)"), "{text}");
    assert_eq!(messages_requests(&server), 1, "no role call started past the cap");
    let reports = claude_reports(&root);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let (_, claude_cost, claude_tokens) = reports[0].clone();
    let status = status_json(&root);
    assert_eq!(status["state"], "interrupted", "{status}");
    assert_eq!(status["budget"]["run_usd"], 0.0001, "{status}");
    assert_eq!(status["usage"]["cost_usd"].as_f64(), Some(claude_cost), "{status}");
    let tokens = |status: &Value| {
        status["usage"]["input_tokens"].as_u64().unwrap()
            + status["usage"]["output_tokens"].as_u64().unwrap()
    };
    assert_eq!((tokens(&status), claude_tokens), (CLAUDE_REQUEST_TOKENS, CLAUDE_REQUEST_TOKENS));
    let figure = format!(
        "stopped: the run spent {} of its run_usd = 0.0001; no new role call was started; raise the cap to go on: `breeze resume --budget-usd X` with X above {}",
        breeze_engine::budget::dollars(claude_cost),
        breeze_engine::budget::amount(claude_cost)
    );
    assert!(text.contains(&figure), "{figure}\n{text}");
    assert!(landings(&root, &start).is_empty(), "nothing landed");

    let resumed = breeze(&["resume", "--budget-usd", "1"]);
    let text = both(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{text}");
    assert!(text.contains("$ budget: run_usd = 1.00 ("), "{text}");
    assert_eq!(
        landings(&root, &start),
        [
            ("1".to_string(), vec!["src/one.txt".to_string()]),
            ("2".to_string(), vec!["src/two.txt".to_string()])
        ]
    );
    let status = status_json(&root);
    assert_eq!(status["budget"]["run_usd"], 1.0, "{status}");
    let reports = claude_reports(&root);
    let reported: f64 = reports.iter().map(|(_, cost, _)| cost).sum();
    let counted = status["usage"]["cost_usd"].as_f64().unwrap();
    assert!(
        (counted - reported).abs() < 1e-9,
        "counted {counted}, claude reported {reported}: {reports:?}"
    );
    let reported_tokens: u64 = reports.iter().map(|(_, _, tokens)| tokens).sum();
    assert_eq!(reported_tokens, messages_requests(&server) * CLAUDE_REQUEST_TOKENS);
    assert_eq!(tokens(&status), reported_tokens);
    let run = std::fs::read_dir(root.join(".breeze/runs")).unwrap().next().unwrap().unwrap().path();
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(snapshot["budget"]["raised_usd"], 1.0, "{snapshot}");
    eprintln!("claude reported, per process: {reports:?}; breeze counted ${counted}");
}

/// Codex reports tokens; priced with `[budget.prices]`, task 1 (asked for changes by the
/// reviewer) reaches its `task_usd` before its fix round and escalates with the figure;
/// task 2 lands. breeze's figures are codex's own token counts at the configured price.
#[test]
fn real_codex_task_cap_escalates_that_task_only() {
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-budget-").tempdir_in("/tmp").unwrap();
    let server = ModelServer::start_with(
        temp.path(),
        &[("MOCK_FIXED_USAGE", "1"), ("MOCK_REQUEST_CHANGES", "1")],
    );
    let price = breeze_engine::config::Price { input: 1.0, cached_input: 0.1, output: 10.0 };
    // One response: 800 fresh input, 200 cached, 30 output tokens.
    let (input, cached, output) = CODEX_RESPONSE;
    let response = ((input - cached) as f64 * price.input
        + cached as f64 * price.cached_input
        + output as f64 * price.output)
        / 1e6;
    // A worker call is two responses (its command, then its report), a review one: task 1
    // spends 3 responses before its fix round, which the cap refuses; task 2 lands at 3.
    let cap = 2.5 * response;
    let config = role_config("codex", "require", server.port)
        + &format!(
            "[budget]\ntask_usd = {cap}\n\n[budget.prices]\n\"mock-model\" = {{ input = {}, cached_input = {}, output = {} }}\n",
            price.input, price.cached_input, price.output
        );
    let (_repo, root, start) = project(TWO_TASKS, &config);
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output_of = breeze_with_clis(&bin, &home, server.port)
        .current_dir(&root)
        .args(["run", "plan.toml"])
        .output()
        .unwrap();
    let text = both(&output_of);
    let errors = std::fs::read_to_string(&server.errors).unwrap_or_default();
    assert_eq!(output_of.status.code(), Some(1), "{text}\nmock server: {errors}");
    assert!(!text.contains("cannot cap it"), "mock-model has a price: {text}");

    // What codex reported, per process, priced as breeze prices it.
    let reported = last_lines(&root, "turn.completed");
    let cost_of = |task: &str| -> (f64, u64) {
        reported
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("{task}.")))
            .map(|(_, turn)| {
                let usage = &turn["usage"];
                let (input, cached, output) = (
                    usage["input_tokens"].as_u64().unwrap(),
                    usage["cached_input_tokens"].as_u64().unwrap(),
                    usage["output_tokens"].as_u64().unwrap(),
                );
                let cost = ((input - cached) as f64 * price.input
                    + cached as f64 * price.cached_input
                    + output as f64 * price.output)
                    / 1e6;
                (cost, input + output)
            })
            .fold((0.0, 0), |(c, t), (cost, tokens)| (c + cost, t + tokens))
    };
    let status = status_json(&root);
    let task = |id: &str| {
        status["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap().clone()
    };
    let (one_cost, one_tokens) = cost_of("1");
    assert!((one_cost - 3.0 * response).abs() < 1e-12, "{one_cost} {reported:?}");
    assert_eq!(one_tokens, 3 * (input + output));
    let one = task("1");
    assert_eq!(one["state"], "escalated", "{status}");
    assert!((one["usage"]["cost_usd"].as_f64().unwrap() - one_cost).abs() < 1e-12, "{one}");
    let reason = one["reason"].as_str().unwrap();
    let figure = format!(
        "task 1 spent {} of its task_usd = {}",
        breeze_engine::budget::dollars(one_cost),
        breeze_engine::budget::amount(cap)
    );
    assert!(reason.starts_with(&figure), "{figure}\n{reason}");
    assert_eq!(one["rounds"], 1, "the fix round never started");
    let (two_cost, two_tokens) = cost_of("2");
    let two = task("2");
    assert_eq!(two["state"], "landed", "{status}");
    assert!((two["usage"]["cost_usd"].as_f64().unwrap() - two_cost).abs() < 1e-12, "{two}");
    assert_eq!(
        two["usage"]["input_tokens"].as_u64().unwrap()
            + two["usage"]["output_tokens"].as_u64().unwrap(),
        two_tokens
    );
    assert_eq!(status["budget"]["task_usd"].as_f64(), Some(cap));
    assert_eq!(landings(&root, &start), [("2".to_string(), vec!["src/two.txt".to_string()])]);
    eprintln!(
        "codex reported (priced): task 1 ${one_cost}, task 2 ${two_cost}; breeze counted {} and {}",
        one["usage"], two["usage"]
    );
}
