//! The page as a whole, from a synthetic run: every text from run files is escaped.

use breeze_engine::snapshot::{FORMAT_VERSION, ObjectId, RunSnapshot, TaskRecord};
use breeze_protocol::{BreezeEvent, BreezeEventV1, EventKind, RunState, TaskState};

use super::files::{Link, Round, TaskFiles};
use super::*;

const HOSTILE: &str = "Parse <script>alert('x')</script> & \"quote\"";

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
            EventKind::TaskState { task: "1<i>".into(), state: TaskState::Running, reason: None },
        ),
        (
            "2026-01-01T00:00:02.000Z",
            EventKind::TaskState { task: "1<i>".into(), state: TaskState::Escalated, reason: None },
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
        plan: Err("no plan <here>".into()),
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
