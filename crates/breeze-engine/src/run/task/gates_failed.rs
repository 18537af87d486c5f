//! Sending a task back to its worker after a failed gate or check (on the diff, or before
//! anything was staged), without a review round. The send-back names its cause in the
//! journal (`sent_back`), `breeze status` and the progress lines; three gate failures in a
//! row escalate the task with that cause. Gate failures are counted apart from the
//! reviewer's rounds and never consult the Advisor: they say what broke a rule, not that
//! the approach is wrong. (A landing that bounced is `bounce.rs`'s.)

use breeze_protocol::{Cause, ReviewFeedback};

use super::driver::TaskDriver;
use super::outcome::{GateFailure, MAX_GATE_FAILURES_IN_ROW};
use crate::error::EngineError;
use crate::run::book::Transition;

impl TaskDriver {
    /// A gate or check failed: counted (not as a round), the findings go to the worker as
    /// its next briefing's feedback, and the task goes back to work. `Some` is the
    /// escalation after `MAX_GATE_FAILURES_IN_ROW` in a row, naming the gate and paths.
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
