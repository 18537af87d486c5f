//! `breeze status` and `breeze report`.

use breeze_protocol::{ExitCode, RunState, TaskState};

use crate::args::{ReportArgs, StatusArgs};
use crate::error::{CliError, CliResult, ErrorKind};
use crate::{output, render};

/// The status of a run as it really is: a run that says "running" while no engine holds
/// the repository lock was killed (it and its started tasks are interrupted).
pub(crate) fn effective_status(
    snapshot: &breeze_engine::snapshot::RunSnapshot,
) -> breeze_protocol::BreezeStatus {
    snapshot.status_seen(breeze_engine::run::engine_alive(&crate::workdir::here()))
}

pub fn status(args: &StatusArgs) -> CliResult {
    let snapshot = breeze_engine::load_run(&crate::workdir::here(), args.run.as_deref())?;
    let status = effective_status(&snapshot);
    if args.json {
        let text = serde_json::to_string_pretty(&status).unwrap_or_default();
        output::println(&text)?;
    } else {
        let mut reason = snapshot.stop_reason.clone();
        if status.state == RunState::Interrupted && reason.is_none() {
            reason = Some("the engine stopped (killed?); `breeze resume` continues the run".into());
        }
        output::print(&render::status_table(&status, reason.as_deref()))?;
        output::print(&kept_lanes(status.state == RunState::Running))?;
    }
    Ok(ExitCode::Success)
}

/// The lanes kept for the next run, with their disk use as last measured (no walk here:
/// `breeze doctor` measures again).
fn kept_lanes(live: bool) -> String {
    let Ok(repo) = breeze_git::Repo::open(&crate::workdir::here()) else { return String::new() };
    kept_lanes_section(&breeze_engine::lane_record::kept_lanes(&repo), live)
}

/// The kept lanes under their heading; nothing when there are none — or while a run is
/// live: its lanes are its own, not kept for a next run.
fn kept_lanes_section(lanes: &[breeze_engine::lane_record::KeptLane], live: bool) -> String {
    if live || lanes.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\nkept lanes (the next run reuses them; `breeze clean` removes them):\n");
    for lane in lanes {
        out.push_str(&format!("  {}\n", lane.describe()));
    }
    out
}

pub fn report(args: &ReportArgs) -> CliResult {
    let snapshot = breeze_engine::load_run(&crate::workdir::here(), None)?;
    let status = effective_status(&snapshot);
    if args.html {
        let repo = breeze_git::Repo::open(&crate::workdir::here())?;
        let path =
            crate::report_html::write(repo.workdir(), &snapshot, &status, args.out.as_deref())
                .map_err(page_error)?;
        output::println(&path.display().to_string())?;
        return Ok(ExitCode::Success);
    }
    let events = journal_of(&snapshot.run_id);
    output::print(&report_markdown(&snapshot, &status, &events))?;
    Ok(ExitCode::Success)
}

/// The page could not be written: a `--out` that names no path is the command line's
/// fault, anything else the system's.
fn page_error(err: crate::report_html::WriteError) -> CliError {
    let kind = match &err {
        crate::report_html::WriteError::Out { .. } => ErrorKind::Usage,
        _ => ErrorKind::Io,
    };
    CliError::new(kind, err.to_string()).caused_by(err)
}

/// The run's journal as far as it reads (the report shows the rest without it).
fn journal_of(run_id: &str) -> Vec<breeze_protocol::BreezeEvent> {
    let Ok(repo) = breeze_git::Repo::open(&crate::workdir::here()) else { return Vec::new() };
    let events = breeze_engine::run_dir::RunDir::new(repo.workdir(), run_id).events();
    breeze_engine::journal::read_events(&events).unwrap_or_default()
}

/// `breeze report`: the run as Markdown, from its snapshot, its status as shown and its
/// journal (for the send-backs).
pub fn report_markdown(
    snapshot: &breeze_engine::snapshot::RunSnapshot,
    status: &breeze_protocol::BreezeStatus,
    events: &[breeze_protocol::BreezeEvent],
) -> String {
    let mut out = markdown_summary(snapshot, status);
    out.push_str(&markdown_tasks(status));
    out.push_str(&needs_attention(snapshot, status));
    out.push_str(&sent_back(events));
    out.push_str(&network_refused(events));
    out.push_str(&usage_windows(status, events));
    out.push_str(&widened(status));
    if !snapshot.universal_violations.is_empty() {
        out.push_str("\n## Lessons from review\n\n");
        for lesson in &snapshot.universal_violations {
            out.push_str(&format!("- {lesson}\n"));
        }
    }
    out
}

/// The report's title and the run's facts: state, plan, lanes, times, confinement, cost.
fn markdown_summary(
    snapshot: &breeze_engine::snapshot::RunSnapshot,
    status: &breeze_protocol::BreezeStatus,
) -> String {
    let mut out = format!("# breeze run {}\n\n", status.run_id);
    out.push_str(&format!(
        "- state: **{}**\n- plan: `{}`\n- lands on: `{}`\n- lanes: {}\n- started: {}\n- updated: {}\n",
        status.state.as_str(),
        snapshot.plan,
        snapshot.main_branch,
        status.workers,
        snapshot.started_at,
        snapshot.updated_at
    ));
    if let Some(containment) = &status.containment {
        out.push_str(&format!("- confinement: {}\n", containment.summary));
    }
    for wait in &status.waiting {
        out.push_str(&format!("- {}\n", wait.line()));
    }
    if status.usage.reported() {
        out.push_str(&format!(
            "- cost: {} ({} input, {} output tokens)\n",
            render::total_cost(status),
            status.usage.input_tokens,
            status.usage.output_tokens
        ));
    }
    if let Some(line) = render::budget_line(status.budget.as_ref(), &status.usage) {
        out.push_str(&format!("- {line}\n"));
    }
    out
}

/// A table row per task.
fn markdown_tasks(status: &breeze_protocol::BreezeStatus) -> String {
    let mut out = String::from(
        "\n| task | title | state | attempts | rounds | gate failures | advisor | commit |\n|---|---|---|---|---|---|---|---|\n",
    );
    for task in &status.tasks {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            task.id,
            task.title.replace('|', "\\|"),
            task.state.as_str(),
            task.attempts,
            task.rounds,
            task.gate_failures,
            task.advisor_consults,
            task.commit.as_deref().map(render::short).unwrap_or_else(|| "-".into())
        ));
    }
    out
}

/// The tasks that did not land, why, and where their work is.
fn needs_attention(
    snapshot: &breeze_engine::snapshot::RunSnapshot,
    status: &breeze_protocol::BreezeStatus,
) -> String {
    let unfinished: Vec<_> = status.tasks.iter().filter(|t| t.state != TaskState::Landed).collect();
    if unfinished.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Needs attention\n\n");
    for task in unfinished {
        let branch = snapshot.task(&task.id).and_then(|r| r.branch.clone());
        let earlier = if task.earlier_branches.is_empty() {
            String::new()
        } else {
            format!(" (earlier work on branch {})", render::quoted(&task.earlier_branches))
        };
        out.push_str(&format!(
            "- **{}** {} — {}: {}{}{earlier}\n",
            task.id,
            task.title,
            task.state.as_str(),
            task.reason.as_deref().unwrap_or("-"),
            branch.map(|b| format!(" (work on branch `{b}`)")).unwrap_or_default()
        ));
    }
    out
}

/// Each send-back of the journal, with its cause.
fn sent_back(events: &[breeze_protocol::BreezeEvent]) -> String {
    let sent_back: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|event| match &event.event {
            breeze_protocol::EventKind::SentBack { task, reason, .. } => {
                Some((task.as_str(), reason.as_str()))
            }
            _ => None,
        })
        .collect();
    if sent_back.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Sent back to the worker\n\n");
    for (task, reason) in sent_back {
        out.push_str(&format!("- **{task}** {}\n", render::first_line(reason)));
    }
    out
}

/// Each connection the run's network allow-list refused: who asked, for which task.
fn network_refused(events: &[breeze_protocol::BreezeEvent]) -> String {
    let mut out = String::new();
    for event in events {
        if let breeze_protocol::EventKind::NetworkRefused { task, by, host, port, method } =
            &event.event
        {
            if out.is_empty() {
                out.push_str("\n## Network refused\n\nNot on the run's allow-list (`[sandbox] network` in breeze.toml):\n\n");
            }
            out.push_str(&format!("- **{task}** {by}: {method} {host}:{port}\n"));
        }
    }
    out
}

/// The role calls that waited for a usage window or ran on their role's fallback, and the
/// windows as last reported.
fn usage_windows(
    status: &breeze_protocol::BreezeStatus,
    events: &[breeze_protocol::BreezeEvent],
) -> String {
    use breeze_protocol::EventKind;
    let calls: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.event {
            EventKind::QuotaPaused { task, role, backend, window, used, until } => Some(format!(
                "- **{task}** the {role} waited for {backend}'s {window} window ({:.0}% used) until {} {} UTC",
                used * 100.0,
                breeze_protocol::date_of(*until),
                breeze_protocol::clock_of(*until)
            )),
            EventKind::FellBack { task, role, from, to } => {
                Some(format!("- **{task}** the {role} ran on {to}, its fallback: {from} was paused"))
            }
            _ => None,
        })
        .collect();
    if calls.is_empty() && status.windows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Usage windows\n\n");
    for line in calls {
        out.push_str(&format!("{line}\n"));
    }
    for window in &status.windows {
        out.push_str(&format!("- {}\n", window.line()));
    }
    out
}

/// The tasks whose write sets the Lead widened, with the paths granted.
fn widened(status: &breeze_protocol::BreezeStatus) -> String {
    let widened: Vec<_> = status.tasks.iter().filter(|t| !t.granted_writes.is_empty()).collect();
    if widened.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Write sets widened during the run\n\n");
    for task in widened {
        let paths = render::quoted(&task.granted_writes);
        out.push_str(&format!("- **{}** {}: {paths}\n", task.id, task.title));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_engine::lane_record::KeptLane;

    fn parked(name: &str) -> KeptLane {
        let record = serde_json::from_str(
            r#"{"format":1,"state":"parked","run_id":"r1","head":"0123456789abcdef","parked_at":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let path = format!("/data/breeze/lanes/{name}").into();
        KeptLane { name: name.into(), path, record: Some(record), disk: None }
    }

    #[test]
    fn kept_lanes_have_a_heading_only_when_there_are_some_and_no_run_is_live() {
        assert_eq!(kept_lanes_section(&[], false), "", "no heading without lanes");
        let lanes = [parked("lane-1")];
        assert_eq!(kept_lanes_section(&lanes, true), "", "a live run's lanes are its own");
        let shown = kept_lanes_section(&lanes, false);
        assert!(shown.starts_with("\nkept lanes ("), "{shown}");
        assert!(
            shown.contains("  lane-1 (/data/breeze/lanes/lane-1): parked at 0123456789ab since"),
            "{shown}"
        );
    }
}
