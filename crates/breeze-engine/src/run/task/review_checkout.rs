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
//! Between runs each is parked at main's tip with a record as a lane's (`lane_record`):
//! a later run's first placing watches the recorded folders instead of looking at every
//! file.

use std::path::{Path, PathBuf};

use crate::error::EngineError;
use crate::lane_record::{self, LaneRecord};
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
    adopt_parked(ctx, name, &path).await?;
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

/// The first placing of the checkout `name` at `path` in this run: when an earlier run
/// parked it and its top folder is as parked, it is watched from the folders recorded then
/// (the placing then looks only at the recorded folders that are gone); otherwise the
/// placing makes a full pass, as without a watch. Its record says "in use" from now on, so
/// that a run stopped while placing it leaves no promise behind.
async fn adopt_parked(
    ctx: &RunContext,
    name: &'static str,
    path: &Path,
) -> Result<(), EngineError> {
    if ctx.roles.watches.get(path).is_some() {
        return Ok(());
    }
    let (root, run_id) = (ctx.repo.workdir().to_path_buf(), ctx.run_id.clone());
    let (watches, path) = (ctx.roles.watches.clone(), path.to_path_buf());
    ctx.blocking(move || {
        let Some(record) = lane_record::load(&root, name) else { return Ok(()) };
        let known = Some(&record)
            .filter(|record| record.state == lane_record::LaneState::Parked)
            .and_then(|record| record.known_folders(&path));
        lane_record::save(&root, name, &LaneRecord::in_use(&run_id, None));
        if let Some(known) = known {
            watches.watch_known(&path, &known);
        }
        Ok(())
    })
    .await
}

/// Records the checkout `name` at `path` as parked at `tip` with the folders its watch
/// knows, for the next run's [`adopt_parked`].
pub(crate) async fn record_parked(ctx: &RunContext, name: &'static str, path: &Path, tip: String) {
    let known = ctx.roles.watches.get(path).and_then(|watch| watch.folders());
    let (root, run_id, path) =
        (ctx.repo.workdir().to_path_buf(), ctx.run_id.clone(), path.to_path_buf());
    let recorded = ctx
        .blocking(move || {
            let record = LaneRecord::parked(&run_id, None, tip, &path, known.as_ref());
            lane_record::save(&root, name, &record);
            Ok(())
        })
        .await;
    if let Err(err) = recorded {
        tracing::warn!("cannot record the parked checkout {name}: {err}");
    }
}
