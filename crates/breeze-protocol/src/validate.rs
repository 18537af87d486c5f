//! Validation of role messages: the JSON shape (against the generated schema) and the
//! rules a schema cannot say, each problem naming its field.
//!
//! The shape check is a small interpreter for the subset of JSON Schema that
//! schemars emits for our types (`$ref`, `type`, `const`, `enum`, `properties`,
//! `required`, `additionalProperties`, `items`, length and range bounds, `anyOf`,
//! `oneOf`, `allOf`). It reports every problem, not just the first, which is what
//! `breeze validate` and the engine's error records need.

use serde_json::{Map, Value};

use crate::ReasonCode;
use crate::kind::{Message, MessageKind};

/// One thing wrong with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: `executor_instructions[2]`, `gaps[0].severity`, or `(root)`.
    pub path: String,
    /// What is wrong, and what is allowed.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A message that did not validate: every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct InvalidMessage {
    /// The expected kind.
    pub kind: MessageKind,
    /// Everything wrong with it.
    pub problems: Vec<Problem>,
}

/// Validates `value` as a message of `kind`; an empty list means valid.
pub fn validate(kind: MessageKind, value: &Value) -> Vec<Problem> {
    let schema = kind.schema();
    let mut checker = ShapeChecker { root: schema, problems: Vec::new() };
    checker.check(schema, value, &mut Vec::new());
    let mut problems = checker.problems;
    semantic_rules(kind, value, "", &mut problems);
    problems
}

/// Validates and converts a JSON value into a typed message.
pub fn parse<T: Message>(value: Value) -> Result<T, InvalidMessage> {
    let problems = validate(T::KIND, &value);
    if !problems.is_empty() {
        return Err(InvalidMessage { kind: T::KIND, problems });
    }
    serde_json::from_value(value).map_err(|err| InvalidMessage {
        kind: T::KIND,
        problems: vec![Problem { path: "(root)".into(), message: err.to_string() }],
    })
}

/// Parses JSON text and validates it as a typed message.
pub fn parse_str<T: Message>(text: &str) -> Result<T, InvalidMessage> {
    let value: Value = serde_json::from_str(text).map_err(|err| InvalidMessage {
        kind: T::KIND,
        problems: vec![Problem { path: "(root)".into(), message: format!("not JSON: {err}") }],
    })?;
    parse(value)
}

/// A path segment while walking a value.
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn render_path(path: &[Segment<'_>]) -> String {
    if path.is_empty() {
        return "(root)".into();
    }
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

struct ShapeChecker<'s> {
    root: &'s Value,
    problems: Vec<Problem>,
}

impl<'s> ShapeChecker<'s> {
    fn report(&mut self, path: &[Segment<'_>], message: impl Into<String>) {
        self.problems.push(Problem { path: render_path(path), message: message.into() });
    }

    fn resolve(&self, schema: &'s Value) -> &'s Value {
        let mut schema = schema;
        // Follow `$ref` chains into `$defs` (schemars emits `#/$defs/Name`).
        for _ in 0..16 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { break };
            let Some(pointer) = reference.strip_prefix('#') else { break };
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => break,
            }
        }
        schema
    }

    /// Whether `value` satisfies `schema`, without recording problems.
    fn matches(&self, schema: &'s Value, value: &Value) -> bool {
        let mut probe = ShapeChecker { root: self.root, problems: Vec::new() };
        probe.check(schema, value, &mut Vec::new());
        probe.problems.is_empty()
    }

    fn check<'v>(&mut self, schema: &'s Value, value: &'v Value, path: &mut Vec<Segment<'v>>) {
        let schema = self.resolve(schema);
        let Some(rules) = schema.as_object() else {
            if schema == &Value::Bool(false) {
                self.report(path, "is not allowed here");
            }
            return;
        };

        if let Some(expected) = rules.get("const") {
            if value != expected {
                self.report(path, format!("must be {expected}, found {}", brief(value)));
            }
            return;
        }
        if let Some(Value::Array(options)) = rules.get("enum") {
            if !options.contains(value) {
                self.report(
                    path,
                    format!("must be one of {}, found {}", list(options), brief(value)),
                );
            }
            return;
        }
        if let Some(Value::Array(branches)) = rules.get("anyOf").or_else(|| rules.get("oneOf")) {
            self.check_alternatives(branches, value, path);
        }
        if let Some(Value::Array(all)) = rules.get("allOf") {
            for branch in all {
                self.check(branch, value, path);
            }
        }
        if let Some(expected) = rules.get("type")
            && !type_matches(expected, value)
        {
            self.report(path, format!("must be {}, found {}", type_name(expected), kind_of(value)));
            return;
        }
        match value {
            Value::Object(object) => self.check_object(rules, object, path),
            Value::Array(items) => self.check_array(rules, items, path),
            Value::String(text) => {
                let length = text.chars().count() as u64;
                if let Some(min) = rules.get("minLength").and_then(Value::as_u64)
                    && length < min
                {
                    let message = if min == 1 {
                        "must not be empty".to_string()
                    } else {
                        format!("must be at least {min} characters long")
                    };
                    self.report(path, message);
                }
                if let Some(max) = rules.get("maxLength").and_then(Value::as_u64)
                    && length > max
                {
                    self.report(path, format!("must be at most {max} characters long"));
                }
            }
            Value::Number(number) => {
                let Some(x) = number.as_f64() else { return };
                if let Some(min) = rules.get("minimum").and_then(Value::as_f64)
                    && x < min
                {
                    self.report(path, format!("must be at least {}, found {number}", fmt_num(min)));
                }
                if let Some(max) = rules.get("maximum").and_then(Value::as_f64)
                    && x > max
                {
                    self.report(path, format!("must be at most {}, found {number}", fmt_num(max)));
                }
            }
            _ => {}
        }
    }

    fn check_alternatives<'v>(
        &mut self,
        branches: &'s [Value],
        value: &'v Value,
        path: &mut Vec<Segment<'v>>,
    ) {
        if branches.iter().any(|branch| self.matches(branch, value)) {
            return;
        }
        // Enumerations rendered as `oneOf` of constants: name the allowed values.
        let constants: Option<Vec<Value>> =
            branches.iter().map(|branch| self.resolve(branch).get("const").cloned()).collect();
        if let Some(constants) = constants {
            self.report(
                path,
                format!("must be one of {}, found {}", list(&constants), brief(value)),
            );
            return;
        }
        // Nullable wrappers (`anyOf: [X, {type: null}]`): report X's problems.
        let non_null: Vec<&Value> = branches
            .iter()
            .filter(|branch| self.resolve(branch).get("type") != Some(&Value::from("null")))
            .collect();
        if non_null.len() == 1 {
            self.check(non_null[0], value, path);
            return;
        }
        // Untagged alternatives: report against the branch with matching JSON type.
        if let Some(branch) = non_null
            .iter()
            .find(|branch| self.resolve(branch).get("type").is_some_and(|t| type_matches(t, value)))
        {
            self.check(branch, value, path);
        } else {
            self.report(path, format!("has an unexpected shape ({})", kind_of(value)));
        }
    }

    fn check_object<'v>(
        &mut self,
        rules: &'s Map<String, Value>,
        object: &'v Map<String, Value>,
        path: &mut Vec<Segment<'v>>,
    ) {
        let properties = rules.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = rules.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    self.report(path, format!("missing required field `{name}`"));
                }
            }
        }
        for (key, item) in object {
            match properties.and_then(|props| props.get(key)) {
                Some(property) => {
                    path.push(Segment::Key(key));
                    self.check(property, item, path);
                    path.pop();
                }
                None => match rules.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        let allowed = properties
                            .map(|props| {
                                props.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                            })
                            .unwrap_or_default();
                        self.report(path, format!("unknown field `{key}` (allowed: {allowed})"));
                    }
                    Some(extra @ Value::Object(_)) => {
                        path.push(Segment::Key(key));
                        self.check(extra, item, path);
                        path.pop();
                    }
                    _ => {}
                },
            }
        }
    }

    fn check_array<'v>(
        &mut self,
        rules: &'s Map<String, Value>,
        items: &'v [Value],
        path: &mut Vec<Segment<'v>>,
    ) {
        let count = items.len() as u64;
        let min = rules.get("minItems").and_then(Value::as_u64);
        let max = rules.get("maxItems").and_then(Value::as_u64);
        match (min, max) {
            (Some(min), Some(max)) if count < min || count > max => {
                self.report(path, format!("must have {min} to {max} items, found {count}"));
            }
            (Some(min), None) if count < min => {
                self.report(path, format!("must have at least {min} items, found {count}"));
            }
            (None, Some(max)) if count > max => {
                self.report(path, format!("must have at most {max} items, found {count}"));
            }
            _ => {}
        }
        if let Some(item_schema) = rules.get("items") {
            for (index, item) in items.iter().enumerate() {
                path.push(Segment::Index(index));
                self.check(item_schema, item, path);
                path.pop();
            }
        }
    }
}

fn type_matches(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => single_type_matches(name, value),
        Value::Array(names) => {
            names.iter().filter_map(Value::as_str).any(|name| single_type_matches(name, value))
        }
        _ => true,
    }
}

fn single_type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
            }
            _ => false,
        },
        _ => true,
    }
}

fn type_name(expected: &Value) -> String {
    match expected {
        Value::String(name) => article(name),
        Value::Array(names) => {
            names.iter().filter_map(Value::as_str).map(article).collect::<Vec<_>>().join(" or ")
        }
        other => other.to_string(),
    }
}

fn article(name: &str) -> String {
    match name {
        "null" => "null".into(),
        "array" | "object" | "integer" => format!("an {name}"),
        _ => format!("a {name}"),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn list(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { x.to_string() }
}

/// Rules beyond the shape, applied to whatever parts of the value are readable.
fn semantic_rules(kind: MessageKind, value: &Value, prefix: &str, problems: &mut Vec<Problem>) {
    let at = |field: &str| {
        if prefix.is_empty() { field.to_string() } else { format!("{prefix}.{field}") }
    };
    match kind {
        MessageKind::AdvisorResponse => {
            let decision = value.get("decision").and_then(Value::as_str);
            let stop_reason = value.get("stop_reason");
            match (decision, stop_reason) {
                (Some("STOP"), Some(Value::String(reason))) if !reason.trim().is_empty() => {}
                (Some("STOP"), _) => problems.push(Problem {
                    path: at("stop_reason"),
                    message: "must be a non-empty string when decision is STOP".into(),
                }),
                (Some(decision @ ("PLAN" | "CORRECTION")), Some(reason)) if !reason.is_null() => {
                    problems.push(Problem {
                        path: at("stop_reason"),
                        message: format!("must be null when decision is {decision}"),
                    });
                }
                _ => {}
            }
            if let Some(Value::String(summary)) = value.get("summary")
                && !summary.is_empty()
                && summary.trim().is_empty()
            {
                problems.push(Problem { path: at("summary"), message: "must not be blank".into() });
            }
            if let Some(Value::Array(items)) = value.get("executor_instructions") {
                for (index, item) in items.iter().enumerate() {
                    if let Value::String(text) = item
                        && !text.is_empty()
                        && text.trim().is_empty()
                    {
                        problems.push(Problem {
                            path: format!("{}[{index}]", at("executor_instructions")),
                            message: "must not be blank".into(),
                        });
                    }
                }
            }
        }
        MessageKind::AdvisorRequest => {
            let task_id = value.get("task_id").and_then(Value::as_str);
            // Only a known reason code can be checked against the hash; an unknown one is
            // already reported by the shape check.
            let reason = value
                .get("reason_code")
                .and_then(Value::as_str)
                .filter(|code| serde_json::from_value::<ReasonCode>(Value::from(*code)).is_ok());
            let hash = value.get("trigger_hash").and_then(Value::as_str);
            if let (Some(task_id), Some(reason), Some(hash)) = (task_id, reason, hash) {
                let expected = format!("{task_id}:{reason}:");
                if !hash.starts_with(&expected) {
                    problems.push(Problem {
                        path: at("trigger_hash"),
                        message: format!("must begin with \"{expected}\" (<task_id>:<reason_code>:), found {hash:?}"),
                    });
                }
            }
            if let Some(prior) = value.get("prior_advisor_response").and_then(|p| p.get("response"))
            {
                semantic_rules(
                    MessageKind::AdvisorResponse,
                    prior,
                    &at("prior_advisor_response.response"),
                    problems,
                );
            }
        }
        MessageKind::WorkerReport => {
            let status = value.get("status").and_then(Value::as_str);
            let request = value.get("advisor_request").filter(|r| !r.is_null());
            match (status, request) {
                (Some("needs-advice"), None) => problems.push(Problem {
                    path: at("advisor_request"),
                    message: "is required when status is needs-advice".into(),
                }),
                (_, Some(request)) => semantic_rules(
                    MessageKind::AdvisorRequest,
                    request,
                    &at("advisor_request"),
                    problems,
                ),
                _ => {}
            }
            let scope = value.get("scope_request").filter(|r| !r.is_null());
            if status == Some("needs-scope") {
                match scope.and_then(|scope| scope.get("paths")).and_then(Value::as_array) {
                    None => problems.push(Problem {
                        path: at("scope_request"),
                        message: "is required when status is needs-scope".into(),
                    }),
                    Some(paths) if paths.is_empty() => problems.push(Problem {
                        path: at("scope_request.paths"),
                        message: "must name at least one path".into(),
                    }),
                    Some(_) => {}
                }
            }
        }
        _ => {}
    }
}
