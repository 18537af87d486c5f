//! From scanned tasks to a [`Plan`]: duplicate ids, done and blocked tasks,
//! dependencies, write sets.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;

use super::deps::{Index, Target, dependency_tokens, is_none_word};
use super::marker::MarkerState;
use super::scan::{RawTask, Scan};
use crate::error::{PlanError, PlanWarning, Problem, ProblemKind};
use crate::{Plan, PlanFormat, Task, TaskId, WriteSet, risk};

/// Builds the plan from what the scanner found.
pub(crate) fn build(scanned: &Scan, path: &Path) -> Result<Plan, PlanError> {
    if scanned.structures == 0 {
        return Err(no_task_table(scanned, path));
    }
    let mut b = Builder::new(scanned, path);
    b.duplicates();
    b.checklist_items();
    b.resolve_dependencies();
    b.blocked_tasks();
    b.blocked_dependents();
    let tasks = b.runnable_tasks();
    if !b.problems.is_empty() {
        b.problems.sort_by_key(|p| p.line);
        return Err(PlanError::new(b.problems));
    }
    b.warnings.sort_by_key(|w| w.line);
    Ok(Plan {
        path: path.to_path_buf(),
        format: PlanFormat::PlansMd,
        tasks,
        done: b.done,
        blocked: b.blocked,
        warnings: b.warnings,
        extensions: Default::default(),
    })
}

fn no_task_table(scanned: &Scan, path: &Path) -> PlanError {
    let mut fix = "add a table with the header `| Task | 内容 | DoD | Depends | Status |`, \
                   task headings `#### 1.1: title `cc:TODO`` or checklist items \
                   `- [ ] 1.1 title `cc:TODO``"
        .to_owned();
    if let Some(first) = scanned.checklist.first() {
        fix.push_str(&format!(
            "; the {} checklist item(s) found (first at line {}) are not scheduled",
            scanned.checklist.len(),
            first.line
        ));
    }
    if !scanned.unread.is_empty() {
        let lines: Vec<String> = scanned.unread.iter().map(ToString::to_string).collect();
        fix.push_str(&format!("; lines marked to do without a task id: {}", lines.join(", ")));
    }
    PlanError::single(Problem::new(path, None, ProblemKind::Syntax, "no task table found", fix))
}

struct Builder<'a> {
    path: &'a Path,
    raw: &'a [RawTask],
    index: Index<'a>,
    scanned: &'a Scan,
    warnings: Vec<PlanWarning>,
    problems: Vec<Problem>,
    done: BTreeSet<TaskId>,
    blocked: BTreeSet<TaskId>,
    deps: HashMap<usize, BTreeSet<usize>>,
    blocked_by: HashMap<usize, String>,
}

impl<'a> Builder<'a> {
    fn new(scanned: &'a Scan, path: &'a Path) -> Self {
        let raw = scanned.tasks.as_slice();
        let warnings = scanned
            .notes
            .iter()
            .map(|(line, msg)| PlanWarning::new(path, Some(*line), msg.clone()))
            .collect();
        let done = raw
            .iter()
            .filter(|t| t.state == MarkerState::Done)
            .map(|t| TaskId::new(t.id.clone()))
            .collect();
        Builder {
            path,
            raw,
            index: Index::new(raw, &scanned.checklist),
            scanned,
            warnings,
            problems: Vec::new(),
            done,
            blocked: BTreeSet::new(),
            deps: HashMap::new(),
            blocked_by: HashMap::new(),
        }
    }

    fn warn(&mut self, line: usize, message: String) {
        self.warnings.push(PlanWarning::new(self.path, Some(line), message));
    }

    /// Duplicate ids: an error when a runnable task is involved (which one would a
    /// dependency mean?); among finished tasks (a "completed" section repeating its
    /// rows) one warning for all of them.
    fn duplicates(&mut self) {
        let raw = self.raw;
        let mut finished: Vec<(usize, &str)> = Vec::new();
        for (id, holders) in self.index.by_id.iter().filter(|(_, v)| v.len() > 1) {
            let lines: Vec<String> = holders.iter().map(|&h| raw[h].line.to_string()).collect();
            let second = raw[holders[1]].line;
            if holders.iter().all(|&h| raw[h].state != MarkerState::Active) {
                finished.push((second, id));
                continue;
            }
            self.problems.push(
                Problem::new(
                    self.path,
                    Some(second),
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
        }
        finished.sort();
        if let Some(&(line, _)) = finished.first() {
            let ids: Vec<String> = finished.iter().map(|(_, id)| format!("`{id}`")).collect();
            let (what, verb) =
                if ids.len() == 1 { ("task id", "appears") } else { ("task ids", "appear") };
            self.warn(
                line,
                format!(
                    "{what} {} {verb} more than once, all finished; fine for dependencies",
                    ids.join(", ")
                ),
            );
        }
    }

    /// Checklist items without a status marker: checked ones satisfy dependencies,
    /// unchecked ones are not scheduled.
    fn checklist_items(&mut self) {
        for item in &self.scanned.checklist {
            if item.done {
                self.done.insert(TaskId::new(item.id.clone()));
            } else if !self.index.by_id.contains_key(item.id.as_str()) {
                self.warnings.push(PlanWarning::new(self.path, Some(item.line), format!(
                    "checklist item `{}` has no status marker, so it is not scheduled — add `cc:TODO` to run it",
                    item.id
                )));
            }
        }
    }

    fn resolve_dependencies(&mut self) {
        let raw = self.raw;
        let active: Vec<usize> =
            (0..raw.len()).filter(|&i| raw[i].state == MarkerState::Active).collect();
        for i in active {
            let mut mine = BTreeSet::new();
            for written in &raw[i].depends {
                if is_none_word(written.text.trim()) {
                    continue;
                }
                for token in dependency_tokens(&written.text) {
                    let target = self.index.resolve(&token, i);
                    self.depend(i, &token, target, written.line, &mut mine);
                }
            }
            self.deps.insert(i, mine);
        }
    }

    /// Records what `token` of task `i` resolved to.
    fn depend(
        &mut self,
        i: usize,
        token: &str,
        target: Target,
        line: usize,
        mine: &mut BTreeSet<usize>,
    ) {
        let raw = self.raw;
        let id = &raw[i].id;
        match target {
            Target::Tasks(targets) => {
                for t in targets {
                    match raw[t].state {
                        MarkerState::Active => {
                            mine.insert(t);
                        }
                        MarkerState::Done => {}
                        MarkerState::Blocked | MarkerState::Unknown => {
                            self.blocked_by.entry(i).or_insert_with(|| raw[t].id.clone());
                        }
                    }
                }
            }
            Target::Checklist { done: true } | Target::Satisfied => {}
            Target::Checklist { done: false } => {
                self.warn(line, format!("task `{id}` depends on checklist item `{token}`, which breeze does not schedule; treated as done"));
                self.done.insert(TaskId::new(token));
            }
            Target::Unknown => {
                self.warn(line, format!("task `{id}` depends on `{token}`, which matches no task, phase, range or id prefix; treated as done (archived)"));
                self.done.insert(TaskId::new(token));
            }
        }
    }

    /// Blocked and unknown-status tasks do not run.
    fn blocked_tasks(&mut self) {
        for t in self.raw {
            let message = match t.state {
                MarkerState::Blocked => {
                    format!("task `{}` is marked `{}`; not scheduled", t.id, t.status)
                }
                MarkerState::Unknown => {
                    let what = if t.status.is_empty() {
                        "has no status marker".to_owned()
                    } else {
                        format!("has the status `{}`, which breeze does not know", t.status)
                    };
                    format!(
                        "task `{}` {what}; not scheduled — write `cc:todo` to run it or `cc:done` if it is finished",
                        t.id
                    )
                }
                MarkerState::Active | MarkerState::Done => continue,
            };
            self.warn(t.line, message);
            self.blocked.insert(TaskId::new(t.id.clone()));
        }
    }

    /// Neither does anything that (transitively) depends on them.
    fn blocked_dependents(&mut self) {
        let mut dependents: HashMap<usize, Vec<usize>> = HashMap::new();
        for (&task, ds) in &self.deps {
            for &d in ds {
                dependents.entry(d).or_default().push(task);
            }
        }
        let raw = self.raw;
        let mut queue: VecDeque<usize> = self.blocked_by.keys().copied().collect();
        let mut queued: BTreeSet<usize> = queue.iter().copied().collect();
        while let Some(task) = queue.pop_front() {
            for &d in dependents.get(&task).map(Vec::as_slice).unwrap_or(&[]) {
                self.blocked_by.entry(d).or_insert_with(|| raw[task].id.clone());
                if queued.insert(d) {
                    queue.push_back(d);
                }
            }
        }
        let mut list: Vec<(usize, String)> =
            self.blocked_by.iter().map(|(&i, by)| (i, by.clone())).collect();
        list.sort();
        for (i, by) in list {
            let raw = &self.raw[i];
            self.warn(
                raw.line,
                format!("task `{}` depends on blocked task `{by}`; not scheduled", raw.id),
            );
            self.blocked.insert(TaskId::new(raw.id.clone()));
        }
    }

    fn runnable_tasks(&mut self) -> Vec<Task> {
        let runnable: Vec<usize> = (0..self.raw.len())
            .filter(|&i| {
                self.raw[i].state == MarkerState::Active && !self.blocked_by.contains_key(&i)
            })
            .collect();
        runnable.into_iter().map(|i| self.task(i)).collect()
    }

    fn task(&mut self, i: usize) -> Task {
        let raw = self.raw;
        let t = &raw[i];
        let writes = self.write_set(t);
        let all_text = format!("{}\n{}\n{}", t.title, t.dod, t.extra);
        let mut depends_on: Vec<TaskId> =
            self.deps[&i].iter().map(|&d| TaskId::new(raw[d].id.clone())).collect();
        depends_on.sort();
        depends_on.dedup();
        Task {
            id: TaskId::new(t.id.clone()),
            title: t.title.clone(),
            dod: t.dod.clone(),
            writes,
            depends_on,
            risk: risk::detect(&all_text),
            advisor_required: risk::advisor_required(&all_text),
            marker: Some(t.marker.as_ref().map_or_else(|| t.status.clone(), |m| m.text.clone())),
            line: t.line,
        }
    }

    fn write_set(&mut self, t: &RawTask) -> WriteSet {
        let Some(entries) = t.writes.as_deref().map(write_entries) else {
            return WriteSet::default();
        };
        match WriteSet::new(&entries) {
            Ok(ws) => ws,
            Err(e) => {
                self.problems.push(
                    Problem::new(
                        self.path,
                        Some(t.writes_line),
                        ProblemKind::BadWriteEntry,
                        format!("task `{}`: write-set entry `{}`: {}", t.id, e.entry, e.reason),
                        e.fix,
                    )
                    .with_ids(vec![TaskId::new(t.id.clone())]),
                );
                WriteSet::default()
            }
        }
    }
}

/// Splits a Writes cell: backticked spans if there are any, else entries separated by
/// commas, `、`, `;` or spaces (outside `{…}` and `[…]`).
pub(crate) fn write_entries(cell: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_cells() {
        assert_eq!(write_entries("-"), Vec::<String>::new());
        assert_eq!(write_entries("src/a.rs, src/b/"), ["src/a.rs", "src/b/"]);
        assert_eq!(write_entries("src/{a,b}.rs docs/*.md"), ["src/{a,b}.rs", "docs/*.md"]);
        assert_eq!(write_entries("`src/a b.rs`, `src/**`"), ["src/a b.rs", "src/**"]);
    }
}
