//! The git layer of breeze, built on libgit2 (`git2`).
//!
//! The engine calls these operations, each on real repositories:
//!
//! - **Worktrees**: [`Repo::create_worktree`] makes `<worktree folder>/<name>` on a new
//!   branch at a base commit, locked with a reason naming the run, idempotent and rolled
//!   back completely on failure. The worktree folder ([`Repo::worktree_root`],
//!   [`WorktreeRoot`]) is outside the checkout — `$XDG_DATA_HOME/breeze/worktrees/<repo-key>`
//!   by default — where the project's own tools never look; the checkout's
//!   `.harness-worktrees/README` names it, and [`Repo::worktrees_elsewhere`] /
//!   [`Repo::retire_worktree`] retire what an earlier breeze made in the checkout; [`Repo::move_worktree`] moves a lane's worktree to the next
//!   task's base writing only the differing files; [`Repo::list_worktrees`],
//!   [`Repo::remove_worktree`] (dirty ones kept unless forced), [`Repo::provision`] (copy
//!   ignored files such as `.env`), [`slug`] (safe names for any task id).
//! - **After a worker**: [`Repo::commit_worktree`], [`Repo::changed_paths`] (rename-aware),
//!   [`Repo::diff_patch`] (rendered by breeze from each file's bytes, whatever
//!   `.gitattributes` says) and [`Repo::run_gates`] (five mechanical gates that fail, and
//!   `agent-config` and `opaque-content`, which ask the reviewer to look), all three from one
//!   diff in [`Repo::change_for_review`] (what a review round takes). [`agent_config`]
//!   knows the paths agent CLIs read as instructions and settings.
//! - **Sealed lanes**: [`Repo::seal_lane`] gives a worker's git the lane's private git
//!   directory (shared objects as a read-only alternate, its own index and refs);
//!   [`Repo::check_lane_links`] points the lane back at its admin folder and removes what a
//!   role planted there.
//! - **Landing**: [`Repo::merge_task`] (three-way, in memory), [`Repo::replace_in_tree`]
//!   (Plans.md flip), [`Repo::write_landing_commit`] with [`landing_commit_message`],
//!   [`Repo::integration_worktree`] for `land.verify`, [`Repo::advance_main`]
//!   (compare-and-swap plus a safe fast-forward of the user's checkout, every path replaced
//!   atomically; [`Repo::advance_main_observed`] tells a [`CheckoutObserver`] before the
//!   first path), [`Repo::rebase_worktree_with_conflicts`] and [`Repo::find_landing`].
//! - **Remotes** (`[land] to = "remote"` / `"pull-request"`): [`Repo::fetch_branch`],
//!   [`Repo::push_with_lease`] and [`Repo::remote_branch_tip`] through the `git` CLI with
//!   the user's own setup ([`RemoteAccess`]); [`Repo::find_change`] finds a task's change on
//!   a branch others merge into (the commit, its trailers, or its patch id).
//! - **Resume**: [`Repo::finish_checkout_update`] finishes or undoes an update of the
//!   user's checkout that a kill cut short; [`Repo::remove_landing_leftovers`].
//!
//! libgit2's gaps are handled up front: SHA-256, reftable, partial-clone, sparse-checkout
//! and sparse/split-index repositories are refused by [`Repo::open`] with what to do;
//! repositories with external filters (git-lfs) and large full checkouts use the `git` CLI,
//! which is the only use of it (see [`Repo::external_filters`]) besides the preflight's
//! throwaway checkout ([`Repo::trial_checkout`]: a detached worktree, no branch).
//!
//! # Modules
//!
//! The files form layers; a file imports from its own layer or those below it, never from
//! one above, and no two files import each other. From the bottom:
//!
//! 1. **Leaves** — `error` ([`GitError`] and the reasons some variants carry), `names`
//!    (breeze's folders, refs and name checks), `state` (index entries set to a tree's, the
//!    mid-merge check), `support` (what libgit2 cannot open), `bounds` (the size limit
//!    and the stop signal), `untrusted` (files a role could have written: no link
//!    followed, no FIFO opened, bounded), `direct_write` (large files written around the
//!    page cache), `objects` (a commit's tree, the identity breeze
//!    commits as), `landing_message` (the landing commit's message and trailers), `content`
//!    (what bytes are to a reader), `file_patch` (one file's change rendered from its
//!    bytes), `disjoint_merge` (the landing merge of sides that changed different paths),
//!    `agent_config`, `slug`, `init`.
//! 2. **Tools** — `paths` (repository paths as bytes, file-system helpers), `handles` (the
//!    pool of libgit2 handles), `git_cli` (the `git` command, hooks off).
//! 3. **Mechanisms, without a `Repo`**: each takes what it needs as arguments —
//!    `index_file` (a checkout's index re-read, and written by breeze itself: the lanes',
//!    the review checkout's and, at a landing, the user's), `libgit2_checkout` (libgit2's side of checkouts,
//!    staging and status),
//!    `checkout_update` (replacing a checkout's paths and index atomically), `baseline` (a
//!    lane's baseline: what it holds, its file), `lane_files` (the `lstat` pass over what a
//!    role wrote), `stage` (libgit2's staging), `diff_sides` and `diff` (diffs found and
//!    rendered from each file's bytes), `merge_check` (the check of every landing merge)
//!    and `merge` (libgit2's merge, checked), `worktree_root` (where the worktrees live);
//!    on top of them `checkout_tool`, which chooses libgit2 or the `git` CLI for each
//!    checkout operation, once per repository.
//! 4. **`repo`** — the [`Repo`]: opening a repository (refusing what libgit2 cannot
//!    handle, choosing its `checkout_tool` then or at its first need), its settings and
//!    its pool of handles.
//! 5. **Operations** — `impl Repo` blocks, one concern each: `worktree` (breeze's
//!    worktrees as they are, and the [`Worktree`] type the others take), `create`, `lane`
//!    (moving lanes), `lane_baseline`, `branch`, `provision`, `integration`, `trial`,
//!    `elsewhere` (retiring worktrees made outside the folder), `private_git`,
//!    `lane_links`, `guard` (what roles must leave alone), `ignored_writes`, `unfinished_writes`, `commit`,
//!    `task_change` (changed paths, the reviewer's patch, `breeze diff`), `gates`, `land`,
//!    `advance` (moving main and the user's checkout), `landing_recovery`, `rebase`,
//!    `remote`, `landed_on`, `listing`. They import no other operation file but
//!    `worktree`, for the [`Worktree`] they take.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod advance;
pub mod agent_config;
mod baseline;
mod bounds;
mod branch;
mod checkout_tool;
mod checkout_update;
mod commit;
mod content;
mod create;
mod diff;
mod diff_sides;
mod direct_write;
mod disjoint_merge;
mod elsewhere;
mod error;
mod file_patch;
mod file_stamp;
mod gates;
mod git_cli;
mod guard;
mod handles;
mod ignored_writes;
mod index_behind;
mod index_entries;
mod index_file;
mod index_in_place;
mod index_tree;
mod init;
mod integration;
mod land;
mod landed_on;
mod landing_message;
mod landing_recovery;
mod lane;
mod lane_baseline;
mod lane_files;
mod lane_links;
mod libgit2_checkout;
mod listing;
mod merge;
mod merge_check;
mod names;
mod objects;
mod paths;
mod preload;
mod private_git;
mod provision;
mod rebase;
mod remote;
mod repo;
mod slug;
mod stage;
mod state;
mod support;
mod task_change;
mod tree_memo;
mod trial;
mod unfinished_writes;
mod untrusted;
mod worktree;
mod worktree_root;

pub use advance::AdvanceOutcome;
pub use agent_config::is_agent_config;
pub use bounds::DEFAULT_MAX_FILE_BYTES;
pub use branch::BranchCleanup;
pub use checkout_tool::DEFAULT_CLI_CHECKOUT_MIN_FILES;
pub use checkout_update::{CheckoutObserver, CheckoutUpdate};
pub use commit::CommitOutcome;
pub use diff::{ChangeKind, ChangeTip, ChangeView, EntryMode, PathChange, text_patch};
pub use error::{GitError, SpecialNode, WorktreeRootProblem};
pub use gates::{
    ChangeForReview, GATE_AGENT_CONFIG, GATE_FILE_SIZE, GATE_FILE_TYPE, GATE_NESTED_REPO,
    GATE_OPAQUE_CONTENT, GATE_PLANS_MARKERS, GATE_SYMLINK_ESCAPE, GATE_WRITE_SET, GateConfig,
};
pub use git2::Oid;
pub use guard::{Fingerprint, LaneCommitOnMain};
pub use init::{commit_on_head, init_with_commit};
pub use land::{MergeOutcome, RunLandings};
pub use landed_on::{FoundBy, TaskChange};
pub use landing_message::{
    LANDED_SCAN_LIMIT, ReviewTrailer, TRAILER_REVIEW, TRAILER_RUN, TRAILER_TASK,
    landing_commit_message, landing_message,
};
pub use landing_recovery::CheckoutRecovery;
pub use listing::FileListing;
pub use names::{
    ADVICE_CHECKOUT, DETACHED_CHECKOUTS, INTEGRATION_WORKTREE, MAX_INTEGRATION_CHECKOUTS,
    REVIEW_CHECKOUT, STATE_DIR, TRIAL_CHECKOUT_PREFIX, WORKTREES_NOTE_DIR, detached_checkout_names,
    integration_checkout_name, is_detached_checkout, is_integration_checkout,
};
pub use objects::{FALLBACK_EMAIL, FALLBACK_NAME};
pub use paths::WorkdirChanges;
pub use provision::ProvisionReport;
pub use rebase::ConflictedRebase;
pub use remote::{PushOutcome, RemoteAccess, RemoteBranch};
pub use repo::{CheckedOut, OpenOptions, Repo};
pub use slug::slug;
pub use trial::TrialCheckout;
pub use unfinished_writes::is_unfinished_agent_write;
pub use worktree::{RemoveOutcome, Worktree, WorktreeInfo};
pub use worktree_root::{WORKTREES_NOTE, WorktreeRoot, default_worktrees_folder, repo_key};

impl Repo {
    /// Safe slug for a task id; see [`slug`]. Kept as an associated function because the
    /// engine reaches everything git-related through `Repo`.
    pub fn slug(task_id: &str) -> String {
        slug(task_id)
    }
}
