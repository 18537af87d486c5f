//! Where a landing goes (`[land] to`): the commit a landing is built on, the commit a new
//! task starts from, and what becomes of a verified landing commit —
//!
//! - `local`: main moved by compare-and-swap, the user's clean checkout fast-forwarded;
//! - `remote`: pushed to the remote's branch with a lease (`land_remote.rs`), the local
//!   main following when it can;
//! - `pull-request`: its branch pushed and a pull request opened (`land_pr.rs`); it lands
//!   when the team merges it.
//!
//! The landing itself — the merge, the Plans.md flip, the changelog, the hooks, the landing
//! commit and the verify command — is the same for all three (`landing.rs`).

use std::sync::Arc;

use breeze_git::{
    AdvanceOutcome, CheckoutObserver, CheckoutUpdate, GitError, Oid, RemoteAccess, RemoteBranch,
};
use breeze_protocol::EventKind;

use super::context::RunContext;
use super::driver::TaskDriver;
use super::landing::{Landing, Try};
use super::verify_queue::Link;
use crate::config::LandTo;
use crate::error::EngineError;
use crate::journal::RunStore;
use crate::kill_points;
use crate::progress::ProgressEvent;

/// What a landing is built on.
pub(crate) enum Onto {
    /// This commit; `expected` is where the target branch must still be when the landing
    /// is published (`None`: the remote has no such branch yet).
    Tip { onto: Oid, expected: Option<Oid> },
    /// Nothing to build: the landing ended already (found landed, or it must wait).
    Done(Landing),
}

/// A remote that cannot be reached defers the landing (other tasks go on); anything else
/// is an error.
pub(super) fn deferral(err: EngineError) -> Result<Landing, EngineError> {
    match err {
        EngineError::Git(err @ (GitError::Remote { .. } | GitError::NoSuchRemote { .. })) => {
            Ok(Landing::waits_for_remote(err.to_string()))
        }
        other => Err(other),
    }
}

impl RunContext {
    /// The remote branch landings go to (`remote`, `pull-request`).
    pub fn land_target(&self) -> RemoteBranch {
        self.config.land.target(self.repo.main_branch())
    }

    /// Journals the landing of task `task` that a kill kept out of the journal: `commit` is
    /// on the target already, on its first parent; the remote branch is named in the remote
    /// modes.
    pub async fn journal_found_landing(&self, task: &str, commit: Oid) -> Result<(), EngineError> {
        let previous = self.git(move |repo| repo.first_parent(commit)).await?;
        let target = self.config.land.is_remote().then(|| self.land_target().to_string());
        self.book
            .journal(EventKind::Landed {
                task: task.to_string(),
                commit: commit.to_string(),
                previous_main: previous.map(|oid| oid.to_string()).unwrap_or_default(),
                target,
            })
            .await
    }

    /// How git reaches the remote: with the engine's (the user's) environment, never a
    /// role's; stopped when the run is.
    pub fn remote_access(&self) -> RemoteAccess {
        let cancel = self.cancel.clone();
        RemoteAccess {
            env: std::env::vars().collect(),
            timeout: self.config.land.remote_timeout,
            run_hooks: self.config.run_hooks,
            stop: Some(Arc::new(move || cancel.is_cancelled())),
        }
    }

    /// Fetches the target branch; `Ok(None)` when the remote has no such branch.
    pub async fn fetch_target(&self) -> Result<Option<Oid>, EngineError> {
        let (target, access) = (self.land_target(), self.remote_access());
        self.git(move |repo| repo.fetch_branch(&target, &access)).await
    }

    /// The commit a task's work starts from: main's tip, or — landing on a remote — the
    /// remote branch's tip as last fetched (main's when none was), or the commit of the
    /// open pull request a stacked task builds on.
    pub async fn work_base(&self, index: usize) -> Result<Oid, EngineError> {
        if self.config.land.to == LandTo::Local {
            return self.git(|repo| repo.main_tip()).await;
        }
        if let Some((_, pull_request)) = self.stacked_on(index) {
            return Ok(pull_request.commit.0);
        }
        let target = self.land_target();
        self.git(move |repo| match repo.tracking_tip(&target)? {
            Some(tip) => Ok(tip),
            None => repo.main_tip(),
        })
        .await
    }
}

impl TaskDriver {
    /// The commit this landing is built on, after whatever the target needs first (a
    /// fetch), or how the landing already ended: a landing of this run found on the target
    /// (a kill cut its journaling short) counts as landed.
    pub(super) async fn landing_onto(&self) -> Result<Onto, EngineError> {
        match self.ctx.config.land.to {
            LandTo::Local => {
                let (run_id, task_id, stop_at) =
                    (self.ctx.run_id.clone(), self.id.clone(), self.ctx.main_tip_at_start.0);
                let found = self
                    .ctx
                    .git(move |repo| repo.find_landing(&run_id, &task_id, Some(stop_at)))
                    .await?;
                if let Some(commit) = found {
                    return Ok(Onto::Done(Landing::Landed { commit: commit.into() }));
                }
                let main = self.ctx.git(|repo| repo.main_tip()).await?;
                Ok(Onto::Tip { onto: main, expected: Some(main) })
            }
            LandTo::Remote => self.remote_onto().await,
            LandTo::PullRequest => self.pull_request_onto().await,
        }
    }

    /// Publishes the verified landing `link`, built on `onto`; `attempt` counts the tries
    /// of this landing (a remote branch that keeps moving is given up on).
    pub(super) async fn publish(
        &self,
        onto: Oid,
        expected: Option<Oid>,
        link: &Link,
        attempt: u32,
    ) -> Result<Try, EngineError> {
        let commit = link.commit;
        match self.ctx.config.land.to {
            LandTo::Local => {
                Ok(match move_main(&self.ctx, onto, std::slice::from_ref(link)).await? {
                    Moved::Advanced => Try::Done(Landing::Landed { commit: commit.into() }),
                    Moved::Raced => Try::Raced,
                    Moved::Deferred { reason, .. } => {
                        Try::Done(Landing::waits_for_checkout(reason))
                    }
                })
            }
            LandTo::Remote => self.push_landing(onto, expected, commit, attempt).await,
            LandTo::PullRequest => self.push_pull_request(onto, commit).await,
        }
    }
}

/// How moving main onto verified landings went.
pub(super) enum Moved {
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
pub(super) async fn move_main(
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
pub(super) async fn follow_main(ctx: &RunContext, task: &str, tip: Oid) -> Result<(), EngineError> {
    let main = ctx.git(|repo| repo.main_tip()).await?;
    if main == tip {
        return Ok(());
    }
    let behind = ctx.git(move |repo| repo.is_ancestor(main, tip)).await?;
    let branch = ctx.repo.main_branch().to_string();
    let target = ctx.land_target();
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
