//! A reStructuredText changelog (`CHANGES.rst`): titles underlined (or over- and
//! underlined) with one punctuation character. The line goes under the "Unreleased" line
//! or heading (`Version 2.3.0\n-------------\n\nUnreleased\n\n-   …`, pallets' style), else
//! into a new `Unreleased` section in the style of the file's first version heading, before
//! it.

use super::lines::{
    blank, blank_lines_before, file_marker, insert_section, insert_under, is_unreleased_line,
    line_ending, list_marker, mentions_unreleased,
};

/// The section title breeze makes.
const UNRELEASED: &str = "Unreleased";

/// A section title and its adornment.
struct Heading {
    /// The first line: the overline, else the title.
    first: usize,
    /// The title line.
    title: usize,
    /// The adornment character (`-`, `=`, `~`, …).
    adornment: char,
    /// Whether the title has an overline too.
    overline: bool,
}

/// The adornment character of `line`, when it is one character repeated (three or more
/// times) from reStructuredText's punctuation.
fn adornment(line: &str) -> Option<char> {
    let line = line.trim_end();
    let first = line.chars().next()?;
    let punctuation = "=-~^\"'`#*+:._<>";
    (line.chars().count() >= 3 && punctuation.contains(first) && line.chars().all(|c| c == first))
        .then_some(first)
}

/// Every heading of the file, in order: a title (not indented, not a list item) with an
/// underline at least as long, optionally an overline of the same character.
fn headings(lines: &[&str]) -> Vec<Heading> {
    let mut found = Vec::new();
    for title in 0..lines.len().saturating_sub(1) {
        let text = lines[title].trim_end();
        if blank(text)
            || text.starts_with([' ', '\t'])
            || list_marker(text).is_some()
            || adornment(text).is_some()
        {
            continue;
        }
        let Some(under) = adornment(lines[title + 1]) else { continue };
        if lines[title + 1].trim_end().chars().count() < text.chars().count() {
            continue;
        }
        let overline = title > 0 && adornment(lines[title - 1]) == Some(under);
        let first = if overline { title - 1 } else { title };
        found.push(Heading { first, title, adornment: under, overline });
    }
    found
}

/// Whether `text` has a reStructuredText heading.
pub(super) fn has_heading(text: &str) -> bool {
    !headings(&text.split_inclusive('\n').collect::<Vec<_>>()).is_empty()
}

/// `text` (`None`: a new file) with `line` added as the first item of its unreleased
/// section; every other byte kept.
pub(super) fn add_entry(text: Option<&str>, line: &str) -> String {
    let Some(text) = text else {
        return format!("Changelog\n=========\n\n{UNRELEASED}\n----------\n\n- {line}\n");
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (eol, marker) = (line_ending(text), file_marker(&lines));
    let headings = headings(&lines);
    if let Some(after) = unreleased_opening(&lines, &headings) {
        return insert_under(&lines, after, &marker, line, eol);
    }
    let item = format!("{marker}{line}{eol}");
    let version = headings.iter().position(|h| has_digit(lines[h.title]));
    if let Some(k) = version {
        let heading = &headings[k];
        let section =
            format!("{}{eol}{item}", title_block(heading.adornment, heading.overline, eol));
        let gap = match blank_lines_before(&lines, heading.first) {
            0 => headings.get(k + 1).map_or(1, |next| blank_lines_before(&lines, next.first)),
            gap => gap,
        };
        return insert_section(&lines, heading.first, &section, gap, eol);
    }
    // No version yet: after the document's title, else at the top.
    let (at, adornment) = match headings.first() {
        Some(title) => {
            let mut at = title.title + 2;
            while at < lines.len() && blank(lines[at]) {
                at += 1;
            }
            (at, if title.adornment == '-' { '~' } else { '-' })
        }
        None => (0, '-'),
    };
    let section = format!("{}{eol}{item}", title_block(adornment, false, eol));
    insert_section(&lines, at, &section, 1, eol)
}

/// `Unreleased` with its underline (and overline) of `adornment`.
fn title_block(adornment: char, overline: bool, eol: &str) -> String {
    let bar = adornment.to_string().repeat(UNRELEASED.len());
    let over = if overline { format!("{bar}{eol}") } else { String::new() };
    format!("{over}{UNRELEASED}{eol}{bar}{eol}")
}

/// The line after the file's first "unreleased" opening: a heading whose title says
/// unreleased (after its underline), or a line that is only "Unreleased".
fn unreleased_opening(lines: &[&str], headings: &[Heading]) -> Option<usize> {
    lines.iter().enumerate().find_map(|(at, line)| {
        if let Some(heading) = headings.iter().find(|h| h.title == at) {
            return mentions_unreleased(line).then_some(heading.title + 2);
        }
        let adornment_of_heading = headings.iter().any(|h| h.title + 1 == at || h.first == at);
        (!adornment_of_heading && is_unreleased_line(line)).then_some(at + 1)
    })
}

fn has_digit(line: &str) -> bool {
    line.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top of itsdangerous's `CHANGES.rst`.
    const PALLETS: &str = "Version 2.3.0\n-------------\n\nUnreleased\n\n-   Drop support for Python 3.8.\n\n\nVersion 2.2.0\n-------------\n\nReleased 2024-04-16\n\n-   Drop support for Python 3.7.\n";

    #[test]
    fn the_line_goes_first_under_an_unreleased_line_with_the_files_marker() {
        assert_eq!(
            add_entry(Some(PALLETS), "Sign with SHA-256."),
            PALLETS.replace(
                "\n-   Drop support for Python 3.8.",
                "\n-   Sign with SHA-256.\n-   Drop support for Python 3.8."
            )
        );
    }

    #[test]
    fn an_empty_unreleased_section_gets_a_list() {
        let text = "Version 2.3.0\n-------------\n\nUnreleased\n\n\nVersion 2.2.0\n-------------\n\n-   old\n";
        assert_eq!(
            add_entry(Some(text), "new"),
            "Version 2.3.0\n-------------\n\nUnreleased\n\n-   new\n\nVersion 2.2.0\n-------------\n\n-   old\n"
        );
    }

    #[test]
    fn a_heading_that_says_unreleased_takes_the_line_under_its_underline() {
        let text = "Changelog\n=========\n\n2.0 (unreleased)\n----------------\n\n* a\n\n1.0\n---\n\n* b\n";
        assert_eq!(add_entry(Some(text), "new"), text.replace("\n* a\n", "\n* new\n* a\n"));
    }

    #[test]
    fn without_unreleased_a_section_in_the_files_style_goes_before_the_first_version() {
        let released = "Version 2.2.0\n-------------\n\nReleased 2024-04-16\n\n-   old\n\n\nVersion 2.1.0\n-------------\n\n-   older\n";
        assert_eq!(
            add_entry(Some(released), "new"),
            format!("Unreleased\n----------\n\n-   new\n\n\n{released}"),
            "the gap between sections is the file's own"
        );
        let titled = "=========\nChangelog\n=========\n\n=====\n1.0.0\n=====\n\n* first\n";
        assert_eq!(
            add_entry(Some(titled), "new"),
            "=========\nChangelog\n=========\n\n==========\nUnreleased\n==========\n\n* new\n\n=====\n1.0.0\n=====\n\n* first\n"
        );
    }

    #[test]
    fn a_file_without_versions_gets_the_section_after_its_title() {
        assert_eq!(
            add_entry(Some("Changes\n=======\n"), "new"),
            "Changes\n=======\n\nUnreleased\n----------\n\n- new\n"
        );
        assert_eq!(add_entry(Some(""), "new"), "Unreleased\n----------\n\n- new\n");
        assert_eq!(
            add_entry(None, "new"),
            "Changelog\n=========\n\nUnreleased\n----------\n\n- new\n"
        );
    }

    #[test]
    fn windows_line_endings_stay_windows_line_endings() {
        let text = "Unreleased\r\n\r\n- a\r\n";
        assert_eq!(add_entry(Some(text), "b"), "Unreleased\r\n\r\n- b\r\n- a\r\n");
    }
}
