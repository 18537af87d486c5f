//! `go test`: its `-json` events when the output has them (`"Action":"fail"` with a
//! `Test`), else its `--- FAIL: TestX (0.00s)` lines; each test named with its package
//! (`example.com/calc.TestFormat/float`: the package's `FAIL\tpkg` line follows its tests), a
//! test left out when only its subtests failed. A package that failed without a failing test
//! (`FAIL\tpkg [build failed]`, a panic outside a test) and the compiler's `x.go:3:5: …`
//! lines are errors.

use serde_json::{Map, Value};

use super::{Found, Text};
use crate::json;

pub(super) fn read(text: &Text<'_>, _named: bool) -> Found {
    let mut found = Found::default();
    // The compiler's errors come before the `FAIL pkg [build failed]` they cause.
    for line in &text.lines {
        if is_compile_error(line) {
            found.error(line);
        }
    }
    let events: Vec<&Map<String, Value>> =
        text.json.iter().filter(|event| json::string(event, "Action").is_some()).collect();
    if events.is_empty() {
        read_lines(&text.lines, &mut found);
    } else {
        read_events(&events, &mut found);
    }
    found.without_parents("/")
}

fn read_lines(lines: &[&str], found: &mut Found) {
    let mut pending: Vec<(&str, &str)> = Vec::new();
    let mut panic: Option<&str> = None;
    for line in lines {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("--- FAIL: ") {
            pending.push((rest.rsplit_once(" (").map_or(rest, |(name, _)| name), trimmed));
        } else if let Some((failed, package, note)) = package_line(line) {
            if failed && pending.is_empty() {
                found.error(format!("FAIL {package} {note}").trim_end());
                panic.into_iter().for_each(|line| found.error(line));
            }
            for (name, line) in pending.drain(..) {
                found.test(&format!("{package}.{name}"), line);
            }
            panic = None;
        } else if line.starts_with("panic: ") && panic.is_none() {
            panic = Some(line);
        }
    }
    for (name, line) in pending {
        found.test(name, line);
    }
}

/// A package's closing line: `FAIL\texample.com/calc\t0.004s` → (true, `example.com/calc`,
/// ``); `FAIL\texample.com/calc [build failed]` → (true, …, `[build failed]`); `ok
/// \texample.com/calc\t(cached)` → (false, …).
fn package_line(line: &str) -> Option<(bool, &str, &str)> {
    let (failed, rest) = match line.strip_prefix("FAIL\t") {
        Some(rest) => (true, rest),
        None => (false, line.strip_prefix("ok  \t")?),
    };
    let package = rest.split(['\t', ' ']).next().filter(|package| !package.is_empty())?;
    let note = rest[package.len()..].trim();
    let note = if note.starts_with('[') { note } else { "" };
    Some((failed, package, note))
}

fn read_events(events: &[&Map<String, Value>], found: &mut Found) {
    let mut fail_lines: Vec<(String, String)> = Vec::new();
    let mut failed_packages: Vec<&str> = Vec::new();
    for event in events {
        let package = json::string(event, "Package").unwrap_or("");
        let test = json::string(event, "Test");
        let qualified = |test: &str| {
            if package.is_empty() { test.to_string() } else { format!("{package}.{test}") }
        };
        match (json::string(event, "Action"), test) {
            (Some("output"), Some(test)) => {
                let output = json::string(event, "Output").unwrap_or("").trim();
                if output.starts_with("--- FAIL: ") {
                    fail_lines.push((qualified(test), output.to_string()));
                }
            }
            (Some("fail"), Some(test)) => {
                let name = qualified(test);
                let line = fail_lines
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map(|(_, line)| line.clone());
                found.test(&name, line.as_deref().unwrap_or(&name));
            }
            (Some("fail"), None) => failed_packages.push(package),
            (Some("build-output"), _) => {
                let output = json::string(event, "Output").unwrap_or("");
                output
                    .lines()
                    .filter(|line| is_compile_error(line))
                    .for_each(|line| found.error(line));
            }
            (Some("build-fail"), _) => {
                let import_path = json::string(event, "ImportPath").unwrap_or(package);
                found.error(&format!("FAIL {import_path} [build failed]"));
            }
            _ => {}
        }
    }
    for package in failed_packages {
        let prefix = format!("{package}.");
        if !found.tests.iter().any(|(name, _)| name.starts_with(&prefix)) {
            found.error(&format!("FAIL {package}"));
        }
    }
}

/// `./calc_test.go:8:9: undefined: Multiply`: the compiler's error, at the start of a line
/// (a test's own log lines are indented).
fn is_compile_error(line: &str) -> bool {
    let Some((path, rest)) = line.split_once(".go:") else {
        return false;
    };
    let position = rest.split(": ").next().unwrap_or("");
    !path.is_empty()
        && !path.starts_with([' ', '\t'])
        && !path.contains(' ')
        && !position.is_empty()
        && position
            .split(':')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        && rest.contains(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_that_failed_to_build_under_json_is_an_error() {
        let output = r##"{"ImportPath":"example.com/calc [example.com/calc.test]","Action":"build-output","Output":"# example.com/calc [example.com/calc.test]\n"}
{"ImportPath":"example.com/calc [example.com/calc.test]","Action":"build-output","Output":"./calc_test.go:8:9: undefined: Multiply\n"}
{"ImportPath":"example.com/calc [example.com/calc.test]","Action":"build-fail"}
{"Time":"2026-12-06T05:10:01Z","Action":"start","Package":"example.com/calc"}
{"Time":"2026-12-06T05:10:01Z","Action":"output","Package":"example.com/calc","Output":"FAIL\texample.com/calc [build failed]\n"}
{"Time":"2026-12-06T05:10:01Z","Action":"fail","Package":"example.com/calc","Elapsed":0,"FailedBuild":"example.com/calc [example.com/calc.test]"}
"##;
        let found = read(&Text::new(output), true);
        let errors: Vec<&str> = found.errors.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(
            errors,
            [
                "./calc_test.go:_: undefined: Multiply",
                "FAIL example.com/calc [example.com/calc.test] [build failed]",
                "FAIL example.com/calc"
            ]
        );
        assert!(found.tests.is_empty());
    }

    #[test]
    fn a_test_log_line_is_not_a_compile_error() {
        assert!(is_compile_error("./calc_test.go:8:9: undefined: Multiply"));
        assert!(!is_compile_error("    calc_test.go:12: Subtract(3, 1) = 2, want 1"));
        assert!(!is_compile_error("see notes.go:12 for why"));
    }
}
