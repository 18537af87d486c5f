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

/// A marker found in a Status cell, heading or list item.
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

/// Finished, or not needed (withdrawn, superseded): satisfies dependencies.
const DONE: &[&str] = &[
    "done",
    "complete",
    "completed",
    "approved",
    "confirmed",
    "verified",
    "closed",
    "merged",
    "withdrawn",
    "superseded",
    "cancelled",
    "canceled",
    "skipped",
    "obsolete",
    "完了",
    "完了済",
    "完了済み",
    "済",
    "済み",
    "確認済",
    "確認済み",
    "対応済",
    "対応済み",
    "実装済",
    "実装済み",
    "不要",
    "完成",
    "已完成",
    "确认",
    "已确认",
    "완료",
    "확인",
    "확인済",
    "확인완료",
    "불필요",
];

/// To do or under way: scheduled.
const ACTIVE: &[&str] = &[
    "todo",
    "to-do",
    "wip",
    "doing",
    "in-progress",
    "inprogress",
    "work",
    "working",
    "started",
    "requested",
    "依頼中",
    "対応中",
    "作業中",
    "実装中",
    "進行中",
    "着手",
    "着手中",
    "未着手",
    "未対応",
    "未完了",
    "进行中",
    "待办",
    "未开始",
    "진행",
    "진행중",
    "요청",
    "작업중",
    "할일",
    "예정",
];

/// On hold: not scheduled, and neither is anything depending on it.
const BLOCKED: &[&str] = &[
    "blocked",
    "hold",
    "on-hold",
    "paused",
    "deferred",
    "postponed",
    "waiting",
    "future",
    "someday",
    "保留",
    "中断",
    "延期",
    "待機",
    "将来",
    "阻塞",
    "暂停",
    "보류",
    "중단",
    "대기",
];

/// The state a marker value (`TODO`, `完了`, `in_progress`, ...) stands for.
pub(crate) fn classify(value: &str) -> MarkerState {
    let value = value.to_lowercase().replace('_', "-");
    let value = value.as_str();
    if DONE.contains(&value) {
        MarkerState::Done
    } else if ACTIVE.contains(&value) {
        MarkerState::Active
    } else if BLOCKED.contains(&value) {
        MarkerState::Blocked
    } else {
        MarkerState::Unknown
    }
}

fn is_value_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Every prefixed marker (`cc:…`, `pm:…`, `cursor:…` at a word start) in `s`, in order.
pub(crate) fn find_markers(s: &str) -> Vec<Marker> {
    let lower = s.to_ascii_lowercase();
    let mut found = Vec::new();
    for prefix in PREFIXES {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(prefix) {
            let at = from + pos;
            from = at + prefix.len();
            let at_word_start = s[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            if at_word_start && let Some(m) = marker_at(s, at, prefix.len()) {
                found.push(m);
            }
        }
    }
    found.sort_by_key(|m| m.replace.start);
    found
}

fn marker_at(s: &str, at: usize, prefix_len: usize) -> Option<Marker> {
    let value_start = at + prefix_len;
    let value_len: usize =
        s[value_start..].chars().take_while(|&c| is_value_char(c)).map(char::len_utf8).sum();
    if value_len == 0 {
        return None;
    }
    let end = value_start + value_len;
    Some(Marker {
        text: s[at..end].to_owned(),
        state: classify(&s[value_start..end]),
        replace: at..suffix_end(s, end),
    })
}

/// Finds the first status marker in `s`: `cc:…`, `pm:…` or `cursor:…` at a word start
/// (backticks, bold and suffixes around it are fine), else a bare word `blocked`.
pub(crate) fn find_marker(s: &str) -> Option<Marker> {
    find_markers(s).into_iter().next().or_else(|| bare_blocked(s))
}

/// The bare word `blocked`, as a marker.
pub(crate) fn bare_blocked(s: &str) -> Option<Marker> {
    let at = find_word(s, "blocked")?;
    Some(Marker {
        text: s[at..at + 7].to_owned(),
        state: MarkerState::Blocked,
        replace: at..at + 7,
    })
}

/// Extends a marker over a directly following ` [c386c57]` suffix (a commit, a date,
/// a remark), not over a tag such as `[P]` or `[feature:tdd]`.
fn suffix_end(s: &str, end: usize) -> usize {
    let rest = &s[end..];
    let spaces = rest.len() - rest.trim_start_matches(' ').len();
    let after = &rest[spaces..];
    if spaces <= 1
        && after.starts_with('[')
        && let Some(close) = after.find(']')
    {
        let inside = &after[1..close];
        if !matches!(inside, "P" | "p") && !inside.contains(':') {
            return end + spaces + close + 1;
        }
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

/// A Status cell without a prefixed marker: plain words people write instead
/// (`Done`, `TODO`, `✅ 2026-01-01`, `🔴 未着手`, `In progress`).
pub(crate) fn bare_status(cell: &str) -> Option<MarkerState> {
    let cleaned: String =
        cell.chars().filter(|c| !matches!(c, '`' | '*' | '_')).collect::<String>();
    let cleaned = cleaned.trim();
    if cleaned.starts_with('✅') || cleaned.starts_with("[x]") || cleaned.starts_with("[X]") {
        return Some(MarkerState::Done);
    }
    let words = cleaned.trim_start_matches(|c: char| !c.is_alphanumeric());
    let first = words.split(|c: char| c.is_whitespace() || c == '(' || c == '[').next()?;
    let two_words: String = words.split_whitespace().take(2).collect::<Vec<_>>().join("-");
    [first, two_words.as_str()].into_iter().map(classify).find(|s| *s != MarkerState::Unknown)
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
        assert_eq!(marker("cc:TODO [feature:tdd]").2, "cc:TODO", "a tag is not a suffix");
        assert_eq!(marker("cc:完了 [P]").2, "cc:完了");
    }

    #[test]
    fn spellings_seen_in_real_files() {
        use MarkerState::*;
        for (s, state) in [
            ("cc:IN_PROGRESS", Active),
            ("cc:in-progress", Active),
            ("cc:doing", Active),
            ("cc:WORK", Active),
            ("pm:依頼中", Active),
            ("pm:REQUESTED", Active),
            ("pm:TODO", Active),
            ("cursor:依頼中", Active),
            ("cc:진행", Active),
            ("pm:CONFIRMED", Done),
            ("pm:approved", Done),
            ("cc:completed ✅", Done),
            ("cc:withdrawn", Done),
            ("cc:完了(既存)", Done),
            ("cc:deferred", Blocked),
        ] {
            assert_eq!(marker(s).1, state, "{s}");
        }
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
        assert_eq!(bare_status("🔴 未着手"), Some(MarkerState::Active));
        assert_eq!(bare_status("In progress"), Some(MarkerState::Active));
        assert_eq!(bare_status("将来"), Some(MarkerState::Blocked));
        assert_eq!(bare_status("maybe later"), None);
    }
}
