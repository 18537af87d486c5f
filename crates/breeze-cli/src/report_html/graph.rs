//! The plan's conflict graph as inline SVG, in layers: a column per dependency level (a
//! task stands right of every task it needs), the tasks of a column near what they need,
//! then by write group and id. Dependencies are arrows from left to right, conflicts dashed red curves (the path
//! both tasks may write in the tooltip).

use crate::render::first_line;
use std::collections::HashMap;
use std::fmt::Write;

use breeze_plan::{Analysis, ConflictReason, Plan};

use super::html::{css_word, esc};

const NODE_W: f64 = 188.0;
const NODE_H: f64 = 44.0;
const COL_W: f64 = 264.0;
const ROW_GAP: f64 = 24.0;
const MARGIN: f64 = 16.0;
const HEADER_H: f64 = 40.0;
/// Plans with more tasks are not drawn (`breeze plan --dot` draws any plan).
pub const MAX_TASKS: usize = 300;
/// Characters of a title shown in a node.
const TITLE_CHARS: usize = 24;
/// Characters of an id shown in a node (its state is on the same line).
const ID_CHARS: usize = 13;

/// Where each task's node is: top-left corner and column.
struct Layout {
    at: Vec<(f64, f64)>,
    column: Vec<usize>,
    columns: usize,
    width: f64,
    height: f64,
}

/// The dependency level of every task: 0 without dependencies, else one more than the
/// highest level of what it needs (the plan has no cycles: `analyze` checked).
fn levels(plan: &Plan, analysis: &Analysis) -> Vec<usize> {
    let n = plan.tasks.len();
    let mut level = vec![0; n];
    let mut waiting: Vec<usize> = (0..n).map(|task| analysis.dependencies(task).len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&task| waiting[task] == 0).collect();
    while let Some(task) = ready.pop() {
        for &next in analysis.dependents(task) {
            level[next] = level[next].max(level[task] + 1);
            waiting[next] -= 1;
            if waiting[next] == 0 {
                ready.push(next);
            }
        }
    }
    level
}

/// Columns by dependency level; in a column, tasks near the mean row of what they need,
/// then by write group, then in id order.
fn layout(plan: &Plan, analysis: &Analysis) -> Layout {
    let n = plan.tasks.len();
    let level = levels(plan, analysis);
    let columns = level.iter().max().map_or(0, |max| max + 1);
    let mut stacks: Vec<Vec<usize>> = vec![Vec::new(); columns];
    // `order` is id order, so a stable sort by group keeps ids in order within a group.
    for &task in analysis.order() {
        stacks[level[task]].push(task);
    }
    let (mut at, mut column) = (vec![(0.0, 0.0); n], vec![0; n]);
    let mut row_of = vec![0.0; n];
    let mut rows = 0;
    for (c, stack) in stacks.iter_mut().enumerate() {
        // Next to what they need (the mean row of their dependencies), then by group.
        let key = |task: usize| {
            let needs = analysis.dependencies(task);
            let mean = needs.iter().map(|&d| row_of[d]).sum::<f64>() / needs.len().max(1) as f64;
            (mean, analysis.group_of(task))
        };
        stack.sort_by(|&a, &b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
        rows = rows.max(stack.len());
        for (row, &task) in stack.iter().enumerate() {
            row_of[task] = row as f64;
            at[task] = (MARGIN + c as f64 * COL_W, HEADER_H + row as f64 * (NODE_H + ROW_GAP));
            column[task] = c;
        }
    }
    let width = MARGIN * 2.0 + (columns.max(1) - 1) as f64 * COL_W + NODE_W + 40.0;
    let height = HEADER_H + rows.max(1) as f64 * (NODE_H + ROW_GAP);
    Layout { at, column, columns, width, height }
}

/// The graph; `states` maps task ids to their state in the run.
pub fn render(plan: &Plan, analysis: &Analysis, states: &HashMap<&str, &str>) -> String {
    if plan.tasks.len() > MAX_TASKS {
        return format!(
            "<p class=\"note\">The plan has {} tasks, too many to draw here: <code>breeze plan --dot</code> draws it.</p>\n",
            plan.tasks.len()
        );
    }
    let layout = layout(plan, analysis);
    let (width, height) = (layout.width, layout.height);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg id=\"conflict-graph\" class=\"graph\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"conflict graph of the plan\">"
    );
    out.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#3d4a5c\"/></marker></defs>\n");
    for c in 0..layout.columns {
        let label = if c == 0 { "needs nothing".to_string() } else { format!("level {c}") };
        let _ = writeln!(
            out,
            "<text class=\"group-label\" x=\"{}\" y=\"{}\">{label}</text>",
            MARGIN + c as f64 * COL_W,
            HEADER_H - 22.0
        );
    }
    conflicts(&mut out, plan, analysis, &layout);
    dependencies(&mut out, plan, analysis, &layout);
    for (index, task) in plan.tasks.iter().enumerate() {
        let state = states.get(task.id.as_str()).copied().unwrap_or("not run");
        node(&mut out, plan, analysis, index, &layout, state);
    }
    out.push_str("</svg>\n");
    out
}

/// The dashed curves of the conflicts: on the right of a column between two of its
/// tasks, from side to side (below the arrows) between columns; a wide transparent stroke
/// carries the tooltip.
fn conflicts(out: &mut String, plan: &Plan, analysis: &Analysis, layout: &Layout) {
    for conflict in &analysis.conflicts {
        let ConflictReason::Overlap { witness } = &conflict.reason else { continue };
        let ((ax, ay), (bx, by)) = (layout.at[conflict.a], layout.at[conflict.b]);
        let (a, b) = (&plan.tasks[conflict.a].id, &plan.tasks[conflict.b].id);
        let path = if layout.column[conflict.a] == layout.column[conflict.b] {
            // An arc on the right of the column.
            let (x1, y1, x2, y2) = (ax + NODE_W, ay + NODE_H / 2.0, bx + NODE_W, by + NODE_H / 2.0);
            let bulge = (24.0 + (y2 - y1).abs() / 6.0).min(COL_W - NODE_W - 16.0);
            format!("M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}", x1 + bulge, x2 + bulge)
        } else {
            // From the right side of the left node to the left side of the right one,
            // below the middle, where the dependency arrows do not run.
            let ((lx, ly), (rx, ry)) =
                if ax < bx { ((ax, ay), (bx, by)) } else { ((bx, by), (ax, ay)) };
            let (x1, y1, x2, y2) = (lx + NODE_W, ly + NODE_H * 0.8, rx, ry + NODE_H * 0.8);
            let bend = (x2 - x1) / 2.0;
            format!("M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}", x1 + bend, x2 - bend)
        };
        let tip = format!("conflict {a} ⟷ {b}: both may write {witness}");
        let _ = writeln!(
            out,
            "<g class=\"conflict\" data-a=\"{}\" data-b=\"{}\"><path d=\"{path}\" fill=\"none\" stroke=\"#d64545\" stroke-width=\"1.8\" stroke-dasharray=\"6 4\"/><path d=\"{path}\" fill=\"none\" stroke=\"transparent\" stroke-width=\"10\"><title>{}</title></path></g>",
            esc(a.as_str()),
            esc(b.as_str()),
            esc(&tip)
        );
    }
}

/// Arrows from each dependency (a column further left) to the task that needs it.
fn dependencies(out: &mut String, plan: &Plan, analysis: &Analysis, layout: &Layout) {
    for &task in analysis.order() {
        for &dependency in analysis.dependencies(task) {
            let ((fx, fy), (tx, ty)) = (layout.at[dependency], layout.at[task]);
            let (x1, y1, x2, y2) = (fx + NODE_W, fy + NODE_H / 2.0, tx - 2.0, ty + NODE_H / 2.0);
            let bend = (x2 - x1) / 2.0;
            let path = format!("M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}", x1 + bend, x2 - bend);
            let (from, to) = (&plan.tasks[dependency].id, &plan.tasks[task].id);
            let _ = writeln!(
                out,
                "<path class=\"dependency\" d=\"{path}\" fill=\"none\" stroke=\"#3d4a5c\" stroke-width=\"1.4\" marker-end=\"url(#arrow)\"><title>{} needs {} to land first</title></path>",
                esc(to.as_str()),
                esc(from.as_str())
            );
        }
    }
}

/// A task's box: id and title, filled by its state; red double border when it has no
/// write set (it conflicts with every task and runs alone).
fn node(
    out: &mut String,
    plan: &Plan,
    analysis: &Analysis,
    index: usize,
    layout: &Layout,
    state: &str,
) {
    let task = &plan.tasks[index];
    let (x, y) = layout.at[index];
    let alone = analysis.runs_alone(index);
    let writes =
        if alone { "none (runs alone)".to_string() } else { task.writes.entries().join(", ") };
    let tip = format!("task {} — {}\nstate: {state}\nwrites: {writes}", task.id, task.title);
    let (stroke, extra) = if alone {
        (
            "#d64545",
            format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"7\" fill=\"none\" stroke=\"#d64545\"/>",
                x - 3.0,
                y - 3.0,
                NODE_W + 6.0,
                NODE_H + 6.0
            ),
        )
    } else {
        ("#3d4a5c", String::new())
    };
    let (id, title) = (cut(task.id.as_str(), ID_CHARS), cut(first_line(&task.title), TITLE_CHARS));
    let _ = writeln!(
        out,
        "<g class=\"node state-{}\" data-task=\"{}\"><title>{}</title>{extra}<rect x=\"{x}\" y=\"{y}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"5\" fill=\"{}\" stroke=\"{stroke}\" stroke-width=\"1.3\"/><text class=\"node-id\" x=\"{}\" y=\"{}\">{}</text><text class=\"node-state\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text class=\"node-title\" x=\"{}\" y=\"{}\">{}</text></g>",
        esc(&css_word(state)),
        esc(task.id.as_str()),
        esc(&tip),
        state_fill(state),
        x + 8.0,
        y + 17.0,
        esc(&id),
        x + NODE_W - 8.0,
        y + 17.0,
        esc(state),
        x + 8.0,
        y + 35.0,
        esc(&title)
    );
}

/// The background of a node by task state.
pub fn state_fill(state: &str) -> &'static str {
    match state {
        "landed" => "#d8f3dc",
        "escalated" | "failed" => "#fde2e1",
        "blocked" => "#e5e7eb",
        "deferred" | "awaiting-approval" | "interrupted" => "#fff3c4",
        "running" | "reviewing" | "landing" => "#dbeafe",
        _ => "#ffffff",
    }
}

/// `text` cut to `max` characters, the last one an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}
