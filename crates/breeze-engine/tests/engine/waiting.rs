//! `--wait`: a run that waits with the people around it. The test plays the person at
//! another terminal — it leaves decisions as `breeze approve` does, while the run waits —
//! and checks what the run says it waits for, that it is said once per wait (to the
//! journal and the notify command), and how a waiting run stops.

use std::time::Duration;

use breeze_engine::decision::{HumanDecision, decide};
use breeze_engine::{RunOptions, RunOutcome};
use breeze_protocol::{BreezeStatus, EventKind, ExitCode, RunState, TaskState, WaitingFor};
use tokio_util::sync::CancellationToken;

use breeze_test_support::git;
use breeze_test_support::plan::toml_task;

use super::{Fixture, Handshake, requiring_approval, resume_with, script, shell_worker, task};

type Running = tokio::task::JoinHandle<Result<RunOutcome, breeze_engine::EngineError>>;

/// Options of a run that waits for approvals (`--wait` with `require_approval`).
fn waiting(fixture: &Fixture) -> RunOptions {
    let mut options = requiring_approval(fixture);
    options.wait = true;
    options
}

/// The run's status as `breeze status` shows it while its engine runs.
fn status(fixture: &Fixture) -> Option<BreezeStatus> {
    breeze_engine::load_run(&fixture.root, None).ok().map(|snapshot| snapshot.status_seen(true))
}

/// The tasks the run says it waits for `what`, as the status shows them.
fn waits_for(status: &BreezeStatus, what: WaitingFor) -> Vec<String> {
    status
        .waiting
        .iter()
        .filter(|wait| wait.waiting_for == what)
        .flat_map(|wait| wait.tasks.clone())
        .collect()
}

/// Waits (a bound against hanging, not a measure) until the run says it waits for the
/// approval of `ids`, and hands back the status then.
async fn until_waiting_for_approval(fixture: &Fixture, ids: &[&str]) -> BreezeStatus {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = status(fixture)
            && waits_for(&status, WaitingFor::Approval) == ids
        {
            return status;
        }
        assert!(tokio::time::Instant::now() < deadline, "the run never waited for {ids:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn approve(fixture: &Fixture, ids: &[&str]) {
    let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    decide(&fixture.root, &ids, &HumanDecision::Approve).unwrap();
}

/// The `run_waiting` events of the run: what it said it waits for, each time.
fn said_waits(fixture: &Fixture, outcome: &RunOutcome) -> Vec<Vec<breeze_protocol::RunWait>> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::RunWaiting { waits } => Some(waits),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_waiting_run_lands_what_is_approved_from_another_terminal_and_succeeds_without_a_resume()
{
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "")
        + &toml_task("3", "After the first", &["c.txt"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let run: Running =
        tokio::spawn(breeze_engine::run(waiting(&fixture), CancellationToken::new()));

    let first = until_waiting_for_approval(&fixture, &["1", "2"]).await;
    assert_eq!(first.state, RunState::Running, "{first:?}");
    approve(&fixture, &["1"]);
    // Task 1 lands and task 3 starts after it, while task 2 still waits: one wait goes on.
    let second = until_waiting_for_approval(&fixture, &["2", "3"]).await;
    assert_eq!(task_state(&second, "1"), TaskState::Landed, "{second:?}");
    approve(&fixture, &["2", "3"]);

    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(outcome.exit_code(), ExitCode::Success);
    assert!(outcome.status.waiting.is_empty(), "{outcome:?}");
    assert_eq!(git(&fixture.root, &["rev-list", "--count", "main"]).trim(), "4", "three landings");
    let said = said_waits(&fixture, &outcome);
    let tasks: Vec<Vec<String>> = said.iter().map(|waits| waits[0].tasks.clone()).collect();
    assert_eq!(tasks, [vec!["1", "2"], vec!["2", "3"]], "said when new: {said:?}");
    assert!(
        said.iter().all(|waits| waits.len() == 1 && waits[0].waiting_for == WaitingFor::Approval)
    );
    assert_eq!(said[0][0].since, said[1][0].since, "task 2 waited all along: one wait since then");
    assert_eq!(second.waiting[0].since, said[0][0].since, "the status says since when");
}

fn task_state(status: &BreezeStatus, id: &str) -> TaskState {
    status.tasks.iter().find(|task| task.id == id).map(|task| task.state).unwrap()
}

#[tokio::test]
async fn the_notify_command_is_told_once_per_wait_not_at_each_look() {
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let told = fixture.repo.outside().join("told.txt");
    let mut options = waiting(&fixture);
    options.config.as_mut().unwrap().notify_command = vec![
        "sh".into(),
        "-c".into(),
        format!("echo \"$1 $2\" >> {}", told.display()),
        "sh".into(),
        "{state}".into(),
        "{task}".into(),
    ];
    let run: Running = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));

    until_waiting_for_approval(&fixture, &["1"]).await;
    // The run looks for decisions many times while it waits: still one wait, told once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    approve(&fixture, &["1"]);
    until_waiting_for_approval(&fixture, &["2"]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    approve(&fixture, &["2"]);
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    let lines = std::fs::read_to_string(&told).unwrap();
    let waits: Vec<&str> = lines.lines().filter(|line| line.starts_with("waiting")).collect();
    assert_eq!(waits, ["waiting 1", "waiting 2"], "{lines}");
}

#[tokio::test]
async fn a_waiting_run_stopped_with_ctrl_c_stops_resumably_and_says_waiting() {
    let plan = toml_task("1", "First", &["a.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let cancel = CancellationToken::new();
    let run: Running = tokio::spawn(breeze_engine::run(waiting(&fixture), cancel.clone()));
    until_waiting_for_approval(&fixture, &["1"]).await;
    cancel.cancel();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    assert_eq!(outcome.exit_code(), ExitCode::Interrupted);
    assert!(outcome.stop_reason.as_deref().unwrap().contains("await approval"), "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::AwaitingApproval, "{outcome:?}");

    // As `breeze status` says it, with no engine: waiting, and what for.
    let seen = breeze_engine::load_run(&fixture.root, None).unwrap().status_seen(false);
    assert_eq!(seen.state, RunState::Waiting, "{seen:?}");
    assert_eq!(waits_for(&seen, WaitingFor::Approval), ["1"], "{seen:?}");
    let json = serde_json::to_value(&seen).unwrap();
    assert_eq!(json["state"], "waiting", "{json}");
    assert_eq!(json["waiting"][0]["waiting_for"], "approval", "{json}");

    approve(&fixture, &["1"]);
    let resumed = resume_with(requiring_approval(&fixture)).await;
    assert_eq!(resumed.state, RunState::Succeeded, "{resumed:?}");
}

#[tokio::test]
async fn a_landing_deferred_by_the_users_merge_is_tried_again_until_the_checkout_is_clean() {
    let plan = toml_task("1", "Change a", &["a.txt"], "");
    let fixture = Fixture::new(&plan, &[("notes.txt", "base\n")]);
    git(&fixture.root, &["checkout", "-qb", "side"]);
    std::fs::write(fixture.root.join("notes.txt"), "side\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "side"]);
    git(&fixture.root, &["checkout", "-q", "main"]);
    let mut options = fixture.options();
    options.wait = true;
    let told = fixture.repo.outside().join("told.txt");
    options.config.as_mut().unwrap().notify_command = vec![
        "sh".into(),
        "-c".into(),
        format!("echo \"$1\" >> {}", told.display()),
        "sh".into(),
        "{state}".into(),
    ];
    let user = Handshake::new(&fixture, &mut options);
    let body = format!(
        "cat > /dev/null\necho done > a.txt\n{}printf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n",
        user.worker_waits()
    );
    shell_worker(&mut options, &script(&fixture, "merging.sh", &body));
    let run: Running = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    // While the worker works, the user starts a merge in their checkout and it conflicts.
    user.when_started().await;
    std::fs::write(fixture.root.join("notes.txt"), "mine\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "mine"]);
    let merge = breeze_test_support::git_output(&fixture.root, &["merge", "-q", "side"]);
    assert!(!merge.status.success(), "the merge conflicts");
    user.go();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while status(&fixture).is_none_or(|status| waits_for(&status, WaitingFor::Checkout) != ["1"]) {
        assert!(tokio::time::Instant::now() < deadline, "the run never waited for the checkout");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The user gives up their merge: the landing, tried again, goes through.
    git(&fixture.root, &["merge", "--abort"]);
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::Landed);
    assert_eq!(std::fs::read_to_string(fixture.root.join("a.txt")).unwrap(), "done\n");
    let deferrals = fixture
        .events(&outcome)
        .into_iter()
        .filter(|event| matches!(event, EventKind::TaskState { state: TaskState::Deferred, .. }))
        .count();
    assert!(deferrals >= 2, "the landing was tried again: {deferrals}");
    // Each try deferred for the same reason is the same wait: told once.
    let lines = std::fs::read_to_string(&told).unwrap();
    let said: Vec<&str> = lines.lines().collect();
    assert_eq!(said, ["deferred", "waiting", "succeeded"], "{lines}");
}
