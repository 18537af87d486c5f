//! `breeze abort`, `breeze clean` and `breeze logs`: looking after what runs leave.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use breeze_git::Repo;
use breeze_protocol::{EventKind, RunState};

use crate::error::EngineError;
use crate::journal::for_each_event;
use crate::lock::{LockError, RepoLock};
use crate::run_dir::{RunDir, file_slug, latest_run};
use crate::snapshot::RunSnapshot;

/// How long `abort` waits for a live engine to stop.
const ABORT_WAIT: Duration = Duration::from_secs(60);

/// What `abort` did.
#[derive(Debug, Clone)]
pub struct AbortReport {
    /// The run given up.
    pub run_id: String,
    /// The pid of a live engine that was asked to stop, if any.
    pub stopped_engine: Option<String>,
    /// The run had already finished in this state: nothing was aborted.
    pub already: Option<RunState>,
    /// The run's state file could not be read: it was set aside (this says why and where).
    pub damaged: Option<String>,
    /// What the user should know: files of theirs kept while an update of their checkout
    /// that a kill cut short was finished or undone.
    pub notices: Vec<String>,
}

/// Gives up on the latest run: stops a live engine (SIGTERM, as Ctrl-C would, after
/// leaving a marker so it records an abort rather than an interruption), ends orphaned role
/// processes, finishes or undoes an update of the user's checkout a kill cut short (as
/// `resume` would), commits what the lanes hold on their task branches, and marks the run
/// aborted. Worktrees and branches stay for `breeze clean`. A run that already finished is
/// left as it is ([`AbortReport::already`]).
pub async fn abort(repo_dir: &Path) -> Result<AbortReport, EngineError> {
    let repo = Repo::open(repo_dir)?;
    let root = repo.workdir().to_path_buf();
    // What the lanes hold is committed under the run's own size limit (a broken
    // configuration does not stop an abort: the default limit then).
    let max_file_bytes = crate::config::Config::load(&root)
        .map_or(breeze_git::DEFAULT_MAX_FILE_BYTES, |config| config.max_file_bytes);
    let repo = repo.with_max_file_bytes(max_file_bytes);
    let run_id = latest_run(&root).ok_or_else(|| {
        EngineError::usage("there are no runs in this repository", "nothing to abort")
    })?;
    let run_dir = RunDir::new(&root, &run_id);
    let mut stopped_engine = None;
    let lock = match RepoLock::acquire(&root) {
        Ok(lock) => lock,
        Err(LockError::Held { pid }) => {
            let number: u32 = pid.parse().map_err(|_| {
                EngineError::usage(
                    format!("a breeze run holds the lock but its pid {pid:?} is unreadable"),
                    "stop it by hand (Ctrl-C in its terminal)",
                )
            })?;
            std::fs::write(run_dir.abort_marker(), b"")
                .map_err(|err| EngineError::io("cannot mark the run for abort", err))?;
            if let Err(err) = breeze_supervise::ask_to_stop(number) {
                // Gone already (the lock is then free soon) — or not ours to stop.
                tracing::info!(pid = number, "cannot signal the engine: {err}");
            }
            stopped_engine = Some(pid);
            wait_for_lock(&root).await?
        }
        Err(err) => return Err(err.into()),
    };
    let mut snapshot = match RunSnapshot::load(&run_dir.snapshot()) {
        Ok(snapshot) => snapshot,
        Err(err) => {
            // Unreadable: the run is given up by setting its state file aside, so that a new
            // run can start; its journal still tells `clean` what it created.
            crate::run::end_orphans_of(&run_dir).await;
            let aside = run_dir.root().join("run.json.damaged");
            std::fs::rename(run_dir.snapshot(), &aside).map_err(|io| {
                EngineError::io(format!("cannot set {} aside", run_dir.snapshot().display()), io)
            })?;
            return Ok(AbortReport {
                run_id,
                stopped_engine,
                already: None,
                damaged: Some(format!("{err}; set aside as {}", aside.display())),
                notices: Vec::new(),
            });
        }
    };
    if !snapshot.state.is_resumable() {
        return Ok(AbortReport {
            run_id,
            stopped_engine,
            already: Some(snapshot.state),
            damaged: None,
            notices: Vec::new(),
        });
    }
    crate::run::end_orphans_of(&run_dir).await;
    let notices = crate::run::finish_checkout_updates(&repo, &run_dir)?;
    let _ = std::fs::write(run_dir.abort_marker(), b"");
    record_abort(&repo, &run_dir, &mut snapshot)?;
    drop(lock);
    Ok(AbortReport { run_id, stopped_engine, already: None, damaged: None, notices })
}

/// Marks `snapshot` aborted: what each unfinished task's lane holds is committed on its
/// branch, and each task's reason says truthfully where its work is.
pub(crate) fn record_abort(
    repo: &Repo,
    run_dir: &RunDir,
    snapshot: &mut RunSnapshot,
) -> Result<(), EngineError> {
    let lanes: Vec<breeze_git::WorktreeInfo> = repo.list_worktrees()?;
    snapshot.state = RunState::Aborted;
    snapshot.stop_reason = Some("aborted with `breeze abort`".into());
    for task in snapshot.tasks.iter_mut().filter(|task| !task.phase.is_terminal()) {
        // A person's decision, which no resume undoes: the task failed.
        let cause = breeze_protocol::Cause::new(
            breeze_protocol::CauseKind::Person,
            where_the_work_is(repo, &lanes, task)?,
        );
        task.set_cause(Some(cause));
        task.phase = crate::snapshot::TaskPhase::Failed;
    }
    snapshot.updated_at = crate::clock::now_rfc3339();
    snapshot.save(&run_dir.snapshot()).map_err(|err| {
        EngineError::io(format!("cannot write {}", run_dir.snapshot().display()), err)
    })?;
    if let Ok(journal) = crate::journal::Journal::open(&run_dir.events()) {
        let _ = journal.record(EventKind::RunFinished { state: RunState::Aborted });
    }
    Ok(())
}

/// Where an aborted task's work is: committed on its branch (what its lane held is
/// committed first), or nowhere yet.
fn where_the_work_is(
    repo: &Repo,
    lanes: &[breeze_git::WorktreeInfo],
    task: &crate::snapshot::TaskRecord,
) -> Result<String, EngineError> {
    let Some(branch) = &task.branch else {
        return Ok("run aborted before the task started".to_string());
    };
    let lane = lanes
        .iter()
        .find(|info| info.under_breeze_root && info.branch.as_deref() == Some(branch.as_str()));
    let base = task.base.map(|base| base.0);
    if let (Some(info), Some(base)) = (lane, base) {
        let worktree = breeze_git::Worktree {
            name: info.name.clone(),
            path: info.path.clone(),
            branch: branch.clone(),
            base,
        };
        // The lane stays for the user: its `.git` names its admin folder again (a killed
        // run may have left it naming the worker's private git directory).
        for problem in repo.check_lane_links(&worktree)? {
            tracing::warn!("{}: {problem} (repaired)", worktree.path.display());
        }
        if let Err(err) = repo.commit_worktree(&worktree, "breeze: work left by an aborted run") {
            return Ok(format!(
                "run aborted; its work so far is uncommitted in {} ({err})",
                info.path.display()
            ));
        }
    }
    Ok(match (repo.branch_tip(branch)?, base) {
        (Some(tip), Some(base)) if tip != base => format!(
            "run aborted; its work so far is on branch `{branch}` ({})",
            &tip.to_string()[..12]
        ),
        _ => format!("run aborted; branch `{branch}` holds no work yet"),
    })
}

async fn wait_for_lock(root: &Path) -> Result<RepoLock, EngineError> {
    let deadline = tokio::time::Instant::now() + ABORT_WAIT;
    loop {
        match RepoLock::acquire(root) {
            Ok(lock) => return Ok(lock),
            Err(LockError::Held { pid }) if tokio::time::Instant::now() < deadline => {
                let _ = pid;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// One thing `clean` removed or kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanItem {
    /// Removed (or would be, with `--dry-run`).
    Removed(String),
    /// Kept, and why.
    Kept(String, String),
}

/// Removes the worktrees and branches that the journals say breeze created: clean
/// worktrees (each with its private git directory under `.breeze/lanes/`, also one whose
/// lane is gone), and branches whose task landed. Dirty worktrees and branches holding
/// work that never landed are kept unless `force`.
///
/// What goes and what stays is decided first, by one function, before anything is
/// touched: `--dry-run` lists those decisions and `clean` carries out the same ones, so
/// the two say the same (unless the repository changes in between: then `clean` says
/// what it found).
pub fn clean(repo_dir: &Path, dry_run: bool, force: bool) -> Result<Vec<CleanItem>, EngineError> {
    let repo = Repo::open(repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let _lock = RepoLock::acquire(&root)?;
    if let Some(latest) = latest_run(&root) {
        let snapshot = RunSnapshot::load(&RunDir::new(&root, &latest).snapshot())?;
        if snapshot.state.is_resumable() && !force {
            return Err(EngineError::usage(
                format!("run {latest} can still be resumed; cleaning would take its worktrees"),
                "finish it with `breeze resume`, give it up with `breeze abort`, or pass --force",
            ));
        }
    }
    let decisions = decide(&repo, &Created::from_journals(&root), force)?;
    if dry_run {
        return Ok(decisions.into_iter().map(Decision::item).collect());
    }
    decisions.into_iter().map(|decision| decision.carry_out(&repo)).collect()
}

/// What `clean` does with one worktree, folder or branch.
#[derive(Debug)]
struct Decision {
    /// The path or branch name, as printed.
    label: String,
    /// What goes, or why it stays.
    action: Action,
}

/// What `clean` does with a thing it found.
#[derive(Debug)]
enum Action {
    /// It goes.
    Remove(Removal),
    /// It stays, and why (as `clean` prints it).
    Keep(String),
}

/// A removal `clean` decided on.
#[derive(Debug)]
enum Removal {
    /// A worktree git knows (`force`: with its uncommitted changes).
    Worktree { path: PathBuf, force: bool },
    /// A folder git no longer knows as a worktree.
    Folder(PathBuf),
    /// The verify command's worktree: breeze's scratch, whatever it holds.
    Scratch { path: PathBuf, registered: bool },
    /// A lane's private git directory (`.breeze/lanes/<lane>`), by lane name.
    PrivateGit(String),
    /// A task branch.
    Branch(String),
}

impl Decision {
    fn remove(label: impl Into<String>, removal: Removal) -> Decision {
        Decision { label: label.into(), action: Action::Remove(removal) }
    }

    fn keep(label: impl Into<String>, why: impl Into<String>) -> Decision {
        Decision { label: label.into(), action: Action::Keep(why.into()) }
    }

    /// What `--dry-run` prints.
    fn item(self) -> CleanItem {
        match self.action {
            Action::Remove(_) => CleanItem::Removed(self.label),
            Action::Keep(why) => CleanItem::Kept(self.label, why),
        }
    }

    /// Carries the decision out; what happened.
    fn carry_out(self, repo: &Repo) -> Result<CleanItem, EngineError> {
        let Decision { label, action } = self;
        let removal = match action {
            Action::Remove(removal) => removal,
            Action::Keep(why) => return Ok(CleanItem::Kept(label, why)),
        };
        match removal {
            Removal::Worktree { path, force } => match repo.remove_worktree(&path, None, force)? {
                breeze_git::RemoveOutcome::KeptDirty { .. } => {
                    return Ok(CleanItem::Kept(label, changed_since(UNCOMMITTED)));
                }
                breeze_git::RemoveOutcome::Removed { .. }
                | breeze_git::RemoveOutcome::NotFound { .. } => {}
            },
            Removal::Folder(path) => remove_folder(&path)?,
            Removal::Scratch { path, registered: true } => {
                repo.remove_worktree(&path, None, true)?;
            }
            Removal::Scratch { path, registered: false } => remove_folder(&path)?,
            // Gone already when its lane was removed just before.
            Removal::PrivateGit(name) => repo.remove_private_git(&name)?,
            Removal::Branch(branch) => match repo.delete_branch(&branch) {
                Ok(_) => {}
                Err(breeze_git::GitError::BranchCheckedOut { path, .. }) => {
                    let why = format!("checked out in {}", path.display());
                    return Ok(CleanItem::Kept(label, changed_since(&why)));
                }
                Err(err) => return Err(err.into()),
            },
        }
        Ok(CleanItem::Removed(label))
    }
}

/// Why a worktree with changes stays.
const UNCOMMITTED: &str = "has uncommitted changes; commit them, or pass --force to discard";

/// A reason to keep something that `clean` found only while removing (the repository
/// changed after the decision).
fn changed_since(why: &str) -> String {
    format!("{why} (it changed while breeze cleaned)")
}

/// What `clean` removes and keeps, decided before anything is touched.
fn decide(repo: &Repo, created: &Created, force: bool) -> Result<Vec<Decision>, EngineError> {
    let live: BTreeMap<PathBuf, breeze_git::WorktreeInfo> =
        repo.list_worktrees()?.into_iter().map(|info| (info.path.clone(), info)).collect();
    let mut decisions = Vec::new();
    // The worktrees that go and those that stay, for the branches checked out in them.
    let (mut removed, mut kept) = (BTreeSet::new(), BTreeSet::new());
    for path in &created.worktrees {
        if let Some(decision) = decide_worktree(path, live.get(path), force) {
            let side =
                if matches!(decision.action, Action::Remove(_)) { &mut removed } else { &mut kept };
            side.insert(path.clone());
            decisions.push(decision);
        }
    }
    // breeze's detached checkouts (verify's, the reviewer's, the Advisor's) hold nothing
    // of anyone's: they go, whatever they hold — in the worktree folder, and where an
    // earlier breeze made them (the checkout's `.harness-worktrees/`).
    let roots: Vec<PathBuf> = [repo.worktree_root().ok(), Some(repo.worktrees_note_dir())]
        .into_iter()
        .flatten()
        .collect();
    let names = breeze_git::detached_checkout_names();
    for path in roots.iter().flat_map(|root| names.iter().map(|name| root.join(name))) {
        let registered = live.contains_key(&path);
        if registered || path.is_dir() {
            let label = path.display().to_string();
            removed.insert(path.clone());
            decisions.push(Decision::remove(label, Removal::Scratch { path, registered }));
        }
    }
    // Lanes a repository deleted and made again at this path left in the worktree folder:
    // no journal names them, and their commits went with that repository.
    if let Ok(root) = repo.worktree_root() {
        for path in orphaned_lanes(repo, &root, &live, &removed) {
            decisions.push(decide_orphaned_lane(path, force));
        }
    }
    // A lane's private git directory goes with its lane (the worktree git knows by its
    // name, wherever it is), and so does one whose lane is gone altogether; one whose lane
    // stays stays with it.
    for (name, home) in repo.private_git_homes() {
        let lane = live.values().find(|info| info.name == name).map(|info| info.path.clone());
        let goes = match lane {
            Some(lane) => removed.contains(&lane),
            None => !roots.iter().any(|root| root.join(&name).exists()),
        };
        if goes {
            let label = home.display().to_string();
            decisions.push(Decision::remove(label, Removal::PrivateGit(name)));
        }
    }
    for branch in &created.branches {
        if let Some(decision) = decide_branch(repo, created, branch, force, &removed, &kept)? {
            decisions.push(decision);
        }
    }
    Ok(decisions)
}

/// A worktree breeze created; `live` is what git knows of it (`None`: nothing).
fn decide_worktree(
    path: &Path,
    live: Option<&breeze_git::WorktreeInfo>,
    force: bool,
) -> Option<Decision> {
    let label = path.display().to_string();
    let Some(info) = live else {
        // Git no longer knows it (an interrupted `clean`, a removed admin folder), but the
        // journal says breeze made it: its folder is still breeze's to remove.
        if !path.is_dir() {
            return None;
        }
        return Some(if force {
            Decision::remove(label, Removal::Folder(path.to_path_buf()))
        } else {
            Decision::keep(
                label,
                "no longer a git worktree (an interrupted `breeze clean`?); `breeze clean --force` removes the folder",
            )
        });
    };
    let remove =
        Decision::remove(label.clone(), Removal::Worktree { path: path.to_path_buf(), force });
    Some(match info.dirty {
        _ if force => remove,
        Some(true) => Decision::keep(label, UNCOMMITTED),
        Some(false) => remove,
        // Its folder is gone: git's record of it goes.
        None if !path.is_dir() => remove,
        None => Decision::keep(
            label,
            "cannot be checked for uncommitted work; `breeze clean --force` removes it",
        ),
    })
}

/// The folders of the worktree folder `root` that are checkouts an earlier repository at
/// this path left ([`Repo::is_orphaned_checkout`]), but for those decided already.
fn orphaned_lanes(
    repo: &Repo,
    root: &Path,
    live: &BTreeMap<PathBuf, breeze_git::WorktreeInfo>,
    decided: &BTreeSet<PathBuf>,
) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| !live.contains_key(path) && !decided.contains(path))
        .filter(|path| repo.is_orphaned_checkout(path))
        .collect();
    found.sort();
    found
}

/// A lane an earlier repository at this path left: its work (uncommitted files, if any)
/// can no longer land, but it is the only copy of them, so it goes with `force` only.
fn decide_orphaned_lane(path: PathBuf, force: bool) -> Decision {
    let label = path.display().to_string();
    if force {
        return Decision::remove(label, Removal::Folder(path));
    }
    Decision::keep(
        label,
        "left by a repository that was at this path before (deleted and made again); \
         `breeze clean --force` removes it",
    )
}

/// A task branch breeze created: deleted when its tip is what landed or is on main, and
/// no checkout that stays has it checked out. One set aside by `breeze retry --fresh` is
/// named with the task whose earlier work it holds.
fn decide_branch(
    repo: &Repo,
    created: &Created,
    branch: &str,
    force: bool,
    removed: &BTreeSet<PathBuf>,
    kept: &BTreeSet<PathBuf>,
) -> Result<Option<Decision>, EngineError> {
    let Some(tip) = repo.branch_tip(branch)? else { return Ok(None) };
    let landed = created.landed_heads.get(branch);
    let holds_work = Some(tip) != landed.copied().flatten() && !repo.branch_is_on_main(branch)?;
    if holds_work && !force {
        let why = match (landed, created.set_aside.get(branch)) {
            (None, Some(task)) => format!(
                "holds the earlier work of task {task}, set aside by `breeze retry --fresh` (use --force to delete)"
            ),
            (Some(_), _) => format!(
                "has commits added after its task landed (tip {}); use --force to delete",
                &tip.to_string()[..12]
            ),
            (None, None) => "holds work that never landed (use --force to delete)".to_string(),
        };
        return Ok(Some(Decision::keep(branch, why)));
    }
    let checkouts = repo.branch_checkouts(branch)?;
    if let Some(at) = checkouts.iter().find(|at| !removed.contains(*at)) {
        let above = if kept.contains(at) { " (kept above)" } else { "" };
        return Ok(Some(Decision::keep(branch, format!("checked out in {}{above}", at.display()))));
    }
    Ok(Some(Decision::remove(branch, Removal::Branch(branch.to_string()))))
}

fn remove_folder(path: &Path) -> Result<(), EngineError> {
    std::fs::remove_dir_all(path)
        .map_err(|err| EngineError::io(format!("cannot remove {}", path.display()), err))
}

/// What breeze's journals say it created and did not remove, over every run folder (also
/// one whose state file was set aside as damaged).
struct Created {
    worktrees: BTreeSet<PathBuf>,
    branches: BTreeSet<String>,
    /// Landed tasks' branches and the head that landed from each.
    landed_heads: BTreeMap<String, Option<breeze_git::Oid>>,
    /// Branches set aside by `breeze retry --fresh` → the task whose earlier work they hold.
    set_aside: BTreeMap<String, String>,
}

impl Created {
    fn from_journals(root: &Path) -> Created {
        let mut created = Created {
            worktrees: BTreeSet::new(),
            branches: BTreeSet::new(),
            landed_heads: BTreeMap::new(),
            set_aside: BTreeMap::new(),
        };
        for run_id in crate::run_dir::list_run_folders(root) {
            let run_dir = RunDir::new(root, &run_id);
            // Streamed: a long run's journal is never held whole. An unreadable journal
            // still gives what it said before the bad line.
            let _ = for_each_event(&run_dir.events(), |event| created.follow(event.event));
            if let Ok(snapshot) = RunSnapshot::load(&run_dir.snapshot()) {
                for task in snapshot.tasks {
                    for branch in &task.earlier_branches {
                        created.set_aside.insert(branch.clone(), task.id.clone());
                    }
                    if task.phase == crate::snapshot::TaskPhase::Landed
                        && let Some(branch) = task.branch
                    {
                        created.landed_heads.insert(branch, task.head.map(|head| head.0));
                    }
                }
            }
        }
        created
    }

    fn follow(&mut self, event: EventKind) {
        match event {
            EventKind::WorktreeCreated { path, branch, .. } => {
                self.worktrees.insert(PathBuf::from(path));
                self.branches.insert(branch);
            }
            EventKind::WorktreeRemoved { path, branch } => {
                if !path.is_empty() {
                    self.worktrees.remove(Path::new(&path));
                }
                if let Some(branch) = branch {
                    self.branches.remove(&branch);
                }
            }
            _ => {}
        }
    }
}

/// The log files of a task in a run, oldest first.
pub fn task_logs(
    repo_dir: &Path,
    run_id: Option<&str>,
    task_id: &str,
) -> Result<Vec<PathBuf>, EngineError> {
    let snapshot = crate::run::load_run(repo_dir, run_id)?;
    if snapshot.task(task_id).is_none() {
        return Err(EngineError::usage(
            format!("run {} has no task {task_id}", snapshot.run_id),
            "see the task ids with `breeze status`",
        ));
    }
    let repo = Repo::open(repo_dir)?;
    let logs_dir = RunDir::new(repo.workdir(), &snapshot.run_id).root().join("logs");
    let slug = file_slug(task_id);
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&logs_dir)
        .map_err(|err| EngineError::io(format!("cannot read {}", logs_dir.display()), err))?
        .filter_map(Result::ok)
        .filter(|entry| crate::run_dir::is_task_file(&entry.file_name().to_string_lossy(), &slug))
        .map(|entry| {
            (
                entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH),
                entry.path(),
            )
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, path)| path).collect())
}
