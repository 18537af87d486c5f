//! Budgets and independent review, on the scripted backend (each `[task.sim] cost_usd` is
//! what every role call of that task reports) and small shell roles.

use std::sync::{Arc, Mutex};

use breeze_engine::budget::BudgetRaise;
use breeze_engine::config::Independence;
use breeze_engine::{BackendKind, ProgressEvent, RunOptions};
use breeze_protocol::{BudgetCaps, EventKind, RunState, TaskState};
use tokio_util::sync::CancellationToken;

use super::{Fixture, task};
use breeze_test_support::git;
use breeze_test_support::plan::toml_task;

/// Options with `caps` as `[budget]`, and what the run tells the user collected.
fn with_budget(
    fixture: &Fixture,
    caps: BudgetCaps,
) -> (RunOptions, Arc<Mutex<Vec<ProgressEvent>>>) {
    let mut options = fixture.options();
    options.config.as_mut().unwrap().budget.caps = caps;
    let told = Arc::new(Mutex::new(Vec::new()));
    let sink = told.clone();
    options.progress = Arc::new(move |event| sink.lock().unwrap().push(event.clone()));
    (options, told)
}

fn notices(told: &Mutex<Vec<ProgressEvent>>) -> Vec<String> {
    told.lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            ProgressEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The role calls the journal counted (`spent` events), per task.
fn spent_calls(fixture: &Fixture, outcome: &breeze_engine::RunOutcome, id: &str) -> usize {
    fixture
        .events(outcome)
        .iter()
        .filter(|event| matches!(event, EventKind::Spent { task, .. } if task == id))
        .count()
}

/// What landed on main since `start`: (task, files).
fn landings(fixture: &Fixture, start: &str) -> Vec<(String, Vec<String>)> {
    breeze_test_support::landings_since(&fixture.root, start)
}

#[tokio::test]
async fn a_task_that_reaches_its_cap_escalates_with_the_figure_and_the_others_land() {
    // Task 1: worker $0.60, reviewer asks for changes ($1.20): its fix round would start
    // at its cap of $1.00. Task 2 costs $0.10 a call and lands.
    let plan =
        toml_task("1", "Costly", &["a.txt"], "[task.sim]\ncost_usd = 0.6\nrequest_changes = 1")
            + &toml_task("2", "Cheap", &["b.txt"], "[task.sim]\ncost_usd = 0.1");
    let fixture = Fixture::new(&plan, &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]).trim().to_string();
    let caps = BudgetCaps { task_usd: Some(1.0), ..BudgetCaps::default() };
    let (options, told) = with_budget(&fixture, caps);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Failed, "{outcome:?}");
    let costly = task(&outcome, "1");
    assert_eq!(costly.state, TaskState::Escalated);
    let reason = costly.reason.as_deref().unwrap();
    assert!(reason.starts_with("task 1 spent $1.20 of its task_usd = 1.00;"), "{reason}");
    assert!(reason.contains("breeze retry 1"), "{reason}");
    assert_eq!(costly.attempts, 1, "the refused fix round is no attempt");
    assert_eq!(costly.usage.cost_usd, Some(1.2));
    assert_eq!(spent_calls(&fixture, &outcome, "1"), 2, "no call started past the cap");
    assert_eq!(task(&outcome, "2").state, TaskState::Landed);
    assert_eq!(outcome.status.budget, Some(caps));
    assert!(
        (outcome.status.usage.cost_usd.unwrap() - 1.4).abs() < 1e-9,
        "{:?}",
        outcome.status.usage
    );
    // Only the cheap task is on main, whole.
    assert_eq!(landings(&fixture, &start), [("2".to_string(), vec!["b.txt".to_string()])]);
    // The start said the budget; nothing was unknown.
    let budget = told.lock().unwrap().iter().find_map(|event| match event {
        ProgressEvent::Budget { summary } => Some(summary.clone()),
        _ => None,
    });
    assert_eq!(budget.as_deref(), Some("budget: task_usd = 1.00 per task"));
    assert!(notices(&told).is_empty(), "{:?}", notices(&told));
}

#[tokio::test]
async fn a_run_at_its_cap_lands_what_is_landing_starts_nothing_new_and_resumes_with_a_raise() {
    // Task 1's reviewer brings the run to its cap: task 1 still lands (landing calls no
    // role); task 2 never starts. Each call costs $0.50.
    let plan = toml_task("1", "First", &["a.txt"], "[task.sim]\ncost_usd = 0.5")
        + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]\n[task.sim]\ncost_usd = 0.5");
    let fixture = Fixture::new(&plan, &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]).trim().to_string();
    let caps = BudgetCaps { run_usd: Some(1.0), ..BudgetCaps::default() };
    let (options, told) = with_budget(&fixture, caps);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    assert_eq!(outcome.exit_code(), breeze_protocol::ExitCode::Interrupted);
    let reason = outcome.stop_reason.clone().unwrap();
    assert!(reason.starts_with("the run spent $1.00 of its run_usd = 1.00;"), "{reason}");
    assert!(reason.contains("breeze resume --budget-usd X"), "{reason}");
    assert!(reason.contains("[budget] run_usd"), "{reason}");
    assert_eq!(task(&outcome, "1").state, TaskState::Landed);
    assert_eq!((task(&outcome, "2").state, task(&outcome, "2").attempts), (TaskState::Pending, 0));
    assert_eq!(spent_calls(&fixture, &outcome, "2"), 0);
    assert!(
        notices(&told)
            .iter()
            .any(|n| n
                .starts_with("the run spent $1.00 of its run_usd = 1.00: no new role call starts")),
        "{:?}",
        notices(&told)
    );
    assert_eq!(landings(&fixture, &start), [("1".to_string(), vec!["a.txt".to_string()])]);

    // Resumed without more budget, it stops again before any call.
    let again = breeze_engine::resume(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(again.state, RunState::Interrupted);
    assert_eq!(task(&again, "2").attempts, 0);
    assert_eq!(spent_calls(&fixture, &again, "2"), 0);

    // A raise below what is spent is refused; a real one lands the rest and is kept.
    let mut low = options.clone();
    low.budget_raise = BudgetRaise { usd: Some(0.5), tokens: None };
    let err = breeze_engine::resume(low, CancellationToken::new()).await.unwrap_err();
    assert!(
        err.to_string().contains("--budget-usd 0.5 is not above what the run has spent ($1.00)"),
        "{err}"
    );
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    let mut raised = options.clone();
    raised.budget_raise = BudgetRaise { usd: Some(2.5), tokens: None };
    let done = breeze_engine::resume(raised, CancellationToken::new()).await.unwrap();
    assert_eq!(done.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.status.budget.unwrap().run_usd, Some(2.5));
    let snapshot = breeze_engine::load_run(&fixture.root, Some(&done.run_id)).unwrap();
    assert_eq!(snapshot.budget.raised_usd, Some(2.5));
    assert_eq!(
        landings(&fixture, &start),
        [
            ("1".to_string(), vec!["a.txt".to_string()]),
            ("2".to_string(), vec!["b.txt".to_string()])
        ]
    );
    git(&fixture.root, &["fsck", "--strict"]);
}

#[tokio::test]
async fn nothing_half_lands_when_the_cap_is_reached_with_two_lanes_at_work() {
    // Both workers start at once; the cap ($1.20) lets one more call start after them,
    // whichever reviewer asks first. The other task stops before its reviewer.
    let plan = toml_task("1", "One", &["a.txt"], "[task.sim]\ncost_usd = 0.5")
        + &toml_task("2", "Two", &["b.txt"], "[task.sim]\ncost_usd = 0.5\ndelay_ms = 200");
    let fixture = Fixture::new(&plan, &[]);
    let start = git(&fixture.root, &["rev-parse", "main"]).trim().to_string();
    let caps = BudgetCaps { run_usd: Some(1.2), ..BudgetCaps::default() };
    let (options, _) = with_budget(&fixture, caps);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    let landed: Vec<&str> =
        ["1", "2"].into_iter().filter(|id| task(&outcome, id).state == TaskState::Landed).collect();
    assert_eq!(landed.len(), 1, "{:?}", outcome.status.tasks);
    let stopped = if landed[0] == "1" { "2" } else { "1" };
    let record = task(&outcome, stopped);
    assert!(record.reason.as_deref().unwrap().starts_with("the run spent $1.50"), "{record:?}");
    // main holds the landed task whole and nothing of the other.
    let file = |id: &str| if id == "1" { "a.txt" } else { "b.txt" };
    assert_eq!(
        landings(&fixture, &start),
        [(landed[0].to_string(), vec![file(landed[0]).to_string()])]
    );
    let on_main = git(&fixture.root, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!on_main.lines().any(|path| path == file(stopped)), "{on_main}");
    // Its work waits on its branch, reviewed after the raise, and lands.
    let mut raised = options;
    raised.budget_raise = BudgetRaise { usd: Some(5.0), tokens: None };
    let done = breeze_engine::resume(raised, CancellationToken::new()).await.unwrap();
    assert_eq!(done.state, RunState::Succeeded, "{done:?}");
    assert_eq!(task(&done, stopped).attempts, 1, "its finished work was reviewed, not redone");
    assert_eq!(landings(&fixture, &start).len(), 2);
}

#[tokio::test]
async fn a_token_cap_stops_the_run_and_budget_tokens_raises_it() {
    let sim = "[task.sim]\ninput_tokens = 600\noutput_tokens = 100";
    let plan = toml_task("1", "First", &["a.txt"], sim)
        + &toml_task("2", "Second", &["b.txt"], &format!("depends_on = [\"1\"]\n{sim}"));
    let fixture = Fixture::new(&plan, &[]);
    let caps = BudgetCaps { run_tokens: Some(1400), ..BudgetCaps::default() };
    let (options, told) = with_budget(&fixture, caps);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Interrupted, "{outcome:?}");
    let reason = outcome.stop_reason.unwrap();
    assert!(reason.starts_with("the run used 1400 tokens of its run_tokens = 1400;"), "{reason}");
    assert!(reason.contains("--budget-tokens"), "{reason}");
    // The simulator reports tokens but no cost here; no USD cap needs one.
    assert!(notices(&told).iter().all(|n| !n.contains("cannot cap")), "{:?}", notices(&told));
    let mut raised = options;
    raised.budget_raise = BudgetRaise { usd: None, tokens: Some(10_000) };
    let done = breeze_engine::resume(raised, CancellationToken::new()).await.unwrap();
    assert_eq!(done.state, RunState::Succeeded, "{done:?}");
    assert_eq!(done.status.usage.tokens(), 2800);
    assert_eq!(done.status.usage.unpriced_calls, 4, "no call reported a cost");
}

#[tokio::test]
async fn a_backend_that_reports_no_cost_is_named_at_the_start_and_counted_as_unknown() {
    let fixture = Fixture::new(&toml_task("1", "T", &["a.txt"], ""), &[]);
    let caps = BudgetCaps { run_usd: Some(5.0), task_usd: Some(1.0), run_tokens: None };
    let (mut options, told) = with_budget(&fixture, caps);
    let body = "cat > /dev/null\necho done > a.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n";
    let worker = super::script(&fixture, "worker.sh", body);
    super::shell_worker(&mut options, &worker);
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let notices = notices(&told);
    assert!(
        notices.contains(
            &"the worker's backend `command` reports no cost: run_usd and task_usd cannot cap it: give roles.worker a backend that reports its spend (claude, or codex with its model priced), or leave the cap out"
                .to_string()
        ),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| n.starts_with(
            "the reviewer's backend `scripted` reports no cost or tokens for task(s) 1"
        )),
        "{notices:?}"
    );
    let usage = task(&outcome, "1").usage;
    assert_eq!((usage.cost_usd, usage.unpriced_calls), (None, 2), "{usage:?}");
}

#[tokio::test]
async fn require_refuses_a_reviewer_on_the_workers_own_command_before_anything_is_created() {
    let fixture = Fixture::new(&toml_task("1", "T", &["a.txt"], ""), &[]);
    let mut options = fixture.options();
    let config = options.config.as_mut().unwrap();
    for role in [&mut config.worker, &mut config.reviewer] {
        role.backend = BackendKind::Command;
        role.command = vec!["sh".into(), "agent.sh".into()];
    }
    config.independent = Independence::Require;
    let err = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    // The preflight's problem: the pairing, then what to change.
    let breeze_engine::EngineError::Preflight(lines) = &err else { panic!("{err}") };
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("worker command `sh agent.sh` → reviewer command `sh agent.sh`: NOT independent (the same command): give roles.reviewer another command"),
        "{lines:?}"
    );
    assert!(!fixture.root.join(".breeze/runs").exists(), "nothing is created");
    assert!(!fixture.root.join(".harness-worktrees").exists());
    assert!(!fixture.repo.worktrees().exists(), "no worktree was made");

    // "warn" says it at the start and runs; "off" says nothing.
    for (mode, said) in [(Independence::Warn, true), (Independence::Off, false)] {
        let mut options = options.clone();
        let config = options.config.as_mut().unwrap();
        config.independent = mode;
        config.reviewer.backend = BackendKind::Scripted;
        config.advisor.backend = BackendKind::Command;
        config.advisor.command = vec!["sh".into(), "agent.sh".into()];
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        options.progress = Arc::new(move |event| sink.lock().unwrap().push(event.clone()));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let outcome = breeze_engine::run(options, cancel).await.unwrap();
        let pairings: Vec<(String, bool)> = told
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                ProgressEvent::Pairing { line, independent } => Some((line.clone(), *independent)),
                _ => None,
            })
            .collect();
        if said {
            assert_eq!(pairings.len(), 2, "{pairings:?}");
            assert_eq!(pairings[0], ("worker command `sh agent.sh` → reviewer scripted (the simulator): exempt (the simulator is no model)".to_string(), true));
            assert!(
                !pairings[1].1
                    && pairings[1].0.contains("→ advisor command `sh agent.sh`: NOT independent"),
                "{pairings:?}"
            );
        } else {
            assert!(pairings.is_empty(), "{pairings:?}");
        }
        assert_eq!(outcome.state, RunState::Interrupted);
        breeze_engine::maintenance::abort(&fixture.root).await.unwrap();
    }
}
