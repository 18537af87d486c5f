//! Task tables: which columns a header names, and how a row reads.
//!
//! A table is a task table when its header names a task id column (`Task`, `ID`, `#`,
//! `タスク`, ...) and a status column (`Status`, `状態`, ...). Every other column is
//! optional and may stand anywhere: title (`内容`, `Content`, ...), DoD (any header
//! with the word `DoD`, `完了条件`, ...), Depends, Writes, a marker column
//! (`Completion marker`) and columns breeze does not use.

use std::ops::Range;

use super::ids::clean_id;
use super::marker::{Marker, MarkerState, bare_status, find_marker, find_markers};

/// A table cell: text with `\|` unescaped, and the byte range of the trimmed cell.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub text: String,
    pub span: Range<usize>,
}

/// Splits a table row into cells (an escaped `\|` stays inside its cell). `base` is
/// the row's byte offset in the file.
pub(crate) fn split_row(line: &str, base: usize) -> Vec<Cell> {
    split(line, base, false)
}

/// [`split_row`], keeping a `|` inside a code span (`` `a | b` ``) in its cell: how a row
/// that is too wide is read when that gives it as many cells as its header.
pub(crate) fn split_row_keeping_code(line: &str, base: usize) -> Vec<Cell> {
    split(line, base, true)
}

fn split(line: &str, base: usize, keep_code: bool) -> Vec<Cell> {
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
        if keep_code && bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            let fence = &line[i..i + run];
            // The span ends at the next run of exactly as many backticks.
            let close = line[i + run..].match_indices(fence).find(|&(at, _)| {
                let end = i + run + at + run;
                bytes.get(end) != Some(&b'`') && (at == 0 || bytes[i + run + at - 1] != b'`')
            });
            if let Some((at, _)) = close {
                i += run + at + run;
                continue;
            }
            i += run;
            continue;
        }
        if bytes[i] == b'|' {
            cells.push(make_cell(line, cell_start..i, base));
            cell_start = i + 1;
        }
        i += 1;
    }
    if !line[cell_start..].trim().is_empty() {
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

/// `|---|:--:|` rows.
pub(crate) fn is_separator_row(cells: &[Cell]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let t = c.text.trim();
            !t.is_empty() && t.contains('-') && t.chars().all(|ch| matches!(ch, '-' | ':' | ' '))
        })
}

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `ID`, `#`: always the id.
    Id,
    /// `Task`, `タスク`: the id, or the title when there is an `ID` column too.
    Task,
    Title,
    Dod,
    Depends,
    Writes,
    Status,
    Marker,
    Other,
}

const ID_HEADERS: &[&str] = &["id", "task id", "#", "no", "no.", "番号"];
const TASK_HEADERS: &[&str] = &["task", "tasks", "タスク", "태스크", "任务", "작업"];
const TITLE_HEADERS: &[&str] = &[
    "内容",
    "content",
    "contents",
    "description",
    "scope",
    "title",
    "summary",
    "name",
    "issue",
    "概要",
    "項目",
    "내용",
    "contenido",
    "conteúdo",
    "contenu",
    "содержание",
];
const DOD_HEADERS: &[&str] = &[
    "definition of done",
    "done when",
    "acceptance",
    "acceptance criteria",
    "完了条件",
    "完成条件",
    "受け入れ条件",
    "受入条件",
    "완료 조건",
    "완료조건",
    "验收标准",
];
const DEPENDS_HEADERS: &[&str] = &[
    "depends",
    "depends on",
    "dependencies",
    "dependency",
    "deps",
    "blocked by",
    "prerequisites",
    "依存",
    "依存関係",
    "前提",
    "依赖",
    "의존",
    "의존성",
    "선행",
];
const STATUS_HEADERS: &[&str] =
    &["status", "state", "状態", "ステータス", "状況", "状态", "상태", "진행 상태", "статус"];
const WRITES_HEADERS: &[&str] = &["writes", "write set", "write-set", "writeset"];
const MARKER_HEADERS: &[&str] = &["marker", "completion marker", "マーカー", "마커"];

/// Removes emphasis, code ticks and surrounding symbols; lower-cases.
fn header_word(cell: &str) -> String {
    let plain: String = cell.chars().filter(|c| !matches!(c, '*' | '`' | '_')).collect();
    let plain = plain.trim();
    if plain == "#" {
        return plain.to_owned();
    }
    plain.trim_matches(|c: char| !c.is_alphanumeric() && c != '.').to_lowercase()
}

fn role(word: &str) -> Role {
    let is = |list: &[&str]| list.contains(&word);
    let has_word = |w: &str| word.split(|c: char| !c.is_alphanumeric()).any(|x| x == w);
    if is(ID_HEADERS) {
        Role::Id
    } else if is(TASK_HEADERS) {
        Role::Task
    } else if is(STATUS_HEADERS) {
        Role::Status
    } else if is(MARKER_HEADERS) {
        Role::Marker
    } else if is(DEPENDS_HEADERS) {
        Role::Depends
    } else if is(WRITES_HEADERS) {
        Role::Writes
    } else if is(DOD_HEADERS) || has_word("dod") {
        Role::Dod
    } else if is(TITLE_HEADERS) {
        Role::Title
    } else {
        Role::Other
    }
}

/// The columns of a task table.
#[derive(Debug, Clone)]
pub(crate) struct Columns {
    pub count: usize,
    /// The header cells as the file writes them (for messages).
    pub names: Vec<String>,
    pub id: usize,
    titles: Vec<usize>,
    dods: Vec<usize>,
    depends: Option<usize>,
    writes: Option<usize>,
    status: usize,
    markers: Vec<usize>,
}

impl Columns {
    /// Whether the table has a Writes column.
    pub fn has_writes(&self) -> bool {
        self.writes.is_some()
    }

    /// The Writes column, if the table has one.
    pub fn writes_column(&self) -> Option<usize> {
        self.writes
    }

    /// The Depends column, if the table has one.
    pub fn depends_column(&self) -> Option<usize> {
        self.depends
    }

    /// The Status column.
    pub fn status_column(&self) -> usize {
        self.status
    }

    /// The header as the file writes it: `| Task | 内容 | Status |`.
    pub fn header(&self) -> String {
        format!("| {} |", self.names.join(" | "))
    }
}

/// A header row as the file writes it: `| Phase | 状態 |`.
pub(crate) fn header_text(cells: &[Cell]) -> String {
    let names: Vec<&str> = cells.iter().map(|c| c.text.as_str()).collect();
    format!("| {} |", names.join(" | "))
}

/// What a table header says the table is.
pub(crate) enum Header {
    Tasks(Columns),
    /// A Status column but no Task/ID column: a summary, not tasks.
    StatusWithoutId,
    Other,
}

/// Reads a header row.
pub(crate) fn classify_header(cells: &[Cell]) -> Header {
    let roles: Vec<Role> = cells.iter().map(|c| role(&header_word(&c.text))).collect();
    let find = |r: Role| roles.iter().position(|&x| x == r);
    let all = |r: Role| -> Vec<usize> { (0..roles.len()).filter(|&i| roles[i] == r).collect() };
    let status = roles.iter().rposition(|&x| x == Role::Status);
    let id = find(Role::Id).or_else(|| find(Role::Task));
    let (Some(status), Some(id)) = (status, id) else {
        return if status.is_some() { Header::StatusWithoutId } else { Header::Other };
    };
    let mut titles = all(Role::Title);
    titles.extend(all(Role::Task).into_iter().filter(|&i| i != id));
    titles.sort_unstable();
    if titles.is_empty() {
        // `| Task | Goal | Status |`: the first column breeze does not know.
        titles.extend((id + 1..roles.len()).find(|&i| roles[i] == Role::Other));
    }
    Header::Tasks(Columns {
        count: cells.len(),
        names: cells.iter().map(|c| c.text.clone()).collect(),
        id,
        titles,
        dods: all(Role::Dod),
        depends: find(Role::Depends),
        writes: find(Role::Writes),
        status,
        markers: all(Role::Marker),
    })
}

/// A row read through its table's columns.
pub(crate) struct Row {
    pub id: String,
    /// The cell the id was read from.
    pub id_cell: usize,
    pub title: String,
    pub dod: String,
    pub depends: String,
    pub writes: Option<String>,
    /// The status cell's text.
    pub status: String,
    pub marker: Option<Marker>,
    pub state: MarkerState,
    /// What a status update replaces: the marker, or the whole status cell.
    pub status_span: Range<usize>,
    /// The row is wider or narrower than the header (read by position, see
    /// [`read_row`]).
    pub misaligned: bool,
}

/// Which cells of a row hold what.
struct Layout {
    id: usize,
    status: usize,
    depends: Option<usize>,
    writes: Option<usize>,
}

/// Reads a row. A row as wide as the header is read by column; any other row takes
/// its id from the first cell and its status from the right-most cell holding a
/// marker (else the last cell), with Depends (and Writes) the cells before a
/// last-cell status when the header has them just before Status.
pub(crate) fn read_row(columns: &Columns, cells: &[Cell]) -> Row {
    let misaligned = cells.len() != columns.count;
    let layout = if misaligned { positional(columns, cells) } else { by_column(columns, cells) };
    let status = &cells[layout.status];
    let marker = find_marker(&status.text);
    let (state, status_span) = match &marker {
        Some(m) => {
            (m.state, status.span.start + m.replace.start..status.span.start + m.replace.end)
        }
        None => (bare_status(&status.text).unwrap_or(MarkerState::Unknown), status.span.clone()),
    };
    let used = |i: usize| {
        i == layout.id
            || i == layout.status
            || Some(i) == layout.depends
            || Some(i) == layout.writes
    };
    let (title, dod) = if misaligned {
        let middle: Vec<&str> =
            (1..cells.len()).filter(|&i| !used(i)).map(|i| cells[i].text.as_str()).collect();
        let title = middle.first().map(|t| (*t).to_owned()).unwrap_or_default();
        (title, middle.iter().skip(1).copied().collect::<Vec<_>>().join(" / "))
    } else {
        let pick = |idx: &[usize]| -> String {
            let texts: Vec<&str> = idx
                .iter()
                .filter(|&&i| !used(i) && !cells[i].text.is_empty())
                .map(|&i| cells[i].text.as_str())
                .collect();
            texts.join(" — ")
        };
        (pick(&columns.titles), pick(&columns.dods))
    };
    let text_of = |i: Option<usize>| i.map(|i| cells[i].text.clone());
    Row {
        id: clean_id(&cells[layout.id].text),
        id_cell: layout.id,
        title,
        dod,
        depends: text_of(layout.depends).unwrap_or_default(),
        writes: text_of(layout.writes),
        status: status.text.clone(),
        marker,
        state,
        status_span,
        misaligned,
    }
}

/// A row as wide as its header: by column, the status from the Status column or a
/// marker column when only that holds a marker.
fn by_column(columns: &Columns, cells: &[Cell]) -> Layout {
    let has_marker = |i: usize| !find_markers(&cells[i].text).is_empty();
    let status = if has_marker(columns.status) {
        columns.status
    } else {
        columns.markers.iter().copied().find(|&i| has_marker(i)).unwrap_or(columns.status)
    };
    Layout { id: columns.id, status, depends: columns.depends, writes: columns.writes }
}

fn positional(columns: &Columns, cells: &[Cell]) -> Layout {
    let last = cells.len() - 1;
    let status =
        (1..cells.len()).rev().find(|&i| !find_markers(&cells[i].text).is_empty()).unwrap_or(last);
    let status_last_in_header = columns.status + 1 == columns.count;
    let just_before = |col: Option<usize>, gap: usize| {
        col.is_some_and(|c| c + gap == columns.status)
            && status_last_in_header
            && status == last
            && status > gap
    };
    let depends = just_before(columns.depends, 1).then(|| status - 1);
    let writes = (depends.is_some() && just_before(columns.writes, 2)).then(|| status - 2);
    Layout { id: 0, status, depends, writes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(row: &str) -> Vec<Cell> {
        split_row(row, 0)
    }

    fn columns(header: &str) -> Option<Columns> {
        match classify_header(&cells(header)) {
            Header::Tasks(c) => Some(c),
            _ => None,
        }
    }

    #[test]
    fn rows_split_on_unescaped_pipes() {
        let c = cells("| a | b \\| c |  d  |");
        let texts: Vec<_> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["a", "b | c", "d"]);
        assert_eq!(&"| a | b \\| c |  d  |"[c[2].span.clone()], "d");
    }

    #[test]
    fn pipes_in_code_spans_when_a_row_is_too_wide() {
        let row = "| 16.1.5 | a `\"x\" | \"y\"` field | ``a|b`` | cc:TODO |";
        assert_eq!(cells(row).len(), 6);
        let kept: Vec<String> =
            split_row_keeping_code(row, 0).into_iter().map(|c| c.text).collect();
        assert_eq!(kept, ["16.1.5", "a `\"x\" | \"y\"` field", "``a|b``", "cc:TODO"]);
        assert_eq!(split_row_keeping_code("| a | `open | b |", 0).len(), 3, "no closing tick");
    }

    #[test]
    fn headers_of_real_tables() {
        for header in [
            "| Task | 内容 | DoD | Depends | Status |",
            "| Task | 内容 | Status |",
            "| ID | タスク | 優先度 | 状態 |",
            "| ID | タスク | 優先度 | 依存 | 状態 |",
            "| Task | Sev | Issue | Fix / DoD | Depends | Status |",
            "| Task | Content | Status | Completion marker |",
            "| # | Task | Content | DoD | Depends | Status |",
            "| Task | 내용 | 구현 가능성 | Status |",
        ] {
            assert!(columns(header).is_some(), "{header}");
        }
        for header in ["| Marker | State |", "| Phase | 内容 |", "| Reviewer | Verdict |"] {
            assert!(columns(header).is_none(), "{header}");
        }
        assert!(matches!(
            classify_header(&cells("| フェーズ | 状態 | 進捗 |")),
            Header::StatusWithoutId
        ));
    }

    #[test]
    fn rows_read_by_column() {
        let c = columns("| ID | タスク | 優先度 | 依存 | 状態 |").unwrap();
        let row = read_row(&c, &cells("| OPT-02 | Agent | 🔴 High | OPT-01 | `cc:TODO` |"));
        assert_eq!((row.id.as_str(), row.title.as_str()), ("OPT-02", "Agent"));
        assert_eq!((row.depends.as_str(), row.state), ("OPT-01", MarkerState::Active));
        assert!(!row.misaligned);

        let c = columns("| Task | Content | Status | Completion marker |").unwrap();
        let row = read_row(&c, &cells("| 1.2 | bar | Pending | `cc:TODO` |"));
        assert_eq!((row.status.as_str(), row.state), ("`cc:TODO`", MarkerState::Active));
        let row = read_row(&c, &cells("| 1.3 | baz | cc:done | 4f2a9c1 |"));
        assert_eq!(row.state, MarkerState::Done);

        let c = columns("| Task | Sev | Issue | Fix / DoD | Depends | Status |").unwrap();
        let row = read_row(&c, &cells("| 2.16 | C | Bad | Redo it | 2.14, 2.15 | cc:TODO |"));
        assert_eq!((row.title.as_str(), row.dod.as_str()), ("Bad", "Redo it"));
        assert_eq!(row.depends, "2.14, 2.15");
    }

    #[test]
    fn misaligned_rows_read_by_position() {
        let c = columns("| Task | 内容 | DoD | Depends | Status |").unwrap();
        let row = read_row(&c, &cells("| 1.1 | a | b | c | - | cc:done |"));
        assert!(row.misaligned);
        assert_eq!((row.depends.as_str(), row.state), ("-", MarkerState::Done));
        assert_eq!(row.title, "a");
    }
}
