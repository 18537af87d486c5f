//! pytest: the short test summary's `FAILED path::test - message` and `ERROR path::test`
//! lines, the verbose `path::test FAILED [ 50%]` lines, else the `___ Class.test ___` headers
//! of its FAILURES section. `ERROR path` without a test (a module that did not import) and
//! `ERROR: file or directory not found` are errors outside any test.

use super::{Found, Text};

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let pytest = named
        || text.any(|line| {
            line.contains("test session starts") || line.contains("short test summary info")
        });
    let mut found = Found::default();
    for line in &text.lines {
        summary_line(line, pytest, &mut found);
    }
    for line in &text.lines {
        let mut words = without_worker(line.trim()).split_whitespace();
        if let (Some(id), Some("FAILED" | "ERROR")) = (words.next(), words.next())
            && id.contains("::")
        {
            found.test(id, line);
        }
    }
    if found.tests.is_empty() && pytest {
        for line in &text.lines {
            if let Some(name) = section_header(line) {
                found.test(name, line);
            }
        }
    }
    found
}

/// A line of the short test summary: `FAILED tests/test_x.py::test_y - AssertionError`,
/// `ERROR tests/test_x.py::test_y - fixture 'db' not found`, `ERROR tests/test_broken.py`.
fn summary_line(line: &str, pytest: bool, found: &mut Found) {
    let trimmed = without_worker(line.trim());
    let (verdict, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
    let id = rest.split(" - ").next().unwrap_or("").trim();
    match verdict {
        // unittest's closing `FAILED (failures=1)` names no test.
        "FAILED" if id.contains("::") || (pytest && !id.is_empty() && !id.starts_with('(')) => {
            found.test(id, trimmed);
        }
        "ERROR" if id.contains("::") => found.test(id, trimmed),
        "ERROR" if pytest && !id.is_empty() => found.error(&format!("ERROR {id}")),
        "ERROR:" if pytest => found.error(trimmed),
        _ => {}
    }
}

/// `line` without pytest-xdist's worker and progress marks: `[gw0] [ 50%] FAILED x` →
/// `FAILED x`.
fn without_worker(line: &str) -> &str {
    let mut rest = line;
    while let Some(inside) = rest.strip_prefix('[') {
        match inside.split_once(']') {
            Some((_, after)) => rest = after.trim_start(),
            None => break,
        }
    }
    rest
}

/// The test a `____ CalcTest.test_signature ____` header of the FAILURES section names.
fn section_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("___")?.strip_suffix("___")?.trim_matches('_').trim();
    let opening = inner.split_whitespace().next()?;
    (!inner.is_empty() && opening != "ERROR" && opening != "Captured").then_some(inner)
}
