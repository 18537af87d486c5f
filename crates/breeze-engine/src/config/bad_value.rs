//! Why breeze cannot take a value of `breeze.toml`: one [`BadValue`] per way a value is
//! refused, each saying what to write instead.

use super::settings::{FOLLOW_PLACEHOLDERS, PR_PLACEHOLDERS};
use super::units::{DurationError, SizeError};
use crate::changelog::ChangelogRefused;
use crate::landing_message::TemplateRefused;

/// A value of `breeze.toml` breeze cannot take, naming its key and what to write.
#[derive(Debug, thiserror::Error)]
pub enum BadValue {
    /// toml cannot read the tables into breeze's settings: a wrong type, a key missing
    /// from the defaults, an unknown variant (its message shows the line in the file).
    #[error("{0}")]
    Toml(Box<toml::de::Error>),
    /// `sandbox.network` neither `"open"` nor a list of hosts that read.
    #[error("`sandbox.network`: {0}")]
    Network(String),
    /// A number outside its range.
    #[error("`{key}` is {value}; it must be between {min} and {max}")]
    OutOfRange {
        /// The dotted key.
        key: String,
        /// As written.
        value: i64,
        /// The least it may be.
        min: i64,
        /// The most it may be.
        max: i64,
    },
    /// `run.port_base` leaves no room for every range above it.
    #[error(
        "`run.port_base` is {base}; it must be between 1024 and {max}, so that its {ports} ports (integration, lanes 1 to 3 and the further integration checkouts of `land.queue_depth`) fit below 65536"
    )]
    PortsDoNotFit {
        /// As written.
        base: i64,
        /// The highest base that fits.
        max: i64,
        /// Ports of the integration checkout and every lane.
        ports: i64,
    },
    /// A duration that does not read.
    #[error("`{key}`: {error}")]
    Duration {
        /// The dotted key.
        key: String,
        /// Why.
        error: DurationError,
    },
    /// A size that does not read.
    #[error("`{key}`: {error}")]
    Size {
        /// The dotted key.
        key: String,
        /// Why.
        error: SizeError,
    },
    /// A role whose backend runs the program of its `command` has none.
    #[error(
        "`roles.{role}.command` is empty but `roles.{role}.backend` is {backend:?}; write the argv to run, e.g. command = [\"bash\", \"scripts/{role}.sh\"]"
    )]
    NoCommand {
        /// The role's name.
        role: String,
        /// Its backend's name.
        backend: &'static str,
    },
    /// A role's fallback backend that cannot take its calls.
    #[error(
        "`roles.{role}.fallback.backend` is {backend:?}; write another agent CLI than the role's own ({own}), e.g. fallback = {{ backend = \"codex\", model = \"gpt-5\" }}, or leave it out"
    )]
    Fallback {
        /// The role's name.
        role: String,
        /// As written.
        backend: String,
        /// The role's own backend.
        own: &'static str,
    },
    /// `quota.pause_at` is not a share of a window.
    #[error(
        "`quota.pause_at` is {share}; write a share of a window above 0 and at most 1, e.g. 0.9"
    )]
    PauseAt {
        /// As written.
        share: f64,
    },
    /// A review check without a program.
    #[error(
        "`review.checks[{index}]` is empty; write the command as an argv, e.g. [\"cargo\", \"test\"]"
    )]
    EmptyCheck {
        /// Which check, from 0.
        index: usize,
    },
    /// A pattern naming files outside the repository.
    #[error(
        "`{key}`: `{pattern}` points outside the repository; name ignored files inside it, relative to its root (e.g. \".env\", \"config/*.local\")"
    )]
    OutsideRepository {
        /// The dotted key.
        key: String,
        /// As written.
        pattern: String,
    },
    /// `worktree.root` under `~` without a `HOME`.
    #[error(
        "`worktree.root` is {text:?}, but HOME is not set to expand `~`; name an absolute folder"
    )]
    WorktreeRootWithoutHome {
        /// As written.
        text: String,
    },
    /// A relative `worktree.root`.
    #[error(
        "`worktree.root` is {text:?}: name an absolute folder outside the checkout (or one under `~/`), e.g. \"~/breeze-worktrees\"; a relative one is refused"
    )]
    WorktreeRootRelative {
        /// As written.
        text: String,
    },
    /// Landings go to a remote `land.remote` does not name.
    #[error(
        "`land.remote` is {remote:?}; name the remote work lands on, e.g. \"origin\" (`git remote -v` lists them)"
    )]
    NoRemote {
        /// As written.
        remote: String,
    },
    /// A pull-request branch that is the same for every task.
    #[error(
        "`land.pr_branch` is {branch:?}; it must contain {{task}} so that each task gets a branch of its own, e.g. \"breeze/{{task}}\""
    )]
    PrBranchWithoutTask {
        /// As written.
        branch: String,
    },
    /// Pull requests without the command that opens one.
    #[error(
        "`land.pr_command` is empty but `land.to` is \"pull-request\"; write the argv that opens a pull request, e.g. [\"gh\", \"pr\", \"create\", \"--base\", \"{{target}}\", \"--head\", \"{{branch}}\", \"--title\", \"{{title}}\", \"--body-file\", \"{{body_file}}\"]"
    )]
    NoPrCommand,
    /// `land.pr_command` names a placeholder breeze does not fill in.
    #[error(
        "`land.pr_command` uses {placeholder}, which breeze does not fill in; the placeholders are {}",
        PR_PLACEHOLDERS.join(", ")
    )]
    UnknownPlaceholder {
        /// As written.
        placeholder: String,
    },
    /// A command following pull requests names a placeholder breeze does not fill in.
    #[error(
        "`land.{key}` uses {placeholder}, which breeze does not fill in; the placeholders are {}",
        FOLLOW_PLACEHOLDERS.join(", ")
    )]
    UnknownFollowPlaceholder {
        /// The key (`pr_checks_command`).
        key: &'static str,
        /// As written.
        placeholder: String,
    },
    /// Stacking without pull requests.
    #[error(
        "`land.stack` is true but `land.to` is {to:?}; stacking puts a task's pull request on its dependency's, so it needs `to = \"pull-request\"`"
    )]
    StackWithoutPullRequests {
        /// `land.to`.
        to: &'static str,
    },
    /// Batches of landings that go to a remote.
    #[error(
        "`land.batch` is {batch} but `land.to` is {to:?}; batches move the local main in one compare-and-swap, so they need `to = \"local\"` (a remote's own merge queue batches pull requests)"
    )]
    BatchToRemote {
        /// As written.
        batch: i64,
        /// `land.to`.
        to: &'static str,
    },
    /// A role handed what reaches the remotes work lands on.
    #[error(
        "`roles.{role}.{key}` names {var}, which gives access to your remotes; with `land.to = \"{to}\"` breeze pushes with your git setup itself and never hands it to a role: remove {var} from the list"
    )]
    RemoteAccessForRole {
        /// The role's name.
        role: &'static str,
        /// `env`, or its fallback's `fallback.env`.
        key: &'static str,
        /// The variable.
        var: String,
        /// `land.to`.
        to: &'static str,
    },
    /// A dollar cap below zero, or no number.
    #[error(
        "`budget.{key}` is {usd}; write a dollar amount above zero, or 0 (or nothing) for no cap"
    )]
    DollarCap {
        /// `run_usd` or `task_usd`.
        key: &'static str,
        /// As written.
        usd: f64,
    },
    /// A token cap below zero.
    #[error(
        "`budget.run_tokens` is {tokens}; write a token count above zero, or 0 (or nothing) for no cap"
    )]
    TokenCap {
        /// As written.
        tokens: i64,
    },
    /// A price below zero, or no number.
    #[error(
        "`budget.prices.\"{model}\".{field}` is {value}; write US dollars per million tokens (0 or more)"
    )]
    Price {
        /// The model.
        model: String,
        /// `input`, `cached_input` or `output`.
        field: &'static str,
        /// As written.
        value: f64,
    },
    /// `land.changelog` names no file breeze may write.
    #[error(transparent)]
    Changelog(#[from] ChangelogRefused),
    /// `land.message` cannot be a landing's subject.
    #[error(transparent)]
    Message(#[from] TemplateRefused),
}
