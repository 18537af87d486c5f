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
command = ["sh", "-c", "exec sh ../../roles/$BREEZE_TASK_ID.sh"]
[roles.reviewer]
backend = "scripted"
[roles.advisor]
backend = "scripted"
[worktree]
setup = ["sh", "-c", "echo SETUP-RAN-HERE"]
[review]
checks = [["sh", "-c", "grep -q good a.txt || { echo \"CHECK-SAID a.txt holds $(cat a.txt 2>/dev/null)\"; exit 1; }"]]
"#;
    write(&root, "breeze.toml", config);
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
