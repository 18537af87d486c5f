//! Landing approved tasks in batches (`land.batch` above 1), the way merge queues do.
//!
//! Approved tasks leave their lanes and wait in the dispatcher's landing queue (`queue.rs`). One batch lands at a
//! time: up to `land.batch` waiting tasks (the longest chain of dependents first, then plan
//! order) are merged onto main's tip one after another in memory — each onto the landing
//! commit before it, each with its own merge check, Plans.md flip, hooks and landing commit
//! with its trailers — and verified together (`verify.rs`). If the batch passes,
//! main moves to its last commit in one compare-and-swap (main gets one commit per task).
//! If it fails, bisection finds the first task whose landing fails: the landings before it
//! move main (they passed together), it goes back to its worker, and the tasks after it
//! wait for the next batch. Every commit main moves to passed verify as the end of a
//! verified prefix.
//!
//! A kill anywhere is safe: nothing moves main but the one compare-and-swap, the journal
//! holds the batch (`landing_batch`, `verified`, `landed`), and on resume the approved
//! tasks queue again — those already on main are recognized by their trailers.

use breeze_git::Oid;
use breeze_protocol::EventKind;

use super::candidate::{Candidate, Prepared, RACE_RETRIES, kept_moving, main_to_land_on, prepare};
use super::local::Local;
use super::main_moves::{Moved, move_main};
use super::mode::{LandFuture, LandMode, Publish};
use super::outcome::{Landing, Onto, Settled, Try};
use super::verify::{Link, judge_chain};
use crate::error::EngineError;
use crate::kill_points;
use crate::run::context::RunContext;

/// Landings move the local main, up to `size` approved tasks at a time.
pub(crate) struct Batched {
    pub size: usize,
}

/// A task landing on its own (one a person approved, say) lands as [`Local`] lands it.
impl LandMode for Batched {
    fn work_base<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Oid> {
        Local.work_base(ctx, index)
    }

    fn onto<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Onto> {
        Local.onto(ctx, index)
    }

    fn publish<'a>(&'a self, ctx: &'a RunContext, landing: Publish<'a>) -> LandFuture<'a, Try> {
        Local.publish(ctx, landing)
    }

    fn queue_takes(&self, _config: &crate::config::Config) -> usize {
        self.size
    }

    fn land_batch<'a>(
        &'a self,
        ctx: &'a RunContext,
        indices: Vec<usize>,
    ) -> LandFuture<'a, Vec<(usize, Settled)>> {
        Box::pin(land_batch(ctx, indices))
    }
}

/// Lands the tasks at `indices` as one batch (serial with every other landing).
async fn land_batch(
    ctx: &RunContext,
    indices: Vec<usize>,
) -> Result<Vec<(usize, Settled)>, EngineError> {
    let _serial = ctx.land_lock.lock().await;
    let mut settled = Vec::new();
    let mut candidates = Vec::new();
    for index in indices {
        let candidate = Candidate::of(ctx, index).await?;
        // A landing that happened before a crash is recognized by its trailers.
        match candidate.landed_before(ctx).await? {
            Some(commit) => {
                settled.push((index, Settled::Landing(Landing::Landed { commit: commit.into() })));
            }
            None => candidates.push(candidate),
        }
    }
    if candidates.is_empty() {
        return Ok(settled);
    }
    for _ in 0..RACE_RETRIES {
        if let Some(mut done) = batch_once(ctx, &candidates).await? {
            settled.append(&mut done);
            return Ok(settled);
        }
    }
    let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    Err(kept_moving(&ids.join(", "), RACE_RETRIES))
}

/// One try at landing the batch on main's tip of the moment; `None` when main moved
/// before the compare-and-swap (nothing moved).
async fn batch_once(
    ctx: &RunContext,
    candidates: &[Candidate],
) -> Result<Option<Vec<(usize, Settled)>>, EngineError> {
    let main = main_to_land_on(ctx).await?;
    ctx.book
        .journal(EventKind::LandingBatch {
            tasks: candidates.iter().map(|c| c.id.clone()).collect(),
            onto: main.to_string(),
        })
        .await?;
    let mut settled = Vec::new();
    let mut chain: Vec<Link> = Vec::new();
    for candidate in candidates {
        let parent = chain.last().map_or(main, |link| link.commit);
        match prepare(ctx, candidate, parent).await? {
            Prepared::Link(link) => chain.push(link),
            Prepared::Conflict { files } if parent == main => {
                let landing = Landing::Conflict { files, onto: main.into() };
                settled.push((candidate.index, Settled::Landing(landing)));
            }
            // It conflicts with a task before it in the batch: merged onto main again once
            // that one has landed (or not).
            Prepared::Conflict { .. } => settled.push((candidate.index, Settled::Again)),
            Prepared::HookFailed(failure, cause) => {
                let landing = Landing::VerifyFailed(failure, Box::new(cause));
                settled.push((candidate.index, Settled::Landing(landing)));
            }
        }
    }
    kill_points::reached("landing:batch-merged");
    if chain.is_empty() {
        return Ok(Some(settled));
    }
    let (passed, culprit) = if ctx.config.verify.is_empty() {
        (chain.len(), None)
    } else {
        let verdict = judge_chain(ctx, main, &chain).await?;
        (verdict.passed, verdict.culprit)
    };
    kill_points::reached("landing:batch-verified");
    let (landing, rest) = chain.split_at(passed);
    if let (Some(failed), Some((guilty, after))) = (culprit, rest.split_first()) {
        let landing = Landing::VerifyFailed(failed.failure, Box::new(failed.cause));
        settled.push((guilty.index, Settled::Landing(landing)));
        settled.extend(after.iter().map(|link| (link.index, Settled::Again)));
    }
    match move_main(ctx, main, landing).await? {
        Moved::Advanced => {
            let landed = landing.iter().map(|link| {
                (link.index, Settled::Landing(Landing::Landed { commit: link.commit.into() }))
            });
            settled.extend(landed);
        }
        Moved::Raced => return Ok(None),
        Moved::Deferred { reason, paths } => {
            settled.extend(deferred(ctx, landing, &reason, &paths).await?);
        }
    }
    Ok(Some(settled))
}

/// main could not move for the user's checkout: the landings touching its dirty `paths`
/// wait for the user (all of them when the checkout is mid-merge or locked); the others
/// are verified again without them in the next batch.
async fn deferred(
    ctx: &RunContext,
    landing: &[Link],
    reason: &str,
    paths: &[String],
) -> Result<Vec<(usize, Settled)>, EngineError> {
    let mut touching = Vec::new();
    for link in landing {
        let (parent, commit): (Oid, Oid) = (link.parent, link.commit);
        let changed = ctx.git(move |repo| repo.changed_paths(parent, commit)).await?;
        touching.push(
            paths.is_empty()
                || changed.iter().any(|change| {
                    change
                        .touched_paths()
                        .iter()
                        .any(|path| paths.iter().any(|dirty| dirty == path))
                }),
        );
    }
    let none_found = !touching.contains(&true);
    Ok(landing
        .iter()
        .zip(touching)
        .map(|(link, touches)| {
            let outcome = if touches || none_found {
                Settled::Landing(Landing::waits_for_checkout(reason.to_string()))
            } else {
                Settled::Again
            };
            (link.index, outcome)
        })
        .collect())
}
