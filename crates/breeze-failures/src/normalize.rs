//! A failure line as it reads on every run: what changes from one run of the same failure
//! to the next — addresses, thread ids, process ids, temporary paths, timestamps, durations,
//! uuids and hashes, line and column numbers — written as a placeholder.

use crate::text::collapse_spaces;

/// Longest normalized line, in characters: a failure is told by its beginning.
const LINE_CHARS: usize = 300;

/// `line` with what differs between two runs of the same failure replaced (see the module
/// docs), its spaces collapsed, cut at [`LINE_CHARS`] characters.
pub(crate) fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    while at < line.len() {
        match MATCHERS.iter().find_map(|matcher| matcher(line, at)) {
            Some((len, replacement)) => {
                out.push_str(&replacement);
                at += len.max(1);
            }
            None => {
                let ch = line[at..].chars().next().unwrap_or(' ');
                out.push(ch);
                at += ch.len_utf8();
            }
        }
    }
    collapse_spaces(&out).chars().take(LINE_CHARS).collect()
}

/// A matcher looks at `line` from byte `at` and, when what starts there varies between runs,
/// says how many bytes it takes and what stands for them.
type Matcher = fn(&str, usize) -> Option<(usize, String)>;

const MATCHERS: [Matcher; 11] = [
    temp_path,
    uuid,
    timestamp,
    address,
    long_hex,
    thread_id,
    process_id,
    bracketed_id,
    position,
    python_line,
    duration,
];

/// Whether the character before byte `at` continues a word (so nothing starts at `at`).
fn inside_word(line: &str, at: usize) -> bool {
    line[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

/// How many bytes from `at` on `accept` takes (none past the end).
fn count(line: &str, at: usize, accept: impl Fn(u8) -> bool) -> usize {
    let rest = line.as_bytes().get(at..).unwrap_or_default();
    rest.iter().take_while(|b| accept(**b)).count()
}

/// Temporary directories whose next components are made anew on every run.
const TEMP_ROOTS: [(&str, usize); 5] = [
    ("/tmp/", 1),
    ("/var/tmp/", 1),
    ("/private/tmp/", 1),
    ("/var/folders/", 3),
    ("/private/var/folders/", 3),
];

/// `/tmp/.tmpAbC123/x/out-3.log` → `<tmp>/_/x/_`: the temporary folder's own name, and every
/// component below it with a digit in it.
fn temp_path(line: &str, at: usize) -> Option<(usize, String)> {
    let (root, random) = TEMP_ROOTS.iter().find(|(root, _)| line[at..].starts_with(root))?;
    let before = line[..at].chars().next_back();
    if before.is_some_and(|c| c.is_alphanumeric() || "._-/~".contains(c)) {
        return None;
    }
    let rest = &line[at + root.len()..];
    let end = rest.find(|c: char| c.is_whitespace() || "'\"`()[]{}<>,;:".contains(c));
    let path = &rest[..end.unwrap_or(rest.len())];
    let components: Vec<&str> = path
        .split('/')
        .enumerate()
        .map(|(index, part)| {
            if index < *random || part.contains(|c: char| c.is_ascii_digit()) { "_" } else { part }
        })
        .collect();
    Some((root.len() + path.len(), format!("<tmp>/{}", components.join("/"))))
}

/// `0e4d1c7a-6e0f-4a57-9b8e-2f1d3c4b5a69` → `<uuid>` (run ids, request ids).
fn uuid(line: &str, at: usize) -> Option<(usize, String)> {
    if inside_word(line, at) {
        return None;
    }
    let mut end = at;
    for (index, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if index > 0 {
            (line.as_bytes().get(end) == Some(&b'-')).then_some(())?;
            end += 1;
        }
        (count(line, end, |b| b.is_ascii_hexdigit()) == len).then_some(())?;
        end += len;
    }
    Some((end - at, "<uuid>".into()))
}

/// `2024-05-01T10:00:00.123Z`, `2026-12-06 04:53:20,528`, `04:49:00` → `<time>`.
fn timestamp(line: &str, at: usize) -> Option<(usize, String)> {
    if inside_word(line, at) || line[..at].ends_with(':') {
        return None;
    }
    let digits = |from: usize, n: usize| count(line, from, |b| b.is_ascii_digit()) >= n;
    let byte = |i: usize| line.as_bytes().get(i).copied();
    let mut end = at;
    if digits(at, 4)
        && byte(at + 4) == Some(b'-')
        && digits(at + 5, 2)
        && byte(at + 7) == Some(b'-')
    {
        end = at + 10;
        if matches!(byte(end), Some(b'T' | b' '))
            && digits(end + 1, 2)
            && byte(end + 3) == Some(b':')
        {
            end += 1;
        } else {
            return digits(at + 8, 2).then(|| (10, "<date>".into()));
        }
    }
    let clock = digits(end, 2) && byte(end + 2) == Some(b':') && digits(end + 3, 2);
    if !clock {
        return None;
    }
    end += 5;
    if byte(end) == Some(b':') && digits(end + 1, 2) {
        end += 3;
        if matches!(byte(end), Some(b'.' | b',')) && digits(end + 1, 1) {
            end += 1 + count(line, end + 1, |b| b.is_ascii_digit());
        }
    } else if end - at == 5 {
        return None; // `12:34` alone is a line and column, not a time
    }
    if byte(end) == Some(b'Z') {
        end += 1;
    } else if matches!(byte(end), Some(b'+' | b'-')) && digits(end + 1, 2) && end - at > 8 {
        end += 1 + count(line, end + 1, |b| b.is_ascii_digit() || b == b':');
    }
    Some((end - at, "<time>".into()))
}

/// `0x7f868dc7c4bc` → `0x_`.
fn address(line: &str, at: usize) -> Option<(usize, String)> {
    let rest = &line.as_bytes()[at..];
    if inside_word(line, at) || rest.len() < 3 || rest[0] != b'0' || !matches!(rest[1], b'x' | b'X')
    {
        return None;
    }
    let digits = count(line, at + 2, |b| b.is_ascii_hexdigit());
    (digits > 0).then(|| (2 + digits, "0x_".into()))
}

/// A hash of sixteen hex digits or more (`demo-af6e6301f1bccd7c`) → `<hex>`.
fn long_hex(line: &str, at: usize) -> Option<(usize, String)> {
    if inside_word(line, at) {
        return None;
    }
    let len = count(line, at, |b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let hex = &line[at..at + len];
    let next = line[at + len..].chars().next();
    let mixed = hex.contains(|c: char| c.is_ascii_digit())
        && hex.contains(|c: char| c.is_ascii_alphabetic());
    (len >= 16 && mixed && !next.is_some_and(char::is_alphanumeric)).then(|| (len, "<hex>".into()))
}

/// `thread 'main' (12345) panicked` → `thread 'main' panicked`; `ThreadId(3)` →
/// `ThreadId(_)`.
fn thread_id(line: &str, at: usize) -> Option<(usize, String)> {
    let rest = &line[at..];
    if let Some(after) = rest.strip_prefix("ThreadId(") {
        let digits = count(after, 0, |b| b.is_ascii_digit());
        return (digits > 0 && after[digits..].starts_with(')'))
            .then(|| ("ThreadId(".len() + digits + 1, "ThreadId(_)".into()));
    }
    let after = rest.strip_prefix(" (")?;
    let named_thread = line[..at].ends_with('\'') && line[..at].contains("thread '");
    let digits = count(after, 0, |b| b.is_ascii_digit());
    (named_thread && digits > 0 && after[digits..].starts_with(')'))
        .then(|| (3 + digits, String::new()))
}

/// `pid 4242`, `pid=4242`, `process 4242` → `pid _`, `process _`.
fn process_id(line: &str, at: usize) -> Option<(usize, String)> {
    if inside_word(line, at) {
        return None;
    }
    let word = ["pid", "process"].into_iter().find(|word| {
        line.get(at..at + word.len()).is_some_and(|found| found.eq_ignore_ascii_case(word))
    })?;
    let gap = count(line, at + word.len(), |b| b" :=#".contains(&b));
    let digits = count(line, at + word.len() + gap, |b| b.is_ascii_digit());
    (gap > 0 && digits > 0)
        .then(|| (word.len() + gap + digits, format!("{} _", &line[at..at + word.len()])))
}

/// `[12345]` (a process id in a log prefix) → `[_]`; `[3]` stays.
fn bracketed_id(line: &str, at: usize) -> Option<(usize, String)> {
    let after = line[at..].strip_prefix('[')?;
    let digits = count(after, 0, |b| b.is_ascii_digit());
    (digits >= 3 && after[digits..].starts_with(']')).then(|| (digits + 2, "[_]".into()))
}

/// `src/lib.rs:40:9`, `math_test.go:12` → `src/lib.rs:_`, `math_test.go:_`: the file is
/// told, the place in it moves with every edit above it.
fn position(line: &str, at: usize) -> Option<(usize, String)> {
    let after = line[at..].strip_prefix(':')?;
    let first = count(after, 0, |b| b.is_ascii_digit());
    if first == 0 {
        return None;
    }
    let token = line[..at].rsplit(|c: char| c.is_whitespace() || "('\"`[<".contains(c)).next()?;
    let (stem, extension) = token.rsplit_once('.')?;
    let file_like = !stem.is_empty()
        && (1..=6).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.starts_with(|c: char| c.is_ascii_alphabetic());
    if !file_like {
        return None;
    }
    let mut len = 1 + first;
    if let Some(column) = after[first..].strip_prefix(':') {
        let second = count(column, 0, |b| b.is_ascii_digit());
        if second > 0 {
            len += 1 + second;
        }
    }
    Some((len, ":_".into()))
}

/// `File "x.py", line 12` → `File "x.py", line _`.
fn python_line(line: &str, at: usize) -> Option<(usize, String)> {
    let after = line[at..].strip_prefix(", line ")?;
    let digits = count(after, 0, |b| b.is_ascii_digit());
    (digits > 0).then(|| (", line ".len() + digits, ", line _".into()))
}

/// Units a duration is written with, longest first.
const DURATION_UNITS: [&str; 12] =
    ["seconds", "second", "minutes", "secs", "mins", "sec", "min", "ms", "µs", "us", "ns", "s"];

/// `2.31s`, `15 ms`, `0.5 sec` → `<time>`.
fn duration(line: &str, at: usize) -> Option<(usize, String)> {
    if inside_word(line, at) || !line[at..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let number = count(line, at, |b| b.is_ascii_digit() || b == b'.');
    let gap = count(line, at + number, |b| b == b' ').min(1);
    let rest = &line[at + number + gap..];
    let unit = DURATION_UNITS.iter().find(|unit| {
        rest.starts_with(*unit) && !rest[unit.len()..].starts_with(|c: char| c.is_alphanumeric())
    })?;
    Some((number + gap + unit.len(), "<time>".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_changes_between_runs_is_written_as_a_placeholder() {
        let cases = [
            (
                "thread 'tests::x' (25853) panicked at src/lib.rs:40:9:",
                "thread 'tests::x' panicked at src/lib.rs:_:",
            ),
            ("value at 0x7f868dc7c4bc on ThreadId(4)", "value at 0x_ on ThreadId(_)"),
            (
                "2026-12-06 04:53:20,528 [4242] ERROR schema not found in /tmp/tmpk2j3h4_x/s.json",
                "<time> [_] ERROR schema not found in <tmp>/_/s.json",
            ),
            ("FAIL\texample.com/calc\t0.004s", "FAIL example.com/calc <time>"),
            ("run 6fd262cc-10e7-4166-9143-9457a790afa8 failed", "run <uuid> failed"),
            ("deps/demo-af6e6301f1bccd7c crashed (pid 31337)", "deps/demo-<hex> crashed (pid _)"),
            ("  File \"/tmp/x/a.py\", line 12, in f", "File \"<tmp>/_/a.py\", line _, in f"),
            ("at 2024-05-01T10:00:00.123456789Z took 1.5 sec", "at <time> took <time>"),
        ];
        for (line, normalized) in cases {
            assert_eq!(normalize(line), normalized, "{line}");
        }
    }

    #[test]
    fn a_line_ending_inside_a_pattern_is_kept_whole() {
        for line in [
            "2026-12-06",
            "2026-12-0",
            "12:34:5",
            "0x",
            "pid ",
            "[123",
            "ThreadId(",
            "/tmp/",
            "a.rs:",
        ] {
            let normalized = normalize(line);
            assert!(!normalized.is_empty(), "{line}");
        }
        assert_eq!(normalize("on 2026-12-06"), "on <date>");
    }

    #[test]
    fn what_tells_a_failure_apart_stays() {
        let cases = [
            "expected 2 got 3",
            "error[E0425]: cannot find value `c` in this scope",
            "index out of range [3] with length 3",
            "thiserror v1.0.69 at 12:34",
            "test3s x2",
        ];
        for line in cases {
            assert_eq!(normalize(line), line);
        }
    }
}
