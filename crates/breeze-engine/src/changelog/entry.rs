//! The text a worker's changelog entry lands as: one clean line, the same in the landing
//! commit and in the diff the reviewer is shown.

/// The text a worker's `changelog` entry lands as (after the list marker): its first
/// non-blank line, without leading list markers, control characters (a carriage return that
/// would hide the start of the line on a terminal, escape sequences) replaced by spaces.
/// `None` when that leaves nothing. The reviewer is shown this text; the landing adds
/// exactly it.
pub fn landing_line(entry: &str) -> Option<String> {
    let cleaned: String =
        entry.chars().map(|c| if c.is_control() && c != '\n' { ' ' } else { c }).collect();
    let mut line = cleaned.lines().map(str::trim).find(|line| !line.is_empty())?;
    // Every marker: what lands must read the same when it is cleaned again.
    while let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
        line = rest.trim();
    }
    (!line.is_empty()).then(|| line.to_string())
}
