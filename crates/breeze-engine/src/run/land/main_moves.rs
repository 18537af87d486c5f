//! Moving the local main onto verified landings by compare-and-swap — one task's landing,
//! or a batch's — and the local main following the remote branch after a landing there;
//! both fast-forward the user's clean checkout first and journal each update of it before
//! its first file is written, so that `breeze resume` can finish or undo one a kill cut
//! short.

use breeze_git::{AdvanceOutcome, CheckoutObserver, CheckoutUpdate, GitError, Oid};
use breeze_protocol::EventKind;

use super::target;
use super::verify::Link;
use crate::error::EngineError;
use crate::journal::RunStore;
use crate::kill_points;
use crate::progress::ProgressEvent;
use crate::run::context::RunContext;

/// How moving main onto verified landings went.
pub(crate) enum Moved {
    /// main is at the last of them; each has its `landed` event.
    Advanced,
    /// main moved meanwhile: nothing moved.
    Raced,
    /// Waits for the user's checkout: `paths` are the dirty ones the landings touch (empty
    /// when the checkout is mid-merge or locked); `reason` says what to do.
    Deferred { reason: String, paths: Vec<String> },
}

/// Moves the local main from `main` to the last of `landed` (a chain on `main`: one task's
/// landing, or a batch's) by compare-and-swap, fast-forwarding the user's clean checkout
/// first, and journals each landing.
pub(crate) async fn move_main(
    ctx: &RunContext,
    main: Oid,
    landed: &[Link],
) -> Result<Moved, EngineError> {
    let Some(last) = landed.last() else { return Ok(Moved::Advanced) };
    let commit = last.commit;
    let mut journaled = JournaledUpdates { store: ctx.book.store().clone(), task: last.id.clone() };
    let guard = ctx.roles.guard.clone();
    let advance = move |repo: &breeze_git::Repo| {
        guard.moving_main(commit, || repo.advance_main_observed(main, commit, &mut journaled))
    };
    let advanced = match ctx.git(advance).await {
        // The user's checkout is mid-merge/rebase, or another git process holds its
        // lock: the landing waits for the user like a dirty file does.
        Err(EngineError::Git(err @ (GitError::MidOperation { .. } | GitError::Locked { .. }))) => {
            return Ok(Moved::Deferred { reason: err.to_string(), paths: Vec::new() });
        }
        other => other?,
    };
    match advanced {
        AdvanceOutcome::Advanced { .. } => {
            kill_points::reached("landing:main-moved");
            for link in landed {
                ctx.book
                    .journal(EventKind::Landed {
                        task: link.id.clone(),
                        commit: link.commit.to_string(),
                        previous_main: link.parent.to_string(),
                        target: None,
                    })
                    .await?;
            }
            kill_points::reached("landing:landed-journaled");
            Ok(Moved::Advanced)
        }
        AdvanceOutcome::Raced { actual } => {
            tracing::info!(task = %last.id, %actual, "main moved during landing; merging again");
            Ok(Moved::Raced)
        }
        AdvanceOutcome::Deferred { paths, .. } => Ok(Moved::Deferred {
            reason: format!(
                "landing touches {} with uncommitted changes in your checkout; commit or stash them, then run `breeze resume`",
                paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
            paths,
        }),
    }
}

/// The local main follows the remote branch to `tip` (after a landing there, or a merged
/// pull request) when that is a fast-forward of it: the same compare-and-swap and safe
/// fast-forward of the user's checkout as a local landing, journaled the same way. When it
/// cannot — main has commits of its own, the checkout holds changes to the paths, main is
/// checked out mid-merge — main stays where it is and the user is told; nothing is lost
/// either way (the work is on the remote).
pub(crate) async fn follow_main(ctx: &RunContext, task: &str, tip: Oid) -> Result<(), EngineError> {
    let main = ctx.git(|repo| repo.main_tip()).await?;
    if main == tip {
        return Ok(());
    }
    let behind = ctx.git(move |repo| repo.is_ancestor(main, tip)).await?;
    let branch = ctx.repo.main_branch().to_string();
    let target = target::remote_branch(ctx);
    let why_not = if behind {
        let mut journaled =
            JournaledUpdates { store: ctx.book.store().clone(), task: task.to_string() };
        let guard = ctx.roles.guard.clone();
        let advance = move |repo: &breeze_git::Repo| {
            guard.moving_main(tip, || repo.advance_main_observed(main, tip, &mut journaled))
        };
        match ctx.git(advance).await {
            Ok(AdvanceOutcome::Advanced { .. }) => {
                ctx.book
                    .journal(EventKind::MainFollowed {
                        commit: tip.to_string(),
                        previous_main: main.to_string(),
                    })
                    .await?;
                return Ok(());
            }
            Ok(AdvanceOutcome::Raced { .. }) => return Ok(()),
            Ok(AdvanceOutcome::Deferred { paths, .. }) => format!(
                "your checkout has uncommitted changes to {}",
                paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
            Err(EngineError::Git(err)) => err.to_string(),
            Err(other) => return Err(other),
        }
    } else {
        format!("it has commits {target} does not have")
    };
    tracing::info!(%main, %tip, "{branch} does not follow {target}: {why_not}");
    if ctx.told_main_stays.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return Ok(());
    }
    ctx.book.report(ProgressEvent::Notice {
        message: format!(
            "{branch} stays at {} ({why_not}); `git merge --ff-only {target}` brings it up to {target} when you are ready",
            &main.to_string()[..12]
        ),
    });
    Ok(())
}

/// Journals each update of a checkout of main before its first file is written, so that
/// `breeze resume` can finish or undo one a kill cut short.
struct JournaledUpdates {
    store: RunStore,
    task: String,
}

impl CheckoutObserver for JournaledUpdates {
    fn updating(&mut self, update: &CheckoutUpdate) -> std::io::Result<()> {
        self.store.record_blocking(EventKind::CheckoutUpdate {
            task: self.task.clone(),
            checkout: update.checkout.display().to_string(),
            from: update.from.to_string(),
            to: update.to.to_string(),
            paths: update.paths as u64,
        })?;
        kill_points::reached("landing:checkout-journaled");
        Ok(())
    }

    fn placed(&mut self, done: usize, total: usize) {
        if done == total.div_ceil(2) {
            kill_points::reached("landing:checkout-half");
        }
    }

    fn updated(&mut self, _update: &CheckoutUpdate) {
        kill_points::reached("landing:checkout-written");
    }
}
