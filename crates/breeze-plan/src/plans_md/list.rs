//! List-item tasks: `- [ ] 1.1 text `cc:TODO``, `- [ ] `cc:TODO` **W3-001**: text`,
//! `- [ ] T910: text `cc:TODO` depends:T909`, `- `cc:TODO` OCR-002 text`.
//!
//! A status marker in a list item counts when it stands where a status does: at the
//! start of the item, or followed by nothing, a remark (`(…)`, `[…]`, `— …`) or a
//! `depends:` clause. `Plans を `cc:WIP` へ遷移` mentions a marker; it is not one.
//! Items with two different markers (`cc:TODO` → `cc:WIP` → `cc:done`) and
//! `マーカー: `cc:TODO`` lines are legends.

use std::ops::Range;

use super::ids::leading_id;
use super::marker::{Marker, bare_blocked, find_markers};
use crate::text::strip_comments;

/// A list item read as a task (or not).
#[derive(Debug, Default)]
pub(crate) struct ItemTask {
    pub id: Option<String>,
    /// Where in the body the id stands, or where one goes when there is none (after a
    /// leading marker, else at the start).
    pub id_at: usize,
    pub title: String,
    /// The item's own status marker; `replace` is relative to the item body.
    pub marker: Option<Marker>,
    pub depends: Option<String>,
    pub dod: Option<String>,
    pub writes: Option<String>,
    /// A legend or a sentence about markers: not a task.
    pub legend: bool,
}

/// Words that end a `depends:` value.
const DEPENDS_LABELS: &[&str] = &["depends:", "depends on:", "depends :", "依存:", "依存："];

/// Reads a list item's body (comments already blanked).
pub(crate) fn read_item(body: &str) -> ItemTask {
    let markers = find_markers(body);
    let distinct: std::collections::BTreeSet<String> =
        markers.iter().map(|m| m.text.to_lowercase()).collect();
    if distinct.len() > 1 || markers.first().is_some_and(|m| legend_label(&body[..m.replace.start]))
    {
        return ItemTask { legend: true, ..ItemTask::default() };
    }
    let marker = markers.into_iter().next().or_else(|| bare_blocked(body)).filter(|m| {
        at_start(body, &m.replace)
            || status_position(&body[..m.replace.start], &body[m.replace.end..])
    });
    let after_marker = match &marker {
        Some(m) if at_start(body, &m.replace) => skip_tags(&body[m.replace.end..]),
        _ => body,
    };
    // `after_marker` is a suffix of `body`.
    let mut id_at = body.len() - after_marker.len();
    let (id, rest) = match leading_id(after_marker) {
        Some((id, rest)) => {
            id_at += after_marker.find(id.as_str()).unwrap_or(0);
            (Some(id), rest)
        }
        None => (None, after_marker),
    };
    let mut item = ItemTask { id, id_at, marker, ..ItemTask::default() };
    let (main, fields) = split_fields(rest);
    item.title = title(main, item.marker.as_ref().map(|m| &m.text));
    for (label, value) in fields {
        match label.as_str() {
            "depends" => item.depends = Some(value),
            "dod" => item.dod = Some(value),
            "writes" => item.writes = Some(value),
            _ => {}
        }
    }
    if let Some(value) = depends_clause(main) {
        item.depends = Some(value);
    }
    item
}

/// `マーカー:` / `Markers:` before a marker: a legend line.
fn legend_label(before: &str) -> bool {
    let t = before.trim_end_matches(['`', '*', ' ', '\t']).to_lowercase();
    t.ends_with([':', '：'])
        && ["marker", "マーカー", "마커", "legend", "凡例", "status legend"]
            .iter()
            .any(|w| t.contains(w))
}

fn at_start(body: &str, span: &Range<usize>) -> bool {
    body[..span.start]
        .trim_matches(|c: char| matches!(c, '`' | '*') || c.is_whitespace())
        .is_empty()
}

/// Closing backticks or emphasis right after a marker.
fn skip_wrapper(s: &str) -> &str {
    s.trim_start_matches(['`', '*'])
}

/// What follows a leading marker: its closing ticks and tags (`` [feature:tdd]` ``).
fn skip_tags(mut s: &str) -> &str {
    loop {
        let t = skip_wrapper(s).trim_start();
        match t.strip_prefix('[').and_then(|r| r.find(']').map(|end| &r[end + 1..])) {
            Some(rest) => s = rest,
            None => return t,
        }
    }
}

/// Whether what follows a marker makes it a status: nothing, a remark, a flag or a
/// `depends:` clause — not a word of a sentence (`(`cc:WIP`) が 3 件` is one).
fn status_position(before: &str, after: &str) -> bool {
    let mut rest = skip_wrapper(after);
    if before.trim_end_matches(['`', '*']).ends_with(['(', '（']) {
        rest = rest.trim_start_matches([')', '）']);
    }
    let rest = rest.trim_start();
    let lower = rest.to_lowercase();
    match rest.chars().next() {
        None => true,
        Some(c) if !c.is_alphanumeric() => true,
        Some(_) => {
            DEPENDS_LABELS.iter().any(|l| lower.starts_with(l)) || lower.starts_with("depends")
        }
    }
}

/// Splits `text | DoD: x | Status: y` into the text and its labelled fields.
fn split_fields(rest: &str) -> (&str, Vec<(String, String)>) {
    let mut parts = rest.split(" | ");
    let main = parts.next().unwrap_or_default();
    let fields = parts
        .filter_map(|p| {
            let (label, value) = p.split_once([':', '：'])?;
            let label = match label.trim().trim_matches('*').to_lowercase().as_str() {
                "depends" | "depends on" | "dependencies" | "依存" => "depends",
                "dod" | "definition of done" | "完了条件" => "dod",
                "writes" | "write set" => "writes",
                other => return Some((other.to_owned(), value.trim().to_owned())),
            };
            Some((label.to_owned(), value.trim().to_owned()))
        })
        .collect();
    (main, fields)
}

/// The value of a `depends:X,Y` clause, up to a remark or the end.
fn depends_clause(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let (at, label) = DEPENDS_LABELS.iter().find_map(|l| lower.find(l).map(|at| (at, *l)))?;
    let value = &text[at + label.len()..];
    let end = [" — ", " – ", " - ", " (", "（", " [", "`", " |"]
        .iter()
        .filter_map(|t| value.find(t))
        .min()
        .unwrap_or(value.len());
    let value = value[..end].trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// The item's title: its text without the marker, the `depends:` clause, `[P]` and
/// decoration.
fn title(main: &str, marker: Option<&String>) -> String {
    let lower = main.to_lowercase();
    let cut = DEPENDS_LABELS.iter().filter_map(|l| lower.find(l)).min().unwrap_or(main.len());
    let mut t = main[..cut].to_owned();
    if let Some(m) = marker {
        for wrapped in [format!("`{m}`"), format!("**{m}**"), m.clone()] {
            if let Some(at) = t.find(&wrapped) {
                t.replace_range(at..at + wrapped.len(), "");
                break;
            }
        }
    }
    let t = t.replace("[P]", "").replace("**", "");
    strip_comments(&t)
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '—' | '–'))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plans_md::marker::MarkerState;

    fn read(body: &str) -> (Option<String>, Option<MarkerState>, String, Option<String>) {
        let item = read_item(body);
        (item.id, item.marker.map(|m| m.state), item.title, item.depends)
    }

    #[test]
    fn real_item_shapes() {
        use MarkerState::*;
        assert_eq!(
            read("1.1 Add login `cc:TODO`"),
            (Some("1.1".into()), Some(Active), "Add login".into(), None)
        );
        assert_eq!(
            read("`cc:TODO` **W3-001**: Wire the API"),
            (Some("W3-001".into()), Some(Active), "Wire the API".into(), None)
        );
        assert_eq!(
            read("T910: Retire bws `cc:TODO` depends:T909"),
            (Some("T910".into()), Some(Active), "Retire bws".into(), Some("T909".into()))
        );
        assert_eq!(
            read("T008: Obsidian `cc:TODO` [P] depends:Phase 0"),
            (Some("T008".into()), Some(Active), "Obsidian".into(), Some("Phase 0".into()))
        );
        assert_eq!(
            read("**T426**: Lighthouse gate `cc:TODO` depends:T425 — CI score"),
            (Some("T426".into()), Some(Active), "Lighthouse gate".into(), Some("T425".into()))
        );
        assert_eq!(read("#59 E5.2a: Encoder `cc:todo` depends:#58").3, Some("#58".into()));
        assert_eq!(read("`cc:TODO` OCR-002 Page render — image, DPI").0, Some("OCR-002".into()));
        assert_eq!(read("`cc:TODO [feature:tdd]` **NEXT-3**: MCP").0, Some("NEXT-3".into()));
        assert_eq!(read("T017: ingest `cc:WIP` (2026-06-08 start)").1, Some(Active));
        assert_eq!(read("Issue #125: fix `cc:完了`").1, Some(Done));
        let fields = read_item("Task 1.3: Establish TDD. | DoD: green | Status: cc:TODO");
        assert_eq!(fields.id.as_deref(), Some("1.3"));
        assert_eq!(fields.title, "Establish TDD.");
        assert_eq!(fields.dod.as_deref(), Some("green"));
        assert_eq!(fields.marker.map(|m| m.state), Some(Active));
    }

    #[test]
    fn mentions_and_legends_are_not_statuses() {
        assert_eq!(read("Start Work で `cc:WIP` へ遷移する").1, None);
        assert_eq!(read("Start Work は `cc:WIP` 更新が成功した場合のみ").1, None);
        assert_eq!(read("WIP (`cc:진행`) 가 3개 이상이면 경고").1, None);
        assert_eq!(read("5.1 Write docs (`cc:TODO`)").1, Some(MarkerState::Active));
        assert!(read_item("`cc:TODO` → `cc:WIP` → `cc:done`").legend);
        assert!(read_item("マーカー: `cc:TODO`").legend);
        assert_eq!(read("Fix the blocked queue `cc:TODO`").1, Some(MarkerState::Active));
        assert_eq!(read("1.4 API client blocked (waiting for key)").1, Some(MarkerState::Blocked));
    }

    #[test]
    fn ids_are_optional() {
        let item = read_item("Supabase プロジェクト作成 `cc:TODO`");
        assert_eq!(item.id, None);
        assert_eq!(item.id_at, 0);
        assert_eq!(read_item("`cc:TODO` Fix it").id_at, "`cc:TODO` ".len());
        assert_eq!(read_item("`cc:TODO` **W3-001**: a").id_at, "`cc:TODO` **".len());
        assert_eq!(item.marker.map(|m| m.state), Some(MarkerState::Active));
        assert_eq!(item.title, "Supabase プロジェクト作成");
    }
}
