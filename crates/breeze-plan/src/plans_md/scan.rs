//! Line scanner for Plans.md: task tables, heading tasks, list-item tasks, marked
//! sections (a heading carrying a marker but no id, whose status the id'd items below
//! it inherit) and `Phase …` labels.
//!
//! The scanner knows Markdown only as far as plans need: fenced code blocks and HTML
//! comments are skipped (templates inside them are not tasks), tables are runs of
//! lines starting with `|`, headings nest by level.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use super::ids::{clean_id, id_like, leading_id, numbered_step, phase_label};
use super::list::{ItemTask, read_item};
use super::marker::{Marker, MarkerState, bare_blocked, find_markers};
use super::md::{self, Line, ListItem, blank_comments, closes_fence, fence, list_item};
use super::table::{
    Cell, Columns, Header, classify_header, header_text, is_separator_row, read_row, split_row,
    split_row_keeping_code,
};
use crate::text::strip_comments;

/// Something written in the plan, with its line.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub text: String,
    pub line: usize,
}

/// A task as written, before dependencies are resolved.
#[derive(Debug, Clone)]
pub(crate) struct RawTask {
    /// Its id in the plan: the id as written, or — when the same id is written under
    /// different headings — `<heading>/<id>` (`Phase 2/1.1`); see [`qualify_repeated_ids`].
    pub id: String,
    /// The id as written.
    pub written_id: String,
    /// Byte range of the written id in the file.
    pub id_span: Range<usize>,
    pub title: String,
    pub dod: String,
    /// Everything else written for the task (heading bodies, extra cells), for risk
    /// detection.
    pub extra: String,
    /// Dependency texts: the task's own, then those of the sections around it.
    pub depends: Vec<Written>,
    /// The Writes cell or line; `None` when the task has none.
    pub writes: Option<String>,
    pub writes_line: usize,
    /// The status as written (a Status cell, a marker, or the marker of the section
    /// the task inherits its status from).
    pub status: String,
    /// The task's own marker, if it has one.
    pub marker: Option<Marker>,
    pub state: MarkerState,
    /// Byte range in the file that a status update replaces; with `insert_status`,
    /// the empty range where a marker is inserted (the task has none of its own).
    pub status_span: Range<usize>,
    pub insert_status: bool,
    pub line: usize,
    /// Labels (lower-case) of the `Phase …` headings around the task, outermost first.
    pub phases: Vec<String>,
    /// The table or section the task is written in (for `all above`).
    pub group: usize,
    /// The sections around the task (for section-level `depends:` lines).
    pub sections: Vec<usize>,
}

/// A `- [ ] 1.1 text` item without a status marker, outside a marked section.
#[derive(Debug, Clone)]
pub(crate) struct ChecklistItem {
    pub id: String,
    pub done: bool,
    pub line: usize,
}

/// Where a to-do item without a task id stands, and where an id goes.
#[derive(Debug, Clone)]
pub(crate) struct Unnumbered {
    pub line: usize,
    /// Byte offset in the file where the id is written: the start of a heading's or list
    /// item's text (after a leading marker), or an empty id cell.
    pub at: usize,
    pub kind: UnnumberedKind,
    /// The sections around the item, outermost first.
    pub sections: Vec<usize>,
    /// The table (rows) or section (items, headings) it belongs to, as [`RawTask::group`].
    pub group: usize,
    pub title: String,
}

/// What form a to-do item without an id has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnnumberedKind {
    /// A task-table row with an empty id cell.
    Row,
    /// A heading marked to do with nothing numbered below it.
    Heading,
    /// A list item marked to do.
    Item,
}

/// A heading, for naming the section of a repeated id and for numbering.
#[derive(Debug, Clone)]
pub(crate) struct HeadingInfo {
    /// Its text, comments removed.
    pub title: String,
    pub line: usize,
}

/// A row that cannot be read: (line, what is wrong, what to write instead).
pub(crate) type RowError = (usize, String, String);

/// Everything the scanner found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub tasks: Vec<RawTask>,
    pub checklist: Vec<ChecklistItem>,
    /// (line, message) notes that become warnings.
    pub notes: Vec<(usize, String)>,
    /// Task tables, task headings, list-item tasks and marked sections seen.
    pub structures: usize,
    /// Lines marked to do that could not be read as tasks.
    pub unread: Vec<usize>,
    /// To-do items without a task id (a subset of `unread`): what `--fill-ids` numbers.
    pub unnumbered: Vec<Unnumbered>,
    /// Task rows with too few or too many cells that are not finished: plan errors.
    pub row_errors: Vec<RowError>,
    /// Headings by section ordinal.
    pub headings: BTreeMap<usize, HeadingInfo>,
    /// The headers of tables that are not task tables: (line, header as written).
    pub other_tables: Vec<(usize, String)>,
}

/// A marked section's status, inherited by the id'd items below it.
#[derive(Debug, Clone)]
struct Inherited {
    state: MarkerState,
    text: String,
}

/// A heading and what lies under it.
struct Section {
    level: usize,
    ordinal: usize,
    line: usize,
    /// Byte offset of the heading's text in the file (where an id would go).
    text_at: usize,
    /// The sections around this one, outermost first.
    parents: Vec<usize>,
    title: String,
    label: Option<String>,
    inherit: Option<Inherited>,
    /// A legend (`## 凡例`, `## Status Legend`): its marked items are not tasks.
    legend: bool,
    tasks: usize,
    /// List items marked to do without an id, directly in this section.
    unread: Vec<usize>,
    /// Lines marked to do that could not be read, in this section and below it.
    unread_below: usize,
    depends: Vec<Written>,
}

/// Whether a heading titles a marker legend (`## 凡例`, `## Status Legend`,
/// `## マーカー`): its marked items describe markers, they are not tasks. A heading
/// with a marker of its own is never a legend.
fn is_legend(title: &str) -> bool {
    if !find_markers(title).is_empty() {
        return false;
    }
    let lower = title.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let short = lower.split_whitespace().count() <= 3;
    has(&["legend", "凡例", "범례", "图例"]) || (short && has(&["marker", "マーカー", "마커"]))
}

/// A heading task under construction.
struct OpenHeading {
    level: usize,
    task: RawTask,
    body: Vec<String>,
}

enum Table {
    None,
    Tasks {
        columns: Columns,
        group: usize,
    },
    /// Not a task table; `summary`: the header, when it has a status column but no task
    /// id column.
    Other {
        summary: Option<String>,
        line: usize,
        warned: bool,
    },
}

struct Scanner {
    out: Scan,
    sections: Vec<Section>,
    table: Table,
    /// The last task table of the current section: rows cut off from it by a blank
    /// line or a paragraph still belong to it.
    last_table: Option<(Columns, usize)>,
    open: Option<OpenHeading>,
    /// The list-item task whose nested items form its DoD: (task index, indent).
    list_dod: Option<(usize, usize)>,
    next_group: usize,
    section_depends: HashMap<usize, Vec<Written>>,
}

/// Scans a Plans.md.
pub(crate) fn scan(text: &str) -> Scan {
    let all = md::lines(text);
    let mut s = Scanner::new();
    let mut fenced: Option<(char, usize)> = None;
    let mut in_comment = false;
    for (i, line) in all.iter().enumerate() {
        let content = line.text;
        if let Some(open) = fenced {
            fenced = (!closes_fence(content, open)).then_some(open);
            continue;
        }
        if in_comment {
            in_comment = !content.contains("-->");
            continue;
        }
        if let Some(f) = fence(content) {
            fenced = Some(f);
            s.table = Table::None;
            continue;
        }
        let trimmed = content.trim();
        if trimmed.starts_with("<!--") && !trimmed.contains("-->") {
            in_comment = true;
            continue;
        }
        s.line(line, all.get(i + 1).map(|l| l.text));
    }
    s.finish()
}

impl Scanner {
    fn new() -> Self {
        let root = Section {
            level: 0,
            ordinal: 0,
            line: 0,
            text_at: 0,
            parents: Vec::new(),
            title: String::new(),
            label: None,
            inherit: None,
            legend: false,
            tasks: 0,
            unread: Vec::new(),
            unread_below: 0,
            depends: Vec::new(),
        };
        Scanner {
            out: Scan::default(),
            sections: vec![root],
            table: Table::None,
            last_table: None,
            open: None,
            list_dod: None,
            next_group: 1,
            section_depends: HashMap::new(),
        }
    }

    fn group(&mut self) -> usize {
        self.next_group += 1;
        self.next_group - 1
    }

    fn line(&mut self, line: &Line<'_>, next: Option<&str>) {
        let content = line.text;
        if content.trim_start().starts_with('|') {
            self.table_line(line, next);
            return;
        }
        self.table = Table::None;
        if let Some((level, text, text_end)) = md::heading(content) {
            self.heading(line, level, text, text_end);
        } else if let Some(item) = list_item(content) {
            self.list_line(line, &item);
        } else {
            self.text_line(line);
        }
    }

    fn finish(mut self) -> Scan {
        self.close_heading_task(0);
        while let Some(section) = self.sections.pop() {
            self.close_section(section);
        }
        for task in &mut self.out.tasks {
            for s in &task.sections {
                if let Some(deps) = self.section_depends.get(s) {
                    task.depends.extend(deps.iter().cloned());
                }
            }
        }
        for task in &mut self.out.tasks {
            if task.dod.is_empty() {
                task.dod = task.title.clone();
            }
        }
        // A heading task is complete only at its end, after any rows inside it.
        self.out.tasks.sort_by_key(|t| t.line);
        qualify_repeated_ids(&mut self.out.tasks, &self.out.headings);
        self.out.notes.sort_by_key(|n| n.0);
        self.out.unnumbered.sort_by_key(|u| u.line);
        self.out
    }

    /// A line marked to do that breeze cannot read as a task.
    fn unread(&mut self, line: usize) {
        self.out.unread.push(line);
        self.innermost().unread_below += 1;
    }

    fn innermost(&mut self) -> &mut Section {
        // The root section is never popped before `finish`.
        let last = self.sections.len() - 1;
        &mut self.sections[last]
    }

    fn inherited(&self) -> Option<Inherited> {
        self.sections.iter().rev().find_map(|s| s.inherit.clone())
    }

    fn phases(&self) -> Vec<String> {
        self.sections.iter().filter_map(|s| s.label.clone()).collect()
    }

    fn section_ordinals(&self) -> Vec<usize> {
        self.sections.iter().map(|s| s.ordinal).collect()
    }

    /// Records a task found in the current section and returns its index.
    fn push_task(&mut self, task: RawTask) -> usize {
        self.out.structures += 1;
        self.innermost().tasks += 1;
        self.out.tasks.push(task);
        self.out.tasks.len() - 1
    }

    /// A task with the fields every form shares filled in; `id_at` is the byte offset of
    /// the id in the file.
    fn new_task(
        &self,
        id: String,
        id_at: usize,
        title: String,
        line: usize,
        group: usize,
    ) -> RawTask {
        RawTask {
            title: if title.is_empty() { id.clone() } else { title },
            written_id: id.clone(),
            id_span: id_at..id_at + id.len(),
            id,
            dod: String::new(),
            extra: String::new(),
            depends: Vec::new(),
            writes: None,
            writes_line: line,
            status: String::new(),
            marker: None,
            state: MarkerState::Unknown,
            status_span: 0..0,
            insert_status: false,
            line,
            phases: self.phases(),
            group,
            sections: self.section_ordinals(),
        }
    }
}

// Tables.
impl Scanner {
    fn table_line(&mut self, line: &Line<'_>, next: Option<&str>) {
        self.list_dod = None;
        let cells = split_row(line.text, line.start);
        if matches!(self.table, Table::None) {
            self.start_table(line, &cells, next);
            if !matches!(self.table, Table::Tasks { .. }) || !self.resumed(&cells, next) {
                return;
            }
        }
        match &mut self.table {
            Table::Tasks { columns, group } => {
                if !is_separator_row(&cells) {
                    let (columns, group) = (columns.clone(), *group);
                    let cells = if cells.len() > columns.count {
                        // `| a | `x | y` | b |`: a `|` in a code span, not escaped.
                        let kept = split_row_keeping_code(line.text, line.start);
                        if kept.len() == columns.count { kept } else { cells }
                    } else {
                        cells
                    };
                    self.table_row(&columns, group, &cells, line.number);
                }
            }
            Table::Other { summary: Some(header), line: table_line, warned } => {
                let open = cells.iter().skip(1).flat_map(|c| find_markers(&c.text)).next();
                if !*warned && open.is_some_and(|m| m.state == MarkerState::Active) {
                    *warned = true;
                    let (at, header) = (*table_line, header.clone());
                    self.unread(line.number);
                    self.out.notes.push((
                        at,
                        format!(
                            "the table `{header}` has a status column but no task id column, so its rows are not tasks (line {} is marked to do) — add a `Task` column with ids",
                            line.number
                        ),
                    ));
                }
            }
            Table::Other { .. } | Table::None => {}
        }
    }

    /// Whether a table's first row is a row of the section's last task table, cut off
    /// from it (no header of its own).
    fn resumed(&self, cells: &[Cell], next: Option<&str>) -> bool {
        let next_is_separator = next.is_some_and(|n| is_separator_row(&split_row(n, 0)));
        !next_is_separator && cells.first().is_some_and(|c| id_like(&clean_id(&c.text)))
    }

    fn start_table(&mut self, line: &Line<'_>, cells: &[Cell], next: Option<&str>) {
        self.table = match classify_header(cells) {
            Header::Tasks(columns) => {
                self.out.structures += 1;
                let group = self.group();
                self.last_table = Some((columns.clone(), group));
                Table::Tasks { columns, group }
            }
            Header::StatusWithoutId => {
                self.out.other_tables.push((line.number, header_text(cells)));
                Table::Other { summary: Some(header_text(cells)), line: line.number, warned: false }
            }
            Header::Other => match &self.last_table {
                Some((columns, group)) if self.resumed(cells, next) => {
                    Table::Tasks { columns: columns.clone(), group: *group }
                }
                _ => {
                    if next.is_some_and(|n| is_separator_row(&split_row(n, 0))) {
                        self.out.other_tables.push((line.number, header_text(cells)));
                    }
                    Table::Other { summary: None, line: line.number, warned: false }
                }
            },
        };
    }

    fn table_row(&mut self, columns: &Columns, group: usize, cells: &[Cell], number: usize) {
        if cells.iter().all(|c| c.text.is_empty()) {
            return;
        }
        let row = read_row(columns, cells);
        if row.misaligned && !self.misaligned_row(columns, cells, &row, number) {
            return;
        }
        let id_name = columns.names.get(row.id_cell).map_or("Task", String::as_str);
        if row.id.is_empty() && row.state == MarkerState::Active {
            let cell = &cells[row.id_cell];
            self.unread(number);
            self.out.unnumbered.push(Unnumbered {
                line: number,
                at: cell.span.start,
                kind: UnnumberedKind::Row,
                sections: self.section_ordinals(),
                group,
                title: strip_comments(&row.title).replace("**", ""),
            });
            self.out.notes.push((number, format!(
                "the `{id_name}` cell is empty, so breeze cannot schedule this row — `breeze plan --fill-ids` gives it an id"
            )));
            return;
        }
        if row.id.is_empty() || row.id.chars().any(char::is_whitespace) {
            if row.state != MarkerState::Done {
                self.out.notes.push((number, format!(
                    "the `{id_name}` cell `{}` is not a task id (one word such as `1.2` or `GEO-3.1`); row not scheduled",
                    cells[row.id_cell].text
                )));
                if row.state == MarkerState::Active {
                    self.unread(number);
                }
            }
            return;
        }
        let clean_title = strip_comments(&row.title).replace("**", "");
        let id_cell = &cells[row.id_cell];
        // The id as written inside its cell (`**1.2**`, `[2.1](#21)`).
        let id_at = id_cell.span.start + id_cell.text.find(row.id.as_str()).unwrap_or(0);
        let mut task = self.new_task(row.id, id_at, clean_title, number, group);
        task.dod = row.dod;
        task.extra = row.title;
        if !row.depends.trim().is_empty() {
            task.depends.push(Written { text: row.depends, line: number });
        }
        task.writes =
            if columns.has_writes() { Some(row.writes.unwrap_or_default()) } else { None };
        task.status = row.status;
        task.marker = row.marker;
        task.state = row.state;
        task.status_span = row.status_span;
        self.push_task(task);
    }

    /// A row with more or fewer cells than its header: an error unless it is finished (a
    /// finished row only satisfies dependencies, so it is read by position, with a
    /// warning). Returns whether to read it.
    fn misaligned_row(
        &mut self,
        columns: &Columns,
        cells: &[Cell],
        row: &super::table::Row,
        number: usize,
    ) -> bool {
        let what = format!(
            "row has {} cell{} but the header of its table (`{}`) has {}",
            cells.len(),
            if cells.len() == 1 { "" } else { "s" },
            columns.header(),
            columns.count
        );
        if row.state == MarkerState::Done && cells.len() < 2 {
            // Its one cell is read as both id and status: nothing to read.
            self.out.notes.push((number, format!("{what}; it is not read")));
            return false;
        }
        if row.state == MarkerState::Done {
            self.out.notes.push((number, format!(
                "{what}; it is finished, so breeze read its task id from the first cell and its status from the last cell with a marker"
            )));
            return true;
        }
        let fix =
            "write one cell per column — `|  |` for an empty cell, `\\|` for a `|` inside a cell"
                .to_owned();
        self.out.row_errors.push((number, what, fix));
        false
    }
}

// Headings.
impl Scanner {
    fn heading(&mut self, line: &Line<'_>, level: usize, text: &str, text_end: usize) {
        self.close_heading_task(level);
        self.list_dod = None;
        self.last_table = None;
        while self.sections.last().is_some_and(|s| s.level >= level && s.level > 0) {
            if let Some(section) = self.sections.pop() {
                self.close_section(section);
            }
        }
        let blanked = blank_comments(line.text);
        let text_blanked = &blanked[text_end - text.len()..text_end];
        let lead = leading_id(text_blanked);
        // A task heading may say just `blocked`; a section heading needs a marker.
        let marker = heading_marker(&blanked).or_else(|| {
            lead.as_ref()
                .and_then(|_| bare_blocked(text_blanked).map(|m| shift(m, text_end - text.len())))
        });
        let label = phase_label(text);
        let inherited = self.inherited();
        let ordinal = self.group();
        let parent = self.innermost().ordinal;
        let text_at = line.start + text_end - text.len();
        let title = strip_comments(text);
        self.out.headings.insert(ordinal, HeadingInfo { title: title.clone(), line: line.number });
        let mut section = Section {
            level,
            ordinal,
            line: line.number,
            text_at,
            parents: self.section_ordinals(),
            title,
            label,
            inherit: None,
            legend: is_legend(text),
            tasks: 0,
            unread: Vec::new(),
            unread_below: 0,
            depends: Vec::new(),
        };
        let own_label = section.label.clone();
        if self.open.is_none() {
            match (lead, marker) {
                (Some((id, rest)), Some(m)) => {
                    let id_at = text_at + text_blanked.find(id.as_str()).unwrap_or(0);
                    let task = self.heading_task(line, &id, id_at, rest, own_label, parent);
                    self.open_heading(level, task, line, &m);
                }
                (None, Some(m)) => {
                    self.out.structures += 1;
                    section.inherit = Some(Inherited { state: m.state, text: m.text });
                }
                (Some((id, rest)), None) if inherited.is_some() && !numbered_step(text) => {
                    let id_at = text_at + text_blanked.find(id.as_str()).unwrap_or(0);
                    let mut task = self.heading_task(line, &id, id_at, rest, own_label, parent);
                    inherit_status(&mut task, inherited, line.start + text_end);
                    self.push_open(level, task);
                }
                _ => {}
            }
        }
        self.sections.push(section);
    }

    fn heading_task(
        &self,
        line: &Line<'_>,
        id: &str,
        id_at: usize,
        rest: &str,
        own_label: Option<String>,
        parent: usize,
    ) -> RawTask {
        let mut title = rest.to_owned();
        if let Some(m) = heading_marker(rest) {
            title.replace_range(m.replace.clone(), "");
        }
        title.retain(|c| c != '`');
        let title = strip_comments(&title.replace("[P]", ""));
        let mut task = self.new_task(id.to_owned(), id_at, title, line.number, parent);
        task.phases.extend(own_label);
        task.extra = format!("{}\n", line.text.trim());
        task
    }

    fn open_heading(&mut self, level: usize, mut task: RawTask, line: &Line<'_>, marker: &Marker) {
        task.status = line.text[marker.replace.clone()].to_owned();
        task.status_span = line.start + marker.replace.start..line.start + marker.replace.end;
        task.state = marker.state;
        task.marker = Some(marker.clone());
        self.push_open(level, task);
    }

    fn push_open(&mut self, level: usize, task: RawTask) {
        self.out.structures += 1;
        self.innermost().tasks += 1;
        self.open = Some(OpenHeading { level, task, body: Vec::new() });
    }

    /// Ends the heading task being read if a heading of `level` ends it (0: always).
    fn close_heading_task(&mut self, level: usize) {
        if let Some(open) = self.open.take_if(|o| level == 0 || level <= o.level) {
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
            self.out.tasks.push(task);
        }
    }

    fn close_section(&mut self, section: Section) {
        if let Some(parent) = self.sections.last_mut() {
            parent.tasks += section.tasks;
            parent.unread_below += section.unread_below;
        }
        self.section_depends.insert(section.ordinal, section.depends);
        if !section.unread.is_empty() {
            let lines: Vec<String> = section.unread.iter().map(ToString::to_string).collect();
            self.out.notes.push((section.unread[0], format!(
                "{} marked to do {} no task id ({} {}), so breeze cannot schedule {} — `breeze plan --fill-ids` numbers {}, or start each with an id, e.g. `- [ ] 1.1 text `cc:TODO``",
                if lines.len() == 1 { "1 item".to_owned() } else { format!("{} items", lines.len()) },
                if lines.len() == 1 { "has" } else { "have" },
                if lines.len() == 1 { "line" } else { "lines" },
                lines.join(", "),
                if lines.len() == 1 { "it" } else { "them" },
                if lines.len() == 1 { "it" } else { "them" }
            )));
            return;
        }
        let Some(inherit) = section.inherit else { return };
        if inherit.state == MarkerState::Active
            && section.tasks == 0
            && section.unread_below == 0
            && !section.legend
        {
            // A heading marked to do with nothing numbered below it is one to-do item.
            let title = section.title.replace(&inherit.text, "").replace('`', "");
            let title = title.trim().trim_end_matches(['—', '-', ':']).trim().to_owned();
            self.out.unread.push(section.line);
            if let Some(parent) = self.sections.last_mut() {
                parent.unread_below += 1;
            }
            self.out.unnumbered.push(Unnumbered {
                line: section.line,
                at: section.text_at,
                kind: UnnumberedKind::Heading,
                group: section.parents.last().copied().unwrap_or(0),
                sections: section.parents,
                title: title.clone(),
            });
            self.out.notes.push((section.line, format!(
                "`{title}` is marked `{}` but nothing below it has a task id, so breeze cannot schedule it — `breeze plan --fill-ids` gives the heading an id; or number its items (`- [ ] 1.1 …`) or sub-headings (`### 1.1 …`)",
                inherit.text
            )));
        }
    }
}

/// The status marker of a heading: the first marker, unless the heading lists several
/// (a legend).
fn heading_marker(text: &str) -> Option<Marker> {
    let markers = find_markers(text);
    let first = markers.first()?;
    markers.iter().all(|m| m.text.eq_ignore_ascii_case(&first.text)).then(|| first.clone())
}

/// A marker found in a part of a line starting at `offset`, placed in the line.
fn shift(mut marker: Marker, offset: usize) -> Marker {
    marker.replace = marker.replace.start + offset..marker.replace.end + offset;
    marker
}

/// Gives a task without a marker the status of its marked section; a status update
/// inserts a marker at `at`.
fn inherit_status(task: &mut RawTask, inherited: Option<Inherited>, at: usize) {
    if let Some(inherited) = inherited {
        task.state = inherited.state;
        task.status = inherited.text;
    }
    task.status_span = at..at;
    task.insert_status = true;
}

// List items and other lines.
impl Scanner {
    fn list_line(&mut self, line: &Line<'_>, item: &ListItem<'_>) {
        let blanked = blank_comments(line.text);
        let body = &blanked[item.body_start..item.body_start + item.body.len()];
        let read = read_item(body);
        if let Some((task, indent)) = self.list_dod
            && item.indent > indent
            && !(read.id.is_some() && read.marker.is_some())
        {
            // `- Writes: …` and `- Depends: …` under an item are its fields, as under a
            // task heading; other nested bullets form its DoD.
            if let Some((kind @ ("writes" | "depends"), value)) = labelled(item.body) {
                let task = &mut self.out.tasks[task];
                if kind == "writes" {
                    task.writes = Some(value);
                    task.writes_line = line.number;
                } else {
                    task.depends.push(Written { text: value, line: line.number });
                }
                return;
            }
            let dod = &mut self.out.tasks[task].dod;
            if !dod.is_empty() {
                dod.push_str("; ");
            }
            dod.push_str(&strip_comments(item.body));
            return;
        }
        self.list_dod = None;
        if self.open.is_some() && !(read.id.is_some() && read.marker.is_some()) {
            self.heading_body_line(line);
            return;
        }
        if read.legend || self.sections.iter().any(|s| s.legend) {
            return;
        }
        self.list_task(line, item, read);
    }

    fn list_task(&mut self, line: &Line<'_>, item: &ListItem<'_>, read: ItemTask) {
        let inherited = self.inherited();
        let numbered = read.marker.is_none() && numbered_step(item.body);
        let base = line.start + item.body_start;
        let group = self.innermost().ordinal;
        let Some(id) = read.id.clone().filter(|_| !numbered) else {
            let open = read.marker.as_ref().is_some_and(|m| m.state == MarkerState::Active);
            if open && item.checked != Some(true) {
                self.innermost().unread.push(line.number);
                self.unread(line.number);
                self.out.unnumbered.push(Unnumbered {
                    line: line.number,
                    at: base + read.id_at,
                    kind: UnnumberedKind::Item,
                    sections: self.section_ordinals(),
                    group,
                    title: read.title,
                });
            }
            return;
        };
        let mut task =
            self.new_task(id.clone(), base + read.id_at, read.title.clone(), line.number, group);
        match (&read.marker, item.checked) {
            (Some(m), checked) => {
                task.status = line.text[base - line.start..][m.replace.clone()].to_owned();
                task.status_span = base + m.replace.start..base + m.replace.end;
                task.state = m.state;
                task.marker = Some(m.clone());
                if checked == Some(true) && m.state == MarkerState::Active {
                    task.state = MarkerState::Unknown;
                    task.status = format!("[x] with {}", m.text);
                }
            }
            (None, Some(checked)) if inherited.is_some() => {
                let own =
                    checked.then(|| Inherited { state: MarkerState::Done, text: "[x]".into() });
                inherit_status(&mut task, own.or(inherited), base + item.body.len());
            }
            (None, Some(done)) => {
                self.out.checklist.push(ChecklistItem { id, done, line: line.number });
                return;
            }
            (None, None) => return,
        }
        self.fill_item(&mut task, read, line.number);
        let index = self.push_task(task);
        self.list_dod = Some((index, item.indent));
    }

    fn fill_item(&self, task: &mut RawTask, read: ItemTask, number: usize) {
        task.extra = read.title;
        task.dod = read.dod.unwrap_or_default();
        if let Some(depends) = read.depends {
            task.depends.push(Written { text: depends, line: number });
        }
        task.writes = read.writes;
    }

    fn text_line(&mut self, line: &Line<'_>) {
        let trimmed = line.text.trim();
        if !trimmed.is_empty() && !line.text.starts_with([' ', '\t']) {
            self.list_dod = None;
        }
        if self.open.is_some() {
            self.heading_body_line(line);
            return;
        }
        let quoted = trimmed.trim_start_matches('>').trim_start();
        if let Some(("depends", value)) = labelled(quoted) {
            self.innermost().depends.push(Written { text: value, line: line.number });
        }
    }

    /// A line of a heading task's body: `Depends:`/`Writes:`/`DoD:` lines, bullets
    /// (the DoD) and other text (kept for risk detection).
    fn heading_body_line(&mut self, line: &Line<'_>) {
        let Some(open) = self.open.as_mut() else { return };
        let trimmed = line.text.trim();
        if let Some((kind, value)) = labelled(line.text) {
            match kind {
                "depends" => open.task.depends.push(Written { text: value, line: line.number }),
                "writes" => {
                    open.task.writes = Some(value);
                    open.task.writes_line = line.number;
                }
                _ => open.task.dod = value,
            }
        } else if let Some(item) = list_item(line.text) {
            open.body.push(item.body.to_owned());
        } else if !trimmed.is_empty() {
            open.task.extra.push_str(trimmed);
            open.task.extra.push('\n');
        }
    }
}

/// Tells apart an id written under different headings: each holder's id becomes
/// `<heading>/<id>`, the heading being the first one, from the outside in, that no other
/// holder is also under (`Phase 1/1.1`, `Phase 2/1.1`). A holder under no such heading
/// (every heading around it is around another holder too) keeps the bare id; holders in
/// the same section keep the same id (a duplicate, reported by the builder). When two
/// such headings read alike, the heading's line is added: `Backend (line 12)/1.1`.
fn qualify_repeated_ids(tasks: &mut [RawTask], headings: &BTreeMap<usize, HeadingInfo>) {
    let mut holders: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, task) in tasks.iter().enumerate() {
        holders.entry(task.written_id.clone()).or_default().push(i);
    }
    for list in holders.into_values().filter(|list| list.len() > 1) {
        let chains: Vec<&[usize]> = list.iter().map(|&i| tasks[i].sections.as_slice()).collect();
        let distinguishing: Vec<Option<&HeadingInfo>> = chains
            .iter()
            .enumerate()
            .map(|(k, chain)| {
                let alone = |depth: usize| {
                    chains
                        .iter()
                        .enumerate()
                        .all(|(o, other)| o == k || other.get(..=depth) != Some(&chain[..=depth]))
                };
                (1..chain.len()).find(|&depth| alone(depth)).and_then(|d| headings.get(&chain[d]))
            })
            .collect();
        let labels: Vec<Option<String>> =
            distinguishing.iter().map(|h| h.map(|h| section_label(&h.title))).collect();
        let qualified: Vec<Option<String>> = (0..list.len())
            .map(|k| {
                let label = labels[k].as_ref()?;
                let alike = (0..list.len())
                    .any(|o| o != k && chains[o] != chains[k] && labels[o].as_ref() == Some(label));
                let line = distinguishing[k].map_or(0, |h| h.line);
                Some(if alike { format!("{label} (line {line})") } else { label.clone() })
            })
            .collect();
        for (&i, label) in list.iter().zip(qualified) {
            if let Some(label) = label {
                tasks[i].id = format!("{label}/{}", tasks[i].written_id);
            }
        }
    }
}

/// A heading as the name of its section: without markers, decoration and what follows
/// a `:` or a dash (`🔴 Phase 1: 基盤 `cc:TODO`` → `Phase 1`), at most 32 characters.
pub(crate) fn section_label(title: &str) -> String {
    let mut text = title.to_owned();
    for marker in find_markers(title).iter().rev() {
        text.replace_range(marker.replace.clone(), "");
    }
    let text: String = text.chars().filter(|c| !matches!(c, '`' | '*')).collect();
    let text = text.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '§');
    let end = [":", "：", " — ", " – ", " - ", " (", "（", " |", " ["]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .unwrap_or(text.len());
    let words: Vec<&str> = text[..end].split_whitespace().collect();
    let label: String = words.join(" ").replace('/', "-").chars().take(32).collect();
    let label = label.trim().to_owned();
    if label.is_empty() { "section".to_owned() } else { label }
}

/// `Depends: x` (optionally as a bullet and in bold) → ("depends", "x").
fn labelled(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let t = t.strip_prefix(['-', '*', '+']).map_or(t, str::trim_start);
    let cleaned: String = t.chars().filter(|&c| c != '*').collect();
    let (label, value) = cleaned.split_once([':', '：'])?;
    let kind = match label.trim().to_lowercase().as_str() {
        "depends" | "depends on" | "dependencies" | "deps" | "依存" | "依赖" | "의존" => {
            "depends"
        }
        "writes" | "write set" | "write-set" | "files" => "writes",
        "dod" | "definition of done" | "完了条件" | "완료 조건" => "dod",
        _ => return None,
    };
    Some((kind, value.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<(String, MarkerState)> {
        scan(text).tasks.into_iter().map(|t| (t.id, t.state)).collect()
    }

    #[test]
    fn marked_sections_pass_their_status_down() {
        use MarkerState::*;
        let text = "## Phase 1: Setup `cc:TODO`\n\n### 1.1 Init\n\n- notes\n\n### 1.2 Config `cc:done`\n\n## Phase 2 `cc:完了`\n\n- [ ] 2.1 Old\n- [x] 2.2 Older\n";
        assert_eq!(
            ids(text),
            [
                ("1.1".into(), Active),
                ("1.2".into(), Done),
                ("2.1".into(), Done),
                ("2.2".into(), Done)
            ]
        );
    }

    #[test]
    fn a_task_heading_may_just_say_blocked() {
        let s = scan("### 3.2: Export blocked (API key)\n## Blocked work\n- [ ] 4.1 a\n");
        let states: Vec<_> = s.tasks.iter().map(|t| (t.id.as_str(), t.state)).collect();
        assert_eq!(states, [("3.2", MarkerState::Blocked)]);
        assert_eq!(s.tasks[0].status, "blocked");
        assert_eq!(s.checklist.len(), 1, "a section needs a real marker");
    }

    #[test]
    fn numbered_steps_do_not_inherit() {
        let text = "## Phase 1 `cc:TODO`\n\n### 1. Setup\n\n- [ ] 1. install\n- [ ] 2. configure\n\n## Phase 2 `cc:TODO`\n\n### 1. Build\n";
        assert!(ids(text).is_empty());
    }

    #[test]
    fn rows_cut_off_from_their_table_still_belong_to_it() {
        let text = "| Task | 内容 | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | - | cc:TODO |\n\nA note.\n\n| 2 | c | d | 1 | cc:TODO |\n";
        assert_eq!(scan(text).tasks.len(), 2);
    }

    #[test]
    fn a_row_of_one_finished_cell_is_not_a_task() {
        // Its one cell would be both the id and the status a status edit rewrites.
        let s = scan("| ID | タスク | 優先度 | 状態 |\n| cc:완료\n");
        assert!(s.tasks.is_empty() && s.row_errors.is_empty());
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        let s = scan("| ID | タスク | 優先度 | 状態 |\n|---|---|---|---|\n| 8 |\n");
        assert_eq!(s.row_errors.len(), 1, "an unfinished one is an error");
    }

    #[test]
    fn repeated_ids_take_the_name_of_the_heading_that_tells_them_apart() {
        let text = "## Phase 1: Core `cc:TODO`\n### Backend\n- [ ] 1.1 a\n## Phase 2\n### Backend\n- [ ] 1.1 b `cc:TODO`\n### Tasks\n- [ ] 2.1 c `cc:TODO`\n## Tasks\n- [ ] 2.1 d `cc:TODO`\n- [ ] 3 e `cc:TODO`\n- [ ] 3 f `cc:TODO`\n## Tasks\n- [ ] 4 g `cc:TODO`\n## Tasks\n- [ ] 4 h `cc:TODO`\n";
        let ids: Vec<String> = scan(text).tasks.into_iter().map(|t| t.id).collect();
        assert_eq!(
            ids,
            [
                "Phase 1/1.1",
                "Phase 2/1.1",
                "Phase 2/2.1",
                "Tasks/2.1",
                "3",
                "3",
                "Tasks (line 13)/4",
                "Tasks (line 15)/4"
            ],
            "the outermost heading that differs; its line when two read alike; none within one section"
        );
        assert_eq!(section_label("🔴 Phase 1: 基盤 `cc:TODO`"), "Phase 1");
        assert_eq!(section_label("§77 Retrieval — regression"), "§77 Retrieval");
        assert_eq!(section_label("a/b (c)"), "a-b");
    }

    #[test]
    fn legends_are_not_tasks() {
        assert!(is_legend("Marker legend"));
        assert!(is_legend("📖 マーカー凡例"));
        assert!(is_legend("Markers"));
        assert!(!is_legend("Phase 3: rename the marker column in the export"));
        assert!(!is_legend("Legend view `cc:TODO`"));
    }

    #[test]
    fn items_without_ids_are_reported() {
        let text = "## Todo\n\n- [ ] Write docs `cc:TODO`\n- [x] Done thing `cc:TODO`\n- [ ] Shipped `cc:完了`\n";
        let s = scan(text);
        assert!(s.tasks.is_empty());
        assert_eq!(s.unread, [3]);
        assert!(
            s.notes[0].1.starts_with("1 item marked to do has no task id (line 3)"),
            "{:?}",
            s.notes
        );
    }
}
