//! An incremental parser of `codex exec --json` output.
//!
//! Events used: `thread.started` (`thread_id`), `item.*` of type `agent_message` (the
//! answer), `file_change` (checked against the write set), `error` (a warning, noted),
//! `request_user_input` (noted: nobody can answer), `turn.completed` (`usage`),
//! `turn.failed` and the top-level `error`. Everything else is ignored; lines that are
//! not JSON are counted and left to the raw log.

use std::path::Path;
use std::time::SystemTime;

use breeze_protocol::Usage;
use serde_json::Value;

use crate::call::{AgentFailure, WriteSetCheck};
use crate::classify::{classify_text, failure_for, retry_after_in_text};
use crate::parsed::{
    MAX_NOTE_BYTES, Parsed, answer_in_text, as_count, clip, push_note, read_stream_line,
};
use crate::write_check::WriteCheck;

/// How the turn ended, if it did (the last terminal event wins).
#[derive(Debug, Clone)]
enum TurnEnd {
    Completed,
    Failed(String),
}

/// Incremental parser of one codex stream. Feed it every stdout line, then
/// [`finish`](Self::finish).
pub struct CodexStream {
    write_check: Option<WriteCheck>,
    schema_requested: bool,
    parsed: Parsed,
    turn_end: Option<TurnEnd>,
    /// The text of the last completed `agent_message` (one line's worth at most: the
    /// supervisor bounds lines).
    last_message: Option<String>,
    /// The message of the last top-level `error` event.
    last_error: Option<String>,
    final_line_cut: bool,
}

impl CodexStream {
    /// A parser. With `write_check` = `(worktree, in_write_set)`, the paths of
    /// `file_change` items are checked as they arrive. `schema_requested` only words the
    /// error when the final message is not JSON.
    pub fn new(write_check: Option<(&Path, WriteSetCheck)>, schema_requested: bool) -> Self {
        CodexStream {
            write_check: write_check.map(|(worktree, check)| WriteCheck::new(worktree, check)),
            schema_requested,
            parsed: Parsed::default(),
            turn_end: None,
            last_message: None,
            last_error: None,
            final_line_cut: false,
        }
    }

    /// Reads one stdout line.
    pub fn feed(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let markers = ["\"type\":\"item.completed\"", "\"type\":\"turn.completed\""];
        let value = match read_stream_line(&mut self.parsed, line, "codex", &markers) {
            Ok(value) => value,
            Err(final_line_cut) => {
                self.final_line_cut |= final_line_cut;
                return;
            }
        };
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => {
                let thread = value.get("thread_id").and_then(Value::as_str).map(str::to_owned);
                self.parsed.session_id = self.parsed.session_id.take().or(thread);
            }
            "item.started" | "item.updated" | "item.completed" => {
                let completed = value.get("type").and_then(Value::as_str) == Some("item.completed");
                if let Some(item) = value.get("item") {
                    self.item(item, completed);
                }
            }
            "turn.completed" => {
                self.turn_end = Some(TurnEnd::Completed);
                // `usage` is the thread's running total as this process knows it, so the
                // last one is kept rather than summed.
                if let Some(usage) = value.get("usage") {
                    self.parsed.session_usage = Some(Usage {
                        // Codex reports tokens, never a price.
                        cost_usd: None,
                        input_tokens: as_count(usage.get("input_tokens")),
                        output_tokens: as_count(usage.get("output_tokens")),
                        cached_input_tokens: as_count(usage.get("cached_input_tokens")),
                        unpriced_calls: 0,
                    });
                    // This run's share is known only to the caller, who knows the total
                    // at the end of the previous run (see `AgentCall::resume_baseline`).
                    self.parsed.usage = self.parsed.session_usage.unwrap_or_default();
                }
            }
            "turn.failed" => {
                let message = value
                    .get("error")
                    .and_then(|e| e.get("message").and_then(Value::as_str).or_else(|| e.as_str()))
                    .unwrap_or("turn failed");
                self.turn_end = Some(TurnEnd::Failed(clip(message.trim(), MAX_NOTE_BYTES)));
            }
            "error" => {
                let message = value.get("message").and_then(Value::as_str).unwrap_or("error");
                self.last_error = Some(clip(message.trim(), MAX_NOTE_BYTES));
            }
            "request_user_input" => {
                let question = value
                    .get("questions")
                    .and_then(Value::as_array)
                    .and_then(|q| q.first())
                    .and_then(|q| q.get("question").or_else(|| q.get("header")))
                    .and_then(Value::as_str)
                    .unwrap_or("(no question text)");
                push_note(
                    &mut self.parsed.notes,
                    format!(
                        "codex asked for user input, which a headless run cannot give: {question}"
                    ),
                );
            }
            _ => {}
        }
    }

    fn item(&mut self, item: &Value, completed: bool) {
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "agent_message" if completed => {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    self.last_message = Some(text.to_owned());
                }
            }
            "file_change" => {
                let Some(check) = self.write_check.as_mut() else { return };
                for change in item.get("changes").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(path) = change.get("path").and_then(Value::as_str) {
                        check.check(path);
                    }
                }
            }
            "error" if completed => {
                if let Some(message) = item.get("message").and_then(Value::as_str) {
                    push_note(&mut self.parsed.notes, format!("codex warning: {message}"));
                }
            }
            _ => {}
        }
    }

    /// The summary, with retry delays relative to the current time.
    pub fn finish(self) -> Parsed {
        self.finish_at(SystemTime::now())
    }

    /// The summary, with retry delays relative to `now`.
    pub fn finish_at(mut self, now: SystemTime) -> Parsed {
        let mut parsed = std::mem::take(&mut self.parsed);
        let classified = |message: String, otherwise: fn(String) -> AgentFailure| {
            match classify_text(&message) {
                Some(class) => {
                    let retry = retry_after_in_text(&message, now);
                    failure_for(class, message, retry)
                }
                None => otherwise(message),
            }
        };
        match self.turn_end.take() {
            Some(TurnEnd::Completed) => {
                parsed.finished = true;
                if let Some(error) = &self.last_error {
                    push_note(&mut parsed.notes, format!("codex recovered from an error: {error}"));
                }
                match self.last_message.as_deref() {
                    Some(text) => match answer_in_text(text) {
                        Some(answer) => parsed.answer = Some(answer),
                        None => {
                            let what = if self.schema_requested {
                                "codex's final message is not the JSON the output schema asked for"
                            } else {
                                "codex's final message has no JSON object"
                            };
                            parsed.answer_error =
                                Some(format!("{what}: {}", clip(text.trim(), 300)));
                        }
                    },
                    None => {
                        parsed.answer_error =
                            Some("codex completed the turn without an agent message".to_owned());
                    }
                }
            }
            Some(TurnEnd::Failed(message)) => {
                parsed.finished = true;
                parsed.answer_error = Some(format!("codex reported `turn.failed`: {message}"));
                parsed.failure =
                    Some(classified(message, |message| AgentFailure::Failed { message }));
            }
            None => {
                let ended = if self.final_line_cut {
                    "a final codex event was too long and was cut; see the raw log".to_owned()
                } else {
                    format!(
                        "the stream ended without `turn.completed` after {} lines",
                        parsed.lines
                    )
                };
                parsed.failure = Some(match self.last_error.take() {
                    Some(error) => {
                        parsed.answer_error = Some(format!("{ended}; last error: {error}"));
                        classified(error, |message| AgentFailure::Api { status: None, message })
                    }
                    None => {
                        parsed.answer_error = Some(ended.clone());
                        AgentFailure::Crashed { message: ended }
                    }
                });
            }
        }
        if let Some(write_check) = self.write_check.take() {
            let (violations, dropped) = write_check.finish();
            parsed.write_violations = violations;
            parsed.write_violations_dropped = dropped;
        }
        parsed
    }
}
