//! Vitest: its `--reporter=json` report when the output has one (as jest's, the describe
//! blocks and title joined by ` > `), else the `FAIL  src/x.test.ts > suite > test` headers of
//! its "Failed Tests" section, else its `× test 6ms` lines (named without the duration or a
//! `(retry x2)` mark). `FAIL  src/x.test.ts [ src/x.test.ts ]`, a file that did not load, is
//! an error outside any test.

use super::{Found, Text, jest, without_duration, without_retry};

/// How vitest joins the file, describe blocks and the test's title.
const SEPARATOR: &str = " > ";

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let mut found = Found::default();
    for report in &text.json {
        jest::read_report(report, SEPARATOR, &mut found);
    }
    if !found.is_empty() {
        return found;
    }
    for line in &text.lines {
        let Some(header) = line.trim().strip_prefix("FAIL ") else {
            continue;
        };
        let header = header.trim();
        if header.contains(SEPARATOR) {
            found.test(without_retry(header), line);
        } else if let Some((file, _)) = header.split_once(" [ ") {
            found.error(&format!("FAIL {file}"));
        }
    }
    let vitest = named || text.any(|line| line.starts_with("Test Files "));
    if found.tests.is_empty() && vitest {
        for line in &text.lines {
            if let Some(name) = line.trim().strip_prefix("× ") {
                found.test(without_retry(without_duration(name)), line);
            }
        }
    }
    found
}
