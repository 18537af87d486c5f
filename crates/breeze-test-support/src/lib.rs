//! Test helpers shared by breeze's crates: the `git` CLI without the machine's
//! configuration, real repositories in temporary folders, plan builders and shell roles.
//! A dev-dependency only; never published.
#![forbid(unsafe_code)]

pub mod git;
pub mod plan;
pub mod repo;
pub mod role;

pub use git::{git, git_line, git_output, hermetic, landings_since};
pub use repo::{TestRepo, read, write};
