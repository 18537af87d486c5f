//! Writing to stdout where a closed pipe (`breeze status | head`) is not an error, and
//! where control characters (from roles) are shown escaped, never interpreted.

use std::borrow::Cow;
use std::io::{self, Write};

/// What the functions here write for `text`: its control characters shown escaped.
pub fn shown(text: &str) -> Cow<'_, str> {
    crate::escape::escape_controls(text)
}

/// Writes `text` to stdout. A broken pipe ends the process quietly with status 0,
/// as Unix tools do: the reader has what it wanted.
pub fn print(text: &str) -> io::Result<()> {
    let text = shown(text);
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}

/// Writes `text` and a newline to stdout (see [`print()`]).
pub fn println(text: &str) -> io::Result<()> {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    print(&line)
}

/// Writes `text` to stdout, ignoring a closed pipe (for progress lines during a run,
/// which must not stop the run).
pub fn try_print(text: &str) -> io::Result<()> {
    let text = shown(text);
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())
}

/// [`try_print`] with a newline.
pub fn try_println(text: &str) -> io::Result<()> {
    try_print(&format!("{text}\n"))
}

/// Writes `text` to stderr as it is, ignoring errors: a closed stderr or a terminal that
/// went away must not turn a message into a panic (`eprint!` panics on a failed write).
pub fn eprint(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
