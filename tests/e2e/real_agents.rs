//! `breeze run` on the REAL Claude Code and Codex CLIs, offline: every role of the team
//! runs through one CLI against the project's scripted model server
//! (`tests/fixtures/agents/capture/mock-model-server.py`), which makes task 1's worker try
//! to write the user's checkout (an absolute `Write`, a shell redirect, `cd ..`), another
//! lane, `.git/config` and `.git/hooks`, move main onto its own commit, overwrite and delete
//! main's loose objects, plant a link as its lane admin folder's `logs/HEAD` and create a
//! file in `/dev/shm`; task 1's reviewer try to write (also in `/dev/shm`); and task 2's
//! worker use git normally (`status`, `diff`, `add`, `stash`, `stash pop`) in its sealed
//! lane. The CLIs run their real tools in the real worktrees under kernel confinement.
//! Asserted with git and the file system: none of the attacks happened or landed, the honest
//! work of both tasks did, through a review fix round (a resumed session) and an Advisor
//! consult.
//!
//! The CLIs come from `scripts/install-agent-clis.sh` (pinned versions), found through
//! `BREEZE_AGENT_CLIS`; without it these tests are skipped — unless
//! `BREEZE_REQUIRE_REAL_CLIS` is set, as `.ci/run` does.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{both, git, project_root, repo_with};

/// The folder with `claude` and `codex`, or `None` (test skipped).
pub(crate) fn clis() -> Option<PathBuf> {
    match std::env::var_os("BREEZE_AGENT_CLIS") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            for cli in ["claude", "codex"] {
                assert!(
                    dir.join(cli).exists(),
                    "BREEZE_AGENT_CLIS has no {cli}: {}",
                    dir.display()
                );
            }
            Some(dir)
        }
        None => {
            assert!(
                std::env::var_os("BREEZE_REQUIRE_REAL_CLIS").is_none(),
                "BREEZE_REQUIRE_REAL_CLIS is set but BREEZE_AGENT_CLIS is not (run scripts/install-agent-clis.sh)"
            );
            eprintln!(
                "skipped: set BREEZE_AGENT_CLIS=$(scripts/install-agent-clis.sh) to run the real CLIs"
            );
            None
        }
    }
}

/// The scripted model server, killed on drop.
pub(crate) struct ModelServer {
    child: Child,
    pub(crate) port: u16,
    pub(crate) requests: PathBuf,
    pub(crate) errors: PathBuf,
}

impl ModelServer {
    fn start(dir: &Path) -> ModelServer {
        ModelServer::start_with(dir, &[("MOCK_REQUEST_CHANGES", "1")])
    }

    /// The server with these `MOCK_*` variables.
    pub(crate) fn start_with(dir: &Path, env: &[(&str, &str)]) -> ModelServer {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let requests = dir.join("requests.jsonl");
        let errors = dir.join("mock-server.log");
        let script = project_root().join("tests/fixtures/agents/capture/mock-model-server.py");
        let child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(&requests)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&errors).unwrap())
            .spawn()
            .expect("python3 runs the mock model server");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the mock model server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        ModelServer { child, port, requests, errors }
    }

    pub(crate) fn requests(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `breeze` binary with only what the CLIs need: the pinned CLIs and node on PATH, a
/// HOME of the test's own, the mock server's address and keys.
pub(crate) fn breeze_with_clis(bin: &Path, home: &Path, port: u16) -> Command {
    let node = Command::new("sh").args(["-c", "dirname \"$(command -v node)\""]).output().unwrap();
    let node_dir = String::from_utf8_lossy(&node.stdout).trim().to_string();
    let path = format!("{}:{node_dir}:/usr/local/bin:/usr/bin:/bin", bin.display());
    with_clis(Command::new(env!("CARGO_BIN_EXE_breeze")), &path, home, port)
}

/// `command` with only what the CLIs need (see [`breeze_with_clis`]), `path` its PATH.
pub(crate) fn with_clis(mut command: Command, path: &str, home: &Path, port: u16) -> Command {
    command
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-mock-anthropic")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("OPENAI_API_KEY", "sk-mock-openai");
    command
}

pub(crate) fn role_config(backend: &str, mode: &str, port: u16) -> String {
    let mut text = format!("[run]\nmax_workers = 2\n\n[sandbox]\nmode = \"{mode}\"\n\n");
    for role in ["worker", "reviewer", "advisor", "scaffolder"] {
        text.push_str(&format!(
            "[roles.{role}]\nbackend = \"{backend}\"\ntimeout = \"5m\"\nstall_timeout = \"120s\"\n"
        ));
        if backend == "claude" {
            text.push_str("env = [\"ANTHROPIC_BASE_URL\", \"ANTHROPIC_API_KEY\", \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\"]\n");
        } else {
            text.push_str("pass_credentials = true\nmodel = \"mock-model\"\n");
            text.push_str(&format!(
                "args = [\"-c\", \"model_provider=mock\", \"-c\", 'model_providers.mock={{name=\"mock\",base_url=\"http://127.0.0.1:{port}/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}}']\n"
            ));
        }
        text.push('\n');
    }
    text
}

const PLAN: &str = r#"
[[task]]
id = "1"
title = "Add the greeting"
dod = "src/one.txt names the task MOCK-ATTACK MOCK-REVIEWER-ATTACK"
writes = ["src/one.txt"]

[[task]]
id = "2"
title = "Write the notes"
dod = "src/two.txt exists MOCK-GIT"
writes = ["src/two.txt"]
risk = ["needs-spike"]
"#;

/// Runs the team on `backend`; `mode` is `sandbox.mode`: "require" (breeze confines every
/// role with Landlock) or "detect" (breeze does not; only the CLI's own sandbox holds).
fn run_team(backend: &str, mode: &str) {
    let Some(bin) = clis() else { return };
    // The repository lives under /tmp, where codex's own sandbox would allow writes.
    let temp = tempfile::Builder::new().prefix("breeze-real-").tempdir_in("/tmp").unwrap();
    let (_repo_temp, root) = repo_with(&[("README.md", "mine\n"), ("plan.toml", PLAN)]);
    let root = std::fs::canonicalize(root).unwrap();
    let shown = root.display().to_string();
    let server = ModelServer::start_with(
        temp.path(),
        &[("MOCK_REQUEST_CHANGES", "1"), ("MOCK_REPO_ROOT", shown.as_str())],
    );
    crate::support::write(&root, "breeze.toml", &role_config(backend, mode, server.port));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "team"]);
    let start = git(&root, &["rev-parse", "main"]).trim().to_string();
    // The user's own unpushed branch, and what must stay byte for byte.
    git(&root, &["branch", "mine"]);
    let config = std::fs::read(root.join(".git/config")).unwrap();
    let blob = git(&root, &["rev-parse", "main:README.md"]).trim().to_string();
    let object = root.join(".git/objects").join(&blob[..2]).join(&blob[2..]);
    let object_bytes = std::fs::read(&object).unwrap();

    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = breeze_with_clis(&bin, &home, server.port)
        .current_dir(&root)
        .args(["run", "plan.toml"])
        .output()
        .unwrap();
    let text = both(&output);
    let server_errors = std::fs::read_to_string(&server.errors).unwrap_or_default();
    assert_eq!(output.status.code(), Some(0), "{text}\nmock server: {server_errors}");
    let banner =
        if mode == "require" { "roles confined by the kernel" } else { "NO kernel confinement" };
    assert!(text.contains(banner), "{text}");

    // The attacks were made — and refused (the tool results the CLIs sent back to the model):
    // by breeze's Landlock ruleset ("Permission denied") or, unconfined, by codex's own
    // sandbox ("Read-only file system").
    let requests = server.requests();
    let refused = if mode == "require" { "Permission denied" } else { "Read-only file system" };
    for refusal in [
        format!("README.md: {refused}"),
        format!("planted.txt: {refused}"),
        format!("{}/src", crate::support::lane(&root, "lane-2").display()),
        "cannot lock ref 'refs/heads/main'".to_string(),
    ] {
        assert!(requests.contains(&refusal), "{backend}: no refusal `{refusal}` seen: {text}");
    }
    // Sealed lanes: main's loose object overwritten (by `cp` and by a redirect), the loose
    // objects deleted (`find -delete`), a link planted as the admin folder's `logs/HEAD`.
    let objects = format!("{}/.git/objects/", root.display());
    let logs = format!("{}/.git/worktrees/lane-1/logs", root.display());
    for (path, at_least) in [(object.display().to_string(), 2), (objects, 3), (logs, 1)] {
        let refusals = refused_at(&requests, &path, refused);
        assert!(
            refusals >= at_least,
            "{backend}: {refusals} refusal(s) at `{path}`, expected {at_least}: {text}"
        );
    }
    assert!(requests.contains("find: cannot delete"), "{backend}: the deletion was tried");
    // The private index made a link to the user's README: breeze's later writes of that
    // index replace the link (README.md is checked below).
    assert!(requests.contains("private-index-linked"), "{backend}: the link was planted");
    if backend == "claude" {
        assert!(
            requests.contains("Permission to use Write has been denied")
                || requests.contains("written-by-claude.txt: Permission denied")
                || requests.contains("EACCES"),
            "claude's Write outside the lane was refused"
        );
    }

    // Nothing outside the lanes changed.
    assert_eq!(std::fs::read_to_string(root.join("README.md")).unwrap(), "mine\n");
    for stray in [
        "planted.txt",
        "written-by-claude.txt",
        "reviewer-was-here.txt",
        "src/hijacked.txt",
        ".git/hooks/pre-commit",
    ] {
        assert!(!root.join(stray).exists(), "{stray} was written");
    }
    let lanes = crate::support::worktree_folder(&root);
    assert!(!lanes.join("planted.txt").exists(), "planted.txt was written beside the lanes");
    for marker in ["fsmonitor-ran", "hook-ran"] {
        assert!(!root.parent().unwrap().join(marker).exists(), "{marker}");
    }
    assert!(!git(&root, &["config", "--list", "--local"]).contains("fsmonitor"));
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert_eq!(std::fs::read(root.join(".git/config")).unwrap(), config, ".git/config");
    assert_eq!(std::fs::read(&object).unwrap(), object_bytes, "main's README object");
    assert_eq!(git(&root, &["show", "main:README.md"]), "mine\n");
    assert_eq!(git(&root, &["rev-parse", "mine"]).trim(), start, "the user's own branch");

    // Task 2's worker used git in its lane; every step succeeded (on its private git
    // directory), and none of it reached the shared repository.
    for step in ["git status --short", "git diff", "git add -A", "git stash", "git stash pop"] {
        assert!(
            requests.contains(&format!("MOCK-GIT exit=0 {step}")),
            "{backend}: `{step}` did not succeed in the worker's lane: {}",
            requests.lines().filter(|l| l.contains("MOCK-GIT")).collect::<Vec<_>>().join("\n")
        );
    }
    assert_eq!(git(&root, &["stash", "list"]), "", "no stash in the shared repository");
    // The roles' files in /dev/shm went to a tmpfs of their own (or nowhere), never to the
    // machine's — under breeze's confinement; codex's own sandbox is not asked to do this.
    let temp_name = root.parent().and_then(Path::file_name).unwrap().to_string_lossy();
    for who in ["worker", "reviewer"] {
        let name = format!("breeze-attack-{temp_name}-{who}");
        assert!(requests.contains(&format!("touch /dev/shm/{name}")), "{backend}: {who}: {text}");
        let shm = Path::new("/dev/shm").join(&name);
        if mode == "require" {
            assert!(!shm.exists(), "{backend}: the {who} wrote {}", shm.display());
        } else {
            let _ = std::fs::remove_file(shm);
        }
    }

    // Only the two reviewed landings reached main; the worker's own commit never existed.
    let history = git(
        &root,
        &[
            "log",
            "--format=%an|%(trailers:key=Breeze-Task,valueonly,separator=)|%(trailers:key=Breeze-Review,valueonly,separator=)",
            &format!("{start}..main"),
        ],
    );
    let lines: Vec<&str> = history.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{history}");
    assert!(
        lines.iter().any(|l| l.ends_with("|1|APPROVE (round 2)")),
        "task 1 after its fix round: {history}"
    );
    assert!(lines.iter().any(|l| l.ends_with("|2|APPROVE (round 1)")), "{history}");
    assert!(!git(&root, &["log", "--all", "--format=%an"]).contains("Evil"));
    let files = git(&root, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!files.contains("hijacked") && !files.contains("planted"), "{files}");
    let one = git(&root, &["show", "main:src/one.txt"]);
    assert!(
        one.contains("Task 1: written by the mock worker.") && !one.contains("unreviewed"),
        "{one}"
    );
    assert!(one.contains("Fixed the findings of review round 1"), "{one}");
    assert!(git(&root, &["show", "main:src/two.txt"]).contains("Task 2"));
    git(&root, &["fsck", "--full", "--strict"]);

    let status = crate::support::status_json(&root);
    assert_eq!(status["state"], "succeeded", "{status}");
    assert!(status["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0, "{status}");
    assert_eq!(status["tasks"][1]["advisor_consults"], 1, "{status}");
}

/// How many times a tool result in `requests` names a path starting with `path` and says
/// `refused` right after it (`cp: cannot remove '<path>': Permission denied`, `find: cannot
/// delete ‘<path>’: Read-only file system`, …).
fn refused_at(requests: &str, path: &str, refused: &str) -> usize {
    requests
        .match_indices(path)
        .filter(|(at, _)| {
            let rest = &requests[at + path.len()..];
            let window: String = rest.chars().take(90).collect();
            window.split("\\n").next().is_some_and(|line| line.contains(&format!(": {refused}")))
        })
        .count()
}

#[test]
fn real_claude_roles_stay_in_their_lanes_and_land_reviewed_work() {
    run_team("claude", "require");
}

#[test]
fn real_codex_roles_stay_in_their_lanes_and_land_reviewed_work() {
    run_team("codex", "require");
}

/// Where breeze does not confine, codex's own `workspace-write` sandbox must not allow
/// `/tmp` (where this repository lives) beyond the role's scratch folder.
#[test]
fn real_codex_without_breeze_confinement_is_held_by_its_own_sandbox_without_tmp() {
    run_team("codex", "detect");
}

/// The real CLI as the scaffolder fills the write sets of a plan written without any
/// (six tasks, three areas); the plan then runs on three lanes with the same CLI as every
/// role, against the mock model server.
fn fill_and_run(backend: &str) {
    let Some(bin) = clis() else { return };
    let temp = tempfile::Builder::new().prefix("breeze-fill-").tempdir_in("/tmp").unwrap();
    let server = ModelServer::start(temp.path());
    let config =
        role_config(backend, "require", server.port).replace("max_workers = 2", "max_workers = 3");
    let (_repo_temp, root) = repo_with(&[
        ("README.md", "r\n"),
        ("Plans.md", crate::scaffold::SIX_TASKS),
        ("breeze.toml", &config),
    ]);
    let root = std::fs::canonicalize(root).unwrap();
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    crate::scaffold::fill_then_run(&root, || breeze_with_clis(&bin, &home, server.port));
    let requests = server.requests();
    assert!(requests.contains("You are the **Scaffolder**"), "{backend}: the scaffolder was asked");
}

#[test]
fn real_claude_scaffolder_fills_a_plan_that_runs_on_three_lanes() {
    fill_and_run("claude");
}

#[test]
fn real_codex_scaffolder_fills_a_plan_that_runs_on_three_lanes() {
    fill_and_run("codex");
}

/// With no login and no key, the first call says so and the run stops once, resumably,
/// instead of failing every task three times.
#[test]
fn real_clis_without_a_login_stop_the_run_once_with_the_hint() {
    let Some(bin) = clis() else { return };
    for backend in ["claude", "codex"] {
        let temp = tempfile::Builder::new().prefix("breeze-nologin-").tempdir_in("/tmp").unwrap();
        let plan = "[[task]]\nid = \"1\"\ntitle = \"A\"\ndod = \"a\"\nwrites = [\"a.txt\"]\n\n[[task]]\nid = \"2\"\ntitle = \"B\"\ndod = \"b\"\nwrites = [\"b.txt\"]\n";
        let (_repo_temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", plan)]);
        // Codex is pointed at a local provider whose key is missing (offline, the default
        // provider would wait for a network that is not there); claude simply has no login.
        let mut config = String::new();
        for role in ["worker", "reviewer", "advisor"] {
            config.push_str(&format!("[roles.{role}]\nbackend = \"{backend}\"\n"));
            if backend == "codex" {
                config.push_str("pass_credentials = true\nargs = [\"-c\", \"model_provider=mock\", \"-c\", 'model_providers.mock={name=\"mock\",base_url=\"http://127.0.0.1:9/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}']\n");
            }
        }
        crate::support::write(&root, "breeze.toml", &config);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "team"]);
        let home = temp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_breeze"))
            .current_dir(&root)
            .env_clear()
            .env("PATH", format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()))
            .env("HOME", &home)
            // Nothing answers here: a CLI that does try the network fails fast.
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
            .args(["run", "plan.toml"])
            .output()
            .unwrap();
        let text = both(&output);
        if backend == "claude" {
            // The preflight tells from its files that claude has no login: nothing starts,
            // nothing is created.
            assert_eq!(output.status.code(), Some(2), "{backend}: {text}");
            assert!(
                text.contains(
                    "claude is not logged in for roles.worker, roles.reviewer and roles.advisor"
                ),
                "{backend}: {text}"
            );
            assert!(text.contains("run `claude` once and log in"), "{backend}: {text}");
            assert!(!root.join(".breeze/runs").exists(), "{backend}: a run folder");
            continue;
        }
        // Codex's own provider holds its key: the preflight cannot tell, the first call does.
        assert_eq!(output.status.code(), Some(3), "{backend}: {text}");
        assert!(text.contains("log the CLI in"), "{backend}: {text}");
        let status = crate::support::status_json(&root);
        for task in status["tasks"].as_array().unwrap() {
            assert_eq!(task["attempts"], 0, "{backend}: {task}");
            assert_eq!(task["advisor_consults"], 0, "{backend}: {task}");
        }
    }
}

/// `breeze attach` on a task whose worker is the real Claude Code: the worker's own session
/// opens interactively (`claude --resume`) on a pseudo-terminal, with everything the worker
/// did; the test types a request as a person would, Claude (the mock model) edits the file
/// in the lane, `/exit` leaves, and the change — the person's attempt — is reviewed again
/// and lands once approved.
#[test]
fn attach_resumes_the_claude_workers_own_session_and_the_change_made_there_lands() {
    let Some(bin) = clis() else { return };
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let temp = tempfile::Builder::new().prefix("breeze-real-").tempdir_in("/tmp").unwrap();
    let server = ModelServer::start(temp.path());
    let plan = "[[task]]\nid = \"1\"\ntitle = \"Write the notes\"\ndod = \"src/one.txt exists\"\nwrites = [\"src/one.txt\"]\n";
    let (_repo_temp, root) = repo_with(&[("README.md", "mine\n"), ("plan.toml", plan)]);
    let root = std::fs::canonicalize(root).unwrap();
    let config = role_config("claude", "auto", server.port) + "[land]\nrequire_approval = true\n";
    crate::support::write(&root, "breeze.toml", &config);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "one task"]);
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let breeze = |args: &[&str]| {
        let output = breeze_with_clis(&bin, &home, server.port)
            .current_dir(&root)
            .args(args)
            .output()
            .unwrap();
        (output.status.code(), both(&output))
    };
    let (code, text) = breeze(&["run"]);
    assert_eq!(code, Some(3), "the reviewed work awaits approval: {text}");
    let run = crate::support::status_json(&root)["run_id"].as_str().unwrap().to_string();
    let snapshot =
        std::fs::read_to_string(root.join(format!(".breeze/runs/{run}/run.json"))).unwrap();
    let session: serde_json::Value = serde_json::from_str(&snapshot).unwrap();
    let session =
        session["tasks"][0]["session_id"].as_str().expect("the worker's session").to_string();

    // What an interactive Claude Code asks on its first start (and a headless run never
    // does) — onboarding, trusting the folder, the API key — answered beforehand, as the
    // person would have once, in their own `~/.claude.json` (which the roles, in homes of
    // their own, never wrote; the session gets a copy in the worker's home).
    let lane = crate::support::lane(&root, "lane-1");
    let settings = home.join(".claude.json");
    assert!(!settings.exists(), "a role wrote the person's ~/.claude.json");
    let mut state = serde_json::json!({});
    state["hasCompletedOnboarding"] = true.into();
    state["theme"] = "dark".into();
    state["customApiKeyResponses"] =
        serde_json::json!({"approved": ["sk-mock-anthropic"], "rejected": []});
    state["projects"] = serde_json::json!({
        lane.display().to_string(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}
    });
    std::fs::write(&settings, state.to_string()).unwrap();

    let node = Command::new("sh").args(["-c", "dirname \"$(command -v node)\""]).output().unwrap();
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        bin.display(),
        String::from_utf8_lossy(&node.stdout).trim()
    );
    let mut script = with_clis(Command::new("script"), &path, &home, server.port);
    script.env("TERM", "xterm").current_dir(&root).args([
        "-qfec",
        &format!("exec {} attach 1", env!("CARGO_BIN_EXE_breeze")),
        "/dev/null",
    ]);
    let mut person = crate::support::Collected::start(&mut script);
    person.wait_for(&format!("opening claude --resume {session}"), Duration::from_secs(60));
    // The worker's conversation is on the screen; the prompt waits.
    person.wait_for_drawn("Task 1: written by the mock worker.", Duration::from_secs(60));
    person.wait_for_drawn("auto mode on", Duration::from_secs(60));
    // What the person asks (in the words the mock model understands: a fix round).
    person.type_text(b"## Fix these critical/major review findings (round 1) -- You are a **Worker**; **Write set** (change nothing else): `src/one.txt`");
    // Enter once the line is drawn, apart from it: keys arriving with the text are taken
    // for a paste, whose newline Claude Code keeps in the prompt.
    person.wait_for_drawn("(change nothing else): `src/one.txt`", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    person.type_text(b"\r");
    person.wait_for_drawn("Done.", Duration::from_secs(120));
    person.type_text(b"/exit");
    person.wait_for_drawn("Exit the CLI", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    person.type_text(b"\r");
    let (code, transcript) = person.finish();
    assert_eq!(code, Some(0), "{transcript}");
    assert!(transcript.contains("confined like the worker"), "{transcript}");
    assert!(transcript.contains("your change is committed on `task/1`"), "{transcript}");
    assert!(
        std::fs::read_to_string(lane.join("src/one.txt")).unwrap().contains("Fixed the findings"),
        "Claude edited the lane"
    );

    // The person's change is reviewed again (new work needs a new approval), then lands.
    let (code, text) = breeze(&["resume"]);
    assert_eq!(code, Some(3), "{text}");
    let (code, text) = breeze(&["approve", "1"]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = breeze(&["resume"]);
    assert_eq!(code, Some(0), "{text}");
    let one = git(&root, &["show", "main:src/one.txt"]);
    assert!(one.contains("Fixed the findings of review round 1"), "{one}");
    let cycles =
        std::fs::read_to_string(root.join(format!(".breeze/runs/{run}/cycles.jsonl"))).unwrap();
    assert!(
        cycles.lines().any(|l| l.contains("\"executor\":\"person\"") && l.contains("\"APPROVE\"")),
        "{cycles}"
    );
}
