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
        let stop = StopSignals::register()?;
        let signals = tokio::spawn(stop.forward(cancel.clone(), options.supervisor.clone()));
        let result = match mode {
            Mode::Start => breeze_engine::run(options, cancel).await,
            Mode::Resume => breeze_engine::resume(options, cancel).await,
        };
        signals.abort();
        result.map_err(engine_error)
    })?;
    finish(&outcome)
}

fn finish(outcome: &RunOutcome) -> CliResult {
    let _ = output::try_print(&summary(outcome));
    Ok(outcome.exit_code())
}

/// What a run prints after its last progress line: the status table, where the run files
/// are and, when it was interrupted, how to continue.
pub fn summary(outcome: &RunOutcome) -> String {
    let mut out = String::from("\n");
    out.push_str(&render::status_table(&outcome.status, outcome.stop_reason.as_deref()));
    out.push_str(&format!("run files: {}\n", outcome.run_dir.display()));
    if outcome.exit_code() == ExitCode::Interrupted {
        out.push_str("continue with `breeze resume`\n");
    }
    out
}

/// A multi-threaded runtime for the engine.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::usage(format!("cannot start the async runtime: {err}")))
}

/// The signals that stop a run. Registered before the run starts: a run that could not be
/// stopped cleanly must not start.
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn register() -> Result<StopSignals, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let register = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|err| {
                CliError::usage(format!(
                    "cannot handle {name}, so Ctrl-C could not stop the run cleanly: {err}"
                ))
            })
        };
        Ok(StopSignals {
            interrupt: register(SignalKind::interrupt(), "SIGINT")?,
            terminate: register(SignalKind::terminate(), "SIGTERM")?,
            hangup: register(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }

    /// First SIGINT/SIGTERM/SIGHUP: stop gracefully (role processes get SIGTERM, then
    /// SIGKILL after the grace period); the run ends resumable. Second: stop hard (SIGKILL
    /// at once); the run still ends resumable.
    async fn forward(
        mut self,
        cancel: CancellationToken,
        supervisor: breeze_supervise::Supervisor,
    ) {
        self.next().await;
        eprintln!(
            "breeze: stopping (role processes get SIGTERM; press Ctrl-C again to stop at once)"
        );
        cancel.cancel();
        self.next().await;
        eprintln!("breeze: stopping now (role processes get SIGKILL)");
        supervisor.stop_hard();
        loop {
            self.next().await;
            eprintln!("breeze: already stopping; the run's state is being saved");
        }
    }
}

/// Converts an engine error into a CLI error with its hints.
pub fn engine_error(err: EngineError) -> CliError {
    let mut cli = CliError::with_exit(err.exit_code(), err.to_string());
    cli.hints = err.hints();
    cli
}
