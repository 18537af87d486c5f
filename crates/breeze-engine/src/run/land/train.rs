//! The landing queue's speculative landings (`land.batch = 1`, `land.queue_depth` above 1),
//! the way merge queues verify: the waiting landings A, B, C are built as one chain on the
//! target's tip — A on the tip, B on A's landing commit, C on B's — and `land.verify` runs
//! on main+A, main+A+B and main+A+B+C at once, each in an integration checkout of its own
//! (`verify.rs`, [`judge_prefixes`]). Then, in order: the target moves to the longest
//! prefix whose verifies all passed, one landing at a time, each published as the mode
//! publishes one (main moved by compare-and-swap, a push with a lease); the first failing
//! landing is charged (unless it fails the way main does) and goes back to its worker; the
//! ones after it wait in the queue again, to be built without it and verified again.
//!
//! A kill anywhere is safe: each landing is published as a landing of its own (the
//! target is before or after it, never half), and on resume the approved tasks queue
//! again — those already on the target are recognized by their trailers.

use breeze_git::Oid;

use super::candidate::{Candidate, Prepared, RACE_RETRIES, kept_moving, prepare};
use super::mode::{LandMode, Publish};
use super::outcome::{Landing, Onto, Settled, Try};
use super::verify::{Link, judge_prefixes};
use crate::error::EngineError;
use crate::kill_points;
use crate::run::context::RunContext;

/// Lands the approved tasks at `indices` (in the queue's order) as one speculative
/// train, serial with every other landing: each task's outcome, in the train's order.
pub(crate) async fn land_train<M: LandMode + ?Sized>(
    mode: &M,
    ctx: &RunContext,
    indices: Vec<usize>,
) -> Result<Vec<(usize, Settled)>, EngineError> {
    let _serial = ctx.land_lock.lock().await;
    let mut candidates = Vec::new();
    for index in indices {
        candidates.push(Candidate::of(ctx, index).await?);
    }
    let tries = RACE_RETRIES.max(ctx.config.land.push_retries + 1);
    for attempt in 1..=tries {
        if let Some(settled) = train_once(mode, ctx, &candidates, attempt).await? {
            return Ok(settled);
        }
    }
    let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    Err(kept_moving(&ids.join(", "), tries))
}

/// What a train was built on, and what became of the tasks it could not take.
struct Built {
    /// The target's tip the chain is built on, and where the target must still be for the
    /// first landing to be published; `None` when every task was found landed.
    tip: Option<(Oid, Option<Oid>)>,
    /// The landings, each on the one before.
    chain: Vec<Link>,
    /// Tasks already judged: found landed, conflicting, refused by a hook.
    settled: Vec<(usize, Settled)>,
}

/// One try at landing the train on the target's tip of the moment; `None` when the target
/// moved before its first landing was published (nothing moved).
async fn train_once<M: LandMode + ?Sized>(
    mode: &M,
    ctx: &RunContext,
    candidates: &[Candidate],
    attempt: u32,
) -> Result<Option<Vec<(usize, Settled)>>, EngineError> {
    // main moved onto a commit made in a lane (a role moved it): land nothing on it.
    let guard = ctx.roles.guard.clone();
    ctx.blocking(move || guard.check_main()).await?;
    let Built { tip, chain, mut settled } = build(mode, ctx, candidates).await?;
    let Some((onto, expected)) = tip else { return Ok(Some(settled)) };
    let (passed, culprit) = if ctx.config.verify.is_empty() || chain.is_empty() {
        (chain.len(), None)
    } else {
        let verdict = judge_prefixes(ctx, onto, &chain).await?;
        (verdict.passed, verdict.culprit)
    };
    kill_points::reached("landing:verified");
    let (passing, rest) = chain.split_at(passed);
    if let (Some(failed), Some((guilty, after))) = (culprit, rest.split_first()) {
        let landing = Landing::VerifyFailed(failed.failure, Box::new(failed.cause));
        settled.push((guilty.index, Settled::Landing(landing)));
        settled.extend(after.iter().map(|link| (link.index, Settled::Again)));
    }
    match publish_in_order(mode, ctx, (onto, expected), passing, attempt).await? {
        Some(published) => settled.extend(published),
        None => return Ok(None),
    }
    Ok(Some(settled))
}

/// Builds the chain: each candidate asks the mode what it lands on (one found landed
/// already is settled so), then is merged onto the landing before it (the target's tip
/// for the first).
async fn build<M: LandMode + ?Sized>(
    mode: &M,
    ctx: &RunContext,
    candidates: &[Candidate],
) -> Result<Built, EngineError> {
    let mut settled = Vec::new();
    let mut tip = None;
    let mut building = Vec::new();
    for candidate in candidates {
        match mode.onto(ctx, candidate.index).await? {
            Onto::Done(landing) => settled.push((candidate.index, Settled::Landing(landing))),
            // The first tip is the train's: a target that moves later is found when the
            // first landing is published.
            Onto::Tip { onto, expected } => {
                tip.get_or_insert((onto, expected));
                building.push(candidate);
            }
        }
    }
    let mut chain: Vec<Link> = Vec::new();
    let Some((onto, _)) = tip else { return Ok(Built { tip, chain, settled }) };
    for candidate in building {
        let parent = chain.last().map_or(onto, |link| link.commit);
        match prepare(ctx, candidate, parent).await? {
            Prepared::Link(link) => chain.push(link),
            Prepared::Conflict { files } if parent == onto => {
                let landing = Landing::Conflict { files, onto: onto.into() };
                settled.push((candidate.index, Settled::Landing(landing)));
            }
            // It conflicts with a landing before it in the train: built again once that
            // one has landed (or not).
            Prepared::Conflict { .. } => settled.push((candidate.index, Settled::Again)),
            Prepared::HookFailed(failure, cause) => {
                let landing = Landing::VerifyFailed(failure, Box::new(cause));
                settled.push((candidate.index, Settled::Landing(landing)));
            }
        }
    }
    Ok(Built { tip, chain, settled })
}

/// Publishes the verified landings one after another, each where the one before it left
/// the target. The first that does not land ends the train there: the ones after it wait
/// to be built again. `None` when the target moved before the first was published.
async fn publish_in_order<M: LandMode + ?Sized>(
    mode: &M,
    ctx: &RunContext,
    (onto, expected): (Oid, Option<Oid>),
    passing: &[Link],
    attempt: u32,
) -> Result<Option<Vec<(usize, Settled)>>, EngineError> {
    let mut settled = Vec::new();
    for (at, link) in passing.iter().enumerate() {
        let (onto, expected) =
            if at == 0 { (onto, expected) } else { (link.parent, Some(link.parent)) };
        let rest = passing[at + 1..].iter().map(|link| (link.index, Settled::Again));
        match mode.publish(ctx, Publish { onto, expected, link, attempt }).await? {
            Try::Done(landing @ Landing::Landed { .. }) => {
                settled.push((link.index, Settled::Landing(landing)));
            }
            Try::Done(landing) => {
                settled.push((link.index, Settled::Landing(landing)));
                settled.extend(rest);
                break;
            }
            Try::Raced if at == 0 => return Ok(None),
            // Someone moved the target between two of the train's landings: the rest are
            // built again on where it is now.
            Try::Raced => {
                settled.push((link.index, Settled::Again));
                settled.extend(rest);
                break;
            }
        }
    }
    Ok(Some(settled))
}
