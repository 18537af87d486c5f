//! The output of a command that is not a recognized test runner: the lines that name a
//! failure, normalized, and the line a person should read first.

use std::collections::BTreeSet;

use crate::normalize::normalize;
use crate::text::{is_frame, is_noise, names_a_failure};

/// Lines kept from the end of an output that names no failure.
const LAST_LINES: usize = 3;

/// What stands for an output with nothing in it.
pub(crate) const NO_OUTPUT: &str = "(no output)";

/// The failure lines of `lines`, normalized: every line that names a failure (and the line
/// after one that ends with `:`, which carries its message: `thread 'main' panicked at
/// src/main.rs:6:5:` then `no config in /tmp/x`), leaving out build noise, backtrace frames
/// and a traceback's source lines. An output that names no failure is told by its last
/// lines; an empty one by [`NO_OUTPUT`].
pub(crate) fn failure_lines(lines: &[&str]) -> BTreeSet<String> {
    let readable = readable(lines);
    let mut found = BTreeSet::new();
    let mut message_follows = false;
    for line in &readable {
        let failure = names_a_failure(line);
        if failure || message_follows {
            found.insert(normalize(line));
        }
        message_follows = failure && line.trim_end().ends_with(':');
    }
    if found.is_empty() {
        let start = readable.len().saturating_sub(LAST_LINES);
        found.extend(readable[start..].iter().map(|line| normalize(line)));
    }
    if found.is_empty() {
        found.insert(NO_OUTPUT.to_string());
    }
    found
}

/// The line of `lines` that says what failed: the first marked as an error (`error[E0425]:
/// …`, `ValueError: …`, `FATAL …`, `npm ERR! …`, `thread 'main' panicked at …`), else the
/// first that names a failure, else the last line; never build noise, a frame or a
/// traceback's source line.
pub(crate) fn headline(lines: &[&str]) -> Option<String> {
    let readable = readable(lines);
    readable
        .iter()
        .find(|line| is_marked(line))
        .or_else(|| readable.iter().find(|line| names_a_failure(line)))
        .or_else(|| readable.last())
        .map(|line| line.trim().to_string())
}

/// The non-empty lines of `lines` a person reads for the failure: no build or download
/// noise, no backtrace frame, no source line a traceback quotes after its frame.
fn readable<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut kept = Vec::new();
    let mut after_python_frame = false;
    for line in lines {
        let quoted_source = after_python_frame;
        after_python_frame = line.trim_start().starts_with("File \"");
        if line.trim().is_empty() || quoted_source || is_noise(line) || is_frame(line) {
            continue;
        }
        kept.push(*line);
    }
    kept
}

/// Openings of a line that marks it as the error itself.
const MARKS: [&str; 10] = [
    "error",
    "Error",
    "ERROR",
    "fatal:",
    "FATAL",
    "FAIL",
    "panic:",
    "npm ERR!",
    "npm error",
    "Uncaught",
];

/// Whether `line` is marked as the error itself (see [`headline`]).
fn is_marked(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with("Traceback") || !names_a_failure(trimmed) {
        return false;
    }
    let first_word = trimmed.split_whitespace().next().unwrap_or("");
    let exception = first_word.ends_with(':')
        && ["Error:", "Exception:", "Failure:"].iter().any(|end| first_word.ends_with(end));
    let panicked = trimmed.starts_with("thread '") && trimmed.contains(" panicked at ");
    let log_level =
        [" ERROR ", " FATAL ", " CRITICAL "].iter().any(|level| trimmed.contains(level));
    exception || panicked || log_level || MARKS.iter().any(|mark| trimmed.starts_with(mark))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_traceback_is_headed_by_its_exception_not_its_source_line() {
        let output = "Traceback (most recent call last):\n  File \"check.py\", line 3, in <module>\n    if sig_error is not None:\nValueError: bad signature\n";
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(headline(&lines).as_deref(), Some("ValueError: bad signature"));
        assert_eq!(failure_lines(&lines), BTreeSet::from(["ValueError: bad signature".into()]));
    }

    #[test]
    fn an_output_that_names_no_failure_is_told_by_its_last_lines() {
        let lines = ["   Compiling x v0.1.0", "a", "b", "c", "d"];
        assert_eq!(failure_lines(&lines), BTreeSet::from(["b", "c", "d"].map(String::from)));
        assert_eq!(failure_lines(&[]), BTreeSet::from([NO_OUTPUT.to_string()]));
        assert_eq!(headline(&lines).as_deref(), Some("d"));
    }
}
