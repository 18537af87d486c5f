//! `breeze-event.v1`: one line of a run's append-only journal (`events.jsonl`).
//!
//! The journal is the source of truth for `breeze resume`: what breeze created
//! (worktrees, branches), which role processes it started, and what landed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::advisor::Decision;
use crate::cause::Cause;
use crate::forge::{PrChecks, PrFollowUp, PrReview};
use crate::outcome::{
    AttemptOutcome, CommandEnding, FoundBy, PersonOutcome, ProcessEnding, ScopeAnswer,
    VerifyOutcome,
};
use crate::review::Verdict;
use crate::status::{RunState, RunWait, TaskState, Usage, UsageWindow};
use crate::version::BreezeEventV1;

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreezeEvent {
    /// Always `breeze-event.v1`.
    pub schema_version: BreezeEventV1,
    /// 1-based sequence number within the run.
    pub seq: u64,
    /// RFC 3339 UTC time with milliseconds (`2026-11-30T12:00:00.123Z`).
    pub at: String,
    /// What happened.
    pub event: EventKind,
}

/// Which role a process plays.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Implements a task in its worktree.
    Worker,
    /// Answers worker questions; never writes.
    Advisor,
    /// Judges a finished task; never writes.
    Reviewer,
    /// Sets a project up (optional).
    Scaffolder,
}

impl Role {
    /// Wire spelling (`BREEZE_ROLE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Advisor => "advisor",
            Self::Reviewer => "reviewer",
            Self::Scaffolder => "scaffolder",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The events of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began (or resumed).
    RunStarted {
        /// Plan file.
        plan: String,
        /// Lanes.
        workers: u32,
        /// Main tip when the run started.
        main_tip: String,
        /// Whether this is `breeze resume`.
        #[serde(default)]
        resumed: bool,
    },
    /// breeze created a worktree and branch; only these are ever removed by breeze.
    WorktreeCreated {
        /// Task id (or lane name for lane worktrees).
        task: String,
        /// Absolute worktree path.
        path: String,
        /// Branch checked out there.
        branch: String,
        /// Base commit.
        base: String,
    },
    /// breeze removed a worktree it had created.
    WorktreeRemoved {
        /// Absolute worktree path.
        path: String,
        /// Branch deleted with it, if any.
        branch: Option<String>,
    },
    /// A role process started; its group is ended by `breeze resume` if the engine died.
    ProcessStarted {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Process id (= process group id).
        pid: u32,
        /// Start time from `/proc/<pid>/stat`, to guard against pid reuse.
        #[serde(default)]
        start_ticks: Option<u64>,
        /// Log file of the attempt.
        log: String,
    },
    /// After a worker's attempt was committed, breeze removed what the attempt wrote in its
    /// lane that git ignores (never a task's change, never reviewed): hidden instructions or
    /// settings for the tools that run after it, files its checks would read. Build outputs
    /// the lane already had stay.
    IgnoredWritesRemoved {
        /// Task id.
        task: String,
        /// Repository-relative paths removed (a folder stands for what was in it).
        paths: Vec<String>,
    },
    /// A role process ended.
    ProcessEnded {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Process id.
        pid: u32,
        /// Exit code, if it exited.
        exit_code: Option<i32>,
        /// How it ended: `exited`, `signaled`, `timeout`, `stalled`, `cancelled`.
        outcome: ProcessEnding,
        /// Cost and tokens reported by the backend.
        #[serde(default)]
        usage: Usage,
    },
    /// What one role call cost, as breeze counted it against the budget: the backend's
    /// report, priced with `[budget.prices]` where it has tokens only; journaled for every
    /// call that reached its backend, the simulator's included.
    Spent {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// Cost and tokens of the call (`unpriced_calls` 1 when its cost is unknown).
        usage: Usage,
    },
    /// A role's backend failed rather than the task (rate limit, passing API error, no
    /// login); the call is tried again after `wait_ms` (not an attempt).
    BackendTrouble {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// `rate-limited`, `transient` or `auth`.
        trouble: String,
        /// The backend's words (bounded).
        message: String,
        /// How long breeze waits before calling again, in milliseconds.
        wait_ms: u64,
    },
    /// One of the project's own commands (`worktree.setup`, `land.verify`) started.
    CommandStarted {
        /// Task id.
        task: String,
        /// The config key of the command, e.g. `land.verify`.
        purpose: String,
        /// Process id (= process group id).
        pid: u32,
        /// Start time from `/proc/<pid>/stat`, to guard against pid reuse.
        #[serde(default)]
        start_ticks: Option<u64>,
    },
    /// A project command ended.
    CommandEnded {
        /// Process id.
        pid: u32,
        /// How it ended, as the supervisor says it: `exited with code 1`, `killed by
        /// signal 9 (SIGKILL)`, `timed out`, `stalled (no output and no file changes)`,
        /// `cancelled` (any other text is kept as written).
        #[schemars(with = "String")]
        outcome: CommandEnding,
    },
    /// A role or one of the project's commands asked to reach a host that is not on the
    /// run's network allow-list (`sandbox.network`), and was refused.
    NetworkRefused {
        /// Task id.
        task: String,
        /// Who asked: the role (`worker`, `reviewer`…) or the command's config key
        /// (`review.checks`, `land.verify`…).
        by: String,
        /// The host it named.
        host: String,
        /// The port.
        port: u16,
        /// `CONNECT` or the HTTP method.
        method: String,
    },
    /// A task changed state.
    TaskState {
        /// Task id.
        task: String,
        /// New state.
        state: TaskState,
        /// Why, for escalated/blocked/failed/deferred/awaiting-approval, and for a task
        /// back at work after a send-back: the cause as one line.
        #[serde(default)]
        reason: Option<String>,
        /// The same cause, structured (absent in journals of older breeze versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<Cause>,
    },
    /// The task went back to its worker without a review round being counted: a gate or a
    /// check failed, the landing conflicted, `land.verify` or a hook failed, or a person
    /// rejected it.
    SentBack {
        /// Task id.
        task: String,
        /// The cause as one line.
        reason: String,
        /// The cause.
        cause: Cause,
    },
    /// A worker attempt finished.
    Attempt {
        /// Task id.
        task: String,
        /// 1-based attempt.
        attempt: u32,
        /// 1-based round.
        round: u32,
        /// How the attempt ended.
        outcome: AttemptOutcome,
        /// Commit after the attempt.
        #[serde(default)]
        head: Option<String>,
        /// Failure text, if any.
        #[serde(default)]
        error: Option<String>,
    },
    /// The Advisor answered.
    AdvisorConsulted {
        /// Task id.
        task: String,
        /// `<task>:<reason>:<signature>`.
        trigger_hash: String,
        /// The decision.
        decision: Decision,
        /// Saved response file.
        response_path: String,
    },
    /// A reviewer round ended (gate and check failures are `sent_back`, not rounds).
    Reviewed {
        /// Task id.
        task: String,
        /// 1-based round.
        round: u32,
        /// Normalized verdict.
        verdict: Verdict,
        /// Reviewed commit.
        head: String,
        /// Saved review file.
        result_path: String,
    },
    /// A task got a lane (started, or started again after a stop or a deferral).
    TaskStarted {
        /// Task id.
        task: String,
        /// Its title (first line).
        title: String,
        /// The lane, from 1.
        lane: u32,
    },
    /// The Lead answered a worker's scope request.
    ScopeDecided {
        /// Task id.
        task: String,
        /// The paths asked for.
        paths: Vec<String>,
        /// `granted`, `waiting` (other tasks may write them; granted once they are done) or
        /// `denied`.
        decision: ScopeAnswer,
        /// Why (denied), or which tasks it waits for.
        #[serde(default)]
        reason: Option<String>,
    },
    /// breeze is about to update a checkout of main (the user's, usually) for a landing;
    /// journaled before the first file is written. Each path is replaced atomically; an
    /// update that a kill cut short (no `landed` event with its `to` commit follows) is
    /// finished or undone by `breeze resume`.
    CheckoutUpdate {
        /// Task id.
        task: String,
        /// Absolute path of the checkout.
        checkout: String,
        /// Its HEAD's commit before the update: main's tip the landing builds on.
        from: String,
        /// The landing commit.
        to: String,
        /// How many paths change.
        paths: u64,
    },
    /// A person stepped into a task's lane (`breeze attach`): the task waits there, at a
    /// safe point, until they leave.
    Attached {
        /// Task id.
        task: String,
        /// The lane, from 1 (between runs: the one the task last had, whose ports the
        /// person's session got); none when the task never had one.
        #[serde(default)]
        lane: Option<u32>,
        /// The worktree they work in.
        worktree: String,
    },
    /// The person left the task's lane: their attempt. What they changed goes to review
    /// like a worker's change; it is not a worker attempt (no failure counts against the
    /// task).
    PersonAttempt {
        /// Task id.
        task: String,
        /// `changed` (to review next), `unchanged` (the task goes on where it paused) or
        /// `not-committed` (what they left cannot be committed: `error` says why).
        outcome: PersonOutcome,
        /// The commit of their change.
        #[serde(default)]
        head: Option<String>,
        /// Why their change could not be taken.
        #[serde(default)]
        error: Option<String>,
    },
    /// A task landed on main (or on the remote branch `target`).
    Landed {
        /// Task id.
        task: String,
        /// The landing commit.
        commit: String,
        /// Main (the target branch) before the landing.
        previous_main: String,
        /// The remote branch it landed on (`origin/main`); absent for the local main.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// A landing's push was refused by the remote: its branch was not where breeze
    /// fetched it (someone else pushed), or a hook or protection rule declined. breeze
    /// fetches, builds the landing again on the new tip, verifies it and pushes again, a
    /// bounded number of times.
    PushRejected {
        /// Task id.
        task: String,
        /// The remote branch (`origin/main`).
        target: String,
        /// The commit breeze pushed.
        commit: String,
        /// Where breeze expected the branch (its lease); empty when it expected none.
        expected: String,
        /// Where the branch is now (fetched after the refusal); empty when it is gone.
        actual: String,
        /// git's reason (`stale info`, `fetch first`, `pre-receive hook declined`).
        reason: String,
        /// 1-based push attempt.
        attempt: u32,
    },
    /// A task's branch was pushed and its pull request opened by `land.pr_command`.
    PullRequestOpened {
        /// Task id.
        task: String,
        /// The pushed branch (`breeze/3`).
        branch: String,
        /// What it merges into (`origin/main`).
        target: String,
        /// The pushed commit.
        commit: String,
        /// The first URL the command printed.
        #[serde(default)]
        url: Option<String>,
    },
    /// breeze pushed a rebuilt commit to an open pull request's branch (its old commit no
    /// longer merged cleanly onto the target branch), with a lease on its own last push.
    PullRequestUpdated {
        /// Task id.
        task: String,
        /// The branch.
        branch: String,
        /// The new commit.
        commit: String,
        /// The commit it replaced.
        previous: String,
    },
    /// A task's change reached the target branch through its pull request.
    PullRequestMerged {
        /// Task id.
        task: String,
        /// The commit on the target branch that brought it.
        commit: String,
        /// How it was recognized: `commit`, `trailers` or `patch-id`.
        found_by: FoundBy,
    },
    /// breeze looked at an open pull request's checks and reviews on the forge
    /// (`land.pr_checks_command`, `land.pr_reviews_command`) and what it saw changed since
    /// the last time it said: what they say, and what breeze does about it.
    PullRequestFollowed {
        /// Task id.
        task: String,
        /// The pull request's commit (the one breeze pushed last).
        commit: String,
        /// Its checks.
        checks: PrChecks,
        /// Its reviews.
        review: PrReview,
        /// The names of the checks that failed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<String>,
        /// What breeze does.
        action: PrFollowUp,
        /// Why the checks or reviews are `unknown` (the command's failure), or main's
        /// failing checks, in one line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The local main followed the remote branch landings go to: fast-forwarded (the
    /// user's checkout with it, when clean) from `previous_main` to `commit`.
    MainFollowed {
        /// Main's new tip.
        commit: String,
        /// Main before.
        previous_main: String,
    },
    /// Approved tasks merged onto main's tip one after another, to be verified together
    /// (`land.batch`); `verified` events follow, then a `landed` event for each task that
    /// landed. A batch a kill cut short is landed again on resume: tasks already on main are
    /// recognized by their trailers.
    LandingBatch {
        /// The tasks, in the order their landing commits are chained.
        tasks: Vec<String>,
        /// Main's tip the batch is built on.
        onto: String,
    },
    /// `land.verify`'s verdict on a commit: a landing (one task's, or a batch's first
    /// tasks') or main's own tip (asked when the first landing on it fails).
    Verified {
        /// The tasks whose landing commits the verified commit puts on main, oldest first;
        /// empty when main's own tip was verified.
        tasks: Vec<String>,
        /// The verified commit.
        commit: String,
        /// Its tree: what the verdict is remembered by.
        tree: String,
        /// `passed`, `failed`, `fails-like-main` (it fails exactly the way main itself
        /// does, and `land.on_main_failure = "land"`), or `flaky` (it failed once and passed
        /// when run again on the same tree).
        outcome: VerifyOutcome,
        /// Whether the verdict was known and nothing ran: the tree passed before (in any
        /// run), or failed before in this engine session.
        #[serde(default)]
        known: bool,
    },
    /// Nothing the run can do itself is left and it waits (`breeze run --wait`) for a
    /// person or a forge: recorded when it starts waiting on something new (a reason, or a
    /// task joining one), not at each look. It waits until they decide; a task that leaves
    /// its wait (approved, merged) is no longer waited for.
    RunWaiting {
        /// Everything it waits for now.
        waits: Vec<RunWait>,
    },
    /// A role call reported where its backend's usage windows stand, and they moved.
    UsageWindows {
        /// The backend (`claude`, `codex`).
        backend: String,
        /// Every window it reported.
        windows: Vec<UsageWindow>,
    },
    /// A role call waits before it starts: its backend reported a window used beyond
    /// `[quota] pause_at` (or spent), and no fallback can take the call. Calls under way
    /// finish; none is an attempt. It starts at the window's reset.
    QuotaPaused {
        /// Task id (`plan` for the scaffolder).
        task: String,
        /// Role.
        role: Role,
        /// The paused backend.
        backend: String,
        /// The window beyond its share.
        window: String,
        /// The share of it used, 0.0 to 1.0.
        used: f64,
        /// When the call starts (the window's reset, unix seconds).
        until: u64,
    },
    /// A role call ran on the role's fallback backend (`[roles.<role>] fallback`) because
    /// its own backend was paused for a usage window.
    FellBack {
        /// Task id.
        task: String,
        /// Role.
        role: Role,
        /// The role's own backend, paused.
        from: String,
        /// The fallback's backend, which took the call.
        to: String,
    },
    /// The run ended (or stopped resumably).
    RunFinished {
        /// Final state.
        state: RunState,
    },
}
