//! What the reStructuredText and plain-text changelogs share: list markers, line endings,
//! the "Unreleased" line, and putting an item under the line that opens a section. Every
//! function inserts; none rewrites a line the file has.

/// Whether `line` holds only spaces (or nothing).
pub(super) fn blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The list marker `line` starts with — its indentation, the bullet (`-`, `*`, `+`) and the
/// spaces after it (`-   ` in a pallets changelog) — when it is a list item.
pub(super) fn list_marker(line: &str) -> Option<&str> {
    let body = line.trim_start_matches([' ', '\t']);
    let indent = line.len() - body.len();
    let bullet = body.chars().next().filter(|c| matches!(c, '-' | '*' | '+'))?;
    let after = &body[bullet.len_utf8()..];
    let text = after.trim_start_matches([' ', '\t']);
    let spaces = after.len() - text.len();
    (spaces > 0 && !blank(text)).then(|| &line[..indent + 1 + spaces])
}

/// The marker of the file's first list item, else `- `.
pub(super) fn file_marker(lines: &[&str]) -> String {
    lines.iter().find_map(|line| list_marker(line)).unwrap_or("- ").to_string()
}

/// The file's line ending: `\r\n` when its first line ends so, else `\n`.
pub(super) fn line_ending(text: &str) -> &'static str {
    match text.split_inclusive('\n').next() {
        Some(first) if first.ends_with("\r\n") => "\r\n",
        _ => "\n",
    }
}

/// The words of `line`, lower-cased (letters and digits; everything else separates).
fn words(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// Whether `line` says "unreleased" among its words (`Unreleased`, `[Unreleased]`,
/// `Version 2.0 (unreleased)`), outside a list item or an indented block.
pub(super) fn mentions_unreleased(line: &str) -> bool {
    !line.starts_with([' ', '\t'])
        && list_marker(line).is_none()
        && words(line).any(|word| word == "unreleased")
}

/// Whether `line` is only the word "unreleased" (any case, in brackets, with a colon).
pub(super) fn is_unreleased_line(line: &str) -> bool {
    mentions_unreleased(line) && words(line).count() == 1
}

/// `lines` with the item `marker` + `text` put first in the section whose opening line(s)
/// end before line `at`: before the section's first list item when the blank lines after
/// the opening lead to one (with that item's marker), else after one blank line, as a list
/// of its own (with `marker`). Every line of the file is kept as it was.
pub(super) fn insert_under(
    lines: &[&str],
    at: usize,
    marker: &str,
    text: &str,
    eol: &str,
) -> String {
    let mut next = at;
    while next < lines.len() && blank(lines[next]) {
        next += 1;
    }
    if let Some(item_marker) = lines.get(next).and_then(|line| list_marker(line)) {
        let item = format!("{item_marker}{text}{eol}");
        return [&lines[..next].concat(), item.as_str(), &lines[next..].concat()].concat();
    }
    let item = format!("{marker}{text}{eol}");
    if lines.get(at).is_some_and(|line| blank(line)) {
        // Opening, blank line, the item, and a blank line before what followed.
        let after = if lines.get(at + 1).is_some_and(|line| !blank(line)) { eol } else { "" };
        let head = lines[..=at].concat();
        return [head.as_str(), item.as_str(), after, &lines[at + 1..].concat()].concat();
    }
    let mut head = lines[..at].concat();
    if !head.is_empty() && !head.ends_with('\n') {
        head.push_str(eol);
    }
    let after = if at < lines.len() { eol } else { "" };
    [head.as_str(), eol, item.as_str(), after, &lines[at..].concat()].concat()
}

/// `lines` with `section` put before line `at`, followed by `gap` blank lines when
/// something comes after it; at the end of the file, after one blank line.
pub(super) fn insert_section(
    lines: &[&str],
    at: usize,
    section: &str,
    gap: usize,
    eol: &str,
) -> String {
    let mut head = lines[..at].concat();
    if at < lines.len() {
        return [head, section.to_string(), eol.repeat(gap.max(1)), lines[at..].concat()].concat();
    }
    if !head.is_empty() && !head.ends_with('\n') {
        head.push_str(eol);
    }
    if !head.is_empty()
        && !head.ends_with(&format!("{eol}{eol}"))
        && !lines.iter().all(|l| blank(l))
    {
        head.push_str(eol);
    }
    head + section
}

/// How many blank lines come right before line `at` (after some text).
pub(super) fn blank_lines_before(lines: &[&str], at: usize) -> usize {
    let blanks = lines[..at].iter().rev().take_while(|line| blank(line)).count();
    if blanks == at { 0 } else { blanks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_markers_keep_their_indentation_and_spacing() {
        assert_eq!(list_marker("-   Drop support\n"), Some("-   "));
        assert_eq!(list_marker("  * noteworthy\n"), Some("  * "));
        assert_eq!(list_marker("- \n"), None, "a marker without text is no item");
        assert_eq!(list_marker("-----\n"), None);
        assert_eq!(list_marker("Version 1\n"), None);
    }

    #[test]
    fn unreleased_is_a_word_of_a_line_outside_lists() {
        assert!(is_unreleased_line("Unreleased\n"));
        assert!(is_unreleased_line("[Unreleased]:\n"));
        assert!(mentions_unreleased("Version 2.0 (unreleased)\n"));
        assert!(!is_unreleased_line("Version 2.0 (unreleased)\n"));
        assert!(!mentions_unreleased("- fix an unreleased bug\n"));
        assert!(!mentions_unreleased("Unreleasedness\n"));
    }
}
