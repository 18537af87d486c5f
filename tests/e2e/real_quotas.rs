//! Usage windows on the REAL Claude Code and Codex CLIs against the project's model server
//! playing a subscription (`MOCK_LIMITS_FILE`): every reply carries the five-hour window's
//! share and reset (claude reads them only for a subscription's login, so claude runs on an
//! OAuth token here), and a spent window is refused with a 429 naming its reset a few
//! seconds ahead. breeze pauses before the cap and goes on by itself at the reset, waits
//! out a refusal without spending an attempt, hands a reviewer on a paused claude to its
//! codex fallback, and resumes a run killed during a wait into the same wait. Skipped
//! without `BREEZE_AGENT_CLIS`, like `real_agents.rs`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::real_agents::{ModelServer, breeze_with_clis, clis, role_config};
use crate::support::{both, git, repo_with, status_json};
use breeze_test_support::landings_since as landings;

const ONE_TASK: &str = r#"
[[task]]
id = "1"
title = "Add the greeting"
dod = "src/one.txt exists"
writes = ["src/one.txt"]
"#;

/// A project on claude with a subscription's login, one lane.
struct Subscription {
    _temp: tempfile::TempDir,
    _repo: tempfile::TempDir,
    root: PathBuf,
    start: String,
    home: PathBuf,
    bin: PathBuf,
    limits: PathBuf,
    server: ModelServer,
}

impl Subscription {
    /// The project (its reviewer falling back to codex when `reviewer_fallback`), the
    /// server playing the window the limits file will say.
    fn new(bin: PathBuf, reviewer_fallback: bool) -> Subscription {
        Subscription::on("claude", bin, reviewer_fallback)
    }

    /// [`Subscription::new`] with every role on `backend`.
    fn on(backend: &str, bin: PathBuf, reviewer_fallback: bool) -> Subscription {
        let temp = tempfile::Builder::new().prefix("breeze-quota-").tempdir_in("/tmp").unwrap();
        let limits = temp.path().join("limits.json");
        let shown = limits.display().to_string();
        let server = ModelServer::start_with(temp.path(), &[("MOCK_LIMITS_FILE", shown.as_str())]);
        let mut config = role_config(backend, "require", server.port)
            .replace("max_workers = 2", "max_workers = 1")
            .replace("\"ANTHROPIC_API_KEY\"", "\"CLAUDE_CODE_OAUTH_TOKEN\"");
        if reviewer_fallback {
            let reviewer = format!("[roles.reviewer]\n{}", codex_fallback(server.port));
            config = config.replace("[roles.reviewer]\n", &reviewer);
        }
        let (repo, root) = repo_with(&[
            ("README.md", "mine\n"),
            ("plan.toml", ONE_TASK),
            ("breeze.toml", &config),
        ]);
        let root = std::fs::canonicalize(root).unwrap();
        let start = git(&root, &["rev-parse", "main"]).trim().to_string();
        let home = temp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Subscription { _temp: temp, _repo: repo, root, start, home, bin, limits, server }
    }

    /// The five-hour window at `used` (refused when `refuse`) until `reset_in` from now;
    /// the reset (unix seconds).
    fn window(&self, used: f64, refuse: bool, reset_in: u64) -> u64 {
        let resets_at = unix_now() + reset_in;
        let limits = json!({"used": used, "refuse": refuse, "resets_at": resets_at});
        std::fs::write(&self.limits, limits.to_string()).unwrap();
        resets_at
    }

    /// `breeze` logged in with an OAuth token rather than an API key.
    fn breeze(&self, args: &[&str]) -> Command {
        let mut command = breeze_with_clis(&self.bin, &self.home, self.server.port);
        command
            .env_remove("ANTHROPIC_API_KEY")
            .env("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-mock")
            .current_dir(&self.root)
            .args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.breeze(args).output().unwrap()
    }

    /// The run's journal events of `kind`.
    fn events(&self, kind: &str) -> Vec<Value> {
        let runs = self.root.join(".breeze/runs");
        let run = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
        let text = std::fs::read_to_string(run.join("events.jsonl")).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|line| line["event"].clone())
            .filter(|event| event["kind"] == kind)
            .collect()
    }

    /// Each model request's path and the window share the server reported to it.
    fn requests(&self) -> Vec<(String, f64, bool)> {
        self.server
            .requests()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|line| {
                let path = line["path"].as_str().unwrap_or("").to_string();
                (
                    path,
                    line["window"]["used"].as_f64().unwrap_or(-1.0),
                    line["window"]["refused"] == true,
                )
            })
            .collect()
    }

    fn landed_once(&self) {
        assert_eq!(
            landings(&self.root, &self.start),
            [("1".to_string(), vec!["src/one.txt".to_string()])],
            "task 1 landed exactly once"
        );
        let status = status_json(&self.root);
        assert_eq!(status["tasks"][0]["attempts"], 1, "no attempt was spent on a window: {status}");
    }
}

/// A role's fallback to codex on the server at `port`.
fn codex_fallback(port: u16) -> String {
    format!(
        "fallback = {{ backend = \"codex\", model = \"mock-model\", pass_credentials = true, args = [\"-c\", \"model_provider=mock\", \"-c\", 'model_providers.mock={{name=\"mock\",base_url=\"http://127.0.0.1:{port}/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}}'] }}\n"
    )
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A unix time as breeze says it: `2026-12-06 12:40:00 UTC`.
fn clock(unix: u64) -> String {
    format!("{} {} UTC", breeze_protocol::date_of(unix), breeze_protocol::clock_of(unix))
}

/// The shares reported to claude's requests, in order: the first ones before the reset,
/// every later one after it — no request reached the server while breeze waited.
fn before_then_after(requests: &[(String, f64, bool)], before: f64) -> (usize, usize) {
    shares_before_then_after(requests, "/v1/messages", before)
}

/// [`before_then_after`] for the requests to `api` (`/v1/messages`, `/v1/responses`).
fn shares_before_then_after(
    requests: &[(String, f64, bool)],
    api: &str,
    before: f64,
) -> (usize, usize) {
    let shares: Vec<f64> = requests
        .iter()
        .filter(|(path, _, _)| path.starts_with(api))
        .map(|(_, used, _)| *used)
        .collect();
    let first_after = shares.iter().position(|used| *used < before).unwrap_or(shares.len());
    assert!(
        shares[first_after..].iter().all(|used| *used < before),
        "a request reached the spent window after the reset: {shares:?}"
    );
    (first_after, shares.len() - first_after)
}

/// The worker's call reports the five-hour window at 95 %: the reviewer's call does not
/// start before the reset, says why and until when, and starts by itself once the window
/// has reset; the task lands once, on its first attempt.
#[test]
fn a_real_claude_run_pauses_before_its_window_runs_out_and_goes_on_at_the_reset() {
    let Some(bin) = clis() else { return };
    let project = Subscription::new(bin, false);
    let resets_at = project.window(0.95, false, 12);
    let output = project.run(&["run", "plan.toml"]);
    let text = both(&output);
    let errors = std::fs::read_to_string(&project.server.errors).unwrap_or_default();
    assert_eq!(output.status.code(), Some(0), "{text}\nmock server: {errors}");
    let said = format!(
        "[1] the reviewer waits: claude's five_hour window is 95% used (pause_at 90%); no new call starts on claude until the window resets at {}",
        clock(resets_at)
    );
    assert!(text.contains(&said), "{said}\n{text}");
    let paused = project.events("quota_paused");
    assert_eq!(paused.len(), 1, "{paused:?}");
    assert_eq!(
        (paused[0]["role"].as_str(), paused[0]["until"].as_u64()),
        (Some("reviewer"), Some(resets_at))
    );
    assert!(project.events("backend_trouble").is_empty(), "the pause is no backend trouble");
    let (before, after) = before_then_after(&project.requests(), 0.9);
    assert!(before >= 1 && after >= 1, "the worker ran before the reset, the reviewer after it");
    project.landed_once();
    let status = status_json(&project.root);
    let windows = status["windows"].as_array().expect("status --json shows the windows");
    assert!(
        windows.iter().any(|w| w["backend"] == "claude" && w["window"] == "five_hour"),
        "{status}"
    );
    eprintln!("--- transcript: breeze run (claude paused for its five-hour window)\n{text}");
}

/// Every request is refused with a 429 until the window's reset a few seconds ahead: the
/// worker's refused call is no failed attempt; breeze waits for the reset, then the
/// worker runs again and the task lands.
#[test]
fn a_real_claude_call_refused_for_a_spent_window_waits_for_its_reset_without_spending_an_attempt() {
    let Some(bin) = clis() else { return };
    let project = Subscription::new(bin, false);
    let resets_at = project.window(1.0, true, 8);
    let output = project.run(&["run", "plan.toml"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let said = format!(
        "[1] the worker waits: claude's five_hour window is 100% used (pause_at 90%); no new call starts on claude until the window resets at {}",
        clock(resets_at)
    );
    assert!(text.contains(&said), "{said}\n{text}");
    let requests = project.requests();
    assert!(
        requests.iter().any(|(_, _, refused)| *refused),
        "the window was refused: {requests:?}"
    );
    before_then_after(&requests, 0.9);
    project.landed_once();
    eprintln!("--- transcript: breeze run (claude refused with a 429 until its reset)\n{text}");
}

/// Codex on the same window (its `x-codex-primary-*` headers, read back from its session
/// file): the reviewer's call waits for the reset, then the task lands.
#[test]
fn a_real_codex_run_pauses_on_its_primary_window_and_goes_on_at_the_reset() {
    let Some(bin) = clis() else { return };
    let project = Subscription::on("codex", bin, false);
    let resets_at = project.window(0.95, false, 12);
    let output = project.run(&["run", "plan.toml"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let said = format!(
        "[1] the reviewer waits: codex's primary window is 95% used (pause_at 90%); no new call starts on codex until the window resets at {}",
        clock(resets_at)
    );
    assert!(text.contains(&said), "{said}\n{text}");
    let (before, after) = shares_before_then_after(&project.requests(), "/v1/responses", 0.9);
    assert!(before >= 1 && after >= 1, "the worker ran before the reset, the reviewer after it");
    project.landed_once();
}

/// With claude's window beyond `pause_at` for an hour, the reviewer's calls go to its
/// codex fallback (the independence rule holds: the worker is on claude); nothing waits.
#[test]
fn a_reviewer_on_a_paused_claude_falls_back_to_codex() {
    let Some(bin) = clis() else { return };
    let project = Subscription::new(bin, true);
    let resets_at = project.window(0.95, false, 3600);
    let output = project.run(&["run", "plan.toml"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let said = format!(
        "[1] the reviewer runs on its fallback codex: claude's five_hour window is 95% used (pause_at 90%) until {}",
        clock(resets_at)
    );
    assert!(text.contains(&said), "{said}\n{text}");
    let fell_back = project.events("fell_back");
    assert_eq!(fell_back.len(), 1, "{fell_back:?}");
    assert_eq!(
        (fell_back[0]["from"].as_str(), fell_back[0]["to"].as_str()),
        (Some("claude"), Some("codex"))
    );
    assert!(project.events("quota_paused").is_empty(), "nothing waited");
    let report = project.run(&["report"]);
    let report = String::from_utf8_lossy(&report.stdout).to_string();
    assert!(
        report.contains("- **1** the reviewer ran on codex, its fallback: claude was paused"),
        "the report says which calls ran on which: {report}"
    );
    let requests = project.requests();
    assert!(
        requests.iter().any(|(path, _, _)| path.starts_with("/v1/responses")),
        "codex reviewed"
    );
    // Codex's windows come from its session file: the reviewer's call reported them.
    let status = status_json(&project.root);
    let codex = status["windows"].as_array().unwrap().iter().any(|window| {
        window["backend"] == "codex" && window["window"] == "primary" && window["minutes"] == 300
    });
    assert!(codex, "{status}");
    project.landed_once();
    eprintln!("--- transcript: breeze run (the reviewer fell back to codex)\n{text}");
}

/// The engine is killed while the reviewer waits for the reset; `breeze resume` waits for
/// the same reset (the windows were saved) and lands the task once.
#[test]
fn a_run_killed_while_it_waits_for_a_reset_resumes_into_the_wait() {
    let Some(bin) = clis() else { return };
    let project = Subscription::new(bin, false);
    let resets_at = project.window(0.95, false, 25);
    project.killed_in_a_pause();
    let resumed = project.run(&["resume"]);
    let text = both(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{text}");
    let said = format!(
        "[1] the reviewer waits: claude's five_hour window is 95% used (pause_at 90%); no new call starts on claude until the window resets at {}",
        clock(resets_at)
    );
    assert!(text.contains(&said), "the resumed run waits again: {said}\n{text}");
    assert_eq!(project.events("quota_paused").len(), 2);
    before_then_after(&project.requests(), 0.9);
    project.landed_once();
    eprintln!("--- transcript: breeze resume (killed during the pause)\n{text}");
}

/// `breeze resume --at-reset` of a run killed while it waited: it waits for the saved
/// window's reset first, says so, and the resumed run then has nothing to wait for.
#[test]
fn resume_at_reset_waits_for_the_saved_windows_reset_then_resumes() {
    let Some(bin) = clis() else { return };
    let project = Subscription::new(bin, false);
    let resets_at = project.window(0.95, false, 25);
    project.killed_in_a_pause();
    let resumed = project.run(&["resume", "--at-reset"]);
    let text = both(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{text}");
    let said = format!(
        "breeze: waiting until {} (claude's five_hour window reset), then resuming",
        clock(resets_at)
    );
    assert!(text.contains(&said), "{said}\n{text}");
    assert_eq!(project.events("quota_paused").len(), 1, "the resumed run did not wait again");
    before_then_after(&project.requests(), 0.9);
    project.landed_once();
    eprintln!("--- transcript: breeze resume --at-reset\n{text}");
}

impl Subscription {
    /// Starts the run and kills the engine once it waits for a reset.
    fn killed_in_a_pause(&self) {
        let mut command = self.breeze(&["run", "plan.toml"]);
        let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.events_safe("quota_paused").is_empty() {
            assert!(Instant::now() < deadline, "the run never paused");
            assert!(child.try_wait().unwrap().is_none(), "the run ended before it paused");
            std::thread::sleep(Duration::from_millis(100));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// [`Subscription::events`] before the run folder exists.
    fn events_safe(&self, kind: &str) -> Vec<Value> {
        let runs = self.root.join(".breeze/runs");
        match std::fs::read_dir(&runs).map(|mut entries| entries.next()) {
            Ok(Some(_)) => self.events(kind),
            _ => Vec::new(),
        }
    }
}
