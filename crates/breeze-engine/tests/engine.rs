//! Library-level tests of the engine: real git repositories, the scripted backend (and
//! small shell roles), driven through `breeze_engine::run` / `resume` with an injected
//! cancel token. Results are checked in the run files and with the `git` CLI.

use std::path::PathBuf;
use std::time::Duration;

use breeze_engine::journal::read_events;
use breeze_engine::{BackendKind, Config, RunOptions, RunOutcome};
use breeze_protocol::{EventKind, RunState, TaskState, VerifyOutcome};
use tokio_util::sync::CancellationToken;

use breeze_test_support::plan::{one_task, toml_task};
use breeze_test_support::process::bytes_read_by_this_process;
use breeze_test_support::{TestRepo, git, git_line};

#[path = "engine/attach.rs"]
mod attach;
#[path = "engine/budget.rs"]
mod budget;
#[path = "engine/conventions.rs"]
mod conventions;
#[path = "engine/landing_modes.rs"]
mod landing_modes;
#[path = "engine/landing_queue.rs"]
mod landing_queue;
#[path = "engine/lane_ports.rs"]
mod lane_ports;
#[path = "engine/old_lanes.rs"]
mod old_lanes;
#[path = "engine/pull_request_follow.rs"]
mod pull_request_follow;
#[path = "engine/waiting.rs"]
mod waiting;

struct Fixture {
    repo: TestRepo,
    root: PathBuf,
}

impl Fixture {
    fn new(plan: &str, files: &[(&str, &str)]) -> Fixture {
        let mut all = files.to_vec();
        all.push(("plan.toml", plan));
        all.push(("README.md", "readme\n"));
        let repo = TestRepo::with_files(&all);
        let root = repo.root.clone();
        Fixture { repo, root }
    }

    /// Where breeze's worktree `name` of this repository is (or would be), asked of the
    /// repository opened as the runs open it.
    fn lane(&self, name: &str) -> PathBuf {
        let options = breeze_git::OpenOptions {
            worktree_root: breeze_git::WorktreeRoot::Under(self.repo.worktrees()),
            ..Default::default()
        };
        let repo = breeze_git::Repo::open_with(&self.root, &options).unwrap();
        repo.worktree_root().unwrap().join(name)
    }

    fn options(&self) -> RunOptions {
        let mut config = Config::defaults();
        config.set_all_backends(BackendKind::Scripted);
        // The runs' lanes go with the test's folder.
        config.worktree_root = Some(self.repo.worktrees());
        // The default stall timeout (minutes): only simulated hangs wait for it, and the
        // tests with hangs run on paused time, so nothing depends on how loaded the machine is.
        let mut options = RunOptions::new(&self.root);
        options.plan = Some(self.root.join("plan.toml"));
        options.config = Some(config);
        options
    }

    async fn run(&self) -> RunOutcome {
        breeze_engine::run(self.options(), CancellationToken::new()).await.expect("the run starts")
    }

    fn events(&self, outcome: &RunOutcome) -> Vec<EventKind> {
        read_events(&outcome.run_dir.join("events.jsonl"))
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect()
    }
}

fn task<'a>(outcome: &'a RunOutcome, id: &str) -> &'a breeze_protocol::TaskStatus {
    outcome.status.tasks.iter().find(|t| t.id == id).unwrap_or_else(|| panic!("no task {id}"))
}

#[tokio::test(start_paused = true)]
async fn a_stalled_attempt_is_respawned_once() {
    let fixture = Fixture::new(&one_task("stall_attempts = 1"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn a_second_stall_escalates_with_reason_stalled() {
    let fixture = Fixture::new(&one_task("stall_attempts = 2"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Failed);
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated);
    assert!(only.reason.as_deref().unwrap().contains("stalled"), "{only:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Unfinished);
}

#[tokio::test]
async fn the_same_failure_twice_consults_the_advisor_before_the_third_attempt() {
    let fixture = Fixture::new(
        &one_task("fail_attempts = 2\nfail_message = \"error: tests failed in parser\""),
        &[],
    );
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let only = task(&outcome, "1");
    assert_eq!((only.attempts, only.advisor_consults), (3, 1));
    let consults: Vec<String> = fixture
        .events(&outcome)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::AdvisorConsulted { trigger_hash, .. } => Some(trigger_hash),
            _ => None,
        })
        .collect();
    assert_eq!(consults, ["1:retry-threshold:error-tests-failed-in-parser"]);
    // The guidance reached the third attempt's input.
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.3.input.json")).unwrap();
    assert!(input.contains("\"decision\": \"PLAN\""), "{input}");
}

#[tokio::test]
async fn three_failures_in_a_row_escalate_even_after_advice() {
    let fixture = Fixture::new(&one_task("fail_attempts = 3"), &[]);
    let outcome = fixture.run().await;
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated);
    assert_eq!(only.advisor_consults, 1, "one consult before the third attempt");
    assert_eq!(only.attempts, 3);
    assert!(only.reason.as_deref().unwrap().contains("3 failed attempts"), "{only:?}");
}

#[tokio::test]
async fn an_advisor_stop_escalates_with_its_reason() {
    let plan = toml_task(
        "1",
        "Rotate the signing secret",
        &["a.txt"],
        "[task.sim]\nadvisor_decision = \"STOP\"",
    );
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    assert!(only.reason.as_deref().unwrap().contains("STOP"), "{only:?}");
    assert_eq!(only.attempts, 0, "the preflight consult stopped it before any attempt");
}

#[tokio::test]
async fn a_risky_task_consults_once_before_its_first_attempt() {
    let plan = toml_task("1", "Check permission on delete", &["a.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded);
    assert_eq!(task(&outcome, "1").advisor_consults, 1);
    let request = std::fs::read_to_string(
        outcome.run_dir.join("advisor/1.security-sensitive.1.advisor-request.json"),
    )
    .unwrap();
    assert!(
        request.contains("\"trigger_hash\": \"1:security-sensitive:security-sensitive\""),
        "{request}"
    );
}

#[tokio::test]
async fn a_worker_asking_for_advice_gets_it_and_goes_on() {
    let fixture = Fixture::new(&one_task("ask_advisor = true"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded);
    let only = task(&outcome, "1");
    assert_eq!((only.attempts, only.advisor_consults), (2, 1));
}

#[tokio::test]
async fn a_reviewer_printing_garbage_is_asked_again() {
    let fixture = Fixture::new(&one_task("garbage = [\"reviewer\"]"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").rounds, 1);
}

/// The send-backs of a run's journal: (task, reason, cause).
fn sent_back(
    fixture: &Fixture,
    outcome: &RunOutcome,
) -> Vec<(String, String, breeze_protocol::Cause)> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::SentBack { task, reason, cause } => Some((task, reason, cause)),
            _ => None,
        })
        .collect()
}

fn consults(fixture: &Fixture, outcome: &RunOutcome) -> Vec<String> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::AdvisorConsulted { trigger_hash, .. } => Some(trigger_hash),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_gate_failure_then_a_fix_then_a_review_uses_one_reviewer_round() {
    let fixture = Fixture::new(&one_task("write_outside = \"notes/stray.md\""), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let only = task(&outcome, "1");
    assert_eq!((only.attempts, only.rounds, only.gate_failures), (2, 1, 1), "{only:?}");
    let back = sent_back(&fixture, &outcome);
    assert_eq!(back.len(), 1, "{back:?}");
    let (_, reason, cause) = &back[0];
    assert_eq!(cause.kind, breeze_protocol::CauseKind::Gate);
    assert_eq!(
        (cause.name.as_deref(), cause.paths.as_slice()),
        (Some("write-set"), &["notes/stray.md".to_string()][..])
    );
    assert!(
        reason
            .starts_with("the write-set gate failed: notes/stray.md is outside the task's writes"),
        "{reason}"
    );
    // The worker was told the gate's finding, in the same round.
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(
        input.contains("gate `write-set` failed") && input.contains("notes/stray.md"),
        "{input}"
    );
    assert!(input.contains("\"round\": 1,"), "a gate failure is no round: {input}");
    // The one review the reviewer made approved the fixed work.
    let review =
        std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-1.review-result.json"))
            .unwrap();
    assert!(review.contains("APPROVE"), "{review}");
    assert!(consults(&fixture, &outcome).is_empty(), "a gate failure consults nobody");
    assert!(
        git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .all(|p| p != "notes/stray.md")
    );
}

#[tokio::test]
async fn a_gate_failing_three_times_escalates_naming_the_gate_and_paths_without_rounds_or_advice() {
    let fixture =
        Fixture::new(&one_task("write_outside = \"notes/x.md\"\nwrite_outside_attempts = 3"), &[]);
    let outcome = fixture.run().await;
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    assert_eq!((only.attempts, only.rounds, only.gate_failures), (3, 0, 3), "{only:?}");
    assert_eq!(only.advisor_consults, 0);
    assert_eq!(
        only.reason.as_deref(),
        Some(
            "the write-set gate failed 3 times in a row: notes/x.md is outside the task's writes (add it to the task's writes if the task needs it, or revert it)"
        )
    );
    let cause = only.cause.as_ref().expect("the status carries the cause");
    assert_eq!((cause.kind, cause.times), (breeze_protocol::CauseKind::Gate, Some(3)));
    assert_eq!(cause.paths, ["notes/x.md"]);
    assert!(consults(&fixture, &outcome).is_empty(), "no Advisor about the approach");
    assert!(
        !fixture.events(&outcome).iter().any(|e| matches!(e, EventKind::Reviewed { .. })),
        "no reviewer ran"
    );
    assert_eq!(sent_back(&fixture, &outcome).len(), 2, "two send-backs, then the escalation");
    let escalated = fixture
        .events(&outcome)
        .into_iter()
        .find_map(|event| match event {
            EventKind::TaskState { state: TaskState::Escalated, reason, cause, .. } => {
                Some((reason, cause))
            }
            _ => None,
        })
        .expect("the escalation is journaled");
    assert_eq!(escalated.0.as_deref(), only.reason.as_deref());
    assert_eq!(escalated.1.as_ref(), Some(cause));
}

#[tokio::test]
async fn universal_lessons_reach_later_workers() {
    let plan = toml_task(
        "1",
        "First",
        &["a.txt"],
        "[task.sim]\nrequest_changes = 1\nlesson = \"never log secrets\"",
    ) + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded);
    let input = std::fs::read_to_string(outcome.run_dir.join("io/2.worker.1.input.json")).unwrap();
    assert!(input.contains("never log secrets"), "{input}");
}

#[tokio::test]
async fn conflicting_tasks_never_overlap_and_dependents_wait_for_the_landing() {
    let plan = toml_task("1", "All sources", &["src/**"], "[task.sim]\ndelay_ms = 100")
        + &toml_task("2", "One source", &["src/lib/x.txt"], "[task.sim]\ndelay_ms = 100")
        + &toml_task("3", "Docs", &["docs/"], "depends_on = [\"2\"]");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(outcome.status.workers, 2);
    // Walk the journal: a task is "in flight" from its first Running state to its final state.
    let mut active: Vec<String> = Vec::new();
    let mut landed: Vec<String> = Vec::new();
    for event in fixture.events(&outcome) {
        if let EventKind::TaskState { task, state, .. } = event {
            match state {
                TaskState::Running if !active.contains(&task) => {
                    if task == "3" {
                        assert!(landed.contains(&"2".to_string()), "3 started before 2 landed");
                    }
                    let other = if task == "1" { "2" } else { "1" };
                    if task == "1" || task == "2" {
                        assert!(
                            !active.contains(&other.to_string()),
                            "1 and 2 conflict but ran together"
                        );
                    }
                    active.push(task);
                }
                TaskState::Landed | TaskState::Escalated => {
                    active.retain(|t| *t != task);
                    landed.push(task);
                }
                _ => {}
            }
        }
    }
    assert_eq!(landed.len(), 3);
}

#[tokio::test]
async fn one_connected_write_group_still_runs_three_lanes_when_three_tasks_can_run_together() {
    // 4 writes what 1, 2 and 3 each write: the conflict graph is one connected group, but
    // 1, 2 and 3 conflict with none of one another and are ready together.
    let plan = toml_task("1", "Change a", &["a.txt"], "")
        + &toml_task("2", "Change b", &["b.txt"], "")
        + &toml_task("3", "Change c", &["c.txt"], "")
        + &toml_task(
            "4",
            "Change all",
            &["a.txt", "b.txt", "c.txt"],
            "depends_on = [\"1\", \"2\", \"3\"]",
        );
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(outcome.status.workers, 3);
    let mut lanes: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
    for event in fixture.events(&outcome) {
        if let EventKind::TaskStarted { task, lane, .. } = event {
            lanes.entry(task).or_insert(lane);
        }
    }
    let first_three: std::collections::BTreeSet<u32> =
        ["1", "2", "3"].iter().map(|id| lanes[*id]).collect();
    assert_eq!(first_three, std::collections::BTreeSet::from([1, 2, 3]), "{lanes:?}");
    assert!(outcome.status.tasks.iter().all(|t| t.state == TaskState::Landed), "{outcome:?}");
}

/// A repository whose plan is the Plans.md `plans` (tracked on main), and the options to run it.
fn plans_md_fixture(plans: &str) -> (Fixture, RunOptions) {
    let fixture = Fixture::new("", &[("Plans.md", plans)]);
    let mut options = fixture.options();
    options.plan = Some(fixture.root.join("Plans.md"));
    (fixture, options)
}

/// Runs the Plans.md `plans` (tracked on main) to its end.
async fn run_plans_md(plans: &str) -> (Fixture, RunOutcome) {
    let (fixture, options) = plans_md_fixture(plans);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    (fixture, outcome)
}

#[tokio::test]
async fn a_tracked_plans_md_row_flips_to_done_in_the_landing_commit() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a exists | `a.txt` | - | cc:todo |\n| 2 | Add b | b exists | `b.txt` | 1 | cc:TODO |\n";
    let (fixture, outcome) = run_plans_md(plans).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let on_main = git(&fixture.root, &["show", "main:Plans.md"]);
    assert!(on_main.contains("| 1 | Add a | a exists | `a.txt` | - | cc:done |"), "{on_main}");
    assert!(on_main.contains("| 2 | Add b | b exists | `b.txt` | 1 | cc:done |"), "{on_main}");
    // The flip is part of the task's own commit, not a separate one.
    let files = git(&fixture.root, &["show", "--name-only", "--format=", "main~1"]);
    assert!(files.contains("Plans.md") && files.contains("a.txt"), "{files}");
    assert_eq!(git(&fixture.root, &["rev-list", "--count", "main"]).trim(), "3");
}

#[tokio::test]
async fn ids_repeated_under_two_phases_run_apart_and_each_landing_flips_its_own_row() {
    let plans = "# Plans\n\n## Phase 1: Setup\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1.1 | Add a | a exists | `a.txt` | - | cc:TODO |\n\n## Phase 2: Polish\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1.1 | Add b | b exists | `b.txt` | - | cc:TODO |\n| 1.2 | Add c | c exists | `c.txt` | 1.1 | cc:TODO |\n";
    let (fixture, outcome) = run_plans_md(plans).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    // Only the repeated id is told apart by its section.
    for id in ["Phase 1/1.1", "Phase 2/1.1", "1.2"] {
        assert_eq!(task(&outcome, id).state, TaskState::Landed, "{id}");
    }
    let on_main = git(&fixture.root, &["show", "main:Plans.md"]);
    // Each landing flipped its own row, and nothing else.
    let expected = plans.replace("| cc:TODO |", "| cc:done |");
    assert_eq!(on_main, expected);
    // `1.2` depends on the `1.1` of its own section: it landed after `Phase 2/1.1`.
    let landed = git(
        &fixture.root,
        &["log", "--reverse", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"],
    );
    let order: Vec<&str> = landed.lines().filter(|l| !l.is_empty()).collect();
    let at =
        |id: &str| order.iter().position(|l| *l == id).unwrap_or_else(|| panic!("{id}: {order:?}"));
    assert!(at("Phase 2/1.1") < at("1.2"), "{order:?}");
    let files = git(&fixture.root, &["show", "--name-only", "--format=", "main"]);
    assert!(files.contains("c.txt"), "{files}");
}

#[tokio::test]
async fn a_dependency_on_an_unknown_id_blocks_its_dependents_with_the_reason_and_the_rest_lands() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a exists | `a.txt` | - | cc:TODO |\n| 2 | Add b | b exists | `b.txt` | 1, 9.9 | cc:TODO |\n| 3 | Add c | c exists | `c.txt` | 2 | cc:TODO |\n| 4 | Add d | d exists | `d.txt` | 1 | cc:TODO |\n";
    let (fixture, outcome) = run_plans_md(plans).await;
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Unfinished, "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::Landed);
    assert_eq!(task(&outcome, "4").state, TaskState::Landed);
    let held = task(&outcome, "2");
    assert_eq!(held.state, TaskState::Blocked);
    assert_eq!(held.reason.as_deref(), Some("depends on `9.9`, which is not in the plan"));
    let after = task(&outcome, "3");
    assert_eq!(after.state, TaskState::Blocked);
    assert_eq!(
        after.reason.as_deref(),
        Some("depends on `2`, which cannot run: depends on `9.9`, which is not in the plan")
    );
    let on_main = git(&fixture.root, &["show", "main:Plans.md"]);
    assert!(on_main.contains("| 2 | Add b | b exists | `b.txt` | 1, 9.9 | cc:TODO |"), "{on_main}");
    assert!(!fixture.root.join("b.txt").exists());
}

#[tokio::test]
async fn a_plan_with_to_do_items_without_ids_is_refused_with_the_fill_ids_hint() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a exists | `a.txt` | - | cc:TODO |\n\n## Later\n\n- [ ] Add e `cc:TODO`\n- [ ] Add f `cc:TODO`\n";
    let (fixture, options) = plans_md_fixture(plans);
    let err = breeze_engine::run(options, CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    assert!(err.to_string().starts_with("2 to-do items have no task id in"), "{err}");
    assert!(err.to_string().contains("(lines 9, 10)"), "{err}");
    assert_eq!(
        err.hints(),
        [
            "run `breeze plan --fill-ids` to number the 2 item(s), commit the plan, then `breeze run` again"
        ]
    );
    assert!(!fixture.root.join(".breeze/runs").exists(), "no run was started");
}

#[tokio::test]
async fn a_cancelled_run_resumes_and_lands_everything_exactly_once() {
    let plan = toml_task("1", "Slow one", &["a.txt"], "[task.sim]\ndelay_ms = 400")
        + &toml_task(
            "2",
            "Slow two",
            &["b.txt"],
            "depends_on = [\"1\"]\n[task.sim]\ndelay_ms = 400",
        );
    let fixture = Fixture::new(&plan, &[]);
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        stopper.cancel();
    });
    let mut options = fixture.options();
    options.config.as_mut().unwrap().worker.stall_timeout = Duration::from_secs(30);
    let outcome = breeze_engine::run(options.clone(), cancel).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Interrupted);

    let second = breeze_engine::resume(options, CancellationToken::new()).await.unwrap();
    assert_eq!(second.run_id, outcome.run_id);
    assert_eq!(second.state, RunState::Succeeded, "{second:?}");
    let landed =
        git(&fixture.root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    let mut ids: Vec<&str> = landed.lines().filter(|l| !l.is_empty()).collect();
    ids.sort();
    assert_eq!(ids, ["1", "2"]);
    git(&fixture.root, &["fsck", "--strict"]);

    let again =
        breeze_engine::resume(fixture.options(), CancellationToken::new()).await.unwrap_err();
    assert!(again.to_string().contains("nothing to resume"), "{again}");
}

#[tokio::test]
async fn a_second_run_is_refused_while_one_can_be_resumed() {
    let fixture = Fixture::new(&one_task("delay_ms = 300"), &[]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = breeze_engine::run(fixture.options(), cancel).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted);
    let err = breeze_engine::run(fixture.options(), CancellationToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("can be resumed"), "{err}");
    assert!(err.hints().iter().any(|h| h.contains("breeze resume")));
}

/// Writes an executable shell script outside the repository and returns its path.
fn script(fixture: &Fixture, name: &str, body: &str) -> String {
    breeze_test_support::role::shell_script(fixture.repo.outside(), name, body)
        .display()
        .to_string()
}

/// The test playing the user while a worker works: the worker says it started, the test
/// changes the user's checkout, then lets the worker go on. The worker may write only its
/// lane, so the handshake folder is made writable for it (`sandbox.writable`).
struct Handshake {
    dir: PathBuf,
}

impl Handshake {
    fn new(fixture: &Fixture, options: &mut RunOptions) -> Handshake {
        let dir = fixture.repo.outside().join("handshake");
        std::fs::create_dir_all(&dir).unwrap();
        options.config.as_mut().unwrap().sandbox_writable.push(dir.display().to_string());
        Handshake { dir }
    }

    /// Shell lines for the worker: the first time, say "started" and wait for "go".
    fn worker_waits(&self) -> String {
        let dir = self.dir.display();
        format!(
            "if [ ! -f {dir}/started ]; then touch {dir}/started; while [ ! -f {dir}/go ]; do sleep 0.05; done; fi\n"
        )
    }

    async fn when_started(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !self.dir.join("started").exists() {
            assert!(tokio::time::Instant::now() < deadline, "the worker never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn go(&self) {
        std::fs::write(self.dir.join("go"), "").unwrap();
    }
}

fn shell_worker(options: &mut RunOptions, script: &str) {
    let config = options.config.as_mut().unwrap();
    config.worker.backend = BackendKind::Command;
    config.worker.command = vec!["sh".into(), script.into()];
    config.worker.stall_timeout = Duration::from_secs(30);
}

#[tokio::test]
async fn a_landing_conflict_goes_back_to_the_worker_with_the_files_to_resolve() {
    let plan = toml_task("1", "Change shared", &["shared.txt"], "");
    let fixture = Fixture::new(&plan, &[("shared.txt", "base\n")]);
    let mut options = fixture.options();
    let user = Handshake::new(&fixture, &mut options);
    // While attempt 1 does the work, someone else commits a conflicting change to main in
    // the user's checkout. The next attempt sees the conflict and resolves it.
    let body = format!(
        r#"cat > /dev/null
if grep -q '"files"' "$BREEZE_INPUT"; then
  grep -q '<<<<<<<' shared.txt || exit 3
  printf 'main version\ntask version\n' > shared.txt
else
  echo "task version" > shared.txt
  {wait}
fi
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#,
        wait = user.worker_waits(),
    );
    let worker = script(&fixture, "conflict-worker.sh", &body);
    shell_worker(&mut options, &worker);
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    user.when_started().await;
    std::fs::write(fixture.root.join("shared.txt"), "main version\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "someone else"]);
    user.go();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(git(&fixture.root, &["show", "main:shared.txt"]), "main version\ntask version\n");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(
        input.contains("\"shared.txt\""),
        "the second attempt was told which file conflicts: {input}"
    );
    assert_eq!(task(&outcome, "1").rounds, 2, "the resolution was reviewed again");
    let back = sent_back(&fixture, &outcome);
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0].1, "landing: conflict with main in shared.txt");
    assert_eq!(back[0].2.paths, ["shared.txt"]);
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

/// The journal's tasks that were ever in flight at the same time as another.
fn ran_side_by_side(events: &[EventKind]) -> Vec<(String, String)> {
    let mut active: Vec<String> = Vec::new();
    let mut together = Vec::new();
    for event in events {
        if let EventKind::TaskState { task, state, .. } = event {
            match state {
                TaskState::Running if !active.contains(task) => {
                    together.extend(active.iter().map(|other| (other.clone(), task.clone())));
                    active.push(task.clone());
                }
                state if state.is_terminal() => active.retain(|t| t != task),
                _ => {}
            }
        }
    }
    together
}

/// Issue 23: task A turns the folder `d/` into a file, task B adds `d/three`. Their write
/// sets share no path, but a file and a folder cannot share a name: the planner makes them
/// conflict, so they run one after the other. B, started once A landed, finds `d` a file
/// and gives up; main holds A's change whole and nothing of B's.
#[tokio::test]
async fn a_file_and_a_folder_of_one_name_never_run_side_by_side() {
    let plan = toml_task("A", "Fold d into a file", &["d", "d/one", "d/two"], "")
        + &toml_task("B", "Add d/three", &["d/three"], "");
    let fixture = Fixture::new(&plan, &[("d/one", "one\n"), ("d/two", "two\n")]);
    let mut options = fixture.options();
    let worker = script(
        &fixture,
        "file-folder-worker.sh",
        r#"cat > /dev/null
if [ "$BREEZE_TASK_ID" = A ]; then
  rm -rf d && echo "d is a file" > d
elif [ -f d ]; then
  printf '{"schema_version":"worker-report.v1","status":"escalated","summary":"d is a file now","escalation_reason":"d/three needs a folder d"}' > "$BREEZE_OUTPUT"
  exit 0
else
  echo three > d/three
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#,
    );
    shell_worker(&mut options, &worker);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(ran_side_by_side(&fixture.events(&outcome)), Vec::<(String, String)>::new());
    assert_eq!(task(&outcome, "A").state, TaskState::Landed, "{outcome:?}");
    assert_eq!(task(&outcome, "B").state, TaskState::Escalated, "{outcome:?}");
    let entries = git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(entries.lines().collect::<Vec<_>>(), ["README.md", "d", "plan.toml"]);
    assert_eq!(git(&fixture.root, &["show", "main:d"]), "d is a file\n");
}

/// The same collision when the planner cannot see it: while task A turns the folder `d/`
/// into a file, someone commits `d/three` to main. A's landing is a conflict (libgit2 alone
/// would have landed A and dropped `d/three`); main keeps `d/three` and nothing of A; A goes
/// back with main's `d/three` in place and its own file kept beside it, folds one into the
/// other, and lands.
#[tokio::test]
async fn a_file_landing_onto_a_new_folder_of_its_name_goes_back_and_lands_whole() {
    let plan = toml_task("A", "Fold d into a file", &["d", "d/"], "");
    let fixture = Fixture::new(&plan, &[("d/one", "one\n"), ("d/two", "two\n")]);
    let mut options = fixture.options();
    let user = Handshake::new(&fixture, &mut options);
    let body = format!(
        r#"cat > /dev/null
if grep -q '"files"' "$BREEZE_INPUT"; then
  grep -q '"d/three"' "$BREEZE_INPUT" || exit 3
  aside=$(ls -d d~*) || exit 4
  three=$(cat d/three)
  rm -rf d && mv "$aside" d && echo "$three" >> d
else
  rm -rf d && echo "d is a file" > d
  {wait}
fi
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#,
        wait = user.worker_waits(),
    );
    let worker = script(&fixture, "fold-worker.sh", &body);
    shell_worker(&mut options, &worker);
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    user.when_started().await;
    std::fs::write(fixture.root.join("d/three"), "three\n").unwrap();
    git(&fixture.root, &["add", "d/three"]);
    git(&fixture.root, &["commit", "-qm", "someone adds d/three"]);
    let theirs = git(&fixture.root, &["rev-parse", "main"]);
    user.go();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    // The first landing was a conflict naming both paths, and main did not move for it.
    let input = std::fs::read_to_string(outcome.run_dir.join("io/A.worker.2.input.json")).unwrap();
    assert!(input.contains("\"d\"") && input.contains("\"d/three\""), "{input}");
    let history = git(&fixture.root, &["log", "--format=%s", "main"]);
    assert_eq!(
        history.lines().collect::<Vec<_>>(),
        ["feat: Fold d into a file", "someone adds d/three", "initial"]
    );
    assert_eq!(git(&fixture.root, &["rev-parse", "main~1"]), theirs);
    // Both changes are on main: A's file, holding the `d/three` it replaced.
    let entries = git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(entries.lines().collect::<Vec<_>>(), ["README.md", "d", "plan.toml"]);
    assert_eq!(git(&fixture.root, &["show", "main:d"]), "d is a file\nthree\n");
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn a_failing_verify_goes_back_to_the_worker_with_the_log_tail() {
    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().verify = vec![
        "sh".into(),
        "-c".into(),
        // main has no src/one.txt and passes; the task's first attempt fails.
        "[ ! -f src/one.txt ] || grep -q 'attempt 2' src/one.txt || { echo 'verify: attempt 2 missing'; exit 1; }".into(),
    ];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(
        input.contains("verify_failure") && input.contains("verify: attempt 2 missing"),
        "{input}"
    );
    assert!(git(&fixture.root, &["show", "main:src/one.txt"]).contains("attempt 2"));
}

#[tokio::test]
async fn a_verify_send_back_names_the_command_and_its_last_line_between_the_rounds() {
    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    let config = options.config.as_mut().unwrap();
    // It fails with the task's file only: main itself passes (else the failure is main's).
    let script = "echo building; test -f src/one.txt || exit 0; echo 'not ok 2'; exit 1";
    config.verify = vec!["sh".into(), "-c".into(), script.into()];
    config.max_land_bounces = 1;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    let sent = format!("landing: verify failed (`sh -c {script}` exited 1: not ok 2)");
    // The journal between the two approving rounds: why it went back to the worker.
    let mut story: Vec<String> = fixture
        .events(&outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::Reviewed { round, verdict, .. } => {
                Some(format!("round {round}: {}", verdict.as_str()))
            }
            EventKind::SentBack { reason, .. } => Some(format!("sent back: {reason}")),
            EventKind::TaskState { state: TaskState::Running, reason, .. } => {
                Some(format!("running: {}", reason.as_deref().unwrap_or("null")))
            }
            EventKind::TaskState { state: TaskState::Escalated, reason, .. } => {
                Some(format!("escalated: {}", reason.as_deref().unwrap_or("null")))
            }
            _ => None,
        })
        .collect();
    // Taking the lane and starting the attempt both say "running".
    story.dedup();
    assert_eq!(
        story,
        [
            "running: null".to_string(),
            "round 1: APPROVE".into(),
            format!("sent back: {sent}"),
            format!("running: {sent}"),
            "round 2: APPROVE".into(),
            format!("escalated: {}", sent.replace("verify failed (", "verify failed 2 times (")),
        ]
    );
    let cause = only.cause.as_ref().unwrap();
    assert_eq!((cause.kind, cause.exit_code), (breeze_protocol::CauseKind::Verify, Some(1)));
    assert!(cause.log_tail.as_deref().unwrap().contains("building\nnot ok 2"), "{cause:?}");
    assert_eq!((only.rounds, only.gate_failures), (2, 0));
}

#[tokio::test]
async fn new_worktrees_get_the_declared_ignored_files_and_the_setup_command() {
    let plan = toml_task("1", "Use env", &["out.txt"], "");
    let fixture = Fixture::new(&plan, &[(".gitignore", ".env\n.setup-marker\n")]);
    std::fs::write(fixture.root.join(".env"), "API_URL=http://localhost\n").unwrap();
    let worker = script(
        &fixture,
        "env-worker.sh",
        "cat > /dev/null\ncat .env .setup-marker > out.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n",
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    let config = options.config.as_mut().unwrap();
    config.worktree_include = vec![".env".into()];
    config.worktree_setup = vec!["sh".into(), "-c".into(), "echo setup-ran > .setup-marker".into()];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(
        git(&fixture.root, &["show", "main:out.txt"]),
        "API_URL=http://localhost\nsetup-ran\n"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root.join(".env")).unwrap(),
        "API_URL=http://localhost\n"
    );
}

#[tokio::test]
async fn a_worker_that_wrecks_its_worktree_fails_attempts_and_the_lane_recovers() {
    let plan = toml_task("1", "Wrecker", &["a.txt"], "") + &toml_task("2", "Fine", &["b.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    // Task 1's worker replaces its lane's `.git` file by a folder and leaves files
    // uncommitted (its own git works on a private git directory, so detaching HEAD or
    // committing there changes nothing breeze reads); on its last attempt also a file
    // above the size limit, which breeze neither commits nor discards, so the lane cannot
    // be reused. Task 2's worker behaves.
    let worker = script(
        &fixture,
        "wrecker.sh",
        r#"cat > /dev/null
if [ "$BREEZE_TASK_ID" = 1 ]; then
  git checkout -q --detach
  rm -f .git && mkdir .git && echo 'ref: refs/heads/main' > .git/HEAD
  echo wreck >> a.txt
  if [ "$BREEZE_ATTEMPT" = 3 ]; then truncate -s 11M big.bin; fi
else
  echo fine > b.txt
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#,
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    options.max_workers = Some(1);
    let kept = collect_progress(&mut options);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    let first = task(&outcome, "1");
    assert_eq!(first.state, TaskState::Escalated, "{first:?}");
    // Two attempts fail on the wrecked `.git`; the big file of the third is a gate failure,
    // sent back twice more (breeze neither commits nor discards it) before the task escalates.
    assert_eq!((first.attempts, first.gate_failures), (5, 3), "{first:?}");
    assert!(
        first
            .reason
            .as_deref()
            .unwrap()
            .contains("the file-size gate failed 3 times in a row: big.bin"),
        "the reason names what the worker did last: {first:?}"
    );
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(
        input.contains("\"last_failure\": \"")
            && input.contains("was replaced by a directory")
            && input.contains("leave `.git` alone"),
        "the retry is told what the worker did and why it failed: {input}"
    );
    assert_eq!(
        task(&outcome, "2").state,
        TaskState::Landed,
        "the lane went on with a fresh worktree: {outcome:?}"
    );
    assert_eq!(git(&fixture.root, &["show", "main:b.txt"]), "fine\n");
    // Nothing of the wreck reached main; the repository is whole.
    let files = git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!files.contains("quarantined") && !files.contains("a.txt"), "{files}");
    git(&fixture.root, &["fsck", "--full", "--strict"]);
    // The wrecked worktree is kept for the user, not discarded — and said so when the run
    // ends; the lane's new worktree goes, and so does the landed branch.
    let kept = kept.lock().unwrap().clone();
    assert!(
        kept.iter().any(|line| line.contains("/lane-1:") && line.contains("uncommitted changes")),
        "the lane left behind is named when the run ends: {kept:?}"
    );
    // The lane's new worktree is kept for the next run, parked clean at main's tip (the
    // old one cannot be reused while it holds those changes).
    assert_eq!(worktree_names(&fixture), ["lane-1", "lane-1-2"], "the wreck and the parked lane");
    let parked = fixture.lane("lane-1-2");
    assert_eq!(git(&parked, &["rev-parse", "HEAD"]), git(&fixture.root, &["rev-parse", "main"]));
    assert_eq!(git(&parked, &["status", "--porcelain", "--untracked-files=all"]), "");
    let wreck = std::fs::read_to_string(fixture.lane("lane-1").join("a.txt"));
    assert!(wreck.unwrap().starts_with("wreck\n"), "the worker's uncommitted file is kept");
    assert_eq!(git(&fixture.root, &["branch", "--list", "task/2"]), "", "the landed branch went");
}

#[tokio::test]
async fn rounds_stuck_on_the_same_file_consult_the_advisor_before_escalating() {
    let fixture = Fixture::new(&one_task("request_changes = 3"), &[]);
    let outcome = fixture.run().await;
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated);
    assert_eq!(only.rounds, 3, "no fourth round");
    let reason = only.reason.as_deref().unwrap();
    assert!(reason.contains("plateau") && reason.contains("Advisor (PLAN)"), "{reason}");
    let consults: Vec<String> = fixture
        .events(&outcome)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::AdvisorConsulted { trigger_hash, .. } => Some(trigger_hash),
            _ => None,
        })
        .collect();
    assert_eq!(consults, ["1:pivot-required:src-one-txt"]);
}

#[tokio::test]
async fn a_disabled_advisor_is_never_consulted() {
    let plan = toml_task("1", "Migrate the schema", &["a.txt"], "[task.sim]\nfail_attempts = 2");
    let fixture = Fixture::new(&plan, &[]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().advisor_enabled = false;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").advisor_consults, 0);
    assert!(
        !std::fs::read_dir(outcome.run_dir.join("advisor")).unwrap().any(|_| true),
        "no advisor files"
    );
}

#[tokio::test]
async fn a_deferred_landing_that_meets_a_moved_main_goes_back_to_the_worker_on_resume() {
    let plan = toml_task("1", "Change shared", &["shared.txt"], "");
    let fixture = Fixture::new(&plan, &[("shared.txt", "base\n")]);
    let worker = script(
        &fixture,
        "resolver.sh",
        r#"cat > /dev/null
if grep -q '"files"' "$BREEZE_INPUT"; then
  grep -q '<<<<<<<' shared.txt || exit 3
  printf 'main version\ntask version\n' > shared.txt
else
  echo "task version" > shared.txt
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#,
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    // The user is editing the file the task touches: the landing waits.
    std::fs::write(fixture.root.join("shared.txt"), "my edit\n").unwrap();
    let first = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    assert!(first.stop_reason.as_deref().unwrap().contains("shared.txt"), "{first:?}");
    assert_eq!(std::fs::read_to_string(fixture.root.join("shared.txt")).unwrap(), "my edit\n");

    // The user commits their own, conflicting version to main, then resumes.
    std::fs::write(fixture.root.join("shared.txt"), "main version\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "my version"]);
    let second = breeze_engine::resume(options, CancellationToken::new()).await.unwrap();
    assert_eq!(second.state, RunState::Succeeded, "{second:?}");
    assert_eq!(git(&fixture.root, &["show", "main:shared.txt"]), "main version\ntask version\n");
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn work_lands_on_the_configured_branch_and_nowhere_else() {
    let fixture = Fixture::new(&one_task(""), &[]);
    git(&fixture.root, &["switch", "-qc", "trunk"]);
    let main_before = git(&fixture.root, &["rev-parse", "main"]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().main_branch = "trunk".into();
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert!(git(&fixture.root, &["log", "-1", "--format=%B", "trunk"]).contains("Breeze-Task: 1"));
    assert_eq!(git(&fixture.root, &["rev-parse", "main"]), main_before, "main did not move");
}

#[tokio::test]
async fn a_user_checkout_left_mid_merge_defers_the_landing() {
    let plan = toml_task("1", "Change a", &["a.txt"], "");
    let fixture = Fixture::new(&plan, &[("notes.txt", "base\n")]);
    git(&fixture.root, &["checkout", "-qb", "side"]);
    std::fs::write(fixture.root.join("notes.txt"), "side\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "side"]);
    git(&fixture.root, &["checkout", "-q", "main"]);
    // While the worker works, the user starts a merge in their checkout and it conflicts.
    let mut options = fixture.options();
    let user = Handshake::new(&fixture, &mut options);
    let worker = script(
        &fixture,
        "merging.sh",
        &format!(
            r#"cat > /dev/null
echo done > a.txt
{wait}
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#,
            wait = user.worker_waits()
        ),
    );
    shell_worker(&mut options, &worker);
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    user.when_started().await;
    std::fs::write(fixture.root.join("notes.txt"), "mine\n").unwrap();
    git(&fixture.root, &["commit", "-qam", "mine"]);
    let merge = breeze_test_support::git_output(&fixture.root, &["merge", "-q", "side"]);
    assert!(!merge.status.success(), "the merge conflicts");
    user.go();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::Deferred);
    let cause = task(&outcome, "1").cause.as_ref().map(|cause| cause.kind);
    assert_eq!(
        cause,
        Some(breeze_protocol::CauseKind::Checkout),
        "the checkout's, not the remote's"
    );
    let reason = outcome.stop_reason.as_deref().unwrap();
    assert!(
        reason.contains("middle of a merge") && reason.contains("git merge --abort"),
        "{reason}"
    );
    assert!(fixture.root.join(".git/MERGE_HEAD").exists(), "the user's merge is left alone");
}

/// Options whose backoff waits are milliseconds, so backend-trouble tests run fast.
fn quick_backoff(fixture: &Fixture) -> RunOptions {
    let mut options = fixture.options();
    options.backoff = breeze_engine::roles::backoff::BackoffSettings {
        limit_wait: Duration::from_millis(5),
        limit_waits: 3,
        transient_wait: Duration::from_millis(5),
        transient_waits: 3,
    };
    options
}

fn troubles(fixture: &Fixture, outcome: &RunOutcome) -> Vec<String> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::BackendTrouble { trouble, task, .. } => Some(format!("{task}:{trouble}")),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn passing_api_errors_and_rate_limits_are_waited_out_without_spending_attempts() {
    let fixture = Fixture::new(&one_task("rate_limited_calls = 1\ntransient_calls = 2"), &[]);
    let outcome =
        breeze_engine::run(quick_backoff(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let only = task(&outcome, "1");
    assert_eq!(only.attempts, 1, "no attempt was spent on the backend's trouble");
    assert_eq!(only.advisor_consults, 0, "nor an advisor consult");
    assert_eq!(troubles(&fixture, &outcome), ["1:rate-limited", "1:transient", "1:transient"]);
    // Every call kept its own log.
    let logs: Vec<String> = std::fs::read_dir(outcome.run_dir.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("1.worker.") && name.ends_with(".stderr"))
        .collect();
    assert_eq!(logs.len(), 4, "{logs:?}");
}

fn pauses(fixture: &Fixture, outcome: &RunOutcome) -> Vec<String> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::QuotaPaused { task, role, window, .. } => {
                Some(format!("{task}:{}:{window}", role.as_str()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_call_on_a_backend_beyond_pause_at_waits_for_the_reset_and_spends_no_attempt() {
    let fixture = Fixture::new(&one_task("window_used = 0.95\nwindow_reset_s = 2"), &[]);
    let outcome =
        breeze_engine::run(quick_backoff(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 1);
    // The worker's call reported the window; the reviewer's waited for its reset.
    assert_eq!(pauses(&fixture, &outcome), ["1:reviewer:five_hour"]);
    assert!(troubles(&fixture, &outcome).is_empty(), "a pause is no backend trouble");
    let snapshot = breeze_engine::load_run(&fixture.root, None).unwrap();
    let window = &snapshot.windows[0];
    assert_eq!((window.backend.as_str(), window.used), ("scripted", 0.01), "reset since");
}

#[tokio::test]
async fn a_call_refused_for_a_spent_window_waits_for_its_reset_rather_than_backing_off() {
    let fixture = Fixture::new(&one_task("window_used = 1.0\nwindow_reset_s = 2"), &[]);
    let outcome =
        breeze_engine::run(quick_backoff(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 1);
    // The quick backoff (5 ms, 3 times) would have stopped the run long before the reset.
    assert!(troubles(&fixture, &outcome).is_empty(), "{:?}", troubles(&fixture, &outcome));
    assert_eq!(pauses(&fixture, &outcome), ["1:worker:five_hour"]);
}

#[tokio::test]
async fn a_backend_that_keeps_failing_stops_the_run_resumably_after_its_bound() {
    let fixture = Fixture::new(&one_task("transient_calls = 10"), &[]);
    let outcome =
        breeze_engine::run(quick_backoff(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    let reason = outcome.stop_reason.clone().unwrap();
    assert!(reason.contains("4 times in a row (after waiting 3 times)"), "{reason}");
    assert!(reason.contains("breeze resume"), "{reason}");
    assert_eq!(task(&outcome, "1").attempts, 0);
    assert_eq!(troubles(&fixture, &outcome).len(), 3);
}

#[tokio::test]
async fn a_backend_without_a_login_stops_the_run_once_with_the_hint() {
    let plan = toml_task("1", "A", &["a.txt"], "[task.sim]\nauth_error = true")
        + &toml_task("2", "B", &["b.txt"], "[task.sim]\nauth_error = true");
    let fixture = Fixture::new(&plan, &[]);
    let outcome =
        breeze_engine::run(quick_backoff(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    let reason = outcome.stop_reason.clone().unwrap();
    assert!(reason.contains("Not logged in") && reason.contains("log the CLI in"), "{reason}");
    for id in ["1", "2"] {
        let record = task(&outcome, id);
        assert_eq!((record.attempts, record.advisor_consults), (0, 0), "{record:?}");
        assert_ne!(record.state, TaskState::Escalated);
    }
}

/// The journal's scope decisions of a run: (task, decision, paths).
fn scope_decisions(fixture: &Fixture, outcome: &RunOutcome) -> Vec<(String, String, Vec<String>)> {
    fixture
        .events(outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::ScopeDecided { task, decision, paths, .. } => {
                Some((task, decision.to_string(), paths))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_scope_request_no_other_task_contends_is_granted_and_the_path_lands() {
    let plan = toml_task(
        "1",
        "Add a module",
        &["src/one.txt"],
        "[task.sim]\nneeds_scope = [\"src/mod.rs\"]",
    );
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let only = task(&outcome, "1");
    assert_eq!(only.granted_writes, ["src/mod.rs"]);
    assert_eq!(only.rounds, 1, "a scope request is not a review round");
    let landed = git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(landed.lines().any(|path| path == "src/mod.rs"), "{landed}");
    assert_eq!(
        scope_decisions(&fixture, &outcome),
        [("1".to_string(), "granted".to_string(), vec!["src/mod.rs".to_string()])]
    );
    let contract =
        std::fs::read_to_string(outcome.run_dir.join("contracts/1.sprint-contract.json")).unwrap();
    assert!(
        contract.contains("src/mod.rs"),
        "the contract shows the widened write set: {contract}"
    );
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(input.contains("\"granted\": true"), "the worker is told: {input}");
}

#[tokio::test]
async fn a_scope_request_waits_for_the_busy_task_that_may_write_the_path() {
    let plan = toml_task("1", "Slow one", &["src/a/"], "[task.sim]\ndelay_ms = 600")
        + &toml_task(
            "2",
            "Needs a",
            &["src/b/"],
            "[task.sim]\nneeds_scope = [\"src/a/shared.rs\"]",
        );
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let decisions: Vec<String> =
        scope_decisions(&fixture, &outcome).into_iter().map(|(_, decision, _)| decision).collect();
    assert_eq!(decisions, ["waiting", "granted"], "it waited for task 1, then was granted");
    let order = git(
        &fixture.root,
        &["log", "--reverse", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"],
    );
    let order: Vec<&str> = order.lines().filter(|line| !line.is_empty()).collect();
    assert_eq!(order, ["1", "2"], "task 1 landed before task 2 was given its path");
    assert_eq!(task(&outcome, "2").granted_writes, ["src/a/shared.rs"]);
}

#[tokio::test]
async fn a_scope_request_for_git_internals_is_denied_and_the_worker_goes_on() {
    let fixture = Fixture::new(&one_task("needs_scope = [\".git/hooks/pre-commit\"]"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert!(task(&outcome, "1").granted_writes.is_empty());
    let decisions = scope_decisions(&fixture, &outcome);
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].1, "denied");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(input.contains("\"granted\": false") && input.contains("own folders"), "{input}");
}

#[tokio::test]
async fn a_self_review_that_does_not_hold_goes_back_then_escalates() {
    let fixture = Fixture::new(&one_task("unverified_self_review = 1"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 2, "the first completion was sent back");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(input.contains("self-review does not hold") && input.contains("tests-pass"), "{input}");

    let fixture = Fixture::new(&one_task("unverified_self_review = 5"), &[]);
    let outcome = fixture.run().await;
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    assert!(only.reason.as_deref().unwrap().contains("self-review"), "{only:?}");
    assert_eq!(only.attempts, 3, "two bounces, then escalation");
}

#[tokio::test]
async fn review_checks_run_before_the_reviewer_and_a_failure_goes_back_without_a_round() {
    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().review_checks =
        vec![vec!["sh".into(), "-c".into(), "test -f src/one.txt".into()]];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let input =
        std::fs::read_to_string(outcome.run_dir.join("io/1.reviewer.round-1.try-1.input.json"))
            .unwrap();
    assert!(
        input.contains("check: sh -c test -f src/one.txt") && input.contains("passed"),
        "{input}"
    );

    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    // It fails on the change only: main passes it.
    let check = "test ! -f src/one.txt || { echo the tests fail; exit 1; }";
    options.config.as_mut().unwrap().review_checks =
        vec![vec!["sh".into(), "-c".into(), check.into()]];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    assert_eq!((only.rounds, only.gate_failures, only.advisor_consults), (0, 3, 0), "{only:?}");
    assert_eq!(
        only.reason.as_deref(),
        Some(
            "the check `sh -c test ! -f src/one.txt || { echo the tests fail; exit 1; }` failed 3 times in a row (exited 1: the tests fail)"
        )
    );
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(input.contains("the tests fail"), "the worker is told the check's output: {input}");
    assert!(
        !outcome.run_dir.join("io/1.reviewer.round-1.try-1.input.json").exists(),
        "the reviewer is not asked about work that fails a check"
    );
}

#[tokio::test]
async fn a_check_that_asks_git_about_the_lane_sees_the_attempt_committed() {
    // A check that reads git's index in the lane (a linter of staged files, a "nothing left
    // uncommitted" check): the attempt's commit is no change to it.
    let plan = toml_task("1", "First", &["a.txt"], "") + &toml_task("2", "Second", &["b.txt"], "");
    let check =
        "git diff --quiet && git diff --cached --quiet || { git status --short; exit 1; }\n";
    let fixture = Fixture::new(&plan, &[("check.sh", check)]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().review_checks = vec![vec!["sh".into(), "check.sh".into()]];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    for id in ["1", "2"] {
        let status = task(&outcome, id);
        assert_eq!(status.state, TaskState::Landed, "{status:?}");
        assert_eq!(status.gate_failures, 0, "{status:?}");
    }
}

#[tokio::test]
async fn a_check_main_already_fails_is_mains_and_only_a_different_failure_goes_back() {
    let plan = toml_task("1", "First", &["a.txt"], "") + &toml_task("2", "Second", &["b.txt"], "");
    // main fails the check already; task 2's change makes it fail another way.
    let check = "if [ -e b.txt ]; then echo 'FAIL: b.txt breaks the build'; exit 1; fi\necho 'FAIL: legacy test'; exit 1\n";
    let fixture = Fixture::new(&plan, &[("check.sh", check)]);
    let main_before = git_line(&fixture.root, &["rev-parse", "main"]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().review_checks = vec![vec!["sh".into(), "check.sh".into()]];
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = notices.clone();
    options.progress = std::sync::Arc::new(move |event: &breeze_engine::ProgressEvent| {
        if let breeze_engine::ProgressEvent::Notice { message } = event {
            sink.lock().unwrap().push(message.clone());
        }
    });
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();

    // Task 1 fails the check only the way main does: reviewed and landed, told to the reviewer.
    let first = task(&outcome, "1");
    assert_eq!(first.state, TaskState::Landed, "{first:?}");
    assert_eq!(first.gate_failures, 0, "{first:?}");
    let input: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(outcome.run_dir.join("io/1.reviewer.round-1.try-1.input.json"))
            .unwrap(),
    )
    .unwrap();
    let gate = input["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gate| gate["id"] == "check: sh check.sh")
        .expect("the check is a gate")
        .clone();
    assert_eq!(gate["status"], "inherited", "{gate}");
    let detail = gate["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("main's tip {}", &main_before[..7]))
            && detail.contains("FAIL: legacy test"),
        "{detail}"
    );

    // Task 2 fails it another way: its own failure, sent back, and told main fails too.
    let second = task(&outcome, "2");
    assert_eq!(second.state, TaskState::Escalated, "{second:?}");
    assert_eq!((second.rounds, second.gate_failures), (0, 3), "{second:?}");
    let reason = second.reason.as_deref().unwrap();
    assert!(
        reason.contains("b.txt breaks the build")
            && reason.contains("fails FAIL: legacy test too, not this change's"),
        "{reason}"
    );
    // Its worker was told which failing lines are main's.
    let input = std::fs::read_to_string(outcome.run_dir.join("io/2.worker.2.input.json")).unwrap();
    assert!(input.contains("FAIL: legacy test — which is not this change's"), "{input}");
    let told = notices.lock().unwrap().clone();
    assert!(
        told.iter()
            .any(|notice| notice.contains("`sh check.sh` ([review] checks) fails on main's tip")),
        "{told:?}"
    );

    // Each lane went back to its task after the look at main: main got task 1's file alone,
    // the checkout is clean, and task 2's branch still holds its work.
    let landed = git(&fixture.root, &["show", "--name-only", "--format=", "main"]);
    assert_eq!(landed.trim(), "a.txt", "{landed}");
    assert!(git(&fixture.root, &["status", "--porcelain"]).trim().is_empty());
    let branch = format!("task/{}", breeze_git::Repo::slug("2"));
    let kept = git(&fixture.root, &["show", "--name-only", "--format=", &branch]);
    assert!(kept.contains("b.txt"), "{kept}");
}

#[tokio::test]
async fn a_workers_changelog_line_lands_under_unreleased() {
    let plan = toml_task(
        "1",
        "Add the parser",
        &["src/one.txt"],
        "[task.sim]\nchangelog = \"Add the expression parser\"",
    );
    let fixture = Fixture::new(&plan, &[("CHANGELOG.md", "# Changelog\n\n## 1.0.0\n\n- first\n")]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(
        git(&fixture.root, &["show", "main:CHANGELOG.md"]),
        "# Changelog\n\n## Unreleased\n\n- Add the expression parser\n\n## 1.0.0\n\n- first\n"
    );
    let files = git(&fixture.root, &["show", "--name-only", "--format=", "main"]);
    assert!(files.lines().any(|f| f == "CHANGELOG.md"), "in the landing commit itself: {files}");
}

#[tokio::test]
async fn the_reviewer_sees_the_changelog_line_and_a_rejected_one_never_lands() {
    let plan = toml_task("1", "Add the parser", &["src/one.txt"], "");
    let fixture = Fixture::new(&plan, &[("CHANGELOG.md", "# Changelog\n\n## 1.0.0\n\n- first\n")]);
    // Round 1 asks for a line pointing at an installer piped to a shell; after the change
    // request, round 2 asks for a plain one.
    let worker = script(
        &fixture,
        "changelog-worker.sh",
        r#"cat > /dev/null
mkdir -p src && echo "parser, round $BREEZE_ROUND" > src/one.txt
if [ "$BREEZE_ROUND" = 1 ]; then
  line='Install the parser: curl -fsSL https://get.example.sh/install | sh'
else
  line='Add the expression parser'
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok","changelog":"%s"}' "$line" > "$BREEZE_OUTPUT"
"#,
    );
    // The reviewer approves only a harmless line it finds both in its input and, marked as
    // breeze's, in the diff it reads.
    let reviewer = script(
        &fixture,
        "changelog-reviewer.sh",
        r#"cat > /dev/null
diff=$(sed -n 's/.*"diff_path": "\(.*\)".*/\1/p' "$BREEZE_INPUT")
line=$(sed -n 's/.*"changelog": "\(.*\)".*/\1/p' "$BREEZE_INPUT")
gap() {
  printf '{"schema_version":"review-result.v1","verdict":"REQUEST_CHANGES","type":"code","reviewer_profile":"static","checks":[],"gaps":[{"severity":"critical","location":"CHANGELOG.md","issue":"%s","suggestion":"fix the changelog line"}],"followups":[],"memory_updates":[]}' "$1" > "$BREEZE_OUTPUT"
  exit 0
}
[ -n "$line" ] || gap "no changelog line in the review input"
grep -q '^# ---- Added by breeze when the task lands' "$diff" || gap "no breeze changelog change in the diff"
grep -qxF -- "+- $line" "$diff" || gap "the diff does not add the input's line"
case "$line" in *'| sh'*) gap "the changelog line pipes an installer into a shell" ;; esac
printf '{"schema_version":"review-result.v1","verdict":"APPROVE","type":"code","reviewer_profile":"static","checks":[],"gaps":[],"followups":[],"memory_updates":[]}' > "$BREEZE_OUTPUT"
"#,
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    let config = options.config.as_mut().unwrap();
    config.reviewer.backend = BackendKind::Command;
    config.reviewer.command = vec!["sh".into(), reviewer];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").rounds, 2, "{outcome:?}");

    let round = |n: u32, what: &str| {
        std::fs::read_to_string(outcome.run_dir.join(format!("reviews/1.round-{n}.{what}")))
            .unwrap()
    };
    let first = round(1, "review-result.json");
    assert!(first.contains("pipes an installer into a shell"), "{first}");
    let diff = round(1, "diff");
    assert!(
        diff.contains("+- Install the parser: curl -fsSL https://get.example.sh/install | sh\n"),
        "the round's diff holds the line breeze would add: {diff}"
    );
    let second = round(2, "diff");
    assert!(
        second.contains("+- Add the expression parser\n") && !second.contains("curl"),
        "{second}"
    );
    // What landed is what round 2 approved, and the rejected line never reached main.
    assert_eq!(
        git(&fixture.root, &["show", "main:CHANGELOG.md"]),
        "# Changelog\n\n## Unreleased\n\n- Add the expression parser\n\n## 1.0.0\n\n- first\n"
    );
    let history = git(&fixture.root, &["log", "-p", "main"]);
    assert!(!history.contains("get.example.sh"), "{history}");
}

/// A shell worker that runs `bad` (shell lines, in its lane) on its first attempt and `undo`
/// on the later ones, and writes `<task>.txt` on every attempt, reporting completed.
fn worker_leaving_on_first_attempt(fixture: &Fixture, name: &str, bad: &str, undo: &str) -> String {
    let body = format!(
        r#"cat > /dev/null
if grep -q '"attempt": 1,' "$BREEZE_INPUT"; then
  {bad}
else
  {undo}
fi
echo "task $BREEZE_TASK_ID" > "$BREEZE_TASK_ID.txt"
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#
    );
    script(fixture, name, &body)
}

#[tokio::test]
async fn a_64_gib_sparse_file_and_a_fifo_fail_the_gates_unread_and_the_next_attempt_lands() {
    const SIZE: u64 = 64 << 30;
    let plan = toml_task("1", "Big", &["1.txt", "big.bin"], "")
        + &toml_task("2", "Pipe", &["2.txt", "pipe"], "");
    let fixture = Fixture::new(&plan, &[]);
    // Task 1's first attempt leaves a sparse 64 GiB file (no disk used), task 2's a FIFO
    // nobody writes to (reading it would block forever); their next attempts do without.
    let worker = worker_leaving_on_first_attempt(
        &fixture,
        "bad-files-worker.sh",
        &format!(
            "if [ \"$BREEZE_TASK_ID\" = 1 ]; then truncate -s {SIZE} big.bin; else mkfifo pipe; fi"
        ),
        "rm -f big.bin",
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    let before = bytes_read_by_this_process();
    // A hang fails the test instead of blocking the suite.
    let run = breeze_engine::run(options, CancellationToken::new());
    let outcome = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the run does not hang on the FIFO")
        .unwrap();
    let read = bytes_read_by_this_process() - before;
    eprintln!("this test process read {read} bytes while a {SIZE}-byte file was in a lane");
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert!(read < SIZE / 64, "{read} bytes were read: the big file was");

    for (id, said) in [
        ("1", format!("gate `file-size` failed: files above the {}-byte limit", 10 << 20)),
        ("2", "`pipe` is a FIFO; only files, symlinks and folders can be committed".to_string()),
    ] {
        let only = task(&outcome, id);
        assert_eq!(
            (only.attempts, only.rounds, only.gate_failures),
            (2, 1, 1),
            "a gate failure, not a round: {only:?}"
        );
        let input =
            std::fs::read_to_string(outcome.run_dir.join(format!("io/{id}.worker.2.input.json")))
                .unwrap();
        assert!(input.contains(&said), "the second attempt of {id} is told why: {input}");
        assert_eq!(
            git(&fixture.root, &["show", &format!("main:{id}.txt")]),
            format!("task {id}\n")
        );
    }
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(input.contains(&format!("`big.bin` ({SIZE} bytes)")), "path and size: {input}");
    let gates: Vec<(String, Option<String>)> = sent_back(&fixture, &outcome)
        .into_iter()
        .map(|(task, _, cause)| (task, cause.name))
        .collect();
    assert!(gates.contains(&("1".into(), Some("file-size".into()))), "{gates:?}");
    assert!(gates.contains(&("2".into(), Some("file-type".into()))), "{gates:?}");
    let held = git(&fixture.root, &["log", "--all", "--format=%H", "--", "big.bin", "pipe"]);
    assert_eq!(held, "", "no commit ever held the big file or the FIFO");
}

#[tokio::test]
async fn a_second_consult_carries_the_prior_advice() {
    let plan =
        toml_task("1", "Check permission on delete", &["a.txt"], "[task.sim]\nfail_attempts = 2");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(task(&outcome, "1").advisor_consults, 2, "{outcome:?}");
    let first = outcome.run_dir.join("advisor/1.security-sensitive.1.advisor-request.json");
    assert!(!std::fs::read_to_string(first).unwrap().contains("prior_advisor_response\": {"));
    let second = std::fs::read_to_string(
        outcome.run_dir.join("advisor/1.retry-threshold.2.advisor-request.json"),
    )
    .unwrap();
    let second: serde_json::Value = serde_json::from_str(&second).unwrap();
    let prior = &second["prior_advisor_response"];
    assert!(
        prior["path"].as_str().unwrap().ends_with("1.security-sensitive.1.advisor-response.json"),
        "{prior}"
    );
    assert_eq!(prior["response"]["schema_version"], "advisor-response.v1");
}

#[tokio::test]
async fn cycle_lines_carry_their_attempts_verdict() {
    let fixture = Fixture::new(&one_task("request_changes = 1"), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let lines = std::fs::read_to_string(outcome.run_dir.join("cycles.jsonl")).unwrap();
    let verdicts: Vec<serde_json::Value> = lines
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["verdict"].clone())
        .collect();
    assert_eq!(verdicts, [serde_json::json!("REQUEST_CHANGES"), serde_json::json!("APPROVE")]);
}

fn requiring_approval(fixture: &Fixture) -> RunOptions {
    let mut options = fixture.options();
    options.config.as_mut().unwrap().require_approval = true;
    options
}

async fn resume_with(options: RunOptions) -> RunOutcome {
    breeze_engine::resume(options, CancellationToken::new()).await.expect("the run resumes")
}

#[tokio::test]
async fn approved_work_waits_for_a_person_then_lands_or_goes_back_with_the_note() {
    let plan = toml_task("1", "First", &["a.txt"], "") + &toml_task("2", "Second", &["b.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let outcome =
        breeze_engine::run(requiring_approval(&fixture), CancellationToken::new()).await.unwrap();
    // Without `--wait`, the run stops when only people can move it, saying it waits.
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Interrupted);
    assert!(outcome.stop_reason.as_deref().unwrap().contains("await approval"), "{outcome:?}");
    let waits = &outcome.status.waiting;
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!(waits[0].waiting_for, breeze_protocol::WaitingFor::Approval);
    assert_eq!(waits[0].tasks, ["1", "2"]);
    assert!(waits[0].line().starts_with("waiting for approval of 1, 2 since "), "{waits:?}");
    for id in ["1", "2"] {
        assert_eq!(task(&outcome, id).state, TaskState::AwaitingApproval, "{outcome:?}");
        assert!(task(&outcome, id).reason.as_deref().unwrap().contains(".diff"), "{outcome:?}");
    }
    assert_eq!(git(&fixture.root, &["rev-list", "--count", "main"]).trim(), "1", "nothing landed");

    use breeze_engine::decision::{HumanDecision, decide};
    decide(&fixture.root, &["1".into()], &HumanDecision::Approve).unwrap();
    let note = HumanDecision::Reject { note: "use a constant, not a literal".into() };
    decide(&fixture.root, &["2".into()], &note).unwrap();
    let outcome = resume_with(requiring_approval(&fixture)).await;
    assert_eq!(task(&outcome, "1").state, TaskState::Landed, "{outcome:?}");
    let second = task(&outcome, "2");
    assert_eq!(
        second.state,
        TaskState::AwaitingApproval,
        "back to work, reviewed, waiting again: {second:?}"
    );
    assert_eq!(second.attempts, 2);
    let input = std::fs::read_to_string(outcome.run_dir.join("io/2.worker.2.input.json")).unwrap();
    assert!(
        input.contains("use a constant, not a literal") && input.contains("critical"),
        "{input}"
    );

    decide(&fixture.root, &["2".into()], &HumanDecision::Approve).unwrap();
    let outcome = resume_with(requiring_approval(&fixture)).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let err = decide(&fixture.root, &["2".into()], &HumanDecision::Approve).unwrap_err();
    assert!(err.to_string().contains("not awaiting approval"), "{err}");
}

#[tokio::test]
async fn a_live_run_lands_what_is_approved_while_it_runs() {
    let plan = toml_task("1", "Quick", &["a.txt"], "")
        + &toml_task("2", "Slow", &["b.txt"], "[task.sim]\ndelay_ms = 4000");
    let fixture = Fixture::new(&plan, &[]);
    let run =
        tokio::spawn(breeze_engine::run(requiring_approval(&fixture), CancellationToken::new()));
    // Play the person: approve task 1 as soon as it waits, while task 2 still works.
    use breeze_engine::decision::{HumanDecision, decide};
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(tokio::time::Instant::now() < deadline, "task 1 never waited for approval");
        let waiting = breeze_engine::load_run(&fixture.root, None).is_ok_and(|snapshot| {
            snapshot.task("1").is_some_and(|record| {
                record.phase == breeze_engine::snapshot::TaskPhase::AwaitingApproval
            })
        });
        if waiting {
            decide(&fixture.root, &["1".into()], &HumanDecision::Approve).unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(task(&outcome, "1").state, TaskState::Landed, "landed in the live run: {outcome:?}");
    // Task 2 waited when nothing else was left: the run ends (exit 3) until someone decides.
    assert_eq!(task(&outcome, "2").state, TaskState::AwaitingApproval, "{outcome:?}");
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    decide(&fixture.root, &["2".into()], &HumanDecision::Approve).unwrap();
    let outcome = resume_with(requiring_approval(&fixture)).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
}

#[tokio::test]
async fn a_retried_task_starts_afresh_with_its_work_and_the_note_and_unblocks_its_dependents() {
    let plan = toml_task("1", "Flaky", &["a.txt"], "[task.sim]\nfail_attempts = 3")
        + &toml_task("2", "After", &["b.txt"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(task(&outcome, "1").state, TaskState::Escalated);
    assert_eq!(task(&outcome, "2").state, TaskState::Blocked);
    assert_eq!(outcome.state, RunState::Failed);

    let err = retry(&fixture, &["2"], false).unwrap_err();
    assert!(err.to_string().contains("retry takes an escalated or failed task"), "{err}");
    let options = breeze_engine::decision::RetryOptions {
        note: Some("the build needs --locked".into()),
        fresh: false,
    };
    let report = breeze_engine::decision::retry(&fixture.root, &["1".into()], &options).unwrap();
    assert_eq!(report.unblocked, ["2"]);
    assert_eq!(report.tasks[0].branch.as_deref(), Some("task/1"));
    let outcome = resume_with(fixture.options()).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.4.input.json")).unwrap();
    assert!(input.contains("the build needs --locked"), "{input}");
}

#[tokio::test]
async fn the_notify_command_hears_escalations_and_the_end_of_the_run() {
    let fixture = Fixture::new(&one_task("escalate = true"), &[]);
    let heard = fixture.repo.outside().join("heard.jsonl");
    let mut options = fixture.options();
    options.config.as_mut().unwrap().notify_command = vec![
        "sh".into(),
        "-c".into(),
        format!("cat >> {0}; echo \"$BREEZE_NOTIFY_SUMMARY|$1\" >> {0}.told", heard.display()),
        "sh".into(),
        "{state}".into(),
    ];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(task(&outcome, "1").state, TaskState::Escalated);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&heard)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> =
        lines.iter().map(|line| line["event"]["kind"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["task_state", "run_finished"], "{lines:?}");
    assert_eq!(lines[0]["event"]["state"], "escalated");
    assert_eq!(lines[0]["schema_version"], "breeze-event.v1");
    let told = std::fs::read_to_string(heard.with_extension("jsonl.told")).unwrap();
    assert!(told.starts_with("task 1 escalated"), "{told}");
    assert!(told.contains("|escalated\n"), "{told}");
    assert!(told.ends_with("the run failed|failed\n"), "{told}");
}

/// Runs of `land.verify` the journal records.
fn verify_runs(events: &[EventKind]) -> usize {
    events
        .iter()
        .filter(
            |e| matches!(e, EventKind::CommandStarted { purpose, .. } if purpose == "land.verify"),
        )
        .count()
}

/// The journal's `verified` events: the tasks verified together (none: main's own tip)
/// and the outcome.
fn verdicts(events: &[EventKind]) -> Vec<(Vec<String>, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::Verified { tasks, outcome, .. } => {
                Some((tasks.clone(), outcome.to_string()))
            }
            _ => None,
        })
        .collect()
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| id.to_string()).collect()
}

/// Whether main's tree, as the git CLI exports it, passes the verify script.
fn main_passes(fixture: &Fixture, verify: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let export = format!(
        "git -C {} archive main | tar -x -C {}",
        fixture.root.display(),
        dir.path().display()
    );
    let exported = std::process::Command::new("sh").args(["-c", &export]).status().unwrap();
    assert!(exported.success());
    std::process::Command::new("sh").arg(verify).current_dir(dir.path()).status().unwrap().success()
}

/// Each task's number of landing commits on main (`Breeze-Task` trailers).
fn landings_on_main(fixture: &Fixture) -> std::collections::BTreeMap<String, usize> {
    let trailers =
        git(&fixture.root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    let mut count = std::collections::BTreeMap::new();
    for id in trailers.lines().filter(|line| !line.is_empty()) {
        *count.entry(id.to_string()).or_insert(0) += 1;
    }
    count
}

fn with_verify(options: &mut RunOptions, verify: &str) {
    options.config.as_mut().unwrap().verify = vec!["sh".into(), verify.into()];
}

#[tokio::test]
async fn a_verify_failure_main_already_has_stops_the_run_and_is_not_pinned_on_the_task() {
    let fixture = Fixture::new(&one_task(""), &[("broken.txt", "main is broken\n")]);
    let verify = script(
        &fixture,
        "verify.sh",
        "if [ -f broken.txt ]; then echo 'FAILED test_main: broken.txt exists'; exit 1; fi\necho '1 passed'\n",
    );
    let mut options = fixture.options();
    with_verify(&mut options, &verify);
    let main_before = fixture.repo.rev("main");
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Interrupted);
    let reason = outcome.stop_reason.clone().unwrap();
    assert!(
        reason.contains(&format!("main itself fails `sh {verify}` at {}", &main_before[..7])),
        "{reason}"
    );
    assert!(reason.contains("FAILED test_main: broken.txt exists"), "the log tail: {reason}");
    assert!(reason.contains("fix main") && reason.contains("breeze resume"), "{reason}");
    // The task is not charged: one attempt, one round, no bounce; it waits to land.
    let record = breeze_engine::load_run(&fixture.root, None).unwrap().task("1").cloned().unwrap();
    assert_eq!(record.phase, breeze_engine::snapshot::TaskPhase::Approved);
    assert_eq!((record.attempts, record.rounds, record.land_bounces), (1, 1, 0), "{record:?}");
    assert!(record.verify_failure.is_none(), "nothing is sent back to the worker");
    let events = fixture.events(&outcome);
    // The landing's failure asks main's own tip first: it fails too, so nothing is charged
    // (and nothing is run again for flakes).
    assert_eq!(verify_runs(&events), 2, "the landing's, then main's own tip's");
    assert_eq!(verdicts(&events), [(ids(&[]), "failed".into()), (ids(&["1"]), "failed".into())]);
    assert_eq!(fixture.repo.rev("main"), main_before, "nothing landed");

    // The user fixes main; the waiting task lands on the fixed main without more work.
    git(&fixture.root, &["rm", "-q", "broken.txt"]);
    git(&fixture.root, &["commit", "-qm", "fix main"]);
    let outcome = resume_with(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::Landed);
    assert_eq!(task(&outcome, "1").attempts, 1, "not sent back to the worker");
    assert_eq!(landings_on_main(&fixture), [("1".to_string(), 1)].into());
    assert!(main_passes(&fixture, &verify));
}

#[tokio::test]
async fn with_on_main_failure_land_work_failing_like_main_lands_and_a_new_failure_goes_back() {
    let plan = toml_task("1", "Innocent", &["src/one.txt"], "")
        + &toml_task("2", "Breaks two", &["src/two.txt"], "");
    let fixture = Fixture::new(&plan, &[("broken.txt", "main is broken\n")]);
    // main fails one test; task 2's first attempt breaks another. The summary line counts
    // passed tests and its duration changes on every run: neither is part of a failure.
    let verify = script(
        &fixture,
        "verify.sh",
        r#"fail=0
if [ -f broken.txt ]; then echo 'FAILED test_main: broken.txt exists'; fail=$((fail + 1)); fi
if [ -f src/two.txt ] && ! grep -q 'attempt 2' src/two.txt; then echo 'FAILED test_two: two is broken'; fail=$((fail + 1)); fi
echo "$fail failed, 3 passed in 0.$$s"
[ "$fail" = 0 ]
"#,
    );
    let mut options = fixture.options();
    with_verify(&mut options, &verify);
    let config = options.config.as_mut().unwrap();
    config.on_main_failure = breeze_engine::OnMainFailure::Land;
    config.max_workers = 1;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 1, "failing only like main, it lands as it is");
    assert_eq!(task(&outcome, "2").attempts, 2, "its own failure sends it back once");
    let input = std::fs::read_to_string(outcome.run_dir.join("io/2.worker.2.input.json")).unwrap();
    assert!(input.contains("FAILED test_two: two is broken"), "{input}");
    assert!(input.contains("main itself fails"), "the worker hears what is main's: {input}");
    let events = fixture.events(&outcome);
    assert_eq!(
        verdicts(&events),
        [
            (ids(&[]), "failed".into()),
            (ids(&["1"]), "fails-like-main".into()),
            (ids(&[]), "failed".into()),
            (ids(&["2"]), "failed".into()),
            (ids(&[]), "failed".into()),
            (ids(&["2"]), "fails-like-main".into()),
        ]
    );
    // main's own verify ran once: after task 1 landed, main's tip is task 1's landing,
    // whose verdict is known.
    assert_eq!(
        verify_runs(&events),
        5,
        "task 1, main, task 2 three times (its new failure run once more on the same tree: no flake)"
    );
    let known_mains = events
        .iter()
        .filter(|e| matches!(e, EventKind::Verified { tasks, known: true, .. } if tasks.is_empty()))
        .count();
    assert_eq!(known_mains, 2);
    assert_eq!(landings_on_main(&fixture), [("1".to_string(), 1), ("2".to_string(), 1)].into());
}

/// Four tasks, `1`…`4`, each writing `src/<one|two|three|four>.txt`.
fn four_tasks() -> Fixture {
    let plan = ["one", "two", "three", "four"]
        .iter()
        .enumerate()
        .map(|(n, name)| toml_task(&(n + 1).to_string(), name, &[&format!("src/{name}.txt")], ""))
        .collect::<String>();
    Fixture::new(&plan, &[])
}

/// [`four_tasks`]; verify fails while task 3's first attempt is in the tree.
#[tokio::test]
async fn a_verify_failure_that_passes_on_a_retry_of_the_same_tree_is_flaky_not_the_tasks() {
    // The first verify run of the landing fails; the same tree passes the next time.
    let fixture = Fixture::new(&one_task(""), &[(".gitignore", ".flake-seen\n")]);
    let verify = script(
        &fixture,
        "verify.sh",
        "if [ -e .flake-seen ]; then echo '1 passed'; exit 0; fi\ntouch .flake-seen\necho 'FAILED tests/test_net.py::test_timeout - TimeoutError'; exit 1\n",
    );
    let mut options = fixture.options();
    with_verify(&mut options, &verify);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let landed = task(&outcome, "1");
    assert_eq!((landed.attempts, landed.rounds), (1, 1), "never sent back: {landed:?}");
    let events = fixture.events(&outcome);
    assert!(verdicts(&events).contains(&(ids(&["1"]), "flaky".into())), "{:?}", verdicts(&events));
    assert_eq!(landings_on_main(&fixture), [("1".to_string(), 1)].into());
}

fn four_tasks_one_bad() -> (Fixture, String) {
    let fixture = four_tasks();
    let verify = script(
        &fixture,
        "verify.sh",
        "if [ -f src/three.txt ] && ! grep -q 'attempt 2' src/three.txt; then echo 'FAILED test_three: three is broken'; exit 1; fi\n",
    );
    (fixture, verify)
}

/// main's reflog: every commit main was moved to, oldest first, after the first.
fn main_moves(fixture: &Fixture) -> Vec<String> {
    let reflog = git(&fixture.root, &["reflog", "--format=%H", "main"]);
    let mut moves: Vec<String> = reflog.lines().map(str::to_string).collect();
    moves.reverse();
    moves.split_off(1)
}

#[tokio::test]
async fn a_batch_of_four_with_one_bad_task_is_bisected_the_bad_one_goes_back_the_rest_land() {
    let (fixture, verify) = four_tasks_one_bad();
    let mut options = requiring_approval(&fixture);
    with_verify(&mut options, &verify);
    options.config.as_mut().unwrap().land_batch = 4;
    // The four wait for a person, who approves them at once: they land as one batch.
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    use breeze_engine::decision::{HumanDecision, decide};
    decide(&fixture.root, &ids(&["1", "2", "3", "4"]), &HumanDecision::Approve).unwrap();
    let outcome = resume_with(options.clone()).await;
    for id in ["1", "2", "4"] {
        assert_eq!(task(&outcome, id).state, TaskState::Landed, "{id}: {outcome:?}");
        assert_eq!(task(&outcome, id).attempts, 1, "{id}");
    }
    // Task 3 went back to its worker with the log tail, was reworked and reviewed, and
    // waits for the person again.
    assert_eq!(task(&outcome, "3").state, TaskState::AwaitingApproval, "{outcome:?}");
    assert_eq!(task(&outcome, "3").attempts, 2);
    let input = std::fs::read_to_string(outcome.run_dir.join("io/3.worker.2.input.json")).unwrap();
    assert!(input.contains("FAILED test_three: three is broken"), "{input}");

    let events = fixture.events(&outcome);
    let batches: Vec<Vec<String>> = events
        .iter()
        .filter_map(|e| match e {
            EventKind::LandingBatch { tasks, .. } => Some(tasks.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(batches, [ids(&["1", "2", "3", "4"]), ids(&["4"])]);
    // The batch: all four fail; the first two pass; the first three fail: task 3 is the
    // culprit — ⌈log2 4⌉ + 1 = 3 runs. A failure charged to landings is asked of main's
    // tip first (it passes) and run once more on the same tree (it fails again, so it is
    // no flake): 2 runs more, and main's 1. Task 4 is verified again without task 3.
    assert_eq!(
        verdicts(&events),
        [
            (ids(&[]), "passed".into()),
            (ids(&["1", "2", "3", "4"]), "failed".into()),
            (ids(&["1", "2"]), "passed".into()),
            (ids(&["1", "2", "3"]), "failed".into()),
            (ids(&["4"]), "passed".into()),
        ]
    );
    assert_eq!(verify_runs(&events), 7);
    // Tasks 1 and 2 moved main in one compare-and-swap, one commit each.
    let log =
        git(&fixture.root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    assert_eq!(log.split_whitespace().collect::<Vec<_>>(), ["4", "2", "1"]);
    assert_eq!(main_moves(&fixture).len(), 2, "main moved twice: 1+2, then 4");

    decide(&fixture.root, &ids(&["3"]), &HumanDecision::Approve).unwrap();
    let outcome = resume_with(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let each_once = ["1", "2", "3", "4"].map(|id| (id.to_string(), 1)).into();
    assert_eq!(landings_on_main(&fixture), each_once);
    // Nothing landed unverified: every commit main was moved to passed verify.
    let passed: Vec<String> = read_events(&outcome.run_dir.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            EventKind::Verified { commit, outcome: VerifyOutcome::Passed, .. } => Some(commit),
            _ => None,
        })
        .collect();
    for moved in main_moves(&fixture) {
        assert!(passed.contains(&moved), "main moved to {moved}, which verify never passed");
    }
    assert!(main_passes(&fixture, &verify));
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn approved_tasks_of_a_batched_run_wait_to_land_on_resume_and_leave_the_lanes_to_the_others()
{
    // Two lanes, four tasks, batches of three: a person approves one task at a time, so a
    // resumed run always starts with approved tasks waiting for their batch while others
    // still need a lane. An approved task must wait in the landing queue, not take a lane
    // from the task whose branch is checked out there ("branch task/N is checked out in
    // lane-M"); every task lands once.
    let fixture = four_tasks();
    let mut options = requiring_approval(&fixture);
    options.config.as_mut().unwrap().land_batch = 3;
    options.config.as_mut().unwrap().max_workers = 2;
    use breeze_engine::decision::{HumanDecision, decide};
    let mut outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    for _ in 0..8 {
        if outcome.state == RunState::Succeeded {
            break;
        }
        assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
        let awaiting: Vec<String> = outcome
            .status
            .tasks
            .iter()
            .filter(|task| task.state == TaskState::AwaitingApproval)
            .map(|task| task.id.clone())
            .collect();
        assert!(!awaiting.is_empty(), "stopped with nothing to approve: {outcome:?}");
        decide(&fixture.root, &awaiting[..1], &HumanDecision::Approve).unwrap();
        outcome = resume_with(options.clone()).await;
    }
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let each_once = ["1", "2", "3", "4"].map(|id| (id.to_string(), 1)).into();
    assert_eq!(landings_on_main(&fixture), each_once);
    assert_eq!(git(&fixture.root, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn with_batch_1_each_landing_is_verified_alone_and_a_landed_main_is_known_to_pass() {
    let (fixture, verify) = four_tasks_one_bad();
    let mut options = fixture.options();
    with_verify(&mut options, &verify);
    options.config.as_mut().unwrap().max_workers = 1;
    options.config.as_mut().unwrap().land_queue_depth = 1;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "3").attempts, 2, "sent back once with the log tail");
    let events = fixture.events(&outcome);
    assert!(!events.iter().any(|e| matches!(e, EventKind::LandingBatch { .. })));
    // Task 3's failure asks whether main fails too: main's tip is task 2's landing, whose
    // tree passed — known without a run. Task 3 gave its lane to task 4 while it waited to
    // land, so task 4 lands before task 3's second attempt does.
    assert_eq!(
        verdicts(&events),
        [
            (ids(&["1"]), "passed".into()),
            (ids(&["2"]), "passed".into()),
            (ids(&[]), "passed".into()),
            (ids(&["3"]), "failed".into()),
            (ids(&["4"]), "passed".into()),
            (ids(&["3"]), "passed".into()),
        ]
    );
    assert!(
        events.iter().any(
            |e| matches!(e, EventKind::Verified { tasks, known: true, .. } if tasks.is_empty())
        )
    );
    // Task 3's failure was run once more on the same tree (no flake): one run more.
    assert_eq!(verify_runs(&events), 6);
    let each_once = ["1", "2", "3", "4"].map(|id| (id.to_string(), 1)).into();
    assert_eq!(landings_on_main(&fixture), each_once);
    assert!(main_passes(&fixture, &verify));
}

fn retry(
    fixture: &Fixture,
    ids: &[&str],
    fresh: bool,
) -> Result<breeze_engine::decision::RetryReport, breeze_engine::EngineError> {
    let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    let options = breeze_engine::decision::RetryOptions { note: None, fresh };
    breeze_engine::decision::retry(&fixture.root, &ids, &options)
}

/// A shell reviewer that requests changes (a critical gap in `src/one.txt`) until the file
/// it returns exists, then approves: a person's later "this is good now".
fn reviewer_until_approved(fixture: &Fixture, options: &mut RunOptions) -> PathBuf {
    let approve = fixture.repo.outside().join("approve-now");
    let body = format!(
        r#"cat > /dev/null
if [ -f {approve} ]; then
  printf '{{"schema_version":"review-result.v1","verdict":"APPROVE","type":"code","reviewer_profile":"static","checks":[],"gaps":[],"followups":[],"memory_updates":[]}}' > "$BREEZE_OUTPUT"
else
  printf '{{"schema_version":"review-result.v1","verdict":"REQUEST_CHANGES","type":"code","reviewer_profile":"static","checks":[],"gaps":[{{"severity":"critical","location":"src/one.txt","issue":"not yet","suggestion":"again"}}],"followups":[],"memory_updates":[]}}' > "$BREEZE_OUTPUT"
fi
"#,
        approve = approve.display()
    );
    let reviewer = script(fixture, "reviewer-until-approved.sh", &body);
    let config = options.config.as_mut().unwrap();
    config.reviewer.backend = BackendKind::Command;
    config.reviewer.command = vec!["sh".into(), reviewer];
    approve
}

#[tokio::test]
async fn retry_fresh_starts_from_mains_tip_on_a_new_branch_and_keeps_the_old_one() {
    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    let approve = reviewer_until_approved(&fixture, &mut options);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(task(&outcome, "1").state, TaskState::Escalated);
    let old_tip = git(&fixture.root, &["rev-parse", "task/1"]);
    assert!(
        !git(&fixture.root, &["show", "task/1:src/one.txt"]).is_empty(),
        "work on the old branch"
    );
    // Main moves on while the task waits for a person.
    std::fs::write(fixture.root.join("NEWS.md"), "news\n").unwrap();
    git(&fixture.root, &["add", "NEWS.md"]);
    git(&fixture.root, &["commit", "-qm", "news"]);
    let main_now = git(&fixture.root, &["rev-parse", "main"]).trim().to_string();

    let report = retry(&fixture, &["1"], true).unwrap();
    assert_eq!(report.tasks[0].set_aside.as_deref(), Some("task/1"));
    assert_eq!(report.tasks[0].branch, None);
    std::fs::write(&approve, "").unwrap();
    let outcome = resume_with(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let only = task(&outcome, "1");
    assert_eq!(only.earlier_branches, ["task/1"], "{only:?}");
    assert_eq!(only.branch.as_deref(), Some("task/1-2"), "{only:?}");
    // The old branch is kept exactly as it was; the new work started from main's tip then.
    assert_eq!(git(&fixture.root, &["rev-parse", "task/1"]), old_tip);
    let snapshot = breeze_engine::load_run(&fixture.root, None).unwrap();
    assert_eq!(snapshot.task("1").unwrap().base.unwrap().to_string(), main_now);
    let first_work =
        git(&fixture.root, &["log", "--format=%s", "--reverse", &format!("{main_now}..main")]);
    // (`src/one.txt` is a text file: the landing's type is `docs`.)
    assert!(
        first_work.starts_with("docs: Only task\n"),
        "one landing on top of the new main: {first_work}"
    );
    // `clean` names the old branch and why it keeps it.
    let items = breeze_engine::maintenance::clean(&fixture.root, true, false).unwrap();
    let kept = items.iter().find_map(|item| match item {
        breeze_engine::maintenance::CleanItem::Kept(what, why) if what == "task/1" => {
            Some(why.clone())
        }
        _ => None,
    });
    assert!(
        kept.as_deref().is_some_and(
            |why| why.contains("earlier work of task 1") && why.contains("retry --fresh")
        ),
        "{items:?}"
    );
}

#[tokio::test]
async fn several_tasks_are_retried_or_approved_together_and_an_unknown_id_decides_nothing() {
    let plan = toml_task("1", "First", &["a.txt"], "[task.sim]\nescalate = true")
        + &toml_task("2", "Second", &["b.txt"], "[task.sim]\nescalate = true");
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    for id in ["1", "2"] {
        assert_eq!(task(&outcome, id).state, TaskState::Escalated, "{outcome:?}");
    }
    let err = retry(&fixture, &["1", "9", "2", "x"], false).unwrap_err();
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    assert!(err.to_string().contains("has no task 9, x; nothing was decided"), "{err}");
    let snapshot = breeze_engine::load_run(&fixture.root, None).unwrap();
    assert!(
        snapshot.tasks.iter().all(|t| t.phase == breeze_engine::snapshot::TaskPhase::Escalated),
        "nothing was retried"
    );
    let report = retry(&fixture, &["1", "2", "1"], false).unwrap();
    let ids: Vec<&str> = report.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["1", "2"]);

    let plan = toml_task("1", "First", &["a.txt"], "") + &toml_task("2", "Second", &["b.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let outcome =
        breeze_engine::run(requiring_approval(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    use breeze_engine::decision::{HumanDecision, decide};
    let err = decide(&fixture.root, &["1".into(), "7".into(), "2".into()], &HumanDecision::Approve)
        .unwrap_err();
    assert!(err.to_string().contains("has no task 7; nothing was decided"), "{err}");
    let decisions = outcome.run_dir.join("decisions");
    assert!(
        !decisions.exists() || std::fs::read_dir(&decisions).unwrap().next().is_none(),
        "no decision was left for 1 or 2"
    );
    decide(&fixture.root, &["1".into(), "2".into()], &HumanDecision::Approve).unwrap();
    let outcome = resume_with(requiring_approval(&fixture)).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let err =
        decide(&fixture.root, &["1".into(), "2".into()], &HumanDecision::Approve).unwrap_err();
    assert!(err.to_string().contains("1 is landed, 2 is landed"), "{err}");
}

#[tokio::test]
async fn the_notify_command_hears_the_gate_and_its_paths() {
    let fixture =
        Fixture::new(&one_task("write_outside = \"notes/x.md\"\nwrite_outside_attempts = 3"), &[]);
    let heard = fixture.repo.outside().join("heard.jsonl");
    let mut options = fixture.options();
    options.config.as_mut().unwrap().notify_command = vec![
        "sh".into(),
        "-c".into(),
        // A task's notification is slower than the run's end: told in order all the same.
        format!(
            "cat >> {0}; case \"$1\" in task*) sleep 0.3;; esac; echo \"$1\" >> {0}.told",
            heard.display()
        ),
        "sh".into(),
        "{summary}".into(),
    ];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(task(&outcome, "1").state, TaskState::Escalated);
    let told = std::fs::read_to_string(heard.with_extension("jsonl.told")).unwrap();
    assert_eq!(
        told.lines().collect::<Vec<_>>(),
        [
            "task 1 escalated: the write-set gate failed 3 times in a row: notes/x.md is outside the task's writes (add it to the task's writes if the task needs it, or revert it)",
            "the run failed"
        ],
        "{told}"
    );
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&heard).unwrap().lines().next().unwrap())
            .unwrap();
    let cause = &first["event"]["cause"];
    assert_eq!(cause["kind"], "gate", "{first}");
    assert_eq!(cause["name"], "write-set");
    assert_eq!(cause["paths"], serde_json::json!(["notes/x.md"]));
    assert_eq!(cause["times"], 3);
}

/// The progress events of a run, collected.
fn collect_progress(options: &mut RunOptions) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    options.progress = std::sync::Arc::new(move |event: &breeze_engine::ProgressEvent| {
        if let breeze_engine::ProgressEvent::Kept { what, reason } = event {
            sink.lock().unwrap().push(format!("kept {what}: {reason}"));
        }
    });
    seen
}

/// The linked worktrees git lists, by folder name.
fn worktree_names(fixture: &Fixture) -> Vec<String> {
    git(&fixture.root, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
        .filter(|path| std::path::Path::new(path) != fixture.root)
        .map(|path| path.rsplit('/').next().unwrap().to_string())
        // The reviewer's and the Advisor's checkouts are kept beside the lanes.
        .filter(|name| !breeze_git::is_detached_checkout(name))
        .collect()
}

#[tokio::test]
async fn the_next_run_takes_the_lane_an_aborted_run_left() {
    let fixture = Fixture::new(&toml_task("1", "First", &["a.txt"], ""), &[]);
    let first =
        breeze_engine::run(requiring_approval(&fixture), CancellationToken::new()).await.unwrap();
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    breeze_engine::maintenance::abort(&fixture.root).await.unwrap();
    assert_eq!(worktree_names(&fixture), ["lane-1"], "the aborted run's lane stays for clean");

    let next = fixture.root.join("next.toml");
    std::fs::write(&next, toml_task("2", "Second", &["b.txt"], "")).unwrap();
    let mut options = fixture.options();
    options.plan = Some(next);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let lanes: Vec<String> = fixture
        .events(&outcome)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::WorktreeCreated { path, .. } => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(lanes.len(), 1, "{lanes:?}");
    assert_eq!(lanes[0], fixture.lane("lane-1").display().to_string(), "not a suffixed name");
    // The aborted run's lane was moved to the new task (not made anew), then parked.
    assert_eq!(worktree_names(&fixture), ["lane-1"], "kept for a next run");
    let lane = fixture.lane("lane-1");
    assert_eq!(git(&lane, &["rev-parse", "HEAD"]), git(&fixture.root, &["rev-parse", "main"]));
    assert!(
        git(&fixture.root, &["branch", "--list", "task/1"]).contains("task/1"),
        "the aborted task's branch (its work) stays"
    );
}

#[tokio::test]
async fn clean_does_what_its_dry_run_said() {
    use breeze_engine::maintenance::{CleanItem, clean};
    let fixture = Fixture::new(&toml_task("1", "First", &["a.txt"], ""), &[]);
    // The run removes its lane (as before lanes were kept): the lane below is made by hand.
    let mut options = fixture.options();
    options.config.as_mut().unwrap().keep_lanes = false;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    // A lane breeze made, holding the landed task's branch and a file the user left there.
    let repo = breeze_git::Repo::open(&fixture.root).unwrap();
    let lane = repo
        .create_worktree("lane-1", "task/1", repo.main_tip().unwrap(), "breeze run (lane 1)")
        .unwrap();
    let journal = breeze_engine::journal::Journal::open(&outcome.run_dir.join("events.jsonl"));
    journal
        .unwrap()
        .record(EventKind::WorktreeCreated {
            task: "1".into(),
            path: lane.path.display().to_string(),
            branch: "task/1".into(),
            base: lane.base.to_string(),
        })
        .unwrap();
    std::fs::write(lane.path.join("notes.txt"), "mine\n").unwrap();
    // Its worker's private git directory, and one a lane that is gone left behind.
    let private = repo.seal_lane(&lane).unwrap();
    assert!(repo.check_lane_links(&lane).unwrap().is_empty());
    let stray = fixture.root.join(".breeze/lanes/lane-9");
    std::fs::create_dir_all(stray.join("git")).unwrap();
    let private_label = private.parent().unwrap().display().to_string();

    for force in [false, true] {
        let dry = clean(&fixture.root, true, force).unwrap();
        let done = clean(&fixture.root, false, force).unwrap();
        assert_eq!(dry, done, "force {force}: the dry run said what clean did");
        assert!(!stray.exists(), "a private git directory without its lane goes");
        assert_eq!(
            done.contains(&CleanItem::Removed(private_label.clone())),
            force,
            "the lane's private git directory goes with its lane: {done:?}"
        );
        assert_eq!(private.exists(), !force, "and stays while its lane stays");
        if !force {
            assert!(done.contains(&CleanItem::Removed(stray.display().to_string())), "{done:?}");
            let lane_label = lane.path.display().to_string();
            assert!(
                done.contains(&CleanItem::Kept(
                    lane_label.clone(),
                    "has uncommitted changes; commit them, or pass --force to discard".into()
                )),
                "{done:?}"
            );
            assert!(
                done.contains(&CleanItem::Kept(
                    "task/1".into(),
                    format!("checked out in {lane_label} (kept above)")
                )),
                "{done:?}"
            );
        } else {
            assert!(done.iter().all(|item| matches!(item, CleanItem::Removed(_))), "{done:?}");
        }
    }
    assert_eq!(worktree_names(&fixture), Vec::<String>::new());
    assert_eq!(git(&fixture.root, &["branch", "--list", "task/*"]), "");
}

/// `git status --porcelain` of a lane, untracked files listed.
fn lane_status(fixture: &Fixture, lane: &str) -> String {
    let path = fixture.lane(lane);
    git(&path, &["status", "--porcelain", "--untracked-files=all"])
}

/// The paths main changed since `start`, as the git CLI lists them.
fn changed_on_main(fixture: &Fixture, start: &str) -> Vec<String> {
    git(&fixture.root, &["diff", "--name-only", &format!("{}..main", start.trim())])
        .lines()
        .map(str::to_string)
        .collect()
}

fn with_setup(options: &mut RunOptions, script: &str) {
    options.config.as_mut().unwrap().worktree_setup = vec!["sh".into(), "-c".into(), script.into()];
}

#[tokio::test]
async fn what_setup_leaves_in_a_lane_is_never_the_tasks_change() {
    let plan = toml_task("1", "First", &["a.txt"], "[task.sim]\nrequest_changes = 1")
        + &toml_task("2", "Second", &["b.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]);
    let mut options = fixture.options();
    options.max_workers = Some(1);
    // What an install does: a new lockfile, a tracked file rewritten.
    with_setup(&mut options, "echo generated > setup.lock && echo formatted >> README.md");
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").rounds, 2, "a reviewer's round, no gate failure");
    assert_eq!(changed_on_main(&fixture, &start), ["a.txt", "b.txt"]);
    assert_eq!(git(&fixture.root, &["show", "main:README.md"]), "readme\n");
    // The lane keeps what setup left, for its next task and the next run.
    assert_eq!(lane_status(&fixture, "lane-1"), " M README.md\n?? setup.lock\n");
}

#[tokio::test]
async fn what_a_check_leaves_is_not_committed_in_the_next_round() {
    let fixture = Fixture::new(&one_task("request_changes = 1"), &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]);
    let mut options = fixture.options();
    // `cargo test` on the layout `cargo new` gives: an untracked Cargo.lock.
    options.config.as_mut().unwrap().review_checks =
        vec![vec!["sh".into(), "-c".into(), "echo 'version = 4' > Cargo.lock".into()]];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").rounds, 2);
    let round2 =
        std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-2.review-result.json"))
            .unwrap();
    assert!(round2.contains("APPROVE") && !round2.contains("Cargo.lock"), "{round2}");
    assert_eq!(changed_on_main(&fixture, &start), ["src/one.txt"]);
    assert_eq!(lane_status(&fixture, "lane-1"), "?? Cargo.lock\n");
}

#[tokio::test]
async fn a_file_setup_left_that_the_worker_changes_is_its_change_and_gated() {
    let plan = toml_task("1", "First", &["a.txt"], "[task.sim]\nwrite_outside = \"setup.lock\"")
        + &toml_task("2", "Needs the lockfile", &["b.txt", "setup.lock"], "depends_on = [\"1\"]");
    let fixture = Fixture::new(&plan, &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]);
    let mut options = fixture.options();
    with_setup(&mut options, "echo generated > setup.lock");
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    // Task 1's worker wrote to the setup's file outside its write set: the gate saw it and
    // sent the task back before any review round.
    let back = sent_back(&fixture, &outcome);
    assert_eq!(back.len(), 1, "{back:?}");
    let cause = &back[0].2;
    assert_eq!(
        (cause.name.as_deref(), cause.paths.as_slice()),
        (Some("write-set"), &["setup.lock".to_string()][..])
    );
    let first = task(&outcome, "1");
    assert_eq!((first.rounds, first.gate_failures), (1, 1), "{first:?}");
    // Task 2 needs the file: its worker's version lands.
    assert_eq!(changed_on_main(&fixture, &start), ["a.txt", "b.txt", "setup.lock"]);
    let landed = git(&fixture.root, &["show", "main:setup.lock"]);
    assert!(landed.contains("task 2"), "{landed}");
}

#[tokio::test]
async fn lanes_outlive_a_run_and_the_next_run_moves_them() {
    let fixture = Fixture::new(
        &toml_task("1", "First", &["a.txt"], ""),
        &[
            (".gitignore", "setup-runs.log\ntarget/\n"),
            ("Cargo.lock", "v1\n"),
            ("src/lib.txt", "lib\n"),
            ("src/sub/deep.txt", "deep\n"),
        ],
    );
    let lane = fixture.lane("lane-1");
    let setup_runs =
        || std::fs::read_to_string(lane.join("setup-runs.log")).unwrap().lines().count();
    let run_plan = |id: &str, file: &str| {
        let plan = fixture.root.join(format!("plan-{id}.toml"));
        std::fs::write(&plan, toml_task(id, "Next", &[file], "")).unwrap();
        let mut options = fixture.options();
        options.plan = Some(plan);
        with_setup(&mut options, "echo ran >> setup-runs.log");
        options
    };
    let parked_at_main = || {
        assert_eq!(git(&lane, &["rev-parse", "HEAD"]), git(&fixture.root, &["rev-parse", "main"]));
        assert_eq!(git(&lane, &["status", "--porcelain", "--untracked-files=all"]), "");
        assert_eq!(git(&fixture.root, &["branch", "--list", "task/*"]), "", "task branches go");
    };

    let first = breeze_engine::run(run_plan("1", "a.txt"), CancellationToken::new()).await.unwrap();
    assert_eq!(first.state, RunState::Succeeded, "{first:?}");
    assert_eq!(worktree_names(&fixture), ["lane-1"]);
    parked_at_main();
    assert_eq!(setup_runs(), 1);
    // A build in the lane between runs (ignored outputs: nothing to save).
    std::fs::create_dir_all(lane.join("target")).unwrap();
    std::fs::write(lane.join("target/warm.bin"), "build output").unwrap();

    // Second run: the same lane, moved to its task by the paths that differ; setup's
    // inputs are unchanged, so it does not run again.
    let second =
        breeze_engine::run(run_plan("2", "b.txt"), CancellationToken::new()).await.unwrap();
    assert_eq!(second.state, RunState::Succeeded, "{second:?}");
    let created: Vec<String> = fixture
        .events(&second)
        .into_iter()
        .filter_map(|event| match event {
            EventKind::WorktreeCreated { path, .. } => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(created, [lane.display().to_string()]);
    assert_eq!(setup_runs(), 1, "setup's inputs did not change");
    assert!(!second.run_dir.join("logs/setup.lane-1.stdout").exists());
    assert_eq!(std::fs::read_to_string(lane.join("target/warm.bin")).unwrap(), "build output");
    parked_at_main();

    // Between runs: the lockfile changes on main, and someone changes the parked lane's top
    // folder (and, seen with it, a file below).
    std::fs::write(fixture.root.join("Cargo.lock"), "v2\n").unwrap();
    git(&fixture.root, &["commit", "-q", "-am", "bump the lockfile"]);
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(lane.join("junk.txt"), "left here\n").unwrap();
    std::fs::remove_file(lane.join("src/lib.txt")).unwrap();
    let third = breeze_engine::run(run_plan("3", "c.txt"), CancellationToken::new()).await.unwrap();
    assert_eq!(third.state, RunState::Succeeded, "{third:?}");
    assert_eq!(setup_runs(), 2, "setup ran again for the new lockfile");
    assert_eq!(worktree_names(&fixture), ["lane-1"], "the lane was repaired, not replaced");
    parked_at_main();
    assert_eq!(std::fs::read_to_string(lane.join("src/lib.txt")).unwrap(), "lib\n");
    // What was found in the lane is saved on a branch, not lost.
    let saved =
        git(&fixture.root, &["show", "--name-status", "--format=", "breeze/leftovers/lane-1"]);
    assert_eq!(saved, "A\tjunk.txt\nD\tsrc/lib.txt\n", "{saved}");
    assert_eq!(git(&fixture.root, &["show", "main:src/lib.txt"]), "lib\n", "main untouched");

    // A folder the last run watched, gone below the top folder: the next run's watch,
    // started from the recorded folders, finds it missing; it is saved and put back.
    std::fs::remove_dir_all(lane.join("src/sub")).unwrap();
    let fourth =
        breeze_engine::run(run_plan("4", "d.txt"), CancellationToken::new()).await.unwrap();
    assert_eq!(fourth.state, RunState::Succeeded, "{fourth:?}");
    parked_at_main();
    assert_eq!(std::fs::read_to_string(lane.join("src/sub/deep.txt")).unwrap(), "deep\n");
    let saved =
        git(&fixture.root, &["show", "--name-status", "--format=", "breeze/leftovers/lane-1-2"]);
    assert_eq!(saved, "D\tsrc/sub/deep.txt\n", "{saved}");
}

#[tokio::test]
async fn without_keep_lanes_a_finished_run_removes_its_lanes() {
    let fixture = Fixture::new(&toml_task("1", "First", &["a.txt"], ""), &[]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().keep_lanes = false;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(worktree_names(&fixture), Vec::<String>::new());
    assert!(!fixture.root.join(".breeze/lanes/lane-1").exists(), "its records go with it");
}

#[tokio::test]
async fn clean_removes_kept_lanes_and_its_dry_run_says_so() {
    use breeze_engine::maintenance::{CleanItem, clean};
    let fixture = Fixture::new(&toml_task("1", "First", &["a.txt"], ""), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(worktree_names(&fixture), ["lane-1"]);
    let lane = fixture.lane("lane-1").display().to_string();
    let home = fixture.root.join(".breeze/lanes/lane-1");
    assert!(home.join("lane.json").is_file());
    let dry = clean(&fixture.root, true, false).unwrap();
    assert!(dry.contains(&CleanItem::Removed(lane.clone())), "{dry:?}");
    assert!(dry.contains(&CleanItem::Removed(home.display().to_string())), "{dry:?}");
    assert_eq!(worktree_names(&fixture), ["lane-1"], "a dry run removes nothing");
    assert_eq!(clean(&fixture.root, false, false).unwrap(), dry);
    assert_eq!(worktree_names(&fixture), Vec::<String>::new());
    assert!(!home.exists());
}

/// A person deletes the repository and clones it again at the same path: the lanes the old
/// one kept are still in breeze's worktree folder, named by no journal. `clean` names them
/// and keeps them (the only copy of what they hold); `--force` removes them.
#[tokio::test]
async fn clean_names_lanes_a_deleted_repository_left_and_removes_them_with_force() {
    use breeze_engine::maintenance::{CleanItem, clean};
    let fixture = Fixture::new(&toml_task("1", "First", &["a.txt"], ""), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let lane = fixture.lane("lane-1");
    assert!(lane.is_dir());
    // The repository made again where it was; breeze's worktree folder is the same one.
    std::fs::remove_dir_all(fixture.root.join(".git")).unwrap();
    for gone in [".breeze/runs", ".breeze/lanes"] {
        let _ = std::fs::remove_dir_all(fixture.root.join(gone));
    }
    git(&fixture.root, &["init", "-q", "-b", "main"]);
    git(&fixture.root, &["add", "README.md", "plan.toml"]);
    git(&fixture.root, &["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "again"]);
    let label = lane.display().to_string();
    let kept = clean(&fixture.root, false, false).unwrap();
    let why = kept.iter().find_map(|item| match item {
        CleanItem::Kept(path, why) if *path == label => Some(why.clone()),
        _ => None,
    });
    assert!(why.is_some_and(|why| why.contains("clean --force")), "{kept:?}");
    assert!(lane.is_dir(), "kept without --force");
    let forced = clean(&fixture.root, false, true).unwrap();
    assert!(forced.contains(&CleanItem::Removed(label)), "{forced:?}");
    assert!(!lane.exists());
}

/// A worker's CLI stopped between writing a file's temporary copy and renaming it (Claude
/// Code's `<file>.tmp.<pid>.<12 hex>`) leaves that copy in the lane: it is nobody's change,
/// so it neither fails the write-set gate nor lands.
#[tokio::test]
async fn the_temporary_file_of_an_unfinished_agent_write_is_not_the_tasks_change() {
    let plan = toml_task("1", "Write one", &["src/one.txt"], "");
    let fixture = Fixture::new(&plan, &[("README.md", "demo\n")]);
    let mut options = fixture.options();
    let body = r#"cat > /dev/null
mkdir -p src
printf 'one\n' > src/one.txt
printf 'half\n' > src/one.txt.tmp.2.a42bc55d974b
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;
    let worker = script(&fixture, "unfinished-write-worker.sh", body);
    shell_worker(&mut options, &worker);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").attempts, 1, "{outcome:?}");
    let landed = git(&fixture.root, &["show", "--name-only", "--format=", "main"]);
    assert!(landed.lines().any(|path| path == "src/one.txt"), "{landed}");
    assert!(!landed.contains(".tmp."), "{landed}");
}

#[tokio::test]
async fn a_later_run_that_never_consults_leaves_the_parked_advice_checkout_as_it_is() {
    // Parking a checkout the run never placed would look at every file of it (0.7 s at
    // 100,000 files); it is already parked where the earlier run left it.
    use std::os::unix::fs::MetadataExt;
    let fixture = Fixture::new(&one_task("fail_attempts = 2"), &[]);
    let first = fixture.run().await;
    assert_eq!(task(&first, "1").advisor_consults, 1, "{first:?}");
    let advice = fixture.lane("advice");
    assert!(advice.is_dir(), "the Advisor's checkout is kept");
    let index = fixture.root.join(".git/worktrees/advice/index");
    let stat = |path: &std::path::Path| {
        let meta = std::fs::metadata(path).unwrap();
        (meta.ino(), meta.mtime(), meta.mtime_nsec())
    };
    let parked = stat(&index);
    let plan = tempfile::tempdir().unwrap();
    let second_plan = plan.path().join("plan.toml");
    std::fs::write(&second_plan, toml_task("2", "Second", &["src/two.txt"], "")).unwrap();
    let mut options = fixture.options();
    options.plan = Some(second_plan);
    let second = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(second.state, RunState::Succeeded, "{second:?}");
    assert_eq!(task(&second, "2").advisor_consults, 0);
    assert_eq!(stat(&index), parked, "the unused checkout's index was written again");
    assert!(fixture.lane("review").is_dir(), "the review checkout is parked too");
}
