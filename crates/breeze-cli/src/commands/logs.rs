//! `breeze logs TASK`: the role logs of a task.

use breeze_protocol::ExitCode;

use crate::args::LogsArgs;
use crate::commands::run::engine_error;
use crate::error::CliResult;
use crate::output;

pub fn run(args: &LogsArgs) -> CliResult {
    let files =
        breeze_engine::maintenance::task_logs(&crate::here(), args.run.as_deref(), &args.task)
            .map_err(engine_error)?;
    if files.is_empty() {
        output::println(&format!("task {} has no logs yet", args.task))?;
        return Ok(ExitCode::Success);
    }
    for file in files {
        let text = std::fs::read(&file)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        if text.is_empty() {
            continue;
        }
        output::println(&format!("==> {} <==", file.display()))?;
        output::print(&text)?;
        if !text.ends_with('\n') {
            output::println("")?;
        }
    }
    Ok(ExitCode::Success)
}
