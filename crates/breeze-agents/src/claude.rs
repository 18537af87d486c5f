//! An incremental parser of `claude -p --output-format stream-json --verbose` output.
//!
//! Line types used: `system` (`init`: `session_id`, `model`; `api_retry`: noted),
//! `assistant` (text, `tool_use` of the write tools, the `error` field, `message.usage`),
//! `rate_limit_event` and the final `result`. Everything else (`user`, `stream_event`,
//! `control_*`, types added by later CLI versions) is ignored; lines that are not JSON are
//! counted and left to the raw log.

use std::path::Path;
use std::time::SystemTime;

use breeze_protocol::Usage;
use serde_json::Value;

use crate::args::CLAUDE_WRITE_TOOLS;
use crate::call::{AgentFailure, WriteSetCheck};
use crate::classify::{
    ErrorClass, class_of_status, classify_text, failure_for, retry_after_in_text, until_unix,
};
use crate::parsed::{
    MAX_NOTE_BYTES, Parsed, answer_in_text, as_count, clip, push_note, read_stream_line, tail,
};
use crate::write_check::WriteCheck;

/// The last assistant text kept for a crash report.
const LAST_TEXT_BYTES: usize = 1000;

/// What the final `result` line said, reduced to what the summary needs.
#[derive(Debug, Clone)]
struct ResultLine {
    subtype: String,
    is_error: bool,
    /// The error text (`result`, or `errors[]`), for failed results.
    message: String,
    api_error_status: Option<u16>,
    answer: Option<Value>,
    answer_error: Option<String>,
    usage: Usage,
    session_usage: Option<Usage>,
}

/// Incremental parser of one claude stream. Feed it every stdout line, then
/// [`finish`](Self::finish).
pub struct ClaudeStream {
    write_check: Option<WriteCheck>,
    schema_requested: bool,
    parsed: Parsed,
    result: Option<ResultLine>,
    result_line_cut: Option<String>,
    /// The `error` field of the last assistant line that had one
    /// (`authentication_failed`, `rate_limit`, `billing_error`, ...).
    assistant_error: Option<String>,
    /// A `rate_limit_event` with status `rejected`: its type and reset time (unix s).
    rate_limit_rejected: Option<(String, Option<u64>)>,
    last_text: String,
    /// Usage of finished assistant messages (claude repeats a message's usage on every
    /// line of that message, so it is added once per message id), for streams that end
    /// without a `result`.
    assistant_usage: Usage,
    current_message: Option<(String, Usage)>,
}

impl ClaudeStream {
    /// A parser. With `write_check` = `(worktree, in_write_set)`, the file paths of
    /// `Write`/`Edit`/`MultiEdit`/`NotebookEdit` tool calls are checked as they arrive.
    /// `schema_requested` only words the error when no structured answer came back.
    pub fn new(write_check: Option<(&Path, WriteSetCheck)>, schema_requested: bool) -> Self {
        ClaudeStream {
            write_check: write_check.map(|(worktree, check)| WriteCheck::new(worktree, check)),
            schema_requested,
            parsed: Parsed::default(),
            result: None,
            result_line_cut: None,
            assistant_error: None,
            rate_limit_rejected: None,
            last_text: String::new(),
            assistant_usage: Usage::default(),
            current_message: None,
        }
    }

    /// Reads one stdout line.
    pub fn feed(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let markers = ["\"type\":\"result\"", "\"total_cost_usd\"", "\"is_error\""];
        let value = match read_stream_line(&mut self.parsed, line, "claude", &markers) {
            Ok(value) => value,
            Err(final_line_cut) => {
                if final_line_cut {
                    self.result_line_cut = Some(clip(line.rsplit('[').next().unwrap_or(""), 80));
                }
                return;
            }
        };
        if self.parsed.session_id.is_none()
            && let Some(id) = value.get("session_id").and_then(Value::as_str)
        {
            self.parsed.session_id = Some(id.to_owned());
        }
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "system" => self.system(&value),
            "assistant" => self.assistant(&value),
            "rate_limit_event" => self.rate_limit_event(&value),
            "result" => self.result(&value),
            _ => {}
        }
    }

    fn system(&mut self, value: &Value) {
        match value.get("subtype").and_then(Value::as_str) {
            Some("init") => {
                let model = value.get("model").and_then(Value::as_str).map(str::to_owned);
                self.parsed.model = self.parsed.model.take().or(model);
            }
            Some("api_retry") => {
                let attempt = as_count(value.get("attempt"));
                let error = value
                    .get("error")
                    .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                    .unwrap_or_default();
                push_note(
                    &mut self.parsed.notes,
                    format!("claude retried the API (attempt {attempt}): {error}"),
                );
            }
            _ => {}
        }
    }

    fn assistant(&mut self, value: &Value) {
        // Only the latest assistant line counts: claude prints its synthetic error line
        // last, and an error followed by normal replies was recovered from.
        self.assistant_error = value.get("error").and_then(Value::as_str).map(|e| clip(e, 100));
        let Some(message) = value.get("message") else { return };
        if let Some(usage) = message.get("usage") {
            let id = message.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
            let usage = claude_usage(usage, None);
            match &mut self.current_message {
                Some((current, latest)) if *current == id && !id.is_empty() => *latest = usage,
                _ => {
                    if let Some((_, done)) = self.current_message.replace((id, usage)) {
                        self.assistant_usage.add(&done);
                    }
                }
            }
        }
        let Some(content) = message.get("content").and_then(Value::as_array) else { return };
        for block in content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        self.last_text = tail(text, LAST_TEXT_BYTES).to_owned();
                    }
                }
                Some("tool_use") => self.tool_use(block),
                _ => {}
            }
        }
    }

    fn tool_use(&mut self, block: &Value) {
        let Some(check) = self.write_check.as_mut() else { return };
        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
        if !CLAUDE_WRITE_TOOLS.contains(&name) {
            return;
        }
        let input = block.get("input");
        let path = ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|key| input.and_then(|i| i.get(key)).and_then(Value::as_str));
        if let Some(path) = path {
            check.check(path);
        }
    }

    fn rate_limit_event(&mut self, value: &Value) {
        let Some(info) = value.get("rate_limit_info") else { return };
        let status = info.get("status").and_then(Value::as_str).unwrap_or("");
        let kind =
            info.get("rateLimitType").and_then(Value::as_str).unwrap_or("unknown").to_owned();
        let resets_at = info.get("resetsAt").and_then(Value::as_u64);
        for window in crate::windows::claude_windows(info) {
            self.parsed.windows.retain(|known| known.window != window.window);
            self.parsed.windows.push(window);
        }
        match status {
            "rejected" => self.rate_limit_rejected = Some((kind, resets_at)),
            "allowed" => self.rate_limit_rejected = None,
            "allowed_warning" => push_note(
                &mut self.parsed.notes,
                format!(
                    "claude rate limit warning ({kind}), resets at unix time {}",
                    resets_at.unwrap_or(0)
                ),
            ),
            _ => {}
        }
    }

    fn result(&mut self, value: &Value) {
        let subtype = value.get("subtype").and_then(Value::as_str).unwrap_or("").to_owned();
        let is_error = value.get("is_error").and_then(Value::as_bool).unwrap_or(false)
            || subtype.starts_with("error");
        let text = value.get("result").and_then(Value::as_str).unwrap_or("");
        let api_error_status = value.get("api_error_status").and_then(|s| match s {
            Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Value::String(s) => s.parse().ok(),
            _ => None,
        });
        let session_cost =
            value.get("total_cost_usd").or_else(|| value.get("cost_usd")).and_then(Value::as_f64);
        // After `--resume`, `total_cost_usd` and `modelUsage` cover the whole session
        // (earlier runs included) while `usage` covers this run only; the run's own cost is
        // in `model_usage_since_last_result` (observed on 2.1.332). Older versions without
        // that field report the cost of the process, which is this run's.
        let since = model_usage_sum(value.get("model_usage_since_last_result"));
        let run_cost = since.and_then(|since| since.cost_usd).or(session_cost);
        let usage = value
            .get("usage")
            .map(|u| claude_usage(u, run_cost))
            .unwrap_or(Usage { cost_usd: run_cost, ..Usage::default() });
        // A run stopped by `--max-budget-usd` (`error_max_budget_usd`) reports zeros in
        // `usage`; its tokens are in `model_usage_since_last_result` (observed on 2.1.332).
        let usage = match since {
            Some(since) if usage.tokens() == 0 => Usage { cost_usd: usage.cost_usd, ..since },
            _ => usage,
        };
        let session_usage = model_usage_sum(value.get("modelUsage")).map(|mut total| {
            total.cost_usd = session_cost.or(total.cost_usd);
            total
        });
        let (answer, answer_error, message) = if is_error {
            let mut message = text.trim().to_owned();
            if let Some(errors) = value.get("errors").and_then(Value::as_array) {
                let errors: Vec<String> = errors
                    .iter()
                    .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                    .collect();
                if !errors.is_empty() {
                    if !message.is_empty() {
                        message.push_str("; ");
                    }
                    message.push_str(&errors.join("; "));
                }
            }
            if message.is_empty() {
                message = match subtype.as_str() {
                    "error_max_turns" => format!(
                        "stopped after {} turns (--max-turns)",
                        as_count(value.get("num_turns"))
                    ),
                    other => format!("result subtype `{other}` without a message"),
                };
            }
            let message = clip(&message, MAX_NOTE_BYTES);
            let error =
                format!("claude reported an error (subtype `{subtype}`, is_error true): {message}");
            (None, Some(error), message)
        } else {
            let structured = match value.get("structured_output") {
                Some(Value::String(s)) => answer_in_text(s),
                Some(Value::Null) | None => None,
                Some(other) => Some(other.clone()),
            };
            match structured.or_else(|| answer_in_text(text)) {
                Some(answer) => (Some(answer), None, String::new()),
                None => {
                    let error = if self.schema_requested {
                        "claude returned no `structured_output` and its final text has no JSON object"
                    } else {
                        "claude's final result text has no JSON object"
                    };
                    (None, Some(format!("{error}: {}", clip(text.trim(), 300))), String::new())
                }
            }
        };
        self.parsed.finished = true;
        self.result = Some(ResultLine {
            subtype,
            is_error,
            message,
            api_error_status,
            answer,
            answer_error,
            usage,
            session_usage,
        });
    }

    /// The summary, with retry delays relative to the current time.
    pub fn finish(self) -> Parsed {
        self.finish_at(SystemTime::now())
    }

    /// The summary, with retry delays relative to `now`.
    pub fn finish_at(mut self, now: SystemTime) -> Parsed {
        if let Some((_, last)) = self.current_message.take() {
            self.assistant_usage.add(&last);
        }
        let event_retry =
            self.rate_limit_rejected.as_ref().and_then(|(_, at)| *at).map(|at| until_unix(at, now));
        let assistant_class = self.assistant_error.as_deref().and_then(class_of_assistant_error);
        let event_class = self.rate_limit_rejected.is_some().then_some(ErrorClass::RateLimited);
        let mut parsed = std::mem::take(&mut self.parsed);
        match self.result.take() {
            Some(result) => {
                parsed.usage = result.usage;
                parsed.session_usage = result.session_usage;
                parsed.answer = result.answer;
                parsed.answer_error = result.answer_error;
                if result.is_error {
                    let classes = [
                        classify_text(&result.message),
                        result.api_error_status.and_then(class_of_status),
                        assistant_class,
                        event_class,
                    ];
                    let retry = event_retry.or_else(|| retry_after_in_text(&result.message, now));
                    parsed.failure = Some(match strongest(&classes) {
                        Some(class) => failure_for(class, result.message, retry),
                        None if result.subtype == "error_max_turns" => {
                            AgentFailure::MaxTurns { message: result.message }
                        }
                        None if result.api_error_status.is_some()
                            || matches!(
                                self.assistant_error.as_deref(),
                                Some("server_error" | "invalid_request")
                            ) =>
                        {
                            AgentFailure::Api {
                                status: result.api_error_status,
                                message: result.message,
                            }
                        }
                        None => AgentFailure::Failed { message: result.message },
                    });
                }
            }
            None => {
                parsed.usage = self.assistant_usage;
                let ended = match &self.result_line_cut {
                    Some(cut) => format!(
                        "the `result` line was too long and was cut ({cut}); see the raw log"
                    ),
                    None => format!(
                        "the stream ended without a `result` line after {} lines",
                        parsed.lines
                    ),
                };
                parsed.answer_error = Some(ended.clone());
                let mut message = ended;
                if !self.last_text.is_empty() {
                    message.push_str(&format!("; last text: {}", clip(self.last_text.trim(), 300)));
                }
                let limit_message = |kind: &str| match &self.rate_limit_rejected {
                    Some((limit, _)) => {
                        format!("claude's {limit} rate limit rejected the request ({kind})")
                    }
                    None => format!("claude reported `{kind}`"),
                };
                parsed.failure = Some(match strongest(&[assistant_class, event_class]) {
                    Some(class) => {
                        let what =
                            self.assistant_error.clone().unwrap_or_else(|| "rate_limit".into());
                        failure_for(class, limit_message(&what), event_retry)
                    }
                    None => AgentFailure::Crashed { message },
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

/// The class of an assistant line's `error` field.
fn class_of_assistant_error(error: &str) -> Option<ErrorClass> {
    match error {
        "rate_limit" | "overloaded" => Some(ErrorClass::RateLimited),
        "billing_error" => Some(ErrorClass::Quota),
        "authentication_failed" => Some(ErrorClass::Auth),
        _ => None,
    }
}

/// The most specific of several classifications: quota, then rate limit, then auth.
pub(crate) fn strongest(classes: &[Option<ErrorClass>]) -> Option<ErrorClass> {
    [ErrorClass::Quota, ErrorClass::RateLimited, ErrorClass::Auth]
        .into_iter()
        .find(|class| classes.contains(&Some(*class)))
}

/// The sum over models of a `modelUsage`-shaped object (`{model: {inputTokens,
/// outputTokens, cacheReadInputTokens, cacheCreationInputTokens, costUSD}}`), in breeze's
/// terms; `None` if absent or empty.
fn model_usage_sum(models: Option<&Value>) -> Option<Usage> {
    let models = models?.as_object().filter(|m| !m.is_empty())?;
    let mut total = Usage::default();
    for model in models.values() {
        let cache_read = as_count(model.get("cacheReadInputTokens"));
        total.add(&Usage {
            cost_usd: model.get("costUSD").and_then(Value::as_f64).filter(|c| c.is_finite()),
            input_tokens: as_count(model.get("inputTokens"))
                + as_count(model.get("cacheCreationInputTokens"))
                + cache_read,
            output_tokens: as_count(model.get("outputTokens")),
            cached_input_tokens: cache_read,
            unpriced_calls: 0,
        });
    }
    Some(total)
}

/// Claude's `usage` in breeze's terms: `input_tokens` counts every input token (claude
/// reports fresh, cache-write and cache-read input separately), `cached_input_tokens` the
/// cache reads.
fn claude_usage(usage: &Value, cost: Option<f64>) -> Usage {
    let fresh = as_count(usage.get("input_tokens"));
    let cache_write = as_count(usage.get("cache_creation_input_tokens"));
    let cache_read = as_count(usage.get("cache_read_input_tokens"));
    Usage {
        cost_usd: cost.filter(|c| c.is_finite() && *c >= 0.0),
        input_tokens: fresh + cache_write + cache_read,
        output_tokens: as_count(usage.get("output_tokens")),
        cached_input_tokens: cache_read,
        unpriced_calls: 0,
    }
}
