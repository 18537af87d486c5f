//! Each claude and codex role runs in a CLI home of its own, and nothing a task wrote
//! configures a role: `breeze run` on the REAL Claude Code and Codex CLIs, offline, against
//! the project's scripted model server (`tests/fixtures/agents/capture/mock-model-server.py`),
//! whose worker plants agent configuration — in its lane, hidden from git by a `.gitignore`
//! of `*` (MOCK-PLANT-CONFIG), and in the CLI state: the person's `~/.claude`/`~/.codex` and
//! its own home (MOCK-PLANT-HOME). The planted hooks and instructions print or hold marker
//! texts that the worker's own commands do not spell out: a marker in a request to the model
//! (the server logs every one) means a role loaded what was planted. Main's own
//! `CLAUDE.md`/`AGENTS.md` do reach the roles.
//!
//! Skipped without `BREEZE_AGENT_CLIS`, as `real_agents` is.

use std::path::{Path, PathBuf};

use crate::real_agents::{ModelServer, breeze_with_clis, clis, role_config};
use crate::support::{both, git, repo_with};

/// A repository for the team, its breeze.toml on `backend` with `lanes` lanes, under /tmp;
/// the test's folder (with the person's HOME, `home/`), the server, the repository root.
struct Team {
    temp: tempfile::TempDir,
    server: ModelServer,
    _repo: tempfile::TempDir,
    root: PathBuf,
}

impl Team {
    fn new(backend: &str, files: &[(&str, &str)], lanes: u32) -> Team {
        let temp = tempfile::Builder::new().prefix("breeze-homes-").tempdir_in("/tmp").unwrap();
        let (repo, root) = repo_with(files);
        let root = std::fs::canonicalize(root).unwrap();
        let shown = root.display().to_string();
        let server = ModelServer::start_with(
            temp.path(),
            &[("MOCK_REQUEST_CHANGES", "1"), ("MOCK_REPO_ROOT", shown.as_str())],
        );
        let config = role_config(backend, "auto", server.port)
            .replace("max_workers = 2", &format!("max_workers = {lanes}"));
        crate::support::write(&root, "breeze.toml", &config);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "team"]);
        std::fs::create_dir_all(temp.path().join("home")).unwrap();
        Team { temp, server, _repo: repo, root }
    }

    /// The person's HOME.
    fn home(&self) -> PathBuf {
        self.temp.path().join("home")
    }

    /// Where the run makes breeze's worktree `name`: in breeze's data folder under HOME.
    fn lane(&self, name: &str) -> PathBuf {
        crate::support::worktree_folder_with_home(&self.root, &self.home()).join(name)
    }

    /// `breeze run plan.toml` with the CLIs in `bin`: its exit code and output.
    fn run(&self, bin: &Path) -> (Option<i32>, String) {
        let output = breeze_with_clis(bin, &self.home(), self.server.port)
            .current_dir(&self.root)
            .args(["run", "plan.toml"])
            .output()
            .unwrap();
        let errors = std::fs::read_to_string(&self.server.errors).unwrap_or_default();
        (output.status.code(), format!("{}\nmock server: {errors}", both(&output)))
    }

    /// The requests whose prompt is `role`'s (`You are the **Reviewer**`, …).
    fn requests_of(&self, marker: &str) -> Vec<String> {
        self.server.requests().lines().filter(|l| l.contains(marker)).map(String::from).collect()
    }

    /// Where the run's role homes are.
    fn homes(&self) -> PathBuf {
        let status = crate::support::status_json(&self.root);
        let run = status["run_id"].as_str().unwrap().to_string();
        self.root.join(".breeze/runs").join(run).join("homes")
    }

    /// The landings since the first commit: `<task>|<review trailer>`.
    fn landings(&self) -> Vec<String> {
        let log = git(
            &self.root,
            &[
                "log",
                "--format=%(trailers:key=Breeze-Task,valueonly,separator=)|%(trailers:key=Breeze-Review,valueonly,separator=)",
                "main",
            ],
        );
        log.lines()
            .filter(|line| !line.starts_with('|') && !line.is_empty())
            .map(String::from)
            .collect()
    }
}

/// No request holds any of `markers`; no file `touched` was made next to the repository.
fn never_loaded(team: &Team, markers: &[&str], touched: &[&str], text: &str) {
    never_loaded_in(&team.server.requests(), markers, text);
    for file in touched {
        let path = team.root.parent().unwrap().join(file);
        assert!(!path.exists(), "{} was made: a planted hook ran", path.display());
    }
}

/// No request of another role than the worker holds any of `markers`. What the worker
/// planted in its own home is its own business: codex reloads its home's `AGENTS.md`
/// during the call, so the worker's own session (resumed in its fix round) has it in its
/// history, as it has everything the worker printed.
fn never_loaded_beyond_the_worker(team: &Team, markers: &[&str], text: &str) {
    let others: Vec<String> = team
        .server
        .requests()
        .lines()
        .filter(|l| !l.contains("You are a **Worker**"))
        .map(String::from)
        .collect();
    assert!(!others.is_empty(), "{text}");
    never_loaded_in(&others.join("\n"), markers, text);
}

fn never_loaded_in(requests: &str, markers: &[&str], text: &str) {
    for marker in markers {
        let found: Vec<&str> = requests.lines().filter(|l| l.contains(marker)).collect();
        assert!(
            found.is_empty(),
            "{marker} reached the model in {} request(s), e.g. {}\n{text}",
            found.len(),
            found[0].chars().take(3000).collect::<String>()
        );
    }
}

/// No login is left in any role home once the run is over, and each role of a task had
/// its own.
fn homes_hold_no_login(team: &Team, expected: &[&str]) {
    let homes = team.homes();
    for name in expected {
        assert!(homes.join(name).is_dir(), "no home {name} in {}", homes.display());
    }
    for home in std::fs::read_dir(&homes).unwrap() {
        let home = home.unwrap().path();
        for login in [".credentials.json", ".claude.json", "backups", "auth.json"] {
            assert!(!home.join(login).exists(), "{login} left in {}", home.display());
        }
    }
}

const MAIN_CLAUDE_MD: &str = "MAIN-CLAUDE-MD-MARKER: keep every line under 100 characters.\n";

/// A claude worker hides hooks, instructions and a skill in its lane's `.claude/`; its
/// reviewer, its own fix round (a resumed session) and the next task's roles (in the same
/// lane, one lane for the run) load none of it; they do get main's `CLAUDE.md`.
#[test]
fn a_claude_workers_hidden_lane_configuration_reaches_no_later_role() {
    let Some(bin) = clis() else { return };
    let plan = r#"
[[task]]
id = "1"
title = "Add the greeting"
dod = "src/one.txt names the task MOCK-PLANT-CONFIG"
writes = ["src/one.txt"]

[[task]]
id = "2"
title = "Write the notes"
dod = "src/two.txt exists"
writes = ["src/two.txt"]
depends_on = ["1"]
"#;
    let files = [("README.md", "mine\n"), ("plan.toml", plan), ("CLAUDE.md", MAIN_CLAUDE_MD)];
    let team = Team::new("claude", &files, 1);
    let (code, text) = team.run(&bin);
    assert_eq!(code, Some(0), "{text}");
    let requests = team.server.requests();
    assert!(requests.contains("MOCK-PLANT-CONFIG planted=2"), "the worker planted it: {text}");

    never_loaded(
        &team,
        &["MOCK-LANE-HOOK-42", "MOCK-PLANTED-INSTRUCTIONS", "MOCK-PLANTED-SKILL"],
        &["lane-hook-ran"],
        &text,
    );
    // Main's own instructions reach the roles, the reviewer's too.
    let reviews = team.requests_of("You are the **Reviewer**");
    assert!(!reviews.is_empty(), "{text}");
    assert!(reviews.iter().all(|r| r.contains("MAIN-CLAUDE-MD-MARKER")), "{text}");
    // Task 1 went through a fix round in its worker's resumed session, then both landed.
    assert_eq!(team.landings(), ["2|APPROVE (round 1)", "1|APPROVE (round 2)"], "{text}");
    homes_hold_no_login(&team, &["1.worker", "1.reviewer", "2.worker", "2.reviewer"]);
}

/// A claude worker writes a hook into the person's `~/.claude/settings.json` (refused: the
/// person's CLI state is not the role's) and into its own home's `settings.json` (allowed,
/// and replaced before its next call): no role runs the person's hook, no other role the
/// worker's own, and the run goes on.
#[test]
fn a_claude_worker_cannot_plant_a_hook_in_the_persons_cli_state_or_in_another_roles_home() {
    let Some(bin) = clis() else { return };
    let plan = "[[task]]\nid = \"1\"\ntitle = \"Add the greeting\"\ndod = \"src/one.txt names the task MOCK-PLANT-HOME\"\nwrites = [\"src/one.txt\"]\n";
    let team = Team::new("claude", &[("README.md", "mine\n"), ("plan.toml", plan)], 1);
    let (code, text) = team.run(&bin);
    assert_eq!(code, Some(0), "the run goes on: {text}");
    let requests = team.server.requests();
    assert!(requests.contains("MOCK-PLANT-HOME exit=1 person"), "refused: {text}");
    assert!(requests.contains("Permission denied"), "the kernel refused it: {text}");
    assert!(requests.contains("MOCK-PLANT-HOME exit=0 own"), "its own home is its own: {text}");
    assert!(!team.home().join(".claude/settings.json").exists(), "the person's settings");
    never_loaded(&team, &["MOCK-PERSON-HOOK-42"], &["person-hook-ran"], &text);
    never_loaded_beyond_the_worker(&team, &["MOCK-HOME-HOOK-42"], &text);
    assert!(!team.root.parent().unwrap().join("home-hook-ran").exists());
    assert_eq!(team.landings(), ["1|APPROVE (round 2)"], "{text}");
    // The worker's session stayed in its home for the fix round; the planted settings did not.
    let worker = team.homes().join("1.worker");
    let sessions = std::fs::read_dir(worker.join("projects")).unwrap().count();
    assert!(sessions > 0, "the worker's session is kept in {}", worker.display());
    assert!(!worker.join("settings.json").exists(), "replaced by the person's (none)");
    homes_hold_no_login(&team, &["1.worker", "1.reviewer"]);
}

/// A codex worker edits the lane's `AGENTS.md` (its task may), hides a `.codex/config.toml`
/// and a skill, and writes the person's `~/.codex/config.toml` (refused) and its own home's
/// `AGENTS.md`: its reviewer and its own fix round load none of it — not even with the
/// person's config trusting the lane — and get main's `AGENTS.md`.
#[test]
fn a_codex_worker_configures_no_later_role_and_main_agents_md_is_given_instead() {
    let Some(bin) = clis() else { return };
    let plan = "[[task]]\nid = \"1\"\ntitle = \"Add the greeting\"\ndod = \"src/one.txt names the task MOCK-PLANT-CONFIG MOCK-PLANT-HOME\"\nwrites = [\"src/one.txt\", \"AGENTS.md\"]\n";
    let files = [
        ("README.md", "mine\n"),
        ("plan.toml", plan),
        ("AGENTS.md", "MAIN-AGENTS-MD-MARKER: keep every line under 100 characters.\n"),
    ];
    let team = Team::new("codex", &files, 1);
    // The person trusts the lane's project configuration.
    // Where the run will make it: under the person's HOME, in breeze's data folder.
    let lane = team.lane("lane-1");
    let config = format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", lane.display());
    let person_config = team.home().join(".codex/config.toml");
    std::fs::create_dir_all(person_config.parent().unwrap()).unwrap();
    std::fs::write(&person_config, &config).unwrap();

    let (code, text) = team.run(&bin);
    assert_eq!(code, Some(0), "the run goes on: {text}");
    let requests = team.server.requests();
    assert!(requests.contains("MOCK-PLANT-CONFIG planted=2"), "the worker planted it: {text}");
    assert!(requests.contains("MOCK-PLANT-HOME exit=1 person"), "refused: {text}");
    assert!(requests.contains("MOCK-PLANT-HOME exit=0 own"), "its own home is its own: {text}");
    assert_eq!(std::fs::read_to_string(&person_config).unwrap(), config, "the person's config");
    never_loaded(
        &team,
        &[
            "MOCK-LANE-AGENTS-MD",
            "MOCK-LANE-CODEX-CONFIG",
            "MOCK-LANE-SKILL",
            "MOCK-PERSON-CODEX-CONFIG",
        ],
        &[],
        &text,
    );
    never_loaded_beyond_the_worker(&team, &["MOCK-HOME-AGENTS-MD"], &text);
    let reviews = team.requests_of("You are the **Reviewer**");
    assert!(!reviews.is_empty(), "{text}");
    assert!(reviews.iter().all(|r| r.contains("MAIN-AGENTS-MD-MARKER")), "{text}");
    // The task's own AGENTS.md landed with it, reviewed.
    assert_eq!(team.landings(), ["1|APPROVE (round 2)"], "{text}");
    assert_eq!(git(&team.root, &["show", "main:AGENTS.md"]), "MOCK-LANE-AGENTS-MD\n");
    homes_hold_no_login(&team, &["1.worker", "1.reviewer"]);
}
