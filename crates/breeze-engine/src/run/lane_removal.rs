//! Removing a lane's worktree — never one holding uncommitted changes — and saying what
//! was found in a lane: shared by a task moving its lane to a new worktree and by the
//! tidying up after a run.

use std::path::Path;

use breeze_git::{GitError, RemoveOutcome};
use breeze_protocol::EventKind;
use breeze_supervise::TreeChanges;

use super::context::RunContext;

/// Removes lane worktree `path` unless it holds uncommitted changes (then nothing is
/// touched); a removal is journaled.
///
/// The check for uncommitted changes looks at what the lane's watch saw change since the
/// lane last agreed with git (and at its index), or — a lane no longer watched — at every
/// file of the worktree.
pub(crate) async fn remove_lane(ctx: &RunContext, path: &Path) -> Result<RemoveOutcome, GitError> {
    let watch = ctx.roles.watches.get(path);
    let changes = watch.as_ref().map_or_else(TreeChanges::unknown, |watch| watch.changes());
    // The folder goes: its watch stops first (it would only report the removal).
    ctx.roles.watches.forget(path);
    drop(watch);
    let removed = ctx.repo.remove_worktree_changed(
        path,
        None,
        false,
        crate::roles::workdir_changes(&changes),
    );
    if matches!(removed, Ok(RemoveOutcome::Removed { .. } | RemoveOutcome::NotFound { .. })) {
        journal_removal(ctx, path.display().to_string(), None).await;
    }
    removed
}

/// Journals the removal of a worktree at `path` (empty: none) or of `branch`.
pub(crate) async fn journal_removal(ctx: &RunContext, path: String, branch: Option<String>) {
    if let Err(err) = ctx.book.journal(EventKind::WorktreeRemoved { path, branch }).await {
        tracing::warn!("{err}");
    }
}

/// `3 file(s) (a, b, c)`: how many, and the first few.
pub(crate) fn files(paths: &[String]) -> String {
    format!(
        "{} file(s) ({})",
        paths.len(),
        paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
    )
}

/// Says what was found written in lane `wt` that git ignores after its task's last step
/// (`removed`, already removed): nothing should write a lane then — a process a role left
/// behind where the kernel cannot end it with its role, or a person.
pub(crate) fn late_writes(wt: &breeze_git::Worktree, removed: Vec<String>) {
    if !removed.is_empty() {
        tracing::warn!(
            lane = %wt.name,
            "written in the lane after its task's last step and ignored by git, removed before the lane is used again: {}",
            crate::advice::bound_text(&removed.join(", "), 2000)
        );
    }
}
