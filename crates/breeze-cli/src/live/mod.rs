//! The live view of a run: one row per lane (task, phase, elapsed time, attempt and round,
//! the last line its agent wrote), the queue, the totals and the latest milestones, redrawn
//! in place on a terminal.
//!
//! | piece | module |
//! |---|---|
//! | the state shown, fed `breeze-event.v1` events (pure, tested without a terminal) | [`model`] |
//! | the state drawn as lines of text | [`frame`] |
//! | the journal followed as it grows; a log's last line | [`files`] |
//! | the region on the terminal, its input mode, log lines above it | [`terminal`] |
//!
//! `breeze run` feeds the model from the engine (its journal events, as they reach the
//! disk); `breeze watch` feeds it from the journal file, so it works from any terminal.

pub mod files;
pub mod frame;
pub mod model;
pub mod terminal;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use breeze_engine::{EventSink, ProgressEvent, ProgressSink};
use breeze_protocol::BreezeEvent;

use self::model::{LiveModel, Replay};
use self::terminal::{Keys, Screen, TerminalGuard};

/// How often the view is drawn again with nothing new (elapsed times, last lines).
pub const TICK: Duration = Duration::from_millis(1000);
/// The least time between two frames.
const MIN_FRAME: Duration = Duration::from_millis(100);

/// Whether stdout is a terminal the view can be drawn on.
pub fn available() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("TERM").is_none_or(|term| term != "dumb")
}

/// What the view's thread hears.
enum Input {
    Event(Box<BreezeEvent>),
    Progress(Box<ProgressEvent>),
    Finish,
}

/// The live view of `breeze run` / `breeze resume`, drawn by a thread of its own from the
/// events the engine hands over. Dropping it (or [`LiveRun::finish`]) draws the last frame
/// and gives the terminal back.
pub struct LiveRun {
    sender: mpsc::Sender<Input>,
    thread: Option<std::thread::JoinHandle<()>>,
    guard: Option<TerminalGuard>,
}

impl LiveRun {
    /// Takes the terminal and starts drawing; `repo_dir` is where the run's files are found.
    pub fn start(repo_dir: PathBuf) -> LiveRun {
        let guard = TerminalGuard::enter(Keys::Ignore);
        let screen = guard.screen().clone();
        let (sender, inbox) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("breeze-live-view".into())
            .spawn(move || draw_run(&inbox, &screen, &repo_dir))
            .ok();
        LiveRun { sender, thread, guard: Some(guard) }
    }

    /// The sink for the engine's progress events.
    pub fn progress_sink(&self) -> ProgressSink {
        let sender = self.sender.clone();
        std::sync::Arc::new(move |event: &ProgressEvent| {
            let _ = sender.send(Input::Progress(Box::new(event.clone())));
        })
    }

    /// The sink for the engine's journal events.
    pub fn event_sink(&self) -> EventSink {
        let sender = self.sender.clone();
        std::sync::Arc::new(move |event: &BreezeEvent| {
            let _ = sender.send(Input::Event(Box::new(event.clone())));
        })
    }

    /// Draws the last frame and gives the terminal back.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.sender.send(Input::Finish);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.guard.take();
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The view thread of `breeze run`: applies what comes, draws at most every
/// [`MIN_FRAME`] and at least every [`TICK`].
fn draw_run(inbox: &mpsc::Receiver<Input>, screen: &Screen, repo_dir: &std::path::Path) {
    let mut model = LiveModel::default();
    let mut drawn: Option<Instant> = None;
    let mut dirty = true;
    loop {
        match inbox.recv_timeout(MIN_FRAME) {
            Ok(Input::Event(event)) => {
                model.apply(&event);
                dirty = true;
            }
            Ok(Input::Progress(event)) => {
                if let ProgressEvent::RunStarted { run_id, .. } = &*event {
                    model.run_id = run_id.clone();
                    if let Ok(snapshot) = breeze_engine::load_run(repo_dir, Some(run_id)) {
                        model.seed(&snapshot.status(), Replay::FromNow);
                    }
                }
                if matches!(
                    &*event,
                    ProgressEvent::RunStarted { .. }
                        | ProgressEvent::Containment { .. }
                        | ProgressEvent::Notice { .. }
                        | ProgressEvent::Kept { .. }
                        | ProgressEvent::Pairing { .. }
                        | ProgressEvent::Budget { .. }
                ) {
                    screen
                        .print_above(&crate::output::shown(&crate::render::progress_line(&event)));
                }
                dirty = true;
            }
            Ok(Input::Finish) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let due =
            drawn.is_none_or(|at| at.elapsed() >= TICK || (dirty && at.elapsed() >= MIN_FRAME));
        if due && !model.run_id.is_empty() {
            draw(screen, &mut model, None);
            drawn = Some(Instant::now());
            dirty = false;
        }
    }
    if !model.run_id.is_empty() {
        draw(screen, &mut model, None);
    }
}

/// Reads the lanes' last lines and draws the model.
pub fn draw(screen: &Screen, model: &mut LiveModel, footer: Option<&str>) {
    model.refresh_output(files::last_output_line);
    screen.draw(&frame::render(model, SystemTime::now(), screen.frame_width(), footer));
}
