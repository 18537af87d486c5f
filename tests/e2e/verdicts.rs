//! Verdicts that hold on real projects (issue 30), through the real binary: why a task came
//! back can be found — `breeze logs TASK` shows every check, verify and setup output of the
//! task, per attempt, none overwritten.

use crate::support::{both, breeze, git, repo_with, run_in, stdout, toml_task, write};

/// A worker whose first attempt fails the check and whose second passes it.
const TWO_ATTEMPTS: &str = r#"#!/bin/sh
cat > /dev/null
if [ "$BREEZE_ATTEMPT" = 1 ]; then echo bad > a.txt; else echo good > a.txt; fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;

#[test]
fn breeze_logs_shows_every_check_and_setup_output_of_the_task_per_attempt() {
    let (_temp, root) =
        repo_with(&[("README.md", "mine\n"), ("plan.toml", &toml_task("1", "A", &["a.txt"], ""))]);
    let config = r#"
[run]
max_workers = 1
[roles.worker]
backend = "command"
command = ["sh", "-c", "exec sh WORKER"]
[roles.reviewer]
backend = "scripted"
[roles.advisor]
backend = "scripted"
[worktree]
setup = ["sh", "-c", "echo SETUP-RAN-HERE"]
[review]
checks = [["sh", "-c", "grep -q good a.txt || { echo \"CHECK-SAID a.txt holds $(cat a.txt 2>/dev/null)\"; exit 1; }"]]
"#;
    let root = std::fs::canonicalize(root).unwrap();
    write(&root, "breeze.toml", &config.replace("WORKER", &crate::support::task_script(&root)));
    write(&root, "roles/1.sh", TWO_ATTEMPTS);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "roles"]);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));

    let logs = run_in(&root, &["logs", "1"]);
    let text = stdout(&logs);
    assert!(text.contains("CHECK-SAID a.txt holds bad"), "attempt 1's check: {text}");
    assert!(text.contains("SETUP-RAN-HERE"), "the lane's setup: {text}");
    // Attempt 2's check passed and printed nothing; its log is there beside attempt 1's.
    let status = crate::support::status_json(&root);
    let log_dir = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap()).join("logs");
    let names: Vec<String> = std::fs::read_dir(log_dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("1.check-1.") && name.ends_with(".stdout"))
        .collect();
    assert!(names.iter().any(|n| n.contains("attempt-1")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("attempt-2")), "{names:?}");
}

const SCRIPTED: &str = r#"
[roles.worker]
backend = "scripted"
[roles.reviewer]
backend = "scripted"
[roles.advisor]
backend = "scripted"
"#;

/// A repository whose `feature` branch (checked out) adds a task to the plan main has.
fn on_a_feature_branch() -> (tempfile::TempDir, std::path::PathBuf) {
    let plan = toml_task("1", "On main", &["a.txt"], "");
    let (temp, root) = repo_with(&[("plan.toml", &plan), ("breeze.toml", SCRIPTED)]);
    git(&root, &["switch", "-qc", "feature"]);
    let plan = plan + &toml_task("2", "Only on feature", &["b.txt"], "");
    write(&root, "plan.toml", &plan);
    git(&root, &["commit", "-qam", "a task on feature"]);
    (temp, root)
}

#[test]
fn a_run_started_on_a_branch_lands_on_that_branch_and_says_so() {
    let (_temp, root) = on_a_feature_branch();
    let main_before = git(&root, &["rev-parse", "main"]);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stdout(&output).contains("landing on feature"), "{}", both(&output));
    assert_eq!(git(&root, &["rev-parse", "main"]), main_before, "main is not the run's branch");
    let landed = git(&root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "feature"]);
    assert!(landed.contains('1') && landed.contains('2'), "{landed}");
    // The plan's markers flip where the plan was read (no `cannot flip` warning).
    assert!(!crate::support::stderr(&output).contains("cannot flip"), "{}", both(&output));
    let status = crate::support::status_json(&root);
    assert_eq!(status["lands_on"], "feature", "{status}");
    assert!(stdout(&run_in(&root, &["status"])).contains("landing on feature"));
}

#[test]
fn a_configured_target_other_than_the_checked_out_branch_is_refused_before_anything_is_made() {
    let (_temp, root) = on_a_feature_branch();
    write(&root, "breeze.toml", &format!("[run]\nmain_branch = \"main\"\n{SCRIPTED}"));
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let said = both(&output);
    assert!(said.contains("\"main\"") && said.contains("\"feature\""), "{said}");
    assert!(said.contains("git switch main"), "{said}");
    assert!(!root.join(".breeze/runs").exists(), "nothing is created");
}

#[test]
fn a_detached_head_is_refused_with_a_hint() {
    let (_temp, root) = on_a_feature_branch();
    git(&root, &["switch", "-q", "--detach", "HEAD"]);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(both(&output).contains("detached"), "{}", both(&output));
    assert!(both(&output).contains("git switch"), "{}", both(&output));
    assert!(!root.join(".breeze/runs").exists(), "nothing is created");
}

/// A cargo crate whose own test fails on main, printing an address and (with
/// `RUST_BACKTRACE=1`) a backtrace: every run of it differs but in what failed.
const FAILING_CRATE: &[(&str, &str)] = &[
    ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
    (
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n\n    #[test]\n    fn test_fmt() {\n        let x = 1;\n        assert_eq!(format!(\"{x:?}\"), \"2\", \"at {:p}\", &x);\n    }\n}\n",
    ),
    (".gitignore", "/target\n"),
];

fn cargo_config(worker: &str) -> String {
    format!(
        r#"
[run]
max_workers = 1
{worker}
[roles.reviewer]
backend = "scripted"
[roles.advisor]
backend = "scripted"
[review]
checks = [["cargo", "test", "--offline", "--no-fail-fast"]]
[land]
verify = ["cargo", "test", "--offline", "--no-fail-fast"]
on_main_failure = "land"
"#
    )
}

fn cargo_breeze(root: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut command = breeze();
    command.env("HOME", crate::ecosystems::tools_home()).env("RUST_BACKTRACE", "1");
    // The lanes beside the repository, not under the tools' home in this project's target
    // folder, where a lane's cargo would take this project's workspace for its own.
    command.env("XDG_DATA_HOME", root.parent().expect("the repository's folder").join("data"));
    command.env_remove("CARGO_TARGET_DIR").env_remove("CARGO_BUILD_TARGET_DIR");
    if let Some(rustup) = crate::ecosystems::rustup_home() {
        command.env("RUSTUP_HOME", rustup);
    }
    command.current_dir(root).args(args).output().unwrap()
}

fn have_cargo() -> bool {
    crate::ecosystems::have("cargo", "Cargo")
        && (crate::ecosystems::rustup_home().is_some() || crate::ecosystems::have("rustc", "Cargo"))
}

#[test]
fn mains_own_failing_test_is_never_charged_to_a_task_in_checks_or_verify() {
    if !have_cargo() {
        return;
    }
    let mut files = FAILING_CRATE.to_vec();
    let plan = toml_task("1", "Notes", &["docs/notes.md"], "");
    files.push(("plan.toml", &plan));
    let (_temp, root) = repo_with(&files);
    write(&root, "breeze.toml", &cargo_config("[roles.worker]\nbackend = \"scripted\"\n"));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = cargo_breeze(&root, &["run", "plan.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let status = crate::support::status_json(&root);
    let task = &status["tasks"][0];
    assert_eq!(task["state"], "landed", "{status}");
    assert_eq!(task["gate_failures"], 0, "never sent back: {status}");
    let journal = std::fs::read_to_string(
        root.join(".breeze/runs").join(status["run_id"].as_str().unwrap()).join("events.jsonl"),
    )
    .unwrap();
    assert!(!journal.contains("\"sent_back\""), "{journal}");
    assert!(journal.contains("fails-like-main"), "verify judged it main's: {journal}");
}

/// A worker whose first attempt adds a test that fails, and whose second fixes it.
const NEW_FAILING_TEST: &str = r#"#!/bin/sh
cat > /dev/null
mkdir -p tests
if [ "$BREEZE_ATTEMPT" = 1 ]; then want=4; else want=3; fi
printf '#[test]\nfn new_case() {\n    assert_eq!(calc::add(1, 2), %s);\n}\n' "$want" > tests/new_case.rs
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;

#[test]
fn a_task_is_charged_only_with_the_tests_main_does_not_fail_and_its_reason_names_them() {
    if !have_cargo() {
        return;
    }
    let mut files = FAILING_CRATE.to_vec();
    let plan = toml_task("1", "New case", &["tests/new_case.rs"], "");
    files.push(("plan.toml", &plan));
    let (temp, root) = repo_with(&files);
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, NEW_FAILING_TEST).unwrap();
    let worker = format!(
        "[roles.worker]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
        script.display()
    );
    write(&root, "breeze.toml", &cargo_config(&worker));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = cargo_breeze(&root, &["run", "plan.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let said = both(&output);
    // Sent back once, for its own test alone — named in the one-line reason.
    let status = crate::support::status_json(&root);
    assert_eq!(status["tasks"][0]["state"], "landed", "{status}");
    assert_eq!(status["tasks"][0]["attempts"], 2, "{status}");
    let journal = std::fs::read_to_string(
        root.join(".breeze/runs").join(status["run_id"].as_str().unwrap()).join("events.jsonl"),
    )
    .unwrap();
    let sent_back: serde_json::Value = serde_json::from_str(
        journal.lines().find(|line| line.contains("\"sent_back\"")).unwrap_or("{}"),
    )
    .unwrap();
    let reason = sent_back["event"]["reason"].as_str().unwrap_or_default();
    assert!(reason.ends_with(": new_case)"), "the failing test ends the reason: {reason}\n{said}");
    assert!(
        reason.contains("test_fmt too, not this change's"),
        "main's is named as such: {reason}"
    );
    assert!(!reason.contains("Compiling") && !reason.contains("0x"), "{reason}");
}

#[test]
fn a_build_folder_the_person_points_elsewhere_is_each_checkouts_own() {
    if !have_cargo() {
        return;
    }
    let files = [
        ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        ("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"),
        (".gitignore", "/target\n"),
        ("plan.toml", &toml_task("1", "Notes", &["docs/notes.md"], "")),
    ];
    let (temp, root) = repo_with(&files);
    write(&root, "breeze.toml", &cargo_config("[roles.worker]\nbackend = \"scripted\"\n"));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let shared = temp.path().join("shared-target");
    let mut command = breeze();
    command.env("HOME", crate::ecosystems::tools_home()).env("CARGO_TARGET_DIR", &shared);
    command.env("XDG_DATA_HOME", temp.path().join("data"));
    if let Some(rustup) = crate::ecosystems::rustup_home() {
        command.env("RUSTUP_HOME", rustup);
    }
    let output = command.current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(both(&output).contains("CARGO_TARGET_DIR="), "said at the start: {}", both(&output));
    assert!(!shared.exists(), "no confined command wrote the shared folder");
}

#[test]
fn a_confined_command_can_take_cargos_package_cache_lock() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let (temp, root) = repo_with(&[("plan.toml", &toml_task("1", "A", &["a.txt"], ""))]);
    let home = temp.path().join("home");
    std::fs::create_dir_all(home.join(".cargo")).unwrap();
    let check = "import fcntl, os; f = open(os.path.expanduser('~/.cargo/.package-cache'), 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('LOCKED')";
    let config = format!(
        "{SCRIPTED}[sandbox]\nmode = \"require\"\nwritable = [\"~/.cargo/registry\", \"~/.cargo/git\"]\n[review]\nchecks = [[\"python3\", \"-c\", \"{check}\"]]\n"
    );
    write(&root, "breeze.toml", &config);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output =
        breeze().env("HOME", &home).current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let status = crate::support::status_json(&root);
    assert_eq!(status["tasks"][0]["gate_failures"], 0, "{status}");
}
