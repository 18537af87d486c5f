//! `cargo test`: libtest's `test tests::x ... FAILED` lines, its `---- tests::x stdout ----`
//! sections and its closing `failures:` list (a doc test's `(line N)` left out: it moves when
//! lines are added above it); and the compiler's errors (`error[E0425]: …`) when the tests
//! did not build.

use super::{Found, Text};

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let mut found = Found::default();
    for line in &text.lines {
        if let Some(name) = failed_line(line.trim()) {
            found.test(doc_test_name(name), line);
        }
    }
    for line in &text.lines {
        let trimmed = line.trim();
        if let Some(name) =
            trimmed.strip_prefix("---- ").and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            found.test(doc_test_name(name), name);
        }
    }
    for name in failures_lists(&text.lines) {
        found.test(doc_test_name(name), name);
    }
    if named || built_by_cargo(text) {
        compile_errors(&text.lines, &mut found);
    }
    found
}

/// The test a `test NAME ... FAILED` line names.
fn failed_line(trimmed: &str) -> Option<&str> {
    let (name, verdict) = trimmed.strip_prefix("test ")?.split_once(" ... ")?;
    verdict.starts_with("FAILED").then_some(name)
}

/// The names listed under libtest's closing `failures:` line, four spaces in.
fn failures_lists<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut names = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim() != "failures:" {
            continue;
        }
        let indent = line.len() - line.trim_start().len() + 4;
        let listed = lines[at + 1..].iter().take_while(|next| {
            next.get(..indent).is_some_and(|margin| margin.chars().all(|c| c == ' '))
                && next.len() > indent
                && !next[indent..].starts_with(' ')
        });
        names.extend(listed.map(|next| next.trim()));
    }
    names
}

/// A doc test's name without where it starts: `src/lib.rs - add (line 10)` → `src/lib.rs -
/// add`.
fn doc_test_name(name: &str) -> &str {
    match name.rsplit_once(" (line ") {
        Some((head, tail)) if tail.ends_with(')') && head.contains(" - ") => head,
        _ => name,
    }
}

/// Whether the output is cargo's: libtest's lines or the compiler's.
fn built_by_cargo(text: &Text<'_>) -> bool {
    text.any(|line| {
        line.starts_with("test result: ")
            || line.starts_with("error[E")
            || line.starts_with("error: could not compile")
            || (line.starts_with("running ")
                && (line.ends_with(" tests") || line.ends_with(" test")))
    })
}

/// Cargo's closing lines, which repeat that something failed without saying what.
const CARGO_SUMMARIES: [&str; 7] = [
    "error: could not compile",
    "error: test failed, to rerun pass",
    "error: doctest failed, to rerun pass",
    "error: aborting due to",
    "error: test run failed",
    "error: build failed",
    "error: no-fail-fast",
];

/// The compiler's and cargo's errors (`error[E0425]: cannot find value`, `error: linking
/// with cc failed`), at the start of a line; cargo's summaries only when nothing else says
/// what failed (`could not compile demo (lib test)`, without its count of errors).
pub(super) fn compile_errors(lines: &[&str], found: &mut Found) {
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with("error[E") || line.starts_with("error: "))
        .collect();
    let is_summary = |line: &&str| {
        CARGO_SUMMARIES.iter().any(|summary| line.starts_with(summary))
            || (line.starts_with("error: ") && line.ends_with(" targets failed:"))
    };
    for error in errors.iter().filter(|line| !is_summary(line)) {
        found.error(error);
    }
    if found.is_empty() {
        let could_not_compile =
            errors.iter().filter(|line| line.starts_with("error: could not compile"));
        for line in could_not_compile {
            found.error(line.split(" due to ").next().unwrap_or(line));
        }
    }
}
