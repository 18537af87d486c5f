//! The live view on a terminal: a region at the bottom redrawn in place with a few ANSI
//! codes (cursor up, erase below), lines printed above it without garbling it (log output,
//! notices), and the terminal's input mode set for the view and restored on every exit:
//! drop, error and panic.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustix::termios::{self, LocalModes, OptionalActions, Termios};

use super::frame::cut;

/// The terminal's mode before the view changed it, for the panic hook.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);
/// The region drawn now, if any: log lines and notices go above it.
static ACTIVE: Mutex<Option<Screen>> = Mutex::new(None);
/// The terminal hung up (its window closed): nothing is drawn or restored any more.
static GONE: AtomicBool = AtomicBool::new(false);

/// The terminal went away (SIGHUP): the view stops drawing; the run it showed goes on.
pub fn gone() {
    GONE.store(true, Ordering::Relaxed);
}

/// The region of the terminal the view owns. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Screen {
    inner: Arc<Mutex<Region>>,
}

#[derive(Debug, Default)]
struct Region {
    /// Lines drawn last time (the cursor is on the line after them).
    height: usize,
    /// The frame drawn last time, for redrawing it after lines printed above.
    frame: Vec<String>,
    /// Where it is drawn.
    target: Target,
}

/// Where a region is drawn.
#[derive(Debug, Default)]
enum Target {
    /// The terminal on stdout.
    #[default]
    Stdout,
    /// A buffer standing for a terminal of a given size (tests).
    Buffer { written: Vec<u8>, rows: usize, columns: usize },
}

impl Region {
    fn size(&self) -> (usize, usize) {
        match &self.target {
            Target::Stdout => size(),
            Target::Buffer { rows, columns, .. } => (*rows, *columns),
        }
    }

    fn write(&mut self, text: &str) {
        match &mut self.target {
            Target::Stdout => write_out(text),
            Target::Buffer { written, .. } => written.extend_from_slice(text.as_bytes()),
        }
    }

    /// Cursor up to the region's first row and erase from there down: as many rows as its
    /// lines take now — a terminal made narrower since they were drawn wraps them onto more
    /// rows than there are lines.
    fn erase(&self, columns: usize) -> String {
        let rows_taken: usize = self
            .frame
            .iter()
            .map(|line| {
                unicode_width::UnicodeWidthStr::width(line.as_str()).max(1).div_ceil(columns.max(1))
            })
            .sum();
        erase(self.height.max(rows_taken))
    }
}

impl Screen {
    /// A region drawn into a buffer standing for a terminal of `rows` × `columns` (for
    /// tests: [`Screen::take_written`] hands back what a terminal would have been sent).
    pub fn in_buffer(rows: usize, columns: usize) -> Screen {
        let region = Region {
            target: Target::Buffer { written: Vec::new(), rows, columns },
            ..Region::default()
        };
        Screen { inner: Arc::new(Mutex::new(region)) }
    }

    /// What was written to a buffer region since the last call (empty for the terminal).
    pub fn take_written(&self) -> Vec<u8> {
        match &mut self.lock().target {
            Target::Buffer { written, .. } => std::mem::take(written),
            Target::Stdout => Vec::new(),
        }
    }

    /// Makes a buffer region's terminal `columns` wide (a pane split, a window resized).
    pub fn resize(&self, new_columns: usize) {
        if let Target::Buffer { columns, .. } = &mut self.lock().target {
            *columns = new_columns;
        }
    }

    /// The columns a frame may use: one less than the terminal's, so that no line reaches
    /// the last column (where a terminal wraps it).
    pub fn frame_width(&self) -> usize {
        self.lock().size().1.saturating_sub(1).max(1)
    }

    /// Draws `frame` in place of the previous one, cut to the terminal's size.
    pub fn draw(&self, frame: &[String]) {
        let mut region = self.lock();
        let (rows, columns) = region.size();
        let frame: Vec<String> = frame
            .iter()
            .take(rows.saturating_sub(1).max(1))
            .map(|line| cut(line, columns.saturating_sub(1).max(1)))
            .collect();
        let mut out = region.erase(columns);
        for line in &frame {
            out.push_str(line);
            out.push('\n');
        }
        region.height = frame.len();
        region.frame = frame;
        region.write(&out);
    }

    /// Prints `text` above the region (which is drawn again below it).
    pub fn print_above(&self, text: &str) {
        let mut region = self.lock();
        let (_, columns) = region.size();
        let mut out = region.erase(columns);
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        for line in &region.frame {
            out.push_str(line);
            out.push('\n');
        }
        region.write(&out);
    }

    /// Forgets the region: what was drawn stays on the terminal as it is.
    pub fn release(&self) {
        let mut region = self.lock();
        region.height = 0;
        region.frame.clear();
    }

    /// Whether what goes to stderr shows on the region's terminal (so it must be printed
    /// above the region rather than written across it).
    fn shows_stderr(&self) -> bool {
        match self.lock().target {
            Target::Stdout => std::io::stderr().is_terminal(),
            Target::Buffer { .. } => true,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Region> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Cursor up over `height` lines and erase from there down.
fn erase(height: usize) -> String {
    if height == 0 { "\r\x1b[J".into() } else { format!("\r\x1b[{height}A\x1b[J") }
}

fn write_out(text: &str) {
    if GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    // A terminal that went away (closed window) must not stop the run.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Rows and columns of the terminal on stdout (24×80 when it does not say).
pub fn size() -> (usize, usize) {
    match termios::tcgetwinsize(std::io::stdout()) {
        Ok(size) if size.ws_row > 0 && size.ws_col > 0 => {
            (size.ws_row as usize, size.ws_col as usize)
        }
        _ => (24, 80),
    }
}

/// The view's hold on the terminal: while it lives, typed keys are not echoed (and, for
/// `breeze watch`, reach the view one at a time, Ctrl-C among them), and lines for stderr
/// are printed above the region. Dropping it restores the terminal.
#[derive(Debug)]
pub struct TerminalGuard {
    screen: Screen,
    active: Option<ActiveRegion>,
}

/// While it lives, `screen` is the region log lines and notices are printed above;
/// dropping it forgets the region (what was drawn stays as it is).
#[derive(Debug)]
pub struct ActiveRegion {
    screen: Screen,
}

impl ActiveRegion {
    /// Makes `screen` the region drawn now.
    pub fn new(screen: Screen) -> ActiveRegion {
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(screen.clone());
        ActiveRegion { screen }
    }
}

impl Drop for ActiveRegion {
    fn drop(&mut self) {
        ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.screen.release();
    }
}

/// What the view does with the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Keys are not echoed; Ctrl-C still sends SIGINT (`breeze run`: it stops the run).
    Ignore,
    /// Keys are read one by one, Ctrl-C among them (`breeze watch`: it leaves the view).
    Read,
}

impl TerminalGuard {
    /// Takes the terminal on stdout for the view.
    pub fn enter(keys: Keys) -> TerminalGuard {
        let stdin = std::io::stdin();
        if stdin.is_terminal()
            && let Ok(saved) = termios::tcgetattr(&stdin)
        {
            let mut mode = saved.clone();
            mode.local_modes.remove(LocalModes::ECHO | LocalModes::ICANON);
            if keys == Keys::Read {
                mode.local_modes.remove(LocalModes::ISIG);
            }
            install_panic_hook();
            *SAVED.lock().unwrap_or_else(|p| p.into_inner()) = Some(saved);
            let _ = termios::tcsetattr(&stdin, OptionalActions::Now, &mode);
        }
        let screen = Screen::default();
        let active = ActiveRegion::new(screen.clone());
        TerminalGuard { screen, active: Some(active) }
    }

    /// The region.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        self.active.take();
        restore();
    }
}

/// Puts the terminal back as it was (keys typed meanwhile are dropped, not left for the
/// shell).
fn restore() {
    if let Some(saved) = SAVED.lock().unwrap_or_else(|p| p.into_inner()).take() {
        let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Flush, &saved);
    }
}

fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Tells the user something on stderr: above the live view when one is drawn on the same
/// terminal, else as a plain line.
pub fn say(text: &str) {
    let active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match active {
        Some(screen) if screen.shows_stderr() => screen.print_above(text),
        _ => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", text.trim_end_matches('\n'));
        }
    }
}

/// A `tracing` writer: stderr, or above the live view while one is drawn on the terminal.
#[derive(Debug, Default)]
pub struct LogWriter {
    buffer: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        if !self.buffer.is_empty() {
            say(&String::from_utf8_lossy(&self.buffer));
        }
    }
}

/// Makes a [`LogWriter`] per log event.
pub fn log_writer() -> LogWriter {
    LogWriter::default()
}

#[cfg(test)]
mod tests;
