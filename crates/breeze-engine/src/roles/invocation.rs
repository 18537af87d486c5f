//! One invocation on its way to a backend ([`Invocation`]), the trait every way of running
//! a role implements ([`Backend`]), and what backends share: the journal of their
//! processes, the result kept for the record, the diagnostics of a failure.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use breeze_protocol::{EventKind, Usage};
use breeze_supervise::{Confinement, Ending, TreeWatch};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::{RoleCall, RoleReply};
use crate::config::RoleConfig;
use crate::journal::RunStore;

/// One invocation on its way to a backend.
pub(crate) struct Invocation<'a> {
    pub call: &'a RoleCall,
    pub settings: RoleConfig,
    /// The role's environment (scrubbed, with the protocol variables).
    pub env: Vec<(String, String)>,
    /// `$BREEZE_OUTPUT` of a `command` role (in its scratch folder).
    pub output_path: PathBuf,
    /// Where the result is kept for the record (`io/…output.json`).
    pub record_path: PathBuf,
    pub log_path: PathBuf,
    /// The role's private scratch folder (`TMPDIR`).
    pub scratch: PathBuf,
    /// What the kernel lets it write, when roles are confined.
    pub confinement: Option<Confinement>,
    /// Where it may connect, when the network is allow-listed (its `env` then names the
    /// proxy).
    pub network: Option<breeze_supervise::NetworkAccess>,
    /// A worker's private git directory (its lane's `.git` names it while it runs): what
    /// the worker's git writes, besides the lane.
    pub private_git: Option<PathBuf>,
    /// Marks every process of this invocation (see `breeze_supervise::MARKER_VAR`).
    pub marker: String,
    /// A worker's lane watch: its activity for the stall clock.
    pub activity: Option<Arc<TreeWatch>>,
    /// What the call may spend (what is left of its task's and the run's budget).
    pub max_budget_usd: Option<f64>,
}

/// A future a backend returns.
pub(crate) type BackendFuture<'a> = Pin<Box<dyn Future<Output = RoleReply> + Send + 'a>>;

/// A way of running a role: a process following the protocol, an agent CLI, the simulator.
pub(crate) trait Backend: Send + Sync {
    /// Runs the invocation to its end.
    fn run<'a>(
        &'a self,
        run: &'a Invocation<'a>,
        cancel: &'a CancellationToken,
    ) -> BackendFuture<'a>;
}

/// Journals the start and end of role processes, so `resume` can end what a killed engine
/// left behind.
#[derive(Clone)]
pub(crate) struct ProcessLog {
    store: RunStore,
}

impl ProcessLog {
    /// Journals in `store`.
    pub fn new(store: RunStore) -> ProcessLog {
        ProcessLog { store }
    }

    /// The `on_spawn` callback of a call: journals the pid with its start time.
    pub fn started(
        &self,
        call: &RoleCall,
        log_path: &Path,
    ) -> impl FnOnce(u32, Option<u64>) + Send + use<> {
        let store = self.store.clone();
        let (task, role, log) = (call.task_id.clone(), call.role, log_path.display().to_string());
        move |pid, start_ticks| {
            store.record_later(EventKind::ProcessStarted { task, role, pid, start_ticks, log });
        }
    }

    /// Journals that the process of `call` ended.
    pub fn ended(&self, call: &RoleCall, pid: u32, ending: Ending, usage: Usage) {
        self.store.record_later(EventKind::ProcessEnded {
            task: call.task_id.clone(),
            role: call.role,
            pid,
            exit_code: match ending {
                Ending::Exited(code) => Some(code),
                _ => None,
            },
            outcome: crate::journal_endings::process_ending(ending),
            usage,
        });
    }
}

/// Keeps a role's result in the run files, for the record.
pub(crate) fn keep_for_the_record(record_path: &Path, value: &Value) {
    let _ = std::fs::write(record_path, serde_json::to_vec_pretty(value).unwrap_or_default());
}

/// The last few lines of stderr, else of stdout: what a human needs to see of a failure.
pub(crate) fn diagnostics(stderr: &str, stdout: &str) -> String {
    let source = if stderr.trim().is_empty() { stdout } else { stderr };
    let lines: Vec<&str> = source.lines().filter(|line| !line.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(20);
    crate::advice::bound_text(&lines[start..].join("\n"), 4096)
}
