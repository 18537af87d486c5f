//! What a stream parser keeps from a CLI's output ([`Parsed`]), and helpers shared by the
//! claude and codex parsers.

use breeze_protocol::Usage;
use serde_json::Value;

use crate::call::AgentFailure;

/// Notes kept from a stream (CLI warnings, questions the agent asked): at most this many.
pub(crate) const MAX_NOTES: usize = 8;
/// Each note and each remembered text is cut to this many bytes.
pub(crate) const MAX_NOTE_BYTES: usize = 500;

/// The summary of one CLI stream: only ids, the answer, sums and bounded notes are kept,
/// never the stream itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Claude `session_id` / codex `thread_id` (the first one seen).
    pub session_id: Option<String>,
    /// The model the CLI reported, if any.
    pub model: Option<String>,
    /// The stream's final line was seen (claude `result`; codex `turn.completed` or
    /// `turn.failed`).
    pub finished: bool,
    /// The role's JSON answer.
    pub answer: Option<Value>,
    /// Why there is no answer.
    pub answer_error: Option<String>,
    /// The classified failure, if the stream reports one (or ended early).
    pub failure: Option<AgentFailure>,
    /// Cost and tokens of this run.
    pub usage: Usage,
    /// The session's running totals where the CLI reports them (claude `total_cost_usd` +
    /// `modelUsage`; codex `turn.completed.usage`, which after `codex exec resume`
    /// includes the earlier runs of the thread).
    pub session_usage: Option<Usage>,
    /// Paths written outside the write set (worktree-relative, or absolute outside it).
    pub write_violations: Vec<String>,
    /// Violations beyond the kept ones.
    pub write_violations_dropped: u64,
    /// Lines read.
    pub lines: u64,
    /// Lines that were not JSON objects.
    pub malformed_lines: u64,
    /// Short notes for the diagnostics (warnings, questions, recovered errors).
    pub notes: Vec<String>,
    /// The usage windows the stream last reported (claude `rate_limit_event`), by window.
    pub windows: Vec<breeze_protocol::UsageWindow>,
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// Keeps the last `max` bytes of `text` (on a character boundary).
pub(crate) fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Adds a note if there is room.
pub(crate) fn push_note(notes: &mut Vec<String>, note: String) {
    if notes.len() < MAX_NOTES {
        notes.push(clip(&note, MAX_NOTE_BYTES));
    }
}

/// The JSON answer in a final text: the whole text if it is a JSON object (structured
/// output), else the last top-level JSON object in it.
pub(crate) fn answer_in_text(text: &str) -> Option<Value> {
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(text.trim()) {
        return Some(value);
    }
    breeze_supervise::last_json_object(text.as_bytes())
}

/// Whether a line the supervisor cut (it ends with its truncation marker) contains one of
/// `markers`, so that the error can say what was lost. The type key is not always first
/// (claude puts it after the long `result` text), so the whole kept part is searched, for
/// the type or for fields only that kind of line has.
/// The first steps of reading a stream line, shared by both CLIs: skip blank lines, count
/// it, and parse it as a JSON object. A line that is not one is counted as malformed and
/// returned as `Err(true)` when it is a truncated line of one of `final_markers` (the
/// run's final answer was cut by the line limit), `Err(false)` otherwise.
pub(crate) fn read_stream_line(
    parsed: &mut Parsed,
    line: &str,
    cli: &str,
    final_markers: &[&str],
) -> Result<Value, bool> {
    parsed.lines += 1;
    match serde_json::from_str::<Value>(line) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => {
            parsed.malformed_lines += 1;
            tracing::debug!(line = %clip(line, 200), "{cli}: a stream line is not a JSON object");
            Err(cut_line_of_type(line, final_markers))
        }
    }
}

pub(crate) fn cut_line_of_type(line: &str, markers: &[&str]) -> bool {
    line.ends_with(" bytes]")
        && line.contains("[line truncated:")
        && markers.iter().any(|marker| line.contains(marker))
}

/// `total − earlier`, field by field, never below zero.
pub(crate) fn usage_since(total: &Usage, earlier: &Usage) -> Usage {
    Usage {
        cost_usd: match (total.cost_usd, earlier.cost_usd) {
            (Some(total), Some(earlier)) => Some((total - earlier).max(0.0)),
            (total, _) => total,
        },
        input_tokens: total.input_tokens.saturating_sub(earlier.input_tokens),
        output_tokens: total.output_tokens.saturating_sub(earlier.output_tokens),
        cached_input_tokens: total.cached_input_tokens.saturating_sub(earlier.cached_input_tokens),
        unpriced_calls: 0,
    }
}

/// A JSON number as u64 (negative or fractional values are read as 0 / truncated).
pub(crate) fn as_count(value: Option<&Value>) -> u64 {
    match value {
        Some(Value::Number(n)) => {
            n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)).unwrap_or(0)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_respects_character_boundaries() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééé", 3), "é… [4 more bytes]");
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("éé", 3), "é");
    }

    #[test]
    fn answers_come_from_whole_json_or_the_last_object() {
        assert_eq!(answer_in_text(" {\"a\":1} "), Some(serde_json::json!({"a": 1})));
        assert_eq!(
            answer_in_text("Done.\n```json\n{\"a\":1}\n```\nand {\"b\":2} at the end"),
            Some(serde_json::json!({"b": 2}))
        );
        assert_eq!(answer_in_text("[1,2]"), None);
        assert_eq!(answer_in_text("no json {here"), None);
    }

    #[test]
    fn cut_lines_are_recognized() {
        let cut = "{\"duration_api_ms\":83,\"total_cost_usd\":0.1,\"result\":\"aaa… [line truncated: 9000000 bytes]";
        assert!(cut_line_of_type(cut, &["\"type\":\"result\"", "\"total_cost_usd\""]));
        assert!(!cut_line_of_type(cut, &["\"type\":\"assistant\""]));
        assert!(!cut_line_of_type("{\"type\":\"result\"", &["\"type\":\"result\""]));
    }

    #[test]
    fn usage_since_never_goes_negative() {
        let total = Usage {
            cost_usd: Some(0.5),
            input_tokens: 2003,
            output_tokens: 60,
            cached_input_tokens: 400,
            unpriced_calls: 0,
        };
        let earlier = Usage {
            cost_usd: Some(0.2),
            input_tokens: 1001,
            output_tokens: 30,
            cached_input_tokens: 500,
            unpriced_calls: 0,
        };
        let since = usage_since(&total, &earlier);
        assert_eq!(
            (since.input_tokens, since.output_tokens, since.cached_input_tokens),
            (1002, 30, 0)
        );
        assert!((since.cost_usd.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(usage_since(&earlier, &total).cost_usd, Some(0.0));
    }

    #[test]
    fn counts_tolerate_odd_numbers() {
        assert_eq!(as_count(Some(&serde_json::json!(12))), 12);
        assert_eq!(as_count(Some(&serde_json::json!(-3))), 0);
        assert_eq!(as_count(Some(&serde_json::json!(2.9))), 2);
        assert_eq!(as_count(Some(&serde_json::json!("7"))), 0);
        assert_eq!(as_count(None), 0);
    }
}
