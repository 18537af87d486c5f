//! Long texts (diffs, logs) cut to a size an agent's context can take, saying so.

/// `text` at most `max_bytes` long, keeping its start (`keep_end`: its end), with a line
/// saying what was cut and how to see all of it.
pub fn bounded(text: &str, max_bytes: usize, keep_end: bool, whole: &str) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let shown = if keep_end {
        let mut start = text.len() - max_bytes;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        &text[start..]
    } else {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        &text[..end]
    };
    let which = if keep_end { "last" } else { "first" };
    let note = format!(
        "[cut: showing the {which} {} of {} bytes; ask again with a larger max_bytes, or run `{whole}` in a terminal]",
        shown.len(),
        text.len()
    );
    if keep_end { format!("{note}\n{shown}") } else { format!("{shown}\n{note}\n") }
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn a_short_text_is_kept_whole() {
        assert_eq!(bounded("abc", 10, false, "breeze diff 1"), "abc");
    }

    #[test]
    fn a_long_text_keeps_its_start_and_says_it_was_cut() {
        let text = bounded("héllo world", 3, false, "breeze diff 1");
        assert!(text.starts_with("h\u{e9}\n"), "{text}");
        assert!(text.contains("showing the first 3 of 12 bytes"), "{text}");
        assert!(text.contains("`breeze diff 1`"), "{text}");
    }

    #[test]
    fn a_long_log_keeps_its_end() {
        let text = bounded("one\ntwo\nthree", 5, true, "breeze logs 1");
        assert!(text.ends_with("\nthree"), "{text}");
        assert!(text.starts_with("[cut: showing the last 5 of 13 bytes"), "{text}");
    }
}
