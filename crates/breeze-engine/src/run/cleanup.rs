//! After a finished run: each lane's worktree is parked at main's tip for the next run
//! (`worktree.keep_lanes`, the default; otherwise it goes, when clean), a worktree the run
//! left for a new one goes, the integration worktree goes, and landed tasks' branches go
//! unless they moved on. Escalated tasks keep their branches: their work lives there.
//! Nothing with work in it is removed without saying so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use breeze_git::{BranchCleanup, GitError, RemoveOutcome};
use breeze_protocol::EventKind;
use breeze_supervise::TreeChanges;

use super::context::RunContext;
use super::lane_removal::{files, journal_removal, late_writes, remove_lane};
use crate::journal::for_each_event;
use crate::progress::ProgressEvent;
use crate::snapshot::{TaskPhase, TaskRecord};

/// Cleans up after a finished run (problems are logged, not fatal: the work is on main).
pub(super) async fn after_run(ctx: &RunContext) {
    let current: Vec<breeze_git::Worktree> = {
        let lanes = ctx.lanes.lock().unwrap_or_else(|p| p.into_inner());
        lanes.iter().flatten().cloned().collect()
    };
    for path in lanes_used(ctx) {
        let kept = current.iter().find(|lane| lane.path == path && ctx.config.keep_lanes);
        if let Some(lane) = kept {
            park_lane(ctx, lane).await;
            continue;
        }
        match remove_lane(ctx, &path).await {
            Ok(RemoveOutcome::KeptDirty { paths }) => ctx.book.report(ProgressEvent::Kept {
                what: format!("lane {}", path.display()),
                reason: format!(
                    "it has uncommitted changes in {}; `breeze clean --force` discards them",
                    files(&paths)
                ),
            }),
            Ok(_) => {}
            Err(err) => tracing::warn!("cannot remove {}: {err}", path.display()),
        }
    }
    // The verify command's worktrees hold nothing of anyone's: they go, whatever they hold.
    for slot in 0..breeze_git::MAX_INTEGRATION_CHECKOUTS {
        let name = breeze_git::integration_checkout_name(slot);
        let Ok(integration) = ctx.repo.worktree_root().map(|root| root.join(name)) else { break };
        if integration.exists()
            && let Err(err) = ctx.repo.remove_worktree(&integration, None, true)
        {
            tracing::warn!("cannot remove {}: {err}", integration.display());
        }
    }
    for name in [breeze_git::REVIEW_CHECKOUT, breeze_git::ADVICE_CHECKOUT] {
        park_review_checkout(ctx, name).await;
    }
    let landed: Vec<TaskRecord> = ctx.book.read(|snapshot| {
        snapshot.tasks.iter().filter(|record| record.phase == TaskPhase::Landed).cloned().collect()
    });
    for record in landed {
        delete_branch(ctx, &record).await;
    }
}

/// Parks the review checkout `name` at main's tip for the next run, as lanes are (it holds
/// only what breeze wrote there: the next run's first review moves it by the paths that
/// differ, watched from the folders recorded now) — or removes it when lanes are not kept.
/// One this run never placed is left as it is: without a watch of this run, parking it
/// would look at every file (0.7 s at 100,000 files), and the next run that uses it
/// moves it from where it is (a full pass, only if no earlier run parked it).
async fn park_review_checkout(ctx: &RunContext, name: &'static str) {
    let Ok(path) = ctx.repo.worktree_root().map(|root| root.join(name)) else { return };
    if !path.exists() {
        return;
    }
    if ctx.config.keep_lanes && ctx.roles.watches.get(&path).is_none() {
        return;
    }
    let done = match (ctx.config.keep_lanes, ctx.repo.main_tip()) {
        (true, Ok(tip)) => {
            let placed = ctx
                .placed_checkout(&path, move |repo, changes| {
                    repo.park_review_checkout(name, tip, changes)
                })
                .await;
            if placed.is_ok() {
                crate::run::task::record_parked_checkout(ctx, name, &path, tip.to_string()).await;
            }
            placed.map(drop)
        }
        (true, Err(err)) => Err(err.into()),
        (false, _) => ctx.repo.remove_worktree(&path, None, true).map(drop).map_err(Into::into),
    };
    ctx.roles.watches.forget(&path);
    if let Err(err) = done {
        tracing::warn!("cannot park or remove {}: {err}", path.display());
    }
}

/// Every lane worktree the run used and has not removed: each lane's worktree now, and
/// the ones the journal says it took and left for a new one (a lane that could not be
/// moved to its next task) — none of them may outlive a finished run unnoticed.
fn lanes_used(ctx: &RunContext) -> Vec<PathBuf> {
    let mut used: BTreeSet<PathBuf> = BTreeSet::new();
    let _ = for_each_event(&ctx.run_dir.events(), |event| match event.event {
        EventKind::WorktreeCreated { path, .. } => {
            used.insert(PathBuf::from(path));
        }
        EventKind::WorktreeRemoved { path, .. } => {
            used.remove(Path::new(&path));
        }
        _ => {}
    });
    let lanes = ctx.lanes.lock().unwrap_or_else(|p| p.into_inner());
    used.extend(lanes.iter().flatten().map(|worktree| worktree.path.clone()));
    used.into_iter().collect()
}

/// Parks the lane `lane` at main's tip, detached (its task branch free to go, ignored
/// build outputs and its baseline kept), and records it as parked with the folders its
/// watch knew and its top folder's times, so that the next run takes it without listing
/// it (`lane_record`). A lane with
/// uncommitted changes stays as it is, and the user is told.
async fn park_lane(ctx: &RunContext, lane: &breeze_git::Worktree) {
    let watch = ctx.roles.watches.get(&lane.path);
    let changes = watch.as_ref().map_or_else(TreeChanges::unknown, |watch| watch.changes());
    let (wt, tip) = (lane.clone(), ctx.repo.main_tip());
    let parked = match tip {
        Ok(tip) => {
            let changes = changes.clone();
            ctx.git(move |repo| {
                let changes = crate::roles::workdir_changes(&changes);
                let late =
                    repo.remove_ignored_writes(&wt, changes, &breeze_git::is_agent_config)?;
                late_writes(&wt, late);
                repo.park_worktree(&wt, tip, changes)
            })
            .await
        }
        Err(err) => Err(err.into()),
    };
    // The watch ends with the run; the folders it watched are recorded for the next one.
    let known = match (&parked, &watch) {
        (Ok(_), Some(watch)) => watch.folders(),
        _ => None,
    };
    ctx.roles.watches.forget(&lane.path);
    drop(watch);
    match parked {
        Ok(parked) => {
            let root = ctx.repo.workdir().to_path_buf();
            let (run_id, name, path) = (ctx.run_id.clone(), lane.name.clone(), lane.path.clone());
            let head = parked.base.to_string();
            let recorded = ctx
                .blocking(move || {
                    let before = crate::lane_record::load(&root, &name);
                    let record = crate::lane_record::LaneRecord::parked(
                        &run_id,
                        before,
                        head,
                        &path,
                        known.as_ref(),
                    );
                    crate::lane_record::save(&root, &name, &record);
                    Ok(())
                })
                .await;
            if let Err(err) = recorded {
                tracing::warn!("{}: {err}", lane.path.display());
            }
        }
        Err(crate::error::EngineError::Git(GitError::Dirty { paths, .. })) => {
            ctx.book.report(ProgressEvent::Kept {
                what: format!("lane {}", lane.path.display()),
                reason: format!(
                    "it has uncommitted changes in {}, so it stays on its branch `{}` and the next run does not reuse it; `breeze clean --force` discards them",
                    files(&paths),
                    lane.branch
                ),
            });
        }
        // Anything else that keeps it from being parked (a merge left in it, a broken
        // HEAD): it stays as it is, and the user hears why.
        Err(err) => ctx.book.report(ProgressEvent::Kept {
            what: format!("lane {}", lane.path.display()),
            reason: format!(
                "it cannot be parked at main's tip ({err}), so the next run does not reuse it; `breeze clean` removes it once that is fixed, `breeze clean --force` at once"
            ),
        }),
    }
}

/// Deletes a landed task's branch unless it moved on after the landing.
async fn delete_branch(ctx: &RunContext, record: &TaskRecord) {
    let Some(branch) = &record.branch else { return };
    match ctx.repo.delete_branch_if_landed(branch, record.head.map(|head| head.0)) {
        Ok(BranchCleanup::Deleted) => journal_removal(ctx, String::new(), Some(branch.clone())).await,
        Ok(BranchCleanup::Missing) => {}
        Ok(BranchCleanup::Kept { tip }) => ctx.book.report(ProgressEvent::Kept {
            what: format!("branch {branch}"),
            reason: format!(
                "it moved on to {} after task {} landed; see `git log {}..{branch}`",
                &tip.to_string()[..12],
                record.id,
                ctx.repo.main_branch()
            ),
        }),
        // Its lane was kept above (changes in it): the branch goes with it, in `breeze clean`.
        Err(GitError::BranchCheckedOut { path, .. }) => ctx.book.report(ProgressEvent::Kept {
            what: format!("branch {branch}"),
            reason: format!(
                "task {} landed from it, but it is checked out in {}; `breeze clean` deletes it once that worktree is gone",
                record.id,
                path.display()
            ),
        }),
        Err(err) => tracing::warn!("cannot delete branch {branch}: {err}"),
    }
}
