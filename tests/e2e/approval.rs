//! A person in the loop: `land.require_approval`, `breeze approve`/`reject`, `breeze retry`.

use std::process::Command;
use std::time::Duration;

use crate::support::{
    Collected, SCRIPTED_CONFIG, Terminal, both, breeze, git, repo_with, run_in, status_json,
    stdout, task_state, toml_task,
};

#[test]
fn reviewed_work_waits_for_approve_and_reject_sends_it_back_with_the_note() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    // Without a terminal the run does not wait: it stops, saying it waits (exit 3).
    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));
    assert!(stdout(&ran).contains("⧗ [1] awaiting approval"), "{}", both(&ran));
    assert!(stdout(&ran).contains(" — waiting (2 lanes)"), "{}", both(&ran));
    assert!(stdout(&ran).contains("\nwaiting for approval of 1, 2 since "), "{}", both(&ran));
    let status = status_json(&root);
    assert_eq!(status["state"], "waiting", "{status}");
    assert_eq!(status["waiting"][0]["waiting_for"], "approval", "{status}");
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

#[test]
fn approve_and_retry_take_several_tasks_and_an_unknown_id_decides_nothing() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    assert_eq!(run_in(&root, &["run"]).status.code(), Some(3));
    let unknown = run_in(&root, &["approve", "1", "9", "2"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", both(&unknown));
    assert!(both(&unknown).contains("has no task 9; nothing was decided"), "{}", both(&unknown));
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(3), "nothing was approved: {}", both(&resumed));
    let approved = run_in(&root, &["approve", "1", "2"]);
    assert_eq!(approved.status.code(), Some(0), "{}", both(&approved));
    assert!(stdout(&approved).contains("approved 1, 2"), "{}", both(&approved));
    assert_eq!(run_in(&root, &["resume"]).status.code(), Some(0));

    let plan = toml_task("1", "A", &["a.txt"], "[task.sim]\nrequest_changes = 3")
        + &toml_task("2", "B", &["b.txt"], "[task.sim]\nrequest_changes = 3");
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    assert_eq!(run_in(&root, &["run"]).status.code(), Some(1));
    let unknown = run_in(&root, &["retry", "1", "2", "nine"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", both(&unknown));
    assert!(both(&unknown).contains("has no task nine"), "{}", both(&unknown));
    let status = status_json(&root);
    assert_eq!(
        (task_state(&status, "1"), task_state(&status, "2")),
        ("escalated".into(), "escalated".into())
    );
    let retried = run_in(&root, &["retry", "1", "2", "--fresh"]);
    assert_eq!(retried.status.code(), Some(0), "{}", both(&retried));
    let said = stdout(&retried);
    assert!(
        said.contains("task 1 starts over from main's tip on a new branch, at attempt 1, round 1 (it had made 3 attempts and 3 rounds; the journal keeps them); its earlier work stays on branch `task/1`")
            && said.contains("its earlier work stays on branch `task/2`"),
        "{said}"
    );
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["earlier_branches"], serde_json::json!(["task/1"]), "{status}");
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("earlier work on branch `task/1`"), "{table}");
    // Started over at round 1, each meets the simulator's three change requests again and
    // escalates after its third round, not its sixth; `clean` says why it keeps the
    // earlier branches.
    assert_eq!(run_in(&root, &["resume"]).status.code(), Some(1));
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["branch"], "task/1-2", "{status}");
    assert_eq!(task_state(&status, "1"), "escalated", "{status}");
    assert_eq!(
        (status["tasks"][0]["attempts"].as_u64(), status["tasks"][0]["rounds"].as_u64()),
        (Some(3), Some(3)),
        "{status}"
    );
    let clean = stdout(&run_in(&root, &["clean", "--dry-run"]));
    assert!(clean.contains("task/1") && clean.contains("retry --fresh"), "{clean}");
}

#[test]
fn a_gate_escalation_names_the_gate_and_its_paths_in_status_report_and_progress() {
    let plan = toml_task(
        "1",
        "A",
        &["a.txt"],
        "[task.sim]\nwrite_outside = \"package-lock.json\"\nwrite_outside_attempts = 3",
    );
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(1), "{}", both(&ran));
    let why = "the write-set gate failed 3 times in a row: package-lock.json is outside the task's writes";
    let progress = stdout(&ran);
    assert!(
        progress.contains(
            "↺ [1] the write-set gate failed: package-lock.json is outside the task's writes"
        ) && progress.contains("— back to the worker")
            && progress.contains(&format!("■ [1] escalated: {why}")),
        "{progress}"
    );
    assert!(!progress.contains("REQUEST_CHANGES") && !progress.contains("Advisor"), "{progress}");
    let status = status_json(&root);
    let task = &status["tasks"][0];
    assert_eq!(
        (task["rounds"].as_u64(), task["gate_failures"].as_u64()),
        (Some(0), Some(3)),
        "{status}"
    );
    assert!(task["reason"].as_str().unwrap().starts_with(why), "{status}");
    assert_eq!(task["cause"]["name"], "write-set", "{status}");
    assert_eq!(task["cause"]["paths"], serde_json::json!(["package-lock.json"]), "{status}");
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains(why), "{table}");
    let report = stdout(&run_in(&root, &["report"]));
    assert!(report.contains(&format!("escalated: {why}")), "{report}");
    assert!(report.contains("## Sent back to the worker"), "{report}");
}

/// Two tasks whose reviewed work waits for approval, on the scripted backend.
fn approval_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)])
}

#[test]
fn a_run_with_wait_lands_what_another_terminal_approves_without_a_resume() {
    let (_temp, root) = approval_repo();
    let run = Collected::start(breeze().current_dir(&root).args(["run", "--wait"]));
    run.wait_for("⧗ waiting for approval of 1, 2 since ", Duration::from_secs(120));
    let status = status_json(&root);
    assert_eq!(status["state"], "running", "it waits, it did not stop: {status}");
    assert_eq!(status["waiting"][0]["tasks"], serde_json::json!(["1", "2"]), "{status}");

    // The second terminal.
    let approved = run_in(&root, &["approve", "1", "2"]);
    assert_eq!(approved.status.code(), Some(0), "{}", both(&approved));
    assert!(stdout(&approved).contains("the live run lands them now"), "{}", both(&approved));
    let (code, text) = run.finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("● [1] landed") && text.contains("● [2] landed"), "{text}");
    assert!(text.contains("2 of 2 tasks landed"), "{text}");
    assert_eq!(git(&root, &["rev-list", "--count", "main"]).trim(), "3");
}

#[test]
fn ctrl_c_stops_a_waiting_run_resumably_and_it_says_waiting() {
    let (_temp, root) = approval_repo();
    let run = Collected::start(breeze().current_dir(&root).args(["run", "--wait"]));
    run.wait_for("⧗ waiting for approval of 1, 2 since ", Duration::from_secs(120));
    let interrupted =
        Command::new("kill").args(["-INT", &run.child.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let (code, text) = run.finish();
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains(" — waiting (2 lanes)") && !text.contains("interrupted"), "{text}");
    let status = status_json(&root);
    assert_eq!(status["state"], "waiting", "{status}");
    assert_eq!(task_state(&status, "2"), "awaiting-approval", "{status}");
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("waiting for approval of 1, 2 since "), "{table}");

    assert_eq!(run_in(&root, &["approve", "1", "2"]).status.code(), Some(0));
    let resumed = run_in(&root, &["resume", "--no-wait"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
}

#[test]
fn on_a_terminal_a_run_waits_by_default_and_its_view_says_for_what() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let (_temp, root) = approval_repo();
    let terminal = Terminal::start_with(&root, "run", &[]);
    terminal.wait_for_drawn("waiting for approval of 1, 2 since", Duration::from_secs(120));
    terminal.wait_for_drawn("breeze: waiting", Duration::from_secs(30));
    assert_eq!(run_in(&root, &["approve", "1", "2"]).status.code(), Some(0));
    let (code, text) = terminal.finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("2 of 2 tasks landed"), "{text}");
}

#[test]
fn watch_approves_and_rejects_what_waits_and_the_live_run_takes_it_up() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let (_temp, root) = approval_repo();
    let run = Collected::start(breeze().current_dir(&root).args(["run", "--wait"]));
    run.wait_for("⧗ waiting for approval of 1, 2 since ", Duration::from_secs(120));
    let mut watch = Terminal::start(&root, "watch");
    watch.wait_for_drawn(
        "a: approve [1] · r: reject [1] · n: next (1 more)",
        Duration::from_secs(30),
    );
    // Task 2 is rejected: `n`, `r`, then `y`.
    watch.type_key(b'n');
    watch.wait_for_drawn("a: approve [2]", Duration::from_secs(10));
    watch.type_key(b'r');
    watch.wait_for_drawn("reject [2] B? y: yes", Duration::from_secs(10));
    watch.type_key(b'y');
    watch.wait_for_drawn("rejected 2: back to its worker", Duration::from_secs(10));
    // Task 1 is approved; a key other than `y` takes a question back first.
    watch.wait_for_drawn("a: approve [1]", Duration::from_secs(30));
    watch.type_key(b'a');
    watch.wait_for_drawn("approve [1] A? y: yes", Duration::from_secs(10));
    watch.type_key(b'y');
    watch.wait_for_drawn("● [1] landed", Duration::from_secs(60));
    // The rejected task comes back reviewed, and waits again: approved from the view too.
    watch.wait_for_drawn("a: approve [2]", Duration::from_secs(120));
    watch.type_key(b'a');
    watch.wait_for_drawn("approve [2] B? y: yes", Duration::from_secs(10));
    watch.type_key(b'y');
    let (code, text) = run.finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("● [1] landed") && text.contains("● [2] landed"), "{text}");
    let (code, watched) = watch.finish();
    assert_eq!(code, Some(0), "{watched}");
    let input = std::fs::read_dir(root.join(".breeze/runs"))
        .unwrap()
        .flatten()
        .map(|run| run.path().join("io/2.worker.2.input.json"))
        .find(|path| path.exists())
        .map(|path| std::fs::read_to_string(path).unwrap())
        .unwrap_or_default();
    assert!(input.contains("rejected in breeze watch"), "the worker is told: {input}");
}
