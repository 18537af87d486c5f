//! The names breeze gives things in a repository (its folders, the integration worktree,
//! branch refs) and the checks of worktree and branch names callers pass in.

use crate::error::GitError;

/// Folder of the primary checkout that holds only a note (`README`) naming the folder
/// breeze's worktrees are in, outside the checkout (`worktree_root.rs`). An earlier breeze
/// kept its worktrees here; those are retired (`elsewhere.rs`).
pub const WORKTREES_NOTE_DIR: &str = ".harness-worktrees";

/// Directory (under the primary checkout) that holds breeze's run state.
pub const STATE_DIR: &str = ".breeze";

/// Name of the detached worktree in which `land.verify` runs.
pub const INTEGRATION_WORKTREE: &str = "integration";

/// Name of the detached checkout the reviewer runs in: the reviewed commit's tracked
/// content and nothing else (no file a worker left in its lane).
pub const REVIEW_CHECKOUT: &str = "review";

/// Name of the detached checkout the Advisor runs in (as [`REVIEW_CHECKOUT`], for the
/// commit a consult is about; its own, so a consult never waits for a review).
pub const ADVICE_CHECKOUT: &str = "advice";

/// What the name of the preflight's throwaway checkout starts with (`setup-check-<pid>`,
/// in the worktree folder; `trial.rs`).
pub const TRIAL_CHECKOUT_PREFIX: &str = "setup-check-";

/// The detached checkouts breeze keeps beside the lanes: no task works in them. Beside
/// them, the further integration checkouts of the landing queue's speculative verifies
/// ([`integration_checkout_name`]); [`is_detached_checkout`] knows them all.
pub const DETACHED_CHECKOUTS: [&str; 3] = [INTEGRATION_WORKTREE, REVIEW_CHECKOUT, ADVICE_CHECKOUT];

/// The checkouts the reviewer and the Advisor run in (`integration.rs`).
pub(crate) const REVIEW_CHECKOUTS: [&str; 2] = [REVIEW_CHECKOUT, ADVICE_CHECKOUT];

/// The most integration checkouts: the landing queue verifies up to this many landings
/// side by side, each in a checkout of its own (`land.queue_depth` is 1 to this).
pub const MAX_INTEGRATION_CHECKOUTS: usize = 8;

/// The name of integration checkout `slot` (from 0): [`INTEGRATION_WORKTREE`], then
/// `integration-2`, `integration-3`, … (a slot past the last is the last's).
pub fn integration_checkout_name(slot: usize) -> String {
    match slot.min(MAX_INTEGRATION_CHECKOUTS - 1) {
        0 => INTEGRATION_WORKTREE.to_string(),
        slot => format!("{INTEGRATION_WORKTREE}-{}", slot + 1),
    }
}

/// Whether `name` is an integration checkout's ([`integration_checkout_name`]).
pub fn is_integration_checkout(name: &str) -> bool {
    (0..MAX_INTEGRATION_CHECKOUTS).any(|slot| integration_checkout_name(slot) == name)
}

/// Whether `name` is one of breeze's detached checkouts: an integration checkout, the
/// reviewer's or the Advisor's. No task works in them.
pub fn is_detached_checkout(name: &str) -> bool {
    DETACHED_CHECKOUTS.contains(&name) || is_integration_checkout(name)
}

/// The names of every detached checkout breeze may keep beside the lanes.
pub fn detached_checkout_names() -> Vec<String> {
    let integration = (0..MAX_INTEGRATION_CHECKOUTS).map(integration_checkout_name);
    integration.chain(REVIEW_CHECKOUTS.map(String::from)).collect()
}

/// File breeze writes into a worktree's admin directory (`.git/worktrees/<name>/`) once the
/// worktree is complete; git ignores unknown files there and deletes it with the worktree.
pub(crate) const CREATED_MARKER: &str = "breeze-created";

/// `.breeze/lanes/<lane>/sealed-main`: main's tip when the lane was last sealed (written
/// by `private_git.rs`, read by the guard).
pub(crate) const SEALED_MAIN: &str = "sealed-main";

/// What git never sees as work in a worktree of breeze's, whatever the project's
/// `.gitignore` says: interpreter caches that running the code writes next to it (Python's
/// `__pycache__/` folders). A worker or a check that runs the tests leaves them; they are
/// never a task's change. Gitignore patterns, for libgit2's in-memory rules.
pub(crate) const LANE_IGNORES: &str = "__pycache__/\n*.py[co]\n";

/// [`LANE_IGNORES`] as `git` CLI pathspecs (where the CLI stages and reads a lane).
pub(crate) const LANE_IGNORE_PATHSPECS: [&str; 3] =
    [".", ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]"];

/// `refs/heads/<branch>`.
pub(crate) fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// The ref a HEAD file's text names (`ref: refs/heads/x` gives `refs/heads/x`); `None`
/// for a detached HEAD.
pub(crate) fn symbolic_target(head_text: &str) -> Option<&str> {
    head_text.trim().strip_prefix("ref:").map(str::trim)
}

/// Checks a worktree name: a single safe path component.
pub(crate) fn validate_worktree_name(name: &str) -> Result<(), GitError> {
    let bad = |reason: &str| GitError::InvalidName {
        what: "worktree name",
        name: name.to_string(),
        reason: format!(
            "{reason}; use letters, digits, `.`, `_` and `-` only (for example \
             `task-<slug>` with `breeze_git::slug`)"
        ),
    };
    if name.is_empty() || name.len() > 100 {
        return Err(bad("it must be 1 to 100 bytes long"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(bad("it contains a character that is not allowed"));
    }
    if name.starts_with(['.', '-']) || name.contains("..") || name.ends_with(".lock") {
        return Err(bad("it may not start with `.` or `-`, contain `..` or end in `.lock`"));
    }
    Ok(())
}

/// Checks a local branch name (without `refs/heads/`).
pub(crate) fn validate_branch_name(branch: &str) -> Result<(), GitError> {
    if branch.starts_with('-')
        || branch == "HEAD"
        || !git2::Reference::is_valid_name(&branch_ref(branch))
    {
        return Err(GitError::InvalidName {
            what: "branch name",
            name: branch.to_string(),
            reason: "it is not a valid git branch name (see `git check-ref-format --branch`); \
                     use `task/<slug>` with `breeze_git::slug`"
                .to_string(),
        });
    }
    Ok(())
}
