//! `breeze approve`, `breeze reject`, `breeze retry`: a person's say in a run.

use breeze_engine::decision::{self, HumanDecision};
use breeze_protocol::ExitCode;

use crate::args::{ApproveArgs, RejectArgs, RetryArgs};
use crate::error::CliResult;
use crate::output;

pub fn approve(args: &ApproveArgs) -> CliResult {
    let report = decision::decide(&crate::workdir::here(), &args.tasks, &HumanDecision::Approve)?;
    let next = if report.live {
        "the live run lands them now"
    } else {
        "run `breeze resume` to land them"
    };
    output::println(&format!("approved {}: {next}", args.tasks.join(", ")))?;
    Ok(ExitCode::Success)
}

pub fn reject(args: &RejectArgs) -> CliResult {
    let decision = HumanDecision::Reject { note: args.note.clone() };
    let report =
        decision::decide(&crate::workdir::here(), std::slice::from_ref(&args.task), &decision)?;
    let next = if report.live {
        "the live run sends it back to its worker now"
    } else {
        "run `breeze resume` to send it back to its worker"
    };
    output::println(&format!("rejected {}: {next}", args.task))?;
    Ok(ExitCode::Success)
}

pub fn retry(args: &RetryArgs) -> CliResult {
    let options = decision::RetryOptions { note: args.note.clone(), fresh: args.fresh };
    let report = decision::retry(&crate::workdir::here(), &args.tasks, &options)?;
    for task in &report.tasks {
        let line = match (&task.earlier, &task.set_aside, &task.branch) {
            (Some(earlier), set_aside, _) => {
                let mut line = format!(
                    "task {} starts over from main's tip on a new branch, at attempt 1, round 1 (it had made {}; the journal keeps them)",
                    task.id,
                    earlier.said()
                );
                if let Some(branch) = set_aside {
                    line.push_str(&format!("; its earlier work stays on branch `{branch}`"));
                }
                line
            }
            (None, _, Some(branch)) => format!(
                "task {} gets a fresh start on branch `{branch}` with its work so far",
                task.id
            ),
            (None, _, None) => format!("task {} gets a fresh start", task.id),
        };
        output::println(&line)?;
    }
    if !report.unblocked.is_empty() {
        output::println(&format!("tasks waiting on it again: {}", report.unblocked.join(", ")))?;
    }
    output::println("run `breeze resume` to continue the run")?;
    Ok(ExitCode::Success)
}
