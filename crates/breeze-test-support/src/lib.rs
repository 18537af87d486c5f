//! Test helpers shared by breeze's crates: the `git` CLI without the machine's
//! configuration, real repositories in temporary folders, plan builders, shell roles,
//! processes (alive, bytes read, checkouts held by a filter), and the replay of a
//! repository's history as a breeze run (the project's benchmark).
//! A dev-dependency only; never published.
#![forbid(unsafe_code)]

pub mod git;
pub mod lanes;
pub mod plan;
pub mod process;
pub mod remote;
pub mod replay;
pub mod repo;
pub mod role;

pub use git::{git, git_line, git_output, hermetic, landings_since};
pub use lanes::{lane, worktree_folder};
pub use repo::{TestRepo, read, write};
