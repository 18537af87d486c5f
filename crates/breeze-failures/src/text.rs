//! Output as lines a person would read: terminal colours and cursor codes removed, a progress
//! line reduced to what it last showed; and the tests of what a line is — build and download
//! noise, a backtrace frame, a line that names a failure.

/// `output` without terminal escape sequences (colours, cursor moves, titles, character-set
/// switches) and other control characters but newlines and tabs; a line overwritten by
/// carriage returns keeps what it showed last.
pub(crate) fn clean(output: &str) -> String {
    let mut out = String::with_capacity(output.len());
    let mut chars = output.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => {
                // A progress line drawn over itself: keep what follows the last return.
                let start = out.rfind('\n').map_or(0, |at| at + 1);
                out.truncate(start);
            }
            '\n' | '\t' => out.push(ch),
            ch if ch.is_control() => {}
            ch => out.push(ch),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        // Operating-system commands (titles, links) and device strings end with BEL or ST.
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(ch) = chars.next() {
                if ch == '\u{7}' || (ch == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        // Character-set designations (`ESC ( B`) take one more character.
        Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for ch in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&ch) {
            break;
        }
    }
}

/// Status words cargo prints right-aligned in twelve columns before what it is doing.
const CARGO_STATUS: [&str; 24] = [
    "Adding",
    "Blocking",
    "Building",
    "Checking",
    "Compiling",
    "Dirty",
    "Doc-tests",
    "Documenting",
    "Downgrading",
    "Downloaded",
    "Downloading",
    "Fetching",
    "Finished",
    "Fresh",
    "Installed",
    "Installing",
    "Locking",
    "Packaging",
    "Removed",
    "Removing",
    "Replacing",
    "Running",
    "Unpacking",
    "Updating",
];

/// Line openings of package managers and build tools that say what they fetched, built or
/// installed (npm, pip, go, yarn, pnpm).
const NOISE_OPENINGS: [&str; 34] = [
    "added ",
    "removed ",
    "changed ",
    "audited ",
    "up to date",
    "found 0 vulnerabilities",
    "packages are looking for funding",
    "run `npm fund`",
    "npm warn",
    "npm WARN",
    "npm notice",
    "npm info",
    "npm http",
    "Collecting ",
    "Downloading ",
    "Installing ",
    "Using cached ",
    "Requirement already satisfied",
    "Successfully installed",
    "Successfully built",
    "Building wheel",
    "Created wheel",
    "Stored in directory",
    "Preparing metadata",
    "Obtaining ",
    "Looking in indexes",
    "Found existing installation",
    "Attempting uninstall",
    "Uninstalling ",
    "Successfully uninstalled",
    "go: downloading ",
    "go: finding ",
    "Progress: resolved",
    "Lockfile is up to date",
];

/// Whether `line` only says what a build or a package manager fetched, compiled or
/// installed: `   Compiling serde v1.0.1`, `  Downloaded thiserror-impl v1.0.65`, `added 12
/// packages in 3s`, `Collecting pytest`, `go: downloading golang.org/x/mod v0.1.0`,
/// `warning: build failed, waiting for other jobs to finish...`. Such lines differ between a
/// cold lane and a warm one and never say what failed.
pub(crate) fn is_noise(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return false;
    }
    if is_cargo_status(line) || trimmed.starts_with("warning: build failed, waiting for") {
        return true;
    }
    // The line npm prints before running a script: `> demo@1.0.0 test` and the command.
    if trimmed.starts_with("> ") && line.starts_with('>') {
        return true;
    }
    NOISE_OPENINGS.iter().any(|opening| trimmed.starts_with(opening))
        || (trimmed.starts_with("Done in ") && trimmed.ends_with('s'))
}

/// `line` is a cargo status line: a status word ending in column twelve.
fn is_cargo_status(line: &str) -> bool {
    let word_start = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[word_start..];
    let word = rest.split(' ').next().unwrap_or("");
    word_start + word.len() == 12 && rest.len() > word.len() && CARGO_STATUS.contains(&word)
}

/// Whether `line` is a frame of a stack trace or backtrace: `   3: core::panicking::panic`,
/// `at ./src/lib.rs:40:9`, `    at Object.<anonymous> (sum.test.js:4:48)`, `  File "x.py",
/// line 9, in check`, `\t/usr/local/go/src/testing/testing.go:1632 +0x230`, `goroutine 7
/// [running]:`.
pub(crate) fn is_frame(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with("File \"") {
        return true;
    }
    // `at ./src/lib.rs:40:9`, `at Foo (x.js:4:48)`, `at com.x.Y.run(Native Method)`; not
    // `at least one error occurred`.
    if let Some(place) = trimmed.strip_prefix("at ") {
        let numbered =
            place.split(':').skip(1).any(|part| part.starts_with(|c: char| c.is_ascii_digit()));
        return numbered || place.ends_with(')');
    }
    if trimmed.starts_with("goroutine ") && trimmed.ends_with("]:") {
        return true;
    }
    if trimmed.contains(".go:") && trimmed.contains(" +0x") {
        return true;
    }
    // Rust's `   3: core::panicking::panic`, indented.
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    line.starts_with([' ', '\t']) && digits > 0 && trimmed[digits..].starts_with(": ")
}

/// Words that name a failure wherever they stand (compared in lower case).
const FAILURE_WORDS: [&str; 16] = [
    "error",
    "errors",
    "fail",
    "failed",
    "fails",
    "failure",
    "failures",
    "failing",
    "fatal",
    "panic",
    "panicked",
    "exception",
    "abort",
    "aborted",
    "crashed",
    "segfault",
];

/// The words of `line` with where each starts: runs of letters, digits and underscores.
fn words(line: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut start = None;
    for (at, ch) in line.char_indices() {
        let inside = ch.is_alphanumeric() || ch == '_';
        match (inside, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                found.push((from, &line[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(from) = start {
        found.push((from, &line[from..]));
    }
    found
}

/// Whether `word` names a failure: `error`, `FAILED`, `panicked`, or an exception's name
/// (`AssertionError`, `NullPointerException`) — but not `thiserror` nor `errorlevel`.
pub(crate) fn is_failure_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    if FAILURE_WORDS.contains(&lower.as_str()) || word == "ERR" {
        return true;
    }
    let camel = word.starts_with(|c: char| c.is_uppercase());
    camel
        && ["Error", "Exception", "Failure"]
            .iter()
            .any(|suffix| word.len() > suffix.len() && word.ends_with(suffix))
}

/// Whether `line` names a failure (see [`is_failure_word`]) and is not a counter (`2
/// failed`, `FAILED (failures=1)`, `found 0 errors`) nor a warning.
pub(crate) fn names_a_failure(line: &str) -> bool {
    let trimmed = line.trim();
    let lower = trimmed.to_lowercase();
    if lower.starts_with("warning") || lower.starts_with("warn ") {
        return false;
    }
    let all = words(trimmed);
    let mut named = false;
    for (at, (start, word)) in all.iter().enumerate() {
        if !is_failure_word(word) {
            continue;
        }
        // `2 failed`, `1 error`: a count, in lower case, one space after its number (not a
        // log level after a process id, `4242 ERROR`, nor `(25549) panicked`).
        let counted_before = at > 0 && {
            let (number_start, number) = all[at - 1];
            number.parse::<u64>().is_ok()
                && &trimmed[number_start + number.len()..*start] == " "
                && word.chars().any(char::is_lowercase)
        };
        let after = trimmed[start + word.len()..].trim_start_matches([' ', '=', ':']);
        let counted_after = after.starts_with(|c: char| c.is_ascii_digit());
        if counted_before || counted_after {
            return false;
        }
        named = true;
    }
    named
}

/// `text` with every run of whitespace written as one space, trimmed.
pub(crate) fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_cursor_codes_and_progress_redraws_are_removed() {
        assert_eq!(clean("test x ... \u{1b}[31mFAILED\u{1b}(B\u{1b}[m\n"), "test x ... FAILED\n");
        assert_eq!(clean("\u{1b}]0;title\u{7}ok\r\n"), "ok\n");
        assert_eq!(
            clean("Building [=>  ] 1/9\rBuilding [==>] 9/9\ndone\n"),
            "Building [==>] 9/9\ndone\n"
        );
    }

    #[test]
    fn build_and_download_lines_are_noise_and_failures_are_not() {
        for noise in [
            "   Compiling demo v0.1.0 (/tmp/x)",
            "  Downloaded thiserror-impl v1.0.65",
            "    Updating crates.io index",
            "    Blocking waiting for file lock on package cache",
            "added 12 packages in 3s",
            "Collecting pytest",
            "go: downloading golang.org/x/mod v0.1.0",
            "> demo@1.0.0 test",
        ] {
            assert!(is_noise(noise), "{noise}");
        }
        for line in [
            "        FAIL [   0.203s] (3/3) demo tests::test_fmt",
            "Compiling failed: out of memory",
            "error: could not compile `demo`",
        ] {
            assert!(!is_noise(line), "{line}");
        }
    }

    #[test]
    fn a_line_names_a_failure_by_its_words_not_by_letters_inside_a_name() {
        assert!(names_a_failure("ValueError: bad signature"));
        assert!(names_a_failure("thread 'main' panicked at src/main.rs:3:5:"));
        assert!(names_a_failure("npm ERR! code ELIFECYCLE"));
        assert!(names_a_failure("thread '<unnamed>' (25549) panicked at src/main.rs:6:32:"));
        assert!(names_a_failure("2026-12-06 04:53:10,713 25585 ERROR schema not found"));
        assert!(!names_a_failure("  Downloaded thiserror-impl v1.0.65"));
        assert!(!names_a_failure("Tests:       1 failed, 2 passed, 3 total"));
        assert!(!names_a_failure("FAILED (failures=1)"));
        assert!(!names_a_failure("warning: unused variable: `error`"));
    }

    #[test]
    fn frames_of_every_language_are_told_apart_from_messages() {
        for frame in [
            "   4: demo::tests::subtracts",
            "             at ./src/lib.rs:40:9",
            "    at Object.toBe (sum.test.js:4:48)",
            "  File \"/tmp/x/test_calc.py\", line 9, in check_signature",
            "\t/usr/local/go/src/testing/testing.go:1632 +0x230",
            "goroutine 7 [running]:",
        ] {
            assert!(is_frame(frame), "{frame}");
        }
        assert!(!is_frame("thread 'main' (12) panicked at src/lib.rs:4:5:"));
        assert!(!is_frame("at least one error occurred"));
        assert!(!is_frame("1: error in the first config"));
    }
}
