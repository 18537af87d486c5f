//! Codex's `--output-schema` is sent to the model with `"strict": true`, which accepts
//! only a subset of JSON Schema: every object closed and listing all its properties as
//! required, no `oneOf`/`const`, no length or range bounds, and a `$ref` with no sibling
//! keywords (the API refuses `{"$ref": ..., "description": ...}` with "$ref cannot have
//! keywords {'description'}"). This turns our generated schemas into that form. Bounds
//! removed here are still enforced by breeze's own validation of the answer.
//!
//! Optional properties become required-but-nullable (strict mode's way to say "optional"),
//! and [`without_optional_nulls`] takes those nulls out of the answer again before breeze
//! validates it against the original schema.

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

/// The strict form of `schema`, as `codex exec --output-schema` needs it.
pub fn codex_strict_schema(schema: &Value) -> Value {
    strict(schema)
}

fn strict(schema: &Value) -> Value {
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
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let properties: Map<String, Value> = value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| {
                                let schema = strict(v);
                                let schema = if required.contains(&k.as_str()) {
                                    schema
                                } else {
                                    nullable(schema)
                                };
                                (k.clone(), schema)
                            })
                            .collect()
                    })
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

/// `schema` that also admits `null`.
fn nullable(schema: Value) -> Value {
    let null = Value::from("null");
    if let Value::Object(mut map) = schema {
        if !map.contains_key("$ref") && !map.contains_key("anyOf") {
            match map.get_mut("type") {
                Some(Value::String(kind)) if kind != "null" => {
                    let kind = Value::String(std::mem::take(kind));
                    map.insert("type".into(), Value::Array(vec![kind, null]));
                    return Value::Object(map);
                }
                Some(Value::Array(kinds)) => {
                    if !kinds.contains(&null) {
                        kinds.push(null);
                    }
                    return Value::Object(map);
                }
                _ => {}
            }
        }
        if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
            if !branches.iter().any(|b| b.get("type") == Some(&null)) {
                branches.push(serde_json::json!({"type": "null"}));
            }
            return Value::Object(map);
        }
        return serde_json::json!({"anyOf": [Value::Object(map), {"type": "null"}]});
    }
    schema
}

/// `answer` without the `null` members that stand for optional properties left out (see
/// [`codex_strict_schema`]), following `schema` (the original, non-strict one) through `$ref`s,
/// nested objects and arrays. Nulls of required properties are kept.
pub fn without_optional_nulls(answer: Value, schema: &Value) -> Value {
    strip(answer, schema, schema)
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/")) {
        Some(path) => {
            let mut target = root;
            for part in path.split('/') {
                match target.get(part) {
                    Some(next) => target = next,
                    None => return schema,
                }
            }
            resolve(target, root)
        }
        None => schema,
    }
}

fn strip(value: Value, schema: &Value, root: &Value) -> Value {
    let schema = resolve(schema, root);
    // A nullable wrapper: follow the one non-null branch.
    if let Some(branches) = schema.get("anyOf").or(schema.get("oneOf")).and_then(Value::as_array) {
        let non_null: Vec<&Value> = branches
            .iter()
            .filter(|b| resolve(b, root).get("type") != Some(&Value::from("null")))
            .collect();
        if non_null.len() == 1 {
            return strip(value, non_null[0], root);
        }
        return value;
    }
    match value {
        Value::Object(members) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (key, member) in members {
                if member.is_null() && !required.contains(&key.as_str()) {
                    continue;
                }
                let member = match properties.and_then(|p| p.get(&key)) {
                    Some(sub) => strip(member, sub, root),
                    None => member,
                };
                out.insert(key, member);
            }
            Value::Object(out)
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => {
                Value::Array(items.into_iter().map(|item| strip(item, item_schema, root)).collect())
            }
            None => Value::Array(items),
        },
        other => other,
    }
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
        // Optional properties are required but nullable; required ones are not nullable.
        let report = strict(MessageKind::WorkerReport.schema());
        let advisor_request = &report["properties"]["advisor_request"];
        assert!(
            advisor_request["anyOf"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!({"type": "null"})),
            "{advisor_request}"
        );
        assert_eq!(
            report["properties"]["status"],
            serde_json::json!({"$ref": "#/$defs/WorkerStatus"})
        );
        let advisor = strict(MessageKind::AdvisorResponse.schema());
        assert_eq!(
            advisor["properties"]["schema_version"]["enum"],
            serde_json::json!(["advisor-response.v1"])
        );
    }

    #[test]
    fn an_answer_in_strict_form_validates_against_the_original_schema() {
        let schema = MessageKind::WorkerReport.schema();
        let strict_schema = strict(schema);
        let mut answer = Map::new();
        for name in strict_schema["properties"].as_object().unwrap().keys() {
            answer.insert(name.clone(), Value::Null);
        }
        answer.insert("schema_version".into(), "worker-report.v1".into());
        answer.insert("status".into(), "completed".into());
        answer.insert("summary".into(), "did it".into());
        answer.insert(
            "self_review".into(),
            serde_json::json!([{"rule": "dod-verified", "verified": true, "evidence": "ran it"}]),
        );
        let cleaned = without_optional_nulls(Value::Object(answer), schema);
        assert!(cleaned.get("advisor_request").is_none(), "{cleaned}");
        let report: breeze_protocol::WorkerReport =
            breeze_protocol::validate::parse(cleaned).expect("valid once the nulls are out");
        assert_eq!(report.summary, "did it");
    }
}
