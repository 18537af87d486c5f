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
    let mut lines = Vec::new();
    let state = match model.finished {
        Some(state) => state.as_str(),
        None => "running",
    };
    let elapsed = model
        .started_at
        .map(|start| format!(" · {}", clock(now.duration_since(start).unwrap_or_default())))
        .unwrap_or_default();
    let lanes = model.lanes.len().max(model.workers as usize);
    lines.push(format!(
        "breeze run {} · {state} · {lanes} lane{}{elapsed}",
        model.run_id,
        if lanes == 1 { "" } else { "s" }
    ));

    // One row per lane.
    let task_width = (1..=lanes)
        .filter_map(|lane| model.on_lane(lane))
        .map(|task| label(&task.id, &task.title).width())
        .max()
        .unwrap_or(4)
        .clamp(4, 36);
    let phase_width = (1..=lanes)
        .filter_map(|lane| model.on_lane(lane))
        .map(|task| task.phase.width())
        .max()
        .unwrap_or(5)
        .max(5);
    lines.push(format!(
        "lane  {}  {}  {:>7}  {:<7}  last output",
        fit("task", task_width),
        fit("phase", phase_width),
        "elapsed",
        "try"
    ));
    for lane in 1..=lanes {
        let row = match model.on_lane(lane) {
            None => format!("{lane:>4}  {}", fit("idle", task_width)),
            Some(task) => {
                let elapsed = task
                    .since
                    .map(|since| clock(now.duration_since(since).unwrap_or_default()))
                    .unwrap_or_else(|| "-".into());
                let tried = if task.attempt == 0 {
                    "-".to_string()
                } else {
                    format!("a{} r{}", task.attempt, task.round.max(1))
                };
                let last = task.last_output.as_deref().map(escape_controls).unwrap_or_default();
                format!(
                    "{lane:>4}  {}  {}  {elapsed:>7}  {tried:<7}  {last}",
                    fit(&label(&task.id, &task.title), task_width),
                    fit(&task.phase, phase_width),
                )
            }
        };
        lines.push(row);
    }

    // The queue and the held tasks.
    let queue: Vec<String> = model.queue().map(|task| task.id.clone()).collect();
    lines.push(if queue.is_empty() {
        "queue: empty".into()
    } else {
        format!("queue: {} waiting: {}", queue.len(), queue.join(", "))
    });
    let held: Vec<String> =
        model.held().map(|task| format!("{} ({})", task.id, task.state.as_str())).collect();
    if !held.is_empty() {
        lines.push(format!("held: {}", held.join(", ")));
    }

    // Totals.
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
    let caps = model.budget.unwrap_or_default();
    let usd_cap = caps.run_usd.map(|cap| format!(" of ${}", breeze_engine::budget::amount(cap)));
    if model.usage.cost_usd.is_some() || usd_cap.is_some() {
        let spent = match model.usage.cost_usd {
            None => "$0.00".to_string(),
            Some(_) => crate::render::usage_cost(&model.usage),
        };
        totals.push_str(&format!(" · {spent}{}", usd_cap.unwrap_or_default()));
    }
    let tokens = model.usage.tokens();
    let token_cap = caps.run_tokens.map(|cap| format!(" of {cap}"));
    if tokens > 0 || token_cap.is_some() {
        totals.push_str(&format!(" · {tokens}{} tokens", token_cap.unwrap_or_default()));
    }
    if let Some(cap) = caps.task_usd {
        totals.push_str(&format!(" · ${} a task", breeze_engine::budget::amount(cap)));
    }
    lines.push(totals);

    // The latest milestones.
    let skip = model.milestones.len().saturating_sub(SHOWN_MILESTONES);
    for milestone in model.milestones.iter().skip(skip) {
        lines.push(format!("  {} {}", milestone.time, escape_controls(&milestone.text)));
    }
    if let Some(footer) = footer {
        lines.push(footer.to_string());
    }
    lines.into_iter().map(|line| cut(line.trim_end(), width)).collect()
}

/// `[id] title`.
fn label(id: &str, title: &str) -> String {
    format!("[{id}] {}", escape_controls(title))
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
    format!("{}…", &text[..end])
}
