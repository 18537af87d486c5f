//! Role process supervision for breeze.
//!
//! The engine runs every role (worker, advisor, reviewer, scaffolder) and the
//! `worktree.setup` / `land.verify` commands through [`Supervisor::run`]:
//!
//! - **Sessions and process groups.** Each process leads a new session (`setsid`: no
//!   controlling terminal), and so a new group. On timeout, stall or cancellation the whole
//!   group gets SIGTERM, a grace period, then SIGKILL. After the leader exits, a grandchild
//!   still holding the output pipes (or still alive in the group) gets the leak timeout,
//!   then SIGKILL; `run` returns only when no live process of the group is left.
//!   [`process_start_ticks`] and [`end_orphan_group`] let `breeze resume` end the groups of
//!   an engine that was killed.
//! - **PID namespaces.** Where the machine allows it ([`isolation_support`]), each process
//!   also runs in a PID namespace of its own ([`ProcessSpec::isolation`], [`Isolation`]):
//!   everything it starts — double-forked, `setsid`, with an empty environment — ends with
//!   it; it sees only its own processes in `/proc` and has pseudo-terminals of its own,
//!   never the person's.
//! - **Hard stop.** [`Supervisor::stop_hard`] (the second Ctrl-C) drops every grace period:
//!   each group run by the supervisor or any clone of it, now or later, gets SIGKILL at once.
//! - **Stall detection.** No output and no change reported by an [`ActivityProbe`] (a
//!   [`TreeWatch`] over the worktree: inotify, no walk; or [`DirActivity`], a walk) for
//!   `stall_timeout` ends the run as [`Ending::Stalled`]; re-spawning and escalating are
//!   the engine's decisions. A [`TreeWatch`] also says which paths changed, so the engine
//!   commits and checks those rather than the whole tree.
//! - **Bounded memory.** Output streams byte-exact to two log files; only bounded tails, a
//!   bounded window for [`Outcome::last_json`] and one bounded line are held in memory.
//! - **Kernel confinement.** With [`ProcessSpec::confinement`] the child restricts itself
//!   with Landlock before `exec` ([`Confinement`], [`kernel_support`]): it may write only the
//!   named folders and files, and of `/dev` only [`WRITABLE_DEVICES`] (and, in its own PID
//!   namespace, its private pseudo-terminals); `/dev/shm` is a private tmpfs of its own where
//!   the machine allows it ([`dev_shm_support`]), else not writable. The engine itself is
//!   never restricted.
//! - **Strays.** With [`ProcessSpec::marker`] every process of the run carries a marker in
//!   its environment; processes that left the group (`setsid`, a double fork) are found by
//!   it and ended with the role ([`end_processes_with_env`]) — what a machine without PID
//!   namespaces has.
//! - **A person's session.** [`run_interactive`] runs a program in the caller's terminal
//!   (`breeze attach`) — in the caller's session and process group, not isolated — confined
//!   like a role when asked (its terminal writable), and gives the terminal back.
//! - **Scrubbed environment.** [`scrubbed_env`] builds an allow-listed environment; the
//!   process gets exactly [`ProcessSpec::env`] and nothing else.
//!
//! ```no_run
//! # async fn demo() -> Result<(), breeze_supervise::SpawnError> {
//! use std::{sync::Arc, time::Duration};
//! use breeze_supervise::*;
//! use tokio_util::sync::CancellationToken;
//!
//! let mut spec = ProcessSpec::new(
//!     vec!["bash".into(), "scripts/my-worker.sh".into()],
//!     "/repo/.harness-worktrees/task-1",
//!     "/repo/.breeze/runs/r1/logs/1-worker-1",
//! );
//! spec.env = scrubbed_env(std::env::vars(), &[], &[("BREEZE_ROLE".into(), "worker".into())]);
//! spec.stdin = b"the rendered prompt".to_vec();
//! spec.stall_timeout = Some(Duration::from_secs(600));
//! let probe = Arc::new(TreeWatch::start("/repo/.harness-worktrees/task-1"));
//! let outcome = Supervisor::new()
//!     .run(spec, Some(probe), CancellationToken::new(),
//!          |pid, ticks| println!("journal: pid {pid} started at {ticks:?}"),
//!          |line| println!("worker: {line}"))
//!     .await?;
//! println!("{} after {:?}; result: {:?}", outcome.ending, outcome.duration, outcome.last_json);
//! # Ok(()) }
//! ```
//!
//! Unix only; group membership and start times are read from Linux's `/proc`.
// The only unsafe code is the child set-up in `sandbox` (Landlock, namespaces, the PID
// namespace's init), which allows it for itself.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod activity;
mod env;
mod error;
mod group;
mod interactive;
mod json;
mod network;
mod output;
mod read_scope;
mod resolve;
mod role_file;
mod sandbox;
mod spec;
mod strays;
mod supervisor;
mod tree_watch;
mod watchdog;

pub use activity::{ActivityProbe, DEFAULT_SKIPPED_DIRS, DirActivity};
pub use env::{
    ENV_ALLOW_LIST, REMOTE_ACCESS_VARS, TOOLCHAIN_VARS, is_remote_access_var, scrubbed_env,
};
pub use error::SpawnError;
pub use group::{OrphanOutcome, ask_to_stop, end_orphan_group, process_start_ticks};
pub use interactive::{InteractiveSpec, run_interactive};
pub use json::last_json_object;
pub use network::{HostRule, MAX_FORWARDED_PORTS, NetworkAccess, PROXY_PORT, Refusal, RefusalSink};
pub use read_scope::readable_except;
pub use resolve::resolve_program;
pub use role_file::{MAX_ROLE_FILE_BYTES, RoleFileError, read_role_file};
pub use sandbox::launcher::{LAUNCHER_ARG, start_roles_through_this_binary};
pub use sandbox::{
    Confinement, DevShm, DevShmSupport, Isolation, IsolationSupport, KernelSupport,
    PRIVATE_DEV_SHM_BYTES, SandboxError, TERMINAL_DEVICES, WRITABLE_DEVICES, dev_shm_support,
    isolation_support, kernel_support, network_namespace_support,
};
pub use spec::{Ending, Outcome, ProcessSpec, stream_log_paths};
pub use strays::{MARKER_VAR, end_processes_with_env, processes_with_env};
pub use supervisor::Supervisor;
pub use tree_watch::{KnownFolders, MAX_CHANGED_PATHS, TreeChanges, TreeWatch};
