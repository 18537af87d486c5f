//! The HTML page around the drawings: the run's summary, the legend, the task table, the
//! task files, what needs attention. Every text from run files goes through `html::esc`.

use crate::render::first_line;
use std::collections::HashMap;
use std::fmt::Write;

use breeze_protocol::{TaskState, TaskStatus};

use super::files::{Link, TaskFiles};
use super::graph::state_fill;
use super::html::{css_word, esc};
use super::report::Report;
use super::time::{duration, parse_rfc3339};
use super::timeline::Phase;
use super::timeline_svg::{FAILED, colour};
use super::{graph, spent, timeline_svg};
use crate::render;

const STYLE: &str = r#"
body { margin: 0; background: #fff; color: #1f2933; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 40px; }
h1 { font-size: 22px; margin: 0 0 10px; }
h2 { font-size: 17px; margin: 30px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #e3e7ed; }
h3 { font-size: 14px; margin: 14px 0 4px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12.5px; }
.summary { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
.summary dt { color: #52606d; }
.summary dd { margin: 0; }
.scroll { overflow-x: auto; }
svg.timeline { max-width: 100%; height: auto; }
.note { color: #52606d; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 20px; margin: 6px 0 10px; padding: 0; list-style: none; }
.swatch { display: inline-block; width: 14px; height: 14px; margin-right: 6px; vertical-align: -2px; border: 1px solid #1f2933; }
.swatch.waiting { background: repeating-linear-gradient(45deg, #9aa3ae 0 2px, #d9dde3 2px 6px); }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; font-size: 12px; fill: #1f2933; }
svg .tick, svg .break-label { font-size: 11px; fill: #52606d; }
svg .row-label, svg .group-label, svg .node-id { font-weight: 600; }
svg .node-state { font-size: 11px; fill: #52606d; }
svg .stay-label { font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3.5px; stroke-linejoin: round; }
table.tasks, table.spent { border-collapse: collapse; width: 100%; }
.tasks th, .tasks td, .spent th, .spent td { padding: 5px 6px; border-bottom: 1px solid #e3e7ed; text-align: left; vertical-align: top; }
.tasks th, .spent thead th { background: #f4f6f9; font-weight: 600; }
.tasks td.title { min-width: 7em; overflow-wrap: break-word; }
.tasks td.reason { min-width: 8em; overflow-wrap: anywhere; }
.tasks td.num, .spent td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tasks .sub { display: block; color: #52606d; font-size: 12px; font-weight: normal; }
ul.sent-back { margin: 4px 0 0; padding-left: 16px; color: #9b2c2c; }
.spent tr.run th, .spent tr.run td { font-weight: 600; }
.spent .share { display: block; color: #52606d; font-size: 12px; font-weight: normal; }
.badge { display: inline-block; padding: 0 8px; border: 1px solid #9aa3ae; border-radius: 10px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.cut { display: inline-block; width: 2px; height: 14px; margin: 0 6px 0 2px; vertical-align: -2px; background: #2b6cb0; border-left: 2px solid #fff; }
.failed-edge { display: inline-block; width: 14px; height: 3px; margin-right: 6px; vertical-align: 2px; }
.sent-tick { display: inline-block; width: 3px; height: 16px; margin: 0 6px 0 2px; vertical-align: -3px; }
ul.plain { margin: 4px 0; padding-left: 20px; }
footer { margin-top: 30px; color: #7b8794; font-size: 12px; }
"#;

/// The whole page.
pub fn render(report: &Report<'_>) -> String {
    let status = report.status;
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>breeze run {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&status.run_id)
    );
    summary(&mut out, report);
    timeline(&mut out, report);
    time_spent(&mut out, report);
    tasks(&mut out, report);
    conflict_graph(&mut out, report);
    task_files(&mut out, report);
    attention(&mut out, report);
    let _ = write!(
        out,
        "<footer>Written by breeze {} at {}. Self-contained: nothing here is fetched from the network; the links open the run's files next to it.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&local_time(report, &report.written_at))
    );
    out
}

/// An RFC 3339 time of the run files in the reader's zone (`2026-12-01 23:14:05 +01:00`);
/// as written when it is not one.
fn local_time(report: &Report<'_>, rfc3339: &str) -> String {
    parse_rfc3339(rfc3339)
        .map_or_else(|| rfc3339.to_string(), |millis| report.zone.date_time(millis))
}

/// The title and the run's facts.
fn summary(out: &mut String, report: &Report<'_>) {
    let (snapshot, status) = (report.snapshot, report.status);
    let _ = writeln!(
        out,
        "<h1>breeze run <code>{}</code></h1>\n<dl class=\"summary\">",
        esc(&status.run_id)
    );
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    };
    fact("state", badge(status.state.as_str()));
    for wait in &status.waiting {
        fact("waits", esc(&wait.line()));
    }
    fact("plan", format!("<code>{}</code>", esc(&snapshot.plan)));
    fact("lands on", format!("<code>{}</code>", esc(&snapshot.main_branch)));
    let used = report.timeline.lanes().len();
    let lanes = status.workers.to_string();
    fact(
        "lanes",
        if used == status.workers as usize { lanes } else { format!("{lanes} ({used} used)") },
    );
    fact("started", esc(&local_time(report, &snapshot.started_at)));
    fact("updated", esc(&local_time(report, &snapshot.updated_at)));
    if let Some((start, end)) = report.timeline.extent() {
        let sessions = report.timeline.sessions.len();
        let active: i64 = report.timeline.sessions.iter().map(|(s, e)| e - s).sum();
        let resumed =
            if sessions > 1 { format!(" over {sessions} sessions") } else { String::new() };
        fact(
            "duration",
            format!(
                "{} of engine time{resumed} ({} from first to last event)",
                duration(active),
                duration(end - start)
            ),
        );
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for task in &status.tasks {
        match counts.iter_mut().find(|(state, _)| *state == task.state.as_str()) {
            Some((_, n)) => *n += 1,
            None => counts.push((task.state.as_str(), 1)),
        }
    }
    let counts: Vec<String> = counts.iter().map(|(state, n)| format!("{n} {state}")).collect();
    fact("tasks", format!("{} ({})", status.tasks.len(), counts.join(", ")));
    if status.usage.reported() {
        let usage = &status.usage;
        fact(
            "cost",
            format!(
                "{} — {} input, {} output tokens ({} cached)",
                esc(&render::total_cost(status)),
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens
            ),
        );
    }
    if let Some(line) = render::budget_line(status.budget.as_ref(), &status.usage) {
        fact("budget", esc(line.trim_start_matches("budget: ")));
    }
    if let Some(containment) = &status.containment {
        fact("confinement", esc(&containment.summary));
    }
    out.push_str("</dl>\n");
}

/// The timeline with its legend.
fn timeline(out: &mut String, report: &Report<'_>) {
    out.push_str("<section id=\"timeline-section\">\n<h2>Timeline</h2>\n<ul class=\"legend\">");
    for phase in Phase::ALL {
        let swatch = match phase {
            Phase::Waiting => "<span class=\"swatch waiting\"></span>".to_string(),
            _ => format!("<span class=\"swatch\" style=\"background:{}\"></span>", colour(phase)),
        };
        let _ =
            write!(out, "<li>{swatch}<strong>{}</strong> — {}</li>", phase.name(), phase.meaning());
    }
    let _ = write!(
        out,
        "<li><span class=\"cut\"></span>the next worker attempt; <span class=\"failed-edge\" style=\"background:{FAILED}\"></span>an attempt that failed or was sent back; <span class=\"sent-tick\" style=\"background:{FAILED}\"></span>sent back to the worker (hover for why)</li>"
    );
    out.push_str("<li>✓ landed, ✗ escalated or failed, ⊘ blocked, ‖ deferred, ? awaiting approval</li></ul>\n");
    if let Some(problem) = &report.journal_problem {
        let _ = writeln!(
            out,
            "<p class=\"note\">The journal could not be read completely: {}</p>",
            esc(problem)
        );
    }
    if report.timeline.skipped > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} journal events had no readable time and are left out.</p>",
            report.timeline.skipped
        );
    }
    let titles: HashMap<&str, &str> =
        report.status.tasks.iter().map(|task| (task.id.as_str(), task.title.as_str())).collect();
    out.push_str("<div class=\"scroll\">\n");
    out.push_str(&timeline_svg::render(&report.timeline, &titles, &report.zone));
    let _ = writeln!(
        out,
        "</div>\n<p class=\"note\">Hover a bar for the task, its phase, its attempt and its times (local time, UTC{}). Times on the axis are since the run started.</p>\n</section>",
        report
            .timeline
            .extent()
            .map_or_else(String::new, |(start, _)| report.zone.offset_text(start))
    );
}

/// Where the time went: each phase's time and share, for the run and for each task.
fn time_spent(out: &mut String, report: &Report<'_>) {
    let (run, tasks) = spent::spent(&report.timeline);
    if run.total() == 0 {
        return;
    }
    out.push_str("<section id=\"spent-section\">\n<h2>Where the time went</h2>\n<p class=\"note\">Each task's time in each phase, summed over its stays on the lanes and off them (a deferred landing, an approval wait); the share is of the row's total. Lanes work side by side, so the run's total is more than its duration.</p>\n<div class=\"scroll\">\n<table id=\"spent\" class=\"spent\">\n<thead><tr><th>task</th>");
    for phase in Phase::ALL {
        let _ = write!(out, "<th>{}</th>", phase.name());
    }
    out.push_str("<th>total</th></tr></thead>\n<tbody>\n");
    let row = |out: &mut String, spent: &spent::Spent| {
        for phase in Phase::ALL {
            let millis = spent.of(phase);
            if millis == 0 {
                out.push_str("<td class=\"num\">-</td>");
            } else {
                let _ = write!(
                    out,
                    "<td class=\"num\" data-phase=\"{}\">{}<span class=\"share\">{}%</span></td>",
                    phase.name(),
                    duration(millis),
                    spent.percent(phase)
                );
            }
        }
        let _ = writeln!(out, "<td class=\"num total\">{}</td></tr>", duration(spent.total()));
    };
    out.push_str("<tr class=\"run\"><th>all tasks</th>");
    row(out, &run);
    let none = spent::Spent::default();
    for task in &report.status.tasks {
        let _ = write!(
            out,
            "<tr data-task=\"{}\"><td><code>{}</code></td>",
            esc(&task.id),
            esc(&task.id)
        );
        row(out, tasks.get(task.id.as_str()).unwrap_or(&none));
    }
    out.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

/// The task table: narrow enough for an 800-pixel window (the counts share a column, so
/// do cost and tokens; each task's reviews and advice are under Task files, where its id
/// links to). Reviewer rounds and gate failures are counted apart; the reason cell lists
/// each send-back's cause under the task's own reason.
fn tasks(out: &mut String, report: &Report<'_>) {
    out.push_str("<section id=\"tasks-section\">\n<h2>Tasks</h2>\n<div class=\"scroll\">\n<table id=\"tasks\" class=\"tasks\">\n<thead><tr><th>task</th><th>title</th><th>state</th><th title=\"worker attempts · reviewer rounds · gate and check failures · Advisor consults\">attempts · rounds · gates · consults</th><th>cost <span class=\"sub\">tokens in / out</span></th><th>commit</th><th>reason</th></tr></thead>\n<tbody>\n");
    let empty = TaskFiles::default();
    for (n, task) in report.status.tasks.iter().enumerate() {
        let files = report.files.get(&task.id).unwrap_or(&empty);
        let sent_back: Vec<&str> = report
            .timeline
            .sent_back
            .iter()
            .filter(|sent| sent.task == task.id)
            .map(|sent| sent.reason.as_str())
            .collect();
        let _ = writeln!(
            out,
            "<tr id=\"task-{n}\" data-task=\"{}\"><td><a href=\"#files-{n}\"><code>{}</code></a></td><td class=\"title\">{}</td><td>{}</td><td class=\"num\" title=\"{} attempts, {} rounds, {} gate failures, {} consults\">{} · {} · {} · {}</td><td class=\"num\">{}</td><td>{}</td><td class=\"reason\">{}</td></tr>",
            esc(&task.id),
            esc(&task.id),
            esc(&task.title),
            badge(task.state.as_str()),
            task.attempts,
            task.rounds,
            task.gate_failures,
            task.advisor_consults,
            task.attempts,
            task.rounds,
            task.gate_failures,
            task.advisor_consults,
            cost_and_tokens(task),
            commit(task, files),
            reasons(task, &sent_back),
        );
    }
    out.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

/// `$0.42` over `182340 / 9115`, or `-`.
fn cost_and_tokens(task: &TaskStatus) -> String {
    if task.usage.is_empty() {
        return "-".into();
    }
    format!(
        "{}<span class=\"sub\">{} / {}</span>",
        esc(&render::task_cost(&task.usage)),
        task.usage.input_tokens,
        task.usage.output_tokens
    )
}

/// The short commit, linked to its diff when there is one.
fn commit(task: &TaskStatus, files: &TaskFiles) -> String {
    let Some(commit) = &task.commit else { return "-".into() };
    let code = format!("<code title=\"{}\">{}</code>", esc(commit), esc(&render::short(commit)));
    match &files.landed {
        Some(diff) => format!("<a class=\"landed-diff\" href=\"{}\">{code}</a>", esc(&diff.href)),
        None => code,
    }
}

/// Send-backs listed in a task's reason cell before "and N more".
const SHOWN_SENT_BACK: usize = 5;

/// The reason cell: why the task is where it is, its approval when breeze normalized it,
/// its widened write set, then each time it was sent back to its worker and why.
fn reasons(task: &TaskStatus, sent_back: &[&str]) -> String {
    let mut out = esc(&note(task));
    if sent_back.is_empty() {
        return out;
    }
    out.push_str("<ul class=\"sent-back\">");
    for reason in sent_back.iter().take(SHOWN_SENT_BACK) {
        let _ = write!(out, "<li>sent back: {}</li>", esc(first_line(reason)));
    }
    if sent_back.len() > SHOWN_SENT_BACK {
        let _ = write!(out, "<li>and {} more</li>", sent_back.len() - SHOWN_SENT_BACK);
    }
    out.push_str("</ul>");
    out
}

/// Why the task is where it is, its approval when breeze normalized it, its widened
/// write set.
fn note(task: &TaskStatus) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(task.reason.clone());
    if let Some(review) = task.review.as_ref().filter(|review| review.contains("normalized")) {
        parts.push(review.clone());
    }
    if !task.granted_writes.is_empty() {
        parts.push(format!("write set widened: {}", task.granted_writes.join(", ")));
    }
    if !task.earlier_branches.is_empty() {
        parts.push(format!("earlier work on branch {}", task.earlier_branches.join(", ")));
    }
    parts.join("; ")
}

/// A state as a coloured badge.
fn badge(state: &str) -> String {
    format!(
        "<span class=\"badge state-{}\" style=\"background:{}\">{}</span>",
        css_word(state),
        state_fill(state),
        esc(state)
    )
}

fn link(link: &Link, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(&link.href), esc(text))
}

/// The rounds (diff, review) and the consults (request, response) of a task.
fn review_links(files: &TaskFiles) -> String {
    let mut out = String::new();
    for round in &files.rounds {
        let links: Vec<String> =
            round.files.iter().map(|file| link(file, &short_label(&file.label))).collect();
        let verdict = round.verdict.as_deref().map(|v| format!(" {}", esc(v))).unwrap_or_default();
        let _ = write!(out, "<div>round {}{verdict}: {}</div>", round.round, links.join(" · "));
    }
    for consult in &files.consults {
        let links: Vec<String> = consult.files.iter().map(|file| link(file, &file.label)).collect();
        let decision =
            consult.decision.as_deref().map(|d| format!(" {}", esc(d))).unwrap_or_default();
        let _ = write!(
            out,
            "<div>advice {} #{}{decision}: {}</div>",
            esc(&consult.reason),
            consult.n,
            links.join(" · ")
        );
    }
    if out.is_empty() { "-".into() } else { out }
}

/// `review-result.json` → `review`, `diff` → `diff`.
fn short_label(label: &str) -> String {
    match label {
        "review-result.json" => "review".into(),
        "review-input.json" => "input".into(),
        other => other.trim_end_matches(".json").to_string(),
    }
}

/// The conflict graph, or why there is none.
fn conflict_graph(out: &mut String, report: &Report<'_>) {
    out.push_str("<section id=\"graph-section\">\n<h2>Conflict graph</h2>\n");
    let (plan, analysis) = match &report.plan {
        Ok(loaded) => (&loaded.0, &loaded.1),
        Err(problem) => {
            let _ = writeln!(
                out,
                "<p class=\"note\">The plan could not be read: {}</p>\n</section>",
                esc(&problem.to_string())
            );
            return;
        }
    };
    out.push_str("<p class=\"note\">A column per dependency level: an arrow means the task on its right needs the one on its left landed first. Dashed red: the two tasks may write the same path, so they never run at the same time (hover for the path). Red double border: no write set, the task runs alone. Fill: the task's state.</p>\n");
    let states: HashMap<&str, &str> =
        report.status.tasks.iter().map(|task| (task.id.as_str(), task.state.as_str())).collect();
    out.push_str("<div class=\"scroll\">\n");
    out.push_str(&graph::render(plan, analysis, &states));
    out.push_str("</div>\n");
    let mut pairs = String::new();
    for conflict in &analysis.conflicts {
        if let breeze_plan::ConflictReason::Overlap { witness } = &conflict.reason {
            let (a, b) = (&plan.tasks[conflict.a].id, &plan.tasks[conflict.b].id);
            let _ = write!(
                pairs,
                "<li><code>{}</code> ⟷ <code>{}</code>: both may write <code>{}</code></li>",
                esc(a.as_str()),
                esc(b.as_str()),
                esc(witness)
            );
        }
    }
    if !pairs.is_empty() {
        let _ =
            writeln!(out, "<h3>Conflicts</h3>\n<ul id=\"conflicts\" class=\"plain\">{pairs}</ul>");
    }
    out.push_str("</section>\n");
}

/// Each task's contract and logs.
fn task_files(out: &mut String, report: &Report<'_>) {
    out.push_str("<section id=\"files-section\">\n<h2>Task files</h2>\n");
    let empty = TaskFiles::default();
    for (n, task) in report.status.tasks.iter().enumerate() {
        let files = report.files.get(&task.id).unwrap_or(&empty);
        let _ = write!(
            out,
            "<h3 id=\"files-{n}\"><code>{}</code> {}</h3>\n<ul class=\"plain\">",
            esc(&task.id),
            esc(first_line(&task.title))
        );
        if let Some(contract) = &files.contract {
            let _ = write!(out, "<li>{}</li>", link(contract, "sprint contract"));
        }
        if let Some(landed) = &files.landed {
            let _ = write!(out, "<li>{}</li>", link(landed, "the diff it landed"));
        }
        if files.rounds.iter().any(|round| !round.files.is_empty()) || !files.consults.is_empty() {
            let _ = write!(out, "<li>{}</li>", review_links(files));
        }
        if !files.logs.is_empty() {
            let logs: Vec<String> = files.logs.iter().map(|log| link(log, &log.label)).collect();
            let _ = write!(out, "<li>logs: <span class=\"mono\">{}</span></li>", logs.join(" · "));
        }
        if files.is_empty() {
            out.push_str("<li class=\"note\">no files</li>");
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

/// Unfinished tasks and the lessons reviews taught the run.
fn attention(out: &mut String, report: &Report<'_>) {
    let unfinished: Vec<&TaskStatus> =
        report.status.tasks.iter().filter(|task| task.state != TaskState::Landed).collect();
    if !unfinished.is_empty() {
        out.push_str(
            "<section id=\"attention-section\">\n<h2>Needs attention</h2>\n<ul class=\"plain\">",
        );
        for task in unfinished {
            let branch = report.snapshot.task(&task.id).and_then(|record| record.branch.clone());
            let branch = branch
                .map(|b| format!(" (work on branch <code>{}</code>)", esc(&b)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<li><code>{}</code> {} — {}: {}{branch}</li>",
                esc(&task.id),
                esc(first_line(&task.title)),
                esc(task.state.as_str()),
                esc(task.reason.as_deref().unwrap_or("-"))
            );
        }
        out.push_str("</ul>\n</section>\n");
    }
    let lessons = &report.snapshot.universal_violations;
    if !lessons.is_empty() {
        out.push_str(
            "<section id=\"lessons-section\">\n<h2>Lessons from review</h2>\n<ul class=\"plain\">",
        );
        for lesson in lessons {
            let _ = write!(out, "<li>{}</li>", esc(lesson));
        }
        out.push_str("</ul>\n</section>\n");
    }
}
