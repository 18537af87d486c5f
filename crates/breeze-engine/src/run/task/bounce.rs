//! What becomes of a task once its landing from the landing queue ended — alone, in a train
//! or in a batch alike: it
//! landed, waits (for the user's checkout, the remote, the target taking it in), or it
//! bounced (a conflict, a failed verify or hook) and goes back to its worker with the
//! cause, counted as a bounce — past `land.max_bounces` it escalates.

use breeze_protocol::Cause;

use super::outcome::TaskExit;
use crate::error::EngineError;
use crate::run::book::Transition;
use crate::run::context::RunContext;
use crate::run::land::Landing;

/// How task `index` leaves once its landing ended — landed, deferred,
/// waiting for its pull request, or escalated after too many bounces; `None` when the
/// landing sent it back to its worker (the scheduler starts it on a lane again).
pub(crate) async fn exit_after_landing(
    ctx: &RunContext,
    index: usize,
    landing: Landing,
) -> Result<Option<TaskExit>, EngineError> {
    Ok(match landing {
        // The commit is recorded with the task's move to landed (`Transition::Land`).
        Landing::Landed { commit } => Some(TaskExit::Landed { commit }),
        Landing::Deferred { waits_for, reason } => {
            Some(TaskExit::Deferred(Cause::new(waits_for, reason)))
        }
        Landing::Published(cause) => Some(TaskExit::Published(cause)),
        sent_back => send_back(ctx, index, sent_back).await?.map(TaskExit::Escalated),
    })
}

/// A landing that sent its task back (a conflict, a failed verify or hook): counted as a
/// bounce and back to the worker with its cause (`landing_bounced`) — `Some` escalation
/// past `land.max_bounces`. `None` for a landing that did not bounce.
async fn send_back(
    ctx: &RunContext,
    index: usize,
    landing: Landing,
) -> Result<Option<Cause>, EngineError> {
    let (bounce, cause) = match landing {
        Landing::Conflict { files, onto } => {
            let cause = crate::causes::of_conflict(&files);
            (Bounce::Conflict { files, onto }, cause)
        }
        Landing::VerifyFailed(failure, cause) => (Bounce::Failed(failure), *cause),
        Landing::Landed { .. } | Landing::Deferred { .. } | Landing::Published(_) => {
            return Ok(None);
        }
    };
    landing_bounced(ctx, index, bounce, cause).await
}

/// How a landing bounced.
enum Bounce {
    /// It does not merge onto main: these files conflict with `onto`.
    Conflict { files: Vec<String>, onto: crate::snapshot::ObjectId },
    /// `land.verify` or a hook failed on the merged tree.
    Failed(breeze_protocol::VerifyFailure),
}

/// A landing of task `index` bounced: back to the worker with the conflict or the failed
/// command, or — past `land.max_bounces` — `Some` escalation with that cause.
async fn landing_bounced(
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
