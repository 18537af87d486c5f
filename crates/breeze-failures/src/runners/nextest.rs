//! `cargo nextest run`: its `--message-format libtest-json` events when the output has them
//! (`demo::demo$tests::x` named `demo::demo tests::x`), else its status lines (`FAIL [   0.203s] (3/3) demo tests::test_fmt`, named by binary and
//! test, the duration and the counter left out); a test that failed a try and then passed
//! (`FLAKY`, `TRY 2 PASS`) is not failing. Compile errors as for `cargo test`.

use super::{Found, Text, cargo};
use crate::json;

/// Status words of a test that failed.
const FAILED: [&str; 6] = ["FAIL", "TIMEOUT", "ABORT", "LEAK-FAIL", "SIGSEGV", "SIGABRT"];

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let mut found = Found::default();
    for event in &text.json {
        let failed = json::string(event, "type") == Some("test")
            && json::string(event, "event") == Some("failed");
        // `demo::demo$tests::x`: the binary, then the test.
        if let (true, Some(name)) = (failed, json::string(event, "name")) {
            let name = name.replacen('$', " ", 1);
            found.test(&name, &name);
        }
    }
    if found.is_empty() {
        status_lines(&text.lines, &mut found);
    }
    let nextest = text.any(|line| line.starts_with("Starting ") && line.contains(" tests across "))
        || text.any(|line| line.starts_with("Summary ["));
    if named || nextest {
        cargo::compile_errors(&text.lines, &mut found);
    }
    found
}

fn status_lines(lines: &[&str], found: &mut Found) {
    let mut passed = Vec::new();
    for line in lines {
        let Some((status, name)) = status_line(line.trim()) else {
            continue;
        };
        if FAILED.contains(&status) || status.starts_with("SIG") {
            found.test(name, line);
        } else if status == "FLAKY" || status == "PASS" {
            passed.push(name.to_string());
        }
    }
    for name in passed {
        found.forget(&name);
    }
}

/// The status and the test of a status line: `FAIL [   0.203s] (3/3) demo tests::test_fmt`
/// → (`FAIL`, `demo tests::test_fmt`); `TRY 2 PASS [ 0.1s] demo tests::x` → (`PASS`, …);
/// `FLAKY 2/3 [ 0.1s] demo tests::x` → (`FLAKY`, …).
fn status_line(trimmed: &str) -> Option<(&str, &str)> {
    let trimmed = match trimmed.strip_prefix("TRY ") {
        Some(rest) => rest.split_once(' ')?.1,
        None => trimmed,
    };
    let (status, rest) = trimmed.split_once(' ')?;
    if !status.chars().all(|c| c.is_ascii_uppercase() || c == '-') {
        return None;
    }
    let rest = if status == "FLAKY" { rest.split_once(' ')?.1 } else { rest };
    let (duration, rest) = rest.strip_prefix('[')?.split_once(']')?;
    if !duration.trim().ends_with('s') {
        return None;
    }
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(counted) => counted.split_once(')')?.1.trim_start(),
        None => rest,
    };
    (!rest.is_empty()).then_some((status, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(output: &str) -> Vec<String> {
        read(&Text::new(output), true).tests.into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn a_test_that_passed_on_a_later_try_is_not_failing() {
        let output = "    Starting 2 tests across 2 binaries (11 skipped)
  TRY 1 FAIL [   0.003s] fixture-project::basic test_flaky_mod_2
  TRY 2 PASS [   0.002s] fixture-project::basic test_flaky_mod_2
  TRY 3 FAIL [   0.004s] fixture-project::basic test_broken
     Summary [   0.021s] 2 tests run: 1 passed (1 flaky), 1 failed, 25 skipped
   FLAKY 2/3 [   0.002s] fixture-project::basic test_flaky_mod_2
        FAIL [   0.004s] fixture-project::basic test_broken
";
        assert_eq!(failing(output), ["fixture-project::basic test_broken"]);
    }

    #[test]
    fn a_test_killed_by_a_signal_or_a_timeout_is_failing() {
        let output = "     SIGSEGV [   0.101s] demo tests::crashes\n     TIMEOUT [  60.002s] demo tests::hangs\n        PASS [   0.001s] demo tests::adds\n";
        assert_eq!(failing(output), ["demo tests::crashes", "demo tests::hangs"]);
    }
}
