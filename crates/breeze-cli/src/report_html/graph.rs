//! The plan's conflict graph as inline SVG: one column per write group (its tasks in id
//! order), conflicts as dashed red arcs (the path both tasks may write in the tooltip),
//! dependencies as arrows from a task to the task that needs it.

use std::collections::HashMap;
use std::fmt::Write;

use breeze_plan::{Analysis, ConflictReason, Plan};

use super::page::esc;

const NODE_W: f64 = 176.0;
const NODE_H: f64 = 44.0;
const COL_W: f64 = 248.0;
const ROW_GAP: f64 = 24.0;
const MARGIN: f64 = 44.0;
const HEADER_H: f64 = 26.0;
/// Groups side by side before the next band of columns starts below.
const MAX_COLUMNS: usize = 4;
/// Characters of a title shown in a node.
const TITLE_CHARS: usize = 24;
/// Characters of an id shown in a node (its state is on the same line).
const ID_CHARS: usize = 13;

/// Where each task's node is: top-left corner and column.
struct Layout {
    at: Vec<(f64, f64)>,
    column: Vec<usize>,
    width: f64,
    height: f64,
}

/// Groups in columns, [`MAX_COLUMNS`] to a band, bands one below the other.
fn layout(plan: &Plan, analysis: &Analysis) -> Layout {
    let n = plan.tasks.len();
    let (mut at, mut column) = (vec![(0.0, 0.0); n], vec![0; n]);
    let mut band_top = 0.0;
    let mut height: f64 = 0.0;
    for (band, groups) in analysis.groups.chunks(MAX_COLUMNS).enumerate() {
        let mut band_height: f64 = 0.0;
        for (c, members) in groups.iter().enumerate() {
            let x = MARGIN + c as f64 * COL_W;
            for (row, &task) in members.iter().enumerate() {
                at[task] = (x, band_top + HEADER_H + row as f64 * (NODE_H + ROW_GAP));
                column[task] = band * MAX_COLUMNS + c;
            }
            band_height = band_height.max(HEADER_H + members.len() as f64 * (NODE_H + ROW_GAP));
        }
        band_top += band_height + 12.0;
        height = band_top;
    }
    let columns = analysis.groups.len().clamp(1, MAX_COLUMNS) as f64;
    Layout { at, column, width: MARGIN + columns * COL_W, height: height.max(NODE_H) + 8.0 }
}

/// The graph; `states` maps task ids to their state in the run.
pub fn render(plan: &Plan, analysis: &Analysis, states: &HashMap<&str, &str>) -> String {
    let layout = layout(plan, analysis);
    let (width, height) = (layout.width, layout.height);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg id=\"conflict-graph\" class=\"graph\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"conflict graph of the plan\">"
    );
    out.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#3d4a5c\"/></marker></defs>\n");
    for (g, members) in analysis.groups.iter().enumerate() {
        let Some(&first) = members.first() else { continue };
        let (x, y) = layout.at[first];
        let _ = writeln!(
            out,
            "<text class=\"group-label\" x=\"{x}\" y=\"{}\">group {} ({} task{})</text>",
            y - 9.0,
            g + 1,
            members.len(),
            if members.len() == 1 { "" } else { "s" }
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

/// The dashed arcs of the conflicts on the right of their column; a wide transparent
/// stroke carries the tooltip.
fn conflicts(out: &mut String, plan: &Plan, analysis: &Analysis, layout: &Layout) {
    for conflict in &analysis.conflicts {
        let ConflictReason::Overlap { witness } = &conflict.reason else { continue };
        let ((ax, ay), (bx, by)) = (layout.at[conflict.a], layout.at[conflict.b]);
        let (a, b) = (&plan.tasks[conflict.a].id, &plan.tasks[conflict.b].id);
        let (x1, y1, x2, y2) = (ax + NODE_W, ay + NODE_H / 2.0, bx + NODE_W, by + NODE_H / 2.0);
        let path = if layout.column[conflict.a] == layout.column[conflict.b] {
            let bulge = (24.0 + (y2 - y1).abs() / 6.0).min(COL_W - NODE_W - 12.0);
            format!("M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}", x1 + bulge, x2 + bulge)
        } else {
            format!("M{},{} L{},{}", ax + NODE_W / 2.0, ay + NODE_H, bx + NODE_W / 2.0, by)
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

/// Arrows from each dependency to the task that needs it: between columns from side to
/// side, within a column as an arc on its left.
fn dependencies(out: &mut String, plan: &Plan, analysis: &Analysis, layout: &Layout) {
    for &task in analysis.order() {
        for &dependency in analysis.dependencies(task) {
            let ((fx, fy), (tx, ty)) = (layout.at[dependency], layout.at[task]);
            let (from_col, to_col) = (layout.column[dependency], layout.column[task]);
            let path = if from_col == to_col {
                let (y1, y2) = (fy + NODE_H / 2.0, ty + NODE_H / 2.0);
                let bulge = (22.0 + (y2 - y1).abs() / 6.0).min(MARGIN - 6.0);
                format!("M{fx},{y1} C{},{y1} {},{y2} {tx},{y2}", fx - bulge, tx - bulge)
            } else if fx < tx {
                format!("M{},{} L{tx},{}", fx + NODE_W, fy + NODE_H / 2.0, ty + NODE_H / 2.0)
            } else {
                format!("M{fx},{} L{},{}", fy + NODE_H / 2.0, tx + NODE_W, ty + NODE_H / 2.0)
            };
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
    let writes = if alone { "none (runs alone)".to_string() } else { task.writes.entries().join(", ") };
    let tip = format!("task {} — {}\nstate: {state}\nwrites: {writes}", task.id, task.title);
    let (stroke, extra) = if alone {
        ("#d64545", format!("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"7\" fill=\"none\" stroke=\"#d64545\"/>", x - 3.0, y - 3.0, NODE_W + 6.0, NODE_H + 6.0))
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
        "deferred" => "#fff3c4",
        "running" | "reviewing" | "landing" => "#dbeafe",
        _ => "#ffffff",
    }
}

/// A state as a CSS class word (letters, digits, `-`).
pub fn css_word(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// `text` cut to `max` characters, the last one an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
