//! `breeze doctor`: what confinement this machine gives role processes, and the CLIs found.

use breeze_protocol::ExitCode;

use crate::error::CliResult;
use crate::output;

pub fn run() -> CliResult {
    let report = breeze_engine::doctor::examine(&crate::here());
    output::print(&report.render())?;
    Ok(ExitCode::Success)
}
