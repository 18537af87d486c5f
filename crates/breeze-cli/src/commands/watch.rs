//! `breeze watch`: the live view of the run in progress, from another terminal. It reads
//! the run's files only (the snapshot once, then the journal as it grows), so it works
//! after the terminal that started the run is gone, and leaving it (`q`, Ctrl-C) stops
//! nothing. On a terminal, a task waiting for approval can be approved or rejected from
//! the view (`watch_approvals.rs`), as `breeze approve`/`reject` would.

use std::io::{IsTerminal, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use breeze_engine::run_dir::RunDir;
use breeze_protocol::ExitCode;

use super::watch_approvals::{ApprovalKeys, KeyAction};
use crate::error::{CliError, CliResult, ErrorKind};
use crate::live::files::JournalTail;
use crate::live::model::{LiveModel, Replay};
use crate::live::terminal::{Keys, TerminalGuard};
use crate::live::{self, TICK};
use crate::output;

/// How often the journal is read for new lines.
const POLL: Duration = Duration::from_millis(200);
/// How often the view checks that the engine still holds the repository.
const ALIVE_CHECK: Duration = Duration::from_secs(2);

/// How watching ended.
enum Ending {
    /// The run ended.
    Finished,
    /// The engine is gone without ending the run (killed).
    EngineGone,
    /// The user left.
    Left,
}

pub fn run() -> CliResult {
    let here = crate::workdir::here();
    let snapshot = breeze_engine::load_run(&here, None)
        .map_err(|err| CliError::from(err).after("no run to watch"))?;
    let repo = breeze_git::Repo::open(&here).map_err(|err| {
        CliError::new(ErrorKind::Repository, format!("not in a git repository: {err}"))
            .caused_by(err)
    })?;
    let run_dir = RunDir::new(repo.workdir(), &snapshot.run_id);
    let mut journal =
        JournalTail::open(&run_dir.events()).map_err(|err| read_error(&run_dir, err))?;
    let mut model = LiveModel::default();
    model.seed(&snapshot.status(), Replay::WholeJournal);
    journal.follow(|event| model.apply(event)).map_err(|err| read_error(&run_dir, err))?;
    let live = breeze_engine::run::engine_alive(&here);
    let in_progress = model.finished.is_none() && live;
    if !in_progress {
        return ended(&mut model, live);
    }
    let ending = if live::available() {
        watch_terminal(&here, &run_dir, &mut journal, &mut model)?
    } else {
        watch_lines(&here, &run_dir, &mut journal, &mut model)?
    };
    match ending {
        Ending::Finished => {
            let state = model.finished.map(|s| s.as_str()).unwrap_or("finished");
            output::println(&format!("run {} ended: {state}", model.run_id))?;
        }
        Ending::EngineGone => output::println(&format!(
            "run {} stopped without ending (the engine is gone); `breeze resume` continues it",
            model.run_id
        ))?,
        Ending::Left => output::println(&format!(
            "left the view; run {} goes on (`breeze watch` shows it again)",
            model.run_id
        ))?,
    }
    Ok(ExitCode::Success)
}

/// Applies what the journal got since the last look; how many events there were.
fn catch_up(
    journal: &mut JournalTail,
    model: &mut LiveModel,
    run_dir: &RunDir,
) -> Result<usize, CliError> {
    journal.follow(|event| model.apply(event)).map_err(|err| read_error(run_dir, err))
}

/// No run in progress: the latest run's final state, and why there is nothing to watch.
fn ended(model: &mut LiveModel, live: bool) -> CliResult {
    if model.finished.is_none() {
        model.engine_gone();
    }
    let (_, columns) =
        if std::io::stdout().is_terminal() { live::terminal::size() } else { (24, 100) };
    model.refresh_output(live::files::last_output_line);
    for line in live::frame::render(model, std::time::SystemTime::now(), columns, None) {
        output::println(&line)?;
    }
    let id = &model.run_id;
    match (model.finished, live) {
        (Some(state), _) => {
            let mut message =
                format!("no run in progress: the latest run, {id}, ended {}", state.as_str());
            if state.is_resumable() {
                message.push_str("; `breeze resume` continues it");
            }
            output::println(&message)?;
            Ok(ExitCode::Success)
        }
        (None, _) => Err(CliError::usage(format!(
            "no run in progress: the latest run, {id}, stopped without ending (its engine is gone)"
        ))
        .hint("`breeze resume` continues it; `breeze status` shows it")),
    }
}

/// Follows the run on a terminal until it ends, its engine goes or the user leaves.
fn watch_terminal(
    here: &std::path::Path,
    run_dir: &RunDir,
    journal: &mut JournalTail,
    model: &mut LiveModel,
) -> Result<Ending, CliError> {
    let stopped = stop_signals();
    let guard = TerminalGuard::enter(Keys::Read);
    let keys = read_keys();
    let screen = guard.screen().clone();
    let mut drawn: Option<Instant> = None;
    let mut checked = Instant::now();
    let mut approvals = ApprovalKeys::default();
    let ending = loop {
        let fresh = catch_up(journal, model, run_dir)? > 0;
        if model.finished.is_some() {
            break Ending::Finished;
        }
        if checked.elapsed() >= ALIVE_CHECK {
            checked = Instant::now();
            if !breeze_engine::run::engine_alive(here) {
                catch_up(journal, model, run_dir)?;
                break if model.finished.is_some() { Ending::Finished } else { Ending::EngineGone };
            }
        }
        approvals.follow(model);
        if fresh || drawn.is_none_or(|at| at.elapsed() >= TICK) {
            live::draw(&screen, model, Some(&approvals.footer(model)));
            drawn = Some(Instant::now());
        }
        match keys.as_ref().map(|keys| keys.recv_timeout(POLL)) {
            // q, Q, Ctrl-C, Ctrl-D, Esc.
            Some(Ok(b'q' | b'Q' | 3 | 4 | 27)) => break Ending::Left,
            _ if stopped.load(std::sync::atomic::Ordering::Relaxed) => break Ending::Left,
            Some(Ok(key)) => {
                if let KeyAction::Decide { task, approve } = approvals.key(key, model) {
                    approvals.decide(here, &task, approve);
                }
                drawn = None;
            }
            Some(Err(mpsc::RecvTimeoutError::Timeout)) => {}
            Some(Err(mpsc::RecvTimeoutError::Disconnected)) | None => std::thread::sleep(POLL),
        }
    };
    if matches!(ending, Ending::EngineGone) {
        model.engine_gone();
    }
    live::draw(&screen, model, None);
    drop(guard);
    Ok(ending)
}

/// Set when SIGTERM or SIGHUP arrives, so the view leaves like `q` and gives the terminal
/// back (killed at once, it would leave the terminal without echo). Registered before it
/// returns; `false` forever when signals cannot be handled.
fn stop_signals() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::signal::unix::{SignalKind, signal};
    let stopped = std::sync::Arc::new(AtomicBool::new(false));
    let flag = stopped.clone();
    let (registered, ready) = mpsc::channel();
    let spawned =
        std::thread::Builder::new().name("breeze-watch-signals".into()).spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build()
            else {
                let _ = registered.send(());
                return;
            };
            runtime.block_on(async {
                let terminate = signal(SignalKind::terminate());
                let hangup = signal(SignalKind::hangup());
                let _ = registered.send(());
                let (Ok(mut terminate), Ok(mut hangup)) = (terminate, hangup) else { return };
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {}
                }
                flag.store(true, Ordering::Relaxed);
            });
        });
    if spawned.is_ok() {
        let _ = ready.recv();
    }
    stopped
}

/// The keys typed on the terminal, one byte at a time (none when stdin is not one).
fn read_keys() -> Option<mpsc::Receiver<u8>> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let (sender, keys) = mpsc::channel();
    std::thread::Builder::new()
        .name("breeze-watch-keys".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while let Ok(1) = std::io::stdin().read(&mut byte) {
                if sender.send(byte[0]).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(keys)
}

/// Not a terminal: the milestones as lines, until the run ends or its engine goes.
fn watch_lines(
    here: &std::path::Path,
    run_dir: &RunDir,
    journal: &mut JournalTail,
    model: &mut LiveModel,
) -> Result<Ending, CliError> {
    output::println(&format!(
        "watching run {}: {} of {} tasks landed so far, {} on lanes",
        model.run_id,
        model.count(breeze_protocol::TaskState::Landed),
        model.tasks.len(),
        model.lanes.iter().flatten().count()
    ))?;
    let mut printed = model.milestones_seen;
    let mut checked = Instant::now();
    loop {
        // Looked at before reading: what a gone engine wrote last is read after.
        let gone = checked.elapsed() >= ALIVE_CHECK && {
            checked = Instant::now();
            !breeze_engine::run::engine_alive(here)
        };
        let mut lines = Ok(());
        journal
            .follow(|event| {
                model.apply(event);
                if model.milestones_seen > printed
                    && let Some(milestone) = model.milestones.back()
                {
                    printed = model.milestones_seen;
                    if lines.is_ok() {
                        lines = output::println(&format!("{} {}", milestone.time, milestone.text));
                    }
                }
            })
            .map_err(|err| read_error(run_dir, err))?;
        lines?;
        if model.finished.is_some() {
            return Ok(Ending::Finished);
        }
        if gone {
            return Ok(Ending::EngineGone);
        }
        std::thread::sleep(POLL);
    }
}

/// The run's journal could not be read.
fn read_error(run_dir: &RunDir, err: std::io::Error) -> CliError {
    CliError::io(format!("cannot read {}", run_dir.events().display()), err)
}
