//! A person in the loop: `land.require_approval`, `breeze approve`/`reject`, `breeze retry`.

use crate::support::{
    SCRIPTED_CONFIG, both, git, repo_with, run_in, status_json, stdout, task_state, toml_task,
};

#[test]
fn reviewed_work_waits_for_approve_and_reject_sends_it_back_with_the_note() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));
    assert!(stdout(&ran).contains("⧗ [1] awaiting approval"), "{}", both(&ran));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "awaiting-approval", "{status}");
    assert_eq!(git(&root, &["rev-list", "--count", "main"]).trim(), "1", "nothing landed yet");

    let rejected = run_in(&root, &["reject", "2"]);
    assert_eq!(rejected.status.code(), Some(2), "--note is required: {}", both(&rejected));
    let approved = run_in(&root, &["approve", "1"]);
    assert_eq!(approved.status.code(), Some(0), "{}", both(&approved));
    assert!(stdout(&approved).contains("breeze resume"), "{}", both(&approved));
    let rejected = run_in(&root, &["reject", "2", "--note", "name the file in the summary"]);
    assert_eq!(rejected.status.code(), Some(0), "{}", both(&rejected));

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(
        resumed.status.code(),
        Some(3),
        "task 2 waits again after its new round: {}",
        both(&resumed)
    );
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
    assert_eq!(task_state(&status, "2"), "awaiting-approval", "{status}");
    assert_eq!(run_in(&root, &["approve", "2"]).status.code(), Some(0));
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let unknown = run_in(&root, &["approve", "9"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", both(&unknown));
}

#[test]
fn retry_gives_an_escalated_task_a_fresh_start_that_resume_runs() {
    let plan = toml_task("1", "A", &["a.txt"], "[task.sim]\nfail_attempts = 3");
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(1), "{}", both(&ran));
    let retried = run_in(&root, &["retry", "1", "--note", "try a smaller change"]);
    assert_eq!(retried.status.code(), Some(0), "{}", both(&retried));
    assert!(stdout(&retried).contains("branch `task/1`"), "{}", both(&retried));
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(task_state(&status_json(&root), "1"), "landed");
}
