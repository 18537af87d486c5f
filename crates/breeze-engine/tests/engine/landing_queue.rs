//! The landing queue (`land.batch = 1`, `land.queue_depth`): approved tasks leave their
//! lanes at once; the queue verifies main+A, main+A+B, main+A+B+C side by side, each in an
//! integration checkout of its own with its own lane number and ports; main moves in order
//! to the longest prefix that passed; the first failing landing is charged (unless it
//! fails the way main does) and the ones after it are verified again without it.
//!
//! Side by side is told from what the verify command itself records (its start and end,
//! its lane, ports and checkout), the landed order from main's first-parent history.

use std::path::Path;

use breeze_engine::decision::{HumanDecision, decide};
use breeze_engine::{RunOptions, RunOutcome};
use breeze_protocol::{EventKind, RunState, TaskState};
use tokio_util::sync::CancellationToken;

use breeze_test_support::git;
use breeze_test_support::plan::toml_task;

use super::{
    Fixture, ids, landings_on_main, requiring_approval, resume_with, script, shell_worker, task,
    verdicts, with_verify,
};

const NAMES: [&str; 6] = ["one", "two", "three", "four", "five", "six"];

/// `count` tasks, `1`…, each writing `src/<one|two|…>.txt`.
fn tasks(count: usize) -> Fixture {
    let plan = NAMES[..count]
        .iter()
        .enumerate()
        .map(|(n, name)| toml_task(&(n + 1).to_string(), name, &[&format!("src/{name}.txt")], ""))
        .collect::<String>();
    Fixture::new(&plan, &[])
}

/// One run of the verify command, as it recorded itself.
#[derive(Debug)]
struct VerifyRun {
    start: u128,
    end: u128,
    lane: String,
    port_base: String,
    checkout: String,
    /// The task files in the verified tree.
    files: String,
}

impl VerifyRun {
    fn overlaps(&self, other: &VerifyRun) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// A verify command that records each of its runs into `dir` (start and end in
/// nanoseconds, `BREEZE_LANE`, `BREEZE_PORT_BASE`, its checkout, the tree's task files),
/// then runs `check` (its exit status is verify's).
fn recording_verify(fixture: &Fixture, dir: &Path, check: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let dir = dir.display();
    script(
        fixture,
        "verify.sh",
        &format!(
            r#"run="{dir}/run.$$.$(date +%s%N)"
files=$(ls src 2>/dev/null | tr '\n' ' ')
echo "$(date +%s%N)|$BREEZE_LANE|$BREEZE_PORT_BASE|$(pwd)|$files" > "$run.start"
{check}
status=$?
date +%s%N > "$run.end"
exit $status
"#
        ),
    )
}

/// The runs `recording_verify` recorded, in the order they started.
fn recorded_runs(dir: &Path) -> Vec<VerifyRun> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let Some(run) = path.to_str().and_then(|p| p.strip_suffix(".start")) else { continue };
        let start = std::fs::read_to_string(&path).unwrap();
        let fields: Vec<&str> = start.trim_end().split('|').collect();
        let end = std::fs::read_to_string(format!("{run}.end")).expect("every run ended");
        runs.push(VerifyRun {
            start: fields[0].parse().unwrap(),
            end: end.trim().parse().unwrap(),
            lane: fields[1].to_string(),
            port_base: fields[2].to_string(),
            checkout: fields[3].to_string(),
            files: fields[4].trim().to_string(),
        });
    }
    runs.sort_by_key(|run| run.start);
    runs
}

/// The tasks landed on main, oldest first, along its first-parent history.
fn landed_order(fixture: &Fixture) -> Vec<String> {
    let log = git(
        &fixture.root,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%(trailers:key=Breeze-Task,valueonly)",
            "main",
        ],
    );
    log.split_whitespace().map(str::to_string).collect()
}

/// Runs `options` until every task awaits a person's approval, approves them all at once
/// and resumes: they land from the queue together.
async fn approve_all_then_resume(
    fixture: &Fixture,
    options: &RunOptions,
    count: usize,
) -> RunOutcome {
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    let all: Vec<String> = (1..=count).map(|n| n.to_string()).collect();
    for id in &all {
        assert_eq!(task(&outcome, id).state, TaskState::AwaitingApproval, "{outcome:?}");
    }
    decide(&fixture.root, &all, &HumanDecision::Approve).unwrap();
    resume_with(options.clone()).await
}

#[tokio::test]
async fn five_approved_landings_are_verified_side_by_side_in_checkouts_of_their_own_and_land_in_order()
 {
    let fixture = tasks(5);
    let dir = fixture.repo.outside().join("verify-runs");
    let verify = recording_verify(&fixture, &dir, "sleep 2");
    let mut options = requiring_approval(&fixture);
    with_verify(&mut options, &verify);
    options.config.as_mut().unwrap().sandbox_writable.push(dir.display().to_string());
    let outcome = approve_all_then_resume(&fixture, &options, 5).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    // Depth 3: main+1, main+1+2 and main+1+2+3 side by side, then main'+4 and main'+4+5.
    let runs = recorded_runs(&dir);
    let trees: Vec<&str> = runs.iter().map(|run| run.files.as_str()).collect();
    assert_eq!(runs.len(), 5, "{runs:#?}");
    let (first, second) = runs.split_at(3);
    let mut first_trees = trees[..3].to_vec();
    first_trees.sort();
    assert_eq!(first_trees, ["one.txt", "one.txt three.txt two.txt", "one.txt two.txt"]);
    for train in [first, second] {
        for (a, b) in train.iter().zip(train.iter().skip(1)) {
            assert!(a.overlaps(b), "verified one after another: {runs:#?}");
        }
        // Each in its own checkout, with its own lane number and ports.
        for (n, a) in train.iter().enumerate() {
            for b in &train[n + 1..] {
                assert_ne!(a.checkout, b.checkout, "{runs:#?}");
                assert_ne!(a.lane, b.lane, "{runs:#?}");
                assert_ne!(a.port_base, b.port_base, "{runs:#?}");
            }
        }
    }
    assert_eq!(landed_order(&fixture), ids(&["1", "2", "3", "4", "5"]));
    let each_once = ["1", "2", "3", "4", "5"].map(|id| (id.to_string(), 1)).into();
    assert_eq!(landings_on_main(&fixture), each_once);
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn approved_tasks_waiting_to_land_hold_no_lane_and_a_sixth_task_starts_meanwhile() {
    // One lane. The verify command waits until task 6's worker has started: a landing that
    // held the lane would keep task 6 from ever starting while it verifies.
    let fixture = tasks(6);
    let dir = fixture.repo.outside().join("started");
    std::fs::create_dir_all(&dir).unwrap();
    let shown = dir.display();
    let worker = script(
        &fixture,
        "worker.sh",
        &format!(
            r#"cat > /dev/null
touch "{shown}/$BREEZE_TASK_ID"
names="one two three four five six"
name=$(echo $names | cut -d' ' -f"$BREEZE_TASK_ID")
mkdir -p src && echo "$name" > "src/$name.txt"
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#
        ),
    );
    let verify = script(
        &fixture,
        "verify.sh",
        &format!(
            "n=0\nwhile [ ! -f {shown}/6 ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n"
        ),
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    with_verify(&mut options, &verify);
    let config = options.config.as_mut().unwrap();
    config.max_workers = 1;
    config.sandbox_writable.push(dir.display().to_string());
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    let events = fixture.events(&outcome);
    let sixth_started = events
        .iter()
        .position(|e| matches!(e, EventKind::TaskStarted { task, .. } if task == "6"))
        .expect("task 6 started");
    let first_landed = events
        .iter()
        .position(|e| matches!(e, EventKind::Landed { .. }))
        .expect("something landed");
    assert!(sixth_started < first_landed, "task 6 waited for a landing to give the lane back");
    // By then the five were approved and waiting to land, off the lane.
    for id in ["1", "2", "3", "4", "5"] {
        let approved = events[..sixth_started].iter().any(|e| {
            matches!(e, EventKind::TaskState { task, state: TaskState::Landing, .. } if task == id)
        });
        assert!(approved, "task {id} was not waiting to land when task 6 started");
    }
    assert_eq!(landed_order(&fixture).len(), 6);
}

#[tokio::test]
async fn a_failing_landing_in_the_middle_is_charged_to_its_task_and_the_rest_land_in_order() {
    let fixture = tasks(5);
    // Task 2's first attempt breaks verify.
    let verify = script(
        &fixture,
        "verify.sh",
        "if [ -f src/two.txt ] && ! grep -q 'attempt 2' src/two.txt; then echo 'FAILED test_two: two is broken'; exit 1; fi\n",
    );
    let mut options = requiring_approval(&fixture);
    with_verify(&mut options, &verify);
    let outcome = approve_all_then_resume(&fixture, &options, 5).await;
    for id in ["1", "3", "4", "5"] {
        assert_eq!(task(&outcome, id).state, TaskState::Landed, "{id}: {outcome:?}");
        assert_eq!(task(&outcome, id).attempts, 1, "{id} was not charged");
    }
    // Task 2 went back to its worker with the failure, and waits for the person again.
    assert_eq!(task(&outcome, "2").state, TaskState::AwaitingApproval, "{outcome:?}");
    assert_eq!(task(&outcome, "2").attempts, 2);
    let input = std::fs::read_to_string(outcome.run_dir.join("io/2.worker.2.input.json")).unwrap();
    assert!(input.contains("FAILED test_two: two is broken"), "{input}");

    // main+1 passed and main+1+2 failed: task 2 is charged (main passes; a second run of
    // the same tree fails again). Task 3 was verified again without task 2, with 4 and 5.
    let events = fixture.events(&outcome);
    let verdicts = verdicts(&events);
    assert!(verdicts.contains(&(ids(&["1"]), "passed".into())), "{verdicts:?}");
    assert!(verdicts.contains(&(ids(&["1", "2"]), "failed".into())), "{verdicts:?}");
    assert!(verdicts.contains(&(ids(&["3", "4", "5"]), "passed".into())), "{verdicts:?}");
    assert!(!verdicts.iter().any(|(tasks, _)| tasks == &ids(&["1", "2", "3"])), "{verdicts:?}");
    assert_eq!(landed_order(&fixture), ids(&["1", "3", "4", "5"]));

    decide(&fixture.root, &ids(&["2"]), &HumanDecision::Approve).unwrap();
    let outcome = resume_with(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(landed_order(&fixture), ids(&["1", "3", "4", "5", "2"]));
    assert!(super::main_passes(&fixture, &verify));
}

#[tokio::test]
async fn landings_failing_only_the_way_main_fails_are_not_charged_and_land_side_by_side() {
    let fixture = Fixture::new(
        &NAMES[..3]
            .iter()
            .enumerate()
            .map(|(n, name)| {
                toml_task(&(n + 1).to_string(), name, &[&format!("src/{name}.txt")], "")
            })
            .collect::<String>(),
        &[("broken.txt", "main is broken\n")],
    );
    let verify = script(
        &fixture,
        "verify.sh",
        "if [ -f broken.txt ]; then echo 'FAILED test_main: broken.txt exists'; exit 1; fi\n",
    );
    let mut options = requiring_approval(&fixture);
    with_verify(&mut options, &verify);
    options.config.as_mut().unwrap().on_main_failure = breeze_engine::OnMainFailure::Land;
    let outcome = approve_all_then_resume(&fixture, &options, 3).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    for id in ["1", "2", "3"] {
        assert_eq!(task(&outcome, id).attempts, 1, "{id} was charged with main's failure");
    }
    let record = breeze_engine::load_run(&fixture.root, None).unwrap();
    for id in ["1", "2", "3"] {
        assert_eq!(record.task(id).unwrap().land_bounces, 0, "{id}");
    }
    // The three prefixes were verified together and each failed only the way main does.
    let verdicts = verdicts(&fixture.events(&outcome));
    for prefix in [ids(&["1"]), ids(&["1", "2"]), ids(&["1", "2", "3"])] {
        assert!(verdicts.contains(&(prefix.clone(), "fails-like-main".into())), "{verdicts:?}");
    }
    assert_eq!(landed_order(&fixture), ids(&["1", "2", "3"]));
}
