//! `run` and `resume` in the background: the `breeze` command starts as a detached process
//! (its own process group, so the session's signals do not reach it), printing its events
//! into a file under `.breeze/mcp/`; the tool returns once the run has started — its first
//! event written — with the run's id, or with the command's error when it refused to start
//! (a second run while one is live, a failed preflight).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::CallToolResult;

use crate::cli::{Breeze, Ran, failure};

/// How often the start is looked at: the preflight takes seconds, a tool call more.
const POLL: Duration = Duration::from_millis(100);

/// A run started in the background.
#[derive(Debug, serde::Serialize)]
pub struct Started {
    /// The run's id (`.breeze/runs/<run_id>/`).
    pub run_id: String,
    /// The run's state when the tool returned (`running`, or how it already ended).
    pub state: String,
    /// The engine's process id.
    pub pid: Option<u32>,
    /// The file the engine prints its events (breeze-event.v1 lines) into.
    pub events: PathBuf,
    /// Its stderr: warnings, and the summary once it ends.
    pub output: PathBuf,
}

/// Starts `breeze <subcommand> --json <rest of args>` detached and returns once its run has started.
pub async fn start(breeze: &Breeze, args: &[String]) -> Result<Started, CallToolResult> {
    let (events, output) = output_files(breeze.repo())?;
    let open = |path: &Path| {
        std::fs::File::create(path)
            .map_err(|err| failure(format!("error: cannot create {}: {err}", path.display())))
    };
    // `--json` right after the subcommand: before any `--` that ends its options.
    let (subcommand, rest) =
        args.split_first().map_or(("", &[][..]), |(first, rest)| (first.as_str(), rest));
    let mut command = breeze.command(&[subcommand, "--json"]);
    command
        .args(rest)
        .stdout(Stdio::from(open(&events)?))
        .stderr(Stdio::from(open(&output)?))
        .process_group(0);
    let mut child =
        command.spawn().map_err(|err| failure(format!("error: cannot start breeze: {err}")))?;
    let pid = child.id();
    let ended = loop {
        if has_output(&events) {
            break None;
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => tokio::time::sleep(POLL).await,
            Err(err) => return Err(failure(format!("error: cannot watch breeze: {err}"))),
        }
    };
    if let Some(status) = ended
        && !has_output(&events)
    {
        let ran = Ran {
            code: status.code(),
            stdout: String::new(),
            stderr: std::fs::read_to_string(&output).unwrap_or_default(),
        };
        return Err(failure(ran.failure_text()));
    }
    // Reaped when it ends; the run goes on if the server ends first.
    tokio::spawn(async move { child.wait().await });
    let (run_id, state) = started_run(breeze).await?;
    Ok(Started { run_id, state, pid, events, output })
}

/// New files for the engine's stdout and stderr under `.breeze/mcp/`.
fn output_files(repo: &Path) -> Result<(PathBuf, PathBuf), CallToolResult> {
    let dir = repo.join(".breeze").join("mcp");
    std::fs::create_dir_all(&dir)
        .map_err(|err| failure(format!("error: cannot create {}: {err}", dir.display())))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_millis())
        .unwrap_or_default();
    let name = format!("{stamp}-{}", std::process::id());
    Ok((dir.join(format!("{name}.events.jsonl")), dir.join(format!("{name}.stderr.txt"))))
}

fn has_output(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0)
}

/// The latest run's id and state, as `breeze status --json` says: the run just started
/// (it has written its first event; no other run could start while it holds the lock).
async fn started_run(breeze: &Breeze) -> Result<(String, String), CallToolResult> {
    let status = crate::follow::status(breeze).await?;
    let field = |name: &str| status.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    Ok((field("run_id").to_string(), field("state").to_string()))
}
