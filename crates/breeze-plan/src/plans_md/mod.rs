//! Plans.md: the original harness's task tables, task headings, checklists and marked
//! phase headings, and status-marker edits.
//!
//! Reading rules (the crate README has them with examples):
//!
//! - A **task table** is a table whose header names a task id column (`Task`, `ID`,
//!   `#`, `タスク`) and a status column (`Status`, `状態`); DoD, Depends, Writes,
//!   title and other columns are optional and may stand anywhere.
//! - A **task heading** carries an id and a marker: `#### 41.2: Resume `cc:TODO``.
//! - A **list-item task** carries an id and a marker: `- [ ] T910: text `cc:TODO`
//!   depends:T909`.
//! - A **marked section** is a heading with a marker but no id (`## Phase 1: … `cc:TODO``):
//!   id'd sub-headings and checklist items below it without a marker of their own
//!   inherit its status.
//!
//! Done tasks are skipped and satisfy dependencies. A dependency may name a task, a
//! phase, a range, `all above`, alternatives or an id prefix (see `deps`); one that
//! matches nothing is archived work when an archive the plan points to shows it done
//! (see `history`), else its dependent is held back, blocked with the reason. An id
//! written under different headings is told apart by its heading (`Phase 2/1.1`). Lines
//! marked to do that cannot be read as tasks are named in warnings; to-do items without
//! an id get one from [`fill_ids`].

mod build;
mod deps;
mod edit;
mod history;
mod ids;
mod list;
mod marker;
mod md;
mod number;
mod scan;
mod table;

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{EditRefused, PlanError, Problem, ProblemKind};
use crate::id::TaskId;
use crate::model::Plan;
use marker::MarkerState;
pub use number::IdProposal;
pub(crate) use number::next_ids;

/// Parses a Plans.md (see the module docs for the rules), without its archives: a
/// dependency on an id the text does not have holds its dependent back.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
    build::build(&scan::scan(text), path, &history::History::default())
}

/// [`parse`], reading the archives the plan points to (relative to `path`'s folder): a
/// dependency they show done counts as done.
pub(crate) fn parse_with_history(text: &str, path: &Path) -> Result<Plan, PlanError> {
    build::build(&scan::scan(text), path, &history::History::read(path, text))
}

/// `text` with an id written for every to-do item that has none, and new ids for later
/// holders of an id repeated within one section (what `breeze plan --fill-ids` writes),
/// every other byte kept; and what was written. `Err` says why the result would not read
/// back as intended (nothing should be written then).
pub fn fill_ids(text: &str) -> Result<(String, Vec<IdProposal>), EditRefused> {
    let before = scan::scan(text);
    let proposals = number::propose(text, &before);
    let edited = number::apply(text, &proposals);
    let after = scan::scan(&edited);
    let written: BTreeMap<usize, &IdProposal> =
        proposals.iter().map(|(p, ..)| (p.line, p)).collect();
    for proposal in written.values() {
        let read =
            after.tasks.iter().any(|t| t.line == proposal.line && t.written_id == proposal.id);
        if !read {
            return Err(EditRefused::IdNotRead {
                line: proposal.line,
                id: proposal.id.clone(),
                title: proposal.title.clone(),
            });
        }
    }
    for task in &before.tasks {
        let now = after.tasks.iter().find(|t| t.line == task.line);
        let expected_id = written.get(&task.line).map_or(task.written_id.as_str(), |p| &p.id);
        let same = now.is_some_and(|now| {
            now.written_id == expected_id
                && now.title == task.title
                && now.dod == task.dod
                && now.status == task.status
                && now.writes == task.writes
        });
        if !same {
            return Err(EditRefused::TaskAtLineChanged { id: task.id.clone(), line: task.line });
        }
    }
    Ok((edited, proposals.into_iter().map(|(p, ..)| p).collect()))
}

/// Rewrites only the status marker of task `id` to `marker` (the marker token and a
/// directly following `[hash]` suffix; the whole Status cell when it has no marker),
/// keeping every other byte. A task without a marker of its own (one that inherits the
/// status of its marked section) gets `` `marker` `` appended to its line. Fails when
/// the task is not in the file.
pub fn set_status(text: &str, id: &TaskId, marker: &str) -> Result<String, PlanError> {
    let scanned = scan::scan(text);
    let candidates: Vec<&scan::RawTask> =
        scanned.tasks.iter().filter(|t| t.id == id.as_str()).collect();
    let Some(task) =
        candidates.iter().find(|t| t.state == MarkerState::Active).or_else(|| candidates.first())
    else {
        return Err(PlanError::single(
            Problem::new(
                Path::new("Plans.md"),
                None,
                ProblemKind::InvalidValue,
                format!("task `{id}` is not in a task table, task heading or checklist"),
                "check the task id; the plan may have changed since the run started",
            )
            .with_ids(vec![id.clone()]),
        ));
    };
    let span = task.status_span.clone();
    let mut out = String::with_capacity(text.len() + marker.len() + 3);
    out.push_str(&text[..span.start]);
    if task.insert_status {
        out.push_str(&format!(" `{marker}`"));
    } else {
        out.push_str(marker);
    }
    out.push_str(&text[span.end..]);
    Ok(out)
}

/// `text` with the write sets of the tasks in `writes` (by id) written in, every other
/// byte kept: a Writes cell (the column added to a table that has none), a `Writes:` line
/// under a task heading, a nested `- Writes:` bullet under a list-item task.
pub fn set_writes(
    text: &str,
    writes: &BTreeMap<String, Vec<String>>,
) -> Result<String, EditRefused> {
    edit::set_writes(text, writes)
}

/// Task id → status text (a Status cell, a task's marker, or for a task without one
/// the marker of its section) for every task, finished ones included. For a repeated
/// id the first one counts. Comparing two snapshots shows whether someone edited a
/// status.
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
    fn set_status_on_checklists_and_inherited_tasks() {
        let text = "- [ ] T1: a `cc:TODO` depends:T0\r\n- [ ] `cc:WIP` **T2**: b\r\n";
        let out = set_status(text, &TaskId::from("T1"), "cc:done").unwrap();
        assert_eq!(out, text.replace("a `cc:TODO`", "a `cc:done`"));
        let out = set_status(text, &TaskId::from("T2"), "cc:done").unwrap();
        assert_eq!(out, text.replace("`cc:WIP` **T2**", "`cc:done` **T2**"));

        let text = "## Phase 1 `cc:TODO`\n\n- [ ] 1.2 Config <!-- x -->\n\n### 1.1 Init ##\n";
        let out = set_status(text, &TaskId::from("1.1"), "cc:done").unwrap();
        assert_eq!(out, text.replace("### 1.1 Init ##", "### 1.1 Init `cc:done` ##"));
        let out = set_status(text, &TaskId::from("1.2"), "cc:done").unwrap();
        assert_eq!(out, text.replace("<!-- x -->", "<!-- x --> `cc:done`"));
        let plan = parse(&out, Path::new("Plans.md")).unwrap();
        assert_eq!(plan.tasks.len(), 1, "1.2 is done, 1.1 still inherits cc:TODO");
        assert_eq!(status_markers(&out)["1.2"], "cc:done");
    }

    #[test]
    fn status_marker_snapshot() {
        let text = "| Task | x | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | - | cc:TODO |\n| 2 | a | b | - | cc:done [x] |\n";
        let m = status_markers(text);
        assert_eq!(m["1"], "cc:TODO");
        assert_eq!(m["2"], "cc:done [x]");
        let m = status_markers("## Phase 1 `cc:WIP`\n- [ ] 1.1 a\n- [x] 1.2 b\n");
        assert_eq!((m["1.1"].as_str(), m["1.2"].as_str()), ("cc:WIP", "[x]"));
    }
}
