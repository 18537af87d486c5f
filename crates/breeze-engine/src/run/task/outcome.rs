//! The values a task's steps hand back to its driver — how the task leaves its lane, what
//! one pass decided, how the work phase, a review, a consult and a safe point ended — in a
//! file of their own: the driver and the steps both use them, and the driver imports no
//! step.

use breeze_protocol::{AdvisorResponse, Cause, Gap, GateResult, ReasonCode, Verdict};

use crate::snapshot::ObjectId;

/// How a task left its lane.
#[derive(Debug)]
pub(crate) enum TaskExit {
    /// On main.
    Landed { commit: ObjectId },
    /// Gave up, and why.
    Escalated(Cause),
    /// Approved, but landing waits for the user's checkout.
    Deferred(Cause),
    /// Approved by the reviewer; landing waits for a person (why, and what to run).
    AwaitingApproval(Cause),
    /// Published where the target takes it in later (a pull request): the run follows it
    /// until it lands.
    Published(Cause),
    /// Approved: waits in the landing queue, holding no lane; the dispatcher lands it.
    QueuedToLand,
    /// The run is shutting down; resume continues from the record.
    Interrupted,
}

/// What one pass of work and review decided.
pub(crate) enum Step {
    /// The task leaves its lane.
    Exit(TaskExit),
    /// Approved: landing is next.
    Approved,
    /// Changes requested: another pass.
    Again,
}

/// How the work phase ended.
pub(crate) enum Work {
    /// A worker completed; `head` is the committed result.
    Completed { head: ObjectId },
    /// The task cannot go on, and why.
    Escalated(Cause),
    /// The run is shutting down.
    Interrupted,
}

/// The `cycles.jsonl` summary of a person's attempt.
pub(crate) const PERSON_SUMMARY: &str = "changes by a person (breeze attach)";

/// What the gates, the checks and the reviewer made of a finished attempt.
pub(crate) enum Judged {
    /// A gate or a check failed: back to the worker, not a round.
    GatesFailed(GateFailure),
    /// The reviewer's round.
    Reviewed(Round),
}

/// The normalized outcome of one reviewer round.
pub(crate) struct Round {
    pub verdict: Verdict,
    /// The critical and major gaps.
    pub blocking: Vec<Gap>,
    /// What the reviewer itself said, when breeze normalized it to `verdict`.
    pub reviewer_said: Option<Verdict>,
}

/// What asking the Advisor gave.
#[derive(Debug, Clone)]
pub(crate) enum Consult {
    /// A valid answer (new, or saved earlier in this run for the same trigger).
    Advice(AdvisorResponse),
    /// No answer: disabled, budget used up, or the Advisor failed (recorded).
    Unavailable(String),
}

/// Why the engine asks.
pub(crate) struct Question {
    pub reason: ReasonCode,
    /// Text whose normalized form completes the trigger hash.
    pub signature: String,
    pub question: String,
    pub last_error: String,
    pub attempt: u32,
}

/// What happened at a safe point.
pub(crate) enum SafePoint {
    /// Nobody asked: the task goes on.
    Passed,
    /// A person was in the lane and changed nothing that can be taken: the task goes on
    /// where it paused.
    Unchanged,
    /// A person's change, committed: it is reviewed next.
    Changed { head: ObjectId },
    /// The run stopped while the task waited.
    Interrupted,
}

/// Gate (and check) failures in a row before the task escalates (DESIGN.md §4, step 4).
pub(crate) const MAX_GATE_FAILURES_IN_ROW: u32 = 3;

/// Gates or checks that failed: the cause, and the findings the worker gets.
pub(crate) struct GateFailure {
    pub cause: Cause,
    pub gaps: Vec<Gap>,
}

impl GateFailure {
    /// Mechanical gates that failed (on the diff, or before anything was staged).
    pub fn of_gates(failed: &[&GateResult]) -> GateFailure {
        GateFailure::new(crate::causes::of_gates(failed), failed)
    }

    /// A failure with its cause and the failed gates' findings.
    pub fn new(cause: Cause, failed: &[&GateResult]) -> GateFailure {
        GateFailure {
            cause,
            gaps: failed.iter().map(|gate| crate::causes::gate_gap(gate)).collect(),
        }
    }
}
