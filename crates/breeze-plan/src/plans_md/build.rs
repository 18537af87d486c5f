//! From scanned tasks to a [`Plan`]: duplicate ids, done and blocked tasks,
//! dependencies, write sets.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;

use super::deps::{Index, Target, dependency_tokens, is_none_word};
use super::history::{Archives, History};
use super::marker::MarkerState;
use super::scan::{RawTask, Scan};
use crate::commit_type::CommitType;
use crate::error::{PlanError, PlanWarning, Problem, ProblemKind};
use crate::id::TaskId;
use crate::model::{Plan, PlanFormat, Task};
use crate::risk;
use crate::writeset::WriteSet;

/// Builds the plan from what the scanner found; `history` holds the archives the plan
/// points to (dependencies they show done count as done).
pub(crate) fn build(scanned: &Scan, path: &Path, history: &History) -> Result<Plan, PlanError> {
    if scanned.structures == 0 {
        return Err(no_task_table(scanned, path));
    }
    let mut b = Builder::new(scanned, path, history);
    b.row_errors();
    b.duplicates();
    b.checklist_items();
    b.resolve_dependencies();
    b.blocked_tasks();
    b.blocked_dependents();
    b.held_dependents();
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
        unnumbered: scanned.unnumbered.iter().map(|u| u.line).collect(),
        on_main: Default::default(),
        shared_files: Default::default(),
    })
}

/// The template header a file's own language suggests: the harness's `内容` for Japanese
/// and Chinese, `내용` for Korean, `Content` for anything else.
fn template_header(text_sample: &str) -> &'static str {
    let has =
        |range: std::ops::RangeInclusive<char>| text_sample.chars().any(|c| range.contains(&c));
    if has('\u{3040}'..='\u{30ff}') || has('\u{4e00}'..='\u{9fff}') {
        "| Task | 内容 | DoD | Depends | Status |"
    } else if has('\u{ac00}'..='\u{d7af}') {
        "| Task | 내용 | DoD | Depends | Status |"
    } else {
        "| Task | Content | DoD | Depends | Status |"
    }
}

fn no_task_table(scanned: &Scan, path: &Path) -> PlanError {
    let mut fix = match scanned.other_tables.as_slice() {
        [] => String::new(),
        [(line, header)] => format!(
            "the table at line {line} (`{header}`) needs a task id column and a status column; "
        ),
        [(line, header), rest @ ..] => format!(
            "the tables here (`{header}` at line {line}, and {} more) need a task id column and a status column; ",
            rest.len()
        ),
    };
    let sample: String = scanned
        .headings
        .values()
        .map(|h| h.title.as_str())
        .chain(scanned.other_tables.iter().map(|(_, h)| h.as_str()))
        .chain(scanned.unnumbered.iter().map(|u| u.title.as_str()))
        .collect();
    fix.push_str(&format!(
        "add a table with the header `{}`, task headings `#### 1.1: title `cc:TODO`` or checklist items `- [ ] 1.1 title `cc:TODO``",
        template_header(&sample)
    ));
    if let Some(first) = scanned.checklist.first() {
        fix.push_str(&format!(
            "; the {} checklist item(s) found (first at line {}) are not scheduled",
            scanned.checklist.len(),
            first.line
        ));
    }
    if !scanned.unnumbered.is_empty() {
        let lines: Vec<String> = scanned.unnumbered.iter().map(|u| u.line.to_string()).collect();
        fix.push_str(&format!(
            "; {} to-do item(s) without a task id (lines {}): `breeze plan --fill-ids` numbers them",
            lines.len(),
            lines.join(", ")
        ));
    }
    let numbered: BTreeSet<usize> = scanned.unnumbered.iter().map(|u| u.line).collect();
    let other: Vec<String> =
        scanned.unread.iter().filter(|l| !numbered.contains(l)).map(ToString::to_string).collect();
    if !other.is_empty() {
        fix.push_str(&format!(
            "; other lines marked to do without a task id: {}",
            other.join(", ")
        ));
    }
    PlanError::single(Problem::new(path, None, ProblemKind::Syntax, "no task table found", fix))
}

struct Builder<'a> {
    path: &'a Path,
    raw: &'a [RawTask],
    index: Index<'a>,
    scanned: &'a Scan,
    archives: Archives<'a>,
    warnings: Vec<PlanWarning>,
    problems: Vec<Problem>,
    done: BTreeSet<TaskId>,
    blocked: BTreeSet<TaskId>,
    deps: HashMap<usize, BTreeSet<usize>>,
    blocked_by: HashMap<usize, String>,
    /// Tasks held back by a dependency on an id the plan does not have, and why.
    held: HashMap<usize, String>,
}

impl<'a> Builder<'a> {
    fn new(scanned: &'a Scan, path: &'a Path, history: &'a History) -> Self {
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
            archives: history.index(),
            warnings,
            problems: Vec::new(),
            done,
            blocked: BTreeSet::new(),
            deps: HashMap::new(),
            blocked_by: HashMap::new(),
            held: HashMap::new(),
        }
    }

    fn warn(&mut self, line: usize, message: String) {
        self.warnings.push(PlanWarning::new(self.path, Some(line), message));
    }

    /// Task rows with too few or too many cells that are not finished.
    fn row_errors(&mut self) {
        for (line, what, fix) in &self.scanned.row_errors {
            self.problems.push(Problem::new(
                self.path,
                Some(*line),
                ProblemKind::Syntax,
                what.clone(),
                fix.clone(),
            ));
        }
    }

    /// Ids repeated within one section (ids repeated under different headings were told
    /// apart by the scanner): an error when a task to do is involved (which one would a
    /// dependency mean?); among finished tasks (a "completed" section repeating its rows)
    /// one warning for all of them.
    fn duplicates(&mut self) {
        let raw = self.raw;
        let mut by_id: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for (i, t) in raw.iter().enumerate() {
            by_id.entry(t.id.as_str()).or_default().push(i);
        }
        let mut finished: Vec<(usize, &str)> = Vec::new();
        for (id, holders) in by_id.iter().filter(|(_, v)| v.len() > 1) {
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
                        "task id `{id}` is used {} times in one section (lines {})",
                        holders.len(),
                        lines.join(", ")
                    ),
                    format!(
                        "`breeze plan --fill-ids` gives the later ones new ids; or give each task its own id, e.g. `{id}` and `{id}b`"
                    ),
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
            Target::Unknown => match self.archives.shows_done(token) {
                Some(archive) => {
                    self.warn(line, format!("task `{id}` depends on `{token}`, which the plan's archive `{archive}` shows done; treated as done"));
                    self.done.insert(TaskId::new(token));
                }
                None => {
                    self.warn(line, format!(
                        "task `{id}` depends on `{token}`, which matches no task, phase, range or id prefix here or in an archive the plan names, so `{id}` is blocked (and so is what depends on it) — name a task of the plan, or remove the dependency if `{token}` is done"
                    ));
                    self.held.entry(i).or_insert_with(|| {
                        format!("depends on `{token}`, which is not in the plan")
                    });
                }
            },
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
        let raw = self.raw;
        let starts: Vec<usize> = self.blocked_by.keys().copied().collect();
        for (d, on) in self.dependents_of(&starts) {
            self.blocked_by.entry(d).or_insert_with(|| raw[on].id.clone());
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

    /// Tasks that depend (transitively) on a held task are held too; they stay in the
    /// plan, blocked with the reason, while every other task runs.
    fn held_dependents(&mut self) {
        let raw = self.raw;
        let starts: Vec<usize> = self.held.keys().copied().collect();
        let found: Vec<(usize, usize)> = self
            .dependents_of(&starts)
            .into_iter()
            .filter(|(d, _)| !self.blocked_by.contains_key(d))
            .collect();
        // In the order they were reached: the task each depends on is held by then (a start,
        // or reached before it), whichever comes first in the file.
        let mut reasons: Vec<(usize, String)> = Vec::with_capacity(found.len());
        for (d, on) in found {
            let reason =
                format!("depends on `{}`, which cannot run: {}", raw[on].id, self.held[&on]);
            self.held.insert(d, reason.clone());
            reasons.push((d, reason));
        }
        reasons.sort();
        for (d, reason) in reasons {
            self.warn(raw[d].line, format!("task `{}` {reason}; not run", raw[d].id));
        }
    }

    /// The tasks that depend, transitively, on `starts` (and are not among them), each
    /// with the task it depends on through which it was first reached.
    fn dependents_of(&self, starts: &[usize]) -> Vec<(usize, usize)> {
        let mut dependents: HashMap<usize, Vec<usize>> = HashMap::new();
        for (&task, ds) in &self.deps {
            for &d in ds {
                dependents.entry(d).or_default().push(task);
            }
        }
        for list in dependents.values_mut() {
            list.sort_unstable();
        }
        let mut queue: VecDeque<usize> = starts.iter().copied().collect();
        let mut seen: BTreeSet<usize> = queue.iter().copied().collect();
        let mut found = Vec::new();
        while let Some(task) = queue.pop_front() {
            for &d in dependents.get(&task).map(Vec::as_slice).unwrap_or(&[]) {
                if seen.insert(d) {
                    found.push((d, task));
                    queue.push_back(d);
                }
            }
        }
        found
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
            blocked: self.held.get(&i).cloned(),
            commit_type: CommitType::written_in(&t.title, &t.extra),
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
