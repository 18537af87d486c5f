//! Landing: where an approved task's change goes and how it gets there, behind one
//! interface ([`LandMode`], `mode.rs`) that each landing mode implements in a file of its
//! own — `local.rs` (the default), `remote.rs`, `pull_request.rs`, `batch.rs` — chosen
//! once when the run starts ([`choose`]).
//!
//! What every mode shares: the landing commit of a candidate (`candidate.rs`), the verdict
//! of `land.verify` on a chain of landings (`verify.rs`), moving the local main
//! (`main_moves.rs`), the remote branch (`target.rs`), landings in the journal
//! (`journal.rs`) and the values handed back (`outcome.rs`). Every approved task leaves
//! its lane for the dispatcher's landing queue (`queue.rs`); the local and remote modes
//! land what waits there as speculative trains verified side by side (`train.rs`).
//!
//! A new landing mode is a file here implementing [`LandMode`], a variant of
//! `config::LandTo`, and its line in [`choose`].

mod batch;
mod candidate;
mod forge;
mod forge_command;
mod journal;
mod local;
mod main_moves;
mod mode;
mod outcome;
mod pr_body;
mod pr_follow;
mod pull_request;
mod queue;
mod remote;
mod target;
mod train;
mod verify;

use std::sync::Arc;

pub(crate) use journal::{journal_found_landing, read_journal};
pub(crate) use mode::LandMode;
pub(crate) use outcome::{Landing, Settled};
pub(crate) use queue::{BatchEnd, LandingQueue};
pub(crate) use verify::{failure_of, short};

use crate::config::{Config, LandTo};

/// The landing mode `[land]` asks for.
pub(crate) fn choose(config: &Config) -> Arc<dyn LandMode> {
    match config.land.to {
        LandTo::Local if config.land_batch > 1 => {
            Arc::new(batch::Batched { size: config.land_batch as usize })
        }
        LandTo::Local => Arc::new(local::Local),
        LandTo::Remote => Arc::new(remote::Remote),
        LandTo::PullRequest => Arc::new(pull_request::PullRequest { poll: config.land.pr_poll }),
    }
}
