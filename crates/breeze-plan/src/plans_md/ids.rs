//! Task ids as Plans.md files write them, and `Phase …` labels.

/// Words written before an id: `Task 1.2`, `タスク 3`, `Issue #12`.
const ID_PREFIXES: &[&str] = &["Task ", "task ", "TASK ", "タスク ", "Issue ", "issue "];

/// Removes a `[P]` ("parallelizable") flag written after an id.
fn strip_parallel_flag(id: &str) -> &str {
    let t = id.trim_end();
    t.strip_suffix("[P]").or_else(|| t.strip_suffix("[p]")).map_or(t, str::trim_end)
}

/// Strips Markdown decoration from an id cell: `**1.2**`, `` `1.2` ``, `~~1.2~~`,
/// `[1.2](#12)`, `Task 1.2:`, `1.2 [P]`.
pub(crate) fn clean_id(cell: &str) -> String {
    let stripped: String =
        cell.chars().filter(|c| !matches!(c, '*' | '`' | '~')).collect::<String>();
    let mut id = stripped.trim();
    if let (Some(rest), Some(end)) = (id.strip_prefix('['), id.find("](")) {
        id = &rest[..end - 1];
    }
    for prefix in ID_PREFIXES {
        if let Some(rest) = id.strip_prefix(prefix) {
            id = rest.trim_start();
        }
    }
    let id = strip_parallel_flag(id);
    id.trim_end_matches([':', '：']).trim().to_owned()
}

/// An id as headings and list items write it: starts with a letter, a digit or `#`,
/// contains a digit, and uses only letters, digits, `.`, `_` and `-` (`1.2`, `T910`,
/// `W3-001`, `GEO-3.1`, `#59`).
pub(crate) fn id_like(token: &str) -> bool {
    let body = token.strip_prefix('#').unwrap_or(token);
    body.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && body.chars().any(|c| c.is_ascii_digit())
        && body.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Splits `Task 1.2: title` / `1.2 title` / `**W3-001**: title` / `T3 [P]: title` into
/// id and rest, if the text starts with an id.
pub(crate) fn leading_id(text: &str) -> Option<(String, &str)> {
    let mut t = text.trim_start().trim_start_matches(['*', '`']);
    for prefix in ID_PREFIXES {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim_start();
        }
    }
    let hash = usize::from(t.starts_with('#'));
    let end = t[hash..]
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map_or(t.len(), |(i, _)| i + hash);
    let id = t[..end].trim_end_matches(['.', '-']);
    if !id_like(id) {
        return None;
    }
    let mut rest = &t[end..];
    if let Some(after) = rest.trim_start().strip_prefix("[P]") {
        rest = after;
    }
    // After the id: end, `:`, whitespace, or closing emphasis.
    if !matches!(rest.chars().next(), None | Some(':' | '：' | '*' | '`' | ' ' | '\t')) {
        return None;
    }
    // A word with a digit inside (`E2E テスト`, `B2B sales`) is not an id unless a `:`
    // says so.
    let labelled = rest.trim_start_matches(['*', '`']).starts_with([':', '：']);
    if !labelled && !numbered_look(id) {
        return None;
    }
    let rest = rest.trim_start_matches(['*', '`']).trim_start();
    let rest = rest.strip_prefix([':', '：']).unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix(['—', '–', '-']).map_or(rest, str::trim_start);
    Some((id.to_owned(), rest))
}

/// Whether an id looks numbered: it starts or ends with a digit, or has `.`, `-`, `_` or
/// `#` in it (`1.2`, `T910`, `W3-001`, `111.5.2a`, `#59`) — not `E2E` or `B2B`.
fn numbered_look(id: &str) -> bool {
    let starts = id.chars().next().is_some_and(|c| c.is_ascii_digit());
    let ends = id.chars().next_back().is_some_and(|c| c.is_ascii_digit());
    starts || ends || id.contains(['.', '-', '_', '#'])
}

/// `1. text` / `2) text`: a numbered step, whose number is not a task id unless the
/// line carries a status marker of its own.
pub(crate) fn numbered_step(text: &str) -> bool {
    let t = text.trim_start().trim_start_matches(['*', '`']);
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    digits > 0
        && t[digits..]
            .strip_prefix(['.', ')'])
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '*', '`']))
}

/// Words that start a phase heading, lower-case: `Phase 2`, `フェーズ2`, `단계 2`.
const PHASE_WORDS: &[&str] = &["phase", "フェーズ", "페이즈", "단계", "阶段"];

/// The label of a `Phase …` heading or token: `Phase 5.15: Clouds` → `5.15`,
/// `🔴 フェーズ1: 基盤` → `1`, `Phase A` → `a`.
pub(crate) fn phase_label(text: &str) -> Option<String> {
    let t = text.trim_start_matches(|c: char| !c.is_alphanumeric());
    let lower = t.to_lowercase();
    let rest = PHASE_WORDS.iter().find_map(|w| lower.strip_prefix(w))?;
    if !rest.starts_with(|c: char| c.is_ascii_digit() || matches!(c, ' ' | '\t' | '-' | '_')) {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t', '-', '_']);
    let label: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-')).collect();
    let label = label.trim_end_matches(['.', '-', '_']);
    (!label.is_empty()).then(|| label.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Option<String> {
        leading_id(s).map(|x| x.0)
    }

    #[test]
    fn leading_ids() {
        assert_eq!(id("1.2: Title").as_deref(), Some("1.2"));
        assert_eq!(id("Task 3: Foo").as_deref(), Some("3"));
        assert_eq!(id("**GEO-3.1** Foo").as_deref(), Some("GEO-3.1"));
        assert_eq!(id("**W3-001**: text").as_deref(), Some("W3-001"));
        assert_eq!(id("T910: text").as_deref(), Some("T910"));
        assert_eq!(id("#59 E5.2a: Packet header").as_deref(), Some("#59"));
        assert_eq!(id("Issue #125: fix").as_deref(), Some("#125"));
        assert_eq!(id("1.3 [P] Parallel").as_deref(), Some("1.3"));
        assert_eq!(id("1.3[P]: Parallel").as_deref(), Some("1.3"));
        assert_eq!(id("5. Numbered").as_deref(), Some("5"));
        assert_eq!(id("Setup the thing"), None);
        assert_eq!(id("Setup 1.2"), None);
        assert_eq!(id("1.2/3 split"), None);
        assert_eq!(id("E2E テスト: 新規"), None);
        assert_eq!(id("E2E: 新規").as_deref(), Some("E2E"));
        assert_eq!(id("111.5.2a Encoder").as_deref(), Some("111.5.2a"));
        assert_eq!(id("140文字制限"), None);
        assert_eq!(id("# heading"), None);
    }

    #[test]
    fn numbered_steps() {
        assert!(numbered_step("1. Install"));
        assert!(numbered_step("**2.** Build"));
        assert!(!numbered_step("1.1 Install"));
        assert!(!numbered_step("T1. Install"));
    }

    #[test]
    fn cleaned_ids() {
        assert_eq!(clean_id("**1.2**"), "1.2");
        assert_eq!(clean_id("`T-1`:"), "T-1");
        assert_eq!(clean_id("1.3 [P]"), "1.3");
        assert_eq!(clean_id("[2.1](#21)"), "2.1");
        assert_eq!(clean_id("~~4~~"), "4");
    }

    #[test]
    fn phase_labels() {
        assert_eq!(phase_label("Phase 5.15: Cloud Layer").as_deref(), Some("5.15"));
        assert_eq!(phase_label("Phase A: gate").as_deref(), Some("a"));
        assert_eq!(phase_label("✅ Phase 2 — done").as_deref(), Some("2"));
        assert_eq!(phase_label("🔴 フェーズ1: 基盤構築 `cc:TODO`").as_deref(), Some("1"));
        assert_eq!(phase_label("Phases overview"), None);
    }
}
