//! Editing a plan file for the Lead: write sets filled in (`breeze plan --fill-writes`),
//! ids given to to-do items without one (`breeze plan --fill-ids`) and new tasks appended
//! (`breeze draft`, renumbered after the plan's own). Every other byte of the file is kept,
//! and each edit is checked by reading the result back: if anything but what was asked
//! changed, the edit is refused and the file stays as it was.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{EditRefused, PlanError, Problem, ProblemKind};
use crate::id::TaskId;
use crate::model::{Plan, PlanFormat};

/// A task to append (its id not used by the plan yet): the same fields roles see a task by.
pub type NewTask = breeze_protocol::TaskBrief;

/// The text of `plan`'s file (`text`) with the write sets of the tasks in `writes` filled
/// in. `extensions` are the plan.toml extension tables the plan was read with.
pub fn set_writes(
    plan: &Plan,
    text: &str,
    writes: &BTreeMap<TaskId, Vec<String>>,
    extensions: &[&str],
) -> Result<String, PlanError> {
    let by_id: BTreeMap<String, Vec<String>> =
        writes.iter().map(|(id, entries)| (id.to_string(), entries.clone())).collect();
    let edited = match plan.format {
        PlanFormat::PlansMd => crate::plans_md::set_writes(text, &by_id),
        PlanFormat::Toml => {
            let lines = plan.tasks.iter().map(|task| (task.id.to_string(), task.line)).collect();
            crate::toml_plan::set_writes(text, &lines, &by_id)
        }
    }
    .map_err(|why| refused(&plan.path, why))?;
    let after = reread(&plan.path, plan.format, &edited, extensions)?;
    check_same_tasks(plan, &after, writes)?;
    Ok(edited)
}

/// `text` (a plan of `format`) with `tasks` appended: rows added to a final task table of
/// the template's shape, else a new table (Plans.md); `[[task]]` tables (plan.toml).
pub fn append_tasks(
    path: &Path,
    format: PlanFormat,
    text: &str,
    tasks: &[NewTask],
    extensions: &[&str],
) -> Result<String, PlanError> {
    let before = reread(path, format, text, extensions).ok();
    let edited = match format {
        PlanFormat::PlansMd => append_rows(text, tasks),
        PlanFormat::Toml => append_tables(text, tasks),
    };
    let after = reread(path, format, &edited, extensions)?;
    for task in tasks {
        let id = TaskId::new(task.id.as_str());
        let Some(found) = after.task(&id) else {
            return Err(refused(path, EditRefused::AppendedNotRead { id: task.id.clone() }));
        };
        if found.title != task.title.trim() || found.writes.entries() != task.writes.as_slice() {
            return Err(refused(path, EditRefused::AppendedChanged { id: task.id.clone() }));
        }
    }
    if let Some(before) = before {
        check_same_tasks(&before, &after, &BTreeMap::new())?;
    }
    Ok(edited)
}

/// The text of a Plans.md (`text`, at `path`) with ids written for its to-do items that
/// have none, and new ids for later holders of an id repeated in one section; and the ids
/// written (none: the text is returned as it is). A plan.toml always has ids.
pub fn fill_ids(
    path: &Path,
    format: PlanFormat,
    text: &str,
) -> Result<(String, Vec<crate::plans_md::IdProposal>), PlanError> {
    if format == PlanFormat::Toml {
        return Err(PlanError::single(Problem::new(
            path,
            None,
            ProblemKind::InvalidValue,
            "a plan.toml task always has an id",
            "`--fill-ids` numbers the to-do items of a Plans.md",
        )));
    }
    crate::plans_md::fill_ids(text).map_err(|why| refused(path, why))
}

/// Renumbers `tasks` (new ones, for a plan whose ids are `existing`, in id order) after the existing
/// ones when any of their ids is taken or repeated: in order, in the family of the plan's
/// last id (`5` → `6`, `7`; `T12` → `T13`; `2.3` → `2.4`). A dependency of a new task on
/// another new task follows it (a new task's id names that task, even where the plan has
/// the same id). Returns the renames, old → new; none when no id clashes.
pub fn renumber_new_tasks(
    existing: &[TaskId],
    last: Option<&TaskId>,
    tasks: &mut [NewTask],
) -> Vec<(String, String)> {
    // An id told apart by its section (`Phase 2/1.1`) is written `1.1`: both are taken.
    let bare = |id: &TaskId| id.as_str().rsplit('/').next().unwrap_or_default().to_owned();
    let taken: std::collections::BTreeSet<String> =
        existing.iter().flat_map(|id| [id.to_string(), bare(id)]).collect();
    let mut seen = std::collections::BTreeSet::new();
    let clash = tasks
        .iter()
        .any(|task| taken.contains(task.id.trim()) || !seen.insert(task.id.trim().to_owned()));
    if !clash {
        return Vec::new();
    }
    let written: Vec<TaskId> = existing.iter().map(|id| TaskId::new(bare(id))).collect();
    let new_ids = crate::plans_md::next_ids(
        &written,
        last.map(|id| TaskId::new(bare(id))).as_ref(),
        tasks.len(),
    );
    let renames: Vec<(String, String)> =
        tasks.iter().map(|t| t.id.trim().to_owned()).zip(new_ids).collect();
    let by_old: BTreeMap<&str, &str> =
        renames.iter().map(|(old, new)| (old.as_str(), new.as_str())).collect();
    for (task, (_, new)) in tasks.iter_mut().zip(&renames) {
        task.id = new.clone();
        for dep in &mut task.depends_on {
            if let Some(renamed) = by_old.get(dep.trim()) {
                *dep = (*renamed).to_owned();
            }
        }
    }
    renames
}

fn reread(
    path: &Path,
    format: PlanFormat,
    text: &str,
    extensions: &[&str],
) -> Result<Plan, PlanError> {
    match format {
        PlanFormat::PlansMd => crate::plans_md::parse(text, path),
        PlanFormat::Toml => crate::toml_plan::parse(text, path, extensions),
    }
}

/// Every task of `before` is in `after`, unchanged but for the write sets in `writes`.
fn check_same_tasks(
    before: &Plan,
    after: &Plan,
    writes: &BTreeMap<TaskId, Vec<String>>,
) -> Result<(), PlanError> {
    for task in &before.tasks {
        let Some(now) = after.task(&task.id) else {
            return Err(refused(&before.path, EditRefused::TaskLost { id: task.id.to_string() }));
        };
        let expected = writes.get(&task.id).map_or(task.writes.entries(), Vec::as_slice);
        let same = now.title == task.title
            && now.dod == task.dod
            && now.depends_on == task.depends_on
            && now.marker == task.marker
            && now.writes.entries() == expected;
        if !same {
            return Err(refused(
                &before.path,
                EditRefused::TaskChanged { id: task.id.to_string() },
            ));
        }
    }
    Ok(())
}

/// The plan error of an edit refused for `why`.
fn refused(path: &Path, why: EditRefused) -> PlanError {
    PlanError::single(Problem::new(
        path,
        None,
        ProblemKind::InvalidValue,
        format!("breeze cannot edit the plan safely: {why}; the file is left as it was"),
        "write the change by hand (the analysis above shows what breeze proposed)",
    ))
}

/// The template's task table header.
const TEMPLATE_HEADER: [&str; 6] = ["Task", "Content", "DoD", "Writes", "Depends", "Status"];

/// Plans.md rows for `tasks`, appended to a final template-shaped table or as a new one.
fn append_rows(text: &str, tasks: &[NewTask]) -> String {
    let rows: String = tasks.iter().map(row).collect();
    let last_block: Vec<&str> = text
        .lines()
        .rev()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.trim_start().starts_with('|'))
        .collect();
    let header = last_block.last().map(|line| cells(line));
    let mut out = text.trim_end_matches(['\n', '\r', ' ']).to_string();
    if header.is_some_and(|cells| cells == TEMPLATE_HEADER) && last_block.len() >= 2 {
        out.push('\n');
        out.push_str(&rows);
        return out;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str("## Drafted tasks\n\n| Task | Content | DoD | Writes | Depends | Status |\n|------|---------|-----|--------|---------|--------|\n");
    out.push_str(&rows);
    out
}

fn cells(line: &str) -> Vec<&str> {
    line.trim().trim_matches('|').split('|').map(str::trim).collect()
}

fn row(task: &NewTask) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let writes: Vec<String> = task.writes.iter().map(|w| format!("`{}`", cell(w))).collect();
    let depends =
        if task.depends_on.is_empty() { "-".to_string() } else { task.depends_on.join(", ") };
    let writes = if writes.is_empty() { "-".to_string() } else { writes.join(", ") };
    format!(
        "| {} | {} | {} | {} | {} | cc:TODO |\n",
        cell(&task.id),
        cell(&task.title),
        cell(&task.dod),
        writes,
        cell(&depends)
    )
}

/// `[[task]]` tables for `tasks`, appended.
fn append_tables(text: &str, tasks: &[NewTask]) -> String {
    let list =
        |items: &[String]| items.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ");
    let mut out = text.trim_end_matches(['\n', '\r', ' ']).to_string();
    for task in tasks {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "[[task]]\nid = {:?}\ntitle = {:?}\ndod = {:?}\nwrites = [{}]\ndepends_on = [{}]",
            task.id,
            task.title,
            task.dod,
            list(&task.writes),
            list(&task.depends_on)
        ));
        if !task.risk.is_empty() {
            out.push_str(&format!("\nrisk = [{}]", list(&task.risk)));
        }
    }
    out.push('\n');
    out
}
