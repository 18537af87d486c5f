//! Where a run's worktrees go — the folder `[worktree] root` names, else breeze's data
//! folder (`$XDG_DATA_HOME/breeze/worktrees/<repo-key>`): outside the person's checkout,
//! where the project's own tools never see a lane — and, when a run starts, what becomes
//! of the worktrees breeze made elsewhere before (an earlier breeze's in the checkout's
//! `.harness-worktrees/`, or those of a folder configured before): each that holds nothing
//! uncommitted is removed, its branch kept; one holding uncommitted work stays where it is,
//! and the person is told, once, at the start.

use breeze_git::{RemoveOutcome, Repo, Worktree, WorktreeRoot};

use crate::config::Config;

/// The worktree folder `config` asks for.
pub fn choice(config: &Config) -> WorktreeRoot {
    match &config.worktree_root {
        Some(folder) => WorktreeRoot::Under(folder.clone()),
        None => WorktreeRoot::Default,
    }
}

/// Makes `repo`'s worktree folder (and the checkout's note naming it), then retires the
/// worktrees breeze made outside it (see the module docs); what the person should know. On `resumed` runs the work a lane of the interrupted
/// run holds is first committed on its task branch (as a resumed run does with its own
/// lanes), so that the task goes on from it in a lane of the new folder.
pub(crate) fn retire_elsewhere(repo: &Repo, resumed: bool) -> Vec<String> {
    // The folder and the checkout's note naming it, before anything else.
    if let Err(err) = repo.prepare_worktree_folder() {
        return vec![format!("cannot prepare the folder of breeze's worktrees: {err}")];
    }
    let elsewhere = match repo.worktrees_elsewhere() {
        Ok(elsewhere) => elsewhere,
        Err(err) => return vec![format!("cannot list the worktrees breeze made before: {err}")],
    };
    let mut removed = Vec::new();
    let mut notices = Vec::new();
    for wt in &elsewhere {
        if resumed && !wt.branch.is_empty() {
            commit_left_work(repo, wt);
        }
        match repo.retire_worktree(wt) {
            Ok(RemoveOutcome::KeptDirty { paths }) => notices.push(kept(wt, &paths)),
            Ok(_) => removed.push(wt.path.display().to_string()),
            Err(err) => notices.push(format!("cannot remove {}: {err}", wt.path.display())),
        }
    }
    if !removed.is_empty() {
        let here = repo.worktree_root().map(|root| format!(", in {}", root.display()));
        notices.insert(
            0,
            format!(
                "breeze keeps its worktrees outside the checkout{}, where the project's own tools (test runners, compilers, indexers) do not see them: removed {} that breeze made before (their branches stay)",
                here.unwrap_or_default(),
                removed.join(", ")
            ),
        );
    }
    notices
}

/// What the person is told of `wt`, kept for the uncommitted work in `paths`.
fn kept(wt: &Worktree, paths: &[String]) -> String {
    let branch = match wt.branch.as_str() {
        "" => String::new(),
        branch => format!(" on its branch `{branch}`"),
    };
    format!(
        "kept {}, a worktree breeze made before (where the project's own tools may see it): it holds uncommitted changes in {} file(s) ({}); commit them{branch} or save them elsewhere, then `breeze clean` removes it — `breeze clean --force` discards them",
        wt.path.display(),
        paths.len(),
        paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
    )
}

/// Commits what the interrupted run's lane `wt` holds on its branch, after pointing its
/// `.git` back at its admin folder (a killed run may have left it sealed for its worker).
fn commit_left_work(repo: &Repo, wt: &Worktree) {
    let committed = repo
        .check_lane_links(wt)
        .and_then(|_| repo.commit_worktree(wt, "breeze: work left by an interrupted run"));
    if let Err(err) = committed {
        tracing::warn!("{}: {err}; kept as it is", wt.path.display());
    }
}
