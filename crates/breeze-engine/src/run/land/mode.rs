//! The one interface every landing mode implements (`[land] to`, `land.batch`,
//! `land.queue_depth`): where a task's work starts, what a landing is built on, how a
//! verified landing is published, how the approved tasks waiting in the dispatcher's
//! landing queue land, and how the run follows landings the target takes in later (pull
//! requests). The landing itself — the merge, the Plans.md flip, the
//! changelog, the hooks, the landing commit (`candidate.rs`) and the verify command
//! (`verify.rs`) — is the same for every mode: the provided methods here run it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use breeze_git::Oid;

use super::candidate::{Candidate, Prepared, RACE_RETRIES, kept_moving, prepare};
use super::outcome::{Followed, Landing, Onto, Settled, Try};
use super::verify::{Link, judge_chain};
use crate::config::Config;
use crate::error::EngineError;
use crate::kill_points;
use crate::run::context::RunContext;

/// What a landing mode's step hands back, later.
pub(crate) type LandFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, EngineError>> + Send + 'a>>;

/// A verified landing commit, ready to be published.
pub(crate) struct Publish<'a> {
    /// The commit it was built on.
    pub onto: Oid,
    /// Where the target must still be for it to be published (`None`: the remote has no
    /// such branch yet).
    pub expected: Option<Oid>,
    /// The landing commit and its task.
    pub link: &'a Link,
    /// How many tries of this landing there were so far, this one included (a remote
    /// branch that keeps moving is given up on).
    pub attempt: u32,
}

/// Where and how approved tasks land. Chosen once when the run starts (`land::choose`)
/// and asked by a task's driver and by the dispatcher; a mode keeps no state of its own
/// between calls (what lasts is in the task's record and the journal).
pub(crate) trait LandMode: Send + Sync {
    /// The commit a new task's work starts from.
    fn work_base<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Oid>;

    /// The commit task `index`'s landing is built on, after whatever the target needs
    /// first (a fetch); or how the landing already ended — a landing of this run found on
    /// the target (a kill cut its journaling short) counts as landed.
    fn onto<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Onto>;

    /// Publishes a verified landing: main moved, a push, a pull request.
    fn publish<'a>(&'a self, ctx: &'a RunContext, landing: Publish<'a>) -> LandFuture<'a, Try>;

    /// How many of the approved tasks waiting in the dispatcher's landing queue it hands
    /// [`LandMode::land_batch`] at once: by default one, landed alone.
    fn queue_takes(&self, _config: &Config) -> usize {
        1
    }

    /// How often published landings (`Landing::Published`) are looked for on the target;
    /// `None` for a mode that publishes nothing the target takes in later.
    fn follow_every(&self) -> Option<Duration> {
        None
    }

    /// Looks for the `published` tasks' changes on the target: the ones it took in land,
    /// the ones that no longer merge cleanly land again.
    fn follow<'a>(
        &'a self,
        _ctx: &'a RunContext,
        _published: &'a [usize],
    ) -> LandFuture<'a, Followed> {
        Box::pin(async { Ok(Followed::default()) })
    }

    /// Why the run stops while the `published` tasks wait for the target to take them in
    /// (`unreachable`: why the target could not be looked at, the last time).
    fn waiting_reason(
        &self,
        ctx: &RunContext,
        published: &[usize],
        unreachable: Option<&str>,
    ) -> String {
        let ids: Vec<String> =
            published.iter().map(|&index| ctx.task(index).id.to_string()).collect();
        let unreachable =
            unreachable.map(|why| format!(" (the target could not be looked at: {why})"));
        format!(
            "{} task(s) wait for the target to take them in: {}{}; then `breeze resume` lands them",
            ids.len(),
            ids.join(", "),
            unreachable.unwrap_or_default()
        )
    }

    /// Lands approved task `index` (its record holds base, head and the approving round)
    /// on its own, serial with every other landing: built on [`LandMode::onto`], verified, published —
    /// and built again when the target moved meanwhile.
    fn land_one<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Landing> {
        Box::pin(async move {
            let _serial = ctx.land_lock.lock().await;
            let candidate = Candidate::of(ctx, index).await?;
            let tries = RACE_RETRIES.max(ctx.config.land.push_retries + 1);
            for attempt in 1..=tries {
                match land_once(self, ctx, &candidate, attempt).await? {
                    Try::Done(landing) => return Ok(landing),
                    Try::Raced => continue,
                }
            }
            Err(kept_moving(&candidate.id, tries))
        })
    }

    /// Lands the approved tasks at `indices`, taken from the landing queue together (up to
    /// [`LandMode::queue_takes`]): each task's outcome, in their order. Each lands alone
    /// unless the mode lands them its own way (a batch, a speculative train).
    fn land_batch<'a>(
        &'a self,
        ctx: &'a RunContext,
        indices: Vec<usize>,
    ) -> LandFuture<'a, Vec<(usize, Settled)>> {
        Box::pin(async move {
            let mut settled = Vec::new();
            for index in indices {
                settled.push((index, Settled::Landing(self.land_one(ctx, index).await?)));
            }
            Ok(settled)
        })
    }
}

/// One try at landing `candidate` on the target's tip of the moment: merged onto it, the
/// hooks and the verify command run on the result, and published by `mode`.
async fn land_once<M: LandMode + ?Sized>(
    mode: &M,
    ctx: &RunContext,
    candidate: &Candidate,
    attempt: u32,
) -> Result<Try, EngineError> {
    // main moved onto a commit made in a lane (a role moved it): land nothing on it.
    let guard = ctx.roles.guard.clone();
    ctx.blocking(move || guard.check_main()).await?;
    let (onto, expected) = match mode.onto(ctx, candidate.index).await? {
        Onto::Tip { onto, expected } => (onto, expected),
        Onto::Done(landing) => return Ok(Try::Done(landing)),
    };
    let link = match prepare(ctx, candidate, onto).await? {
        Prepared::Link(link) => link,
        Prepared::Conflict { files } => {
            return Ok(Try::Done(Landing::Conflict { files, onto: onto.into() }));
        }
        Prepared::HookFailed(failure, cause) => {
            return Ok(Try::Done(Landing::VerifyFailed(failure, Box::new(cause))));
        }
    };
    if !ctx.config.verify.is_empty()
        && let Some(failed) = judge_chain(ctx, onto, std::slice::from_ref(&link)).await?.culprit
    {
        return Ok(Try::Done(Landing::VerifyFailed(failed.failure, Box::new(failed.cause))));
    }
    kill_points::reached("landing:verified");
    mode.publish(ctx, Publish { onto, expected, link: &link, attempt }).await
}
