//! Claude Code and Codex CLI adapters for breeze's `claude` and `codex` backends.
//!
//! [`run_agent`] runs one role (worker, advisor, reviewer, scaffolder) through an agent CLI
//! under [`breeze_supervise::Supervisor`] — its own process group, timeouts, stall
//! detection, bounded output — and reads the CLI's JSON stream line by line as it arrives:
//!
//! - **claude**: `claude -p --output-format stream-json --verbose` ([`claude_args`]);
//!   `session_id` from the first line that has one, the final `result` (checking
//!   `is_error` as well as `subtype`), `total_cost_usd` and `usage`; advisor and reviewer
//!   run in `plan` permission mode with a `--json-schema`-forced answer; a fix round
//!   resumes the worker's session with `--resume`.
//! - **codex**: `codex exec --json` ([`codex_args`]); `thread.started` id for `codex exec
//!   resume`, `turn.completed` usage, `turn.failed` / `error`, `--output-schema` and a
//!   read-only sandbox for advisor and reviewer, `workspace-write` for writers.
//!
//! Both: the prompt goes to stdin, never argv; rate limits and exhausted quotas are
//! classified apart from task failures ([`AgentFailure`]); a worker's file writes are
//! checked against its write set as they appear in the stream; credentials pass only when
//! the config says so ([`agent_env`]). The parsers ([`ClaudeStream`], [`CodexStream`]) are
//! pure and keep only ids, the answer, sums and bounded notes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), breeze_agents::AgentError> {
//! use breeze_agents::*;
//! use breeze_protocol::Role;
//! use tokio_util::sync::CancellationToken;
//!
//! let mut call = AgentCall::new(AgentKind::Claude, Role::Reviewer,
//!     "/repo/.harness-worktrees/task-1", "Review this change ...",
//!     "/repo/.breeze/runs/r1/logs/1-reviewer-1");
//! call.env = breeze_supervise::scrubbed_env(std::env::vars(), &[], &[]);
//! call.output_schema = Some(serde_json::json!({"type": "object"}));
//! let result = run_agent(&breeze_supervise::Supervisor::new(), call,
//!                        CancellationToken::new(), |_pid, _ticks| {}).await?;
//! match (&result.answer, &result.failure) {
//!     (Some(answer), None) => println!("verdict: {}", answer["verdict"]),
//!     (_, Some(failure)) if failure.is_limit() => println!("park: {failure}"),
//!     _ => println!("failed: {}", result.diagnostics),
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod call;
mod classify;
mod claude;
mod codex;
mod parsed;
mod run;
mod strict;
mod windows;
mod write_check;

pub use args::{
    CLAUDE_HEADLESS_DENIED, CLAUDE_WRITE_TOOLS, claude_args, claude_json_schema, codex_args,
    codex_schema_path, command_line, usd_argument,
};
pub use call::{AgentCall, AgentFailure, AgentKind, AgentResult, StatePaths, WriteSetCheck};
pub use claude::ClaudeStream;
pub use codex::CodexStream;
pub use parsed::Parsed;
pub use run::{AGENT_MAX_LINE_BYTES, AgentError, agent_env, run_agent};
pub use strict::{codex_strict_schema, without_optional_nulls};
