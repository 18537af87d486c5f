//! Status markers: `cc:TODO`, `cc:完了 [c386c57]`, `` `cc:done` ``, `pm:requested`, ...

use std::ops::Range;

/// What a marker says about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerState {
    /// To do or in progress: breeze runs it.
    Active,
    /// Finished (or not needed): skipped, satisfies dependencies.
    Done,
    /// Blocked or on hold: not run, and neither are its dependents.
    Blocked,
    /// A marker breeze does not know: treated like blocked, with a warning.
    Unknown,
}

/// A marker found in a Status cell or heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    /// The marker as written, e.g. `cc:TODO`.
    pub text: String,
    pub state: MarkerState,
    /// Byte range of the marker token plus a directly following `[...]` suffix (a
    /// commit hash or date) in the searched string: what a status update replaces.
    pub replace: Range<usize>,
}

const PREFIXES: &[&str] = &["cc:", "pm:", "cursor:"];

const DONE: &[&str] = &[
    "done",
    "complete",
    "completed",
    "approved",
    "完了",
    "完了済",
    "済",
    "確認済",
    "不要",
    "完成",
    "已完成",
    "确认",
    "완료",
    "확인",
    "확인済",
    "확인완료",
    "불필요",
];

const ACTIVE: &[&str] = &[
    "todo",
    "wip",
    "doing",
    "in-progress",
    "requested",
    "依頼中",
    "対応中",
    "作業中",
    "進行中",
    "着手",
    "未着手",
    "进行中",
    "待办",
    "진행",
    "진행중",
    "요청",
    "작업중",
    "할일",
    "예정",
];

const BLOCKED: &[&str] = &["blocked", "hold", "on-hold", "保留", "中断", "阻塞", "보류", "중단"];

fn classify(value: &str) -> MarkerState {
    let value = value.to_lowercase();
    if DONE.contains(&value.as_str()) {
        MarkerState::Done
    } else if ACTIVE.contains(&value.as_str()) {
        MarkerState::Active
    } else if BLOCKED.contains(&value.as_str()) {
        MarkerState::Blocked
    } else {
        MarkerState::Unknown
    }
}

fn is_value_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Finds the first status marker in `s`: `cc:…`, `pm:…` or `cursor:…` at a word start
/// (backticks, bold and suffixes around it are fine), else a bare word `blocked`.
pub(crate) fn find_marker(s: &str) -> Option<Marker> {
    let lower = s.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for prefix in PREFIXES {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(prefix) {
            let at = from + pos;
            from = at + prefix.len();
            let at_word_start = s[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            let has_value = s[at + prefix.len()..].chars().next().is_some_and(is_value_char);
            if at_word_start && has_value {
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, prefix));
                }
                break;
            }
        }
    }
    if let Some((at, prefix)) = best {
        let value_start = at + prefix.len();
        let value_len: usize =
            s[value_start..].chars().take_while(|&c| is_value_char(c)).map(char::len_utf8).sum();
        let end = value_start + value_len;
        let value = &s[value_start..end];
        return Some(Marker {
            text: s[at..end].to_owned(),
            state: classify(value),
            replace: at..suffix_end(s, end),
        });
    }
    find_word(s, "blocked").map(|at| Marker {
        text: s[at..at + 7].to_owned(),
        state: MarkerState::Blocked,
        replace: at..at + 7,
    })
}

/// Extends a marker over a directly following ` [c386c57]` suffix.
fn suffix_end(s: &str, end: usize) -> usize {
    let rest = &s[end..];
    let spaces = rest.len() - rest.trim_start_matches(' ').len();
    let after = &rest[spaces..];
    if spaces <= 1
        && after.starts_with('[')
        && let Some(close) = after.find(']')
    {
        return end + spaces + close + 1;
    }
    end
}

/// The byte offset of `word` (ASCII, lower-case) in `s` as a whole word, any case.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(word) {
        let at = from + pos;
        let end = at + word.len();
        let before_ok = s[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after_ok = s[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before_ok && after_ok {
            return Some(at);
        }
        from = end;
    }
    None
}

/// A Status cell without a prefixed marker: plain words people write instead.
pub(crate) fn bare_status(cell: &str) -> Option<MarkerState> {
    let cleaned: String =
        cell.chars().filter(|c| !matches!(c, '`' | '*' | '_')).collect::<String>();
    let cleaned = cleaned.trim();
    if cleaned.starts_with('✅') || cleaned.starts_with("[x]") || cleaned.starts_with("[X]") {
        return Some(MarkerState::Done);
    }
    let first = cleaned.split(|c: char| c.is_whitespace() || c == '(' || c == '[').next()?;
    match classify(first) {
        MarkerState::Unknown => None,
        state => Some(state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(s: &str) -> (String, MarkerState, String) {
        let m = find_marker(s).unwrap_or_else(|| panic!("no marker in {s:?}"));
        (m.text, m.state, s[m.replace].to_owned())
    }

    #[test]
    fn markers_in_real_shapes() {
        use MarkerState::*;
        assert_eq!(marker("cc:TODO"), ("cc:TODO".into(), Active, "cc:TODO".into()));
        assert_eq!(marker("`cc:完了`"), ("cc:完了".into(), Done, "cc:完了".into()));
        assert_eq!(
            marker("cc:完了 [c386c57]"),
            ("cc:完了".into(), Done, "cc:完了 [c386c57]".into())
        );
        assert_eq!(marker("cc:TODO (手動)"), ("cc:TODO".into(), Active, "cc:TODO".into()));
        assert_eq!(marker("cc:DONE"), ("cc:DONE".into(), Done, "cc:DONE".into()));
        assert_eq!(marker("cc:완료 [92b0af8]").1, Done);
        assert_eq!(marker("cc:完成 ✅ 2026-08-08").1, Done);
        assert_eq!(marker("cc:完了（DoD 第 3 選択肢）").1, Done);
        assert_eq!(marker("pm:requested").1, Active);
        assert_eq!(marker("pm:確認済").1, Done);
        assert_eq!(marker("cc:blocked").1, Blocked);
        assert_eq!(marker("blocked(理由)").1, Blocked);
        assert_eq!(marker("cc:保留").1, Blocked);
        assert_eq!(marker("cc:weird").1, Unknown);
        assert_eq!(marker("**cc:WIP**"), ("cc:WIP".into(), Active, "cc:WIP".into()));
    }

    #[test]
    fn markers_need_a_word_start() {
        assert_eq!(find_marker("abcc:TODO"), None);
        assert_eq!(find_marker("unblocked"), None);
        assert_eq!(find_marker("cc: TODO"), None);
    }

    #[test]
    fn bare_words() {
        assert_eq!(bare_status("Done"), Some(MarkerState::Done));
        assert_eq!(bare_status("✅ 2026-01-01"), Some(MarkerState::Done));
        assert_eq!(bare_status("TODO"), Some(MarkerState::Active));
        assert_eq!(bare_status("maybe later"), None);
    }
}
