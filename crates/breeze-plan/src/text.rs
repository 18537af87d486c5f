//! Small text helpers: comments, display width, truncation.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

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

/// Terminal columns a string takes (East Asian wide characters take 2).
pub(crate) fn width(s: &str) -> usize {
    s.width()
}

/// Cuts `s` to at most `max` columns, ending in `…` when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
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
