//! Line scanner for Plans.md: task tables, heading tasks, checklists and phases.
//!
//! The scanner knows Markdown only as far as plans need: fenced code blocks and
//! HTML comment blocks are skipped (templates inside them are not tasks), tables are
//! runs of lines starting with `|`, and only a table whose header reads
//! Task … DoD … Depends … Status (with an optional Writes column before Depends)
//! holds tasks.

use std::ops::Range;

use super::marker::{Marker, MarkerState, bare_status, find_marker};
use crate::text::strip_comments;

/// A task as written, before dependencies are resolved.
#[derive(Debug, Clone)]
pub(crate) struct RawTask {
    pub id: String,
    pub title: String,
    pub dod: String,
    /// Everything else written for the task (heading bodies), for risk detection.
    pub extra: String,
    pub depends: String,
    pub depends_line: usize,
    /// The Writes cell or line; `None` when the task has none.
    pub writes: Option<String>,
    pub writes_line: usize,
    /// The Status cell, trimmed (heading form: the marker).
    pub status: String,
    pub marker: Option<Marker>,
    pub state: MarkerState,
    /// Byte range in the file that a status update replaces.
    pub status_span: Range<usize>,
    pub line: usize,
    /// Labels (lower-case) of the `Phase …` headings around the task, outermost first.
    pub phases: Vec<String>,
}

/// A `- [ ] 1.1 text` item outside a heading task.
#[derive(Debug, Clone)]
pub(crate) struct ChecklistItem {
    pub id: String,
    pub done: bool,
    pub line: usize,
}

/// Everything the scanner found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub tasks: Vec<RawTask>,
    pub checklist: Vec<ChecklistItem>,
    /// (line, message) notes that become warnings.
    pub notes: Vec<(usize, String)>,
    /// Number of task tables and task headings seen.
    pub task_tables: usize,
}

/// The columns of a task table.
#[derive(Debug, Clone)]
struct TaskTable {
    columns: usize,
    dod: usize,
    writes: bool,
}

enum TableState {
    None,
    Tasks(TaskTable),
    Other,
}

/// One line of the file.
struct Line<'a> {
    number: usize,
    start: usize,
    text: &'a str,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        out.push(Line { number: i + 1, start, text: body });
        start += raw.len();
    }
    out
}

/// A table cell: text with `\|` unescaped, and the byte range of the trimmed cell.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub text: String,
    pub span: Range<usize>,
}

/// Splits a table row into cells (an escaped `\|` stays inside its cell).
fn split_row(line: &str, base: usize) -> Vec<Cell> {
    let Some(open) = line.find('|') else { return Vec::new() };
    let mut cells = Vec::new();
    let mut cell_start = open + 1;
    let bytes = line.as_bytes();
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'|') {
            i += 2;
            continue;
        }
        if bytes[i] == b'|' {
            cells.push(make_cell(line, cell_start..i, base));
            cell_start = i + 1;
        }
        i += 1;
    }
    let tail = &line[cell_start..];
    if !tail.trim().is_empty() {
        cells.push(make_cell(line, cell_start..line.len(), base));
    }
    cells
}

fn make_cell(line: &str, range: Range<usize>, base: usize) -> Cell {
    let raw = &line[range.clone()];
    let trimmed = raw.trim();
    // A blank cell's span sits after its first space, so writing into it gives `| x |`.
    let lead =
        if trimmed.is_empty() { raw.len().min(1) } else { raw.len() - raw.trim_start().len() };
    let start = range.start + lead;
    Cell { text: trimmed.replace("\\|", "|"), span: base + start..base + start + trimmed.len() }
}

fn is_separator_row(cells: &[Cell]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let t = c.text.trim();
            !t.is_empty() && t.contains('-') && t.chars().all(|ch| matches!(ch, '-' | ':' | ' '))
        })
}

/// Removes Markdown emphasis and code ticks, trims and lower-cases a header cell.
fn header_word(cell: &str) -> String {
    cell.chars().filter(|c| !matches!(c, '*' | '`' | '_')).collect::<String>().trim().to_lowercase()
}

const TASK_HEADERS: &[&str] = &["task", "tasks", "id", "task id", "#", "タスク", "태스크", "任务"];
const DOD_HEADERS: &[&str] =
    &["dod", "definition of done", "done when", "完了条件", "完成条件", "완료 조건", "완료조건"];
const DEPENDS_HEADERS: &[&str] = &[
    "depends",
    "depends on",
    "dependencies",
    "deps",
    "依存",
    "依存関係",
    "依赖",
    "의존",
    "의존성",
    "선행",
];
const STATUS_HEADERS: &[&str] = &["status", "state", "状態", "ステータス", "状态", "상태"];
const WRITES_HEADERS: &[&str] = &["writes", "write set", "write-set", "writeset"];

enum Header {
    Tasks(TaskTable),
    /// Starts with Task and ends with Status but lacks DoD or Depends.
    AlmostTasks,
    Other,
}

fn classify_header(cells: &[Cell]) -> Header {
    let words: Vec<String> = cells.iter().map(|c| header_word(&c.text)).collect();
    let n = words.len();
    if n < 2 || !TASK_HEADERS.contains(&words[0].as_str()) {
        return Header::Other;
    }
    if !STATUS_HEADERS.contains(&words[n - 1].as_str()) {
        return Header::Other;
    }
    if n < 4 || !DEPENDS_HEADERS.contains(&words[n - 2].as_str()) {
        return Header::AlmostTasks;
    }
    let writes = n >= 5 && WRITES_HEADERS.contains(&words[n - 3].as_str());
    let middle_end = if writes { n - 3 } else { n - 2 };
    match (1..middle_end).find(|&i| DOD_HEADERS.contains(&words[i].as_str())) {
        Some(dod) => Header::Tasks(TaskTable { columns: n, dod, writes }),
        None => Header::AlmostTasks,
    }
}

/// Strips Markdown decoration from an id cell: `**1.2**`, `` `1.2` ``, `~~1.2~~`.
pub(crate) fn clean_id(cell: &str) -> String {
    let stripped: String =
        cell.chars().filter(|c| !matches!(c, '*' | '`' | '~')).collect::<String>();
    let mut id = stripped.trim();
    for prefix in ["Task ", "task ", "TASK "] {
        if let Some(rest) = id.strip_prefix(prefix) {
            id = rest.trim_start();
        }
    }
    id.trim_end_matches([':', '：']).trim().to_owned()
}

/// An id as the heading and checklist forms write it: starts with a letter or digit,
/// contains a digit, and uses only letters, digits, `.`, `_` and `-`.
fn id_like(token: &str) -> bool {
    token.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Splits `Task 1.2: title` / `1.2 title` into id and rest, if it starts with an id.
fn leading_id(text: &str) -> Option<(String, &str)> {
    let mut t = text.trim_start().trim_start_matches(['*', '`']);
    for prefix in ["Task ", "task ", "TASK ", "タスク "] {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim_start();
        }
    }
    let end = t
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map_or(t.len(), |(i, _)| i);
    let id = t[..end].trim_end_matches('.');
    if !id_like(id) {
        return None;
    }
    let rest = &t[end..];
    // After the id: end, `:`, whitespace, or closing emphasis.
    let next = rest.chars().next();
    if !matches!(next, None | Some(':' | '：' | '*' | '`') | Some(' ' | '\t')) {
        return None;
    }
    let rest = rest.trim_start_matches(['*', '`']).trim_start();
    let rest = rest.strip_prefix([':', '：']).unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix(['—', '–', '-']).map_or(rest, str::trim_start);
    Some((id.to_owned(), rest))
}

/// The label of a `Phase …` heading: `Phase 5.15: Clouds` → `5.15`.
pub(crate) fn phase_label(text: &str) -> Option<String> {
    let t = text.trim_start_matches(|c: char| !c.is_alphanumeric());
    let lower = t.to_lowercase();
    let rest = lower.strip_prefix("phase")?;
    if !rest.starts_with(|c: char| c.is_ascii_digit() || matches!(c, ' ' | '\t' | '-' | '_')) {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t', '-', '_']);
    let label: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-')).collect();
    let label = label.trim_end_matches(['.', '-', '_']);
    (!label.is_empty()).then(|| label.to_owned())
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.len() - t.trim_start_matches('#').len();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    // A closing sequence of `#` is not part of the text.
    let text = text.trim_end_matches('#').trim_end();
    Some((level, text))
}

fn fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    for ch in ['`', '~'] {
        let n = t.len() - t.trim_start_matches(ch).len();
        if n >= 3 {
            return Some((ch, n));
        }
    }
    None
}

/// `- [ ] text` → (checked, text).
fn checklist(line: &str) -> Option<(bool, &str)> {
    let t = line.trim_start();
    let t = t.strip_prefix(['-', '*', '+'])?.trim_start();
    if let Some(rest) = t.strip_prefix("[ ]") {
        return Some((false, rest.trim()));
    }
    if let Some(rest) = t.strip_prefix("[x]").or_else(|| t.strip_prefix("[X]")) {
        return Some((true, rest.trim()));
    }
    None
}

/// `Depends: x` (optionally as a bullet and in bold) → ("depends", "x").
fn labelled(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let t = t.strip_prefix(['-', '*', '+']).map_or(t, str::trim_start);
    let cleaned: String = t.chars().filter(|&c| c != '*').collect();
    let (label, value) = cleaned.split_once([':', '：'])?;
    let label = label.trim().to_lowercase();
    let kind = match label.as_str() {
        "depends" | "depends on" | "dependencies" | "deps" | "依存" | "依赖" | "의존" => {
            "depends"
        }
        "writes" | "write set" | "write-set" | "files" => "writes",
        "dod" | "definition of done" | "完了条件" | "완료 조건" => "dod",
        _ => return None,
    };
    Some((kind, value.trim().to_owned()))
}

/// A bullet line's text (`- x`, `* x`, `1. x`, `- [ ] x`), or `None`.
fn bullet(line: &str) -> Option<&str> {
    if let Some((_, text)) = checklist(line) {
        return Some(text);
    }
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix(['-', '*', '+'])
        && rest.starts_with([' ', '\t'])
    {
        return Some(rest.trim());
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0
        && let Some(rest) = t[digits..].strip_prefix(['.', ')'])
        && rest.starts_with([' ', '\t'])
    {
        return Some(rest.trim());
    }
    None
}

/// A heading task under construction.
struct OpenHeading {
    level: usize,
    task: RawTask,
    body: Vec<String>,
}

/// Scans a Plans.md.
pub(crate) fn scan(text: &str) -> Scan {
    let mut out = Scan::default();
    let mut table = TableState::None;
    let mut fenced: Option<(char, usize)> = None;
    let mut in_comment = false;
    // (level, label) of enclosing phase headings.
    let mut phases: Vec<(usize, String)> = Vec::new();
    let mut open: Option<OpenHeading> = None;

    let all = lines(text);
    let mut i = 0;
    while i < all.len() {
        let line = &all[i];
        i += 1;
        let content =
            if line.number == 1 { line.text.trim_start_matches('\u{feff}') } else { line.text };
        let base = line.start + (line.text.len() - content.len());

        if let Some((ch, n)) = fenced {
            if let Some((c2, n2)) = fence(content)
                && c2 == ch
                && n2 >= n
                && content.trim().trim_start_matches(ch).is_empty()
            {
                fenced = None;
            }
            continue;
        }
        if in_comment {
            if content.contains("-->") {
                in_comment = false;
            }
            continue;
        }
        if let Some(f) = fence(content) {
            fenced = Some(f);
            table = TableState::None;
            continue;
        }
        let trimmed = content.trim();
        if trimmed.starts_with("<!--") && !trimmed.contains("-->") {
            in_comment = true;
            continue;
        }

        if trimmed.starts_with('|') {
            let cells = split_row(content, base);
            match &table {
                TableState::None => {
                    table = match classify_header(&cells) {
                        Header::Tasks(t) => {
                            out.task_tables += 1;
                            TableState::Tasks(t)
                        }
                        Header::AlmostTasks => {
                            out.notes.push((
                                line.number,
                                "this table has Task and Status columns but no DoD or Depends \
                                 column, so its rows are not scheduled — use the header \
                                 `| Task | 内容 | DoD | Depends | Status |`"
                                    .to_owned(),
                            ));
                            TableState::Other
                        }
                        Header::Other => TableState::Other,
                    };
                }
                TableState::Other => {}
                TableState::Tasks(t) => {
                    if !is_separator_row(&cells) {
                        let t = t.clone();
                        if let Some(task) = table_row(&t, &cells, line.number, &phases, &mut out) {
                            out.tasks.push(task);
                        }
                    }
                }
            }
            continue;
        }
        table = TableState::None;

        if let Some((level, text)) = heading(content) {
            if let Some(o) = open.take_if(|o| level <= o.level) {
                out.tasks.push(finish_heading(o));
            }
            while phases.last().is_some_and(|(l, _)| *l >= level) {
                phases.pop();
            }
            if let Some(label) = phase_label(text) {
                phases.push((level, label));
            }
            if open.is_none()
                && let Some(task) = heading_task(text, content, base, line.number, &phases)
            {
                out.task_tables += 1;
                open = Some(OpenHeading { level, task, body: Vec::new() });
            }
            continue;
        }

        if let Some(o) = open.as_mut() {
            if let Some((kind, value)) = labelled(content) {
                match kind {
                    "depends" => {
                        o.task.depends = value;
                        o.task.depends_line = line.number;
                    }
                    "writes" => {
                        o.task.writes = Some(value);
                        o.task.writes_line = line.number;
                    }
                    _ => o.task.dod = value,
                }
            } else if let Some(text) = bullet(content) {
                o.body.push(text.to_owned());
            } else if !trimmed.is_empty() {
                o.task.extra.push_str(trimmed);
                o.task.extra.push('\n');
            }
            continue;
        }

        if let Some((checked, text)) = checklist(content)
            && let Some((id, _)) = leading_id(text)
        {
            let done = checked || find_marker(text).is_some_and(|m| m.state == MarkerState::Done);
            out.checklist.push(ChecklistItem { id, done, line: line.number });
        }
    }
    if let Some(o) = open.take() {
        out.tasks.push(finish_heading(o));
    }
    // A heading task is complete only at its end, after any table rows inside it.
    out.tasks.sort_by_key(|t| t.line);
    out
}

fn finish_heading(open: OpenHeading) -> RawTask {
    let mut task = open.task;
    if !open.body.is_empty() {
        let listed = open.body.join("; ");
        if task.dod.is_empty() {
            task.dod = listed;
        } else {
            task.extra.push_str(&listed);
        }
    }
    if task.dod.is_empty() {
        task.dod = task.title.clone();
    }
    task
}

fn heading_task(
    text: &str,
    line_text: &str,
    base: usize,
    number: usize,
    phases: &[(usize, String)],
) -> Option<RawTask> {
    let marker = find_marker(line_text)?;
    let (id, rest) = leading_id(text)?;
    // Title: the heading text after the id, without the marker and code ticks.
    let marker_in_rest = find_marker(rest);
    let mut title = match &marker_in_rest {
        Some(m) => format!("{}{}", &rest[..m.replace.start], &rest[m.replace.end..]),
        None => rest.to_owned(),
    };
    title.retain(|c| c != '`');
    let title = strip_comments(&title);
    let title = if title.is_empty() { id.clone() } else { title };
    let state = marker.state;
    Some(RawTask {
        id,
        title,
        dod: String::new(),
        extra: text.to_owned() + "\n",
        depends: String::new(),
        depends_line: number,
        writes: None,
        writes_line: number,
        status: line_text[marker.replace.clone()].to_owned(),
        status_span: base + marker.replace.start..base + marker.replace.end,
        marker: Some(marker),
        state,
        line: number,
        phases: phases.iter().map(|(_, l)| l.clone()).collect(),
    })
}

fn table_row(
    table: &TaskTable,
    cells: &[Cell],
    number: usize,
    phases: &[(usize, String)],
    out: &mut Scan,
) -> Option<RawTask> {
    if cells.iter().all(|c| c.text.is_empty()) {
        return None;
    }
    let min = if table.writes { 5 } else { 4 };
    if cells.len() < min {
        out.notes.push((
            number,
            format!(
                "row has {} cells, a task row needs at least {min} (Task, content, {}Depends, Status); not scheduled",
                cells.len(),
                if table.writes { "Writes, " } else { "" }
            ),
        ));
        return None;
    }
    let id = clean_id(&cells[0].text);
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        out.notes.push((
            number,
            format!(
                "the Task cell `{}` is not a task id (one word such as `1.2` or `GEO-3.1`); row not scheduled",
                cells[0].text
            ),
        ));
        return None;
    }
    let n = cells.len();
    let status = &cells[n - 1];
    let depends = &cells[n - 2];
    let writes = table.writes.then(|| cells[n - 3].text.clone());
    let middle_end = if table.writes { n - 3 } else { n - 2 };
    let middle = &cells[1..middle_end];
    let (title, dod) = if n == table.columns {
        let title =
            cells[1..table.dod].iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" — ");
        (title, cells[table.dod].text.clone())
    } else {
        out.notes.push((
            number,
            format!(
                "row has {n} cells but the table header has {}; read Task from the first cell, \
                 Status from the last and Depends from the one before it",
                table.columns
            ),
        ));
        let title = middle.first().map(|c| c.text.clone()).unwrap_or_default();
        let dod = middle.iter().skip(1).map(|c| c.text.as_str()).collect::<Vec<_>>().join(" / ");
        (title, dod)
    };
    let marker = find_marker(&status.text);
    let (state, span) = match &marker {
        Some(m) => {
            (m.state, status.span.start + m.replace.start..status.span.start + m.replace.end)
        }
        None => (bare_status(&status.text).unwrap_or(MarkerState::Unknown), status.span.clone()),
    };
    let clean_title = strip_comments(&title).replace("**", "");
    Some(RawTask {
        title: if clean_title.is_empty() { id.clone() } else { clean_title },
        extra: title,
        id,
        dod,
        depends: depends.text.clone(),
        depends_line: number,
        writes,
        writes_line: number,
        status: status.text.clone(),
        marker,
        state,
        status_span: span,
        line: number,
        phases: phases.iter().map(|(_, l)| l.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split_on_unescaped_pipes() {
        let cells = split_row("| a | b \\| c |  d  |", 0);
        let texts: Vec<_> = cells.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["a", "b | c", "d"]);
        assert_eq!(&"| a | b \\| c |  d  |"[cells[2].span.clone()], "d");
    }

    #[test]
    fn leading_ids() {
        assert_eq!(leading_id("1.2: Title").map(|x| x.0), Some("1.2".into()));
        assert_eq!(leading_id("Task 3: Foo").map(|x| x.0), Some("3".into()));
        assert_eq!(leading_id("**GEO-3.1** Foo").map(|x| x.0), Some("GEO-3.1".into()));
        assert_eq!(leading_id("Setup the thing"), None);
        assert_eq!(leading_id("Setup 1.2"), None);
        assert_eq!(leading_id("1.2/3 split"), None);
    }

    #[test]
    fn phase_labels() {
        assert_eq!(phase_label("Phase 5.15: Cloud Layer").as_deref(), Some("5.15"));
        assert_eq!(phase_label("Phase A: gate").as_deref(), Some("a"));
        assert_eq!(phase_label("✅ Phase 2 — done").as_deref(), Some("2"));
        assert_eq!(phase_label("Phases overview"), None);
    }
}
