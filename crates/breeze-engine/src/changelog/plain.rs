//! A plain-text changelog (`NEWS`, `CHANGES.txt` without headings): the line goes under an
//! "unreleased" line (`Changes in 1.3 (unreleased)`), else into a new `Unreleased` section
//! at the top — after the file's title when its first line is one.

use super::lines::{
    blank, file_marker, insert_section, insert_under, line_ending, list_marker, mentions_unreleased,
};

/// `text` (`None`: a new file) with `line` added as the first item under its unreleased
/// line; every other byte kept.
pub(super) fn add_entry(text: Option<&str>, line: &str) -> String {
    let Some(text) = text else {
        return format!("Unreleased\n\n- {line}\n");
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (eol, marker) = (line_ending(text), file_marker(&lines));
    if let Some(at) = lines.iter().position(|line| mentions_unreleased(line)) {
        return insert_under(&lines, at + 1, &marker, line, eol);
    }
    let section = format!("Unreleased{eol}{eol}{marker}{line}{eol}");
    let at = match title_end(&lines) {
        Some(mut at) => {
            while at < lines.len() && blank(lines[at]) {
                at += 1;
            }
            at
        }
        None => 0,
    };
    insert_section(&lines, at, &section, 1, eol)
}

/// The line after the file's title: a first line that names no version (no digit), is no
/// list item, and stands alone (a blank line or the end after it).
fn title_end(lines: &[&str]) -> Option<usize> {
    let first = lines.first()?;
    let alone = lines.get(1).is_none_or(|next| blank(next));
    let title =
        !blank(first) && list_marker(first).is_none() && !first.chars().any(|c| c.is_ascii_digit());
    (title && alone).then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_goes_under_the_unreleased_line() {
        let text =
            "hello NEWS\n\nChanges in 1.3 (unreleased)\n  * faster\n\nChanges in 1.2\n  * first\n";
        assert_eq!(add_entry(Some(text), "new"), text.replace("  * faster", "  * new\n  * faster"));
    }

    #[test]
    fn without_one_a_section_goes_after_the_title_or_at_the_top() {
        assert_eq!(
            add_entry(Some("hello NEWS\n\n1.2 (2024-01-01)\n  * first\n"), "new"),
            "hello NEWS\n\nUnreleased\n\n  * new\n\n1.2 (2024-01-01)\n  * first\n"
        );
        assert_eq!(
            add_entry(Some("1.2 (2024-01-01)\n- first\n"), "new"),
            "Unreleased\n\n- new\n\n1.2 (2024-01-01)\n- first\n",
            "a first line naming a version is no title"
        );
        assert_eq!(add_entry(None, "new"), "Unreleased\n\n- new\n");
        assert_eq!(add_entry(Some("NEWS"), "new"), "NEWS\n\nUnreleased\n\n- new\n");
    }
}
