//! The remote branch landings go to (`[land] to` a remote: `remote`, `pull-request`), and
//! how git reaches it: with the engine's (the user's) environment, never a role's, stopped
//! when the run is.

use std::sync::Arc;

use breeze_git::{Oid, RemoteAccess, RemoteBranch};

use crate::error::EngineError;
use crate::run::context::RunContext;

/// The remote branch landings go to.
pub(crate) fn remote_branch(ctx: &RunContext) -> RemoteBranch {
    ctx.config.land.target(ctx.repo.main_branch())
}

/// How git reaches the remote.
pub(crate) fn remote_access(ctx: &RunContext) -> RemoteAccess {
    let cancel = ctx.cancel.clone();
    RemoteAccess {
        env: std::env::vars().collect(),
        timeout: ctx.config.land.remote_timeout,
        run_hooks: ctx.config.run_hooks,
        stop: Some(Arc::new(move || cancel.is_cancelled())),
    }
}

/// Fetches the target branch; `Ok(None)` when the remote has no such branch.
pub(crate) async fn fetch(ctx: &RunContext) -> Result<Option<Oid>, EngineError> {
    fetch_branch(ctx, remote_branch(ctx)).await
}

/// Fetches `branch` of the remote; `Ok(None)` when the remote has no such branch.
pub(crate) async fn fetch_branch(
    ctx: &RunContext,
    branch: RemoteBranch,
) -> Result<Option<Oid>, EngineError> {
    let access = remote_access(ctx);
    ctx.git(move |repo| repo.fetch_branch(&branch, &access)).await
}

/// The remote branch's tip as last fetched, main's when none was: where a task's work
/// starts when landings go to the remote.
pub(crate) async fn last_fetched_tip(ctx: &RunContext) -> Result<Oid, EngineError> {
    let target = remote_branch(ctx);
    ctx.git(move |repo| match repo.tracking_tip(&target)? {
        Some(tip) => Ok(tip),
        None => repo.main_tip(),
    })
    .await
}
