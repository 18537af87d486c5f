//! Jest: its `--json` report when the output has one (each failed assertion named by its
//! describe blocks and title, `math › subtracts`), else its `● math › subtracts` headers,
//! else its `✕ subtracts (3 ms)` lines. `● Test suite failed to run` under `FAIL path` is an
//! error outside any test. Vitest's `--reporter=json` has the same shape
//! ([`read_report`]).

use serde_json::{Map, Value};

use super::{Found, Text, without_duration, without_retry};
use crate::json;

/// How jest joins describe blocks and the test's title.
const SEPARATOR: &str = " › ";

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let mut found = Found::default();
    // Vitest writes the same report; jest's alone says whether handles were left open.
    let reports = text.json.iter().filter(|report| named || report.contains_key("openHandles"));
    for report in reports {
        read_report(report, SEPARATOR, &mut found);
    }
    let jest =
        named || text.any(|line| line.starts_with("Tests:") || line.starts_with("Test Suites:"));
    if found.is_empty() && jest {
        read_headers(&text.lines, &mut found);
    }
    found
}

/// A jest-shaped JSON report (`testResults[].assertionResults[]`): every failed assertion,
/// named by its ancestors and title joined by `separator`; a test file that failed with no
/// failed assertion (it did not load) is an error.
pub(super) fn read_report(report: &Map<String, Value>, separator: &str, found: &mut Found) {
    for file in json::array(report, "testResults") {
        let mut failed_assertion = false;
        for assertion in json::array(file, "assertionResults") {
            if json::string(assertion, "status") != Some("failed") {
                continue;
            }
            let mut path: Vec<&str> = json::array_strings(assertion, "ancestorTitles");
            path.extend(json::string(assertion, "title"));
            found.test(&path.join(separator), &path.join(separator));
            failed_assertion = true;
        }
        if json::string(file, "status") == Some("failed") && !failed_assertion {
            let name = json::string(file, "name").unwrap_or("");
            let file_name = name.rsplit('/').next().unwrap_or(name);
            found.error(&format!("Test suite failed to run: {file_name}"));
        }
    }
}

fn read_headers(lines: &[&str], found: &mut Found) {
    let mut file = "";
    for line in lines {
        let trimmed = line.trim();
        if let Some(path) = trimmed.strip_prefix("FAIL ") {
            file = path.trim();
        } else if let Some(header) = trimmed.strip_prefix("● ") {
            match header {
                "Test suite failed to run" => found.error(&format!("{header}: {file}")),
                _ if header.starts_with("Console") => {}
                _ => found.test(without_retry(header), trimmed),
            }
        }
    }
    if found.tests.is_empty() {
        for line in lines {
            if let Some(name) = line.trim().strip_prefix("✕ ") {
                found.test(without_duration(name), line);
            }
        }
    }
}
