//! Roles written as a few lines of shell, driven through the `command` backend exactly
//! as docs/PROTOCOL.md specifies.

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, repo_with, status_json, stderr, task_state,
};

const WORKER: &str = r#"#!/bin/sh
# A worker following the breeze protocol: prompt on stdin, JSON input in $BREEZE_INPUT,
# result in $BREEZE_OUTPUT, cwd = the task worktree. It stages and commits its work with
# git, which works on the lane's private git directory; breeze commits the files.
set -e
prompt=$(cat)
test -f "$BREEZE_INPUT"
test "$(pwd)" = "$BREEZE_WORKTREE"
mkdir -p out
{
  echo "task $BREEZE_TASK_ID attempt $BREEZE_ATTEMPT round $BREEZE_ROUND role $BREEZE_ROLE"
  echo "token: ${GITHUB_TOKEN:-absent}"
  echo "prompt mentions the task: $(echo "$prompt" | grep -c "Task $BREEZE_TASK_ID")"
} > "out/task-$BREEZE_TASK_ID.txt"
git add -A
if git -c user.name="Worker Bee" -c user.email=bee@example.com commit -q -m "work on $BREEZE_TASK_ID" 2>/dev/null; then
  echo "own commit: made" >> "out/task-$BREEZE_TASK_ID.txt"
else
  echo "own commit: refused" >> "out/task-$BREEZE_TASK_ID.txt"
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"wrote out/task-%s.txt"}' "$BREEZE_TASK_ID" > "$BREEZE_OUTPUT"
"#;

const REVIEWER: &str = r#"#!/bin/sh
# A reviewer that prints prose around its JSON and writes no $BREEZE_OUTPUT.
cat > /dev/null
echo "Reviewing task $BREEZE_TASK_ID, round $BREEZE_ROUND."
echo '{"schema_version": "review-result.v1",'
echo ' "verdict": "APPROVE", "gaps": [{"severity": "minor", "location": "out:1", "issue": "style", "suggestion": "none"}]}'
echo "Looks good to me."
"#;

const GARBAGE_WORKER: &str = r#"#!/bin/sh
cat > /dev/null
echo "I am done! {\"schema_version\": \"worker-report.v1\", \"status\": "
echo "oops, that was not JSON"
"#;

fn command_config(worker: &str) -> String {
    format!(
        r#"
[roles.worker]
backend = "command"
command = ["sh", "{worker}"]
[roles.reviewer]
backend = "command"
command = ["sh", "roles/reviewer.sh"]
[roles.advisor]
backend = "scripted"
"#
    )
}

const PLAN: &str = r#"
[[task]]
id = "1"
title = "First output"
dod = "out/task-1.txt exists"
writes = ["out/task-1.txt"]

[[task]]
id = "2"
title = "Second output"
dod = "out/task-2.txt exists"
writes = ["out/task-2.txt"]
"#;

#[test]
fn shell_roles_following_the_protocol_land_their_work() {
    let config = command_config("roles/worker.sh");
    let (_temp, root) = repo_with(&[
        ("roles/worker.sh", WORKER),
        ("roles/reviewer.sh", REVIEWER),
        ("breeze.toml", &config),
        ("plan.toml", PLAN),
    ]);
    let output = breeze()
        .current_dir(&root)
        .env("GITHUB_TOKEN", "ghp_secret")
        .args(["run", "plan.toml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let confined = status_json(&root)["containment"]["kernel"] == true;

    for id in ["1", "2"] {
        let text = std::fs::read_to_string(root.join(format!("out/task-{id}.txt"))).unwrap();
        assert!(text.contains(&format!("task {id} attempt 1 round 1 role worker")), "{text}");
        assert!(text.contains("token: absent"), "GITHUB_TOKEN leaked into the role: {text}");
        assert!(text.contains("prompt mentions the task: 1"), "{text}");
        let message = git(
            &root,
            &["log", "-1", "--format=%an|%s|%B", &format!("--grep=Breeze-Task: {id}$"), "main"],
        );
        // The worker's own commit succeeds in its lane's private git directory, confined or
        // not, and counts for nothing: breeze commits the lane's files as the repository's
        // identity.
        assert!(text.contains("own commit: made"), "confined: {confined}: {text}");
        assert!(message.starts_with("Repo Owner|"), "author: {message}");
        assert!(!git(&root, &["log", "--all", "--format=%an"]).contains("Worker Bee"));
        assert!(message.contains("Breeze-Run: "), "{message}");
    }
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    git(&root, &["fsck", "--strict"]);
    assert_eq!(status_json(&root)["state"], "succeeded");
}

#[test]
fn a_worker_printing_garbage_is_escalated_after_three_attempts() {
    let config = command_config("roles/garbage.sh");
    let (_temp, root) = repo_with(&[
        ("roles/garbage.sh", GARBAGE_WORKER),
        ("roles/reviewer.sh", REVIEWER),
        ("breeze.toml", &config),
        ("plan.toml", PLAN),
    ]);
    let before = git(&root, &["rev-parse", "main"]);
    let output = breeze()
        .current_dir(&root)
        .args(["run", "plan.toml", "--max-workers", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    assert!(!stderr(&output).contains("panicked"));
    let status = status_json(&root);
    assert_eq!(status["state"], "failed");
    for task in status["tasks"].as_array().unwrap() {
        assert_eq!(task["state"], "escalated", "{task}");
        assert_eq!(task["attempts"], 3, "{task}");
        assert!(task["reason"].as_str().unwrap().contains("3 failed attempts"), "{task}");
    }
    assert_eq!(git(&root, &["rev-parse", "main"]), before, "nothing landed");
}

#[test]
fn three_change_requests_escalate_and_block_dependents() {
    let plan = r#"
[[task]]
id = "1"
title = "Never good enough"
dod = "x"
writes = ["a.txt"]
[task.sim]
request_changes = 3

[[task]]
id = "2"
title = "Depends on 1"
dod = "y"
writes = ["b.txt"]
depends_on = ["1"]

[[task]]
id = "3"
title = "Independent"
dod = "z"
writes = ["c.txt"]
"#;
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", plan)]);
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "escalated");
    assert_eq!(task_state(&status, "2"), "blocked");
    assert_eq!(task_state(&status, "3"), "landed");
    let task1 = &status["tasks"][0];
    assert_eq!(task1["rounds"], 3, "no fourth round: {task1}");
    assert!(
        task1["reason"].as_str().unwrap().contains("3 review rounds requested changes"),
        "{task1}"
    );
    // The escalated task's work is kept on its branch.
    assert!(git(&root, &["branch", "--list", "task/*"]).contains("task/1"));
}

#[test]
fn unknown_config_keys_stop_before_anything_runs() {
    let (_temp, root) =
        repo_with(&[("breeze.toml", "[run]\nmax_wrokers = 2\n"), ("plan.toml", PLAN)]);
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(stderr(&output).contains("max_wrokers"), "{}", both(&output));
    assert!(!root.join(".breeze/runs").exists());
}
