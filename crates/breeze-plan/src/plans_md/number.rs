//! Task ids for to-do items written without one (`breeze plan --fill-ids`), and new ids
//! for ids repeated within one section.
//!
//! An id follows the plan's own numbering (see [`propose`]); it never equals an id the
//! file already names — a task, a checklist item, a dependency — nor one proposed before
//! it. The proposals depend only on the text, so numbering a numbered file changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::deps::dependency_tokens;
use super::ids::{id_like, phase_label};
use super::marker::MarkerState;
use super::scan::{Scan, UnnumberedKind};
use crate::id::TaskId;

/// One id `--fill-ids` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdProposal {
    /// 1-based line of the item.
    pub line: usize,
    /// The id written.
    pub id: String,
    /// The item's text, for showing what was numbered.
    pub title: String,
    /// For an id repeated within one section, the id it replaces.
    pub replaces: Option<String>,
}

/// An id split into a family (`prefix` and digit count) and its number: `2.13` →
/// (`2.`, 2, 13), `W3-004` → (`W3-`, 3, 4), `T910` → (`T`, 3, 910), `7` → (``, 1, 7).
fn split_number(id: &str) -> Option<(&str, usize, u64)> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 12 {
        return None;
    }
    let (prefix, number) = id.split_at(id.len() - digits);
    Some((prefix, digits, number.parse().ok()?))
}

/// Ids proposed so far, and every id the file names.
struct Taken {
    ids: BTreeSet<String>,
    /// Highest number seen per prefix.
    highest: BTreeMap<String, u64>,
}

impl Taken {
    fn add(&mut self, id: &str) {
        if let Some((prefix, _, number)) = split_number(id) {
            let high = self.highest.entry(prefix.to_owned()).or_insert(0);
            *high = (*high).max(number);
        }
        self.ids.insert(id.to_owned());
    }

    /// The next free id of a family: one past the highest number the file uses with that
    /// prefix, zero-padded to `width` digits.
    fn next(&mut self, prefix: &str, width: usize) -> String {
        let mut number = self.highest.get(prefix).copied().unwrap_or(0) + 1;
        loop {
            let id = format!("{prefix}{number:0width$}");
            if !self.ids.contains(&id) {
                self.add(&id);
                return id;
            }
            number += 1;
        }
    }
}

/// A place an id is numbered in: its line, the group it belongs to (table or section),
/// the sections around it.
struct Slot<'a> {
    line: usize,
    group: usize,
    sections: &'a [usize],
}

/// An id the file has (or was given): where it is, and in which group and sections.
struct Numbered {
    line: usize,
    group: usize,
    /// The innermost section around it.
    section: Option<usize>,
    id: String,
}

/// Each proposal and the byte range of `text` it replaces (empty: an insertion), in file
/// order.
///
/// The id of an item follows, in this order:
/// 1. the ids around it — of its table's rows, or of the items and task headings of its
///    section: the family of the nearest one above it (else below), numbered past the
///    highest the file uses (`2.1`, `2.2` → `2.3`; `T909` → `T910`; `W3-004` → `W3-005`);
/// 2. the number of its section: under `## Phase 4` (`フェーズ4`, `## 4. …`, `## Sprint 4`)
///    → `4.1`;
/// 3. the nearest task id above it in the file (else below it in its own section — never
///    a later section's), as in 1;
/// 4. `T1`, `T2`, … in a file without ids.
///
/// An id repeated within one section keeps its first holder; later holders are renumbered
/// in their own family (`1.1` again → `1.4`).
pub(crate) fn propose(text: &str, scanned: &Scan) -> Vec<(IdProposal, Range<usize>, String)> {
    let mut taken = Taken { ids: BTreeSet::new(), highest: BTreeMap::new() };
    for task in &scanned.tasks {
        taken.add(&task.written_id);
    }
    for item in &scanned.checklist {
        taken.add(&item.id);
    }
    for written in scanned.tasks.iter().flat_map(|t| &t.depends) {
        for token in dependency_tokens(&written.text) {
            if id_like(&token) {
                taken.add(&token);
            }
        }
    }
    // Numbered ids, for finding an item's neighbours.
    let mut numbered: Vec<Numbered> = (scanned.tasks.iter())
        .map(|t| Numbered {
            line: t.line,
            group: t.group,
            section: t.sections.last().copied(),
            id: t.written_id.clone(),
        })
        .collect();
    let mut out: Vec<(IdProposal, Range<usize>, String)> = Vec::new();
    let mut work: Vec<Work> =
        scanned.unnumbered.iter().enumerate().map(|(k, _)| Work::Item(k)).collect();
    work.extend(repeated_in_one_section(scanned).into_iter().map(Work::Repeat));
    work.sort_by_key(|w| match *w {
        Work::Item(k) => scanned.unnumbered[k].line,
        Work::Repeat(t) => scanned.tasks[t].line,
    });
    for item in work {
        match item {
            Work::Item(k) => {
                let u = &scanned.unnumbered[k];
                let slot = Slot { line: u.line, group: u.group, sections: &u.sections };
                let id = numbering(&slot, &numbered, scanned, &mut taken);
                let section = u.sections.last().copied();
                numbered.push(Numbered { line: u.line, group: u.group, section, id: id.clone() });
                let written = match u.kind {
                    UnnumberedKind::Row => cell_text(text, u.at, &id),
                    UnnumberedKind::Heading | UnnumberedKind::Item => format!("{id} "),
                };
                let proposal =
                    IdProposal { line: u.line, id, title: u.title.clone(), replaces: None };
                out.push((proposal, u.at..u.at, written));
            }
            Work::Repeat(t) => {
                let task = &scanned.tasks[t];
                let id = match split_number(&task.written_id) {
                    Some((prefix, width, _)) => taken.next(prefix, width),
                    None => taken.next(&format!("{}-", task.written_id), 1),
                };
                let proposal = IdProposal {
                    line: task.line,
                    id: id.clone(),
                    title: task.title.clone(),
                    replaces: Some(task.written_id.clone()),
                };
                out.push((proposal, task.id_span.clone(), id));
            }
        }
    }
    out
}

enum Work {
    /// An item without an id (index in `Scan::unnumbered`).
    Item(usize),
    /// A later holder of an id repeated in its section (index in `Scan::tasks`).
    Repeat(usize),
}

/// Later holders of ids written twice in one section when a holder is still to do.
fn repeated_in_one_section(scanned: &Scan) -> Vec<usize> {
    let mut holders: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, task) in scanned.tasks.iter().enumerate() {
        holders.entry(task.id.as_str()).or_default().push(i);
    }
    holders
        .into_values()
        .filter(|list| {
            list.len() > 1 && list.iter().any(|&i| scanned.tasks[i].state == MarkerState::Active)
        })
        .flat_map(|list| list.into_iter().skip(1))
        .filter(|&i| !scanned.tasks[i].id_span.is_empty())
        .collect()
}

/// The id for an item at `slot` (rules 1–4 of [`propose`]).
fn numbering(slot: &Slot<'_>, numbered: &[Numbered], scanned: &Scan, taken: &mut Taken) -> String {
    let own_section = slot.sections.last().copied();
    // The family of the nearest id above the item, else below it: in its own group, or
    // anywhere above it — but never one below it in another section.
    let family_near = |same_group: bool| {
        let candidates = numbered
            .iter()
            .filter(|n| (!same_group || n.group == slot.group) && split_number(&n.id).is_some());
        let above = candidates.clone().filter(|n| n.line < slot.line).max_by_key(|n| n.line);
        let below = candidates
            .filter(|n| n.line > slot.line && (same_group || n.section == own_section))
            .min_by_key(|n| n.line);
        above.or(below).and_then(|n| split_number(&n.id)).map(|(p, w, _)| (p.to_owned(), w))
    };
    if let Some((prefix, width)) = family_near(true) {
        return taken.next(&prefix, width);
    }
    let section_number = slot.sections.iter().rev().find_map(|ordinal| {
        let title = &scanned.headings.get(ordinal)?.title;
        (phase_label(title).filter(|l| is_number(l)))
            .or_else(|| leading_number(title))
            .or_else(|| labelled_number(title))
    });
    if let Some(number) = section_number {
        return taken.next(&format!("{number}."), 1);
    }
    if let Some((prefix, width)) = family_near(false) {
        return taken.next(&prefix, width);
    }
    taken.next("T", 1)
}

/// `count` new ids after `existing`: in the family of `last` (else of the greatest
/// existing id that ends in a number, else `T1`, `T2`, …), numbered past the highest the
/// plan uses.
pub(crate) fn next_ids(existing: &[TaskId], last: Option<&TaskId>, count: usize) -> Vec<String> {
    let mut taken = Taken { ids: BTreeSet::new(), highest: BTreeMap::new() };
    for id in existing {
        taken.add(id.as_str());
    }
    let family = last
        .and_then(|id| split_number(id.as_str()))
        .or_else(|| existing.iter().rev().find_map(|id| split_number(id.as_str())))
        .map_or(("T".to_owned(), 1), |(prefix, width, _)| (prefix.to_owned(), width));
    (0..count).map(|_| taken.next(&family.0, family.1)).collect()
}

/// `4`, `5.15`: digits and dots.
fn is_number(label: &str) -> bool {
    label.split('.').all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
}

/// The number a heading starts with: `4. Polish`, `4: Polish`, `4 Polish` → `4`.
fn leading_number(title: &str) -> Option<String> {
    let t = title.trim_start_matches(|c: char| !c.is_alphanumeric());
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let number = t[..end].trim_end_matches('.');
    let after = t[end..].chars().next();
    (is_number(number) && matches!(after, None | Some(':' | '：' | ' ' | ')')))
        .then(|| number.to_owned())
}

/// The number a heading names after a word or two: `Sprint 1`, `Milestone 2: Login`,
/// `Week 12 (March)` → `1`, `2`, `12`.
fn labelled_number(title: &str) -> Option<String> {
    let t = title.trim_start_matches(|c: char| !c.is_alphanumeric());
    let (label, rest) = t.split_at(t.find(|c: char| c.is_ascii_digit())?);
    let words = label.split_whitespace().count();
    let wordy = label.chars().all(|c| c.is_alphabetic() || c == ' ');
    // The number is a word of its own (`utf8` is no label).
    if !(1..=2).contains(&words) || !wordy || !label.ends_with(' ') {
        return None;
    }
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let number = rest[..end].trim_end_matches('.');
    let after = rest[end..].chars().next();
    (is_number(number) && matches!(after, None | Some(':' | '：' | ' ' | ')' | '(' | '—')))
        .then(|| number.to_owned())
}

/// What goes into an empty id cell at `at`: the id, with a space before and after it
/// where the cell has none.
fn cell_text(text: &str, at: usize, id: &str) -> String {
    let before = if text[..at].ends_with(['|']) { " " } else { "" };
    let after = if text[at..].starts_with('|') { " " } else { "" };
    format!("{before}{id}{after}")
}

/// `text` with the proposals written in.
pub(crate) fn apply(text: &str, proposals: &[(IdProposal, Range<usize>, String)]) -> String {
    let mut splices: Vec<(&Range<usize>, &str)> =
        proposals.iter().map(|(_, at, written)| (at, written.as_str())).collect();
    splices.sort_by_key(|(at, _)| (at.start, at.end));
    let mut out = String::with_capacity(text.len() + 8 * splices.len());
    let mut done = 0;
    for (at, written) in splices {
        out.push_str(&text[done..at.start]);
        out.push_str(written);
        done = at.end;
    }
    out.push_str(&text[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(split_number("2.13"), Some(("2.", 2, 13)));
        assert_eq!(split_number("W3-004"), Some(("W3-", 3, 4)));
        assert_eq!(split_number("T910"), Some(("T", 3, 910)));
        assert_eq!(split_number("OPT-A"), None);
        assert_eq!(leading_number("4. Polish").as_deref(), Some("4"));
        assert_eq!(leading_number("2026-01-05 notes"), None);
        assert_eq!(leading_number("Setup"), None);
        assert_eq!(labelled_number("Sprint 1").as_deref(), Some("1"));
        assert_eq!(labelled_number("Milestone 2: Login").as_deref(), Some("2"));
        assert_eq!(labelled_number("Week 12 (March)").as_deref(), Some("12"));
        assert_eq!(labelled_number("Backlog"), None);
        assert_eq!(labelled_number("2026-01-05 notes"), None);
        assert_eq!(labelled_number("Use utf8 everywhere"), None, "a number inside a word");
    }

    #[test]
    fn next_ids_skip_what_is_taken() {
        let mut taken = Taken { ids: BTreeSet::new(), highest: BTreeMap::new() };
        for id in ["2.1", "2.3", "W3-009", "T910"] {
            taken.add(id);
        }
        assert_eq!(taken.next("2.", 1), "2.4");
        assert_eq!(taken.next("2.", 1), "2.5");
        assert_eq!(taken.next("W3-", 3), "W3-010");
        assert_eq!(taken.next("T", 3), "T911");
        assert_eq!(taken.next("5.", 1), "5.1");
    }
}
