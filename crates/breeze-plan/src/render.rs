//! `breeze plan` output: a table for people, stable JSON for scripts, Graphviz DOT.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use breeze_protocol::{
    BreezePlanV1, PlanConflict, PlanGroup, PlanNote, PlanParallelism, PlanReport, PlanSource,
    PlanStats, PlannedTask,
};

use crate::analysis::{Analysis, Conflict, ConflictReason};
use crate::conflicts::AnalysisStats;
use crate::id::TaskId;
use crate::model::{Plan, PlanFormat, Task};
use crate::parallelism::EXACT_TASKS;
use crate::text::{pad, truncate, width};

/// Most overlap lines the table prints before pointing at `--json`.
const TABLE_CONFLICT_LINES: usize = 200;

/// Most task ids a parallelism line lists before pointing at `--json`.
const TABLE_PARALLEL_IDS: usize = 12;

fn format_name(format: PlanFormat) -> &'static str {
    match format {
        PlanFormat::PlansMd => "Plans.md",
        PlanFormat::Toml => "plan.toml",
    }
}

fn risk_text(task: &Task) -> String {
    let mut parts: Vec<&str> = task.risk.iter().map(|f| f.as_str()).collect();
    if task.advisor_required {
        parts.push("advisor-required");
    }
    if parts.is_empty() { "-".to_owned() } else { parts.join(",") }
}

fn list_or_dash(items: &[String]) -> String {
    if items.is_empty() { "-".to_owned() } else { items.join(", ") }
}

/// A readable summary: write groups, lanes and parallelism; tasks in id order with group,
/// priority, dependencies, risk and write set; why tasks conflict (with a witness path);
/// shared-file owners; warnings.
pub fn table(plan: &Plan, a: &Analysis) -> String {
    let mut out = String::new();
    write_summary(&mut out, plan);
    write_groups_line(&mut out, a);
    write_parallelism(&mut out, plan, a);
    if !plan.tasks.is_empty() {
        out.push('\n');
        write_task_table(&mut out, plan, a);
    }
    out.push('\n');
    write_conflicts(&mut out, plan, a);
    write_shared_files(&mut out, a);
    write_warnings(&mut out, plan);
    out
}

/// `Plan <path> (<format>): N tasks to run, N done, N blocked` — tasks already on main
/// ([`Plan::on_main`]) counted apart, and `nothing left to run` when that is so.
fn write_summary(out: &mut String, plan: &Plan) {
    let on_main =
        (plan.tasks.iter()).filter(|t| t.blocked.is_none() && plan.on_main.contains(&t.id)).count();
    let to_run = plan.runnable_count() - on_main;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut counts = vec![format!("{} done", plan.done.len())];
    if on_main > 0 {
        counts.push(format!("{on_main} already on main (by their Breeze-Task trailers)"));
    }
    counts.push(format!("{} blocked", plan.blocked_count()));
    let head = format!("Plan {} ({})", plan.path.display(), format_name(plan.format));
    let finished = plan.done.len() + on_main;
    if to_run == 0 && finished > 0 {
        let _ = writeln!(out, "{head}: nothing left to run — {}", counts.join(", "));
    } else {
        let _ =
            writeln!(out, "{head}: {to_run} task{} to run, {}", plural(to_run), counts.join(", "));
    }
}

/// How many write groups and lanes, and what they mean.
fn write_groups_line(out: &mut String, a: &Analysis) {
    let _ = writeln!(
        out,
        "Write groups: {} · lanes: {} (max_workers {}) — a task runs beside any task it neither conflicts with nor depends on",
        a.groups.len(),
        a.workers,
        a.max_workers
    );
}

/// The widest set of tasks that can run together and the critical path (nothing for an
/// empty plan).
fn write_parallelism(out: &mut String, plan: &Plan, a: &Analysis) {
    let p = &a.parallelism;
    if p.widest.is_empty() {
        return;
    }
    let ids = |list: &[usize], separator: &str| {
        let mut shown: Vec<String> =
            list.iter().take(TABLE_PARALLEL_IDS).map(|&i| plan.tasks[i].id.to_string()).collect();
        if list.len() > TABLE_PARALLEL_IDS {
            shown.push(format!("… {} more", list.len() - TABLE_PARALLEL_IDS));
        }
        shown.join(separator)
    };
    let plural = |n: usize| if n == 1 { "task" } else { "tasks" };
    let (bound, how) = if p.exact {
        ("at most", "pairwise without conflict or dependency".to_owned())
    } else {
        (
            "at least",
            format!(
                "a lower bound: only plans up to {EXACT_TASKS} tasks are searched exactly, within a fixed budget"
            ),
        )
    };
    let _ = writeln!(
        out,
        "Run together: {bound} {} {} ({}) — {how}",
        p.widest.len(),
        plural(p.widest.len()),
        ids(&p.widest, ", ")
    );
    match p.critical_path.len() {
        1 => out.push_str("Critical path: 1 task — no task waits for another\n"),
        length => {
            let _ = writeln!(
                out,
                "Critical path: {length} tasks ({}) — the longest chain of dependencies",
                ids(&p.critical_path, " → ")
            );
        }
    }
}

/// The task table: a header and one row per task in id order, columns aligned.
fn write_task_table(out: &mut String, plan: &Plan, a: &Analysis) {
    let header = ["ID", "Title", "Group", "Prio", "Depends", "Risk", "Writes"];
    let rows: Vec<[String; 7]> = a.order().iter().map(|&i| task_row(plan, a, i)).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(width(cell));
        }
    }
    out.push_str(&aligned_line(&header, &widths));
    out.push('\n');
    for row in &rows {
        out.push_str(&aligned_line(&row.each_ref().map(String::as_str), &widths));
        out.push('\n');
    }
}

/// The cells of task `i`'s row, long ones truncated.
fn task_row(plan: &Plan, a: &Analysis, i: usize) -> [String; 7] {
    let tasks = &plan.tasks;
    let t = &tasks[i];
    let deps: Vec<String> = a.dependencies(i).iter().map(|&j| tasks[j].id.to_string()).collect();
    let writes = if t.writes.is_empty() {
        "(none: runs alone)".to_owned()
    } else {
        t.writes.entries().join(", ")
    };
    let id = if t.blocked.is_some() {
        format!("{} (blocked)", t.id)
    } else if plan.on_main.contains(&t.id) {
        format!("{} (on main)", t.id)
    } else {
        t.id.to_string()
    };
    [
        id,
        truncate(&t.title, 40),
        (a.group_of(i) + 1).to_string(),
        a.priority(i).to_string(),
        truncate(&list_or_dash(&deps), 24),
        risk_text(t),
        truncate(&writes, 48),
    ]
}

/// Cells padded to their column widths and two spaces apart; the last cell is not
/// padded, and trailing spaces are dropped.
fn aligned_line(cells: &[&str], widths: &[usize]) -> String {
    let last = cells.len() - 1;
    let mut s = String::new();
    for (k, cell) in cells.iter().enumerate() {
        if k == last {
            s.push_str(cell);
        } else {
            s.push_str(&pad(cell, widths[k]));
            s.push_str("  ");
        }
    }
    s.trim_end().to_owned()
}

/// The conflicts: overlapping pairs with their witness (at most
/// [`TABLE_CONFLICT_LINES`]), then the tasks without a write set.
fn write_conflicts(out: &mut String, plan: &Plan, a: &Analysis) {
    let tasks = &plan.tasks;
    let overlaps: Vec<_> = a
        .conflicts
        .iter()
        .filter_map(|c| match &c.reason {
            ConflictReason::Overlap { witness } => Some((c.a, c.b, witness)),
            ConflictReason::NoWriteSet { .. } => None,
        })
        .collect();
    let alone: Vec<usize> = a.order().iter().copied().filter(|&i| a.runs_alone(i)).collect();
    if overlaps.is_empty() && alone.is_empty() {
        out.push_str("Conflicts: none — every task can run beside every other\n");
        return;
    }
    let _ = writeln!(
        out,
        "Conflicts ({} pair{}):",
        a.conflicts.len(),
        if a.conflicts.len() == 1 { "" } else { "s" }
    );
    for (x, y, witness) in overlaps.iter().take(TABLE_CONFLICT_LINES) {
        let _ = writeln!(out, "  {} × {}  both may write {witness}", tasks[*x].id, tasks[*y].id);
    }
    if overlaps.len() > TABLE_CONFLICT_LINES {
        let _ = writeln!(
            out,
            "  … and {} more overlapping pairs (see `breeze plan --json`)",
            overlaps.len() - TABLE_CONFLICT_LINES
        );
    }
    write_tasks_without_write_set(out, plan, &alone);
}

/// Why the tasks without a write set run alone (listing at most 20 of them).
fn write_tasks_without_write_set(out: &mut String, plan: &Plan, alone: &[usize]) {
    let tasks = &plan.tasks;
    match alone {
        [] => {}
        [i] => {
            let _ = writeln!(
                out,
                "  {} has no write set: it conflicts with every other task and runs alone — give it a Writes entry to let it run beside others",
                tasks[*i].id
            );
        }
        many => {
            let mut listed: Vec<String> =
                many.iter().take(20).map(|&i| tasks[i].id.to_string()).collect();
            if many.len() > 20 {
                listed.push(format!("… {} more", many.len() - 20));
            }
            let _ = writeln!(
                out,
                "  {} tasks have no write set ({}): each conflicts with every other task and runs alone — add a Writes column before Depends to let them run in parallel",
                many.len(),
                listed.join(", ")
            );
        }
    }
}

/// Who writes each shared file (of those the repository has or a task claims): its owning
/// task, or the Lead. Nothing when there is none.
fn write_shared_files(out: &mut String, a: &Analysis) {
    if a.shared_file_owners.is_empty() {
        return;
    }
    let owners: Vec<String> = a
        .shared_file_owners
        .iter()
        .map(|(file, owner)| match owner {
            Some(id) => format!("{file} → task {id}"),
            None => format!("{file} → Lead"),
        })
        .collect();
    let _ = writeln!(out, "Shared files: {}", owners.join(" · "));
}

/// The plan's warnings, if any.
fn write_warnings(out: &mut String, plan: &Plan) {
    if !plan.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings ({}):", plan.warnings.len());
        for w in &plan.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
}

/// Puts object keys in sorted order, whatever serde_json's map type is, so the output
/// is byte-for-byte stable. (With serde_json's default map the keys already are; then
/// this only walks the value.)
fn sorted(mut value: Value) -> Value {
    sort_keys(&mut value);
    value
}

fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let in_order = map.keys().zip(map.keys().skip(1)).all(|(x, y)| x <= y);
            if !in_order {
                let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                entries.sort_by(|x, y| x.0.cmp(&y.0));
                *map = entries.into_iter().collect::<Map<_, _>>();
            }
            map.values_mut().for_each(sort_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// The analysed plan as the `breeze-plan.v1` message: tasks in id order, groups by first
/// id, conflicts by ids. Group ids count from 1.
pub fn report(plan: &Plan, a: &Analysis) -> PlanReport {
    let tasks = &plan.tasks;
    let id_list = |set: &std::collections::BTreeSet<TaskId>| -> Vec<String> {
        set.iter().map(ToString::to_string).collect()
    };
    PlanReport {
        schema_version: BreezePlanV1,
        plan: PlanSource {
            path: plan.path.display().to_string(),
            format: plan.format.as_str().to_string(),
        },
        workers: a.workers,
        max_workers: a.max_workers,
        parallelism: PlanParallelism {
            widest: task_ids(tasks, &a.parallelism.widest),
            exact: a.parallelism.exact,
            critical_path: task_ids(tasks, &a.parallelism.critical_path),
        },
        groups: (a.groups.iter().enumerate())
            .map(|(g, members)| PlanGroup { id: g as u32 + 1, tasks: task_ids(tasks, members) })
            .collect(),
        tasks: a.order().iter().map(|&i| planned_task(plan, a, i)).collect(),
        conflicts: a.conflicts.iter().map(|c| plan_conflict(tasks, c)).collect(),
        shared_files: (a.shared_file_owners.iter())
            .map(|(f, owner)| (f.clone(), owner.as_ref().map(ToString::to_string)))
            .collect(),
        done: id_list(&plan.done),
        blocked: id_list(&plan.blocked),
        warnings: (plan.warnings.iter())
            .map(|w| PlanNote { line: w.line.map(|l| l as u64), message: w.message.clone() })
            .collect(),
        stats: plan_stats(&a.stats),
    }
}

/// The ids of the tasks at these indices.
fn task_ids(tasks: &[Task], list: &[usize]) -> Vec<String> {
    list.iter().map(|&j| tasks[j].id.to_string()).collect()
}

/// Task `i` of the report, with what the analysis found about it.
fn planned_task(plan: &Plan, a: &Analysis, i: usize) -> PlannedTask {
    let tasks = &plan.tasks;
    let t = &tasks[i];
    PlannedTask {
        id: t.id.to_string(),
        title: t.title.clone(),
        dod: t.dod.clone(),
        line: t.line as u64,
        marker: t.marker.clone(),
        writes: t.writes.entries().to_vec(),
        runs_alone: a.runs_alone(i),
        depends_on: task_ids(tasks, a.dependencies(i)),
        dependents: task_ids(tasks, a.dependents(i)),
        group: (a.group_of(i) + 1) as u32,
        priority: a.priority(i),
        risk: t.risk.iter().map(|f| f.as_str().to_string()).collect(),
        advisor_required: t.advisor_required,
        extensions: plan.extensions.get(&t.id).cloned().unwrap_or_default(),
    }
}

/// A conflict of the report, naming the tasks by id.
fn plan_conflict(tasks: &[Task], c: &Conflict) -> PlanConflict {
    PlanConflict {
        a: tasks[c.a].id.to_string(),
        b: tasks[c.b].id.to_string(),
        reason: match &c.reason {
            ConflictReason::Overlap { witness } => {
                breeze_protocol::ConflictReason::Overlap { witness: witness.clone() }
            }
            ConflictReason::NoWriteSet { task } => {
                breeze_protocol::ConflictReason::NoWriteSet { task: task.to_string() }
            }
        },
    }
}

/// The conflict search's work, as the report states it.
fn plan_stats(s: &AnalysisStats) -> PlanStats {
    PlanStats {
        tasks: s.tasks as u64,
        entries: s.entries as u64,
        task_pairs: s.task_pairs,
        candidate_pairs: s.candidate_pairs,
        string_checks: s.string_checks,
        automaton_checks: s.automaton_checks,
        product_searches: s.product_searches,
    }
}

/// Stable JSON of [`report`]: keys sorted, so the output diffs cleanly.
pub fn json(plan: &Plan, a: &Analysis) -> Value {
    // A report always serializes: it holds only strings, numbers and JSON values.
    sorted(serde_json::to_value(report(plan, a)).unwrap_or(Value::Null))
}

/// A DOT string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Graphviz DOT: one cluster per write group; solid arrows from a dependency to the
/// task that needs it; dashed red lines between conflicting tasks, labelled with the
/// witness path. Tasks without a write set get a red double border instead of an edge
/// to every other task.
pub fn dot(plan: &Plan, a: &Analysis) -> String {
    let tasks = &plan.tasks;
    let mut out = String::new();
    out.push_str("digraph plan {\n");
    out.push_str("  // solid: dependency -> dependent; dashed red: write conflict (label: a path both may write)\n");
    out.push_str("  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (g, members) in a.groups.iter().enumerate() {
        let _ = writeln!(out, "  subgraph cluster_group_{} {{", g + 1);
        let _ = writeln!(out, "    label={};", quote(&format!("group {}", g + 1)));
        for &i in members {
            let t = &tasks[i];
            let mut label = format!("{}\n{}", t.id, truncate(&t.title, 30));
            let risk = risk_text(t);
            if risk != "-" {
                label.push_str(&format!("\n[{risk}]"));
            }
            let mut attrs = format!("label={}", quote(&label));
            if a.runs_alone(i) {
                attrs.push_str(", color=red, peripheries=2, tooltip=\"no write set: runs alone\"");
            }
            let _ = writeln!(out, "    {} [{attrs}];", quote(t.id.as_str()));
        }
        out.push_str("  }\n");
    }
    for &i in a.order() {
        for &j in a.dependencies(i) {
            let _ = writeln!(
                out,
                "  {} -> {};",
                quote(tasks[j].id.as_str()),
                quote(tasks[i].id.as_str())
            );
        }
    }
    for c in &a.conflicts {
        if let ConflictReason::Overlap { witness } = &c.reason {
            let _ = writeln!(
                out,
                "  {} -> {} [dir=none, style=dashed, color=red, constraint=false, label={}];",
                quote(tasks[c.a].id.as_str()),
                quote(tasks[c.b].id.as_str()),
                quote(witness)
            );
        }
    }
    out.push_str("}\n");
    out
}
