//! The live view's frame: the model drawn as lines of text at most `width` columns wide,
//! with no terminal codes (the terminal module places them; tests compare them).

use std::time::{Duration, SystemTime};

use breeze_protocol::TaskState;
use unicode_width::UnicodeWidthStr;

use super::model::LiveModel;
use crate::escape::escape_controls;

/// How many milestones the frame shows.
const SHOWN_MILESTONES: usize = 5;

/// The frame of `model` at time `now`, each line cut to `width` columns; `footer` (the keys)
/// goes last.
pub fn render(
    model: &LiveModel,
    now: SystemTime,
    width: usize,
    footer: Option<&str>,
) -> Vec<String> {
    // A finished run's clocks stop at its end.
    let now = model.clock_time(now);
    let mut lines = vec![headline(model, now)];
    lines.extend(lane_table(model, now, width));
    lines.extend(waiting_lines(model));
    lines.push(totals_line(model));
    lines.extend(milestone_lines(model));
    lines.extend(footer.map(str::to_string));
    lines.into_iter().map(|line| cut(line.trim_end(), width)).collect()
}

/// How many lanes the frame shows: the run's, or more when an event named a higher one.
fn lane_count(model: &LiveModel) -> usize {
    model.lanes.len().max(model.workers as usize)
}

/// `breeze: running · 2 lanes · 1:05 · run <id>`: the run id last, so that in a narrow
/// pane the state and the time stay in view. A run with every lane idle that waits for
/// people or forges is `waiting`.
fn headline(model: &LiveModel, now: SystemTime) -> String {
    let idle = model.lanes.iter().all(Option::is_none);
    let state = match model.finished {
        Some(state) => state.as_str(),
        None if idle && !model.waiting.is_empty() => "waiting",
        None => "running",
    };
    let elapsed = model
        .started_at
        .map(|start| format!(" · {}", clock(now.duration_since(start).unwrap_or_default())))
        .unwrap_or_default();
    let lanes = lane_count(model);
    format!(
        "breeze: {state} · {lanes} lane{}{elapsed} · run {}",
        if lanes == 1 { "" } else { "s" },
        model.run_id
    )
}

/// The lane table: its header, then one row per lane (`idle` when no task holds it).
fn lane_table(model: &LiveModel, now: SystemTime, width: usize) -> Vec<String> {
    let rows: Vec<LaneRow> =
        (1..=lane_count(model)).map(|lane| LaneRow::of(model, lane, now)).collect();
    let columns = Columns::fit(&rows, width);
    let gap = " ".repeat(columns.gap);
    let cells = |cells: &[String]| cells.join(&gap);
    let mut lines = vec![cells(&[
        "lane".into(),
        fit("task", columns.task),
        fit("phase", columns.phase),
        format!("{:>1$}", "time", columns.time),
        fit("try", columns.tried),
        "last output".into(),
    ])];
    for (n, row) in rows.iter().enumerate() {
        let lane = format!("{:>4}", n + 1);
        lines.push(match &row.task {
            None => cells(&[lane, "idle".into()]),
            Some(task) => cells(&[
                lane,
                fit_label(task, columns.task),
                fit(&task.phase, columns.phase),
                format!("{:>1$}", task.elapsed, columns.time),
                fit(&task.tried, columns.tried),
                task.last.clone(),
            ]),
        });
    }
    lines
}

/// The queue (always), the landing queue and the tasks held for a person or the checkout
/// (when there are).
fn waiting_lines(model: &LiveModel) -> Vec<String> {
    let queue: Vec<String> = model.queue().map(|task| task.id.clone()).collect();
    let mut lines = vec![if queue.is_empty() {
        "queue: empty".into()
    } else {
        format!("queue: {} waiting: {}", queue.len(), queue.join(", "))
    }];
    let landing: Vec<String> = model
        .landing()
        .map(|task| match task.phase.as_str() {
            "landing" => task.id.clone(),
            phase => format!("{} ({phase})", task.id),
        })
        .collect();
    if !landing.is_empty() {
        lines.push(format!("landing queue: {}", landing.join(", ")));
    }
    let held: Vec<String> =
        model.held().map(|task| format!("{} ({})", task.id, task.state.as_str())).collect();
    if !held.is_empty() {
        lines.push(format!("held: {}", held.join(", ")));
    }
    lines.extend(model.waiting.iter().map(|wait| format!("⧗ {}", wait.line())));
    lines
}

/// `totals: 2 of 3 landed · 0 escalated`, then what was spent against the run's caps.
fn totals_line(model: &LiveModel) -> String {
    let mut totals = format!(
        "totals: {} of {} landed · {} escalated",
        model.count(TaskState::Landed),
        model.tasks.len(),
        model.count(TaskState::Escalated)
    );
    for (state, word) in [(TaskState::Failed, "failed"), (TaskState::Blocked, "blocked")] {
        let n = model.count(state);
        if n > 0 {
            totals.push_str(&format!(" · {n} {word}"));
        }
    }
    totals.push_str(&spend(model));
    totals
}

/// ` · $0.42 of $1.00 · 15400 of 500000 tokens · $0.50 a task`: each part only when
/// something was spent or a cap is set.
fn spend(model: &LiveModel) -> String {
    let mut out = String::new();
    let caps = model.budget.unwrap_or_default();
    let usd_cap = caps.run_usd.map(|cap| format!(" of ${}", breeze_engine::budget::amount(cap)));
    if model.usage.cost_usd.is_some() || usd_cap.is_some() {
        let spent = match model.usage.cost_usd {
            None => "$0.00".to_string(),
            Some(_) => crate::render::usage_cost(&model.usage),
        };
        out.push_str(&format!(" · {spent}{}", usd_cap.unwrap_or_default()));
    }
    let tokens = model.usage.tokens();
    let token_cap = caps.run_tokens.map(|cap| format!(" of {cap}"));
    if tokens > 0 || token_cap.is_some() {
        out.push_str(&format!(" · {tokens}{} tokens", token_cap.unwrap_or_default()));
    }
    if let Some(cap) = caps.task_usd {
        out.push_str(&format!(" · ${} a task", breeze_engine::budget::amount(cap)));
    }
    out
}

/// The latest milestones, oldest first, their role text escaped.
fn milestone_lines(model: &LiveModel) -> impl Iterator<Item = String> + '_ {
    let skip = model.milestones.len().saturating_sub(SHOWN_MILESTONES);
    model
        .milestones
        .iter()
        .skip(skip)
        .map(|milestone| format!("  {} {}", milestone.time, escape_controls(&milestone.text)))
}

/// `[id] title`.
fn label(id: &str, title: &str) -> String {
    format!("[{id}] {}", escape_controls(title))
}

/// The least room a lane row's last output gets before the task's title takes more.
const OUTPUT_ROOM: usize = 20;
/// How much of a title is kept beside its id however narrow the pane (then the output
/// gets its room first).
const TITLE_GLIMPSE: usize = 5;
/// The widest the task column grows.
const TASK_MAX: usize = 36;

/// One lane's row, its cells as text.
struct LaneRow {
    task: Option<LaneTask>,
}

struct LaneTask {
    /// `[id] title`.
    label: String,
    /// `[id]`: what of the label is always kept.
    id_width: usize,
    phase: String,
    elapsed: String,
    tried: String,
    last: String,
}

impl LaneRow {
    fn of(model: &LiveModel, lane: usize, now: SystemTime) -> LaneRow {
        let task = model.on_lane(lane).map(|task| LaneTask {
            label: label(&task.id, &task.title),
            id_width: format!("[{}]", escape_controls(&task.id)).width(),
            phase: escape_controls(&task.phase).into_owned(),
            elapsed: task
                .since
                .map(|since| clock(now.duration_since(since).unwrap_or_default()))
                .unwrap_or_else(|| "-".into()),
            tried: if task.attempt == 0 {
                "-".to_string()
            } else {
                format!("a{} r{}", task.attempt, task.round.max(1))
            },
            last: task.last_output.as_deref().map(escape_controls).unwrap_or_default().into_owned(),
        });
        LaneRow { task }
    }
}

/// The widths of the lane table's columns in `width` terminal columns. Phase, time and
/// try always get their full width (they say what a lane is doing; in the narrowest panes
/// the columns close up to one space); the task's title gives way first — down to its id
/// and a few letters — so that the last output keeps [`OUTPUT_ROOM`] columns; only then is
/// the output cut.
struct Columns {
    task: usize,
    phase: usize,
    time: usize,
    tried: usize,
    /// Spaces between two columns.
    gap: usize,
}

impl Columns {
    fn fit(rows: &[LaneRow], width: usize) -> Columns {
        let tasks = || rows.iter().filter_map(|row| row.task.as_ref());
        let widest = |cell: fn(&LaneTask) -> usize, least: usize| {
            tasks().map(cell).max().unwrap_or(0).max(least)
        };
        let phase = widest(|task| task.phase.width(), "phase".len());
        let time = widest(|task| task.elapsed.width(), "time".len());
        let tried = widest(|task| task.tried.width(), "try".len());
        let natural = widest(|task| task.label.width(), "idle".len()).min(TASK_MAX);
        let ids = widest(|task| task.id_width, "idle".len()).min(natural);
        // "lane", and the gaps before task, phase, time, try and the output.
        let fixed = |gap: usize| 4 + gap * 5 + phase + time + tried;
        let gap = if fixed(2) + ids <= width { 2 } else { 1 };
        let mut left = width.saturating_sub(fixed(gap));
        let mut task = ids;
        left = left.saturating_sub(task);
        let glimpse = natural.saturating_sub(task).min(TITLE_GLIMPSE).min(left);
        task += glimpse;
        left -= glimpse;
        left = left.saturating_sub(OUTPUT_ROOM);
        task += natural.saturating_sub(task).min(left);
        Columns { task, phase, time, tried, gap }
    }
}

/// `m:ss`, or `h:mm:ss` from an hour.
pub fn clock(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}") } else { format!("{m}:{s:02}") }
}

/// `text` cut to `columns` (ending in `…` when cut), padded to exactly that.
fn fit(text: &str, columns: usize) -> String {
    let kept = cut(text, columns);
    let pad = columns.saturating_sub(kept.width());
    format!("{kept}{}", " ".repeat(pad))
}

/// A task's `[id] title` in `columns`: the title cut first; the id whole while it fits.
fn fit_label(task: &LaneTask, columns: usize) -> String {
    if task.label.width() > columns && columns <= task.id_width {
        let id = task.label.split_once(' ').map_or(task.label.as_str(), |(id, _)| id);
        return fit(id, columns);
    }
    fit(&task.label, columns)
}

/// `text` cut to at most `columns` terminal columns, ending in `…` when cut.
pub fn cut(text: &str, columns: usize) -> String {
    if text.width() <= columns {
        return text.to_string();
    }
    let room = columns.saturating_sub(1);
    let mut end = 0;
    let mut used = 0;
    for (start, c) in text.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        end = start + c.len_utf8();
    }
    // Not `word …`: the space before the cut goes.
    format!("{}…", text[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::BreezeEvent;

    fn event(seq: u64, at: &str, kind: &str) -> BreezeEvent {
        serde_json::from_str(&format!(
            r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:{at}.000Z","event":{kind}}}"#
        ))
        .unwrap()
    }

    /// Two lanes: task 12 (a long title) reviewed after its second attempt, task 3 in its
    /// lane's setup.
    fn two_lanes() -> LiveModel {
        let mut model = LiveModel::default();
        let events = [
            r#"{"kind":"run_started","plan":"plan.toml","workers":2,"main_tip":"0","resumed":false}"#,
            r#"{"kind":"task_started","task":"12","title":"Load the settings from calc.toml and the environment","lane":1}"#,
            r#"{"kind":"attempt","task":"12","attempt":1,"round":1,"outcome":"failed","head":"0","error":"boom"}"#,
            r#"{"kind":"process_started","task":"12","role":"worker","pid":1,"log":"12.worker.2.log"}"#,
            r#"{"kind":"process_started","task":"12","role":"reviewer","pid":2,"log":"12.reviewer.1.log"}"#,
            r#"{"kind":"task_started","task":"3","title":"Docs","lane":2}"#,
            r#"{"kind":"command_started","task":"3","purpose":"worktree.setup","pid":3,"argv":["npm","install"],"log":"setup.lane-2"}"#,
        ];
        for (n, kind) in events.iter().enumerate() {
            model.apply(&event(n as u64 + 1, &format!("00:0{n}"), kind));
        }
        model.refresh_output(|log| {
            log.ends_with("12.reviewer.1.log")
                .then(|| "reading src/settings.rs and the tests for the loader".to_string())
        });
        model
    }

    fn at(time: &str) -> SystemTime {
        humantime::parse_rfc3339(&format!("2026-12-01T10:{time}Z")).unwrap()
    }

    #[test]
    fn in_a_narrow_pane_the_title_gives_way_before_phase_time_and_try() {
        let model = two_lanes();
        for width in [40, 60, 80, 140] {
            let lines = render(&model, at("01:05"), width, None);
            for line in &lines {
                assert!(line.width() <= width, "{width}: {line:?} is {} wide", line.width());
            }
            let lane1 = &lines[2];
            let lane2 = &lines[3];
            assert!(
                lane1.trim_start().starts_with("1 ") && lane1.contains(" [12]"),
                "{width}: {lane1:?}"
            );
            for cell in [" reviewer ", " 1:04 ", " a2 r1"] {
                assert!(lane1.contains(cell), "{width}: no {cell:?} in {lane1:?}");
            }
            assert!(
                lane2.contains(" worktree.setup ") && lane2.contains(" 1:00"),
                "{width}: {lane2:?}"
            );
            assert!(
                lines[0].starts_with("breeze: running · 2 lanes · 1:05"),
                "{width}: {:?}",
                lines[0]
            );
            let expected = match width {
                // Too narrow for the output: the id and a glimpse of the title stay.
                40 => "   1 [12] Lo… reviewer       1:04 a2 r1…",
                // The title at its glimpse; the output gets the rest.
                60 => "   1  [12] Loa…  reviewer        1:04  a2 r1  reading src/s…",
                // The output has its room; the title takes what is left.
                80 => {
                    "   1  [12] Load the settings…  reviewer        1:04  a2 r1  reading src/setting…"
                }
                _ => {
                    "   1  [12] Load the settings from calc.to…  reviewer        1:04  a2 r1  reading src/settings.rs and the tests for the loader"
                }
            };
            assert_eq!(lane1, expected, "{width}");
        }
    }

    #[test]
    fn a_finished_runs_clock_stops_at_its_end() {
        let mut model = two_lanes();
        let running = render(&model, at("05:00"), 140, None);
        assert!(running[0].contains(" · 5:00 · "), "{}", running[0]);
        model.apply(&event(9, "01:30", r#"{"kind":"run_finished","state":"interrupted"}"#));
        for now in ["05:00", "59:00"] {
            let lines = render(&model, at(now), 140, None);
            assert!(
                lines[0].starts_with("breeze: interrupted") && lines[0].contains(" · 1:30 · "),
                "{now}: {}",
                lines[0]
            );
            assert!(lines[2].contains(" 1:29 "), "{now}: the lane's clock stops too: {}", lines[2]);
        }
        // A resume starts the clock again.
        model.apply(&event(10, "58:00", r#"{"kind":"run_started","plan":"plan.toml","workers":2,"main_tip":"0","resumed":true}"#));
        assert!(render(&model, at("59:00"), 140, None)[0].contains(" · 1:00 · "));
    }

    #[test]
    fn a_run_that_waits_says_what_for_and_since_when_until_its_tasks_leave_the_wait() {
        let mut model = LiveModel::default();
        let events = [
            r#"{"kind":"run_started","plan":"plan.toml","workers":1,"main_tip":"0","resumed":false}"#,
            r#"{"kind":"task_started","task":"2","title":"Two","lane":1}"#,
            r#"{"kind":"task_state","task":"2","state":"awaiting-approval","reason":"approve it"}"#,
            r#"{"kind":"task_started","task":"4","title":"Four","lane":1}"#,
            r#"{"kind":"task_state","task":"4","state":"awaiting-approval","reason":"approve it"}"#,
            r#"{"kind":"run_waiting","waits":[{"waiting_for":"approval","tasks":["2","4"],"since":"2026-12-01T12:03:10Z"}]}"#,
        ];
        for (n, kind) in events.iter().enumerate() {
            model.apply(&event(n as u64 + 1, &format!("00:0{n}"), kind));
        }
        let lines = render(&model, at("01:00"), 140, None);
        assert!(lines[0].starts_with("breeze: waiting · 1 lane"), "{lines:?}");
        assert!(lines.contains(&"⧗ waiting for approval of 2, 4 since 12:03:10".to_string()));
        assert!(
            lines
                .iter()
                .any(|line| line.ends_with("⧗ waiting for approval of 2, 4 since 12:03:10")
                    && line.starts_with("  ")),
            "a milestone says it too: {lines:?}"
        );

        // Task 2 is approved and lands on the lane: the run works, and waits for 4 only.
        model.apply(&event(7, "00:07", r#"{"kind":"task_state","task":"2","state":"landing"}"#));
        model.apply(&event(
            8,
            "00:08",
            r#"{"kind":"task_started","task":"2","title":"Two","lane":1}"#,
        ));
        let lines = render(&model, at("01:00"), 140, None);
        assert!(lines[0].starts_with("breeze: running"), "{lines:?}");
        assert!(lines.contains(&"⧗ waiting for approval of 4 since 12:03:10".to_string()));
        // Stopped while it waited.
        model.apply(&event(9, "00:09", r#"{"kind":"run_finished","state":"waiting"}"#));
        assert!(render(&model, at("01:00"), 140, None)[0].starts_with("breeze: waiting"));
    }

    #[test]
    fn a_title_squeezed_to_its_id_keeps_the_id_whole() {
        let task = LaneTask {
            label: "[12] Load".into(),
            id_width: 4,
            phase: String::new(),
            elapsed: String::new(),
            tried: String::new(),
            last: String::new(),
        };
        assert_eq!(fit_label(&task, 4), "[12]");
        assert_eq!(fit_label(&task, 6), "[12]… ");
        assert_eq!(fit_label(&task, 12), "[12] Load   ");
    }
}
