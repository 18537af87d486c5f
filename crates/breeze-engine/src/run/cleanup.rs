//! After a finished run: the lane worktrees go (clean ones), the integration worktree goes,
//! and landed tasks' branches go unless they moved on. Escalated tasks keep their branches:
//! their work lives there. Nothing with work in it is removed without saying so.

use breeze_git::{BranchCleanup, RemoveOutcome, Worktree};
use breeze_protocol::EventKind;
use breeze_supervise::TreeChanges;

use super::context::RunContext;
use crate::progress::ProgressEvent;
use crate::snapshot::{TaskPhase, TaskRecord};

/// Cleans up after a finished run (problems are logged, not fatal: the work is on main).
pub(super) async fn after_run(ctx: &RunContext) {
    let lanes: Vec<Worktree> =
        ctx.lanes.lock().unwrap_or_else(|p| p.into_inner()).iter().flatten().cloned().collect();
    for worktree in lanes {
        remove_lane(ctx, worktree).await;
    }
    // The verify command's worktree holds nothing of anyone's: it goes, whatever it holds.
    let integration = ctx.repo.worktree_root().join(breeze_git::INTEGRATION_WORKTREE);
    if integration.exists()
        && let Err(err) = ctx.repo.remove_worktree(&integration, None, true)
    {
        tracing::warn!("cannot remove {}: {err}", integration.display());
    }
    let landed: Vec<TaskRecord> = ctx.book.read(|snapshot| {
        snapshot.tasks.iter().filter(|record| record.phase == TaskPhase::Landed).cloned().collect()
    });
    for record in landed {
        delete_branch(ctx, &record).await;
    }
}

/// Removes a lane's worktree unless it holds uncommitted changes (then it is kept, and the
/// user is told).
///
/// The check for uncommitted changes looks at what the lane's watch saw change since the
/// lane last agreed with git (and at its index), not at every file of the worktree.
async fn remove_lane(ctx: &RunContext, worktree: Worktree) {
    let watch = ctx.roles.watches.get(&worktree.path);
    let changes = watch.as_ref().map_or_else(TreeChanges::unknown, |watch| watch.changes());
    // The folder goes: its watch stops first (it would only report the removal).
    ctx.roles.watches.forget(&worktree.path);
    drop(watch);
    let removed = ctx.repo.remove_worktree_changed(
        &worktree.path,
        None,
        false,
        crate::roles::workdir_changes(&changes),
    );
    match removed {
        Ok(RemoveOutcome::KeptDirty { paths }) => ctx.book.report(ProgressEvent::Kept {
            what: format!("lane {}", worktree.path.display()),
            reason: format!(
                "it has uncommitted changes in {} file(s) ({}); `breeze clean --force` discards them",
                paths.len(),
                paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            ),
        }),
        Ok(_) => journal(ctx, worktree.path.display().to_string(), None).await,
        Err(err) => tracing::warn!("cannot remove {}: {err}", worktree.path.display()),
    }
}

/// Deletes a landed task's branch unless it moved on after the landing.
async fn delete_branch(ctx: &RunContext, record: &TaskRecord) {
    let Some(branch) = &record.branch else { return };
    match ctx.repo.delete_branch_if_landed(branch, record.head.map(|head| head.0)) {
        Ok(BranchCleanup::Deleted) => journal(ctx, String::new(), Some(branch.clone())).await,
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
        Err(err) => tracing::warn!("cannot delete branch {branch}: {err}"),
    }
}

async fn journal(ctx: &RunContext, path: String, branch: Option<String>) {
    if let Err(err) = ctx.book.journal(EventKind::WorktreeRemoved { path, branch }).await {
        tracing::warn!("{err}");
    }
}
