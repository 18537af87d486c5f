//! `breeze doctor`: what confinement this machine gives role processes, the CLIs found,
//! what claude and codex roles get as their CLI homes, and the preflight `breeze run`
//! makes — as lines, or as `breeze-doctor.v1` JSON for CI (without the homes).
//! Exits 2 when the preflight finds a problem.

use std::sync::Arc;

use breeze_engine::ProgressEvent;
use breeze_engine::preflight::{self, PreflightOptions, Stage};
use breeze_protocol::ExitCode;
use tokio_util::sync::CancellationToken;

use crate::args::DoctorArgs;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &DoctorArgs) -> CliResult {
    let here = crate::workdir::here();
    let report = breeze_engine::doctor::examine(&here);
    let mut options = PreflightOptions::new(&here, Stage::Doctor);
    options.setup_check = !args.no_setup;
    // What takes time is told on stderr, so that --json keeps stdout to the report.
    options.progress = Arc::new(|event: &ProgressEvent| {
        if matches!(event, ProgressEvent::Notice { .. }) {
            output::eprint(&format!("{}\n", output::shown(&crate::render::progress_line(event))));
        }
    });
    let runtime = crate::commands::run::runtime()?;
    let found = runtime.block_on(preflight::check(&options, &CancellationToken::new()));
    if args.json {
        let wire = breeze_engine::doctor::wire_report(&report, &found);
        let text = serde_json::to_string_pretty(&wire)
            .map_err(|err| CliError::internal("cannot print the report", err))?;
        output::println(&text)?;
    } else {
        output::print(&report.render())?;
        let own: Vec<(String, String)> = std::env::vars().collect();
        output::print(&breeze_engine::doctor::RoleHomes::of(&own).render())?;
        output::print(&breeze_engine::doctor::render_preflight(&found))?;
    }
    Ok(if found.is_ok() { ExitCode::Success } else { ExitCode::Usage })
}
