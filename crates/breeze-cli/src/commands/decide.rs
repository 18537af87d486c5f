//! `breeze approve`, `breeze reject`, `breeze retry`: a person's say in a run.

use breeze_engine::decision::{self, HumanDecision};
use breeze_protocol::ExitCode;

use crate::args::{ApproveArgs, RejectArgs, RetryArgs};
use crate::commands::run::engine_error;
use crate::error::CliResult;
use crate::output;

pub fn approve(args: &ApproveArgs) -> CliResult {
    let report = decision::decide(&crate::here(), &args.tasks, &HumanDecision::Approve)
        .map_err(engine_error)?;
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
    let report = decision::decide(&crate::here(), std::slice::from_ref(&args.task), &decision)
        .map_err(engine_error)?;
    let next = if report.live {
        "the live run sends it back to its worker now"
    } else {
        "run `breeze resume` to send it back to its worker"
    };
    output::println(&format!("rejected {}: {next}", args.task))?;
    Ok(ExitCode::Success)
}

pub fn retry(args: &RetryArgs) -> CliResult {
    let report =
        decision::retry(&crate::here(), &args.task, args.note.as_deref()).map_err(engine_error)?;
    let work = match &report.branch {
        Some(branch) => format!(" on branch `{branch}` with its work so far"),
        None => String::new(),
    };
    output::println(&format!("task {} gets a fresh start{work}", args.task))?;
    if !report.unblocked.is_empty() {
        output::println(&format!("tasks waiting on it again: {}", report.unblocked.join(", ")))?;
    }
    output::println("run `breeze resume` to continue the run")?;
    Ok(ExitCode::Success)
}
