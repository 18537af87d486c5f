//! The `command` backend: any program following the role process protocol — the prompt on
//! stdin, `$BREEZE_INPUT`, the result in `$BREEZE_OUTPUT` or as the last JSON object on
//! stdout.

use std::path::Path;
use std::sync::Arc;

use breeze_protocol::{Role, Usage};
use breeze_supervise::{ActivityProbe, ProcessSpec, Supervisor, TreeWatch};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::{RoleOutcome, RoleReply};
use super::invocation::{Backend, BackendFuture, Invocation, ProcessLog};

pub(crate) struct CommandBackend {
    pub supervisor: Supervisor,
    pub log: ProcessLog,
}

impl Backend for CommandBackend {
    fn run<'a>(
        &'a self,
        run: &'a Invocation<'a>,
        cancel: &'a CancellationToken,
    ) -> BackendFuture<'a> {
        Box::pin(self.run_process(run, cancel))
    }
}

impl CommandBackend {
    async fn run_process(&self, run: &Invocation<'_>, cancel: &CancellationToken) -> RoleReply {
        let call = run.call;
        let log_path = run.log_path.clone();
        let mut spec = ProcessSpec::new(run.settings.command.clone(), &call.cwd, &log_path);
        spec.env = run.env.clone();
        spec.stdin = call.prompt.clone().into_bytes();
        spec.timeout = Some(run.settings.timeout);
        spec.stall_timeout = Some(run.settings.stall_timeout);
        spec.grace = run.settings.stop_grace;
        spec.confinement = run.confinement.clone();
        spec.network = run.network.clone();
        spec.marker = Some(run.marker.clone());
        // A worker that edits files without printing is not stalled: its lane's watch says so
        // (no walk of the lane).
        let activity: Option<Arc<dyn ActivityProbe>> = match (call.role, &run.activity) {
            (Role::Worker, Some(watch)) => Some(watch.clone()),
            (Role::Worker, None) => Some(Arc::new(TreeWatch::start(&call.cwd))),
            _ => None,
        };
        let on_spawn = self.log.started(call, &log_path);
        let outcome =
            match self.supervisor.run(spec, activity, cancel.clone(), on_spawn, |_line| {}).await {
                Ok(outcome) => outcome,
                Err(err) => {
                    return RoleReply::of(RoleOutcome::CouldNotStart(err.to_string()), log_path);
                }
            };
        self.log.ended(call, outcome.pid, outcome.ending, Usage::default());
        let result = read_result(&run.output_path, &run.record_path, outcome.last_json);
        RoleReply {
            diagnostics: super::invocation::diagnostics(&outcome.stderr_tail, &outcome.stdout_tail),
            ..RoleReply::of(RoleReply::from_ending(outcome.ending, result), log_path)
        }
    }
}

/// Why a `command` role that exited 0 gave no result.
#[derive(Debug, thiserror::Error)]
enum NoResult {
    /// `$BREEZE_OUTPUT` holds no JSON.
    #[error("$BREEZE_OUTPUT is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Neither `$BREEZE_OUTPUT` nor a JSON object on stdout.
    #[error("no $BREEZE_OUTPUT file and no JSON object on stdout")]
    Missing,
    /// `$BREEZE_OUTPUT` is too large, a link or a special file.
    #[error("$BREEZE_OUTPUT refused: {0}")]
    Refused(#[source] breeze_supervise::RoleFileError),
}

/// The result of a `command` role: `$BREEZE_OUTPUT` if the role wrote it (read with a size
/// bound, links and special files refused), else the last JSON object on stdout. A result
/// found is kept for the record.
fn read_result(output: &Path, record: &Path, last_json: Option<Value>) -> Result<Value, NoResult> {
    let read = breeze_supervise::read_role_file(output, breeze_supervise::MAX_ROLE_FILE_BYTES);
    let value = match read {
        Ok(Some(bytes)) => serde_json::from_slice::<Value>(&bytes).map_err(NoResult::NotJson)?,
        Ok(None) => last_json.ok_or(NoResult::Missing)?,
        Err(err) => return Err(NoResult::Refused(err)),
    };
    super::invocation::keep_for_the_record(record, &value);
    Ok(value)
}
