//! The little Markdown the reader needs: lines, fences, headings, list items,
//! comments.

use std::borrow::Cow;

/// One line of the file, without its line break.
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of the line in the file.
    pub start: usize,
    pub text: &'a str,
}

/// Splits `text` into lines (`\n` or `\r\n`), dropping a leading byte-order mark from
/// the first line (its offset still counts).
pub(crate) fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        let (skip, body) = match body.strip_prefix('\u{feff}') {
            Some(rest) if i == 0 => ('\u{feff}'.len_utf8(), rest),
            _ => (0, body),
        };
        out.push(Line { number: i + 1, start: start + skip, text: body });
        start += raw.len();
    }
    out
}

/// An opening or closing code fence: (fence character, length).
pub(crate) fn fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    for ch in ['`', '~'] {
        let n = t.len() - t.trim_start_matches(ch).len();
        if n >= 3 {
            return Some((ch, n));
        }
    }
    None
}

/// Whether `line` closes a fence opened by `open`.
pub(crate) fn closes_fence(line: &str, open: (char, usize)) -> bool {
    fence(line).is_some_and(|(c, n)| {
        c == open.0 && n >= open.1 && line.trim().trim_start_matches(c).is_empty()
    })
}

/// An ATX heading: (level, text, where the text ends in `line`). A closing
/// sequence of `#` is not part of the text.
pub(crate) fn heading(line: &str) -> Option<(usize, &str, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.len() - t.trim_start_matches('#').len();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let lead = rest.len() - rest.trim_start().len();
    let text = rest.trim();
    let without_closing = text.trim_end_matches('#');
    let text = if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        without_closing.trim_end()
    } else {
        text
    };
    let start = indent + level + lead;
    Some((level, text, start + text.len()))
}

/// A list item: `- x`, `* x`, `+ x`, `1. x`, `1) x`.
pub(crate) struct ListItem<'a> {
    /// Columns before the bullet.
    pub indent: usize,
    /// `Some(true)` for `[x]`, `Some(false)` for `[ ]`, `None` without a box.
    pub checked: Option<bool>,
    /// The item text after the bullet and box.
    pub body: &'a str,
    /// Byte offset of `body` in the line.
    pub body_start: usize,
}

/// Reads `line` as a list item, if it is one.
pub(crate) fn list_item(line: &str) -> Option<ListItem<'_>> {
    let indent = line.len() - line.trim_start().len();
    let t = &line[indent..];
    let after_bullet = if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 9 {
            return None;
        }
        t[digits..].strip_prefix(['.', ')'])?
    };
    if !(after_bullet.is_empty() || after_bullet.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = after_bullet.trim_start();
    let (checked, body) = match rest.get(..3) {
        Some("[ ]") => (Some(false), &rest[3..]),
        Some("[x]" | "[X]") => (Some(true), &rest[3..]),
        _ => (None, rest),
    };
    let body_trimmed = body.trim_start();
    let body_start = line.len() - body_trimmed.len();
    Some(ListItem { indent, checked, body: body_trimmed.trim_end(), body_start })
}

/// `s` with the insides of `<!-- … -->` comments (and an unclosed one to the end)
/// replaced by spaces: same length, same offsets.
pub(crate) fn blank_comments(s: &str) -> Cow<'_, str> {
    if !s.contains("<!--") {
        return Cow::Borrowed(s);
    }
    let mut bytes = s.as_bytes().to_vec();
    let mut from = 0;
    while let Some(pos) = s[from..].find("<!--") {
        let start = from + pos;
        let end = s[start..].find("-->").map_or(s.len(), |e| start + e + 3);
        bytes[start..end].fill(b' ');
        from = end;
    }
    // Only whole characters were replaced, by ASCII spaces.
    Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| " ".repeat(s.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_and_their_text() {
        assert_eq!(heading("### 1.1 Foo ##"), Some((3, "1.1 Foo", 11)));
        assert_eq!(heading("## Phase 2 `cc:TODO`"), Some((2, "Phase 2 `cc:TODO`", 20)));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    # code"), None);
        assert_eq!(heading("# C#"), Some((1, "C#", 4)));
    }

    #[test]
    fn list_items() {
        let item = list_item("  - [ ] 1.1 text `cc:TODO`").unwrap();
        assert_eq!((item.indent, item.checked, item.body), (2, Some(false), "1.1 text `cc:TODO`"));
        assert_eq!(item.body_start, 8);
        assert_eq!(list_item("- [x] done").unwrap().checked, Some(true));
        assert_eq!(list_item("* plain").unwrap().checked, None);
        assert_eq!(list_item("12. twelfth").unwrap().body, "twelfth");
        assert!(list_item("-no space").is_none());
        assert!(list_item("1.2 not a list").is_none());
    }

    #[test]
    fn comments_are_blanked_in_place() {
        let s = "a <!-- cc:WIP のタスク --> b";
        let blanked = blank_comments(s);
        assert_eq!(blanked.len(), s.len());
        assert!(!blanked.contains("cc:"));
        assert!(blanked.ends_with(" b"));
        assert_eq!(blank_comments("x <!-- open"), "x          ");
    }
}
