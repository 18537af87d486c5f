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
//! type = "fix"                     # the landing commit's type; inferred when absent
//! [task.sim]                       # an extension table: accepted only when the caller
//! fail_attempts = 1                #   names it (the engine accepts `sim`), kept as JSON
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::commit_type::CommitType;
use crate::error::{EditRefused, PlanError, Problem, ProblemKind};
use crate::id::TaskId;
use crate::model::{Plan, PlanFormat, Task};
use crate::risk::{self, RiskFlag};
use crate::writeset::WriteSet;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    #[serde(default)]
    task: Vec<Spanned<TaskEntry>>,
}

/// One `[[task]]` table. Its keys were checked by [`shape_problem`] (extension tables are
/// read apart), so unknown ones are not refused here again.
#[derive(Deserialize)]
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
    #[serde(default, rename = "type")]
    commit_type: Option<Spanned<String>>,
}

/// The fields of [`TaskEntry`], in the order messages list them.
const TASK_FIELDS: [&str; 8] =
    ["id", "title", "dod", "writes", "depends_on", "risk", "advisor_required", "type"];
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

/// Parses a plan.toml; `[task.<name>]` tables are accepted for the `extensions` named.
pub(crate) fn parse(text: &str, path: &Path, extensions: &[&str]) -> Result<Plan, PlanError> {
    // Three steps, each with its own kind of problem: TOML syntax, then the shape (which
    // keys are there, checked here), then the types of the values (while deserializing).
    let root = DeTable::parse(text).map_err(|e| syntax_error(&e, text, path))?;
    if let Some(problem) = shape_problem(root.get_ref(), text, path, extensions) {
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
    let reader = Reader::new(text, path);
    let mut problems = Vec::new();
    let ids = reader.ids(&file.task, &mut problems);
    let mut lines_by_id: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (id, line) in ids.iter().filter(|(id, _)| !id.is_empty()) {
        lines_by_id.entry(id.as_str()).or_default().push(*line);
    }
    reader.duplicates(&lines_by_id, &mut problems);
    let tasks: Vec<Task> = file
        .task
        .iter()
        .zip(&ids)
        .map(|(entry, (id, line))| {
            reader.task(entry.get_ref(), id, *line, &lines_by_id, &mut problems)
        })
        .collect();
    let extension_tables = reader.extensions(&tasks, extensions, &mut problems);
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
        extensions: extension_tables,
        unnumbered: Vec::new(),
        on_main: Default::default(),
        shared_files: Default::default(),
    })
}

/// The file being read, for problems with a line.
struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    /// Byte offsets of every `\n` in `text`, so a line is a binary search (counting
    /// from the start of the text for every task made loading quadratic).
    newlines: Vec<usize>,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str, path: &'a Path) -> Self {
        let newlines = text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i);
        Reader { text, path, newlines: newlines.collect() }
    }

    /// 1-based line of a byte offset (as [`line_of`]).
    fn line_at(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&at| at < offset) + 1
    }

    fn line(&self, offset: usize) -> Option<usize> {
        Some(self.line_at(offset))
    }

    /// Each task's id and line (an empty id where it is invalid, with a problem).
    fn ids(
        &self,
        entries: &[Spanned<TaskEntry>],
        problems: &mut Vec<Problem>,
    ) -> Vec<(String, usize)> {
        let mut ids = Vec::new();
        for entry in entries {
            let line = self.line_at(entry.get_ref().id.span().start);
            match id_value(entry.get_ref().id.get_ref()) {
                Some(id) if !id.is_empty() && !id.chars().any(char::is_whitespace) => {
                    ids.push((id, line));
                }
                _ => {
                    problems.push(Problem::new(
                        self.path,
                        Some(line),
                        ProblemKind::InvalidValue,
                        "`id` must be a non-empty string without spaces, or an integer",
                        "write e.g. `id = \"1.2\"` or `id = 3`",
                    ));
                    ids.push((String::new(), line));
                }
            }
        }
        ids
    }

    /// An id used by more than one task.
    fn duplicates(&self, lines_by_id: &BTreeMap<&str, Vec<usize>>, problems: &mut Vec<Problem>) {
        for (id, lines) in lines_by_id.iter().filter(|(_, lines)| lines.len() > 1) {
            let listed: Vec<String> = lines.iter().map(ToString::to_string).collect();
            problems.push(
                Problem::new(
                    self.path,
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

    /// One task from its table; what is wrong with it goes to `problems`.
    fn task(
        &self,
        entry: &TaskEntry,
        id: &str,
        line: usize,
        lines_by_id: &BTreeMap<&str, Vec<usize>>,
        problems: &mut Vec<Problem>,
    ) -> Task {
        let depends_on = self.dependencies(entry, id, lines_by_id, problems);
        let explicit = self.risk_flags(entry, id, problems);
        let writes = self.writes(entry, id, problems);
        let title = entry.title.get_ref().trim().to_owned();
        if title.is_empty() {
            problems.push(Problem::new(
                self.path,
                self.line(entry.title.span().start),
                ProblemKind::InvalidValue,
                format!("task `{id}` has an empty `title`"),
                "write what the task does, e.g. `title = \"Add the login endpoint\"`",
            ));
        }
        let dod = entry.dod.as_deref().map(str::trim).filter(|d| !d.is_empty()).unwrap_or(&title);
        let text_for_risk = format!("{title}\n{dod}");
        let commit_type = self.commit_type(entry, id, problems);
        Task {
            id: TaskId::new(id),
            title: crate::text::strip_comments(&title),
            dod: dod.to_owned(),
            writes,
            depends_on: depends_on.into_iter().collect(),
            risk: risk::merge(&explicit, &risk::detect(&text_for_risk)),
            advisor_required: entry.advisor_required || risk::advisor_required(&text_for_risk),
            marker: None,
            line,
            blocked: None,
            commit_type: commit_type.or_else(|| CommitType::written_in(&title, "")),
        }
    }

    /// `type = "fix"`, checked.
    fn commit_type(
        &self,
        entry: &TaskEntry,
        id: &str,
        problems: &mut Vec<Problem>,
    ) -> Option<CommitType> {
        let written = entry.commit_type.as_ref()?;
        let found = CommitType::from_name(written.get_ref());
        if found.is_none() {
            problems.push(Problem::new(
                self.path,
                self.line(written.span().start),
                ProblemKind::InvalidValue,
                format!("task `{id}`: unknown commit type `{}`", written.get_ref()),
                format!("use one of {} (or leave `type` out: breeze infers it from the paths the task changes)", CommitType::names()),
            ));
        }
        found
    }

    fn dependencies(
        &self,
        entry: &TaskEntry,
        id: &str,
        lines_by_id: &BTreeMap<&str, Vec<usize>>,
        problems: &mut Vec<Problem>,
    ) -> BTreeSet<TaskId> {
        let mut depends_on = BTreeSet::new();
        for dep in &entry.depends_on {
            let dep_line = self.line(dep.span().start);
            match id_value(dep.get_ref()) {
                Some(d) if lines_by_id.contains_key(d.as_str()) => {
                    depends_on.insert(TaskId::new(d));
                }
                Some(d) => problems.push(
                    Problem::new(
                        self.path,
                        dep_line,
                        ProblemKind::UnknownDependency,
                        format!("task `{id}` depends on `{d}`, which is not a task in this file"),
                        suggest(&d, lines_by_id),
                    )
                    .with_ids(vec![TaskId::new(id), TaskId::new(d)]),
                ),
                None => problems.push(Problem::new(
                    self.path,
                    dep_line,
                    ProblemKind::InvalidValue,
                    format!(
                        "task `{id}`: a `depends_on` entry must be a task id (string or integer)"
                    ),
                    "write e.g. `depends_on = [\"1.1\", \"1.2\"]`",
                )),
            }
        }
        depends_on
    }

    fn risk_flags(
        &self,
        entry: &TaskEntry,
        id: &str,
        problems: &mut Vec<Problem>,
    ) -> Vec<RiskFlag> {
        let mut explicit = Vec::new();
        for flag in &entry.risk {
            match RiskFlag::from_name(flag.get_ref().trim()) {
                Some(f) => explicit.push(f),
                None => problems.push(Problem::new(
                    self.path,
                    self.line(flag.span().start),
                    ProblemKind::InvalidValue,
                    format!("task `{id}`: unknown risk flag `{}`", flag.get_ref()),
                    "use `needs-spike`, `security-sensitive` or `state-migration`",
                )),
            }
        }
        explicit
    }

    fn writes(&self, entry: &TaskEntry, id: &str, problems: &mut Vec<Problem>) -> WriteSet {
        let mut entries = Vec::new();
        for w in &entry.writes {
            match WriteSet::new([w.get_ref()]) {
                Ok(_) => entries.push(w.get_ref().clone()),
                Err(e) => problems.push(
                    Problem::new(
                        self.path,
                        self.line(w.span().start),
                        ProblemKind::BadWriteEntry,
                        format!("task `{id}`: write-set entry `{}`: {}", e.entry, e.reason),
                        e.fix,
                    )
                    .with_ids(vec![TaskId::new(id)]),
                ),
            }
        }
        WriteSet::new(&entries).unwrap_or_default()
    }

    /// The extension tables of each task, as JSON (`[task.sim]` → `"sim"`). A value that
    /// is not a table is a problem.
    fn extensions(
        &self,
        tasks: &[Task],
        names: &[&str],
        problems: &mut Vec<Problem>,
    ) -> BTreeMap<TaskId, BTreeMap<String, serde_json::Value>> {
        let mut found = BTreeMap::new();
        if names.is_empty() {
            return found;
        }
        // Read apart from the typed entries: the planner does not interpret them.
        let Ok(table) = self.text.parse::<toml::Table>() else { return found };
        let Some(toml::Value::Array(entries)) = table.get("task") else { return found };
        for (entry, task) in entries.iter().zip(tasks) {
            let Some(entry) = entry.as_table() else { continue };
            for name in names {
                match entry.get(*name) {
                    None => {}
                    Some(toml::Value::Table(value)) => {
                        found
                            .entry(task.id.clone())
                            .or_insert_with(BTreeMap::new)
                            .insert(name.to_string(), table_to_json(value));
                    }
                    Some(_) => problems.push(Problem::new(
                        self.path,
                        Some(task.line),
                        ProblemKind::InvalidValue,
                        format!("task `{}`: `{name}` must be a table", task.id),
                        format!(
                            "write it as `[task.{name}]` under the task, or `{name} = {{ … }}`"
                        ),
                    )),
                }
            }
        }
        found
    }
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
fn shape_problem(
    root: &DeTable<'_>,
    text: &str,
    path: &Path,
    extensions: &[&str],
) -> Option<Problem> {
    let known: Vec<&str> = TASK_FIELDS.iter().chain(extensions).copied().collect();
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
            if let Some(key) = table.keys().find(|key| !known.contains(&key.get_ref().as_ref())) {
                let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
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
                        known.join(", ")
                    ),
                ));
            }
            if let Some(missing) = REQUIRED_TASK_FIELDS.iter().find(|k| !table.contains_key(**k)) {
                return Some(Problem::new(
                    path,
                    at(task.span()),
                    ProblemKind::InvalidValue,
                    format!("missing field `{missing}`"),
                    format!("every `[[task]]` needs `id` and `title` (keys: {})", known.join(", ")),
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

/// `text` with `writes = [...]` set in the `[[task]]` table of each task in `writes` (by
/// id; `lines` gives each task's `id` line), every other byte kept: an existing `writes`
/// key (even one spanning several lines) is replaced, else the key goes after `id`.
pub(crate) fn set_writes(
    text: &str,
    id_lines: &BTreeMap<String, usize>,
    writes: &BTreeMap<String, Vec<String>>,
) -> Result<String, EditRefused> {
    let lines: Vec<(usize, &str)> = line_starts(text);
    let mut splices: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (id, entries) in writes {
        let &id_line = id_lines.get(id).ok_or_else(|| EditRefused::NotInPlan { id: id.clone() })?;
        let value = format!(
            "writes = [{}]",
            entries.iter().map(|entry| format!("{entry:?}")).collect::<Vec<_>>().join(", ")
        );
        let end_of_block = (id_line..lines.len())
            .find(|&n| lines[n].1.trim_start().starts_with('['))
            .unwrap_or(lines.len());
        let start_of_block = (0..id_line)
            .rev()
            .find(|&n| lines[n].1.trim_start().starts_with('['))
            .map_or(0, |n| n + 1);
        let existing = (start_of_block..end_of_block).find(|&n| {
            let line = lines[n].1.trim_start();
            line.strip_prefix("writes").is_some_and(|rest| rest.trim_start().starts_with('='))
        });
        match existing {
            Some(n) => {
                let last = array_end(&lines, n);
                let start = lines[n].0;
                let end = lines[last].0 + lines[last].1.len();
                splices.push((start..end, value));
            }
            None => {
                let (start, line) = lines[id_line - 1];
                let at = start + line.len();
                splices.push((at..at, format!("\n{value}")));
            }
        }
    }
    splices.sort_by_key(|(range, _)| range.start);
    let mut out = String::with_capacity(text.len() + 64 * splices.len());
    let mut done = 0;
    for (range, replacement) in splices {
        out.push_str(&text[done..range.start]);
        out.push_str(&replacement);
        done = range.end;
    }
    out.push_str(&text[done..]);
    Ok(out)
}

/// Each line's byte offset and text (without its line ending).
fn line_starts(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        out.push((start, piece.trim_end_matches(['\n', '\r'])));
        start += piece.len();
    }
    out
}

/// The last line (0-based) of the value starting on line `first`: where its brackets close.
fn array_end(lines: &[(usize, &str)], first: usize) -> usize {
    let mut depth = 0i32;
    let mut in_string = false;
    for (n, (_, line)) in lines.iter().enumerate().skip(first) {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_string => {
                    chars.next();
                }
                '"' => in_string = !in_string,
                '#' if !in_string => break,
                '[' if !in_string => depth += 1,
                ']' if !in_string => depth -= 1,
                _ => {}
            }
        }
        if depth <= 0 {
            return n;
        }
    }
    lines.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY_KEY: &str = "[[task]]\nid = 1\ntitle = \"t\"\ndod = \"d\"\nwrites = []\ndepends_on = []\nrisk = []\nadvisor_required = true\ntype = \"fix\"\n";

    #[test]
    fn the_listed_keys_are_the_task_fields() {
        let keys: Vec<&str> =
            EVERY_KEY.lines().skip(1).filter_map(|line| line.split(" =").next()).collect();
        assert_eq!(keys, TASK_FIELDS);
        let plan = parse(EVERY_KEY, Path::new("plan.toml"), &[]).unwrap();
        assert_eq!(plan.tasks[0].dod, "d");
        assert_eq!(plan.tasks[0].commit_type, Some(CommitType::Fix));
        for required in REQUIRED_TASK_FIELDS {
            let without: String = EVERY_KEY
                .lines()
                .filter(|line| !line.starts_with(&format!("{required} =")))
                .map(|line| format!("{line}\n"))
                .collect();
            let err = parse(&without, Path::new("plan.toml"), &[]).unwrap_err();
            assert!(err.has(ProblemKind::InvalidValue), "{err}");
            assert!(err.to_string().contains(&format!("missing field `{required}`")), "{err}");
        }
    }

    #[test]
    fn extension_tables_are_kept_apart_and_only_when_named() {
        let text = "[[task]]\nid = 1\ntitle = \"t\"\n[task.sim]\nfail_attempts = 1\n";
        let plan = parse(text, Path::new("plan.toml"), &["sim"]).unwrap();
        let sim = plan.extension(&TaskId::new("1"), "sim").unwrap();
        assert_eq!(sim["fail_attempts"], 1);
        let err = parse(text, Path::new("plan.toml"), &[]).unwrap_err();
        assert!(err.has(ProblemKind::UnknownKey), "{err}");
        assert!(err.to_string().contains("unknown field `sim`"), "{err}");
        let not_a_table = "[[task]]\nid = 1\ntitle = \"t\"\nsim = 3\n";
        let err = parse(not_a_table, Path::new("plan.toml"), &["sim"]).unwrap_err();
        assert!(err.to_string().contains("`sim` must be a table"), "{err}");
    }
}
