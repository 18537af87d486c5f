//! Measures how much of a corpus of real Plans.md files breeze plans.
//!
//! Not run by default (the corpus is not in the repository):
//!
//! ```sh
//! BREEZE_PLANS_CORPUS=/path/to/plans cargo test -p breeze-plan --test corpus -- --ignored --nocapture
//! ```
//!
//! For every `*.md` file in the directory it counts the **open items** — the lines the
//! file itself marks as not done — with a counter that does not use the parser: a
//! table row whose status marker (`cc:TODO`, `cc:WIP`, `pm:依頼中`, ...) stands in a
//! cell other than the first (a marker in the first cell is a legend row), or a list
//! item or heading carrying one open marker and no other kind of marker (prose such as
//! `cc:TODO → cc:WIP → cc:done` is a legend). In a list item the marker must stand
//! where a status does — at the start, or followed by nothing, a remark or
//! `depends:` — not inside a sentence (`… を `cc:WIP` へ遷移`), and `マーカー: …`
//! lines are legends. Checked boxes (`- [x]`), code blocks, HTML comments and block
//! quotes are skipped. An open item is **planned** when a planned task starts on its
//! line or, for a heading, lies in its section — read as the file is, and again after
//! `breeze plan --fill-ids` numbered its to-do items (`plans_md::fill_ids`; it writes ids
//! inside lines, so line numbers stay). A task held back by a dependency on an id the
//! file does not have counts as planned: breeze read it and reports why it cannot run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Marker values that mean "not done yet".
const OPEN: &[&str] = &[
    "todo",
    "wip",
    "in_progress",
    "in-progress",
    "inprogress",
    "doing",
    "work",
    "working",
    "requested",
    "依頼中",
    "作業中",
    "対応中",
    "進行中",
    "未着手",
    "着手",
    "进行中",
    "待办",
    "진행",
    "진행중",
    "요청",
    "할일",
    "예정",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Row,
    Item,
    Heading(usize),
}

/// `(cc|pm|cursor):value` markers on a line: (start, end, lower-cased value).
fn markers(line: &str) -> Vec<(usize, usize, String)> {
    let lower = line.to_lowercase();
    let mut out = Vec::new();
    for prefix in ["cc:", "pm:", "cursor:"] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(prefix) {
            let at = from + pos;
            from = at + prefix.len();
            if lower[..at].chars().next_back().is_some_and(char::is_alphanumeric) {
                continue;
            }
            let value: String = lower[from..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
                .collect();
            if !value.is_empty() {
                let len: usize = line[from..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
                    .map(char::len_utf8)
                    .sum();
                out.push((at, from + len, value));
            }
        }
    }
    out.sort();
    out
}

fn strip_inline_comments(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Open items: (line number, kind). A heading counts only when nothing else in its
/// section carries a status (otherwise its marker summarizes the items below).
fn open_items(text: &str) -> Vec<(usize, Kind)> {
    let (open, status_lines) = marked_lines(text);
    open.into_iter()
        .filter(|&(line, kind)| match kind {
            Kind::Heading(level) => {
                let end = section_end(text, line, level);
                !status_lines.iter().any(|&l| l > line && l < end)
            }
            _ => true,
        })
        .collect()
}

/// Lines marked open, and every line carrying a status (open or not).
fn marked_lines(text: &str) -> (Vec<(usize, Kind)>, Vec<usize>) {
    let mut out = Vec::new();
    let mut status_lines = Vec::new();
    // Level of the legend heading (`## 凡例`, `## Status Legend`) we are under.
    let mut legend: Option<usize> = None;
    let mut fence: Option<&str> = None;
    let mut comment = false;
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if comment {
            if t.contains("-->") {
                comment = false;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        if t.starts_with("<!--") && !t.contains("-->") {
            comment = true;
            continue;
        }
        let line = strip_inline_comments(t);
        let line = line.trim();
        if line.starts_with('#') {
            let level = line.len() - line.trim_start_matches('#').len();
            if legend.is_some_and(|l| level <= l) {
                legend = None;
            }
            let lower = line.to_lowercase();
            if legend.is_none()
                && ["legend", "凡例", "マーカー", "marker", "범례", "마커"]
                    .iter()
                    .any(|w| lower.contains(w))
            {
                legend = Some(level);
            }
        }
        if legend.is_some() && !line.starts_with('#') {
            continue;
        }
        let kind = if line.starts_with('|') {
            Kind::Row
        } else if line.starts_with('#') {
            Kind::Heading(line.len() - line.trim_start_matches('#').len())
        } else if line.starts_with(['-', '*', '+']) && line[1..].starts_with([' ', '\t'])
            || line
                .split_once(['.', ')'])
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        {
            Kind::Item
        } else {
            continue;
        };
        let status_markers = match kind {
            Kind::Row => {
                let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
                if cells.first().is_some_and(|c| !markers(c).is_empty()) {
                    continue; // a legend row
                }
                match cells.iter().rev().map(|c| markers(c)).find(|m| !m.is_empty()) {
                    Some(m) => m,
                    None => continue,
                }
            }
            _ => markers(line),
        };
        let values: BTreeSet<&str> = status_markers.iter().map(|(_, _, v)| v.as_str()).collect();
        if values.len() != 1 {
            continue;
        }
        if kind != Kind::Item || item_status(line, status_markers[0].0, status_markers[0].1) {
            status_lines.push(i + 1);
        }
        let value = values.into_iter().next().unwrap_or_default();
        if !OPEN.contains(&value) {
            continue;
        }
        if kind == Kind::Item && !item_status(line, status_markers[0].0, status_markers[0].1) {
            continue;
        }
        out.push((i + 1, kind));
    }
    (out, status_lines)
}

/// Whether the marker at byte `at` of a list item stands where a status does.
fn item_status(line: &str, at: usize, end: usize) -> bool {
    let body = line.trim_start_matches(['-', '*', '+']).trim_start();
    if body.starts_with("[x]") || body.starts_with("[X]") {
        return false;
    }
    let before = line[..at].trim_end_matches(['`', '*', ' ']).to_lowercase();
    let mut after = line[end..].trim_start_matches(['`', '*']);
    if before.ends_with(['(', '（']) {
        after = after.trim_start_matches([')', '）']);
    }
    if before.ends_with([':', '：'])
        && ["marker", "マーカー", "legend", "凡例"].iter().any(|w| before.contains(w))
    {
        return false;
    }
    let body = body.strip_prefix("[ ]").unwrap_or(body);
    let lead = body.trim_start_matches(|c: char| c == '`' || c == '*' || c.is_whitespace());
    if line.len() - lead.len() == at {
        return true;
    }
    let after = after.trim_start();
    match after.chars().next() {
        None => true,
        Some(c) if !c.is_alphanumeric() => true,
        Some(_) => after.to_lowercase().starts_with("depends"),
    }
}

/// The line after the section of a heading at `line` of `level` ends.
fn section_end(text: &str, line: usize, level: usize) -> usize {
    let mut fence = false;
    for (i, raw) in text.lines().enumerate().skip(line) {
        let t = raw.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
        }
        if fence || !t.starts_with('#') {
            continue;
        }
        let l = t.len() - t.trim_start_matches('#').len();
        if l <= level && t[l..].starts_with([' ', '\t']) {
            return i + 1;
        }
    }
    usize::MAX
}

#[derive(Default)]
struct Totals {
    files: usize,
    with_open: usize,
    open: usize,
    planned: usize,
    no_table: usize,
    errors: usize,
    zero_planned: usize,
    tasks: usize,
    held: usize,
    /// After `--fill-ids`.
    numbered_planned: usize,
    numbered_files: usize,
}

/// How many of `items` a plan read from `text` plans: a task starts on the item's line or,
/// for a heading, lies in its section.
fn planned_count(text: &str, items: &[(usize, Kind)], plan: &breeze_plan::Plan) -> usize {
    let lines: Vec<usize> = plan.tasks.iter().map(|t| t.line).collect();
    items
        .iter()
        .filter(|&&(line, kind)| match kind {
            Kind::Heading(level) => {
                let end = section_end(text, line, level);
                lines.iter().any(|&l| l >= line && l < end)
            }
            _ => lines.contains(&line),
        })
        .count()
}

/// The open items planned after `--fill-ids` (0 when numbering or reading fails).
fn planned_after_numbering(text: &str, path: &Path, items: &[(usize, Kind)]) -> usize {
    let Ok((numbered, _)) = breeze_plan::plans_md::fill_ids(text) else { return 0 };
    match breeze_plan::parse_plans_md(&numbered, path) {
        Ok(plan) => planned_count(&numbered, items, &plan),
        Err(_) => 0,
    }
}

fn measure(path: &Path, totals: &mut Totals) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let items = open_items(&text);
    totals.files += 1;
    if !items.is_empty() {
        totals.with_open += 1;
    }
    totals.open += items.len();
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let numbered = planned_after_numbering(&text, path, &items);
    totals.numbered_planned += numbered;
    if numbered > 0 {
        totals.numbered_files += 1;
    }
    let result = std::panic::catch_unwind(|| breeze_plan::parse_plans_md(&text, path));
    let plan = match result {
        Err(_) => {
            println!("{name}: PANIC");
            totals.errors += 1;
            return;
        }
        Ok(Err(e)) => {
            if e.to_string().contains("no task table found") {
                totals.no_table += 1;
            } else {
                totals.errors += 1;
            }
            if !items.is_empty() {
                totals.zero_planned += 1;
            }
            let first = e.to_string().lines().next().unwrap_or_default().to_owned();
            println!(
                "{name}: open {} planned 0, after --fill-ids {numbered} — error: {}",
                items.len(),
                cut(&first, 140)
            );
            return;
        }
        Ok(Ok(plan)) => plan,
    };
    let lines: Vec<usize> = plan.tasks.iter().map(|t| t.line).collect();
    let planned = planned_count(&text, &items, &plan);
    totals.held += plan.tasks.len() - plan.runnable_count();
    if !items.is_empty() && planned == 0 {
        totals.zero_planned += 1;
    }
    totals.planned += planned;
    totals.tasks += plan.tasks.len();
    let missed: Vec<String> = items
        .iter()
        .filter(|&&(line, kind)| match kind {
            Kind::Heading(level) => {
                let end = section_end(&text, line, level);
                !lines.iter().any(|&l| l >= line && l < end)
            }
            _ => !lines.contains(&line),
        })
        .take(12)
        .map(|(l, _)| l.to_string())
        .collect();
    if std::env::var_os("BREEZE_PLANS_CORPUS_TASKS").is_some() {
        for t in &plan.tasks {
            let deps: Vec<&str> = t.depends_on.iter().map(|d| d.as_str()).collect();
            println!("    {} {} [{}] {}", t.line, t.id, deps.join(","), cut(&t.title, 60));
        }
    }
    if std::env::var_os("BREEZE_PLANS_CORPUS_WARNINGS").is_some() {
        for w in &plan.warnings {
            println!("    {}: {}", w.line.unwrap_or(0), cut(&w.message, 220));
        }
    }
    println!(
        "{name}: open {} planned {planned}, after --fill-ids {numbered} (tasks {}, warnings {}){}",
        items.len(),
        plan.tasks.len(),
        plan.warnings.len(),
        if missed.is_empty() {
            String::new()
        } else {
            format!(" — missed lines {}", missed.join(","))
        }
    );
}

fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[test]
#[ignore = "needs BREEZE_PLANS_CORPUS (a directory of real Plans.md files)"]
fn corpus_coverage() {
    let Some(dir) = std::env::var_os("BREEZE_PLANS_CORPUS") else {
        println!("BREEZE_PLANS_CORPUS is not set; nothing to measure");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("BREEZE_PLANS_CORPUS is a directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let mut totals = Totals::default();
    for f in &files {
        measure(f, &mut totals);
    }
    println!(
        "\nfiles {} | with open work {} | open items {} | planned {} | tasks planned {} (held back by an unknown dependency {}) | \"no task table found\" {} | other errors {} | open work but nothing planned {}",
        totals.files,
        totals.with_open,
        totals.open,
        totals.planned,
        totals.tasks,
        totals.held,
        totals.no_table,
        totals.errors,
        totals.zero_planned
    );
    println!(
        "as written: open work planned in {} of {} files, {} of {} open items",
        totals.with_open - totals.zero_planned,
        totals.with_open,
        totals.planned,
        totals.open
    );
    println!(
        "after `breeze plan --fill-ids`: open work planned in {} of {} files, {} of {} open items",
        totals.numbered_files, totals.with_open, totals.numbered_planned, totals.open
    );
}

#[test]
fn the_counter_counts_what_files_mark_open() {
    let text = "\
| Marker | Meaning |
|---|---|
| `cc:TODO` | not started |
| Task | 内容 | DoD | Depends | Status |
|---|---|---|---|---|
| 1 | a | b | - | cc:TODO |
| 2 | a | b | - | cc:done |
- [ ] 3 x `cc:WIP`
- [x] 4 x `cc:TODO`
- `cc:TODO` → `cc:WIP` → `cc:done`
- Start で `cc:WIP` へ遷移
- マーカー: `cc:TODO`
- WIP (`cc:WIP`) が 3 件以上
> `cc:TODO` in a quote
## Phase 5 `cc:TODO`
```
| 9 | a | b | - | cc:TODO |
```
";
    let items: Vec<usize> = open_items(text).into_iter().map(|(l, _)| l).collect();
    assert_eq!(items, [6, 8, 15]);
}
