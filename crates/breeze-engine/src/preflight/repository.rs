//! What the repository must give a run before anything is created: a branch to land on
//! (the one checked out), a commit to start from, a folder for the lanes outside the
//! checkout; and, for `breeze doctor`, the lanes kept between runs.

use breeze_git::Repo;
use breeze_protocol::CheckOutcome;

use super::found::Preflight;
use crate::config::Config;

/// The branch a new run lands on: the one the checkout is on (its plan is read there);
/// a detached HEAD, or `run.main_branch` naming another, is a problem.
pub(super) fn landing_branch_check(found: &mut Preflight, repo: &Repo, config: &Config) {
    let decided = repo
        .checked_out()
        .map_err(|err| crate::target_branch::Refused {
            message: format!("cannot tell which branch the checkout is on: {err}"),
            hint: "check the repository with `git status`".into(),
        })
        .and_then(|at| crate::target_branch::decide(&at, &config.main_branch));
    match decided {
        Ok(branch) => found.push(
            "landing",
            &branch,
            CheckOutcome::Ok,
            format!("a run lands on `{branch}`, the branch the checkout is on"),
            None,
        ),
        Err(refused) => found.push(
            "landing",
            "HEAD",
            CheckOutcome::Problem,
            refused.message,
            Some(refused.hint),
        ),
    }
}

/// Whether the repository has a commit: a run starts every task from the tip of the branch
/// it lands on, so a repository without one is a problem that says to commit first.
pub(super) fn first_commit_check(found: &mut Preflight, repo: &Repo) -> bool {
    let Err(breeze_git::GitError::NoCommits { .. }) = repo.main_tip() else { return true };
    found.push(
        "repository",
        "commits",
        CheckOutcome::Problem,
        "the repository has no commit yet: a run starts each task from the tip of the branch it lands on, and lands there",
        Some("commit what is there first — `git add -A && git commit -m \"Initial commit\"` (or `git commit --allow-empty -m init` to start empty) — then run again".into()),
    );
    false
}

/// The folder the run's worktrees go in (`[worktree] root`, else breeze's data folder):
/// a problem when there is none (no `HOME`) or it is inside the checkout.
pub(super) fn worktree_folder_check(found: &mut Preflight, repo: &Repo) {
    match repo.worktree_root() {
        Ok(root) => found.push(
            "worktrees",
            root.display().to_string(),
            CheckOutcome::Ok,
            format!("lanes live in {}, outside the checkout", root.display()),
            None,
        ),
        Err(err) => found.push(
            "worktrees",
            "worktree.root",
            CheckOutcome::Problem,
            err.to_string(),
            Some("set `[worktree] root` in breeze.toml to an absolute folder outside the checkout (e.g. \"~/breeze-worktrees\"), or set HOME".into()),
        ),
    }
}

/// The lanes kept between runs and what they take on disk (measured again for a lane
/// parked since its last measure).
pub(super) fn kept_lane_checks(found: &mut Preflight, repo: &Repo) {
    for mut lane in crate::lane_record::kept_lanes(repo) {
        lane.disk_use_refreshed(repo.workdir());
        found.push(
            "lane",
            lane.name.clone(),
            CheckOutcome::Ok,
            format!("kept lane {}", lane.describe()),
            Some("the next run reuses it; `breeze clean` removes it".into()),
        );
    }
}
