//! The page as a whole, from a synthetic run: every text from run files is escaped.

use breeze_engine::snapshot::{FORMAT_VERSION, ObjectId, RunSnapshot, TaskRecord};
use breeze_protocol::{BreezeEvent, BreezeEventV1, EventKind, RunState, TaskState};

use super::files::{Link, Round, TaskFiles};
use super::*;

const HOSTILE: &str = "Parse <script>alert('x')</script> & \"quote\"";

/// A plan that could not be read, `<here>` in its name.
fn unreadable_plan() -> PlanUnreadable {
    let path = Path::new("no plan <here>.toml");
    let source = breeze_plan::parse_plan_toml("[[task]", path).expect_err("not TOML");
    PlanUnreadable { path: path.to_path_buf(), source }
}

fn snapshot() -> RunSnapshot {
    let oid = breeze_git::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
    let mut task = TaskRecord::new("1<i>", HOSTILE, Some(1));
    task.phase = breeze_engine::snapshot::TaskPhase::Escalated;
    task.reason = Some("gave up on <b>bold</b>\x1b[31m".into());
    RunSnapshot {
        format_version: FORMAT_VERSION,
        run_id: "run-<1>".into(),
        plan: "plan.toml".into(),
        state: RunState::Failed,
        workers: 1,
        main_branch: "main".into(),
        main_tip_at_start: ObjectId(oid),
        started_at: "2026-01-01T00:00:00Z".into(),
        updated_at: "2026-01-01T00:00:02Z".into(),
        stop_reason: None,
        tasks: vec![task],
        consulted: Default::default(),
        universal_violations: vec!["never <marquee>".into()],
        containment: None,
        budget: Default::default(),
        generation: 0,
        waiting: Vec::new(),
        windows: Vec::new(),
    }
}

fn events() -> Vec<BreezeEvent> {
    let kinds = [
        (
            "2026-01-01T00:00:00.000Z",
            EventKind::TaskStarted { task: "1<i>".into(), title: HOSTILE.into(), lane: 1 },
        ),
        (
            "2026-01-01T00:00:00.100Z",
            EventKind::TaskState {
                task: "1<i>".into(),
                state: TaskState::Running,
                reason: None,
                cause: None,
            },
        ),
        (
            "2026-01-01T00:00:02.000Z",
            EventKind::TaskState {
                task: "1<i>".into(),
                state: TaskState::Escalated,
                reason: None,
                cause: None,
            },
        ),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(n, (at, event))| BreezeEvent {
            schema_version: BreezeEventV1,
            seq: n as u64 + 1,
            at: at.into(),
            event,
        })
        .collect()
}

#[test]
fn every_text_from_run_files_is_escaped() {
    let snapshot = snapshot();
    let status = snapshot.status();
    let round = Round {
        round: 1,
        verdict: Some("REQUEST_CHANGES".into()),
        files: vec![Link {
            href: "reviews/x\"onclick=\"alert(1).diff".into(),
            label: "diff".into(),
        }],
    };
    let files = TaskFiles { rounds: vec![round], ..TaskFiles::default() };
    let report = Report {
        snapshot: &snapshot,
        status: &status,
        timeline: timeline::derive(&events()),
        journal_problem: Some("line 3: <bad>".into()),
        plan: Err(unreadable_plan()),
        files: BTreeMap::from([("1<i>".to_string(), files)]),
        written_at: "now".into(),
        zone: Zone::UTC,
    };
    let html = page::render(&report);
    for raw in ["<script", "<i>", "<b>", "<marquee", "<1>", "<bad>", "<here>", "\"onclick", "\x1b"]
    {
        assert!(!html.contains(raw), "{raw:?} is not escaped in:\n{html}");
    }
    for escaped in [
        "Parse &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quote&quot;",
        "1&lt;i&gt;",
        "run-&lt;1&gt;",
        "never &lt;marquee&gt;",
        "gave up on &lt;b&gt;bold&lt;/b&gt;\\x1b[31m",
        "href=\"reviews/x&quot;onclick=&quot;alert(1).diff\"",
    ] {
        assert!(html.contains(escaped), "{escaped:?} is missing from:\n{html}");
    }
    assert!(!html.contains("http://") && !html.contains("https://"), "{html}");
    assert_eq!(html.matches("class=\"lane-row\"").count(), 1);
    assert!(html.contains("<svg id=\"timeline\""));
}

#[test]
fn the_page_names_the_cause_of_an_escalation_and_of_each_send_back() {
    use breeze_protocol::{Cause, CauseKind};
    let gate = Cause {
        name: Some("write-set".into()),
        paths: vec!["package-lock.json".into()],
        ..Cause::new(CauseKind::Gate, "package-lock.json is outside the task's writes")
    };
    let mut snapshot = snapshot();
    let task = &mut snapshot.tasks[0];
    (task.attempts, task.rounds, task.gate_failures) = (3, 0, 3);
    task.set_cause(Some(gate.clone().times(3)));
    let status = snapshot.status();
    let at = |n: u64, at: &str, event| BreezeEvent {
        schema_version: BreezeEventV1,
        seq: n,
        at: at.into(),
        event,
    };
    let events = vec![
        at(
            1,
            "2026-01-01T00:00:00.000Z",
            EventKind::TaskStarted { task: "1<i>".into(), title: "t".into(), lane: 1 },
        ),
        at(
            2,
            "2026-01-01T00:00:01.000Z",
            EventKind::SentBack { task: "1<i>".into(), reason: gate.line(), cause: gate.clone() },
        ),
        at(
            3,
            "2026-01-01T00:00:02.000Z",
            EventKind::TaskState {
                task: "1<i>".into(),
                state: TaskState::Escalated,
                reason: Some(gate.clone().times(3).line()),
                cause: Some(gate.clone().times(3)),
            },
        ),
    ];
    let zone = Zone::Fixed(3_600);
    let html = Report::from_parts(&snapshot, &status, &events, Err(unreadable_plan()), "now", zone)
        .render();
    let escalated = "the write-set gate failed 3 times in a row: package-lock.json is outside the task&#39;s writes";
    let row = html.lines().find(|line| line.starts_with("<tr id=\"task-0\"")).unwrap();
    assert!(row.contains(&format!("<td class=\"reason\">{escalated}")), "{row}");
    assert!(
        row.contains("<li>sent back: the write-set gate failed: package-lock.json is outside"),
        "{row}"
    );
    assert!(
        row.contains(
            "title=\"3 attempts, 0 rounds, 3 gate failures, 0 consults\">3 · 0 · 3 · 0</td>"
        ),
        "no reviewer round, three gate failures: {row}"
    );
    // The timeline: the bar says why it ended, and the send-back has a mark of its own.
    assert!(html.contains(&format!("escalated: {escalated}")), "{html}");
    assert!(html.contains("class=\"sent-back\" data-task=\"1&lt;i&gt;\""), "{html}");
    assert!(
        html.contains("sent back to its worker (01:00:01.000 +01:00):\nthe write-set gate failed:"),
        "{html}"
    );
}
