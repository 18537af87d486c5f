//! Human-readable output: progress lines during a run, status tables after.

use breeze_engine::ProgressEvent;
use breeze_protocol::{BreezeStatus, TaskState, Verdict};

/// One line for a progress event.
pub fn progress_line(event: &ProgressEvent) -> String {
    match event {
        ProgressEvent::RunStarted { run_id, workers, tasks, groups, resumed } => {
            let verb = if *resumed { "resuming" } else { "run" };
            format!(
                "breeze {verb} {run_id}: {tasks} task{}, {groups} write group{}, {workers} lane{}",
                plural(*tasks),
                plural(*groups),
                plural(*workers as usize)
            )
        }
        ProgressEvent::Containment { enforced, summary } => {
            format!("{} {summary}", if *enforced { "🔒" } else { "⚠" })
        }
        ProgressEvent::Kept { what, reason } => format!("⚑ kept {what}: {reason}"),
        ProgressEvent::Notice { message } => format!("! {message}"),
        ProgressEvent::TaskStarted { id, title, lane } => format!("▶ [{id}] {title} (lane {lane})"),
        ProgressEvent::AttemptFailed { id, attempt, reason } => {
            format!("✗ [{id}] attempt {attempt} failed: {}", first_line(reason))
        }
        ProgressEvent::Advised { id, decision, summary } => {
            format!("? [{id}] Advisor: {} — {}", decision.as_str(), first_line(summary))
        }
        ProgressEvent::Reviewed { id, round, verdict, blocking_gaps, by_gates } => match verdict {
            Verdict::Approve => format!("✓ [{id}] round {round}: APPROVE"),
            Verdict::RequestChanges => format!(
                "↺ [{id}] round {round}: REQUEST_CHANGES ({blocking_gaps} blocking gap{}{})",
                plural(*blocking_gaps),
                if *by_gates { ", from the gates" } else { "" }
            ),
        },
        ProgressEvent::Deferred { id, reason } => {
            format!("⏸ [{id}] landing deferred: {}", first_line(reason))
        }
        ProgressEvent::TaskFinished { id, state, commit, reason } => match state {
            TaskState::Landed => {
                format!("● [{id}] landed {}", short(commit.as_deref().unwrap_or("")))
            }
            other => format!(
                "■ [{id}] {}: {}",
                other.as_str(),
                first_line(reason.as_deref().unwrap_or(""))
            ),
        },
    }
}

/// A cost as people read it: two decimals from a cent up, enough digits below a cent that
/// it is not shown as nothing (`$0.004`), and `unknown` when no backend reported one.
pub fn cost(usd: Option<f64>) -> String {
    match usd {
        None => "unknown".into(),
        Some(usd) if usd == 0.0 || usd >= 0.01 => format!("${usd:.2}"),
        Some(usd) => {
            let text = format!("{usd:.4}");
            let text = text.trim_end_matches('0');
            if text == "0." { "<$0.0001".into() } else { format!("${text}") }
        }
    }
}

/// The note of a task: why it is not landed, or that its approval was normalized.
fn task_note(task: &breeze_protocol::TaskStatus) -> &str {
    match (&task.reason, &task.review) {
        (Some(reason), _) => reason,
        (None, Some(review)) if review.contains("normalized") => review,
        _ => "",
    }
}

/// The status table of a run.
pub fn status_table(status: &BreezeStatus, stop_reason: Option<&str>) -> String {
    let mut out = format!(
        "run {} — {} ({} lane{})\n",
        status.run_id,
        status.state.as_str(),
        status.workers,
        plural(status.workers as usize)
    );
    if let Some(plan) = &status.plan {
        out.push_str(&format!("plan {plan}\n"));
    }
    if let Some(containment) = &status.containment {
        out.push_str(&format!("confinement: {}\n", containment.summary));
    }
    out.push('\n');
    let id_width = status.tasks.iter().map(|t| t.id.chars().count()).max().unwrap_or(2).max(4);
    let title_width =
        status.tasks.iter().map(|t| t.title.chars().count()).max().unwrap_or(5).clamp(5, 40);
    // Cost and tokens appear only when a backend reported them (the scripted one does not).
    let with_usage = !status.usage.is_empty();
    let usage_header =
        if with_usage { format!("  {:>8}  {:>9}", "cost", "tokens") } else { String::new() };
    out.push_str(&format!(
        "{:<id_width$}  {:<title_width$}  {:<9}  {:>8}  {:>6}  {:>7}  {:<8}{usage_header}  {}\n",
        "task", "title", "state", "attempts", "rounds", "advisor", "commit", "note"
    ));
    for task in &status.tasks {
        let title: String = task.title.chars().take(title_width).collect();
        let usage = if with_usage {
            let tokens = task.usage.input_tokens + task.usage.output_tokens;
            format!("  {:>8}  {:>9}", cost(task.usage.cost_usd), tokens)
        } else {
            String::new()
        };
        let row = format!(
            "{:<id_width$}  {:<title_width$}  {:<9}  {:>8}  {:>6}  {:>7}  {:<8}{usage}  {}",
            task.id,
            title,
            task.state.as_str(),
            task.attempts,
            task.rounds,
            task.advisor_consults,
            short(task.commit.as_deref().unwrap_or("-")),
            first_line(task_note(task))
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    let landed = status.tasks.iter().filter(|t| t.state == TaskState::Landed).count();
    out.push_str(&format!(
        "\n{landed} of {} task{} landed",
        status.tasks.len(),
        plural(status.tasks.len())
    ));
    let usage = &status.usage;
    if !usage.is_empty() {
        out.push_str(&format!(
            "; cost {}, {} input / {} output tokens",
            cost(usage.cost_usd),
            usage.input_tokens,
            usage.output_tokens
        ));
    }
    out.push('\n');
    if let Some(reason) = stop_reason {
        out.push_str(&format!("\nstopped: {reason}\n"));
    }
    out
}

/// The first 7 characters of a commit id.
pub fn short(commit: &str) -> String {
    commit.chars().take(7).collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::{BreezeStatusV1, RunState, TaskStatus, Usage};

    fn status(usage: Usage) -> BreezeStatus {
        BreezeStatus {
            schema_version: BreezeStatusV1,
            run_id: "r".into(),
            state: RunState::Failed,
            workers: 2,
            plan: None,
            started_at: None,
            updated_at: None,
            tasks: vec![TaskStatus {
                id: "1".into(),
                title: "Add the parser".into(),
                state: TaskState::Escalated,
                attempts: 3,
                rounds: 2,
                advisor_consults: 1,
                commit: None,
                reason: Some("3 failed attempts in a row\nmore".into()),
                group: None,
                usage,
                review: None,
            }],
            usage,
            containment: None,
        }
    }

    #[test]
    fn status_table_shows_reasons_and_cost_only_when_reported() {
        let plain = status_table(&status(Usage::default()), Some("interrupted"));
        assert!(
            plain.contains("escalated") && plain.contains("3 failed attempts in a row"),
            "{plain}"
        );
        assert!(!plain.contains("more"), "only the first line of a reason: {plain}");
        assert!(!plain.contains("cost"), "{plain}");
        assert!(
            plain.contains("0 of 1 task landed") && plain.contains("stopped: interrupted"),
            "{plain}"
        );
        let usage = Usage {
            cost_usd: Some(1.5),
            input_tokens: 100,
            output_tokens: 20,
            cached_input_tokens: 0,
        };
        let costly = status_table(&status(usage), None);
        assert!(costly.contains("$1.50") && costly.contains("120"), "{costly}");
        assert!(costly.contains("cost $1.50, 100 input / 20 output tokens"), "{costly}");
        assert!(
            costly.lines().all(|line| line == line.trim_end()),
            "no trailing blanks: {costly:?}"
        );
    }

    #[test]
    fn costs_below_a_cent_are_not_shown_as_nothing_and_unknown_is_unknown() {
        assert_eq!(cost(None), "unknown");
        assert_eq!(cost(Some(0.0)), "$0.00");
        assert_eq!(cost(Some(0.004)), "$0.004");
        assert_eq!(cost(Some(0.0012)), "$0.0012");
        assert_eq!(cost(Some(0.25)), "$0.25");
        assert_eq!(cost(Some(0.00001)), "<$0.0001");
    }
}
