//! Sending a task back to its worker without a review round: a failed gate or check (on
//! the diff, or before anything was staged) and a landing that bounced (a conflict, a
//! failed verify or hook). Each send-back names its cause in the journal (`sent_back`),
//! `breeze status` and the progress lines; three gate failures in a row, or too many
//! landing bounces, escalate the task with that cause. Gate failures are counted apart
//! from the reviewer's rounds and never consult the Advisor: they say what broke a rule,
//! not that the approach is wrong.

use breeze_protocol::{Cause, Gap, GateResult, ReviewFeedback};

use super::book::Transition;
use super::context::RunContext;
use super::driver::TaskDriver;
use crate::error::EngineError;

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

/// How a landing bounced.
pub(crate) enum Bounce {
    /// It does not merge onto main: these files conflict with `onto`.
    Conflict { files: Vec<String>, onto: crate::snapshot::ObjectId },
    /// `land.verify` or a hook failed on the merged tree.
    Failed(breeze_protocol::VerifyFailure),
}

impl TaskDriver {
    /// A gate or check failed: counted (not as a round), the findings go to the worker as
    /// its next briefing's feedback, and the task goes back to work. `Some` is the
    /// escalation after [`MAX_GATE_FAILURES_IN_ROW`] in a row, naming the gate and paths.
    pub(super) async fn gates_failed(
        &self,
        failure: GateFailure,
    ) -> Result<Option<Cause>, EngineError> {
        let GateFailure { cause, gaps } = failure;
        let in_row = self
            .change(|record| {
                record.gate_failures += 1;
                record.gate_failures_in_row += 1;
                record.feedback = Some(ReviewFeedback { round: record.rounds + 1, gaps });
                record.gate_failures_in_row
            })
            .await?;
        if in_row >= MAX_GATE_FAILURES_IN_ROW {
            return Ok(Some(cause.times(in_row)));
        }
        self.ctx.book.transition(self.index, Transition::SendBack { cause }).await?;
        Ok(None)
    }
}

/// A landing of task `index` bounced: back to the worker with the conflict or the failed
/// command, or — past `land.max_bounces` — `Some` escalation with that cause. For a task
/// on its lane and for one landing in a batch alike.
pub(super) async fn landing_bounced(
    ctx: &RunContext,
    index: usize,
    bounce: Bounce,
    cause: Cause,
) -> Result<Option<Cause>, EngineError> {
    let bounces = ctx
        .book
        .change(index, |record| {
            record.land_bounces += 1;
            record.land_bounces
        })
        .await?;
    if bounces > ctx.config.max_land_bounces {
        return Ok(Some(cause.times(bounces)));
    }
    ctx.book
        .change(index, |record| match bounce {
            Bounce::Conflict { files, onto } => {
                record.conflict = Some(breeze_protocol::ConflictInfo { files });
                record.conflict_onto = Some(onto);
            }
            Bounce::Failed(failure) => record.verify_failure = Some(failure),
        })
        .await?;
    ctx.book.transition(index, Transition::SendBack { cause }).await?;
    Ok(None)
}
