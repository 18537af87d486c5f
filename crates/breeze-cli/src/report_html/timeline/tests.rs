//! The derivation of the timeline from synthetic journals.

use breeze_protocol::{
    BreezeEvent, BreezeEventV1, CommandEnding, Decision, EventKind, ProcessEnding, Role, RunState,
    TaskState, Usage,
};

use super::*;

/// The attempt outcome the journal writes as `word`.
fn attempt_outcome(word: &str) -> AttemptOutcome {
    *AttemptOutcome::ALL.iter().find(|outcome| outcome.as_str() == word).unwrap()
}

/// The journal time `millis` after 2026-01-01T00:00:00Z.
fn at(millis: i64) -> String {
    format!(
        "2026-01-01T{:02}:{:02}:{:02}.{:03}Z",
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1_000 % 60,
        millis % 1_000
    )
}

/// Milliseconds since the epoch of `millis` after 2026-01-01T00:00:00Z.
fn t(millis: i64) -> i64 {
    parse_rfc3339(&at(millis)).unwrap()
}

fn journal(events: Vec<(i64, EventKind)>) -> Vec<BreezeEvent> {
    let lines = events.into_iter().enumerate();
    lines
        .map(|(n, (millis, event))| BreezeEvent {
            schema_version: BreezeEventV1,
            seq: n as u64 + 1,
            at: at(millis),
            event,
        })
        .collect()
}

fn run_started(resumed: bool) -> EventKind {
    EventKind::RunStarted {
        plan: "plan.toml".into(),
        workers: 2,
        main_tip: "0".repeat(40),
        resumed,
    }
}

fn started(task: &str, lane: u32) -> EventKind {
    EventKind::TaskStarted { task: task.into(), title: format!("task {task}"), lane }
}

fn state(task: &str, state: TaskState) -> EventKind {
    EventKind::TaskState { task: task.into(), state, reason: None, cause: None }
}

fn process(task: &str, role: Role, pid: u32) -> EventKind {
    EventKind::ProcessStarted {
        task: task.into(),
        role,
        pid,
        start_ticks: None,
        log: "x.log".into(),
    }
}

fn process_end(task: &str, role: Role, pid: u32) -> EventKind {
    let (outcome, usage) = (ProcessEnding::Exited, Usage::default());
    EventKind::ProcessEnded { task: task.into(), role, pid, exit_code: Some(0), outcome, usage }
}

fn command(task: &str, purpose: &str, pid: u32) -> EventKind {
    EventKind::CommandStarted { task: task.into(), purpose: purpose.into(), pid, start_ticks: None }
}

fn command_end(pid: u32) -> EventKind {
    EventKind::CommandEnded { pid, outcome: CommandEnding::from_text("exited 0") }
}

fn piece(start: i64, end: i64, phase: Phase) -> Piece {
    Piece::new(t(start), t(end), phase)
}

/// Work of attempt `number`, which ended `outcome` (`None`: had not ended).
fn work(start: i64, end: i64, number: u32, outcome: Option<&'static str>) -> Piece {
    let outcome = outcome.map(attempt_outcome);
    Piece { attempt: Some(AttemptMark { number, outcome }), ..piece(start, end, Phase::Work) }
}

fn attempt(task: &str, attempt: u32, outcome: &str) -> EventKind {
    EventKind::Attempt {
        task: task.into(),
        attempt,
        round: 1,
        outcome: attempt_outcome(outcome),
        head: None,
        error: (outcome != "completed").then(|| "cargo test failed".into()),
    }
}

fn stay_of<'a>(timeline: &'a Timeline, task: &str, lane: Option<u32>) -> &'a Stay {
    let found = timeline.stays.iter().find(|stay| stay.task == task && stay.lane == lane);
    found.unwrap_or_else(|| panic!("no stay of {task} on {lane:?}: {timeline:#?}"))
}

#[test]
fn processes_and_commands_refine_the_phases_of_the_states() {
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("1", 1)),
        (10, state("1", TaskState::Running)),
        (20, process("1", Role::Worker, 100)),
        (500, process_end("1", Role::Worker, 100)),
        (510, state("1", TaskState::Reviewing)),
        (520, command("1", "review.checks", 101)),
        (600, command_end(101)),
        (650, process("1", Role::Reviewer, 102)),
        (900, process_end("1", Role::Reviewer, 102)),
        (910, state("1", TaskState::Landing)),
        (920, command("1", "land.verify", 103)),
        (950, command_end(103)),
        (1_000, state("1", TaskState::Landed)),
        (1_000, EventKind::RunFinished { state: RunState::Succeeded }),
    ]);
    let timeline = derive(&events);
    assert_eq!(timeline.sessions, vec![(t(0), t(1_000))]);
    assert_eq!(timeline.lanes(), vec![1]);
    let stay = stay_of(&timeline, "1", Some(1));
    assert_eq!((stay.start, stay.end, stay.ended.as_str()), (t(0), t(1_000), "landed"));
    assert_eq!(
        stay.pieces,
        vec![
            piece(0, 10, Phase::Waiting),
            work(10, 510, 1, None),
            piece(510, 650, Phase::Gates),
            piece(650, 910, Phase::Review),
            piece(910, 1_000, Phase::Landing),
        ]
    );
}

#[test]
fn consults_without_a_process_and_deferrals_are_placed_from_the_states() {
    let consulted = EventKind::AdvisorConsulted {
        task: "2".into(),
        trigger_hash: "2:needs-advice:x".into(),
        decision: Decision::Plan,
        response_path: "advisor/2.needs-advice.1.advisor-response.json".into(),
    };
    let attempt = EventKind::Attempt {
        task: "2".into(),
        attempt: 1,
        round: 1,
        outcome: AttemptOutcome::NeedsAdvice,
        head: None,
        error: None,
    };
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("2", 2)),
        (5, state("2", TaskState::Running)),
        (200, attempt),
        (300, consulted),
        (400, state("2", TaskState::Reviewing)),
        (600, state("2", TaskState::Landing)),
        (
            650,
            EventKind::TaskState {
                task: "2".into(),
                state: TaskState::Deferred,
                reason: Some("a touched path is dirty".into()),
                cause: None,
            },
        ),
        (1_200, started("2", 1)),
        (1_210, state("2", TaskState::Landing)),
        (1_300, state("2", TaskState::Landed)),
    ]);
    let timeline = derive(&events);
    assert_eq!(timeline.lanes(), vec![1, 2]);
    let first = stay_of(&timeline, "2", Some(2));
    assert_eq!(first.ended, "deferred");
    assert_eq!(
        first.pieces,
        vec![
            piece(0, 5, Phase::Waiting),
            work(5, 200, 1, Some("needs-advice")),
            piece(200, 300, Phase::Advisor),
            // No `running` state after the advice: still the first attempt.
            work(300, 400, 1, Some("needs-advice")),
            piece(400, 600, Phase::Review),
            piece(600, 650, Phase::Landing),
        ]
    );
    let off = stay_of(&timeline, "2", None);
    assert_eq!((off.start, off.end), (t(650), t(1_200)));
    assert_eq!(off.pieces, vec![piece(650, 1_200, Phase::Waiting)]);
    let again = stay_of(&timeline, "2", Some(1));
    assert_eq!(again.pieces.last(), Some(&piece(1_210, 1_300, Phase::Landing)));
    // The journal ends without run_finished (a live run): it spans up to its last event.
    assert_eq!(timeline.sessions, vec![(t(0), t(1_300))]);
}

#[test]
fn a_resumed_run_spans_its_sessions_and_stays_end_when_the_engine_stops() {
    let scope = |decision: &str| EventKind::ScopeDecided {
        task: "3".into(),
        paths: vec!["b.txt".into()],
        decision: *ScopeAnswer::ALL.iter().find(|answer| answer.as_str() == decision).unwrap(),
        reason: None,
    };
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("3", 1)),
        (10, state("3", TaskState::Running)),
        (100, scope("waiting")),
        (300, scope("granted")),
        (500, EventKind::RunFinished { state: RunState::Interrupted }),
        (60_000, run_started(true)),
        (60_010, started("3", 1)),
        (60_020, state("3", TaskState::Running)),
        (60_100, started("4", 1)),
        (61_000, EventKind::RunFinished { state: RunState::Failed }),
    ]);
    let timeline = derive(&events);
    assert_eq!(timeline.sessions, vec![(t(0), t(500)), (t(60_000), t(61_000))]);
    let stays: Vec<(&str, i64, i64, &str)> = timeline
        .stays
        .iter()
        .map(|stay| (stay.task.as_str(), stay.start, stay.end, stay.ended.as_str()))
        .collect();
    assert_eq!(
        stays,
        vec![
            ("3", t(0), t(500), "stopped"),
            ("3", t(60_010), t(60_100), "replaced"),
            ("4", t(60_100), t(61_000), "stopped"),
        ]
    );
    assert_eq!(
        timeline.stays[0].pieces,
        vec![
            piece(0, 10, Phase::Waiting),
            work(10, 100, 1, None),
            piece(100, 300, Phase::Waiting),
            work(300, 500, 1, None),
        ]
    );
    // Resumed, the task works in a new attempt.
    assert_eq!(timeline.stays[1].pieces.last(), Some(&work(60_020, 60_100, 2, None)));
}

#[test]
fn unreadable_times_are_skipped_and_a_clock_stepping_back_keeps_the_order() {
    let mut events = journal(vec![
        (0, run_started(false)),
        (100, started("1", 1)),
        (50, state("1", TaskState::Running)),
        (400, state("1", TaskState::Escalated)),
    ]);
    events.push(BreezeEvent {
        schema_version: BreezeEventV1,
        seq: 9,
        at: "not a time".into(),
        event: EventKind::RunFinished { state: RunState::Failed },
    });
    let timeline = derive(&events);
    assert_eq!(timeline.skipped, 1);
    let stay = stay_of(&timeline, "1", Some(1));
    assert_eq!(stay.pieces, vec![work(100, 400, 1, None)]);
    assert_eq!(stay.ended, "escalated");
    assert!(derive(&[]).extent().is_none());
}

#[test]
fn an_approval_wait_leaves_the_lane_and_waits_off_it_until_the_task_lands() {
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("5", 1)),
        (10, state("5", TaskState::Running)),
        (100, state("5", TaskState::Reviewing)),
        (200, state("5", TaskState::AwaitingApproval)),
        (210, started("6", 1)),
        (220, state("6", TaskState::Running)),
        // `breeze approve 5` (an earlier breeze): the task lands on the next free lane.
        (900, state("5", TaskState::Landing)),
        (950, started("5", 2)),
        (960, state("5", TaskState::Landing)),
        (1_000, state("5", TaskState::Landed)),
        (1_100, state("6", TaskState::Escalated)),
        (1_100, EventKind::RunFinished { state: RunState::Failed }),
    ]);
    let timeline = derive(&events);
    assert_eq!(timeline.lanes(), vec![1, 2]);
    let first = stay_of(&timeline, "5", Some(1));
    assert_eq!((first.end, first.ended.as_str()), (t(200), "awaiting-approval"));
    assert_eq!(
        first.pieces,
        vec![piece(0, 10, Phase::Waiting), work(10, 100, 1, None), piece(100, 200, Phase::Review)]
    );
    let off = stay_of(&timeline, "5", None);
    assert_eq!((off.start, off.end, off.ended.as_str()), (t(200), t(900), "awaiting-approval"));
    assert_eq!(off.pieces, vec![piece(200, 900, Phase::Waiting)]);
    let queued: Vec<&Stay> =
        timeline.stays.iter().filter(|stay| stay.task == "5" && stay.lane.is_none()).collect();
    assert_eq!(
        (queued[1].start, queued[1].end, queued[1].ended.as_str()),
        (t(900), t(950), "restarted")
    );
    let landing = stay_of(&timeline, "5", Some(2));
    assert_eq!(
        landing.pieces,
        vec![piece(950, 960, Phase::Waiting), piece(960, 1_000, Phase::Landing)]
    );
    let other = stay_of(&timeline, "6", Some(1));
    assert_eq!((other.start, other.end, other.ended.as_str()), (t(210), t(1_100), "escalated"));
}

#[test]
fn a_landing_recognized_after_a_kill_ends_the_stay_the_kill_cut_off() {
    // A real journal: the engine was killed right after main moved onto the landing
    // (`BREEZE_TEST_KILL_AT=landing:main-moved`); the resumed run journaled the landing.
    let text = include_str!("../../../tests/fixtures/killed-after-main-moved.events.jsonl");
    let events: Vec<BreezeEvent> =
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let timeline = derive(&events);
    assert_eq!(timeline.sessions.len(), 2);
    let ended: Vec<(&str, &str)> =
        timeline.stays.iter().map(|stay| (stay.task.as_str(), stay.ended.as_str())).collect();
    assert_eq!(ended, [("1", "landed")]);
    let stay = &timeline.stays[0];
    assert_eq!(stay.end, timeline.sessions[0].1, "it ends where the killed engine stopped");
    assert_eq!(stay.pieces.last().map(|piece| piece.phase), Some(Phase::Landing));
}

#[test]
fn a_failed_attempt_and_its_retry_are_pieces_of_their_own() {
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("7", 1)),
        (10, state("7", TaskState::Running)),
        (20, process("7", Role::Worker, 100)),
        (400, process_end("7", Role::Worker, 100)),
        (410, attempt("7", 1, "failed")),
        (420, state("7", TaskState::Running)),
        (430, process("7", Role::Worker, 101)),
        (800, process_end("7", Role::Worker, 101)),
        (805, attempt("7", 2, "completed")),
        (810, state("7", TaskState::Reviewing)),
        (900, state("7", TaskState::Landed)),
        // In-process roles (the scripted backend) start no process: the states and the
        // attempt events alone cut the work.
        (1_000, started("8", 1)),
        (1_010, state("8", TaskState::Running)),
        (1_200, attempt("8", 1, "stalled")),
        (1_210, state("8", TaskState::Running)),
        (1_500, attempt("8", 2, "completed")),
        (1_510, state("8", TaskState::Reviewing)),
        (1_600, EventKind::RunFinished { state: RunState::Interrupted }),
    ]);
    let timeline = derive(&events);
    assert_eq!(
        stay_of(&timeline, "7", Some(1)).pieces,
        vec![
            piece(0, 10, Phase::Waiting),
            work(10, 420, 1, Some("failed")),
            work(420, 810, 2, Some("completed")),
            piece(810, 900, Phase::Review),
        ]
    );
    let scripted = stay_of(&timeline, "8", Some(1));
    assert_eq!(
        scripted.pieces,
        vec![
            piece(1_000, 1_010, Phase::Waiting),
            work(1_010, 1_210, 1, Some("stalled")),
            work(1_210, 1_510, 2, Some("completed")),
            piece(1_510, 1_600, Phase::Review),
        ]
    );
    assert!(scripted.pieces[1].attempt.unwrap().failed());
    assert!(!scripted.pieces[2].attempt.unwrap().failed());
}

#[test]
fn a_send_back_is_marked_and_a_review_a_gate_cut_short_was_the_gates() {
    use breeze_protocol::{Cause, CauseKind};
    let gate = Cause { name: Some("write-set".into()), ..Cause::new(CauseKind::Gate, "x.md") };
    let sent_back = |millis| {
        let (task, reason, cause) = ("9".to_string(), gate.line(), gate.clone());
        (millis, EventKind::SentBack { task, reason, cause })
    };
    let running_again = EventKind::TaskState {
        task: "9".into(),
        state: TaskState::Running,
        reason: Some(gate.line()),
        cause: Some(gate.clone()),
    };
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("9", 1)),
        (10, state("9", TaskState::Running)),
        (300, attempt("9", 1, "completed")),
        (300, state("9", TaskState::Reviewing)),
        // The gates on the diff fail: back to work, no reviewer round.
        sent_back(340),
        (340, running_again.clone()),
        // The next attempt's files are refused before anything is staged.
        (600, attempt("9", 2, "sent-back")),
        sent_back(600),
        (600, running_again),
        (900, attempt("9", 3, "completed")),
        (900, state("9", TaskState::Reviewing)),
        (950, process("9", Role::Reviewer, 300)),
        (990, process_end("9", Role::Reviewer, 300)),
        (1_000, state("9", TaskState::Landed)),
        // Another task's third gate failure in a row escalates it from its review.
        (1_000, started("10", 1)),
        (1_010, state("10", TaskState::Running)),
        (1_100, attempt("10", 1, "completed")),
        (1_100, state("10", TaskState::Reviewing)),
        (
            1_150,
            EventKind::TaskState {
                task: "10".into(),
                state: TaskState::Escalated,
                reason: Some(gate.clone().times(3).line()),
                cause: Some(gate.clone().times(3)),
            },
        ),
    ]);
    let timeline = derive(&events);
    assert_eq!(
        stay_of(&timeline, "9", Some(1)).pieces,
        vec![
            piece(0, 10, Phase::Waiting),
            work(10, 300, 1, Some("completed")),
            piece(300, 340, Phase::Gates),
            work(340, 600, 2, Some("sent-back")),
            work(600, 900, 3, Some("completed")),
            // A review with a reviewer: the gates passed before it started.
            piece(900, 950, Phase::Gates),
            piece(950, 1_000, Phase::Review),
        ]
    );
    let escalated = stay_of(&timeline, "10", Some(1));
    assert_eq!(escalated.pieces.last(), Some(&piece(1_100, 1_150, Phase::Gates)));
    assert_eq!(escalated.why.as_deref(), Some(gate.clone().times(3).line().as_str()));
    let marks: Vec<(i64, &str)> =
        timeline.sent_back.iter().map(|sent| (sent.at, sent.reason.as_str())).collect();
    let line = gate.line();
    assert_eq!(marks, [(t(340), line.as_str()), (t(600), line.as_str())]);
    assert!(AttemptMark { number: 2, outcome: Some(AttemptOutcome::SentBack) }.failed());
}

#[test]
fn an_attempt_asking_for_scope_is_not_failed_and_a_self_review_that_does_not_hold_is() {
    let mark = |outcome| AttemptMark { number: 1, outcome: Some(outcome) };
    assert!(!mark(AttemptOutcome::NeedsScope).failed());
    assert_eq!(mark(AttemptOutcome::NeedsScope).shown_outcome(), Some("needs-scope"));
    assert!(mark(AttemptOutcome::SelfReview).failed());
    assert_eq!(mark(AttemptOutcome::SelfReview).shown_outcome(), Some("self-review"));
    assert_eq!(AttemptMark { number: 1, outcome: None }.shown_outcome(), None);
}

#[test]
fn an_approved_task_landing_from_the_queue_is_a_landing_off_the_lanes_that_ends_landed() {
    let events = journal(vec![
        (0, run_started(false)),
        (0, started("5", 1)),
        (10, state("5", TaskState::Running)),
        (100, state("5", TaskState::Reviewing)),
        (200, state("5", TaskState::AwaitingApproval)),
        // `breeze approve 5`: it lands from the landing queue, on no lane.
        (900, state("5", TaskState::Landing)),
        (1_000, state("5", TaskState::Landed)),
        (1_000, EventKind::RunFinished { state: RunState::Succeeded }),
    ]);
    let timeline = derive(&events);
    let off: Vec<&Stay> =
        timeline.stays.iter().filter(|stay| stay.task == "5" && stay.lane.is_none()).collect();
    assert_eq!(off.len(), 2, "{off:#?}");
    assert_eq!(
        (off[0].start, off[0].end, off[0].ended.as_str()),
        (t(200), t(900), "awaiting-approval")
    );
    assert_eq!((off[1].start, off[1].end, off[1].ended.as_str()), (t(900), t(1_000), "landed"));
    assert_eq!(off[1].pieces, vec![piece(900, 1_000, Phase::Landing)]);
}
