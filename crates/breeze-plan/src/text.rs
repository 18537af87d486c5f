//! Small text helpers: comments, display width, truncation.

/// Removes `<!-- ... -->` comments and collapses whitespace (for titles).
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Columns a character takes in a terminal: 2 for East Asian wide characters.
fn char_width(c: char) -> usize {
    let c = c as u32;
    let wide = matches!(c,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD);
    if wide { 2 } else { 1 }
}

/// Terminal columns a string takes.
pub(crate) fn width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Cuts `s` to at most `max` columns, ending in `…` when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Pads `s` with spaces to `columns` terminal columns.
pub(crate) fn pad(s: &str, columns: usize) -> String {
    let w = width(s);
    let mut out = s.to_owned();
    out.extend(std::iter::repeat_n(' ', columns.saturating_sub(w)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_truncation() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("完了"), 4);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("完了完了", 5), "完了…");
        assert_eq!(pad("完", 4), "完  ");
        assert_eq!(strip_comments("a <!-- advisor:required -->  b"), "a b");
    }
}
