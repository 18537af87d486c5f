//! Codex's `--output-schema` is sent to the model with `"strict": true`, which accepts
//! only a subset of JSON Schema: every object closed and listing all its properties as
//! required, no `oneOf`/`const`, no length or range bounds, and a `$ref` with no sibling
//! keywords (the API refuses `{"$ref": ..., "description": ...}` with "$ref cannot have
//! keywords {'description'}"). This turns our generated schemas into that form. Bounds
//! removed here are still enforced by breeze's own validation of the answer.

use serde_json::{Map, Value};

/// Keywords strict mode rejects; breeze validates them itself afterwards.
const UNSUPPORTED: &[&str] = &[
    "$schema",
    "$id",
    "format",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "default",
    "minProperties",
    "maxProperties",
];

/// The strict form of `schema`.
pub fn strict(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(strict_object(map)),
        Value::Array(items) => Value::Array(items.iter().map(strict).collect()),
        other => other.clone(),
    }
}

fn strict_object(map: &Map<String, Value>) -> Map<String, Value> {
    // A reference stands alone: its target carries the description and the constraints.
    if let Some(reference) = map.get("$ref") {
        return Map::from_iter([("$ref".to_owned(), reference.clone())]);
    }
    let mut out = Map::new();
    for (key, value) in map {
        if UNSUPPORTED.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            "oneOf" => {
                out.insert("anyOf".into(), strict(value));
            }
            "const" => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            "properties" => {
                let properties: Map<String, Value> = value
                    .as_object()
                    .map(|props| props.iter().map(|(k, v)| (k.clone(), strict(v))).collect())
                    .unwrap_or_default();
                out.insert(
                    "required".into(),
                    Value::Array(properties.keys().cloned().map(Value::String).collect()),
                );
                out.insert("properties".into(), Value::Object(properties));
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            "required" | "additionalProperties" if map.contains_key("properties") => {}
            "additionalProperties" => {
                // An open map cannot be expressed; close it.
                out.insert(key.clone(), Value::Bool(false));
            }
            _ => {
                out.insert(key.clone(), strict(value));
            }
        }
    }
    if out.get("type") == Some(&Value::from("object")) && !out.contains_key("properties") {
        out.insert("properties".into(), Value::Object(Map::new()));
        out.insert("required".into(), Value::Array(Vec::new()));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::MessageKind;

    fn walk(value: &Value, visit: &mut impl FnMut(&Map<String, Value>)) {
        match value {
            Value::Object(map) => {
                visit(map);
                map.values().for_each(|v| walk(v, visit));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
            _ => {}
        }
    }

    #[test]
    fn role_answer_schemas_become_strict() {
        for kind in
            [MessageKind::AdvisorResponse, MessageKind::ReviewResult, MessageKind::WorkerReport]
        {
            let schema = strict(kind.schema());
            walk(&schema, &mut |map| {
                for keyword in UNSUPPORTED.iter().chain(&["oneOf", "const"]) {
                    assert!(!map.contains_key(*keyword), "{kind}: {keyword} left in {map:?}");
                }
                if map.contains_key("$ref") {
                    assert_eq!(map.len(), 1, "{kind}: $ref with sibling keywords: {map:?}");
                }
                if let Some(Value::Object(props)) = map.get("properties") {
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{kind}"
                    );
                    let required: Vec<&str> = map["required"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_str)
                        .collect();
                    for name in props.keys() {
                        assert!(required.contains(&name.as_str()), "{kind}: {name} not required");
                    }
                }
            });
        }
        let review = strict(MessageKind::ReviewResult.schema());
        assert_eq!(review["properties"]["verdict"], serde_json::json!({"$ref": "#/$defs/Verdict"}));
        assert_eq!(
            review["$defs"]["Verdict"]["anyOf"][0]["enum"],
            serde_json::json!(["APPROVE"]),
            "the referenced definition keeps its content"
        );
        let advisor = strict(MessageKind::AdvisorResponse.schema());
        assert_eq!(
            advisor["properties"]["schema_version"]["enum"],
            serde_json::json!(["advisor-response.v1"])
        );
    }
}
