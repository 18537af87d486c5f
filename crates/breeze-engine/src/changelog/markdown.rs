//! A Markdown changelog (`CHANGELOG.md`): the line goes first under its `## Unreleased`
//! heading, made before the first release heading when missing.

use super::entry::landing_line;

/// `text` (the changelog, or `None` when the file does not exist) with `entry` added as the
/// first item under its `Unreleased` heading, which is created (before the first release
/// heading, or after the title) when missing. Everything else is kept byte for byte. What
/// is added is `- ` and [`landing_line`] of `entry`.
pub fn add_unreleased(text: Option<&str>, entry: &str) -> String {
    let item = format!("- {}\n", landing_line(entry).unwrap_or_default());
    let Some(text) = text else {
        return format!("# Changelog\n\n## Unreleased\n\n{item}");
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if let Some(heading) = lines.iter().position(|line| is_unreleased(line)) {
        let mut at = heading + 1;
        // After the blank lines that follow the heading.
        while at < lines.len() && lines[at].trim().is_empty() {
            at += 1;
        }
        let mut out: String = lines[..at].concat();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&item);
        out.push_str(&lines[at..].concat());
        return out;
    }
    // No Unreleased section: one goes before the first release heading (`## …`), else at
    // the end.
    let section = format!("## Unreleased\n\n{item}\n");
    match lines.iter().position(|line| line.starts_with("## ")) {
        Some(first) => format!("{}{section}{}", lines[..first].concat(), lines[first..].concat()),
        None => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&section[..section.len() - 1]);
            out
        }
    }
}

/// Whether `text` has a Markdown heading (`# …`, `## …`).
pub(super) fn has_heading(text: &str) -> bool {
    text.lines().any(|line| {
        let rest = line.trim_start_matches('#');
        rest.len() < line.len() && line.len() - rest.len() <= 6 && rest.starts_with(' ')
    })
}

/// `## Unreleased`, `## [Unreleased]`, any heading level from 2, any case.
fn is_unreleased(line: &str) -> bool {
    let Some(rest) = line.trim_end().strip_prefix("##") else { return false };
    let title = rest.trim_start_matches('#').trim();
    let title = title.trim_start_matches('[').split(']').next().unwrap_or(title);
    title.eq_ignore_ascii_case("unreleased")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_goes_first_under_unreleased_and_nothing_else_changes() {
        let text = "# Changelog\n\n## [Unreleased]\n\n- older entry\n\n## 1.0.0\n\n- first\n";
        assert_eq!(
            add_unreleased(Some(text), "Add the parser\n(details)"),
            "# Changelog\n\n## [Unreleased]\n\n- Add the parser\n- older entry\n\n## 1.0.0\n\n- first\n"
        );
    }

    #[test]
    fn a_missing_unreleased_section_is_made_before_the_first_release() {
        let text = "# Changelog\n\nAll notable changes.\n\n## 1.0.0\n- first\n";
        assert_eq!(
            add_unreleased(Some(text), "- Add the parser"),
            "# Changelog\n\nAll notable changes.\n\n## Unreleased\n\n- Add the parser\n\n## 1.0.0\n- first\n"
        );
        assert_eq!(
            add_unreleased(Some("# Changelog\n"), "x"),
            "# Changelog\n\n## Unreleased\n\n- x\n"
        );
    }

    #[test]
    fn a_missing_file_is_created() {
        assert_eq!(add_unreleased(None, "x"), "# Changelog\n\n## Unreleased\n\n- x\n");
    }

    #[test]
    fn a_list_right_under_the_heading_stays_as_it_is() {
        assert_eq!(add_unreleased(Some("## Unreleased\n- a\n"), "b"), "## Unreleased\n- b\n- a\n");
    }
}
