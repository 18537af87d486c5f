//! Mocha: its `--reporter json` report when the output has one (`failures[].fullTitle`),
//! else the numbered failures after its `N failing` line (`1) math` then `subtracts:`),
//! named as mocha's full title: the suites and the test joined by spaces.

use super::{Found, Text};
use crate::json;

pub(super) fn read(text: &Text<'_>, _named: bool) -> Found {
    let mut found = Found::default();
    for report in text.json.iter().filter(|report| report.contains_key("stats")) {
        for failure in json::array(report, "failures") {
            if let Some(title) = json::string(failure, "fullTitle") {
                found.test(title, title);
            }
        }
    }
    if !found.is_empty() {
        return found;
    }
    let failing = text.lines.iter().position(|line| {
        line.trim().split_once(' ').is_some_and(|(count, word)| {
            count.parse::<u32>().is_ok() && word.trim_end() == "failing"
        })
    });
    if let Some(at) = failing {
        read_numbered(&text.lines[at + 1..], &mut found);
    }
    found
}

/// The numbered failures: `  1) math` then, indented further, `subtracts:`; a title ends at
/// the line ending with `:`.
fn read_numbered(lines: &[&str], found: &mut Found) {
    let mut at = 0;
    while at < lines.len() {
        let Some(first) = numbered(lines[at]) else {
            at += 1;
            continue;
        };
        let mut parts = vec![first.trim_end_matches(':')];
        let mut end = at;
        while !lines[end].trim_end().ends_with(':') && end + 1 < lines.len() {
            end += 1;
            let part = lines[end].trim();
            if part.is_empty() {
                break;
            }
            parts.push(part.trim_end_matches(':'));
        }
        let name = parts.join(" ");
        found.test(&name, &format!("{}) {name}", lines[at].trim().split(')').next().unwrap_or("")));
        at = end + 1;
    }
}

/// The title after a failure's number: `  1) math` → `math`.
fn numbered(line: &str) -> Option<&str> {
    let (number, title) = line.trim_start().split_once(") ")?;
    (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit())).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_hook_and_nested_suites_are_named_by_their_full_title() {
        let output = "  0 passing (4ms)
  2 failing

  1) outer
       inner
         reads the file:
     Error: ENOENT
      at Context.<anonymous> (test/a.spec.js:4:11)

  2) outer
       \"before each\" hook for \"writes\":
     TypeError: x is not a function
";
        let found = read(&Text::new(output), true);
        let names: Vec<&str> = found.tests.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["outer inner reads the file", "outer \"before each\" hook for \"writes\""]
        );
    }
}
