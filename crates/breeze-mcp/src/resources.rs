//! The latest run as MCP resources, for clients that read them: its status
//! (breeze-status.v1), its journal (breeze-event.v1 lines, the last 64 KiB) and its report
//! (Markdown). Read-only, like `breeze status` and `breeze report`.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};
use serde_json::Value;

use crate::bounded::bounded;
use crate::cli::Breeze;

/// The latest run's status.
pub const STATUS: &str = "breeze://run/status";
/// The latest run's journal.
pub const EVENTS: &str = "breeze://run/events";
/// The latest run's report.
pub const REPORT: &str = "breeze://run/report";

/// How much of the journal a read returns (its end).
const EVENTS_BYTES: usize = 64 * 1024;

/// The resources offered.
pub fn list() -> Vec<Resource> {
    let resource = |uri: &str, name: &str, mime: &str, what: &str| {
        Resource::new(uri, name).with_mime_type(mime).with_description(what)
    };
    vec![
        resource(
            STATUS,
            "status",
            "application/json",
            "the latest run as breeze-status.v1 (`breeze status --json`)",
        ),
        resource(
            EVENTS,
            "events",
            "application/jsonl",
            "the latest run's journal, breeze-event.v1 lines (its last 64 KiB)",
        ),
        resource(REPORT, "report", "text/markdown", "the latest run as Markdown (`breeze report`)"),
    ]
}

/// Reads the resource `uri`; the command's error when there is no run to read.
pub async fn read(breeze: &Breeze, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let (text, mime) = match uri {
        STATUS => (command_text(breeze, &["status", "--json"]).await?, "application/json"),
        REPORT => (command_text(breeze, &["report"]).await?, "text/markdown"),
        EVENTS => (journal(breeze).await?, "application/jsonl"),
        _ => {
            let known = format!("{STATUS}, {EVENTS} or {REPORT}");
            let message = format!("breeze has no resource {uri}; it has {known}");
            return Err(ErrorData::resource_not_found(message, None));
        }
    };
    let contents = ResourceContents::text(text, uri).with_mime_type(mime);
    Ok(ReadResourceResult::new(vec![contents]))
}

async fn command_text(breeze: &Breeze, args: &[&str]) -> Result<String, ErrorData> {
    let failed = |text: String| ErrorData::internal_error(text, None);
    let ran = breeze.run(args).await.map_err(|_| failed("cannot start breeze".into()))?;
    if !ran.succeeded() {
        return Err(failed(ran.failure_text()));
    }
    Ok(ran.stdout)
}

/// The latest run's `events.jsonl`, its end.
async fn journal(breeze: &Breeze) -> Result<String, ErrorData> {
    let status: Value =
        serde_json::from_str(&command_text(breeze, &["status", "--json"]).await?)
            .map_err(|err| ErrorData::internal_error(format!("no status: {err}"), None))?;
    let run_id = status["run_id"].as_str().unwrap_or_default();
    let path = breeze.repo().join(".breeze").join("runs").join(run_id).join("events.jsonl");
    let text = tokio::fs::read_to_string(&path).await.map_err(|err| {
        ErrorData::internal_error(format!("cannot read {}: {err}", path.display()), None)
    })?;
    Ok(bounded(&text, EVENTS_BYTES, true, &format!("cat {}", path.display())))
}
