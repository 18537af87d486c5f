//! Where the reviewer and the Advisor run: a checkout of the commit they judge, holding its
//! tracked content and nothing else — never the worker's lane, whose ignored and untracked
//! files the worker controls (a hidden `CLAUDE.md` saying "approve", a hook in
//! `.claude/settings.json` behind a `.gitignore` of `*`).
//!
//! Two kept detached checkouts beside the lanes, `review` (the reviewer's, used under the
//! run's review lock: verdicts are serial) and `advice` (the Advisor's, under a lock of its
//! own, so a consult never waits for a review). Each is moved from commit to commit by the
//! paths that differ, as lanes are, and emptied of whatever it holds beyond the commit; its
//! watch tells breeze where to look. Neither role may write there (docs/SECURITY.md).

use std::path::PathBuf;

use crate::error::EngineError;
use crate::run::context::RunContext;
use crate::snapshot::ObjectId;

/// Which of the two checkouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReviewCheckout {
    /// The reviewer's.
    Review,
    /// The Advisor's.
    Advice,
}

impl ReviewCheckout {
    fn name(self) -> &'static str {
        match self {
            Self::Review => breeze_git::REVIEW_CHECKOUT,
            Self::Advice => breeze_git::ADVICE_CHECKOUT,
        }
    }
}

/// The checkout `which` holding exactly `commit`, for a role about to run there. The
/// caller holds the checkout's lock until that role is done.
pub(super) async fn place(
    ctx: &RunContext,
    which: ReviewCheckout,
    commit: ObjectId,
) -> Result<PathBuf, EngineError> {
    let name = which.name();
    let path = ctx.repo.worktree_root()?.join(name);
    let started = std::time::Instant::now();
    let placed = ctx
        .placed_checkout(&path, move |repo, changes| repo.review_checkout(name, commit.0, changes))
        .await?;
    tracing::debug!(
        checkout = name,
        %commit,
        micros = started.elapsed().as_micros() as u64,
        "placed the review checkout"
    );
    Ok(placed)
}
