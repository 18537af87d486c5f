//! Human-readable output: progress lines during a run, status tables after.

use breeze_engine::ProgressEvent;
use breeze_protocol::{
    BreezeStatus, BudgetCaps, PrChecks, PrFollowUp, PrReview, TaskState, Usage, Verdict,
};
use unicode_width::UnicodeWidthStr;

/// One line for a progress event.
pub fn progress_line(event: &ProgressEvent) -> String {
    match event {
        ProgressEvent::RunStarted { run_id, workers, tasks, groups, resumed, lands_on } => {
            let verb = if *resumed { "resuming" } else { "run" };
            format!(
                "breeze {verb} {run_id}: {tasks} task{}, {groups} write group{}, {workers} lane{}, landing on {lands_on}",
                plural(*tasks),
                plural(*groups),
                plural(*workers as usize)
            )
        }
        ProgressEvent::Containment { enforced, summary } => {
            format!("{} {summary}", if *enforced { "🔒" } else { "⚠" })
        }
        ProgressEvent::Pairing { line, independent } => {
            format!("{} review: {line}", if *independent { "⇄" } else { "!" })
        }
        ProgressEvent::Budget { summary } => format!("$ {summary}"),
        ProgressEvent::Kept { what, reason } => format!("⚑ kept {what}: {reason}"),
        ProgressEvent::Notice { message } => format!("! {message}"),
        ProgressEvent::RunWaiting { waits } => {
            let waits: Vec<String> = waits.iter().map(|wait| wait.line()).collect();
            format!("⧗ {}", waits.join("; "))
        }
        ProgressEvent::TaskStarted { id, title, lane } => format!("▶ [{id}] {title} (lane {lane})"),
        ProgressEvent::AttemptFailed { id, attempt, reason } => {
            format!("✗ [{id}] attempt {attempt} failed: {}", first_line(reason))
        }
        ProgressEvent::Advised { id, decision, summary } => {
            format!("? [{id}] Advisor: {} — {}", decision.as_str(), first_line(summary))
        }
        ProgressEvent::Reviewed { id, round, verdict, blocking_gaps } => match verdict {
            Verdict::Approve => format!("✓ [{id}] round {round}: APPROVE"),
            Verdict::RequestChanges => format!(
                "↺ [{id}] round {round}: REQUEST_CHANGES ({blocking_gaps} blocking gap{})",
                plural(*blocking_gaps),
            ),
        },
        ProgressEvent::SentBack { id, cause } => sent_back_line(id, &cause.line()),
        ProgressEvent::Scope { id, paths, granted, reason } => {
            let paths = paths.join(", ");
            match (granted, reason) {
                (true, _) => format!("+ [{id}] write set widened: {paths}"),
                (false, reason) => format!(
                    "⊘ [{id}] scope request for {paths}: {}",
                    first_line(reason.as_deref().unwrap_or("not granted"))
                ),
            }
        }
        ProgressEvent::AwaitingApproval { id, reason } => {
            format!("⧗ [{id}] awaiting approval: {}", first_line(reason))
        }
        ProgressEvent::PullRequestOpen { id, reason } => format!("⇡ [{id}] {}", first_line(reason)),
        ProgressEvent::PullRequestFollowed { id, checks, review, failed, action, detail } => {
            pull_request_line(id, (*checks, *review), failed, *action, detail.as_deref())
        }
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

/// The line of a look at a task's pull request on the forge (`pull_request_followed`):
/// what its checks and reviews say and what breeze does, as the progress lines, the live
/// view and `breeze watch` show it.
pub fn pull_request_line(
    id: &str,
    (checks, review): (PrChecks, PrReview),
    failed: &[String],
    action: PrFollowUp,
    detail: Option<&str>,
) -> String {
    let mut line = format!("⇡ [{id}] pull request: checks {}", checks.as_str());
    if !failed.is_empty() {
        line.push_str(&format!(" ({})", failed.join(", ")));
    }
    line.push_str(&format!(", review {}", review.as_str()));
    let detail = detail.map(first_line);
    let what = match (action, detail) {
        (PrFollowUp::Waits, Some(why)) => format!("waits ({why})"),
        (PrFollowUp::Waits, None) => "waits".to_string(),
        (PrFollowUp::Rerun, _) => "failed checks asked to run again".to_string(),
        (PrFollowUp::MainFails, Some(why)) => format!("not charged: {why}"),
        (PrFollowUp::MainFails, None) => "not charged: main's failure".to_string(),
        (PrFollowUp::BackToWorker, _) => "back to the worker".to_string(),
        (PrFollowUp::Escalated, Some(why)) => format!("follow-up rounds used up: {why}"),
        (PrFollowUp::Escalated, None) => "follow-up rounds used up".to_string(),
    };
    format!("{line} — {what}")
}

/// What a task's open pull request's checks and reviews said at the last look, for
/// `breeze status`.
fn forge_note(pr: &breeze_protocol::PullRequestStatus) -> Option<String> {
    if pr.merged || (pr.checks.is_none() && pr.review.is_none()) {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(checks) = pr.checks {
        parts.push(format!("checks {}", checks.as_str()));
    }
    if let Some(review) = pr.review {
        parts.push(format!("review {}", review.as_str()));
    }
    if pr.follow_ups > 0 {
        parts.push(format!("{} follow-up round{}", pr.follow_ups, plural(pr.follow_ups as usize)));
    }
    Some(parts.join(", "))
}

/// The line of a task sent back to its worker (`reason`: its cause as one line), as the
/// progress lines, the live view and `breeze watch` show it.
pub fn sent_back_line(id: &str, reason: &str) -> String {
    format!("↺ [{id}] {} — back to the worker", first_line(reason))
}

/// A cost as people read it: two decimals from a cent up, enough digits below a cent that
/// it is not shown as nothing (`$0.004`), and `unknown` when no backend reported one.
pub fn cost(usd: Option<f64>) -> String {
    match usd {
        None => "unknown".into(),
        Some(usd) => breeze_engine::budget::dollars(usd),
    }
}

/// A sum of costs: one that leaves out calls whose cost is unknown says so (`at least
/// $0.59`), rather than passing for the whole.
pub fn usage_cost(usage: &Usage) -> String {
    match usage.cost_usd {
        Some(usd) if usage.unpriced_calls > 0 => format!("at least {}", cost(Some(usd))),
        total => cost(total),
    }
}

/// The run's cost ([`usage_cost`] of its usage).
pub fn total_cost(status: &BreezeStatus) -> String {
    usage_cost(&status.usage)
}

/// Spend against the caps: `budget: $1.20 of run_usd = 5.00 · task_usd = 2.00 per task ·
/// 5300 of run_tokens = 100000 tokens`, with the calls whose cost is unknown; `None`
/// without caps.
pub fn budget_line(budget: Option<&BudgetCaps>, spent: &Usage) -> Option<String> {
    use breeze_engine::budget::amount;
    let caps = budget.filter(|caps| caps.any())?;
    let mut parts = Vec::new();
    if let Some(cap) = caps.run_usd {
        parts.push(format!("{} of run_usd = {}", usage_cost(spent), amount(cap)));
    }
    if let Some(cap) = caps.task_usd {
        parts.push(format!("task_usd = {} per task", amount(cap)));
    }
    if let Some(cap) = caps.run_tokens {
        parts.push(format!("{} of run_tokens = {cap} tokens", spent.tokens()));
    }
    if spent.unpriced_calls > 0 {
        let n = spent.unpriced_calls;
        parts.push(format!("{n} role call{} of unknown cost", plural(n as usize)));
    }
    Some(format!("budget: {}", parts.join(" · ")))
}

/// The note of a task: why it is not landed (or was sent back to work), the pull request it
/// landed through, that its approval was normalized, that its write set was widened, or
/// where its earlier work is.
fn task_note(task: &breeze_protocol::TaskStatus) -> std::borrow::Cow<'_, str> {
    match (&task.reason, &task.review, &task.pull_request) {
        (Some(reason), _, _) if works_after_a_send_back(task) => {
            format!("sent back: {reason}").into()
        }
        (Some(reason), _, Some(pr)) if forge_note(pr).is_some() => {
            format!("{reason} ({})", forge_note(pr).unwrap_or_default()).into()
        }
        (Some(reason), _, _) => reason.into(),
        (None, _, Some(pr)) if pr.merged => {
            format!("merged: pull request {}", pr.url.as_deref().unwrap_or(&pr.branch)).into()
        }
        (None, Some(review), _) if review.contains("normalized") => review.into(),
        _ if !task.granted_writes.is_empty() => {
            format!("write set widened: {}", task.granted_writes.join(", ")).into()
        }
        _ if !task.earlier_branches.is_empty() => {
            format!("earlier work on branch {}", quoted(&task.earlier_branches)).into()
        }
        _ => "".into(),
    }
}

/// A task that works (or was working when its engine was killed) carries a reason only
/// when it was sent back to its worker; an interrupted one may instead say why it stopped.
fn works_after_a_send_back(task: &breeze_protocol::TaskStatus) -> bool {
    match task.state {
        TaskState::Running => true,
        TaskState::Interrupted => task
            .cause
            .as_ref()
            .is_some_and(|cause| cause.kind != breeze_protocol::CauseKind::Stopped),
        _ => false,
    }
}

/// A task's cost: `≥$1.20` when some of its calls had no price (the cost is at least
/// that), `$1.20`, or `unknown`.
pub(crate) fn task_cost(usage: &Usage) -> String {
    match usage.cost_usd {
        Some(usd) if usage.unpriced_calls > 0 => format!("≥{}", cost(Some(usd))),
        usd => cost(usd),
    }
}

/// Names as `` `a`, `b` ``.
pub(crate) fn quoted(names: &[String]) -> String {
    names.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
}

/// Up to `shown` of `names`, quoted, and how many more there are.
pub(crate) fn quoted_cut(names: &[String], shown: usize) -> String {
    let text = quoted(&names[..names.len().min(shown)]);
    match names.len().saturating_sub(shown) {
        0 => text,
        more => format!("{text} and {more} more"),
    }
}

/// The status table of a run: what run it is, a row per task, the totals and why it
/// stopped.
pub fn status_table(status: &BreezeStatus, stop_reason: Option<&str>) -> String {
    let mut out = run_heading(status);
    out.push('\n');
    out.push_str(&task_rows(status));
    out.push_str(&run_totals(status));
    if let Some(reason) = stop_reason {
        out.push_str(&format!("\nstopped: {reason}\n"));
    }
    out
}

/// The run, its state and lanes; its plan and where it lands; its confinement.
fn run_heading(status: &BreezeStatus) -> String {
    let mut out = format!(
        "run {} — {} ({} lane{})\n",
        status.run_id,
        status.state.as_str(),
        status.workers,
        plural(status.workers as usize)
    );
    match (&status.plan, &status.lands_on) {
        (Some(plan), Some(branch)) => out.push_str(&format!("plan {plan}, landing on {branch}\n")),
        (Some(plan), None) => out.push_str(&format!("plan {plan}\n")),
        (None, Some(branch)) => out.push_str(&format!("landing on {branch}\n")),
        (None, None) => {}
    }
    if let Some(containment) = &status.containment {
        out.push_str(&format!("confinement: {}\n", containment.summary));
    }
    for wait in &status.waiting {
        out.push_str(&format!("{}\n", wait.line()));
    }
    for window in &status.windows {
        out.push_str(&format!("usage window: {}\n", window.line()));
    }
    out
}

/// The task table: a header, then a row per task, its columns aligned.
fn task_rows(status: &BreezeStatus) -> String {
    // Ids and titles are measured in terminal columns: a CJK character takes two.
    let id_width = status.tasks.iter().map(|t| t.id.width()).max().unwrap_or(2).max(4);
    let title_width = status.tasks.iter().map(|t| t.title.width()).max().unwrap_or(5).clamp(5, 40);
    let state_width = status.tasks.iter().map(|t| t.state.as_str().len()).max().unwrap_or(5).max(9);
    // Cost and tokens appear only when a backend reported them (the scripted one does not,
    // unless its [task.sim] says so).
    let with_usage = status.usage.reported();
    let usage_header =
        if with_usage { format!("  {:>8}  {:>9}", "cost", "tokens") } else { String::new() };
    let mut out = format!(
        "{}  {}  {:<state_width$}  {:>8}  {:>6}  {:>5}  {:>7}  {:<8}{usage_header}  {}\n",
        fit("task", id_width),
        fit("title", title_width),
        "state",
        "attempts",
        "rounds",
        "gates",
        "advisor",
        "commit",
        "note"
    );
    for task in &status.tasks {
        let usage = if with_usage && task.usage.is_empty() {
            // Nothing ran for this task (yet): no cost to be unknown.
            format!("  {:>8}  {:>9}", "-", "-")
        } else if with_usage {
            format!("  {:>8}  {:>9}", task_cost(&task.usage), task.usage.tokens())
        } else {
            String::new()
        };
        let row = format!(
            "{}  {}  {:<state_width$}  {:>8}  {:>6}  {:>5}  {:>7}  {:<8}{usage}  {}",
            fit(&task.id, id_width),
            fit(&task.title, title_width),
            task.state.as_str(),
            task.attempts,
            task.rounds,
            task.gate_failures,
            task.advisor_consults,
            short(task.commit.as_deref().unwrap_or("-")),
            first_line(&task_note(task))
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// How many tasks landed, what the run cost, and its budget.
fn run_totals(status: &BreezeStatus) -> String {
    let landed = status.tasks.iter().filter(|t| t.state == TaskState::Landed).count();
    let mut out =
        format!("\n{landed} of {} task{} landed", status.tasks.len(), plural(status.tasks.len()));
    let usage = &status.usage;
    if usage.reported() {
        out.push_str(&format!(
            "; cost {}, {} input / {} output tokens",
            total_cost(status),
            usage.input_tokens,
            usage.output_tokens
        ));
    }
    out.push('\n');
    if let Some(line) = budget_line(status.budget.as_ref(), usage) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `text` cut to at most `columns` terminal columns (ending in `…` when cut, as `breeze
/// plan` does), then padded with spaces to exactly that many.
fn fit(text: &str, columns: usize) -> String {
    let kept = if text.width() <= columns {
        text.to_string()
    } else {
        let room = columns.saturating_sub(1);
        let mut end = 0;
        for (start, c) in text.char_indices() {
            if text[..start + c.len_utf8()].width() > room {
                break;
            }
            end = start + c.len_utf8();
        }
        format!("{}…", &text[..end])
    };
    let pad = columns.saturating_sub(kept.width());
    format!("{kept}{}", " ".repeat(pad))
}

/// The first 7 characters of a commit id.
pub fn short(commit: &str) -> String {
    commit.chars().take(7).collect()
}

/// The first line of `text` (empty for empty text).
pub(crate) fn first_line(text: &str) -> &str {
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
            lands_on: None,
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
                gate_failures: 0,
                advisor_consults: 1,
                commit: None,
                reason: Some("3 failed attempts in a row\nmore".into()),
                cause: None,
                group: None,
                usage,
                review: None,
                granted_writes: Vec::new(),
                pull_request: None,
                branch: None,
                earlier_branches: Vec::new(),
            }],
            usage,
            budget: None,
            containment: None,
            waiting: Vec::new(),
            windows: Vec::new(),
        }
    }

    #[test]
    fn a_waiting_run_says_so_and_what_it_waits_for_since_when() {
        let mut waiting = status(Usage::default());
        waiting.state = RunState::Waiting;
        waiting.tasks[0].state = TaskState::AwaitingApproval;
        waiting.waiting = vec![breeze_protocol::RunWait {
            waiting_for: breeze_protocol::WaitingFor::Approval,
            tasks: vec!["1".into()],
            since: "2026-12-01T12:03:10Z".into(),
        }];
        let table = status_table(&waiting, None);
        assert!(table.starts_with("run r — waiting (2 lanes)\n"), "{table}");
        assert!(table.contains("\nwaiting for approval of 1 since 12:03:10\n"), "{table}");
        let line = progress_line(&ProgressEvent::RunWaiting { waits: waiting.waiting });
        assert_eq!(line, "⧗ waiting for approval of 1 since 12:03:10");
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
            unpriced_calls: 0,
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
    fn status_table_columns_line_up_after_wide_titles() {
        let mut status = status(Usage::default());
        let task = status.tasks[0].clone();
        let long = format!("a{}", "認".repeat(30));
        for (id, title, state) in [
            ("2", "認証を追加する", TaskState::Landed),
            ("認3", long.as_str(), TaskState::Escalated),
        ] {
            status.tasks.push(TaskStatus {
                id: id.into(),
                title: title.into(),
                state,
                ..task.clone()
            });
        }
        let table = status_table(&status, None);
        let rows: Vec<&str> = table.split("\n\n").nth(1).unwrap().lines().collect();
        assert_eq!(rows.len(), 4, "{table}");
        // The display column where the state column starts, in every row.
        let columns: Vec<usize> = rows
            .iter()
            .map(|row| {
                let at = ["state", "escalated", "landed"]
                    .iter()
                    .filter_map(|word| row.find(&format!("  {word} ")))
                    .min()
                    .unwrap_or_else(|| panic!("no state in {row:?}"));
                row[..at].width()
            })
            .collect();
        assert!(columns.iter().all(|&c| c == columns[0]), "{columns:?}\n{table}");
        assert_eq!(columns[0], 4 + 2 + 40, "ids are 4 columns wide, titles at most 40");
        assert!(table.contains(&format!("a{}…  ", "認".repeat(19))), "cut at 40 columns: {table}");
        assert!(!table.contains(&"認".repeat(20)), "{table}");
    }

    #[test]
    fn a_task_sent_back_says_so_also_when_its_engine_was_killed() {
        use breeze_protocol::{Cause, CauseKind};
        let mut status = status(Usage::default());
        let gate = Cause { name: Some("write-set".into()), ..Cause::new(CauseKind::Gate, "x.md") };
        let task = &mut status.tasks[0];
        (task.reason, task.cause) = (Some(gate.line()), Some(gate));
        for state in [TaskState::Running, TaskState::Interrupted] {
            status.tasks[0].state = state;
            let table = status_table(&status, None);
            assert!(table.contains("sent back: the write-set gate failed: x.md"), "{table}");
        }
        let stopped = Cause::new(CauseKind::Stopped, "the run was stopped (Ctrl-C)");
        let task = &mut status.tasks[0];
        (task.reason, task.cause) = (Some(stopped.line()), Some(stopped));
        let table = status_table(&status, None);
        assert!(table.contains("  the run was stopped (Ctrl-C)"), "{table}");
        assert!(!table.contains("sent back"), "{table}");
    }

    #[test]
    fn costs_below_a_cent_are_not_shown_as_nothing_and_unknown_is_unknown() {
        assert_eq!(cost(None), "unknown");
        assert_eq!(cost(Some(0.0)), "$0.00");
        assert_eq!(cost(Some(0.004)), "$0.004");
        assert_eq!(cost(Some(0.0012)), "$0.0012");
        assert_eq!(cost(Some(0.25)), "$0.25");
        assert_eq!(cost(Some(0.00001)), "$0.00001");
        assert_eq!(cost(Some(0.0000001)), "<$0.000001");
    }

    #[test]
    fn the_status_shows_spend_against_the_caps_and_what_it_leaves_out() {
        let spent = Usage {
            cost_usd: Some(1.2),
            input_tokens: 5000,
            output_tokens: 300,
            cached_input_tokens: 0,
            unpriced_calls: 2,
        };
        let mut status = status(spent);
        status.budget =
            Some(BudgetCaps { run_usd: Some(5.0), task_usd: Some(2.0), run_tokens: Some(100_000) });
        let table = status_table(&status, None);
        assert!(
            table.contains("budget: at least $1.20 of run_usd = 5.00 · task_usd = 2.00 per task · 5300 of run_tokens = 100000 tokens · 2 role calls of unknown cost"),
            "{table}"
        );
        assert!(table.contains("≥$1.20") && table.contains("cost at least $1.20"), "{table}");
        assert_eq!(budget_line(None, &spent), None);
        assert_eq!(budget_line(Some(&BudgetCaps::default()), &spent), None);
    }
}
