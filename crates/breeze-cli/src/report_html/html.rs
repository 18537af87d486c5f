//! Text made safe for the page: every text from run files (titles, reasons, paths, role
//! output) goes through [`esc`] before it is written into HTML or SVG, and words used as
//! CSS classes through [`css_word`]. The page and both drawings use them.

/// `text` safe in HTML text and in quoted attributes; terminal controls are shown escaped
/// (`\x1b`) as everywhere breeze shows role text.
pub fn esc(text: &str) -> String {
    let text = crate::escape::escape_controls(text);
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A state as a CSS class word (letters, digits, `-`).
pub fn css_word(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect()
}
