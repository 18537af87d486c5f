//! `breeze abort` and `breeze clean`.

use breeze_engine::maintenance::{self, CleanItem};
use breeze_protocol::ExitCode;

use crate::args::CleanArgs;
use crate::commands::run::runtime;
use crate::error::CliResult;
use crate::output;

pub fn abort() -> CliResult {
    let report = runtime()?.block_on(maintenance::abort(&crate::workdir::here()))?;
    if let Some(damaged) = &report.damaged {
        output::println(&format!(
            "run {}: its state could not be read ({damaged}); the run is given up — `breeze clean --force` removes its worktrees and branches",
            report.run_id
        ))?;
        return Ok(ExitCode::Success);
    }
    if let Some(state) = report.already {
        output::println(&format!(
            "run {} already finished ({}); there is nothing to abort",
            report.run_id,
            state.as_str()
        ))?;
        return Ok(ExitCode::Success);
    }
    if let Some(pid) = &report.stopped_engine {
        output::println(&format!("stopped the running engine (pid {pid})"))?;
    }
    for notice in &report.notices {
        output::println(notice)?;
    }
    output::println(&format!(
        "run {} is aborted; what its lanes held is committed on the task branches (`breeze status` says where each task's work is); `breeze clean` removes its worktrees and keeps branches with work",
        report.run_id
    ))?;
    Ok(ExitCode::Success)
}

pub fn clean(args: &CleanArgs) -> CliResult {
    let items = maintenance::clean(&crate::workdir::here(), args.dry_run, args.force)?;
    let verb = if args.dry_run { "would remove" } else { "removed" };
    if items.is_empty() {
        output::println("nothing to clean")?;
    }
    for item in items {
        match item {
            CleanItem::Removed(what) => output::println(&format!("{verb} {what}"))?,
            CleanItem::Kept(what, why) => output::println(&format!("kept {what}: {why}"))?,
        }
    }
    Ok(ExitCode::Success)
}
