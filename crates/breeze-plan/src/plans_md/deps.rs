//! Dependency cells and what their tokens name.
//!
//! A cell is split on `,` `、` `;` (and their full-width forms); `-`, `none`, `なし`
//! mean none. A token is resolved, in this order, as: an exact task id; a checklist
//! item id; `all above` (the tasks above in the same table or section); alternatives
//! `a or b`; `Phase X`; a range `63.1–63.3`, `5.1-5.6`, `8-12`, `OPT-01〜07`; an id
//! prefix (`GEO-3` = `GEO-3.1`, `GEO-3-2`); a space-separated list of ids; the first
//! word (`2.1 (after review)`). A phase, prefix, range or `all above` never includes
//! the task itself.

use std::collections::{BTreeMap, HashMap};

use super::ids::{clean_id, id_like, phase_label};
use super::marker::MarkerState;
use super::scan::{ChecklistItem, RawTask};
use crate::id::TaskId;

/// What a dependency token names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// These raw tasks (any state).
    Tasks(Vec<usize>),
    /// A checklist item that is not a task.
    Checklist { done: bool },
    /// Alternatives (`a or b`) of which one is already finished.
    Satisfied,
    /// Nothing: archived work.
    Unknown,
}

/// Words that mean "no dependency" / "no write set".
pub(crate) fn is_none_word(token: &str) -> bool {
    matches!(
        token.to_lowercase().as_str(),
        "" | "-" | "—" | "–" | "none" | "n/a" | "na" | "なし" | "無し" | "无" | "없음"
    )
}

/// Splits a Depends cell on `,` and `、` (and their full-width and `;` cousins),
/// dropping decoration, parenthesized remarks and `Task ` prefixes.
pub(crate) fn dependency_tokens(cell: &str) -> Vec<String> {
    let cleaned: String =
        without_remarks(cell).chars().filter(|c| !matches!(c, '`' | '*')).collect();
    if is_none_word(cleaned.trim()) {
        return Vec::new();
    }
    cleaned
        .split([',', '、', '，', ';', '；'])
        .map(|t| {
            let t = t.trim();
            let t = if t.starts_with('[') { clean_id(t) } else { t.to_owned() };
            let t = t.split(['(', '（']).next().unwrap_or("").trim();
            let t = t.trim_end_matches(['。', '.']).trim();
            let t = t.strip_suffix("[P]").unwrap_or(t).trim();
            ["Task ", "task ", "タスク "]
                .iter()
                .fold(t, |t, p| t.strip_prefix(p).unwrap_or(t))
                .to_owned()
        })
        .filter(|t| !is_none_word(t))
        .collect()
}

/// `cell` without parenthesized remarks (`3.10 (if …; otherwise …)`), which may hold
/// separators; a link target `[2.1](#21)` stays.
fn without_remarks(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in cell.chars() {
        match c {
            '(' | '（' if depth > 0 || prev != ']' => depth += 1,
            ')' | '）' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = c;
    }
    out
}

/// Whether `id` lies under `prefix`: `GEO-3.1` and `GEO-3-2` under `GEO-3`, not `GEO-31`.
pub(crate) fn has_id_prefix(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(['.', '-']))
}

const ALL_ABOVE: &[&str] = &[
    "all above",
    "all of the above",
    "all the above",
    "all previous",
    "all prior",
    "above",
    "上記すべて",
    "上記全て",
    "上記全部",
    "以上すべて",
    "以上全て",
    "上述全部",
    "위 전체",
    "위 모두",
];

const OR_WORDS: &[&str] = &[" or ", " OR ", "または", "又は", "もしくは", " 또는 ", " 或 "];

const RANGE_SEPARATORS: &[&str] = &["–", "—", "〜", "～", "~", "..", "-"];

/// The tasks and checklist items of a plan, for resolving dependency tokens.
pub(crate) struct Index<'a> {
    raw: &'a [RawTask],
    /// Tasks by their id as written (several when an id is written in several sections).
    pub by_id: BTreeMap<&'a str, Vec<usize>>,
    /// Tasks by their section-qualified id (`Phase 2/1.1`), where it differs.
    qualified: HashMap<&'a str, usize>,
    checklist: HashMap<&'a str, bool>,
    phases: HashMap<&'a str, Vec<usize>>,
    sorted: Vec<(TaskId, usize)>,
}

impl<'a> Index<'a> {
    pub fn new(raw: &'a [RawTask], checklist: &'a [ChecklistItem]) -> Self {
        let mut by_id: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut qualified = HashMap::new();
        let mut phases: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, t) in raw.iter().enumerate() {
            by_id.entry(t.written_id.as_str()).or_default().push(i);
            if t.id != t.written_id {
                qualified.insert(t.id.as_str(), i);
            }
            for label in &t.phases {
                phases.entry(label.as_str()).or_default().push(i);
            }
        }
        let mut items = HashMap::new();
        for item in checklist {
            *items.entry(item.id.as_str()).or_insert(false) |= item.done;
        }
        let mut sorted: Vec<(TaskId, usize)> =
            raw.iter().enumerate().map(|(i, t)| (TaskId::new(t.written_id.clone()), i)).collect();
        sorted.sort();
        Index { raw, by_id, qualified, checklist: items, phases, sorted }
    }

    /// Resolves a token for task `me` (an index past the tasks: for no task). An id
    /// written in several sections means its holders nearest to `me`: those sharing the
    /// most sections with it (the same section first).
    pub fn resolve(&self, token: &str, me: usize) -> Target {
        let target = self
            .named(token, me)
            .or_else(|| self.alternatives(token, me))
            .or_else(|| self.phase(token, me))
            .or_else(|| self.range(token, me).map(Target::Tasks))
            .or_else(|| self.prefix(token, me).map(Target::Tasks))
            .or_else(|| self.words(token, me))
            .unwrap_or(Target::Unknown);
        match target {
            Target::Tasks(found) => Target::Tasks(self.nearest(found, me)),
            other => other,
        }
    }

    /// Of the tasks found, for each id written in several sections only the holders
    /// nearest to `me`.
    fn nearest(&self, found: Vec<usize>, me: usize) -> Vec<usize> {
        let Some(mine) = self.raw.get(me) else { return found };
        let shared = |i: usize| {
            let theirs = &self.raw[i].sections;
            theirs.iter().zip(&mine.sections).take_while(|(a, b)| a == b).count()
        };
        let mut best: HashMap<&str, usize> = HashMap::new();
        for &i in &found {
            let depth = best.entry(self.raw[i].written_id.as_str()).or_insert(0);
            *depth = (*depth).max(shared(i));
        }
        found.into_iter().filter(|&i| shared(i) == best[self.raw[i].written_id.as_str()]).collect()
    }

    /// An exact id (as written, or qualified by its section), a checklist item or
    /// `all above`.
    fn named(&self, token: &str, me: usize) -> Option<Target> {
        if let Some(v) = self.by_id.get(token) {
            return Some(Target::Tasks(v.clone()));
        }
        if let Some(&i) = self.qualified.get(token) {
            return Some(Target::Tasks(vec![i]));
        }
        if let Some(&done) = self.checklist.get(token) {
            return Some(Target::Checklist { done });
        }
        let mine = self.raw.get(me)?;
        ALL_ABOVE.contains(&token.to_lowercase().as_str()).then(|| {
            let above = (0..self.raw.len())
                .filter(|&i| self.raw[i].group == mine.group && self.raw[i].line < mine.line);
            Target::Tasks(above.collect())
        })
    }

    /// `a or b`: satisfied when one alternative is finished; otherwise every
    /// alternative that exists and is not blocked (breeze cannot wait for "either",
    /// so it waits for all of them).
    fn alternatives(&self, token: &str, me: usize) -> Option<Target> {
        let sep = OR_WORDS.iter().find(|w| token.contains(*w))?;
        let found: Vec<Vec<usize>> = token
            .split(sep)
            .filter_map(|alt| match self.resolve(alt.trim(), me) {
                Target::Tasks(v) if !v.is_empty() => Some(v),
                _ => None,
            })
            .collect();
        let state = |i: &usize| self.raw[*i].state;
        if found.iter().any(|v| v.iter().all(|i| state(i) == MarkerState::Done)) {
            return Some(Target::Satisfied);
        }
        let runnable: Vec<&Vec<usize>> = found
            .iter()
            .filter(|v| {
                v.iter().all(|i| matches!(state(i), MarkerState::Active | MarkerState::Done))
            })
            .collect();
        let chosen: Vec<usize> = if runnable.is_empty() {
            found.iter().flatten().copied().collect()
        } else {
            runnable.into_iter().flatten().copied().collect()
        };
        (!chosen.is_empty()).then_some(Target::Tasks(chosen))
    }

    /// `Phase X`: every task under a `Phase X` heading, or with an id starting `X.`.
    fn phase(&self, token: &str, me: usize) -> Option<Target> {
        let label = phase_label(token)?;
        if let Some(v) = self.phases.get(label.as_str()) {
            return Some(Target::Tasks(v.iter().copied().filter(|&i| i != me).collect()));
        }
        let v: Vec<usize> = (0..self.raw.len())
            .filter(|&i| i != me && has_id_prefix(&self.raw[i].written_id.to_lowercase(), &label))
            .collect();
        Some(if v.is_empty() { Target::Unknown } else { Target::Tasks(v) })
    }

    /// `lo–hi`: the tasks whose ids lie between `lo` and `hi` (and under `hi`).
    fn range(&self, token: &str, me: usize) -> Option<Vec<usize>> {
        for sep in RANGE_SEPARATORS {
            for (at, _) in token.match_indices(sep) {
                let (lo, hi) = (token[..at].trim(), token[at + sep.len()..].trim());
                if !id_like(lo) || !id_like(hi) {
                    continue;
                }
                let hi = expand_range_end(lo, hi);
                let (lo_id, hi_id) = (TaskId::new(lo), TaskId::new(hi.clone()));
                let inside: Vec<usize> = self
                    .sorted
                    .iter()
                    .filter(|(id, _)| {
                        (&lo_id <= id && id <= &hi_id) || has_id_prefix(id.as_str(), &hi)
                    })
                    .map(|&(_, i)| i)
                    .filter(|&i| i != me)
                    .collect();
                if lo_id <= hi_id && !inside.is_empty() {
                    return Some(inside);
                }
            }
        }
        None
    }

    /// An id prefix: `GEO-3` for `GEO-3.1`, `GEO-3-2`.
    fn prefix(&self, token: &str, me: usize) -> Option<Vec<usize>> {
        let v: Vec<usize> = self
            .by_id
            .range(token..)
            .take_while(|(id, _)| id.starts_with(token))
            .filter(|(id, _)| has_id_prefix(id, token))
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|&i| i != me)
            .collect();
        (!v.is_empty()).then_some(v)
    }

    /// `1.1 1.2` (every word an id) or `2.1 after review` (the first word).
    fn words(&self, token: &str, me: usize) -> Option<Target> {
        let words: Vec<&str> = token.split_whitespace().collect();
        if words.len() < 2 {
            return None;
        }
        let resolved: Vec<Target> =
            words.iter().map(|w| self.resolve(w.trim_end_matches([':', '：']), me)).collect();
        if resolved.iter().all(|t| matches!(t, Target::Tasks(_))) {
            let all = resolved.into_iter().flat_map(|t| match t {
                Target::Tasks(v) => v,
                _ => Vec::new(),
            });
            return Some(Target::Tasks(all.collect()));
        }
        let first = words[0].trim_end_matches([':', '：']);
        (self.by_id.contains_key(first) || self.checklist.contains_key(first))
            .then(|| self.resolve(first, me))
    }
}

/// The end of a range written short: `31.1.2-7` → `31.1.7`, `OPT-01〜07` → `OPT-07`.
fn expand_range_end(lo: &str, hi: &str) -> String {
    let lo_parts: Vec<&str> = lo.split('.').collect();
    let hi_parts: Vec<&str> = hi.split('.').collect();
    let mut parts: Vec<String> = if hi_parts.len() < lo_parts.len() {
        let keep = lo_parts.len() - hi_parts.len();
        lo_parts[..keep].iter().chain(&hi_parts).map(|s| (*s).to_owned()).collect()
    } else {
        hi_parts.iter().map(|s| (*s).to_owned()).collect()
    };
    let last = parts.len() - 1;
    let lo_part = lo_parts.get(last.min(lo_parts.len() - 1)).copied().unwrap_or_default();
    let lo_prefix = lo_part.trim_end_matches(|c: char| c.is_ascii_digit());
    if parts[last].chars().all(|c| c.is_ascii_digit()) && !lo_prefix.is_empty() {
        parts[last] = format!("{lo_prefix}{}", parts[last]);
    }
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_cells() {
        assert_eq!(dependency_tokens("-"), Vec::<String>::new());
        assert_eq!(dependency_tokens("1.1, 1.2"), ["1.1", "1.2"]);
        assert_eq!(dependency_tokens("2.2、2.3"), ["2.2", "2.3"]);
        assert_eq!(dependency_tokens("`1.1`, **1.2**"), ["1.1", "1.2"]);
        assert_eq!(dependency_tokens("Phase 5.14"), ["Phase 5.14"]);
        assert_eq!(dependency_tokens("2.1 (partial)"), ["2.1"]);
        assert_eq!(dependency_tokens("[2.1](#21)"), ["2.1"]);
        assert_eq!(dependency_tokens("Task 3"), ["3"]);
        assert_eq!(dependency_tokens("3.10 (if x; otherwise y), 4"), ["3.10", "4"]);
        assert_eq!(dependency_tokens("2.1（一部）、2.2"), ["2.1", "2.2"]);
        assert_eq!(dependency_tokens("なし"), Vec::<String>::new());
    }

    #[test]
    fn short_range_ends() {
        assert_eq!(expand_range_end("31.1.2", "7"), "31.1.7");
        assert_eq!(expand_range_end("5.1", "5.6"), "5.6");
        assert_eq!(expand_range_end("OPT-01", "07"), "OPT-07");
        assert_eq!(expand_range_end("T025", "030"), "T030");
        assert_eq!(expand_range_end("8", "12"), "12");
    }
}
