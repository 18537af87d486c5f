//! Text from role processes (stderr tails, report fields, titles echoed back) reaches the
//! user's terminal only with its control characters shown escaped, never interpreted: an
//! agent must not be able to fake a green "landed" line, rename the window or hide text.

use std::borrow::Cow;

/// Whether `c` would be interpreted by a terminal (or reorder what it shows) rather than
/// printed: C0 controls but tab and newline, DEL, C1 controls, and bidirectional overrides.
fn is_dangerous(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character written as an escape (`\x1b`, `\r`, `\u{202e}`).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_dangerous) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if is_dangerous(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_dangerous(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_interpreted() {
        assert_eq!(escape_controls("plain ✓ text\n\tok"), "plain ✓ text\n\tok");
        assert_eq!(escape_controls("\x1b[32m● landed\x1b[0m"), "\\x1b[32m● landed\\x1b[0m");
        assert_eq!(escape_controls("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(escape_controls("over\rwrite"), "over\\rwrite");
        assert_eq!(escape_controls("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape_controls("\u{9b}31m"), "\\x9b31m");
    }
}
