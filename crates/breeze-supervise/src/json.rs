//! Finding a role's result in its stdout: the last top-level JSON object, which may be
//! pretty-printed over many lines and surrounded by prose.

use serde_json::Value;

/// The last top-level JSON object in `text` (a role's stdout), as [`Outcome::last_json`]
/// reports it. Prose around it and pretty-printing are fine; malformed or truncated JSON
/// is skipped. Bound the input yourself: [`Supervisor`] passes the last
/// [`Supervisor::json_window`] bytes.
///
/// [`Outcome::last_json`]: crate::Outcome::last_json
/// [`Supervisor`]: crate::Supervisor
/// [`Supervisor::json_window`]: crate::Supervisor::json_window
///
/// Scans left to right: at each `{` it tries to parse one JSON value; a success is a
/// top-level object and the scan continues after it (so objects nested inside it are not
/// candidates), a failure moves on to the next `{`. Prose such as `use {braces}` or a
/// truncated object therefore never hides a later complete object. Cost: each failed parse
/// stops at the first syntax error or at serde_json's nesting limit (128), so the scan is
/// linear in practice and bounded by `128 × len` in the worst case.
pub fn last_json_object(text: &[u8]) -> Option<Value> {
    let mut last = None;
    let mut pos = 0;
    while let Some(offset) = text[pos..].iter().position(|&b| b == b'{') {
        let start = pos + offset;
        let mut values = serde_json::Deserializer::from_slice(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                // Starting at `{`, a successful parse is always an object.
                last = Some(value);
                pos = start + values.byte_offset();
            }
            _ => pos = start + 1,
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn find(text: &str) -> Option<Value> {
        last_json_object(text.as_bytes())
    }

    #[test]
    fn pretty_printed_object_surrounded_by_prose() {
        let text = "I fixed the bug. Here is my report:\n```json\n{\n  \"status\": \"completed\",\n  \"summary\": \"use {x} not }\",\n  \"nested\": {\"a\": [1, {\"b\": 2}]}\n}\n```\nThanks!";
        assert_eq!(
            find(text),
            Some(
                json!({"status": "completed", "summary": "use {x} not }", "nested": {"a": [1, {"b": 2}]}})
            )
        );
    }

    #[test]
    fn the_last_of_several_top_level_objects_wins_and_nested_ones_do_not() {
        let text = "{\"type\":\"start\"}\n{\"type\":\"result\",\"inner\":{\"type\":\"inner\"}}\n";
        assert_eq!(find(text), Some(json!({"type": "result", "inner": {"type": "inner"}})));
    }

    #[test]
    fn malformed_or_truncated_json_does_not_hide_an_earlier_or_later_object() {
        assert_eq!(
            find("{\"a\":1}\n{\"status\": \"completed\", \"summary\": \"cut"),
            Some(json!({"a": 1}))
        );
        assert_eq!(find("Note: { opens a block.\n{\"a\":2}"), Some(json!({"a": 2})));
        assert_eq!(find("{\"status\": \"completed\", \"summary\": \"cut"), None);
        assert_eq!(find("no json here, only [1, 2] and \"strings\""), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn deep_unterminated_nesting_is_bounded() {
        let text = "{\"a\":".repeat(20_000);
        assert_eq!(find(&text), None);
    }
}
