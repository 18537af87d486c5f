//! Library-level tests of the engine: real git repositories, the scripted backend (and
//! small shell roles), driven through `breeze_engine::run` / `resume` with an injected
//! cancel token. Results are checked in the run files and with the `git` CLI.

use std::path::PathBuf;
use std::time::Duration;

use breeze_engine::journal::read_events;
use breeze_engine::{BackendKind, Config, RunOptions, RunOutcome};
use breeze_protocol::{EventKind, RunState, TaskState};
use tokio_util::sync::CancellationToken;

use breeze_test_support::plan::{one_task, toml_task};
use breeze_test_support::{TestRepo, git};

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

    fn options(&self) -> RunOptions {
        let mut config = Config::defaults();
        config.set_all_backends(BackendKind::Scripted);
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

#[tokio::test]
async fn a_write_outside_the_write_set_fails_the_gate_and_counts_as_a_round() {
    let fixture = Fixture::new(&one_task("write_outside = \"notes/stray.md\""), &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(task(&outcome, "1").rounds, 2);
    let review =
        std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-1.review-result.json"))
            .unwrap();
    assert!(
        review.contains("REQUEST_CHANGES")
            && review.contains("write-set")
            && review.contains("notes/stray.md"),
        "{review}"
    );
    assert!(
        git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .all(|p| p != "notes/stray.md")
    );
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
async fn a_tracked_plans_md_row_flips_to_done_in_the_landing_commit() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a exists | `a.txt` | - | cc:todo |\n| 2 | Add b | b exists | `b.txt` | 1 | cc:TODO |\n";
    let fixture = Fixture::new("", &[("Plans.md", plans)]);
    let mut options = fixture.options();
    options.plan = Some(fixture.root.join("Plans.md"));
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
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
        "grep -q 'attempt 2' src/one.txt || { echo 'verify: attempt 2 missing'; exit 1; }".into(),
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
    // Task 1's worker detaches its HEAD from the task branch and leaves files uncommitted
    // there (creating another branch is refused to a confined worker); task 2's worker
    // behaves.
    let worker = script(
        &fixture,
        "wrecker.sh",
        r#"cat > /dev/null
if [ "$BREEZE_TASK_ID" = 1 ]; then
  git checkout -q --detach
  echo wreck >> a.txt
else
  echo fine > b.txt
fi
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#,
    );
    let mut options = fixture.options();
    shell_worker(&mut options, &worker);
    options.max_workers = Some(1);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    let first = task(&outcome, "1");
    assert_eq!(first.state, TaskState::Escalated, "{first:?}");
    assert_eq!(first.attempts, 3);
    assert!(
        first.reason.as_deref().unwrap().contains("detached"),
        "the reason names what the worker did: {first:?}"
    );
    let input = std::fs::read_to_string(outcome.run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(
        input.contains("\"last_failure\": \"") && input.contains("detached"),
        "the retry is told why: {input}"
    );
    assert_eq!(
        task(&outcome, "2").state,
        TaskState::Landed,
        "the lane went on with a fresh worktree: {outcome:?}"
    );
    assert_eq!(git(&fixture.root, &["show", "main:b.txt"]), "fine\n");
    // The wrecked worktree is kept for the user, not discarded.
    let worktrees = git(&fixture.root, &["worktree", "list", "--porcelain"]);
    assert!(worktrees.contains("\ndetached"), "{worktrees}");
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
    assert_eq!(first.state, RunState::Interrupted, "{first:?}");
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
    git(&fixture.root, &["branch", "trunk"]);
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
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    assert_eq!(task(&outcome, "1").state, TaskState::Deferred);
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
            EventKind::ScopeDecided { task, decision, paths, .. } => Some((task, decision, paths)),
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
async fn review_checks_run_before_the_reviewer_and_a_failure_is_a_change_request() {
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
    options.config.as_mut().unwrap().review_checks =
        vec![vec!["sh".into(), "-c".into(), "echo the tests fail; exit 1".into()]];
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    let only = task(&outcome, "1");
    assert_eq!(only.state, TaskState::Escalated, "{only:?}");
    assert_eq!(only.rounds, 3);
    let review =
        std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-1.review-result.json"))
            .unwrap();
    assert!(review.contains("the tests fail"), "{review}");
    assert!(
        !outcome.run_dir.join("io/1.reviewer.round-1.try-1.input.json").exists(),
        "the reviewer is not asked about work that fails a check"
    );
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
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Interrupted);
    assert!(outcome.stop_reason.as_deref().unwrap().contains("await approval"), "{outcome:?}");
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
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
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

    let report =
        breeze_engine::decision::retry(&fixture.root, "1", Some("the build needs --locked"))
            .unwrap();
    assert_eq!(report.unblocked, ["2"]);
    assert!(report.branch.is_some());
    let err = breeze_engine::decision::retry(&fixture.root, "2", None).unwrap_err();
    assert!(err.to_string().contains("retry takes an escalated or failed task"), "{err}");
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
