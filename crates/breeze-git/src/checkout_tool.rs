//! Who writes, stages and reads the checkouts of a repository: libgit2, or the `git` CLI.
//!
//! libgit2 never runs external filters (git-lfs is the common case): in a repository whose
//! `.gitattributes` name one, it would check out pointers instead of content, stage raw
//! content instead of pointers and see changes that are not there. There every checkout,
//! staging and status read goes through the `git` CLI. Elsewhere libgit2 does the work,
//! except fresh full checkouts of large trees, which `git read-tree -u` does about twice
//! as fast.
//!
//! The choice is made once, by [`CheckoutTool::choose`] when the repository is opened (or
//! at its first need, `OpenOptions::checkout_tool_later`); every operation asks
//! [`CheckoutTool`] instead of choosing itself. libgit2's side of each job is
//! in `libgit2_checkout.rs` and `stage.rs`, the `git` command is run by `git_cli.rs`; what
//! a role left that must not be read is found first (`lane_files.rs`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use git2::{Oid, Repository, Tree};

use crate::baseline::Baseline;
use crate::bounds::{Bounds, StopFlag};
use crate::error::{Context as _, GitError};
use crate::git_cli::{self, NoGit};
use crate::index_behind;
use crate::index_file::{self, fresh_index};
use crate::lane_files;
use crate::libgit2_checkout::{self, IndexFile, Mode, Versions};
use crate::names::branch_ref;
use crate::paths::{RepoPath, WorkdirChanges, display_all};
use crate::stage;

/// Below this many tracked files a fresh worktree is checked out by libgit2; from here on by
/// `git read-tree --reset -u HEAD`, which checks out about twice as fast (measured: 20k
/// files 0.27 s vs 0.55–0.88 s on tmpfs; see the crate README).
pub const DEFAULT_CLI_CHECKOUT_MIN_FILES: usize = 1000;

/// What a reset of a detached checkout does with ignored files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// They stay (build outputs of the integration worktree).
    Keep,
    /// They go: the checkout holds the commit's tracked content and nothing else.
    Remove,
}

/// The tool that writes, stages and reads checkouts.
#[derive(Debug)]
enum Tool {
    /// libgit2, in process. Fresh full checkouts of large trees still go through the CLI
    /// when it is available (see [`CheckoutTool::check_out_new`]).
    Libgit2,
    /// The `git` CLI, so that external filters run.
    GitCli {
        /// Why: the external filters found, for the engine to show.
        reason: String,
    },
}

/// What [`CheckoutTool::stage_all`] staged.
pub(crate) enum Staged {
    /// libgit2 staged these paths in the handle's index, in memory only (a folder's path
    /// stands for what is below it): the caller writes the index or notes it behind.
    InMemory(Vec<Vec<u8>>),
    /// The git CLI staged and wrote the index file; it does not say which paths.
    Written,
}

impl Staged {
    /// How many paths were staged (0 when the git CLI did: it does not say).
    pub(crate) fn count(&self) -> usize {
        match self {
            Staged::InMemory(paths) => paths.len(),
            Staged::Written => 0,
        }
    }
}

/// How this repository's checkouts are written, staged and read; see the module docs.
#[derive(Debug)]
pub(crate) struct CheckoutTool {
    tool: Tool,
    /// Tracked-file count from which a fresh full checkout goes through the `git` CLI
    /// when it is available.
    cli_checkout_min_files: usize,
    /// `Ok(version)` when a `git` executable runs, else why not; probed once.
    cli_probe: OnceLock<Result<String, NoGit>>,
}

impl CheckoutTool {
    /// Chooses for the repository `repo` (primary checkout at `workdir`, git directory
    /// `common_dir`): the `git` CLI when external filters are configured (refused when
    /// `git` cannot run), else libgit2. `main_tip` is where `.gitattributes` files are
    /// looked for.
    pub(crate) fn choose(
        repo: &Repository,
        workdir: &Path,
        common_dir: &Path,
        main_tip: Option<Oid>,
        cli_checkout_min_files: usize,
    ) -> Result<CheckoutTool, GitError> {
        let mut chosen = CheckoutTool {
            tool: Tool::Libgit2,
            cli_checkout_min_files,
            cli_probe: OnceLock::new(),
        };
        if let Some(filters) = detect_external_filters(repo, common_dir, main_tip) {
            if let Err(detail) = chosen.cli_version() {
                return Err(GitError::Unsupported {
                    path: workdir.to_path_buf(),
                    feature: format!("{filters} without a working `git` command ({detail})"),
                    todo: "libgit2 cannot run external filters, so breeze checks such \
                           repositories out with the git CLI: install git (and git-lfs) and \
                           make sure `git` is on PATH"
                        .to_string(),
                });
            }
            tracing::warn!(
                repo = %workdir.display(),
                "{filters}: worktrees are checked out and staged with the git CLI so the filter runs"
            );
            chosen.tool = Tool::GitCli { reason: filters };
        }
        Ok(chosen)
    }

    /// The external filters that make every checkout go through the `git` CLI, if any.
    pub(crate) fn external_filters(&self) -> Option<&str> {
        match &self.tool {
            Tool::GitCli { reason } => Some(reason),
            Tool::Libgit2 => None,
        }
    }

    /// `Ok(version)` when a `git` executable runs, else why not. Probed once.
    fn cli_version(&self) -> Result<&str, &NoGit> {
        self.cli_probe.get_or_init(git_cli::probe).as_deref()
    }

    /// Whether a fresh full checkout goes through the `git` CLI: always with external
    /// filters; with libgit2, when `git` runs and the primary checkout `repo` (at
    /// `workdir`) tracks at least `cli_checkout_min_files` files.
    fn full_checkout_by_cli(&self, repo: &Repository, workdir: &Path) -> bool {
        match self.tool {
            Tool::GitCli { .. } => true,
            Tool::Libgit2 if self.cli_version().is_err() => false,
            Tool::Libgit2 if self.cli_checkout_min_files == 0 => true,
            Tool::Libgit2 => fresh_index(repo, workdir)
                .map(|index| index.len() >= self.cli_checkout_min_files)
                .unwrap_or(false),
        }
    }

    /// Checks out the files of a worktree breeze has just registered (an empty folder `at`
    /// whose admin folder holds HEAD but no index yet), through `wrepo`, a handle opened on
    /// that admin folder: by libgit2 (no index: an initial checkout of all of HEAD), or by
    /// `git read-tree --reset -u HEAD` naming the admin folder for a large tree or external
    /// filters. `repo` is the primary checkout at `workdir`, whose size decides. A checkout
    /// by the `git` CLI is ended once `stop` is raised ([`GitError::Cancelled`]; the caller
    /// rolls the half-made worktree back).
    pub(crate) fn check_out_new(
        &self,
        repo: &Repository,
        workdir: &Path,
        wrepo: &Repository,
        at: &Path,
        stop: &StopFlag,
    ) -> Result<(), GitError> {
        if self.full_checkout_by_cli(repo, workdir) {
            let args = ["read-tree", "--reset", "-u", "HEAD"];
            return git_cli::run_in_stoppable(wrepo.path(), at, args, "check out a worktree", stop)
                .map(|_| ());
        }
        wrepo.checkout_head(None).ctx(|| format!("could not check out {}", at.display()))
    }

    /// Before the lane at `at` is looked at or committed: the entries a commit or a move
    /// left behind HEAD in its index file (`index_behind.rs`) are put right — in the
    /// handle's index for libgit2 (its status, and the checkout of a move after it, use
    /// that); in the file for the git CLI, which reads the file.
    pub(crate) fn index_ready(&self, wrepo: &Repository, at: &Path) -> Result<(), GitError> {
        match self.tool {
            Tool::GitCli { .. } => index_behind::settle(wrepo, at),
            Tool::Libgit2 => index_behind::apply(wrepo, at).map(|_| ()),
        }
    }

    /// Paths of the checkout at `at` (handle `repo`) with uncommitted changes: staged,
    /// modified, deleted, conflicted or untracked (not ignored), sorted. Ignored files
    /// (build outputs, provisioned `.env`) do not count. With [`WorkdirChanges::Only`]
    /// libgit2 looks at those paths of the working tree only (the `git` CLI always looks
    /// at all of it: its filters decide what changed).
    ///
    /// Files above the size limit and FIFOs, sockets or devices (found from `lstat`,
    /// [`lane_files::find_unreadable`]) are the answer when there are any: a status could
    /// read them.
    ///
    /// Paths that hold their state in the lane's `baseline` (what breeze's own steps left)
    /// do not count.
    pub(crate) fn dirty_paths(
        &self,
        repo: &Repository,
        at: &Path,
        changes: WorkdirChanges<'_>,
        bounds: &Bounds,
        baseline: &Baseline,
    ) -> Result<Vec<String>, GitError> {
        let unreadable =
            lane_files::find_unreadable(repo, at, changes, bounds)?.without_baseline(baseline, at);
        if !unreadable.is_empty() {
            return Ok(unreadable.paths());
        }
        let mut paths = self.status_paths(repo, at, changes)?;
        if !baseline.is_empty() {
            paths.retain(|path| !baseline.holds(at, path));
        }
        Ok(paths)
    }

    /// The paths of the checkout at `at` that differ from its index or its index from
    /// HEAD, untracked ones included, ignored ones not; see [`CheckoutTool::dirty_paths`].
    pub(crate) fn status_paths(
        &self,
        repo: &Repository,
        at: &Path,
        changes: WorkdirChanges<'_>,
    ) -> Result<Vec<String>, GitError> {
        match self.tool {
            Tool::GitCli { .. } => {
                let mut paths: Vec<String> = git_cli::status_in(repo.path(), at, false)?
                    .into_iter()
                    .map(|(_, path)| path)
                    .collect();
                paths.sort();
                paths.dedup();
                Ok(paths)
            }
            Tool::Libgit2 => {
                Ok(display_all(&libgit2_checkout::dirty_repo_paths_in(repo, at, changes)?))
            }
        }
    }

    /// Stages every change in the worktree at `at` (new, modified and deleted files,
    /// honouring .gitignore): libgit2 in the handle's index in memory, the git CLI in the
    /// index file ([`Staged`]). First, from `lstat` alone, refuses files above the size
    /// limit and removes FIFOs, sockets and devices (nothing is staged then); refuses when
    /// files of a conflicted rebase still hold conflict markers. With
    /// [`WorkdirChanges::Only`] libgit2 looks at those paths only; the `git` CLI (external
    /// filters) always stages with `add -A`. Ends early once a stop is asked for, the
    /// index file untouched. Paths that hold their state in the lane's `baseline` are left
    /// as HEAD has them.
    pub(crate) fn stage_all(
        &self,
        wrepo: &Repository,
        at: &Path,
        changes: WorkdirChanges<'_>,
        bounds: &Bounds,
        baseline: &Baseline,
    ) -> Result<Staged, GitError> {
        lane_files::refuse_unreadable(wrepo, at, changes, bounds, baseline)?;
        stage::ensure_conflicts_resolved(wrepo, at, bounds.max_file_bytes)?;
        let stop = &bounds.stop;
        match self.tool {
            Tool::GitCli { .. } => {
                // `git add -A` runs the clean filters (LFS pointers instead of raw content).
                let purpose = "stage the worker's changes";
                let mut args = vec!["add", "-A", "--"];
                args.extend(crate::names::LANE_IGNORE_PATHSPECS);
                git_cli::run_in_stoppable(wrepo.path(), at, args, purpose, stop)?;
                stage::unstage_baseline(wrepo, at, baseline)?;
                Ok(Staged::Written)
            }
            Tool::Libgit2 => {
                stage::stage_all(wrepo, at, changes, stop, baseline).map(Staged::InMemory)
            }
        }
    }

    /// Switches the clean checkout at `at` from `from` (its HEAD's tree) to local branch
    /// `branch`, whose tip has tree `to`: writes only the paths that differ (ignored files
    /// stay) and points HEAD at the branch. A file in the way is an error and nothing is
    /// written. Returns how many paths were written (`None` when the git CLI wrote them).
    /// The caller checked the checkout clean (`Repo::ensure_no_work`), which made its index
    /// ready ([`CheckoutTool::index_ready`]).
    pub(crate) fn switch_branch(
        &self,
        wrepo: &Repository,
        at: &Path,
        branch: &str,
        from: &Tree<'_>,
        to: &Tree<'_>,
    ) -> Result<Option<usize>, GitError> {
        match self.tool {
            Tool::GitCli { .. } => {
                // `git checkout` writes only differing files and runs the filters.
                let args = ["checkout", "-q", branch];
                git_cli::run_in(wrepo.path(), at, args, "check out a worktree")?;
                Ok(None)
            }
            Tool::Libgit2 => {
                // The index file stays behind HEAD at the paths moved, as a commit leaves it:
                // the worker's git reads a copy written from memory, another git the file
                // once settled (`index_behind.rs`).
                let index = IndexFile::LeftBehind;
                let written =
                    libgit2_checkout::move_paths(wrepo, at, from, to, (Mode::Safe, index))?;
                // Not `set_head`: libgit2 would first open every other worktree through its
                // `.git` file (in a worker's reach) to see whether the branch is checked out
                // there; breeze checked that itself from the admin folders.
                let message = format!("breeze: switch to {branch}");
                wrepo
                    .reference_symbolic("HEAD", &branch_ref(branch), true, &message)
                    .ctx(|| format!("could not switch {} to `{branch}`", at.display()))?;
                Ok(Some(written))
            }
        }
    }

    /// Moves the clean checkout at `at` from `from` (its HEAD's tree) to `commit` (tree
    /// `to`) with a detached HEAD, writing only the paths that differ (ignored files stay).
    /// A file in the way is an error and nothing is written. Returns how many paths were
    /// written (`None` when the git CLI wrote them). The caller checked the checkout clean
    /// (`Repo::ensure_no_work`), which made its index ready ([`CheckoutTool::index_ready`]).
    pub(crate) fn detach_at(
        &self,
        wrepo: &Repository,
        at: &Path,
        commit: Oid,
        from: &Tree<'_>,
        to: &Tree<'_>,
    ) -> Result<Option<usize>, GitError> {
        match self.tool {
            Tool::GitCli { .. } => {
                let sha = commit.to_string();
                let args = ["checkout", "-q", "--detach", sha.as_str()];
                git_cli::run_in(wrepo.path(), at, args, "park a lane")?;
                Ok(None)
            }
            Tool::Libgit2 => {
                let index = IndexFile::Written;
                let written =
                    libgit2_checkout::move_paths(wrepo, at, from, to, (Mode::Safe, index))?;
                index_written(wrepo, at, written)?;
                wrepo
                    .set_head_detached(commit)
                    .ctx(|| format!("could not move {} to {commit}", at.display()))?;
                Ok(Some(written))
            }
        }
    }

    /// Puts the checkout at `at` on `commit` with a detached HEAD, discarding tracked
    /// changes and untracked files, and ignored ones too with [`Ignored::Remove`] (kept
    /// with [`Ignored::Keep`]: the integration worktree's builds stay warm), writing only
    /// what differs. With [`WorkdirChanges::Only`] libgit2 looks for changes at those paths
    /// (and in the index) only. Files above the size limit and FIFOs, sockets or devices
    /// there are removed first, unread. The `git` CLI is ended once a stop is asked for:
    /// the checkout is put in place again next time.
    pub(crate) fn reset_detached(
        &self,
        wrepo: &Repository,
        at: &Path,
        commit: Oid,
        changes: WorkdirChanges<'_>,
        bounds: &Bounds,
        ignored: Ignored,
    ) -> Result<(), GitError> {
        // What a verify or hook left that a reset would read goes first.
        lane_files::clear_unreadable(wrepo, at, changes, bounds)?;
        let stop = &bounds.stop;
        if let Tool::GitCli { .. } = self.tool {
            let sha = commit.to_string();
            let purpose = "reset a detached checkout";
            let git_dir = wrepo.path();
            let checkout = ["checkout", "-q", "-f", "--detach", sha.as_str()];
            git_cli::run_in_stoppable(git_dir, at, checkout, purpose, stop)?;
            let clean: &[&str] = match ignored {
                Ignored::Keep => &["clean", "-q", "-f", "-d"],
                Ignored::Remove => &["clean", "-q", "-f", "-d", "-x"],
            };
            git_cli::run_in_stoppable(git_dir, at, clean.iter().copied(), purpose, stop)?;
            return Ok(());
        }
        if ignored == Ignored::Remove {
            for path in libgit2_checkout::ignored_repo_paths_in(wrepo, at, changes)? {
                crate::paths::remove_with_emptied_parents(at, &path)?;
            }
        }
        let head_tree = wrepo
            .head()
            .and_then(|h| h.peel_to_tree())
            .ctx(|| format!("could not read HEAD of {}", at.display()))?;
        let new_tree = wrepo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let mut touched = libgit2_checkout::tree_diff_paths(wrepo, &head_tree, &new_tree)?;
        touched.extend(libgit2_checkout::workdir_changed_paths(wrepo, at, changes)?);
        // Nothing is staged when the index is still the file this did write, HEAD's tree:
        // no tree is made of it then (libgit2 would read every tree back).
        let index = fresh_index(wrepo, at)?;
        if index_file::known_tree(&index) != Some(head_tree.id()) {
            touched.extend(libgit2_checkout::staged_repo_paths(wrepo, at)?);
        }
        drop(index);
        touched.sort();
        touched.dedup();
        // Every path where the index differs from the new tree is touched: the index is
        // that tree afterwards.
        let whole = (Mode::Force, IndexFile::Whole);
        if let Err(conflicts) =
            libgit2_checkout::checkout_paths(wrepo, &new_tree, &touched, whole, at)?
        {
            return Err(GitError::Dirty { path: at.to_path_buf(), paths: conflicts });
        }
        wrepo
            .set_head_detached(commit)
            .ctx(|| format!("could not move {} to {commit}", at.display()))
    }

    /// Moves the files and index of the checkout at `at` from tree `from` to tree `to`
    /// (HEAD stays), for a task's change applied onto a new base.
    pub(crate) fn apply_tree(
        &self,
        wrepo: &Repository,
        at: &Path,
        from: &Tree<'_>,
        to: &Tree<'_>,
    ) -> Result<(), GitError> {
        match self.tool {
            Tool::GitCli { .. } => {
                let (from, to) = (from.id().to_string(), to.id().to_string());
                git_cli::run_in(
                    wrepo.path(),
                    at,
                    ["read-tree", "-m", "-u", from.as_str(), to.as_str()],
                    "apply the task's change",
                )
                .map(|_| ())
            }
            Tool::Libgit2 => {
                libgit2_checkout::move_paths(wrepo, at, from, to, (Mode::Force, IndexFile::Written))
                    .map(|_| ())
            }
        }
    }

    /// Paths among `touched` that the checkout of main at `at` has changed (staged or not)
    /// or that an untracked or ignored file occupies: fast-forwarding from `old_tree` to
    /// `new_tree` would overwrite them. With libgit2, a path that already holds what
    /// `new_tree` has does not block.
    pub(crate) fn blocking_paths(
        &self,
        crepo: &Repository,
        at: &Path,
        touched: &[RepoPath],
        old_tree: &Tree<'_>,
        new_tree: &Tree<'_>,
    ) -> Result<Vec<String>, GitError> {
        match self.tool {
            Tool::GitCli { .. } => {
                let touched: std::collections::HashSet<&[u8]> =
                    touched.iter().map(|p| p.0.as_slice()).collect();
                let mut paths: Vec<String> = git_cli::status(at, true)?
                    .into_iter()
                    .map(|(_, p)| p)
                    .filter(|p| touched.contains(p.as_bytes()))
                    .collect();
                paths.sort();
                paths.dedup();
                Ok(paths)
            }
            Tool::Libgit2 => {
                libgit2_checkout::blocking_paths(crepo, at, touched, old_tree, new_tree)
            }
        }
    }

    /// Writes the versions `tree` has of `paths` into the empty folder `into` (under the
    /// same names), as a checkout would write them: filters, executable bits and symbolic
    /// links included; paths `tree` lacks are not written. The checkout at `at` (handle
    /// `crepo`) gives the repository and its attributes; its files and index stay as they
    /// are. How a landing prepares what it then moves into the user's checkout, path by path.
    pub(crate) fn stage_versions(
        &self,
        crepo: &Repository,
        at: &Path,
        (tree, versions): (&Tree<'_>, &Versions),
        paths: &[RepoPath],
        into: &Path,
    ) -> Result<(), GitError> {
        std::fs::create_dir_all(into).map_err(|e| GitError::io("create directory", into, e))?;
        let present = versions.present(paths);
        if present.is_empty() {
            return Ok(());
        }
        match self.tool {
            Tool::GitCli { .. } => stage_with_cli(at, tree.id(), &present, into),
            Tool::Libgit2 if filters_may_apply(crepo, at, tree, &present) => {
                libgit2_checkout::stage_paths(crepo, (tree, versions), &present, into, at)
            }
            // No filter can apply: the blobs are what a checkout writes.
            Tool::Libgit2 => libgit2_checkout::write_blobs(crepo, versions, &present, into),
        }
    }
}

/// Words of `.gitattributes` lines that can make a checkout write something else than the
/// blob: line-ending conversion, `ident`, filters, working-tree encodings.
const CONVERTING_ATTRIBUTES: &[&str] = &["text", "eol", "crlf", "ident", "filter", "encoding"];

/// Whether a checkout of `paths` of `tree` in the checkout at `at` may convert content:
/// `core.autocrlf` is on, or an attribute file that can apply to them (`info/attributes`,
/// `core.attributesFile`, a `.gitattributes` of a folder above one of them, in the
/// working tree or in `tree`) names a converting attribute. Errs on the side of yes.
fn filters_may_apply(crepo: &Repository, at: &Path, tree: &Tree<'_>, paths: &[&RepoPath]) -> bool {
    let Ok(config) = crepo.config() else { return true };
    if config.get_bool("core.autocrlf").unwrap_or(false)
        || config.get_string("core.autocrlf").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return true;
    }
    let mut texts: Vec<String> = Vec::new();
    for file in [crepo.path().join("info/attributes"), crepo.commondir().join("info/attributes")] {
        texts.extend(std::fs::read_to_string(file).ok());
    }
    if let Ok(file) = config.get_path("core.attributesFile") {
        texts.extend(std::fs::read_to_string(file).ok());
    }
    let mut folders: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
    for path in paths {
        folders.extend(path.as_path().ancestors().skip(1).map(Path::to_path_buf));
    }
    for folder in folders {
        let file = folder.join(".gitattributes");
        texts.extend(std::fs::read_to_string(at.join(&file)).ok());
        if let Ok(entry) = tree.get_path(&file)
            && let Ok(blob) = crepo.find_blob(entry.id())
        {
            texts.push(String::from_utf8_lossy(blob.content()).into_owned());
        }
    }
    texts.iter().flat_map(|text| text.lines()).any(|line| {
        !line.trim_start().starts_with('#')
            && CONVERTING_ATTRIBUTES.iter().any(|word| line.contains(word))
    })
}

/// [`CheckoutTool::stage_versions`] through the `git` CLI, so external filters (git-lfs) run:
/// the tree is read into a scratch index next to `into`, then `git checkout-index
/// --prefix` writes the paths from it.
fn stage_with_cli(at: &Path, tree: Oid, paths: &[&RepoPath], into: &Path) -> Result<(), GitError> {
    let index = into.with_extension("index");
    let purpose = "write the landing's files";
    let env = [("GIT_INDEX_FILE", index.as_os_str())];
    let tree = tree.to_string();
    let extra = || git_cli::Extra { env: &env, stdin: None };
    git_cli::run_with(at, ["read-tree", tree.as_str()], extra(), purpose)?;
    let mut list: Vec<u8> = Vec::new();
    for path in paths {
        list.extend_from_slice(&path.0);
        list.push(0);
    }
    let mut prefix = into.as_os_str().to_owned();
    prefix.push("/");
    let mut prefix_arg = std::ffi::OsString::from("--prefix=");
    prefix_arg.push(&prefix);
    let args: [&std::ffi::OsStr; 5] =
        ["checkout-index".as_ref(), "-f".as_ref(), "-z".as_ref(), "--stdin".as_ref(), &prefix_arg];
    let result =
        git_cli::run_with(at, args, git_cli::Extra { env: &env, stdin: Some(&list) }, purpose);
    let _ = std::fs::remove_file(&index);
    result.map(|_| ())
}

/// Finds `filter=<driver>` attributes whose driver has a configured smudge, clean or process
/// command (git-lfs is the common case). libgit2 never runs those, so such repositories need
/// the git CLI for checkouts. Looks at `info/attributes`, `core.attributesFile` and every
/// `.gitattributes` in the main tip. Returns the reason to show, naming the drivers.
fn detect_external_filters(
    repo: &Repository,
    common_dir: &Path,
    tip: Option<Oid>,
) -> Option<String> {
    let config = repo.config().ok()?;
    if !any_filter_command(&config) {
        // No driver could name a command: no attribute can, and main's trees are not
        // walked for them (the walk is most of opening a large repository).
        return None;
    }
    let texts = attribute_texts(repo, &config, common_dir, tip);
    let configured: Vec<String> = filter_drivers(&texts)
        .into_iter()
        .filter(|driver| {
            ["smudge", "clean", "process"]
                .iter()
                .any(|key| config.get_string(&format!("filter.{driver}.{key}")).is_ok())
        })
        .collect();
    if configured.is_empty() {
        return None;
    }
    let names = configured.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ");
    Some(format!("external filter {names} in .gitattributes"))
}

/// Whether `config` gives any filter driver a smudge, clean or process command (git-lfs
/// installed sets them in the user's git config). Unreadable: as if it did.
fn any_filter_command(config: &git2::Config) -> bool {
    let Ok(mut entries) = config.entries(Some(r"^filter\..*\.(smudge|clean|process)$")) else {
        return true;
    };
    entries.next().is_some()
}

/// The texts of `info/attributes`, of `core.attributesFile` and of every `.gitattributes`
/// in the tree of `tip`.
fn attribute_texts(
    repo: &Repository,
    config: &git2::Config,
    common_dir: &Path,
    tip: Option<Oid>,
) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(common_dir.join("info").join("attributes")) {
        texts.push(text);
    }
    if let Ok(path) = config.get_path("core.attributesFile")
        && let Ok(text) = std::fs::read_to_string(path)
    {
        texts.push(text);
    }
    if let Some(tree) = tip.and_then(|oid| repo.find_commit(oid).ok()).and_then(|c| c.tree().ok()) {
        // One walk of every folder (about 30 ms at 100,000 files), kept by tree id for the
        // run's cache-trees too; a run opens the repository twice at the same tip.
        for oid in crate::tree_memo::gitattributes(repo, tree.id()).unwrap_or_default() {
            if let Ok(blob) = repo.find_blob(oid) {
                texts.push(String::from_utf8_lossy(blob.content()).into_owned());
            }
        }
    }
    texts
}

/// The drivers named by `filter=<driver>` in attribute texts, in order of appearance,
/// each once.
fn filter_drivers(texts: &[String]) -> Vec<String> {
    let mut drivers: Vec<String> = Vec::new();
    for text in texts {
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            for token in line.split_whitespace().skip(1) {
                if let Some(driver) = token.strip_prefix("filter=")
                    && !drivers.iter().any(|d| d == driver)
                {
                    drivers.push(driver.to_string());
                }
            }
        }
    }
    drivers
}

/// After libgit2 checked out `written` paths of the lane at `at` as it is parked, whose
/// index the check for uncommitted work before the move made ready
/// ([`CheckoutTool::index_ready`]): when it wrote any, the index was written whole; else
/// it is written now if a commit left it behind. Either way a parked lane's index file
/// agrees with HEAD for whichever git reads it next.
fn index_written(wrepo: &Repository, at: &Path, written: usize) -> Result<(), GitError> {
    if written > 0 { index_behind::written(wrepo) } else { index_behind::settle(wrepo, at) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose one commit holds a file no other test's tree holds (the memo of
    /// main's trees is the process's): its path, its tree and its commit.
    fn repository_with_one_commit(dir: &Path) -> (Repository, Oid, Oid) {
        let repo = Repository::init(dir).unwrap();
        let unique = format!("{:?} {:?}\n", dir, std::time::SystemTime::now());
        let (tree, commit) = {
            let blob = repo.blob(unique.as_bytes()).unwrap();
            let mut folder = repo.treebuilder(None).unwrap();
            folder.insert("a.txt", blob, 0o100644).unwrap();
            let mut root = repo.treebuilder(None).unwrap();
            root.insert("src", folder.write().unwrap(), 0o040000).unwrap();
            let tree = root.write().unwrap();
            let who = git2::Signature::now("t", "t@example.com").unwrap();
            let commit = repo
                .commit(Some("HEAD"), &who, &who, "one", &repo.find_tree(tree).unwrap(), &[])
                .unwrap();
            (tree, commit)
        };
        (repo, tree, commit)
    }

    #[test]
    fn mains_trees_are_walked_for_filters_only_where_a_filter_command_is_configured() {
        // Opening a 100,000-file repository walked every tree (~60 ms) for `.gitattributes`
        // no attribute could make count: without a configured command there is no filter.
        let dir = tempfile::tempdir().unwrap();
        let (repo, tree, commit) = repository_with_one_commit(dir.path());
        assert_eq!(detect_external_filters(&repo, repo.path(), Some(commit)), None);
        assert!(!crate::tree_memo::TREES.holds(tree), "walked without a filter command");
        repo.config().unwrap().set_str("filter.lfs.clean", "cat").unwrap();
        assert_eq!(detect_external_filters(&repo, repo.path(), Some(commit)), None);
        assert!(crate::tree_memo::TREES.holds(tree), "not walked with one");
    }
}
