//! The breeze engine: the Lead of a team of AI coding agents.
//!
//! # Layout — where one task goes
//!
//! | step | module |
//! |---|---|
//! | read `breeze.toml` | [`config`] |
//! | plan, write groups, lanes | `breeze-plan` (called from [`run`]) |
//! | pick the next task for a free lane | `run::dispatcher` |
//! | contract, worktree, preflight consult | `run::task` |
//! | worker attempts, retries, stalls | `run::work` |
//! | Advisor consults (hashes, budget) | `run::consult`, [`advice`] |
//! | gates and reviewer rounds | `run::review` |
//! | landing on main | `run::landing` |
//! | role processes and backends | [`roles`] (processes via `breeze-supervise`) |
//! | run files: snapshot, journal, lock | [`snapshot`], [`journal`], [`lock`], [`run_dir`] |
//!
//! The cancel signal is injected into [`run::run`] / [`run::resume`], so callers (the
//! CLI's Ctrl-C handler, tests) stop a run deterministically.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod advice;
pub mod clock;
pub mod config;
pub mod containment;
pub mod demo;
pub mod doctor;
pub mod error;
pub mod journal;
pub mod lock;
pub mod maintenance;
pub mod progress;
pub mod roles;
pub mod run;
pub mod run_dir;
pub mod snapshot;

pub use config::{BackendKind, Config};
pub use error::EngineError;
pub use progress::{ProgressEvent, ProgressSink};
pub use run::{RunOptions, RunOutcome, load_run, resume, run};
