//! Role calls: what a role is asked and answers ([`RoleCall`], [`RoleReply`]), how one
//! call runs whatever its backend (`runner.rs`: scratch folder, environment, confinement,
//! the checks after it), the budget around it (`metered.rs`), and the ways a role runs —
//! a process following the protocol (`command.rs`), an agent CLI (`agent.rs`), the
//! simulator (`scripted.rs`) — behind one `Backend` trait (`invocation.rs`). What each backend
//! *is* (its login, spend, independence, home) is `crate::backend`'s.

pub mod backoff;
pub mod definition;
pub mod prompt;
pub mod scripted;

mod agent;
#[cfg(test)]
mod backends_doc;
mod call;
mod command;
mod invocation;
mod lane_watches;
mod metered;
mod runner;

pub use call::{RoleCall, RoleEnding, RoleOutcome, RoleReply, Session};
pub(crate) use lane_watches::{LaneWatches, workdir_changes};
pub(crate) use runner::{RoleRunner, RoleRunnerParts};
