//! Starting, resuming and inspecting runs: the public face of the engine.

mod consult;
mod context;
mod dispatcher;
mod landing;
mod review;
mod task;
mod work;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use breeze_git::Repo;
use breeze_plan::{Plan, PlanFormat};
use breeze_protocol::{BreezeStatus, ContainmentStatus, EventKind, ExitCode, RunState, TaskState};
use breeze_supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use crate::clock;
use crate::config::Config;
use crate::containment::{Containment, RoleGuard};
use crate::error::EngineError;
use crate::journal::{Cycles, Journal, read_events};
use crate::lock::RepoLock;
use crate::progress::{ProgressEvent, ProgressSink};
use crate::roles::RoleRunner;
use crate::roles::scripted::SimSpec;
use crate::run_dir::{RunDir, latest_run};
use crate::snapshot::{FORMAT_VERSION, RunSnapshot, Stage, TaskRecord};
use context::RunContext;
use dispatcher::{DispatchEnd, dispatch};

/// What to run and how.
#[derive(Clone)]
pub struct RunOptions {
    /// A directory inside the repository.
    pub repo_dir: PathBuf,
    /// The plan file; default: `plan.toml`, then `Plans.md`, at the repository root.
    pub plan: Option<PathBuf>,
    /// Lanes; default: `run.max_workers`.
    pub max_workers: Option<u32>,
    /// Use this configuration instead of reading `breeze.toml`.
    pub config: Option<Config>,
    /// Progress notifications.
    pub progress: ProgressSink,
    /// Process supervisor settings (tests shorten the watchdog period).
    pub supervisor: Supervisor,
    /// How backend troubles (rate limits, passing API errors) are waited out.
    pub backoff: crate::roles::backoff::BackoffSettings,
}

impl RunOptions {
    /// Options for the repository containing `repo_dir`, with defaults for the rest.
    pub fn new(repo_dir: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            repo_dir: repo_dir.into(),
            plan: None,
            max_workers: None,
            config: None,
            progress: crate::progress::silent(),
            supervisor: Supervisor::new(),
            backoff: Default::default(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Run id.
    pub run_id: String,
    /// Final (or interrupted) state.
    pub state: RunState,
    /// The status report.
    pub status: BreezeStatus,
    /// Why the run stopped early, with what to do.
    pub stop_reason: Option<String>,
    /// The run directory.
    pub run_dir: PathBuf,
}

impl RunOutcome {
    /// 0 all landed, 1 some did not, 3 interrupted (resumable).
    pub fn exit_code(&self) -> ExitCode {
        match self.state {
            RunState::Succeeded => ExitCode::Success,
            RunState::Interrupted | RunState::Running => ExitCode::Interrupted,
            RunState::Failed | RunState::Aborted => ExitCode::Unfinished,
        }
    }
}

/// Starts a new run of a plan.
pub async fn run(
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let repo = Repo::open(&options.repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let mut config = match options.config.clone() {
        Some(config) => config,
        None => Config::load(&root)?,
    };
    let repo = with_main_branch(repo, &config.main_branch)?;
    let containment = decide_containment(&config)?;
    if let Some(workers) = options.max_workers {
        if !(1..=3).contains(&workers) {
            return Err(EngineError::usage(
                format!("--max-workers {workers} is out of range"),
                "use 1, 2 or 3 lanes",
            ));
        }
        config.max_workers = workers;
    }
    let plan_path = resolve_plan(&root, options.plan.as_deref())?;
    let plan = breeze_plan::load(&plan_path)?;
    let analysis = breeze_plan::analyze(&plan, config.max_workers)?;
    let sims = read_sims(&plan)?;
    repo.ensure_not_mid_operation()?;
    repo.ensure_excluded()?;
    let main_tip = repo.main_tip()?;
    let plans_file = tracked_plans_file(&repo, &plan)?;
    if let Some(plans_file) = &plans_file
        && repo.main_checkout_has_changes(plans_file)?
    {
        return Err(EngineError::usage(
            format!(
                "{plans_file} has uncommitted changes in your checkout of {}",
                repo.main_branch()
            ),
            format!(
                "breeze marks tasks done in {plans_file} as they land, which would touch your edits: commit it first (`git commit {plans_file}`), then run again"
            ),
        ));
    }
    let mut notices = Vec::new();
    if plan.format == PlanFormat::PlansMd && plans_file.is_none() {
        notices.push(format!(
            "{} is not tracked by git on {}: breeze cannot mark tasks cc:done in it; tasks already on main are recognized by their Breeze-Task trailers and not run again (commit the plan to have it kept up to date)",
            plan.path.display(),
            repo.main_branch()
        ));
    }
    // Tasks of earlier runs already on main are not run again, whatever the plan says.
    let ids_and_titles: Vec<(&str, &str)> =
        plan.tasks.iter().map(|task| (task.id.as_str(), task.title.as_str())).collect();
    let landed_before = repo.find_landed_tasks(&ids_and_titles)?;
    for (id, commit) in &landed_before {
        notices.push(format!(
            "task {id} is already on {} ({}); it is not run again (mark it done in the plan, or give it a new id to redo it)",
            repo.main_branch(),
            &commit.to_string()[..12]
        ));
    }
    let lock = RepoLock::acquire(&root)?;
    if let Some(previous) = latest_run(&root)
        && let Ok(snapshot) = RunSnapshot::load(&RunDir::new(&root, &previous).snapshot())
        && snapshot.state.is_resumable()
    {
        return Err(EngineError::usage(
            format!("run {previous} was interrupted and can be resumed"),
            "continue it with `breeze resume`, or give it up with `breeze abort` before starting a new run",
        ));
    }

    let run_id = uuid::Uuid::now_v7().to_string();
    let run_dir = RunDir::new(&root, &run_id);
    run_dir.create().map_err(|err| {
        EngineError::io(format!("cannot create {}", run_dir.root().display()), err)
    })?;
    let copy = run_dir.plan_copy(&plan_path);
    std::fs::copy(&plan_path, &copy).map_err(|err| {
        EngineError::io(format!("cannot keep a copy of the plan in {}", copy.display()), err)
    })?;
    let now = clock::now_rfc3339();
    let snapshot = RunSnapshot {
        format_version: FORMAT_VERSION,
        run_id: run_id.clone(),
        plan: plan_path.display().to_string(),
        state: RunState::Running,
        workers: analysis.workers,
        main_branch: repo.main_branch().to_string(),
        main_tip_at_start: main_tip.to_string(),
        started_at: now.clone(),
        updated_at: now,
        stop_reason: None,
        tasks: plan
            .tasks
            .iter()
            .enumerate()
            .map(|(index, task)| {
                let mut record = TaskRecord::new(
                    task.id.as_str(),
                    &task.title,
                    Some(analysis.group_of(index) as u32),
                );
                if let Some(commit) = landed_before.get(task.id.as_str()) {
                    record.state = TaskState::Landed;
                    record.stage = Stage::Done;
                    record.commit = Some(commit.to_string());
                    record.reason = Some("already on main before this run".into());
                }
                record
            })
            .collect(),
        consulted: BTreeMap::new(),
        universal_violations: Vec::new(),
        containment: None,
    };
    snapshot.save(&run_dir.snapshot()).map_err(|err| {
        EngineError::io(format!("cannot write {}", run_dir.snapshot().display()), err)
    })?;
    let prepared = Prepared {
        repo,
        config,
        containment,
        plan,
        analysis,
        sims,
        plans_file,
        run_dir,
        snapshot,
        lock,
        known_main: main_tip,
        notices,
    };
    execute(prepared, options, cancel, false, main_tip.to_string()).await
}

/// Continues the latest interrupted run.
pub async fn resume(
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let repo = Repo::open(&options.repo_dir)?;
    let root = repo.workdir().to_path_buf();
    let lock = RepoLock::acquire(&root)?;
    let Some(run_id) = latest_run(&root) else {
        return Err(EngineError::usage(
            "there is no run to resume",
            "start one with `breeze run PLAN`",
        ));
    };
    let run_dir = RunDir::new(&root, &run_id);
    let mut snapshot = RunSnapshot::load(&run_dir.snapshot())?;
    if !snapshot.state.is_resumable() {
        return Err(EngineError::usage(
            format!(
                "the latest run {run_id} is {}; there is nothing to resume",
                snapshot.state.as_str()
            ),
            "start a new run with `breeze run PLAN`",
        ));
    }
    let config = match options.config.clone() {
        Some(config) => config,
        None => Config::load(&root)?,
    };
    // The run keeps landing on the branch it started with.
    let repo = with_main_branch(repo, &snapshot.main_branch)?;
    let containment = decide_containment(&config)?;
    let plan = plan_of_run(&run_dir, Path::new(&snapshot.plan))?;
    let analysis = breeze_plan::analyze(&plan, snapshot.workers)?;
    let sims = read_sims(&plan)?;
    for task in &plan.tasks {
        if snapshot.task(task.id.as_str()).is_none() {
            return Err(EngineError::usage(
                format!(
                    "task {} was added to {} after run {run_id} started",
                    task.id, snapshot.plan
                ),
                "resume needs the plan the run started with; revert the plan change, or `breeze abort` and start a new run",
            ));
        }
    }
    // Keep the records in the plan's order; tasks removed from the plan are dropped.
    let mut records: BTreeMap<String, TaskRecord> =
        snapshot.tasks.drain(..).map(|record| (record.id.clone(), record)).collect();
    snapshot.tasks =
        plan.tasks.iter().filter_map(|task| records.remove(task.id.as_str())).collect();

    repo.ensure_not_mid_operation()?;
    repo.ensure_excluded()?;
    end_orphans_of(&run_dir).await;

    // Anything that was in flight restarts from its stage; a landing that happened
    // just before the engine died is recognized by its trailers.
    for record in &mut snapshot.tasks {
        if record.state.is_terminal() {
            continue;
        }
        let stop_at = review::parse_oid(&snapshot.main_tip_at_start)?;
        if let Some(commit) = repo.find_landing(&run_id, &record.id, Some(stop_at))? {
            record.state = TaskState::Landed;
            record.stage = Stage::Done;
            record.commit = Some(commit.to_string());
            record.reason = None;
            continue;
        }
        if record.state != TaskState::Deferred {
            record.state = TaskState::Pending;
            record.reason = None;
        }
    }
    snapshot.state = RunState::Running;
    snapshot.stop_reason = None;
    let main_tip = repo.main_tip()?.to_string();
    let plans_file = tracked_plans_file(&repo, &plan)?;
    let known_main =
        last_landing(&run_dir).unwrap_or(review::parse_oid(&snapshot.main_tip_at_start)?);
    let prepared = Prepared {
        repo,
        config,
        containment,
        plan,
        analysis,
        sims,
        plans_file,
        run_dir,
        snapshot,
        lock,
        known_main,
        notices: Vec::new(),
    };
    execute(prepared, options, cancel, true, main_tip).await
}

/// Everything `run` and `resume` check and load before the run goes on.
struct Prepared {
    repo: Repo,
    config: Config,
    /// How roles are confined.
    containment: Containment,
    /// main as this run last knew it (its start, or its last landing).
    known_main: breeze_git::Oid,
    /// What the user should know before the run starts (printed after the run banner).
    notices: Vec<String>,
    plan: Plan,
    analysis: breeze_plan::Analysis,
    sims: BTreeMap<String, SimSpec>,
    /// Repository-relative path of the plan when it is a Plans.md tracked on main.
    plans_file: Option<String>,
    run_dir: RunDir,
    snapshot: RunSnapshot,
    /// Held until the run ends.
    lock: RepoLock,
}

async fn execute(
    prepared: Prepared,
    options: RunOptions,
    cancel: CancellationToken,
    resumed: bool,
    main_tip: String,
) -> Result<RunOutcome, EngineError> {
    let Prepared {
        repo,
        config,
        containment,
        plan,
        analysis,
        sims,
        plans_file,
        run_dir,
        mut snapshot,
        lock: _lock,
        known_main,
        notices,
    } = prepared;
    let root = repo.workdir().to_path_buf();
    let repo = Arc::new(repo);
    snapshot.containment =
        Some(ContainmentStatus { kernel: containment.enforced, summary: containment.summary() });
    let guard = Arc::new(RoleGuard::new(containment.clone(), repo.clone(), known_main));
    let run_id = snapshot.run_id.clone();
    let journal = Arc::new(Journal::open(&run_dir.events()).map_err(|err| {
        EngineError::io(format!("cannot open {}", run_dir.events().display()), err)
    })?);
    let cycles = Cycles::open(&run_dir.cycles()).map_err(|err| {
        EngineError::io(format!("cannot open {}", run_dir.cycles().display()), err)
    })?;
    journal
        .record(EventKind::RunStarted {
            plan: snapshot.plan.clone(),
            workers: snapshot.workers,
            main_tip,
            resumed,
        })
        .map_err(|err| EngineError::io("cannot write the journal", err))?;
    let write_sets = plan
        .tasks
        .iter()
        .map(|task| {
            let writes = task.writes.clone();
            let matcher: Arc<dyn Fn(&str) -> bool + Send + Sync> =
                Arc::new(move |path: &str| writes.is_empty() || writes.matches(path));
            (task.id.to_string(), matcher)
        })
        .collect();
    let roles = RoleRunner {
        config: config.clone(),
        run_dir: run_dir.clone(),
        run_id: run_id.clone(),
        repo_root: root.clone(),
        journal: journal.clone(),
        supervisor: options.supervisor.clone(),
        engine_env: std::env::vars().collect(),
        sims,
        write_sets,
        called: Default::default(),
        guard: guard.clone(),
        invocations: Default::default(),
    };
    let lanes = adopt_lanes(&repo, snapshot.workers, resumed)?;
    (options.progress)(&ProgressEvent::RunStarted {
        run_id: run_id.clone(),
        workers: snapshot.workers,
        tasks: plan.tasks.len(),
        groups: analysis.groups.len(),
        resumed,
    });
    (options.progress)(&ProgressEvent::Containment {
        enforced: containment.enforced,
        summary: containment.summary(),
    });
    for message in notices {
        (options.progress)(&ProgressEvent::Notice { message });
    }
    let ctx = Arc::new(RunContext {
        run_id: run_id.clone(),
        main_tip_at_start: review::parse_oid(&snapshot.main_tip_at_start)?,
        repo,
        config,
        plan,
        analysis,
        run_dir: run_dir.clone(),
        journal,
        cycles,
        roles,
        supervisor: options.supervisor.clone(),
        backoff: options.backoff,
        snapshot: Mutex::new(snapshot),
        review_lock: tokio::sync::Mutex::new(()),
        land_lock: tokio::sync::Mutex::new(()),
        cancel: cancel.child_token(),
        progress: options.progress.clone(),
        tracked_plans_file: plans_file,
        lanes: Mutex::new(lanes),
    });

    // A main moved onto a lane's commit while no engine watched is refused before anything.
    let end = match ctx.roles.guard.check_main() {
        Ok(()) => dispatch(ctx.clone()).await,
        Err(err) => Err(err),
    };
    let (state, stop_reason) = match end {
        Ok(DispatchEnd::Finished) => {
            let all_landed = ctx
                .snapshot
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .tasks
                .iter()
                .all(|t| t.state == TaskState::Landed);
            cleanup_after_run(&ctx);
            (if all_landed { RunState::Succeeded } else { RunState::Failed }, None)
        }
        Ok(DispatchEnd::Interrupted(reason)) => (RunState::Interrupted, Some(reason)),
        Err(err) => {
            let hint = err.hints().join("; ");
            let reason = if hint.contains("breeze resume") {
                format!("{err}; {hint}")
            } else if hint.is_empty() {
                format!("{err}; `breeze resume` continues the run")
            } else {
                format!("{err}; {hint}, then `breeze resume` continues the run")
            };
            (RunState::Interrupted, Some(reason))
        }
    };
    // No process of the run's roles outlives it, wherever it went.
    end_strays_of(&run_dir).await;
    ctx.update(|snapshot| {
        snapshot.state = state;
        snapshot.stop_reason = stop_reason.clone();
    })?;
    ctx.journal(EventKind::RunFinished { state })?;
    let mut status = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner()).status();
    // Stopped by `breeze abort`, which records the abort once this engine has let go.
    let (state, stop_reason) = if state == RunState::Interrupted && run_dir.abort_marker().exists()
    {
        status.state = RunState::Aborted;
        for task in status.tasks.iter_mut().filter(|task| !task.state.is_terminal()) {
            task.reason = Some("run aborted; `breeze status` says where its work is".into());
        }
        (RunState::Aborted, Some("aborted with `breeze abort`".to_string()))
    } else {
        (state, stop_reason)
    };
    Ok(RunOutcome { run_id, state, status, stop_reason, run_dir: run_dir.root().to_path_buf() })
}

/// The plan a run started with: its copy in the run directory (the plan file itself has
/// changed since — every landing flips its row to done), else the file (older runs).
fn plan_of_run(run_dir: &RunDir, original: &Path) -> Result<Plan, EngineError> {
    let copy = run_dir.plan_copy(original);
    let Ok(text) = std::fs::read_to_string(&copy) else {
        return Ok(breeze_plan::load(original)?);
    };
    let is_toml = original.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    Ok(if is_toml {
        breeze_plan::parse_plan_toml(&text, original)?
    } else {
        breeze_plan::parse_plans_md(&text, original)?
    })
}

/// How this run confines its roles (`sandbox.*` and the kernel).
fn decide_containment(config: &Config) -> Result<Containment, EngineError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Containment::decide(config, home.as_deref())
}

/// The commit of this run's last landing, from its journal.
fn last_landing(run_dir: &RunDir) -> Option<breeze_git::Oid> {
    let events = read_events(&run_dir.events()).ok()?;
    events.into_iter().rev().find_map(|event| match event.event {
        EventKind::Landed { commit, .. } => breeze_git::Oid::from_str(&commit).ok(),
        _ => None,
    })
}

/// Reopens the repository with `branch` as main when one is configured.
fn with_main_branch(repo: Repo, branch: &str) -> Result<Repo, EngineError> {
    if branch.is_empty() || branch == repo.main_branch() {
        return Ok(repo);
    }
    let options =
        breeze_git::OpenOptions { main_branch: Some(branch.to_string()), ..Default::default() };
    match Repo::open_with(repo.workdir(), &options) {
        Err(breeze_git::GitError::InvalidName { .. }) => Err(EngineError::usage(
            format!("run.main_branch = {branch:?} in breeze.toml is not a valid git branch name"),
            "name the branch approved work lands on (e.g. \"main\"), or leave it empty for main, else master",
        )),
        other => Ok(other?),
    }
}

/// The plan to run: the given path, else `plan.toml`, else `Plans.md` at the root.
fn resolve_plan(root: &Path, given: Option<&Path>) -> Result<PathBuf, EngineError> {
    if let Some(path) = given {
        if !path.is_file() {
            return Err(EngineError::usage(
                format!("plan file {} does not exist", path.display()),
                "pass a Plans.md or plan.toml, or write one with `breeze init`",
            ));
        }
        return Ok(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    }
    for name in ["plan.toml", "Plans.md"] {
        let candidate = root.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(EngineError::usage(
        format!("no plan given and neither plan.toml nor Plans.md exists in {}", root.display()),
        "pass a plan (`breeze run PLAN`) or write one with `breeze init`",
    ))
}

/// Reads every task's `[task.sim]` table up front, so a typo is a plan error (exit 2)
/// before anything runs.
fn read_sims(plan: &Plan) -> Result<BTreeMap<String, SimSpec>, EngineError> {
    let mut sims = BTreeMap::new();
    for task in &plan.tasks {
        let spec = SimSpec::from_json(task.sim.as_ref()).map_err(|message| {
            EngineError::usage(
                format!("{}:{}: task {}: invalid [task.sim]: {message}", plan.path.display(), task.line, task.id),
                "the sim keys are listed in the scripted backend's documentation (README, \"The scripted backend\")",
            )
        })?;
        sims.insert(task.id.to_string(), spec);
    }
    Ok(sims)
}

/// The repository-relative path of the plan when it is a Plans.md tracked on main.
fn tracked_plans_file(repo: &Repo, plan: &Plan) -> Result<Option<String>, EngineError> {
    if plan.format != PlanFormat::PlansMd {
        return Ok(None);
    }
    let Ok(absolute) = std::path::absolute(&plan.path) else { return Ok(None) };
    let Ok(relative) = absolute.strip_prefix(repo.workdir()) else { return Ok(None) };
    let relative = relative.to_string_lossy().replace('\\', "/");
    Ok(repo.is_tracked_on_main(&relative)?.then_some(relative))
}

/// Lane worktrees left by an interrupted run are reused; what a killed worker left in
/// them is committed on its task branch first, so nothing is lost.
fn adopt_lanes(
    repo: &Repo,
    workers: u32,
    resumed: bool,
) -> Result<Vec<Option<breeze_git::Worktree>>, EngineError> {
    let mut lanes: Vec<Option<breeze_git::Worktree>> = vec![None; workers as usize];
    if !resumed {
        return Ok(lanes);
    }
    for (lane, slot) in lanes.iter_mut().enumerate() {
        if let Some(worktree) = repo.find_worktree(&format!("lane-{}", lane + 1))? {
            // A worker killed mid-way may leave what cannot be committed yet (conflict
            // markers it was resolving); the worktree is kept as it is for its task.
            if let Err(err) =
                repo.commit_worktree(&worktree, "breeze: work left by an interrupted run")
            {
                tracing::warn!("{}: {err}; kept as it is", worktree.path.display());
            }
            *slot = Some(worktree);
        }
    }
    Ok(lanes)
}

/// Ends role process groups a killed engine left behind.
pub(crate) async fn end_orphans_of(run_dir: &RunDir) {
    let Ok(events) = read_events(&run_dir.events()) else { return };
    let mut live: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for event in events {
        match event.event {
            EventKind::ProcessStarted { pid, start_ticks, .. }
            | EventKind::CommandStarted { pid, start_ticks, .. } => {
                live.insert(pid, start_ticks);
            }
            EventKind::ProcessEnded { pid, .. } | EventKind::CommandEnded { pid, .. } => {
                live.remove(&pid);
            }
            _ => {}
        }
    }
    for (pid, start_ticks) in live {
        let outcome =
            breeze_supervise::end_orphan_group(pid, start_ticks, std::time::Duration::from_secs(5))
                .await;
        tracing::info!(pid, "orphaned role process group: {outcome:?}");
    }
    end_strays_of(run_dir).await;
}

/// Ends processes of the run's roles that left their process groups (`setsid`, a double
/// fork): every role process carries `BREEZE_RUN_ID` in its environment.
pub(crate) async fn end_strays_of(run_dir: &RunDir) {
    let Some(run_id) = run_dir.root().file_name().and_then(|name| name.to_str()) else { return };
    let ended = breeze_supervise::end_processes_with_env(
        "BREEZE_RUN_ID",
        run_id,
        std::time::Duration::from_secs(5),
    )
    .await;
    if !ended.is_empty() {
        tracing::info!(pids = ?ended, "ended processes of the run's roles that had left their groups");
    }
}

/// After a finished run: remove the lane worktrees (clean ones) and the branches of
/// landed tasks; escalated tasks keep their branches (their work lives there).
fn cleanup_after_run(ctx: &RunContext) {
    let lanes: Vec<breeze_git::Worktree> =
        ctx.lanes.lock().unwrap_or_else(|p| p.into_inner()).iter().flatten().cloned().collect();
    let records = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner()).tasks.clone();
    for worktree in lanes {
        match ctx.repo.remove_worktree(&worktree.path, None, false) {
            Ok(breeze_git::RemoveOutcome::KeptDirty { paths }) => ctx.report(ProgressEvent::Kept {
                what: format!("lane {}", worktree.path.display()),
                reason: format!(
                    "it has uncommitted changes in {} file(s) ({}); `breeze clean --force` discards them",
                    paths.len(),
                    paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                ),
            }),
            Ok(_) => {
                let _ = ctx.journal(EventKind::WorktreeRemoved {
                    path: worktree.path.display().to_string(),
                    branch: None,
                });
            }
            Err(err) => tracing::warn!("cannot remove {}: {err}", worktree.path.display()),
        }
    }
    // The verify command's worktree holds nothing of anyone's: it goes, whatever it holds.
    let integration = ctx.repo.worktree_root().join(breeze_git::INTEGRATION_WORKTREE);
    if integration.exists()
        && let Err(err) = ctx.repo.remove_worktree(&integration, None, true)
    {
        tracing::warn!("cannot remove {}: {err}", integration.display());
    }
    for record in records.iter().filter(|record| record.state == TaskState::Landed) {
        let Some(branch) = &record.branch else { continue };
        let landed = record.head.as_deref().and_then(|head| breeze_git::Oid::from_str(head).ok());
        match ctx.repo.delete_branch_if_landed(branch, landed) {
            Ok(breeze_git::BranchCleanup::Deleted) => {
                let _ = ctx.journal(EventKind::WorktreeRemoved {
                    path: String::new(),
                    branch: Some(branch.clone()),
                });
            }
            Ok(breeze_git::BranchCleanup::Missing) => {}
            Ok(breeze_git::BranchCleanup::Kept { tip }) => ctx.report(ProgressEvent::Kept {
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
}

/// The snapshot of a run (the latest by default).
pub fn load_run(repo_dir: &Path, run_id: Option<&str>) -> Result<RunSnapshot, EngineError> {
    let repo = Repo::open(repo_dir)?;
    let root = repo.workdir();
    let run_id = match run_id {
        Some(id) => id.to_string(),
        None => latest_run(root).ok_or_else(|| {
            EngineError::usage(
                "there are no runs in this repository yet",
                "start one with `breeze run PLAN`",
            )
        })?,
    };
    let path = RunDir::new(root, &run_id).snapshot();
    if !path.is_file() {
        return Err(EngineError::usage(
            format!("there is no run {run_id}"),
            "list runs with `ls .breeze/runs`",
        ));
    }
    Ok(RunSnapshot::load(&path)?)
}

/// Whether an engine currently holds the repository's run lock.
pub fn engine_alive(repo_dir: &Path) -> bool {
    let Ok(repo) = Repo::open(repo_dir) else { return false };
    RepoLock::is_held(repo.workdir())
}
