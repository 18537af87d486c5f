//! `node --test`: the TAP reporter's `not ok 2 - subtracts` lines, named by their place
//! among the `# Subtest:` lines (`math > subtracts`); else the spec reporter's closing
//! `✖ failing tests:` section (`✖ subtracts (1.6ms)`, named without the duration), else its
//! tree of `▶ suite` and `✖ test` lines. A suite that failed only because a test inside it
//! did is left out; a `# SKIP` or `# TODO` test is not failing.

use super::{Found, Text, without_duration};

/// How suites are joined in a test's name.
const SEPARATOR: &str = " > ";

pub(super) fn read(text: &Text<'_>, _named: bool) -> Found {
    let mut found = Found::default();
    read_tap(&text.lines, &mut found);
    if found.is_empty() {
        match text.lines.iter().position(|line| line.trim() == "✖ failing tests:") {
            Some(at) => read_failing_section(&text.lines[at + 1..], &mut found),
            None => read_spec_tree(&text.lines, &mut found),
        }
    }
    found.without_parents(SEPARATOR)
}

/// The depth of a line indented by `unit` spaces a level.
fn depth(line: &str, unit: usize) -> usize {
    (line.len() - line.trim_start_matches(' ').len()) / unit
}

fn read_tap(lines: &[&str], found: &mut Found) {
    let mut suites: Vec<&str> = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        let level = depth(line, 4);
        if let Some(name) = trimmed.strip_prefix("# Subtest: ") {
            suites.truncate(level);
            suites.push(name);
        } else if let Some(rest) = trimmed.strip_prefix("not ok ") {
            if let Some(name) = tap_name(rest) {
                let mut path: Vec<&str> = suites.iter().take(level).copied().collect();
                path.push(name);
                found.test(&path.join(SEPARATOR), trimmed);
            }
            suites.truncate(level);
        } else if trimmed.starts_with("ok ") {
            suites.truncate(level);
        }
    }
}

/// The test of a `not ok` line after `not ok `: `2 - subtracts` → `subtracts`; none for a
/// `# SKIP` or `# TODO` test.
fn tap_name(rest: &str) -> Option<&str> {
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let rest = &rest[digits..];
    let name = rest.strip_prefix(" - ").unwrap_or(rest).trim();
    let directive = name.rsplit_once(" # ").map(|(_, directive)| directive.to_uppercase());
    if directive
        .is_some_and(|directive| directive.starts_with("SKIP") || directive.starts_with("TODO"))
    {
        return None;
    }
    Some(name)
}

/// The spec reporter's closing section: `✖ subtracts (1.649192ms)` lines at its left edge.
fn read_failing_section(lines: &[&str], found: &mut Found) {
    for line in lines {
        if let Some(name) = line.strip_prefix("✖ ") {
            found.test(without_duration(name), line);
        }
    }
}

/// The spec reporter's tree: `▶ math` opens a suite, `  ✖ subtracts (1.6ms)` inside it
/// failed (two spaces a level).
fn read_spec_tree(lines: &[&str], found: &mut Found) {
    let mut suites: Vec<&str> = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        let level = depth(line, 2);
        if let Some(name) = trimmed.strip_prefix("▶ ") {
            suites.truncate(level);
            suites.push(without_duration(name));
        } else if let Some(name) = trimmed.strip_prefix("✖ ") {
            let mut path: Vec<&str> = suites.iter().take(level).copied().collect();
            path.push(without_duration(name));
            found.test(&path.join(SEPARATOR), trimmed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(output: &str) -> Vec<String> {
        read(&Text::new(output), true).tests.into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn skipped_and_todo_tests_are_not_failing_and_suites_nest() {
        let tap = "TAP version 13
# Subtest: outer
    # Subtest: inner
        # Subtest: deep
        not ok 1 - deep
        # Subtest: later
        not ok 2 - later # TODO not written yet
        1..2
    not ok 1 - inner
    # Subtest: skipped
    not ok 2 - skipped # SKIP flaky on CI
    1..2
not ok 1 - outer
# Subtest: top
not ok 2 - top
1..2
";
        assert_eq!(failing(tap), ["outer > inner > deep", "top"]);
    }

    #[test]
    fn the_spec_tree_names_tests_by_their_suites_when_the_closing_section_is_cut() {
        let spec = "▶ math\n  ▶ nested\n    ✖ deep (0.3ms)\n  ✖ nested (0.5ms)\n  ✔ adds (0.1ms)\n✖ math (1.2ms)\nℹ fail 1\n";
        assert_eq!(failing(spec), ["math > nested > deep"]);
    }
}
