//! The live model fed real journals and hand-written events: lanes, queue, counts, totals
//! and milestones as the view shows them.

use super::*;
use breeze_protocol::{BreezeEvent, BreezeStatusV1, EventKind, TaskStatus};

/// The journal of a real run: three tasks on two lanes, every one landed.
const THREE_TASKS: &str = include_str!("../../../tests/fixtures/three-tasks.events.jsonl");

/// The journal of a run whose engine was killed right after main moved onto its
/// landing (`BREEZE_TEST_KILL_AT=landing:main-moved`), then resumed.
const KILLED_AFTER_MAIN_MOVED: &str =
    include_str!("../../../tests/fixtures/killed-after-main-moved.events.jsonl");

fn journal(text: &str) -> Vec<BreezeEvent> {
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn pending(ids: &[&str]) -> BreezeStatus {
    BreezeStatus {
        schema_version: BreezeStatusV1,
        lands_on: None,
        run_id: "r".into(),
        state: RunState::Running,
        workers: 2,
        plan: None,
        started_at: None,
        updated_at: None,
        tasks: ids
            .iter()
            .map(|id| TaskStatus {
                id: (*id).into(),
                title: format!("Task {id}"),
                state: TaskState::Pending,
                attempts: 0,
                rounds: 0,
                gate_failures: 0,
                advisor_consults: 0,
                commit: None,
                reason: None,
                cause: None,
                group: None,
                usage: Usage::default(),
                review: None,
                granted_writes: Vec::new(),
                pull_request: None,
                branch: None,
                earlier_branches: Vec::new(),
            })
            .collect(),
        usage: Usage { cost_usd: Some(0.5), ..Usage::default() },
        budget: None,
        containment: None,
        waiting: Vec::new(),
        windows: Vec::new(),
    }
}

fn lane_ids(model: &LiveModel) -> Vec<Option<&str>> {
    (1..=model.lanes.len()).map(|lane| model.on_lane(lane).map(|t| t.id.as_str())).collect()
}

#[test]
fn a_landing_recognized_after_a_kill_shows_as_landed() {
    let events = journal(KILLED_AFTER_MAIN_MOVED);
    let mut model = LiveModel::default();
    model.seed(&pending(&["1"]), Replay::WholeJournal);
    let update =
        events.iter().position(|e| matches!(e.event, EventKind::CheckoutUpdate { .. })).unwrap();
    for event in &events[..=update] {
        model.apply(event);
    }
    // An approved task waits in the landing queue, off its lane, and says what it does.
    assert!(lane_ids(&model).iter().all(Option::is_none), "the landing holds no lane");
    assert_eq!(model.landing().next().unwrap().phase, "updating your checkout");
    for event in &events[update + 1..] {
        model.apply(event);
    }
    assert_eq!(model.tasks[0].state, TaskState::Landed);
    assert!(lane_ids(&model).iter().all(Option::is_none), "the lane is free");
    assert_eq!(model.finished, Some(RunState::Succeeded));
    assert!(model.milestones.iter().any(|m| m.text.starts_with("● [1] landed")));
}

#[test]
fn lanes_queue_and_totals_follow_the_journal() {
    let events = journal(THREE_TASKS);
    let mut model = LiveModel::default();
    model.seed(&pending(&["1", "2", "3"]), Replay::WholeJournal);
    assert_eq!(model.queue().count(), 3);
    assert!(model.usage.is_empty(), "a view replaying the journal sums usage itself");

    // Up to both workers running (seq 11).
    for event in &events[..11] {
        model.apply(event);
    }
    assert_eq!(lane_ids(&model), [Some("1"), Some("2")]);
    let first = model.on_lane(1).unwrap();
    assert_eq!((first.phase.as_str(), first.attempt, first.round), ("worker", 1, 1));
    assert_eq!(first.title, "Write the first note", "the event's title wins");
    assert!(first.log.as_ref().unwrap().ends_with("logs/1.worker.1.log"));
    assert_eq!(model.queue().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["3"]);

    // Task 2 landed, task 3 took its lane (seq 30).
    for event in &events[11..30] {
        model.apply(event);
    }
    assert_eq!(lane_ids(&model), [None, Some("3")]);
    assert_eq!(model.count(TaskState::Landed), 2);
    assert_eq!(model.queue().count(), 0);
    let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"● [2] landed bd5dfc3"), "{texts:?}");
    assert_eq!(model.milestones.back().unwrap().time, "04:38:32");

    for event in &events[30..] {
        model.apply(event);
    }
    assert_eq!(model.finished, Some(RunState::Succeeded));
    assert_eq!(lane_ids(&model), [None, None]);
    assert_eq!(model.count(TaskState::Landed), 3);
    assert_eq!(model.milestones.back().unwrap().text, "run ended: succeeded");
    assert!(model.milestones.len() <= MILESTONES);
}

#[test]
fn a_watch_replaying_the_journal_counts_each_attempt_once() {
    // `breeze watch` mid-run: the report already counts the attempt in progress, and
    // the journal it replays from the start holds that attempt's worker too.
    let mut status = pending(&["1", "2", "3"]);
    for task in &mut status.tasks[..2] {
        task.state = TaskState::Running;
        task.attempts = 1;
    }
    let mut model = LiveModel::default();
    model.seed(&status, Replay::WholeJournal);
    for event in &journal(THREE_TASKS)[..11] {
        model.apply(event);
    }
    for lane in [1, 2] {
        let task = model.on_lane(lane).unwrap();
        assert_eq!((task.attempt, task.round), (1, 1), "lane {lane}: {task:?}");
    }
    assert!(model.usage.is_empty(), "tokens come from the journal only");

    // `breeze resume`'s view sees the events from now on: the report's counts are the past.
    let mut resumed = LiveModel::default();
    resumed.seed(&status, Replay::FromNow);
    let next = r#"{"schema_version":"breeze-event.v1","seq":40,"at":"2026-12-01T04:40:00.000Z","event":{"kind":"process_started","task":"1","role":"worker","pid":7,"log":"logs/1.worker.2.log"}}"#;
    resumed.apply(&serde_json::from_str(next).unwrap());
    let task = resumed.tasks.iter().find(|t| t.id == "1").unwrap();
    assert_eq!((task.attempt, task.round), (2, 1), "{task:?}");
}

#[test]
fn tasks_a_killed_engine_was_working_on_read_as_interrupted() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1", "2", "3"]), Replay::WholeJournal);
    for event in &journal(THREE_TASKS)[..11] {
        model.apply(event);
    }
    model.engine_gone();
    let states: Vec<TaskState> = model.tasks.iter().map(|task| task.state).collect();
    assert_eq!(states, [TaskState::Interrupted, TaskState::Interrupted, TaskState::Pending]);
    assert_eq!(model.on_lane(1).unwrap().phase, "interrupted", "still on its lane, stopped");
}

#[test]
fn a_view_joining_late_takes_usage_from_the_report_and_adds_what_ends_after() {
    let events = journal(THREE_TASKS);
    let mut model = LiveModel::default();
    // `breeze run`: the journal's first line comes before the report is read.
    model.apply(&events[0]);
    model.seed(&pending(&["1", "2", "3"]), Replay::FromNow);
    assert_eq!(model.run_id, "r");
    // A process's own report is not what the budget counted (the simulator starts no
    // process; codex's tokens are priced): the view adds what was counted.
    let ended = r#"{"schema_version":"breeze-event.v1","seq":9,"at":"2026-12-01T04:38:40.000Z","event":{"kind":"process_ended","task":"1","role":"worker","pid":1,"exit_code":0,"outcome":"exited","usage":{"cost_usd":null,"input_tokens":100,"output_tokens":20,"cached_input_tokens":0}}}"#;
    model.apply(&serde_json::from_str(ended).unwrap());
    let spent = r#"{"schema_version":"breeze-event.v1","seq":10,"at":"2026-12-01T04:38:40.000Z","event":{"kind":"spent","task":"1","role":"worker","usage":{"cost_usd":0.25,"input_tokens":100,"output_tokens":20,"cached_input_tokens":0}}}"#;
    model.apply(&serde_json::from_str(spent).unwrap());
    assert_eq!(model.usage.cost_usd, Some(0.75));
    assert_eq!(model.usage.input_tokens, 100);
}

#[test]
fn held_tasks_leave_the_queue_and_escalations_are_milestones() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1", "2"]), Replay::WholeJournal);
    let event = |seq: u64, kind: &str| -> BreezeEvent {
        serde_json::from_str(&format!(
            r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:0{seq}.000Z","event":{kind}}}"#
        ))
        .unwrap()
    };
    model.apply(&event(1, r#"{"kind":"task_started","task":"1","title":"A","lane":1}"#));
    model.apply(&event(
        2,
        r#"{"kind":"task_state","task":"1","state":"awaiting-approval","reason":"see the diff"}"#,
    ));
    model.apply(&event(3, r#"{"kind":"task_started","task":"2","title":"B","lane":1}"#));
    model.apply(&event(4, r#"{"kind":"task_state","task":"2","state":"running"}"#));
    let second = model.tasks.iter().find(|t| t.id == "2").unwrap();
    assert_eq!((second.attempt, second.round), (1, 1), "counted without a process");
    model.apply(&event(5, r#"{"kind":"task_state","task":"2","state":"escalated","reason":"3 failed attempts\nmore"}"#));
    assert_eq!(model.held().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["1"]);
    assert_eq!(model.queue().count(), 0);
    assert_eq!(lane_ids(&model), [None, None]);
    let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "▶ [1] A (lane 1)",
            "⧗ [1] awaiting approval",
            "▶ [2] B (lane 1)",
            "■ [2] escalated: 3 failed attempts"
        ]
    );
}

#[test]
fn a_send_back_is_one_milestone_that_says_why() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1"]), Replay::WholeJournal);
    let event = |seq: u64, kind: &str| -> BreezeEvent {
        serde_json::from_str(&format!(
            r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:0{seq}.000Z","event":{kind}}}"#
        ))
        .unwrap()
    };
    let why = "landing: verify failed (`npm test` exited 1: not ok 2 - subtracts)";
    model.apply(&event(1, r#"{"kind":"task_started","task":"1","title":"A","lane":1}"#));
    model.apply(&event(2, r#"{"kind":"reviewed","task":"1","round":1,"verdict":"APPROVE","head":"h","result_path":"r"}"#));
    model.apply(&event(
        3,
        &format!(r#"{{"kind":"sent_back","task":"1","reason":"{why}","cause":{{"kind":"verify","detail":"exited 1","command":["npm","test"],"exit_code":1}}}}"#),
    ));
    model.apply(&event(
        4,
        r#"{"kind":"attempt","task":"1","attempt":2,"round":2,"outcome":"sent-back","error":"x"}"#,
    ));
    let only = &model.tasks[0];
    assert_eq!((only.state, only.reason.as_deref()), (TaskState::Running, Some(why)));
    let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "▶ [1] A (lane 1)",
            "✓ [1] round 1: APPROVE",
            "↺ [1] landing: verify failed (`npm test` exited 1: not ok 2 - subtracts) — back to the worker",
        ]
    );
}

#[test]
fn verify_verdicts_a_person_leaving_and_scope_answers_read_as_milestones() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1", "2"]), Replay::WholeJournal);
    let kinds = [
        r#"{"kind":"verified","tasks":["1"],"commit":"aaaaaaaaaaaa","tree":"t","outcome":"passed"}"#,
        r#"{"kind":"verified","tasks":["1","2"],"commit":"aaaaaaaaaaaa","tree":"t","outcome":"flaky"}"#,
        r#"{"kind":"verified","tasks":["1","2"],"commit":"aaaaaaaaaaaa","tree":"t","outcome":"failed"}"#,
        r#"{"kind":"verified","tasks":[],"commit":"bbbbbbbbbbbbbbbb","tree":"t","outcome":"failed"}"#,
        r#"{"kind":"person_attempt","task":"1","outcome":"changed","head":"h"}"#,
        r#"{"kind":"person_attempt","task":"1","outcome":"unchanged"}"#,
        r#"{"kind":"person_attempt","task":"1","outcome":"not-committed","error":"a file above the limit\nmore"}"#,
        r#"{"kind":"scope_decided","task":"2","paths":["a.rs","b.rs"],"decision":"granted"}"#,
        r#"{"kind":"scope_decided","task":"2","paths":["c.rs"],"decision":"waiting","reason":"1"}"#,
    ];
    for (seq, kind) in kinds.iter().enumerate() {
        let line = format!(
            r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:00.000Z","event":{kind}}}"#
        );
        model.apply(&serde_json::from_str(&line).unwrap());
    }
    let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "≈ [1, 2] verify failed once and passed on a retry: flaky, not the task's",
            "✗ [1…2] verify failed together",
            "✗ main itself fails verify at bbbbbbb",
            "✋ [1] the person left a change: to review",
            "✋ [1] the person left; no change",
            "✋ [1] the person's change cannot be committed: a file above the limit",
            "+ [2] write set widened: a.rs, b.rs",
            "⊘ [2] scope request for c.rs: waiting",
        ],
        "a passing verify is not news"
    );
}

#[test]
fn a_look_at_a_pull_request_shows_its_checks_and_reviews_and_what_breeze_does() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1"]), Replay::WholeJournal);
    let followed = r#"{"schema_version":"breeze-event.v1","seq":3,"at":"2026-12-01T04:38:40.000Z","event":{"kind":"pull_request_followed","task":"1","commit":"abc","checks":"failed","review":"changes-requested","failed":["test"],"action":"back-to-worker"}}"#;
    model.apply(&serde_json::from_str(followed).unwrap());
    assert_eq!(model.tasks[0].phase, "checks failed, review changes-requested");
    let last = &model.milestones.back().unwrap().text;
    assert_eq!(
        last,
        "⇡ [1] pull request: checks failed (test), review changes-requested — back to the worker"
    );
    let mains = r#"{"schema_version":"breeze-event.v1","seq":4,"at":"2026-12-01T04:39:40.000Z","event":{"kind":"pull_request_followed","task":"1","commit":"abc","checks":"failed","review":"none","failed":["lint"],"action":"main-fails","detail":"`lint` fail(s) on main's tip too: main's failure, not the task's"}}"#;
    model.apply(&serde_json::from_str(mains).unwrap());
    let last = &model.milestones.back().unwrap().text;
    assert!(
        last.ends_with(
            "— not charged: `lint` fail(s) on main's tip too: main's failure, not the task's"
        ),
        "{last}"
    );
}

#[test]
fn a_pause_for_a_usage_window_and_a_fallback_are_milestones_and_the_task_says_it_waits() {
    let mut model = LiveModel::default();
    model.seed(&pending(&["1"]), Replay::WholeJournal);
    let event = |seq: u64, kind: &str| -> BreezeEvent {
        serde_json::from_str(&format!(
            r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:0{seq}.000Z","event":{kind}}}"#
        ))
        .unwrap()
    };
    model.apply(&event(1, r#"{"kind":"task_started","task":"1","title":"A","lane":1}"#));
    // 2026-12-06T15:00:00Z
    model.apply(&event(2, r#"{"kind":"usage_windows","backend":"claude","windows":[{"backend":"claude","window":"five_hour","used":0.95,"resets_at":1796569200}]}"#));
    model.apply(&event(3, r#"{"kind":"quota_paused","task":"1","role":"reviewer","backend":"claude","window":"five_hour","used":0.95,"until":1796569200}"#));
    assert_eq!(model.tasks[0].phase, "reviewer waits for claude's five_hour window (15:00:00)");
    model.apply(&event(
        4,
        r#"{"kind":"fell_back","task":"1","role":"reviewer","from":"claude","to":"codex"}"#,
    ));
    let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "▶ [1] A (lane 1)",
            "◔ claude five_hour 95% used, resets 2026-12-06 15:00:00 UTC",
            "⏸ [1] reviewer waits for claude's five_hour window to reset at 15:00:00",
            "⇆ [1] reviewer runs on codex: claude is paused for a usage window"
        ]
    );
}
