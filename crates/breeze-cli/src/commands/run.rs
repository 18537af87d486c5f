//! `breeze run` and `breeze resume`.

use std::sync::Arc;

use breeze_engine::{EngineError, RunOptions, RunOutcome};
use breeze_protocol::ExitCode;
use tokio_util::sync::CancellationToken;

use crate::args::RunArgs;
use crate::error::{CliError, CliResult};
use crate::{output, render};

/// Which entry point.
pub enum Mode {
    /// A new run.
    Start,
    /// Continue the latest interrupted run.
    Resume,
}

pub fn run(args: &RunArgs) -> CliResult {
    let mut options = RunOptions::new(crate::here());
    options.plan = args.plan.clone();
    options.max_workers = args.max_workers;
    drive(options, Mode::Start)
}

pub fn resume() -> CliResult {
    drive(RunOptions::new(crate::here()), Mode::Resume)
}

/// Runs the engine on a runtime with Ctrl-C / SIGTERM wired to the cancel token, printing
/// progress lines as they come.
pub fn drive(mut options: RunOptions, mode: Mode) -> CliResult {
    options.progress = Arc::new(|event| {
        // A closed pipe must not stop the run: progress lines are best effort.
        let _ = output::try_println(&render::progress_line(event));
    });
    let runtime = runtime()?;
    let outcome = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let signals = tokio::spawn(forward_signals(cancel.clone()));
        let result = match mode {
            Mode::Start => breeze_engine::run(options, cancel).await,
            Mode::Resume => breeze_engine::resume(options, cancel).await,
        };
        signals.abort();
        result
    });
    let outcome = outcome.map_err(engine_error)?;
    finish(&outcome)
}

fn finish(outcome: &RunOutcome) -> CliResult {
    let _ = output::try_println("");
    let _ =
        output::try_print(&render::status_table(&outcome.status, outcome.stop_reason.as_deref()));
    let _ = output::try_println(&format!("run files: {}", outcome.run_dir.display()));
    let code = outcome.exit_code();
    if code == ExitCode::Interrupted {
        let _ = output::try_println("continue with `breeze resume`");
    }
    Ok(code)
}

/// A multi-threaded runtime for the engine.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::usage(format!("cannot start the async runtime: {err}")))
}

/// First SIGINT/SIGTERM/SIGHUP: stop gracefully (roles get SIGTERM, then SIGKILL after
/// the grace period); the run ends resumable.
async fn forward_signals(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    loop {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        if cancel.is_cancelled() {
            eprintln!(
                "breeze: still stopping role processes (they get SIGKILL after the grace period)"
            );
        } else {
            eprintln!("breeze: stopping (role processes get SIGTERM)");
            cancel.cancel();
        }
    }
}

/// Converts an engine error into a CLI error with its hints.
pub fn engine_error(err: EngineError) -> CliError {
    let mut cli = CliError::with_exit(err.exit_code(), err.to_string());
    cli.hints = err.hints();
    cli
}
