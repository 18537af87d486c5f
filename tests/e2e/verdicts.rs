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
