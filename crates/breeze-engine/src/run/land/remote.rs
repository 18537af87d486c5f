//! Landing on a remote's branch (`land.to = "remote"`): the branch is fetched, the task is
//! merged onto its tip and verified as any landing, and the landing commit is pushed with a
//! lease on the tip it was built on — never over someone else's push. A refused push
//! (someone pushed meanwhile) is journaled, fetched again, rebuilt on the new tip,
//! verified again and pushed again, `land.push_retries` times; then the landing is
//! deferred with the reason. The local main follows the remote when it can. The landing
//! queue lands up to `land.queue_depth` waiting tasks at once, verified side by side and
//! pushed one after another (`train.rs`).

use breeze_git::{Oid, PushOutcome};
use breeze_protocol::EventKind;

use super::journal::{journal_found_landing, landing_journaled};
use super::main_moves::follow_main;
use super::mode::{LandFuture, LandMode, Publish};
use super::outcome::{Landing, Onto, Settled, Try, deferral};
use super::target;
use super::train::land_train;
use crate::config::Config;
use crate::error::EngineError;
use crate::kill_points;
use crate::run::context::RunContext;

/// Landings are pushed to the remote's branch.
pub(crate) struct Remote;

impl LandMode for Remote {
    fn work_base<'a>(&'a self, ctx: &'a RunContext, _index: usize) -> LandFuture<'a, Oid> {
        Box::pin(target::last_fetched_tip(ctx))
    }

    fn onto<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Onto> {
        Box::pin(remote_onto(ctx, index))
    }

    fn publish<'a>(&'a self, ctx: &'a RunContext, landing: Publish<'a>) -> LandFuture<'a, Try> {
        Box::pin(push_landing(ctx, landing))
    }

    fn queue_takes(&self, config: &Config) -> usize {
        config.land_queue_depth as usize
    }

    fn land_batch<'a>(
        &'a self,
        ctx: &'a RunContext,
        indices: Vec<usize>,
    ) -> LandFuture<'a, Vec<(usize, Settled)>> {
        Box::pin(land_train(self, ctx, indices))
    }
}

/// Fetches the remote branch and builds on its tip (main's tip when the remote has no
/// such branch yet: the first push creates it). A landing of this run already there —
/// pushed just before a kill — counts as landed.
async fn remote_onto(ctx: &RunContext, index: usize) -> Result<Onto, EngineError> {
    let id = ctx.task(index).id.to_string();
    let fetched = match target::fetch(ctx).await {
        Ok(fetched) => fetched,
        Err(err) => return deferral(err).map(Onto::Done),
    };
    let Some(tip) = fetched else {
        let main = ctx.git(|repo| repo.main_tip()).await?;
        return Ok(Onto::Tip { onto: main, expected: None });
    };
    let (run_id, task_id, start) = (ctx.run_id.clone(), id.clone(), ctx.main_tip_at_start.0);
    let found = ctx
        .git(move |repo| {
            // This run's landings are all newer than where the branch met main at the
            // start.
            let stop_at: Vec<Oid> = repo.merge_base(tip, start)?.into_iter().collect();
            repo.find_landing_from(tip, &run_id, &task_id, &stop_at)
        })
        .await?;
    if let Some(commit) = found {
        // Pushed just before the engine was killed: journaled now, if the kill came
        // before that too.
        tracing::info!(task = %id, %commit, "found on the remote branch: pushed before the engine stopped");
        if !landing_journaled(&ctx.run_dir, &id, commit)? {
            journal_found_landing(ctx, &id, commit).await?;
        }
        follow_main(ctx, &id, tip).await?;
        return Ok(Onto::Done(Landing::Landed { commit: commit.into() }));
    }
    Ok(Onto::Tip { onto: tip, expected: Some(tip) })
}

/// Pushes the landing commit with a lease on `expected`; see the module's comment.
async fn push_landing(ctx: &RunContext, landing: Publish<'_>) -> Result<Try, EngineError> {
    let Publish { onto, expected, link, attempt } = landing;
    let (commit, id) = (link.commit, link.id.clone());
    let (target, access) = (target::remote_branch(ctx), target::remote_access(ctx));
    let to = target.clone();
    let pushed =
        ctx.git(move |repo| repo.push_with_lease(&to, commit, expected, true, &access)).await;
    let reason = match pushed {
        Ok(PushOutcome::Pushed) => {
            kill_points::reached("landing:pushed");
            ctx.book
                .journal(EventKind::Landed {
                    task: id.clone(),
                    commit: commit.to_string(),
                    previous_main: onto.to_string(),
                    target: Some(target.to_string()),
                })
                .await?;
            kill_points::reached("landing:landed-journaled");
            follow_main(ctx, &id, commit).await?;
            return Ok(Try::Done(Landing::Landed { commit: commit.into() }));
        }
        Ok(PushOutcome::Rejected { reason }) => reason,
        Err(err) => return deferral(err).map(Try::Done),
    };
    let actual = match target::fetch(ctx).await {
        Ok(actual) => actual,
        Err(err) => return deferral(err).map(Try::Done),
    };
    let show = |oid: Option<Oid>| oid.map(|oid| oid.to_string()).unwrap_or_default();
    ctx.book
        .journal(EventKind::PushRejected {
            task: id.clone(),
            target: target.to_string(),
            commit: commit.to_string(),
            expected: show(expected),
            actual: show(actual),
            reason: reason.clone(),
            attempt,
        })
        .await?;
    if actual == expected {
        // Nobody pushed: a hook or a protection rule refused it. Trying again would
        // be refused again.
        return Ok(Try::Done(Landing::waits_for_remote(format!(
            "{} refused the push to {target} ({reason}); if the branch is protected, land through pull requests (`[land] to = \"pull-request\"`), then `breeze resume`",
            target.remote
        ))));
    }
    if attempt > ctx.config.land.push_retries {
        return Ok(Try::Done(Landing::waits_for_remote(format!(
            "{target} kept moving: {attempt} pushes were refused because others pushed first (the last: {reason}); breeze tries again later, or `breeze resume` does"
        ))));
    }
    tracing::info!(task = %id, %target, attempt, "the remote branch moved; building the landing again");
    Ok(Try::Raced)
}
