//! Writing write sets into a Plans.md, keeping every other byte: a Writes cell for a table
//! row (the column is added to the table where it has none), a `Writes:` line under a task
//! heading, a nested `- Writes:` bullet under a list-item task.

use std::collections::BTreeMap;

use super::md::{heading, lines, list_item};
use super::scan::{self, RawTask};
use super::table::{Header, classify_header, is_separator_row, split_row};
use crate::error::EditRefused;

/// One insertion or replacement in the text.
struct Splice {
    at: std::ops::Range<usize>,
    text: String,
}

/// `text` with each task's write set (by id) written in; `Err` names a task whose line it
/// cannot write to (a misaligned table row, an id it cannot find).
pub(crate) fn set_writes(
    text: &str,
    writes: &BTreeMap<String, Vec<String>>,
) -> Result<String, EditRefused> {
    let scanned = scan::scan(text);
    let all = lines(text);
    let mut splices = Vec::new();
    let mut tables_with_new_column = Vec::new();
    for (id, entries) in writes {
        let task = scanned
            .tasks
            .iter()
            .find(|task| &task.id == id)
            .ok_or_else(|| EditRefused::NotInPlan { id: id.clone() })?;
        let line = &all[task.line - 1];
        let value = cell_value(entries);
        if line.text.trim_start().starts_with('|') {
            table_splices(&all, task, &value, &mut splices, &mut tables_with_new_column)?;
        } else if heading(line.text).is_some() {
            splices.push(line_after(text, task, task.line, String::new(), &value));
        } else if let Some(item) = list_item(line.text) {
            let indent = " ".repeat(item.indent + 2);
            splices.push(line_after(text, task, task.line, format!("{indent}- "), &value));
        } else {
            return Err(EditRefused::NotATaskLine { id: id.clone(), line: task.line });
        }
    }
    splices.sort_by_key(|splice| (splice.at.start, splice.at.end));
    let mut out = String::with_capacity(text.len() + 64 * splices.len());
    let mut done = 0;
    for splice in splices {
        out.push_str(&text[done..splice.at.start]);
        out.push_str(&splice.text);
        done = splice.at.end;
    }
    out.push_str(&text[done..]);
    Ok(out)
}

/// A Writes value: backticked entries (a `|` escaped, for tables).
fn cell_value(entries: &[String]) -> String {
    entries
        .iter()
        .map(|entry| format!("`{}`", entry.replace('|', "\\|")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `Writes:` line after line `number` (a heading or a list item), or — when the task
/// already has a Writes line or field — its value replaced.
fn line_after(text: &str, task: &RawTask, number: usize, prefix: String, value: &str) -> Splice {
    let all = lines(text);
    // A Writes line of its own (not a `| Writes: …` field on the task's line).
    if task.writes.is_some() && task.writes_line > 0 && task.writes_line != number {
        let line = &all[task.writes_line - 1];
        if let Some(colon) = line.text.find([':', '：']) {
            let start =
                line.start + colon + line.text[colon..].chars().next().map_or(1, char::len_utf8);
            let end = line.start + line.text.len();
            return Splice { at: start..end, text: format!(" {value}") };
        }
    }
    let line = &all[number - 1];
    let end = line.start + line.text.len();
    // After the line's own newline (a last line without one gets one first).
    let (at, newline) = match text[end..].chars().next() {
        Some('\r') => (end + 2, ""),
        Some('\n') => (end + 1, ""),
        _ => (end, "\n"),
    };
    Splice { at: at..at, text: format!("{newline}{prefix}Writes: {value}\n") }
}

/// The splices that put `value` in a table row's Writes cell, adding the column to the
/// table (header, separator, every row) the first time one of its rows is written.
fn table_splices(
    all: &[super::md::Line<'_>],
    task: &RawTask,
    value: &str,
    splices: &mut Vec<Splice>,
    tables_with_new_column: &mut Vec<(usize, usize)>,
) -> Result<(), EditRefused> {
    let (header, rows) = table_of(all, task.line)
        .ok_or_else(|| EditRefused::NoTableHeader { id: task.id.clone(), line: task.line })?;
    let header_cells = split_row(all[header - 1].text, all[header - 1].start);
    let Header::Tasks(columns) = classify_header(&header_cells) else {
        return Err(EditRefused::NotATaskHeader { id: task.id.clone(), header });
    };
    let row = &all[task.line - 1];
    let cells = split_row(row.text, row.start);
    if cells.len() != columns.count {
        return Err(EditRefused::MisalignedRow {
            id: task.id.clone(),
            line: task.line,
            cells: cells.len(),
            columns: columns.count,
        });
    }
    if let Some(column) = columns.writes_column() {
        let cell = &cells[column];
        splices.push(Splice { at: cell.span.clone(), text: value.to_string() });
        return Ok(());
    }
    // No Writes column: one goes before Depends, else before Status.
    let at_column = columns.depends_column().unwrap_or(columns.status_column());
    let table = (header, at_column);
    if !tables_with_new_column.contains(&table) {
        tables_with_new_column.push(table);
        for number in std::iter::once(header).chain(header + 1..=rows) {
            let line = &all[number - 1];
            let title = if number == header {
                " Writes |"
            } else if number == header + 1 {
                "--------|"
            } else {
                " |"
            };
            if let Some(pipe) = nth_pipe(line.text, at_column) {
                splices.push(Splice {
                    at: line.start + pipe + 1..line.start + pipe + 1,
                    text: title.to_string(),
                });
            }
        }
    }
    // The row's own cell: written where the column goes in (the blank cell added above
    // for this row is replaced by `value`).
    if let Some(pipe) = nth_pipe(row.text, at_column) {
        let at = row.start + pipe + 1;
        if let Some(blank) = splices.iter_mut().find(|s| s.at == (at..at)) {
            blank.text = format!(" {value} |");
        }
    }
    Ok(())
}

/// The header line and the last row line of the task table holding row `line` (1-based).
fn table_of(all: &[super::md::Line<'_>], line: usize) -> Option<(usize, usize)> {
    let is_row = |n: usize| all.get(n - 1).is_some_and(|l| l.text.trim_start().starts_with('|'));
    let mut top = line;
    while top > 1 && is_row(top - 1) {
        top -= 1;
    }
    let separator = all.get(top).map(|l| split_row(l.text, l.start));
    if !separator.is_some_and(|cells| is_separator_row(&cells)) {
        return None;
    }
    let mut bottom = line;
    while bottom < all.len() && is_row(bottom + 1) {
        bottom += 1;
    }
    Some((top, bottom))
}

/// The byte offset of the pipe that opens cell `column` (0-based) of a row.
fn nth_pipe(row: &str, column: usize) -> Option<usize> {
    let bytes = row.as_bytes();
    let mut seen = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'|') {
            i += 2;
            continue;
        }
        if bytes[i] == b'|' {
            if seen == column {
                return Some(i);
            }
            seen += 1;
        }
        i += 1;
    }
    None
}
