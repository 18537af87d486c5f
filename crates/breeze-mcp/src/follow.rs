//! `wait`: follows a run through `breeze status --json` until it ends, a task changes
//! phase, or the time given is up.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::cli::{Breeze, failure};

/// How often the run's status is read while waiting.
const POLL: Duration = Duration::from_millis(250);

/// Why `wait` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitOutcome {
    /// The run is no longer running (it succeeded, failed, was interrupted or aborted).
    Ended,
    /// A task changed phase; the run goes on.
    TaskChanged,
    /// The time given is up; nothing changed.
    TimedOut,
}

/// One task's change of phase.
#[derive(Debug, serde::Serialize)]
pub struct PhaseChange {
    /// The task's id.
    pub task: String,
    /// Its phase before (`None`: not in the run before).
    pub from: Option<String>,
    /// Its phase now.
    pub to: String,
}

/// What `wait` saw.
#[derive(Debug, serde::Serialize)]
pub struct Waited {
    /// Why it returned.
    pub outcome: WaitOutcome,
    /// The tasks that changed phase while it waited.
    pub changes: Vec<PhaseChange>,
    /// The run as `breeze status --json` shows it now (breeze-status.v1).
    pub status: Value,
}

/// The latest run as breeze-status.v1 (`breeze status --json`).
pub async fn status(breeze: &Breeze) -> Result<Value, CallToolResult> {
    let ran = breeze.run(&["status", "--json"]).await?;
    if !ran.succeeded() {
        return Err(failure(ran.failure_text()));
    }
    serde_json::from_str(&ran.stdout)
        .map_err(|err| failure(format!("error: `breeze status --json` printed no status: {err}")))
}

/// Waits until the run ends, a task changes phase, or `timeout` passes.
pub async fn wait(breeze: &Breeze, timeout: Duration) -> Result<Waited, CallToolResult> {
    let deadline = tokio::time::Instant::now() + timeout;
    let first = status(breeze).await?;
    let before = phases(&first);
    let mut now = first;
    loop {
        if !is_running(&now) {
            return Ok(Waited {
                outcome: WaitOutcome::Ended,
                changes: changes(&before, &now),
                status: now,
            });
        }
        let changed = changes(&before, &now);
        if !changed.is_empty() {
            return Ok(Waited { outcome: WaitOutcome::TaskChanged, changes: changed, status: now });
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(Waited { outcome: WaitOutcome::TimedOut, changes: changed, status: now });
        }
        tokio::time::sleep(POLL.min(deadline - tokio::time::Instant::now())).await;
        now = status(breeze).await?;
    }
}

fn is_running(status: &Value) -> bool {
    status.get("state").and_then(Value::as_str) == Some("running")
}

/// Each task's phase (its `state`) by id.
fn phases(status: &Value) -> BTreeMap<String, String> {
    let tasks = status.get("tasks").and_then(Value::as_array).cloned().unwrap_or_default();
    tasks
        .iter()
        .filter_map(|task| {
            let id = task.get("id")?.as_str()?;
            let state = task.get("state")?.as_str()?;
            Some((id.to_string(), state.to_string()))
        })
        .collect()
}

fn changes(before: &BTreeMap<String, String>, now: &Value) -> Vec<PhaseChange> {
    phases(now)
        .into_iter()
        .filter(|(id, phase)| before.get(id) != Some(phase))
        .map(|(task, to)| PhaseChange { from: before.get(&task).cloned(), task, to })
        .collect()
}
