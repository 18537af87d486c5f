//! Progress notifications for whoever drives a run (the CLI prints them as lines).

use std::sync::Arc;

use breeze_protocol::{Cause, Decision, PrChecks, PrFollowUp, PrReview, TaskState, Verdict};

/// Something worth telling the user while a run goes on.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgressEvent {
    /// The run began.
    RunStarted {
        /// Run id.
        run_id: String,
        /// Lanes.
        workers: u32,
        /// Tasks to run.
        tasks: usize,
        /// Write groups.
        groups: usize,
        /// Whether this is a resume.
        resumed: bool,
        /// The branch the run lands on.
        lands_on: String,
    },
    /// How role processes are confined in this run (printed at run start).
    Containment {
        /// The kernel confines roles.
        enforced: bool,
        /// One line: the mechanism and what workers may write.
        summary: String,
    },
    /// Who judges and advises the worker's work, and whether that is a second pair of eyes
    /// (`[review] independent`; printed at run start, one per pairing).
    Pairing {
        /// `worker claude (sonnet) → reviewer codex (gpt-5): independent (another backend)`,
        /// with what to change when it is not.
        line: String,
        /// Whether the pairing is independent (or exempt).
        independent: bool,
    },
    /// The run's budget: its caps and what is spent (printed at run start when it has one).
    Budget {
        /// `budget: run_usd = 5.00 ($1.20 spent) · task_usd = 2.00 per task`.
        summary: String,
    },
    /// Something breeze would have cleaned up at the end of the run was kept because it
    /// holds work: a task branch that moved on after landing, a lane with uncommitted
    /// changes.
    Kept {
        /// What: `branch task/1`, `lane /home/u/.local/share/breeze/worktrees/app-0123456789/lane-2`.
        what: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Something the user should know about this run (an untracked plan, tasks already on
    /// main).
    Notice {
        /// One sentence, with what to do.
        message: String,
    },
    /// Nothing the run can do itself is left: it waits for a person or a forge
    /// (`breeze run --wait`), said when it starts waiting on something new.
    RunWaiting {
        /// Everything it waits for now.
        waits: Vec<breeze_protocol::RunWait>,
    },
    /// A task got a lane.
    TaskStarted {
        /// Task id.
        id: String,
        /// Title.
        title: String,
        /// Lane number.
        lane: u32,
    },
    /// A worker attempt ended without a usable result.
    AttemptFailed {
        /// Task id.
        id: String,
        /// Attempt number.
        attempt: u32,
        /// Why.
        reason: String,
    },
    /// The Advisor answered.
    Advised {
        /// Task id.
        id: String,
        /// Decision.
        decision: Decision,
        /// Summary.
        summary: String,
    },
    /// A reviewer round ended.
    Reviewed {
        /// Task id.
        id: String,
        /// Round.
        round: u32,
        /// Verdict.
        verdict: Verdict,
        /// Blocking gaps.
        blocking_gaps: usize,
    },
    /// The task went back to its worker without a review round: a gate or check failed,
    /// the landing conflicted or failed its verify or hooks, or a person rejected it.
    SentBack {
        /// Task id.
        id: String,
        /// Why.
        cause: Cause,
    },
    /// The Lead answered a worker's request to write outside its write set.
    Scope {
        /// Task id.
        id: String,
        /// The paths asked for.
        paths: Vec<String>,
        /// Granted now; otherwise `reason` says why not (or what it waits for).
        granted: bool,
        /// Why it was denied, or what it waits for.
        reason: Option<String>,
    },
    /// Reviewed work waits for a person's approval before it lands.
    AwaitingApproval {
        /// Task id.
        id: String,
        /// Where its diff is, and what to run.
        reason: String,
    },
    /// Approved work was pushed as a pull request; it lands when the team merges it.
    PullRequestOpen {
        /// Task id.
        id: String,
        /// Its address (or branch) and what it merges into.
        reason: String,
    },
    /// What an open pull request's checks and reviews say changed, and what breeze does.
    PullRequestFollowed {
        /// Task id.
        id: String,
        /// Its checks.
        checks: PrChecks,
        /// Its reviews.
        review: PrReview,
        /// The checks that failed.
        failed: Vec<String>,
        /// What breeze does.
        action: PrFollowUp,
        /// Why something is unknown, main's failure, or what goes back.
        detail: Option<String>,
    },
    /// A landing waits for the user's checkout or for the remote.
    Deferred {
        /// Task id.
        id: String,
        /// Why.
        reason: String,
    },
    /// A task finished for this run.
    TaskFinished {
        /// Task id.
        id: String,
        /// Final state.
        state: TaskState,
        /// Landing commit.
        commit: Option<String>,
        /// Why, when not landed: the cause as one line.
        reason: Option<String>,
    },
}

/// Receives progress events; must not block.
pub type ProgressSink = Arc<dyn Fn(&ProgressEvent) + Send + Sync>;

/// Receives every journal line (`breeze-event.v1`) once it is on disk, in order; must not
/// block (it runs on the thread that writes the run's files). `breeze run --json` prints
/// them; the live view draws from them.
pub type EventSink = Arc<dyn Fn(&breeze_protocol::BreezeEvent) + Send + Sync>;

/// A sink that drops everything.
pub fn silent() -> ProgressSink {
    Arc::new(|_| {})
}
