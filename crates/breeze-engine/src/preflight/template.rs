//! `breeze init`'s plan template is marked: its first lines hold [`TEMPLATE_MARKER`] in an
//! HTML comment (invisible where Markdown is shown). While the marker is there the plan is
//! the template's placeholders, not the user's tasks: `breeze run` refuses it, `breeze plan`
//! warns, and `breeze draft` replaces it instead of adding to it.

/// What marks the template; the whole line is removed when the tasks are the user's.
pub const TEMPLATE_MARKER: &str = "<!-- breeze:template";

/// The line (from 1) holding the marker, and its text, if `text` has one.
pub fn template_marker(text: &str) -> Option<(usize, String)> {
    text.lines()
        .enumerate()
        .find(|(_, line)| line.trim_start().starts_with(TEMPLATE_MARKER))
        .map(|(index, line)| (index + 1, line.trim().to_string()))
}

/// The warning or refusal for a plan at `shown` (as the user named it) that still is the
/// template, with what to do.
pub fn template_message(shown: &str, line: usize) -> (String, String) {
    (
        format!("{shown} is breeze init's template (its placeholder tasks would be run)"),
        format!(
            "describe your tasks (or run `breeze draft \"GOAL\"`), then remove line {line} of {shown} (<!-- breeze:template … -->)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_found_on_its_line() {
        let text = "# Plans\n\n<!-- breeze:template: remove this line -->\n| Task |\n";
        assert_eq!(
            template_marker(text),
            Some((3, "<!-- breeze:template: remove this line -->".to_string()))
        );
        assert_eq!(template_marker("# Plans\n| Task |\n"), None);
        // Quoted in prose, it is not the marker.
        assert_eq!(template_marker("Remove the `<!-- breeze:template` line.\n"), None);
    }
}
