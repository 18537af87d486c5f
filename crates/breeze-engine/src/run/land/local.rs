//! Landing on the local main (`[land] to = "local"`, the default): a landing is built on
//! main's tip, and published by moving main to it by compare-and-swap — the user's clean
//! checkout fast-forwarded first, never over their uncommitted work (`main_moves.rs`).
//! The landing queue lands up to `land.queue_depth` waiting tasks at once, verified side
//! by side (`train.rs`).

use breeze_git::Oid;

use super::main_moves::{Moved, move_main};
use super::mode::{LandFuture, LandMode, Publish};
use super::outcome::{Landing, Onto, Settled, Try};
use super::train::land_train;
use crate::config::Config;
use crate::run::context::RunContext;

/// Landings move the local main.
pub(crate) struct Local;

impl LandMode for Local {
    fn work_base<'a>(&'a self, ctx: &'a RunContext, _index: usize) -> LandFuture<'a, Oid> {
        Box::pin(ctx.git(|repo| repo.main_tip()))
    }

    fn onto<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Onto> {
        Box::pin(async move {
            if let Some(commit) = ctx.landed_on_main(index).await? {
                return Ok(Onto::Done(Landing::Landed { commit: commit.into() }));
            }
            let main = ctx.git(|repo| repo.main_tip()).await?;
            Ok(Onto::Tip { onto: main, expected: Some(main) })
        })
    }

    fn publish<'a>(&'a self, ctx: &'a RunContext, landing: Publish<'a>) -> LandFuture<'a, Try> {
        Box::pin(async move {
            let commit = landing.link.commit;
            Ok(match move_main(ctx, landing.onto, std::slice::from_ref(landing.link)).await? {
                Moved::Advanced => Try::Done(Landing::Landed { commit: commit.into() }),
                Moved::Raced => Try::Raced,
                Moved::Deferred { reason, .. } => Try::Done(Landing::waits_for_checkout(reason)),
            })
        })
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
