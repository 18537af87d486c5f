//! Plans.md: the original harness's task table, its heading form, and status-marker edits.
//!
//! Reading rules: only tables whose header reads Task … DoD … Depends …
//! Status hold tasks (an optional Writes column may stand before Depends); Status is
//! the last cell of a row and Depends the one before it, whatever the row's width.
//! Done rows are skipped and satisfy dependencies. A dependency may name a task, a
//! phase (`Phase 2`) or an id prefix (`GEO-3` for `GEO-3.1`, `GEO-3.2`, …); one that
//! matches nothing is archived work: treated as done, with a warning.

mod marker;
mod scan;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;

use crate::error::{PlanError, PlanWarning, Problem, ProblemKind};
use crate::{Plan, PlanFormat, Task, TaskId, WriteSet, risk};
use marker::MarkerState;
use scan::{RawTask, phase_label};

/// Parses a Plans.md (see the module docs for the rules).
pub(crate) fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
    let scanned = scan::scan(text);
    let mut warnings: Vec<PlanWarning> = scanned
        .notes
        .iter()
        .map(|(line, msg)| PlanWarning::new(path, Some(*line), msg.clone()))
        .collect();
    let raw = &scanned.tasks;

    if scanned.task_tables == 0 {
        let mut fix = "add a table with the header `| Task | 内容 | DoD | Depends | Status |` \
                       (optionally `Writes` before `Depends`), or write tasks as headings \
                       `#### 1.1: title `cc:TODO`` with a `Depends:` line"
            .to_owned();
        if !scanned.checklist.is_empty() {
            fix.push_str(&format!(
                "; the {} checklist item(s) found (first at line {}) are not scheduled",
                scanned.checklist.len(),
                scanned.checklist[0].line
            ));
        }
        return Err(PlanError::single(Problem::new(
            path,
            None,
            ProblemKind::Syntax,
            "no task table found",
            fix,
        )));
    }

    let mut problems = Vec::new();
    let index = Index::new(raw, &scanned.checklist);

    // Duplicate ids: an error when a runnable task is involved (which one would a
    // dependency mean?), a warning among finished rows.
    for (id, holders) in &index.by_id {
        if holders.len() < 2 {
            continue;
        }
        let lines: Vec<String> = holders.iter().map(|&h| raw[h].line.to_string()).collect();
        if holders.iter().any(|&h| raw[h].state == MarkerState::Active) {
            problems.push(
                Problem::new(
                    path,
                    Some(raw[holders[1]].line),
                    ProblemKind::DuplicateId,
                    format!(
                        "task id `{id}` is used {} times (lines {})",
                        holders.len(),
                        lines.join(", ")
                    ),
                    format!("give each task its own id, e.g. `{id}` and `{id}b`"),
                )
                .with_ids(vec![TaskId::from(*id)]),
            );
        } else {
            warnings.push(PlanWarning::new(
                path,
                Some(raw[holders[1]].line),
                format!("task id `{id}` appears {} times (lines {}), all finished; fine for dependencies", holders.len(), lines.join(", ")),
            ));
        }
    }

    let mut done: BTreeSet<TaskId> = BTreeSet::new();
    for t in raw.iter().filter(|t| t.state == MarkerState::Done) {
        done.insert(TaskId::new(t.id.clone()));
    }
    for item in &scanned.checklist {
        if item.done {
            done.insert(TaskId::new(item.id.clone()));
        } else if !index.by_id.contains_key(item.id.as_str()) {
            warnings.push(PlanWarning::new(
                path,
                Some(item.line),
                format!(
                    "checklist item `{}` is not scheduled — breeze runs table rows; move it into the task table to run it",
                    item.id
                ),
            ));
        }
    }

    // Resolve dependencies of every runnable task.
    let active: Vec<usize> =
        (0..raw.len()).filter(|&i| raw[i].state == MarkerState::Active).collect();
    let mut deps: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    let mut blocked_by: HashMap<usize, String> = HashMap::new();
    for &i in &active {
        let task = &raw[i];
        let mut mine = BTreeSet::new();
        for token in dependency_tokens(&task.depends) {
            match index.resolve(&token, i) {
                Target::Tasks(targets) => {
                    for t in targets {
                        match raw[t].state {
                            MarkerState::Active => {
                                mine.insert(t);
                            }
                            MarkerState::Done => {}
                            MarkerState::Blocked | MarkerState::Unknown => {
                                blocked_by.entry(i).or_insert_with(|| raw[t].id.clone());
                            }
                        }
                    }
                }
                Target::Checklist { done: true } => {}
                Target::Checklist { done: false } => {
                    warnings.push(PlanWarning::new(
                        path,
                        Some(task.depends_line),
                        format!(
                            "task `{}` depends on checklist item `{token}`, which breeze does not schedule; treated as done",
                            task.id
                        ),
                    ));
                    done.insert(TaskId::new(token.clone()));
                }
                Target::Unknown => {
                    warnings.push(PlanWarning::new(
                        path,
                        Some(task.depends_line),
                        format!(
                            "task `{}` depends on `{token}`, which matches no task, phase or id prefix; treated as done (archived)",
                            task.id
                        ),
                    ));
                    done.insert(TaskId::new(token.clone()));
                }
            }
        }
        deps.insert(i, mine);
    }

    // Blocked and unknown-status rows do not run, and neither does anything that
    // (transitively) depends on them.
    let mut blocked: BTreeSet<TaskId> = BTreeSet::new();
    for t in raw.iter() {
        match t.state {
            MarkerState::Blocked => {
                warnings.push(PlanWarning::new(
                    path,
                    Some(t.line),
                    format!("task `{}` is marked `{}`; not scheduled", t.id, t.status),
                ));
                blocked.insert(TaskId::new(t.id.clone()));
            }
            MarkerState::Unknown => {
                let what = if t.status.is_empty() {
                    "has no status marker".to_owned()
                } else {
                    format!("has the status `{}`, which breeze does not know", t.status)
                };
                warnings.push(PlanWarning::new(
                    path,
                    Some(t.line),
                    format!(
                        "task `{}` {what}; not scheduled — write `cc:todo` to run it or `cc:done` if it is finished",
                        t.id
                    ),
                ));
                blocked.insert(TaskId::new(t.id.clone()));
            }
            MarkerState::Active | MarkerState::Done => {}
        }
    }
    let mut dependents: HashMap<usize, Vec<usize>> = HashMap::new();
    for (&task, ds) in &deps {
        for &d in ds {
            dependents.entry(d).or_default().push(task);
        }
    }
    let mut queue: VecDeque<usize> = blocked_by.keys().copied().collect();
    let mut queued: BTreeSet<usize> = queue.iter().copied().collect();
    while let Some(task) = queue.pop_front() {
        for &d in dependents.get(&task).map(Vec::as_slice).unwrap_or(&[]) {
            blocked_by.entry(d).or_insert_with(|| raw[task].id.clone());
            if queued.insert(d) {
                queue.push_back(d);
            }
        }
    }
    let mut blocked_list: Vec<(&usize, &String)> = blocked_by.iter().collect();
    blocked_list.sort();
    for (&i, by) in blocked_list {
        warnings.push(PlanWarning::new(
            path,
            Some(raw[i].line),
            format!("task `{}` depends on blocked task `{by}`; not scheduled", raw[i].id),
        ));
        blocked.insert(TaskId::new(raw[i].id.clone()));
    }

    let mut tasks = Vec::new();
    for &i in &active {
        if blocked_by.contains_key(&i) {
            continue;
        }
        let t = &raw[i];
        let writes = match t.writes.as_deref().map(write_entries) {
            None => WriteSet::default(),
            Some(entries) => match WriteSet::new(&entries) {
                Ok(ws) => ws,
                Err(e) => {
                    problems.push(
                        Problem::new(
                            path,
                            Some(t.writes_line),
                            ProblemKind::BadWriteEntry,
                            format!("task `{}`: write-set entry `{}`: {}", t.id, e.entry, e.reason),
                            e.fix,
                        )
                        .with_ids(vec![TaskId::new(t.id.clone())]),
                    );
                    WriteSet::default()
                }
            },
        };
        let all_text = format!("{}\n{}\n{}", t.title, t.dod, t.extra);
        let mut depends_on: Vec<TaskId> =
            deps[&i].iter().map(|&d| TaskId::new(raw[d].id.clone())).collect();
        depends_on.sort();
        depends_on.dedup();
        tasks.push(Task {
            id: TaskId::new(t.id.clone()),
            title: t.title.clone(),
            dod: t.dod.clone(),
            writes,
            depends_on,
            risk: risk::detect(&all_text),
            advisor_required: risk::advisor_required(&all_text),
            marker: Some(match &t.marker {
                Some(m) => m.text.clone(),
                None => t.status.clone(),
            }),
            line: t.line,
        });
    }

    if !problems.is_empty() {
        problems.sort_by_key(|p| p.line);
        return Err(PlanError::new(problems));
    }
    warnings.sort_by_key(|w| w.line);
    Ok(Plan {
        path: path.to_path_buf(),
        format: PlanFormat::PlansMd,
        tasks,
        done,
        blocked,
        warnings,
        extensions: Default::default(),
    })
}

/// What a dependency token names.
enum Target {
    /// These raw tasks (any state).
    Tasks(Vec<usize>),
    /// A checklist item.
    Checklist { done: bool },
    /// Nothing: archived work.
    Unknown,
}

struct Index<'a> {
    raw: &'a [RawTask],
    by_id: BTreeMap<&'a str, Vec<usize>>,
    checklist: HashMap<&'a str, bool>,
    phases: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(raw: &'a [RawTask], checklist: &'a [scan::ChecklistItem]) -> Self {
        let mut by_id: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut phases: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, t) in raw.iter().enumerate() {
            by_id.entry(t.id.as_str()).or_default().push(i);
            for label in &t.phases {
                phases.entry(label.as_str()).or_default().push(i);
            }
        }
        let mut items = HashMap::new();
        for item in checklist {
            let entry = items.entry(item.id.as_str()).or_insert(false);
            *entry |= item.done;
        }
        Index { raw, by_id, checklist: items, phases }
    }

    /// Resolves a token for task `me` (which a phase or prefix never includes).
    fn resolve(&self, token: &str, me: usize) -> Target {
        if let Some(v) = self.by_id.get(token) {
            return Target::Tasks(v.clone());
        }
        if let Some(&done) = self.checklist.get(token) {
            return Target::Checklist { done };
        }
        if let Some(label) = phase_label(token) {
            if let Some(v) = self.phases.get(label.as_str()) {
                return Target::Tasks(v.iter().copied().filter(|&i| i != me).collect());
            }
            let v: Vec<usize> = (0..self.raw.len())
                .filter(|&i| i != me && has_id_prefix(&self.raw[i].id.to_lowercase(), &label))
                .collect();
            if !v.is_empty() {
                return Target::Tasks(v);
            }
            return Target::Unknown;
        }
        let v: Vec<usize> = self
            .by_id
            .range(token..)
            .take_while(|(id, _)| id.starts_with(token))
            .filter(|(id, _)| has_id_prefix(id, token))
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|&i| i != me)
            .collect();
        if !v.is_empty() {
            return Target::Tasks(v);
        }
        // `2.1 (after review)` or `Task 2.1`: try the id-looking word.
        let mut words = token.split_whitespace();
        if let (Some(first), Some(_)) = (words.next(), words.next()) {
            let first = first.trim_end_matches([':', '：']);
            if self.by_id.contains_key(first) || self.checklist.contains_key(first) {
                return self.resolve(first, me);
            }
        }
        Target::Unknown
    }
}

/// Whether `id` lies under `prefix`: `GEO-3.1` and `GEO-3-2` under `GEO-3`, not `GEO-31`.
fn has_id_prefix(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(['.', '-']))
}

/// Words that mean "no dependency" / "no write set".
fn is_none_word(token: &str) -> bool {
    matches!(
        token.to_lowercase().as_str(),
        "" | "-" | "—" | "–" | "none" | "n/a" | "na" | "なし" | "無し" | "无" | "없음"
    )
}

/// Splits a Depends cell on `,` and `、` (and their full-width and `;` cousins),
/// dropping decoration and parenthesized remarks.
fn dependency_tokens(cell: &str) -> Vec<String> {
    let cleaned: String = cell.chars().filter(|c| !matches!(c, '`' | '*')).collect();
    if is_none_word(cleaned.trim()) {
        return Vec::new();
    }
    cleaned
        .split([',', '、', '，', ';', '；'])
        .map(|t| {
            let mut t = t.trim();
            // `[2.1](#21)` → `2.1`
            if let (Some(rest), Some(end)) = (t.strip_prefix('['), t.find("](")) {
                t = &rest[..end - 1];
            }
            let t = t.split(['(', '（']).next().unwrap_or("").trim();
            t.trim_end_matches(['。', '.']).trim().to_owned()
        })
        .filter(|t| !is_none_word(t))
        .collect()
}

/// Splits a Writes cell: backticked spans if there are any, else entries separated by
/// commas, `、`, `;` or spaces (outside `{…}` and `[…]`).
fn write_entries(cell: &str) -> Vec<String> {
    let cell = cell.trim();
    if is_none_word(cell) {
        return Vec::new();
    }
    if cell.contains('`') {
        return cell
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
    }
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in cell.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let separator = depth == 0 && (matches!(c, ',' | '、' | '，' | ';') || c.is_whitespace());
        if separator {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Rewrites only the status marker of task `id` to `marker` (the marker token and a
/// directly following `[hash]` suffix; the whole Status cell when it has no marker),
/// keeping every other byte. Fails when the task is not in the file.
pub fn set_status(text: &str, id: &TaskId, marker: &str) -> Result<String, PlanError> {
    let scanned = scan::scan(text);
    let candidates: Vec<&RawTask> = scanned.tasks.iter().filter(|t| t.id == id.as_str()).collect();
    let Some(task) =
        candidates.iter().find(|t| t.state == MarkerState::Active).or_else(|| candidates.first())
    else {
        return Err(PlanError::single(
            Problem::new(
                Path::new("Plans.md"),
                None,
                ProblemKind::InvalidValue,
                format!("task `{id}` is not in a task table or task heading"),
                "check the task id; the plan may have changed since the run started",
            )
            .with_ids(vec![id.clone()]),
        ));
    };
    let mut out = String::with_capacity(text.len() + marker.len());
    out.push_str(&text[..task.status_span.start]);
    out.push_str(marker);
    out.push_str(&text[task.status_span.end..]);
    Ok(out)
}

/// Task id → status text (the whole Status cell, or a heading's marker) for every task
/// row and heading, finished ones included. For a repeated id the first one counts.
/// Comparing two snapshots shows whether someone edited a status.
pub fn status_markers(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for task in scan::scan(text).tasks {
        out.entry(task.id).or_insert(task.status);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_cells() {
        assert_eq!(dependency_tokens("-"), Vec::<String>::new());
        assert_eq!(dependency_tokens("1.1, 1.2"), ["1.1", "1.2"]);
        assert_eq!(dependency_tokens("2.2、2.3"), ["2.2", "2.3"]);
        assert_eq!(dependency_tokens("`1.1`, **1.2**"), ["1.1", "1.2"]);
        assert_eq!(dependency_tokens("Phase 5.14"), ["Phase 5.14"]);
        assert_eq!(dependency_tokens("2.1 (partial)"), ["2.1"]);
        assert_eq!(dependency_tokens("[2.1](#21)"), ["2.1"]);
        assert_eq!(dependency_tokens("なし"), Vec::<String>::new());
    }

    #[test]
    fn writes_cells() {
        assert_eq!(write_entries("-"), Vec::<String>::new());
        assert_eq!(write_entries("src/a.rs, src/b/"), ["src/a.rs", "src/b/"]);
        assert_eq!(write_entries("src/{a,b}.rs docs/*.md"), ["src/{a,b}.rs", "docs/*.md"]);
        assert_eq!(write_entries("`src/a b.rs`, `src/**`"), ["src/a b.rs", "src/**"]);
    }

    #[test]
    fn set_status_keeps_other_bytes() {
        let text = "| Task | 内容 | DoD | Depends | Status |\r\n|---|---|---|---|---|\r\n| 1 | a | b | - | `cc:TODO` (手動) |\r\n| 2 | c | d | 1 | cc:完了 [abc1234] |\r\n";
        let out = set_status(text, &TaskId::from("1"), "cc:done").unwrap();
        assert_eq!(out, text.replace("`cc:TODO` (手動)", "`cc:done` (手動)"));
        let out = set_status(text, &TaskId::from("2"), "cc:wip").unwrap();
        assert_eq!(out, text.replace("cc:完了 [abc1234]", "cc:wip"));
        assert!(set_status(text, &TaskId::from("9"), "cc:done").is_err());
    }

    #[test]
    fn set_status_on_headings_and_blank_cells() {
        let text = "### 3.1: Build it `cc:TODO`\nDepends: -\n";
        let out = set_status(text, &TaskId::from("3.1"), "cc:done [1234567]").unwrap();
        assert_eq!(out, "### 3.1: Build it `cc:done [1234567]`\nDepends: -\n");
        let table = "| Task | x | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | - |  |\n";
        let out = set_status(table, &TaskId::from("1"), "cc:wip").unwrap();
        assert!(out.ends_with("| 1 | a | b | - | cc:wip |\n"), "{out}");
    }

    #[test]
    fn status_marker_snapshot() {
        let text = "| Task | x | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | - | cc:TODO |\n| 2 | a | b | - | cc:done [x] |\n";
        let m = status_markers(text);
        assert_eq!(m["1"], "cc:TODO");
        assert_eq!(m["2"], "cc:done [x]");
    }
}
