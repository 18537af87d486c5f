//! A person stepping into a task (`breeze attach`), played by the test: the attach request a
//! live run takes at its next safe point, the pause, what the person changes going through
//! review to main as their attempt (not a worker's), a request withdrawn, and the same
//! between runs (`StoppedAttach`, then `breeze resume`).

use std::path::Path;
use std::time::Duration;

use breeze_engine::journal::read_events;
use breeze_engine::step_in::request::{AttachFiles, Paused};
use breeze_engine::step_in::stopped::{PersonAttempt, StoppedAttach};
use breeze_protocol::{EventKind, PersonOutcome, RunState, TaskState};
use tokio_util::sync::CancellationToken;

use breeze_test_support::git;
use breeze_test_support::plan::toml_task;

use super::{Fixture, Handshake, script, shell_worker, task};

/// Fails every attempt without changing anything.
const FAILING: &str = "echo 'the build is broken' >&2\nexit 1\n";

/// Reports completed.
const COMPLETED: &str = r#"printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT""#;

/// A worker that waits for the test's go on its first attempt, then runs `then`.
fn waiting_worker(fixture: &Fixture, user: &Handshake, then: &str) -> String {
    let body = format!("cat > /dev/null\n{}{then}\n", user.worker_waits());
    script(fixture, "waiting-worker.sh", &body)
}

type Running =
    tokio::task::JoinHandle<Result<breeze_engine::RunOutcome, breeze_engine::EngineError>>;

/// A run of task 1 (`a.txt`) whose worker waits for the test's go on its first attempt,
/// then runs `then`: started, with the task's attach files.
async fn run_waiting(then: &str) -> (Fixture, Handshake, Running, AttachFiles) {
    let fixture = Fixture::new(&toml_task("1", "Fix a", &["a.txt"], ""), &[]);
    let mut options = fixture.options();
    let user = Handshake::new(&fixture, &mut options);
    let worker = waiting_worker(&fixture, &user, then);
    shell_worker(&mut options, &worker);
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    user.when_started().await;
    let files = AttachFiles::new(&run_dir(&fixture.root), "1");
    (fixture, user, run, files)
}

/// The run folder of the repository's only run.
fn run_dir(root: &Path) -> breeze_engine::run_dir::RunDir {
    let id = breeze_engine::run_dir::latest_run(root).expect("a run");
    breeze_engine::run_dir::RunDir::new(root, &id)
}

async fn wait_for_pause(files: &AttachFiles) -> Paused {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(paused) = files.paused() {
            return paused;
        }
        assert!(tokio::time::Instant::now() < deadline, "the task never paused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_until_taken(files: &AttachFiles) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !files.taken() {
        assert!(tokio::time::Instant::now() < deadline, "what the person left was never taken");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn cycles(outcome: &breeze_engine::RunOutcome) -> Vec<serde_json::Value> {
    std::fs::read_to_string(outcome.run_dir.join("cycles.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn a_person_attached_between_attempts_has_their_change_reviewed_and_landed() {
    let (fixture, user, run, files) = run_waiting(FAILING).await;
    // The person asks while attempt 1 runs: nothing pauses in the middle of a role call.
    files.request().unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(files.paused().is_none(), "the attempt going on is not cut");
    user.go();
    let paused = wait_for_pause(&files).await;
    assert_eq!(paused.lane, Some(1));
    assert_eq!(paused.branch, "task/1");
    assert_eq!(paused.worktree, fixture.lane("lane-1"), "{paused:?}");
    std::fs::write(paused.worktree.join("a.txt"), "fixed by a person\n").unwrap();
    files.leave().unwrap();
    wait_until_taken(&files).await;
    let outcome = run.await.unwrap().unwrap();

    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(git(&fixture.root, &["show", "main:a.txt"]), "fixed by a person\n");
    let only = task(&outcome, "1");
    assert_eq!(only.attempts, 1, "the person's attempt is not a worker attempt: {only:?}");
    assert_eq!(only.rounds, 1, "it was reviewed once");
    let events = fixture.events(&outcome);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, EventKind::Attached { task, lane: Some(1), .. } if task == "1"))
    );
    let attempts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventKind::PersonAttempt { outcome, .. } => Some(outcome.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, ["changed"]);
    let lines = cycles(&outcome);
    let person: Vec<_> = lines.iter().filter(|line| line["executor"] == "person").collect();
    assert_eq!(person.len(), 1, "{lines:?}");
    assert_eq!(person[0]["verdict"], "APPROVE");
    assert!(!outcome.run_dir.join("attach").join("1.request.json").exists());
}

#[tokio::test]
async fn a_request_withdrawn_before_the_pause_or_during_it_lets_the_task_go_on() {
    // Withdrawn while the worker runs (Ctrl-C while waiting): no pause at all.
    let (fixture, user, run, files) = run_waiting(&format!("echo done > a.txt\n{COMPLETED}")).await;
    files.request().unwrap();
    files.withdraw();
    user.go();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let events = fixture.events(&outcome);
    assert!(!events.iter().any(|e| matches!(e, EventKind::Attached { .. })), "{events:?}");
    assert_eq!(git(&fixture.root, &["show", "main:a.txt"]), "done\n");

    // Withdrawn once paused (the session never opened): the task goes on where it paused.
    let then = format!(
        "echo \"attempt $BREEZE_ATTEMPT\" > a.txt\n[ \"$BREEZE_ATTEMPT\" = 1 ] && exit 1\n{COMPLETED}"
    );
    let (fixture, user, run, files) = run_waiting(&then).await;
    files.request().unwrap();
    user.go();
    wait_for_pause(&files).await;
    files.withdraw();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(git(&fixture.root, &["show", "main:a.txt"]), "attempt 2\n", "the worker went on");
    let events = fixture.events(&outcome);
    assert!(
        events.iter().any(|e| matches!(
            e,
            EventKind::PersonAttempt { outcome: PersonOutcome::Unchanged, .. }
        )),
        "{events:?}"
    );
    assert_eq!(task(&outcome, "1").attempts, 2);
}

#[tokio::test]
async fn between_runs_a_person_takes_up_an_escalated_task_and_resume_reviews_and_lands_it() {
    let plan = toml_task("1", "Fix a", &["a.txt"], "")
        + &toml_task("2", "After", &["b.txt"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let mut options = fixture.options();
    let user = Handshake::new(&fixture, &mut options);
    user.go();
    let worker = waiting_worker(&fixture, &user, FAILING);
    shell_worker(&mut options, &worker);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(task(&outcome, "1").state, TaskState::Escalated, "{outcome:?}");
    assert_eq!(task(&outcome, "2").state, TaskState::Blocked);

    let attach = StoppedAttach::open(&fixture.root, "1", None).unwrap();
    assert!(breeze_engine::run::engine_alive(&fixture.root), "the attach holds the run");
    attach.record_start().unwrap();
    let worktree = attach.paused.worktree.clone();
    assert_eq!(worktree, fixture.lane("lane-1"), "its last lane's");
    std::fs::write(worktree.join("a.txt"), "fixed by a person\n").unwrap();
    let report = attach.finish().unwrap();
    assert!(report.retried, "{report:?}");
    assert_eq!(report.unblocked, ["2"]);
    let PersonAttempt::Changed { head } = &report.attempt else { panic!("{report:?}") };
    assert_eq!(git(&fixture.root, &["show", &format!("{head}:a.txt")]), "fixed by a person\n");
    assert!(!breeze_engine::run::engine_alive(&fixture.root), "the run is let go");

    // Task 2's worker would fail too: it writes its file now.
    let worker = script(
        &fixture,
        "second-worker.sh",
        &format!("cat > /dev/null\necho after > b.txt\n{COMPLETED}\n"),
    );
    shell_worker(&mut options, &worker);
    let outcome = breeze_engine::resume(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(git(&fixture.root, &["show", "main:a.txt"]), "fixed by a person\n");
    assert_eq!(git(&fixture.root, &["show", "main:b.txt"]), "after\n");
    assert_eq!(task(&outcome, "1").attempts, 3, "no worker attempt after the person's");
    let person: Vec<_> =
        cycles(&outcome).into_iter().filter(|line| line["executor"] == "person").collect();
    assert_eq!(person.len(), 1);
    assert_eq!(person[0]["verdict"], "APPROVE");
    let events: Vec<EventKind> = read_events(&outcome.run_dir.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .map(|event| event.event)
        .collect();
    assert!(events.iter().any(|e| matches!(e, EventKind::Attached { task, .. } if task == "1")));
}
