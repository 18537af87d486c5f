//! plan.toml: `[[task]]` tables.
//!
//! ```toml
//! [[task]]
//! id = "1.1"                       # string or integer
//! title = "Login endpoint"
//! dod = "POST /login returns a session cookie; tests pass"   # defaults to the title
//! writes = ["src/auth/", "tests/auth_*.rs"]                 # absent or [] = runs alone
//! depends_on = ["1.0"]             # ids in this file
//! risk = ["security-sensitive"]    # needs-spike | security-sensitive | state-migration
//! advisor_required = false
//! [task.sim]                       # passed to the scripted simulator as JSON
//! fail_attempts = 1
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::{PlanError, Problem, ProblemKind};
use crate::{Plan, PlanFormat, RiskFlag, Task, TaskId, WriteSet, risk};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    #[serde(default)]
    task: Vec<Spanned<TaskEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskEntry {
    id: Spanned<toml::Value>,
    title: Spanned<String>,
    #[serde(default)]
    dod: Option<String>,
    #[serde(default)]
    writes: Vec<Spanned<String>>,
    #[serde(default)]
    depends_on: Vec<Spanned<toml::Value>>,
    #[serde(default)]
    risk: Vec<Spanned<String>>,
    #[serde(default)]
    advisor_required: bool,
    #[serde(default)]
    sim: Option<toml::Table>,
}

/// The fields of [`TaskEntry`], in the order messages list them.
const TASK_FIELDS: [&str; 8] =
    ["id", "title", "dod", "writes", "depends_on", "risk", "advisor_required", "sim"];
/// The keys every `[[task]]` table must have.
const REQUIRED_TASK_FIELDS: [&str; 2] = ["id", "title"];

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// An id as TOML may write it: a string or an integer.
fn id_value(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.trim().to_owned()),
        toml::Value::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Parses a plan.toml.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
    // Three steps, each with its own kind of problem: TOML syntax, then the shape (which
    // keys are there, checked here), then the types of the values (while deserializing).
    let root = DeTable::parse(text).map_err(|e| syntax_error(&e, text, path))?;
    if let Some(problem) = shape_problem(root.get_ref(), text, path) {
        return Err(PlanError::single(problem));
    }
    let file = PlanFile::deserialize(toml::de::Deserializer::from(root))
        .map_err(|e| syntax_error(&e, text, path))?;

    if file.task.is_empty() {
        return Err(PlanError::single(Problem::new(
            path,
            None,
            ProblemKind::Syntax,
            "no tasks",
            "add `[[task]]` tables with `id`, `title`, `dod`, `writes` and `depends_on`",
        )));
    }

    let mut problems = Vec::new();
    let mut ids: Vec<(String, usize)> = Vec::new();
    for entry in &file.task {
        let line = line_of(text, entry.get_ref().id.span().start);
        match id_value(entry.get_ref().id.get_ref()) {
            Some(id) if !id.is_empty() && !id.chars().any(char::is_whitespace) => {
                ids.push((id, line));
            }
            _ => {
                problems.push(Problem::new(
                    path,
                    Some(line),
                    ProblemKind::InvalidValue,
                    "`id` must be a non-empty string without spaces, or an integer",
                    "write e.g. `id = \"1.2\"` or `id = 3`",
                ));
                ids.push((String::new(), line));
            }
        }
    }

    let mut lines_by_id: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (id, line) in &ids {
        if !id.is_empty() {
            lines_by_id.entry(id.as_str()).or_default().push(*line);
        }
    }
    for (id, lines) in &lines_by_id {
        if lines.len() > 1 {
            let listed: Vec<String> = lines.iter().map(ToString::to_string).collect();
            problems.push(
                Problem::new(
                    path,
                    Some(lines[1]),
                    ProblemKind::DuplicateId,
                    format!(
                        "task id `{id}` is used {} times (lines {})",
                        lines.len(),
                        listed.join(", ")
                    ),
                    format!("give each task its own id, e.g. `{id}` and `{id}b`"),
                )
                .with_ids(vec![TaskId::from(*id)]),
            );
        }
    }

    let mut tasks = Vec::new();
    for (entry, (id, line)) in file.task.iter().zip(&ids) {
        let entry = entry.get_ref();
        let mut depends_on = BTreeSet::new();
        for dep in &entry.depends_on {
            let dep_line = line_of(text, dep.span().start);
            match id_value(dep.get_ref()) {
                Some(d) if lines_by_id.contains_key(d.as_str()) => {
                    depends_on.insert(TaskId::new(d));
                }
                Some(d) => problems.push(
                    Problem::new(
                        path,
                        Some(dep_line),
                        ProblemKind::UnknownDependency,
                        format!("task `{id}` depends on `{d}`, which is not a task in this file"),
                        suggest(&d, &lines_by_id),
                    )
                    .with_ids(vec![TaskId::new(id.clone()), TaskId::new(d)]),
                ),
                None => problems.push(Problem::new(
                    path,
                    Some(dep_line),
                    ProblemKind::InvalidValue,
                    format!(
                        "task `{id}`: a `depends_on` entry must be a task id (string or integer)"
                    ),
                    "write e.g. `depends_on = [\"1.1\", \"1.2\"]`",
                )),
            }
        }

        let mut explicit = Vec::new();
        for flag in &entry.risk {
            match RiskFlag::from_name(flag.get_ref().trim()) {
                Some(f) => explicit.push(f),
                None => problems.push(Problem::new(
                    path,
                    Some(line_of(text, flag.span().start)),
                    ProblemKind::InvalidValue,
                    format!("task `{id}`: unknown risk flag `{}`", flag.get_ref()),
                    "use `needs-spike`, `security-sensitive` or `state-migration`",
                )),
            }
        }

        let mut entries = Vec::new();
        for w in &entry.writes {
            match WriteSet::new([w.get_ref()]) {
                Ok(_) => entries.push(w.get_ref().clone()),
                Err(e) => problems.push(
                    Problem::new(
                        path,
                        Some(line_of(text, w.span().start)),
                        ProblemKind::BadWriteEntry,
                        format!("task `{id}`: write-set entry `{}`: {}", e.entry, e.reason),
                        e.fix,
                    )
                    .with_ids(vec![TaskId::new(id.clone())]),
                ),
            }
        }
        let writes = WriteSet::new(&entries).unwrap_or_default();

        let title = entry.title.get_ref().trim().to_owned();
        if title.is_empty() {
            problems.push(Problem::new(
                path,
                Some(line_of(text, entry.title.span().start)),
                ProblemKind::InvalidValue,
                format!("task `{id}` has an empty `title`"),
                "write what the task does, e.g. `title = \"Add the login endpoint\"`",
            ));
        }
        let dod = entry.dod.as_deref().map(str::trim).filter(|d| !d.is_empty()).unwrap_or(&title);
        let text_for_risk = format!("{title}\n{dod}");
        tasks.push(Task {
            id: TaskId::new(id.clone()),
            title: crate::text::strip_comments(&title),
            dod: dod.to_owned(),
            writes,
            depends_on: depends_on.into_iter().collect(),
            risk: risk::merge(&explicit, &risk::detect(&text_for_risk)),
            advisor_required: entry.advisor_required || risk::advisor_required(&text_for_risk),
            marker: None,
            line: *line,
            sim: entry.sim.as_ref().map(table_to_json),
        });
    }

    if !problems.is_empty() {
        problems.sort_by_key(|p| p.line);
        return Err(PlanError::new(problems));
    }
    Ok(Plan {
        path: path.to_path_buf(),
        format: PlanFormat::Toml,
        tasks,
        done: BTreeSet::new(),
        blocked: BTreeSet::new(),
        warnings: Vec::new(),
    })
}

/// A TOML error (bad syntax, or a value of the wrong type) at its line.
fn syntax_error(error: &toml::de::Error, text: &str, path: &Path) -> PlanError {
    PlanError::single(Problem::new(
        path,
        error.span().map(|span| line_of(text, span.start)),
        ProblemKind::Syntax,
        error.message().trim(),
        "fix the TOML at this line",
    ))
}

/// The first key that does not belong, or the first `[[task]]` without `id` or `title`,
/// in the order deserializing would meet them. Values of the wrong type are left to
/// deserializing.
fn shape_problem(root: &DeTable<'_>, text: &str, path: &Path) -> Option<Problem> {
    let at = |span: std::ops::Range<usize>| Some(line_of(text, span.start));
    for (key, value) in root {
        if key.get_ref() != "task" {
            return Some(Problem::new(
                path,
                at(key.span()),
                ProblemKind::UnknownKey,
                format!("unknown field `{}`, expected `task`", key.get_ref()),
                "a plan.toml holds only `[[task]]` tables",
            ));
        }
        let DeValue::Array(tasks) = value.get_ref() else { continue };
        for task in tasks {
            let DeValue::Table(table) = task.get_ref() else { continue };
            if let Some(key) =
                table.keys().find(|key| !TASK_FIELDS.contains(&key.get_ref().as_ref()))
            {
                let expected: Vec<String> = TASK_FIELDS.iter().map(|k| format!("`{k}`")).collect();
                return Some(Problem::new(
                    path,
                    at(key.span()),
                    ProblemKind::UnknownKey,
                    format!(
                        "unknown field `{}`, expected one of {}",
                        key.get_ref(),
                        expected.join(", ")
                    ),
                    format!(
                        "remove the key; a task table takes only these keys: {}",
                        TASK_FIELDS.join(", ")
                    ),
                ));
            }
            if let Some(missing) = REQUIRED_TASK_FIELDS.iter().find(|k| !table.contains_key(**k)) {
                return Some(Problem::new(
                    path,
                    at(task.span()),
                    ProblemKind::InvalidValue,
                    format!("missing field `{missing}`"),
                    format!(
                        "every `[[task]]` needs `id` and `title` (keys: {})",
                        TASK_FIELDS.join(", ")
                    ),
                ));
            }
        }
    }
    None
}

/// "did you mean" for an unknown dependency.
fn suggest(unknown: &str, known: &BTreeMap<&str, Vec<usize>>) -> String {
    let close: Vec<&str> = known
        .keys()
        .copied()
        .filter(|k| {
            k.starts_with(unknown) || unknown.starts_with(k) || k.eq_ignore_ascii_case(unknown)
        })
        .take(3)
        .collect();
    if !close.is_empty() {
        let list: Vec<String> = close.iter().map(|k| format!("`{k}`")).collect();
        format!("did you mean {}? `depends_on` must name tasks in this file", list.join(" or "))
    } else {
        "`depends_on` must name tasks in this file; remove it if that work is already done"
            .to_owned()
    }
}

fn table_to_json(table: &toml::Table) -> serde_json::Value {
    serde_json::Value::Object(table.iter().map(|(k, v)| (k.clone(), value_to_json(v))).collect())
}

fn value_to_json(value: &toml::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(items.iter().map(value_to_json).collect()),
        toml::Value::Table(t) => table_to_json(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY_KEY: &str = "[[task]]\nid = 1\ntitle = \"t\"\ndod = \"d\"\nwrites = []\ndepends_on = []\nrisk = []\nadvisor_required = true\nsim = { fail_attempts = 1 }\n";

    #[test]
    fn the_listed_keys_are_the_task_fields() {
        let keys: Vec<&str> =
            EVERY_KEY.lines().skip(1).filter_map(|line| line.split(" =").next()).collect();
        assert_eq!(keys, TASK_FIELDS);
        let plan = parse(EVERY_KEY, Path::new("plan.toml")).unwrap();
        assert_eq!(plan.tasks[0].dod, "d");
        for required in REQUIRED_TASK_FIELDS {
            let without: String = EVERY_KEY
                .lines()
                .filter(|line| !line.starts_with(&format!("{required} =")))
                .map(|line| format!("{line}\n"))
                .collect();
            let err = parse(&without, Path::new("plan.toml")).unwrap_err();
            assert!(err.has(ProblemKind::InvalidValue), "{err}");
            assert!(err.to_string().contains(&format!("missing field `{required}`")), "{err}");
        }
    }
}
