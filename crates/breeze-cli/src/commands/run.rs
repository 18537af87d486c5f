//! `breeze run` and `breeze resume`.

use std::sync::Arc;

use breeze_engine::{ProgressEvent, RunOptions, RunOutcome};
use breeze_protocol::ExitCode;
use tokio_util::sync::CancellationToken;

use crate::args::{ResumeArgs, RunArgs};
use crate::error::{CliError, CliResult};
use crate::live::{self, LiveRun};
use crate::{output, render};

/// Which entry point.
pub enum Mode {
    /// A new run.
    Start,
    /// Continue the latest interrupted run.
    Resume,
}

/// What a run shows while it goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Progress lines (not a terminal).
    Lines,
    /// The live view, redrawn in place (a terminal).
    Live,
    /// The journal's events as NDJSON on stdout, and nothing else there.
    Json,
}

impl Show {
    /// `--json`, else the live view on a terminal, else lines.
    pub fn pick(json: bool) -> Show {
        if json {
            Show::Json
        } else if live::available() {
            Show::Live
        } else {
            Show::Lines
        }
    }
}

pub fn run(args: &RunArgs) -> CliResult {
    let mut options = RunOptions::new(crate::workdir::here());
    options.plan = args.plan.clone();
    options.max_workers = args.max_workers;
    options.skip_setup_check = args.skip_setup_check;
    options.wait = args.wait.waits();
    drive_showing(options, Mode::Start, Show::pick(args.json))
}

pub fn resume(args: &ResumeArgs) -> CliResult {
    if args.at_reset {
        wait_for_reset()?;
    }
    let mut options = RunOptions::new(crate::workdir::here());
    options.budget_raise =
        breeze_engine::budget::BudgetRaise { usd: args.budget_usd, tokens: args.budget_tokens };
    options.wait = args.wait.waits();
    drive_showing(options, Mode::Resume, Show::pick(args.json))
}

/// Runs the engine on a runtime with Ctrl-C / SIGTERM wired to the cancel token, printing
/// progress lines as they come.
pub fn drive(options: RunOptions, mode: Mode) -> CliResult {
    drive_showing(options, mode, Show::Lines)
}

/// [`drive`], showing the run as `show` says.
pub fn drive_showing(mut options: RunOptions, mode: Mode, show: Show) -> CliResult {
    let mut view = None;
    match show {
        Show::Lines => {
            options.progress = Arc::new(|event| {
                // A closed pipe must not stop the run: progress lines are best effort.
                let _ = output::try_println(&render::progress_line(event));
            });
        }
        Show::Live => {
            let live = LiveRun::start(options.repo_dir.clone());
            options.progress = live.progress_sink();
            options.events = Some(live.event_sink());
            view = Some(live);
        }
        Show::Json => {
            options.progress = Arc::new(|event| {
                // Only what the user should act on, and on stderr: stdout holds events.
                let warns = matches!(
                    event,
                    ProgressEvent::Notice { .. }
                        | ProgressEvent::Kept { .. }
                        | ProgressEvent::Pairing { independent: false, .. }
                );
                if warns {
                    output::eprint(&format!("{}\n", output::shown(&render::progress_line(event))));
                }
            });
            options.events = Some(json_events());
        }
    }
    // The live view's terminal closing (SIGHUP) does not stop the run: `breeze watch`
    // shows it from another terminal. Elsewhere a hangup stops it like Ctrl-C.
    let outcome = engine(options, mode, show != Show::Live);
    if let Some(view) = view {
        view.finish();
    }
    let outcome = outcome?;
    if show == Show::Json {
        output::eprint(&output::shown(&summary(&outcome)));
        return Ok(outcome.exit_code());
    }
    finish(&outcome)
}

/// Prints each journal event as one line of JSON on stdout; once the reader is gone
/// (a closed pipe), the run goes on without printing.
fn json_events() -> breeze_engine::EventSink {
    let closed = std::sync::atomic::AtomicBool::new(false);
    Arc::new(move |event| {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        if closed.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut line) = serde_json::to_string(event) else { return };
        line.push('\n');
        let mut out = std::io::stdout().lock();
        if out.write_all(line.as_bytes()).and_then(|()| out.flush()).is_err() {
            closed.store(true, Ordering::Relaxed);
        }
    })
}

/// Runs the engine to its end with the stop signals wired; `hangup_stops`: whether SIGHUP
/// is one of them.
fn engine(options: RunOptions, mode: Mode, hangup_stops: bool) -> Result<RunOutcome, CliError> {
    let runtime = runtime()?;
    let outcome = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let stop = StopSignals::register(hangup_stops)?;
        let signals = tokio::spawn(stop.forward(cancel.clone(), options.supervisor.clone()));
        let result = match mode {
            Mode::Start => breeze_engine::run(options, cancel).await,
            Mode::Resume => breeze_engine::resume(options, cancel).await,
        };
        signals.abort();
        result.map_err(CliError::from)
    })?;
    Ok(outcome)
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
    if outcome.state == breeze_protocol::RunState::Waiting {
        out.push_str(
            "once they are decided, continue with `breeze resume` (`--wait` waits for them)\n",
        );
    } else if outcome.exit_code() == ExitCode::Interrupted {
        out.push_str("continue with `breeze resume`\n");
    }
    out
}

/// A multi-threaded runtime for the engine.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::io("cannot start the async runtime", err))
}

/// The signals that stop a run. Registered before the run starts: a run that could not be
/// stopped cleanly must not start.
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
    /// Whether SIGHUP stops the run; if not, it only means the live view's terminal is gone.
    hangup_stops: bool,
}

impl StopSignals {
    fn register(hangup_stops: bool) -> Result<StopSignals, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let register = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|err| {
                CliError::io(
                    format!("cannot handle {name}, so Ctrl-C could not stop the run cleanly"),
                    err,
                )
            })
        };
        Ok(StopSignals {
            interrupt: register(SignalKind::interrupt(), "SIGINT")?,
            terminate: register(SignalKind::terminate(), "SIGTERM")?,
            hangup: register(SignalKind::hangup(), "SIGHUP")?,
            hangup_stops,
        })
    }

    async fn next(&mut self) {
        loop {
            tokio::select! {
                _ = self.interrupt.recv() => return,
                _ = self.terminate.recv() => return,
                _ = self.hangup.recv() => {
                    if self.hangup_stops {
                        return;
                    }
                    live::terminal::gone();
                }
            }
        }
    }

    /// First SIGINT/SIGTERM (SIGHUP unless the live view is drawn): stop gracefully (role processes get SIGTERM, then
    /// SIGKILL after the grace period); the run ends resumable. Second: stop hard (SIGKILL
    /// at once); the run still ends resumable.
    async fn forward(
        mut self,
        cancel: CancellationToken,
        supervisor: breeze_supervise::Supervisor,
    ) {
        self.next().await;
        live::terminal::say(
            "breeze: stopping (role processes get SIGTERM; press Ctrl-C again to stop at once)",
        );
        cancel.cancel();
        self.next().await;
        live::terminal::say("breeze: stopping now (role processes get SIGKILL)");
        supervisor.stop_hard();
        loop {
            self.next().await;
            live::terminal::say("breeze: already stopping; the run's state is being saved");
        }
    }
}

/// `breeze resume --at-reset`: sleeps until the reset the stopped run waits for, saying
/// which and until when (at once when none is known or it has passed).
fn wait_for_reset() -> Result<(), CliError> {
    let Some(pause) = breeze_engine::run::reset_ahead(&crate::workdir::here())? else {
        output::eprint("breeze: no reset ahead is known for this run; resuming now\n");
        return Ok(());
    };
    let until = format!(
        "{} {} UTC",
        breeze_protocol::date_of(pause.until),
        breeze_protocol::clock_of(pause.until)
    );
    output::eprint(&format!(
        "breeze: waiting until {until} ({} reset), then resuming\n",
        if pause.window == breeze_engine::quota::STATED_RESET {
            format!("{}'s stated", pause.backend)
        } else {
            format!("{}'s {} window", pause.backend, pause.window)
        }
    ));
    // A second past the reset: the backend's clock and ours need not agree.
    std::thread::sleep(
        pause.left(std::time::SystemTime::now()) + std::time::Duration::from_secs(1),
    );
    Ok(())
}
