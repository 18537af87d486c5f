//! The JSON objects in an output: machine-readable reports (`go test -json` and nextest's
//! `libtest-json` lines, one object a line; `jest --json` on one line; mocha's `--reporter
//! json` over many) next to whatever else the command printed.

use serde_json::{Map, Value};

/// Every JSON object of `text` that starts a line (at its first column), in order. An
/// object cut by the output's limit, or text that only looks like JSON, is skipped.
pub(crate) fn objects(text: &str) -> Vec<Map<String, Value>> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let line_end = text[at..].find('\n').map_or(text.len(), |end| at + end);
        let mut next = line_end + 1;
        if text[at..].starts_with('{') {
            let line = &text[at..line_end];
            if let Ok(Value::Object(object)) = serde_json::from_str(line) {
                found.push(object);
            } else {
                // A report printed over many lines: read one object from here.
                let mut stream =
                    serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
                if let Some(Ok(Value::Object(object))) = stream.next() {
                    found.push(object);
                    let end = at + stream.byte_offset();
                    next = text[end..].find('\n').map_or(text.len(), |newline| end + newline + 1);
                }
            }
        }
        at = next;
    }
    found
}

/// The string at `key` of `object`, if it is one.
pub(crate) fn string<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

/// The objects in the array at `key` of `object`.
pub(crate) fn array<'a>(
    object: &'a Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a Map<String, Value>> {
    object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// The strings in the array at `key` of `object`.
pub(crate) fn array_strings<'a>(object: &'a Map<String, Value>, key: &str) -> Vec<&'a str> {
    object
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_one_a_line_and_over_many_lines() {
        let text = "noise\n{\"Action\":\"fail\",\"Test\":\"TestX\"}\n{\n  \"stats\": {\"failures\": 1},\n  \"failures\": []\n}\n{ not json\n{\"cut\": ";
        let found = objects(text);
        assert_eq!(found.len(), 2);
        assert_eq!(string(&found[0], "Action"), Some("fail"));
        assert!(found[1].contains_key("stats"));
    }
}
