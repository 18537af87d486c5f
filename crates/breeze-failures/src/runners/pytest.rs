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
    // Progress lines: `path::test FAILED [ 50%]`, pytest-xdist's `[gw0] [ 50%] FAILED
    // path::test`.
    for line in &text.lines {
        let words: Vec<&str> = without_worker(line.trim()).split_whitespace().collect();
        let id = match words[..] {
            [id, "FAILED" | "ERROR", ..] | ["FAILED" | "ERROR", id, ..] => id,
            _ => continue,
        };
        if is_test_id(id, pytest) {
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
    let trimmed = line.trim();
    let (verdict, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
    let id = rest.split(" - ").next().unwrap_or("").trim();
    match verdict {
        // unittest's closing `FAILED (failures=1)` names no test.
        "FAILED"
            if is_test_id(id, pytest) || (pytest && !id.is_empty() && !id.starts_with('(')) =>
        {
            found.test(id, trimmed);
        }
        "ERROR" if is_test_id(id, pytest) => found.test(id, trimmed),
        "ERROR" if pytest && !id.is_empty() => found.error(&format!("ERROR {id}")),
        "ERROR:" if pytest => found.error(trimmed),
        _ => {}
    }
}

/// Whether `id` is a test's node id, `tests/test_x.py::Class::test_y[1-2]`: its file a Python
/// module unless pytest's banners are in the output (a doctest of `README.md::README.md`), so
/// that a Rust log line `ERROR my_crate::db > refused` is not taken for a test.
fn is_test_id(id: &str, pytest: bool) -> bool {
    let (file, test) = id.split_once("::").unwrap_or((id, ""));
    !test.is_empty() && (pytest || file.ends_with(".py"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read_output(output: &str) -> Found {
        read(&Text::new(output), false)
    }

    #[test]
    fn xdist_workers_and_setup_errors_name_the_test() {
        let found = read_output(
            "[gw1] [ 50%] FAILED tests/test_a.py::test_x[1-2] \n\
             ===== short test summary info =====\n\
             FAILED tests/test_a.py::test_x[1-2] - assert 3 == 4\n\
             ERROR tests/test_b.py::test_y - fixture 'db' not found\n",
        );
        let names: Vec<&str> = found.tests.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["tests/test_a.py::test_x[1-2]", "tests/test_b.py::test_y"]);
        assert_eq!(
            found.headline().as_deref(),
            Some("FAILED tests/test_a.py::test_x[1-2] - assert 3 == 4")
        );
    }

    #[test]
    fn a_log_line_naming_a_rust_module_is_no_pytest_test() {
        assert!(read_output(" ERROR my_crate::db > connection refused\n").is_empty());
        assert!(read_output("FAILED my_crate::db::tests::x\n").is_empty());
    }

    #[test]
    fn without_a_summary_the_failures_headers_name_the_tests() {
        let found = read_output(
            "===== test session starts =====\n===== FAILURES =====\n_____ CalcTest.test_subtracts _____\n\nE   AssertionError\n===== 1 failed in 0.02s =====\n",
        );
        assert_eq!(found.tests[0].0, "CalcTest.test_subtracts");
        assert!(read_output("FAILED (failures=1)\n").is_empty(), "unittest's closing line");
    }
}
