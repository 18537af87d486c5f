//! The breeze engine: the Lead of a team of AI coding agents.
//!
//! # Layout — where one task goes
//!
//! | step | module |
//! |---|---|
//! | read `breeze.toml` | [`config`] |
//! | check what a run needs before anything is created (CLIs, programs, config, plan, setup) | [`preflight`] |
//! | check the repository and plan, create the run folder | `run/prepare.rs` |
//! | plan, write groups, lanes | `breeze-plan` (called from `run/prepare.rs`) |
//! | pick the next task for a free lane (pure rules) | `run/schedule.rs`, `run/dispatcher.rs` |
//! | one task's flow: contract, lane, preflight, work, review, landing | `run/driver.rs` |
//! | worker attempts, retries, stalls | `run/work.rs` |
//! | Advisor consults (hashes, budget) | `run/consult.rs`, [`advice`] |
//! | gates, checks and reviewer rounds | `run/review.rs` |
//! | send-backs (gate failures, landing bounces) and their causes | `run/send_back.rs`, `causes.rs` |
//! | landing on main | `run/landing.rs` |
//! | where it lands (`[land] to`): local main, a remote's branch, pull requests | `run/land_target.rs`, `run/land_remote.rs`, `run/land_pr.rs`, `preflight/remote.rs` |
//! | every change of a task's phase (snapshot, journal, progress) | `run/book.rs` |
//! | role processes and backends | [`roles`] (processes via `breeze-supervise`) |
//! | each claude/codex role's own CLI home, filled before every call | [`role_home`] |
//! | what a run may spend, checked before every role call | [`budget`] |
//! | whether the reviewer and the Advisor are a second pair of eyes | [`independence`] |
//! | run files: snapshot, journal, lock | [`snapshot`], [`journal`], [`lock`], [`run_dir`] |
//! | lanes kept between runs: their records, folder times, disk use | [`lane_record`] |
//!
//! The cancel signal is injected into [`run()`] / [`resume()`], so callers (the CLI's Ctrl-C
//! handler, tests) stop a run deterministically.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod advice;
pub mod backend;
pub mod budget;
mod causes;
pub mod changelog;
pub mod clock;
pub mod config;
pub mod containment;
pub mod decision;
pub mod demo;
pub mod doctor;
pub mod error;
pub mod independence;
pub mod journal;
mod journal_endings;
mod kill_points;
pub mod landing_message;
mod landings_seen;
pub mod lane_env;
pub mod lane_record;
pub mod lock;
pub mod maintenance;
pub mod network_policy;
mod notify;
pub mod plan_extensions;
pub mod preflight;
pub mod progress;
pub mod quota;
pub mod read_policy;
pub mod role_commands;
pub mod role_home;
pub mod roles;
pub mod run;
pub mod run_dir;
mod sandbox_hint;
pub mod scaffold;
mod scratch;
pub mod snapshot;
pub mod snapshot_changes;
pub mod step_in;
pub mod target_branch;
pub mod tool_caches;
mod verify_cache;
pub mod worktree_folder;

pub use backend::BackendKind;
pub use config::{Config, OnMainFailure};
pub use error::EngineError;
pub use plan_extensions::PLAN_EXTENSIONS;
pub use progress::{EventSink, ProgressEvent, ProgressSink};
pub use run::{RunOptions, RunOutcome, load_run, resume, run};
