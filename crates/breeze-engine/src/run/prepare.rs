//! Before a run goes on: everything `breeze run` and `breeze resume` check and load — the
//! repository and its main branch, the configuration and containment, the plan, the run
//! folder and its snapshot. A [`Prepared`] run has passed every check that needs no role.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use breeze_git::Repo;
use breeze_plan::{Plan, PlanFormat};
use breeze_protocol::{EventKind, RunState};

use super::options::RunOptions;
use crate::clock;
use crate::config::Config;
use crate::containment::Containment;
use crate::error::EngineError;
use crate::journal::for_each_event;
use crate::lock::RepoLock;
use crate::roles::LaneWatches;
use crate::roles::scripted::SimSpec;
use crate::run_dir::{RunDir, latest_run};
use crate::snapshot::{BudgetRecord, FORMAT_VERSION, ObjectId, RunSnapshot, TaskPhase, TaskRecord};

/// A run ready to go on.
pub(super) struct Prepared {
    pub repo: Arc<Repo>,
    pub config: Config,
    /// How roles are confined.
    pub containment: Containment,
    /// main as this run last knew it (its start, or its last landing).
    pub known_main: breeze_git::Oid,
    /// main's tip now, for the journal.
    pub main_tip: ObjectId,
    /// What the user should know before the run starts (shown after the run banner).
    pub notices: Vec<String>,
    /// Who reviews and advises the worker's work, and whether each is independent.
    pub pairings: Vec<(String, bool)>,
    pub plan: Plan,
    pub analysis: breeze_plan::Analysis,
    pub sims: BTreeMap<String, SimSpec>,
    /// Repository-relative path of the plan when it is a Plans.md tracked on main.
    pub plans_file: Option<String>,
    pub run_dir: RunDir,
    pub snapshot: RunSnapshot,
    /// Whether this continues an interrupted run.
    pub resumed: bool,
    /// The lanes' watches, some started ahead of the run.
    pub watches: Arc<LaneWatches>,
    /// Held until the run ends.
    pub lock: RepoLock,
}

/// A new run's repository, configuration and plan, opened before the preflight so that
/// its checkouts are read ahead from the start (`preload.rs`) while the preflight's checks
/// keep one core busy; [`new_run`] goes on from here.
pub(super) struct Opened {
    repo: Arc<Repo>,
    root: PathBuf,
    config: Config,
    plan_path: PathBuf,
    plan: Plan,
    analysis: breeze_plan::Analysis,
    watches: Arc<LaneWatches>,
    /// Told once the run holds the repository's lock: the user's indexes are read ahead
    /// under it. Dropped unsent, on an error before, it ends the read ahead.
    locked: std::sync::mpsc::Sender<()>,
}

/// Opens a new run's repository on its landing branch, loads its configuration and plan,
/// and starts reading ahead, then walks main's trees meanwhile: opened without choosing its
/// checkout tool (which may walk them too, [`breeze_git::OpenOptions::checkout_tool_later`]),
/// so that the threads start before any walk; [`new_run`] confirms the choice.
pub(super) fn open_new_run(options: &RunOptions) -> Result<Opened, EngineError> {
    let later = breeze_git::OpenOptions { checkout_tool_later: true, ..Default::default() };
    let repo = Repo::open_with(&options.repo_dir, &later)?;
    let root = repo.workdir().to_path_buf();
    let mut config = match options.config.clone() {
        Some(config) => config,
        None => Config::load(&root)?,
    };
    // The branch the checkout is on: the plan is read there, and the work lands there.
    let target = crate::target_branch::landing_branch(&repo, &config.main_branch)?;
    let repo = Arc::new(
        with_main_branch(repo, &target, true)?
            .with_worktree_root(&crate::worktree_folder::choice(&config))
            .with_max_file_bytes(config.max_file_bytes),
    );
    config.max_workers = lanes_asked(options)?.unwrap_or(config.max_workers);
    let plan_path = resolve_plan(&root, options.plan.as_deref())?;
    let mut plan = breeze_plan::load_with_extensions(&plan_path, crate::PLAN_EXTENSIONS)?;
    plan.shared_files = crate::changelog::shared_files(&repo, &config.land.changelog);
    refuse_unnumbered_items(&plan)?;
    let analysis = breeze_plan::analyze(&plan, config.max_workers)?;
    // The first tasks' lanes' indexes then the user's ones on one thread (those wait for
    // the run's lock, which they are read under, into their landing scratch folders); the
    // lanes' watches then the review checkout on another — what the first task needs first
    // is ready first; main's trees (the cache-trees of the first index files written:
    // opening did not walk them, unless a filter command is configured) here, meanwhile.
    let watches = Arc::new(LaneWatches::default());
    let (locked, when_locked) = std::sync::mpsc::channel::<()>();
    let kept = kept_lanes(&repo, analysis.workers);
    let lanes = kept.clone();
    read_ahead(&repo, move |repo| {
        for lane in &lanes {
            repo.preload_checkout(lane);
        }
        if when_locked.recv().is_ok() {
            repo.preload_landing_indexes();
        }
    });
    let ahead = watches.clone();
    read_ahead(&repo, move |repo| {
        watch_checkouts_ahead(repo, &ahead, &kept);
        read_checkouts_ahead(repo, &ahead, &[breeze_git::REVIEW_CHECKOUT.to_string()]);
    });
    repo.preload_main_trees();
    Ok(Opened { repo, root, config, plan_path, plan, analysis, watches, locked })
}

/// Checks a new run of a plan, [opened](open_new_run) and read ahead from, and creates its
/// run folder.
pub(super) fn new_run(opened: Opened) -> Result<Prepared, EngineError> {
    let Opened { repo, root, mut config, plan_path, plan, analysis, watches, locked } = opened;
    // Refused here as opening refuses elsewhere: external filters without a `git` to run
    // them (main's trees were walked when opened: a lookup now).
    repo.choose_checkout_tool()?;
    let containment = decide_containment(&config, &repo)?;
    let pairings = crate::independence::report(&config, &root);
    let sims = crate::roles::scripted::sims_of(&plan)?;
    repo.ensure_not_mid_operation()?;
    repo.ensure_excluded()?;
    let main_tip = repo.main_tip()?;
    let plans_file = tracked_plans_file(&repo, &plan)?;
    refuse_uncommitted_plan(&repo, plans_file.as_deref())?;
    let mut notices = untracked_plan_notice(&repo, &plan, plans_file.as_deref());
    // What the planner read around (rows it could not read, dependencies taken as done).
    notices.extend(plan.warnings.iter().map(ToString::to_string));
    notices.extend(output_dir_notices());
    let target_tip = fetch_landing_target(&repo, &config)?;
    let landed_before =
        landed_before(&repo, &plan, &config.land.message, target_tip, &mut notices)?;
    let budget = BudgetRecord {
        caps: crate::budget::caps_in_force(&config.budget.caps, &BudgetRecord::default()),
        ..BudgetRecord::default()
    };
    let lock = RepoLock::acquire(&root)?;
    refuse_if_resumable(&root)?;
    let _ = locked.send(());
    let run_dir = create_run_dir(&root, &plan_path)?;
    crate::role_commands::fix_for_run(&mut config, &root, run_dir.root())?;
    let now = clock::now_rfc3339();
    let mut snapshot = RunSnapshot {
        format_version: FORMAT_VERSION,
        run_id: run_dir.run_id().to_string(),
        plan: plan_path.display().to_string(),
        state: RunState::Running,
        workers: analysis.workers,
        main_branch: repo.main_branch().to_string(),
        main_tip_at_start: main_tip.into(),
        started_at: now.clone(),
        updated_at: now,
        stop_reason: None,
        tasks: first_records(&plan, &analysis, &landed_before),
        consulted: BTreeMap::new(),
        universal_violations: Vec::new(),
        containment: None,
        budget,
        generation: 0,
        waiting: Vec::new(),
        windows: Vec::new(),
    };
    snapshot.save(&run_dir.snapshot()).map_err(|err| {
        EngineError::io(format!("cannot write {}", run_dir.snapshot().display()), err)
    })?;
    Ok(Prepared {
        repo,
        config,
        containment,
        known_main: main_tip,
        main_tip: main_tip.into(),
        notices,
        pairings,
        plan,
        analysis,
        sims,
        plans_file,
        run_dir,
        snapshot,
        resumed: false,
        watches,
        lock,
    })
}

/// `--max-workers`, when given and in range.
fn lanes_asked(options: &RunOptions) -> Result<Option<u32>, EngineError> {
    match options.max_workers {
        Some(workers) if !(1..=3).contains(&workers) => Err(EngineError::usage(
            format!("--max-workers {workers} is out of range"),
            "use 1, 2 or 3 lanes",
        )),
        workers => Ok(workers),
    }
}

/// What the user is told about the build-output folders set in the environment, which
/// the run's commands and roles do not get.
fn output_dir_notices() -> Vec<String> {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    let dropped = crate::tool_caches::without_output_dirs(&mut env);
    dropped.into_iter().map(|var| format!(
        "{var} is not passed to the run's commands and roles: each lane and checkout builds in its own target/ (lanes building into one folder would overwrite each other's artifacts)"
    )).collect()
}

/// Checks the latest interrupted run and makes its snapshot ready to go on.
pub(super) fn interrupted_run(options: &RunOptions) -> Result<Prepared, EngineError> {
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
    let mut config = match options.config.clone() {
        Some(config) => config,
        None => Config::load(&root)?,
    };
    crate::role_commands::fix_for_run(&mut config, &root, run_dir.root())?;
    // The run keeps landing on the branch it started with.
    let repo = Arc::new(
        with_main_branch(repo, &snapshot.main_branch, false)?
            .with_worktree_root(&crate::worktree_folder::choice(&config))
            .with_max_file_bytes(config.max_file_bytes),
    );
    let containment = decide_containment(&config, &repo)?;
    let pairings = crate::independence::report(&config, &root);
    let watches = Arc::new(LaneWatches::default());
    let spent = snapshot.spent();
    options.budget_raise.resume(&config.budget.caps, &mut snapshot.budget, &spent)?;
    let mut plan = run_dir.plan_of_run(Path::new(&snapshot.plan))?;
    plan.shared_files = crate::changelog::shared_files(&repo, &config.land.changelog);
    let analysis = breeze_plan::analyze(&plan, snapshot.workers)?;
    let sims = crate::roles::scripted::sims_of(&plan)?;
    keep_plan_order(&mut snapshot, &plan)?;
    refuse_other_landing_mode(&snapshot, &config)?;
    repo.ensure_not_mid_operation()?;
    repo.ensure_excluded()?;
    // A checkout update a kill cut short is finished or undone before anything else
    // looks at the checkout.
    let mut notices = super::recovery::finish_checkout_updates(&repo, &run_dir)?;
    recognize_landings(&repo, &mut snapshot)?;
    snapshot.state = RunState::Running;
    snapshot.stop_reason = None;
    let main_tip = repo.main_tip()?.into();
    let plans_file = tracked_plans_file(&repo, &plan)?;
    let known_main = last_landing(&run_dir).unwrap_or(snapshot.main_tip_at_start.0);
    notices.extend(plan.warnings.iter().map(ToString::to_string));
    // The review checkout and the user's index, once what the kill left is dealt with (a
    // resumed run's lanes are its own: taken as the kill left them).
    let ahead = watches.clone();
    read_ahead(&repo, move |repo| {
        repo.preload_main_trees();
        read_checkouts_ahead(repo, &ahead, &[breeze_git::REVIEW_CHECKOUT.to_string()]);
        repo.preload_landing_indexes();
    });
    Ok(Prepared {
        repo,
        config,
        containment,
        known_main,
        main_tip,
        notices,
        pairings,
        plan,
        analysis,
        sims,
        plans_file,
        run_dir,
        snapshot,
        resumed: true,
        watches,
        lock,
    })
}

/// Runs `read` on `repo` on a thread of its own, left to finish or to end with the process
/// (what it reads is taken only while still as read: `preload.rs`).
fn read_ahead(repo: &Arc<Repo>, read: impl FnOnce(&Repo) + Send + 'static) {
    let repo = repo.clone();
    let spawned = std::thread::Builder::new()
        .name("breeze-read-ahead".to_string())
        .spawn(move || read(&repo));
    if let Err(err) = spawned {
        tracing::debug!("could not start reading ahead: {err}");
    }
}

/// Watches the checkout `name` at `path` from the folders its record knows when a run
/// parked it and its top folder is as parked (what `task/lane.rs` and
/// `task/review_checkout.rs` do at their first look, where the watch is taken).
fn watch_parked_ahead(root: &Path, watches: &LaneWatches, name: &str, path: &Path) {
    let Some(record) = crate::lane_record::load(root, name) else { return };
    if record.state != crate::lane_record::LaneState::Parked {
        return;
    }
    if let Some(known) = record.known_folders(path) {
        watches.watch_ahead(path, &known);
    }
}

/// The kept lanes a run's `lanes` will take, as `task/lane.rs` looks for them: for each, the
/// first of its names ([`crate::lane_record::lane_names`]) with a lane's record — a lane
/// made as `lane-<n>-2` because `lane-<n>` was held is taken as such by every later run.
fn kept_lanes(repo: &Repo, lanes: u32) -> Vec<String> {
    let Ok(folder) = repo.worktree_root() else { return Vec::new() };
    (1..=lanes)
        .filter_map(|lane| {
            crate::lane_record::lane_names(lane)
                .take_while(|name| folder.join(name).exists())
                .find(|name| crate::lane_record::load(repo.workdir(), name).is_some())
        })
        .collect()
}

/// Reads ahead breeze's checkouts `names` (the kept lanes the run takes, the review
/// checkout), each as its first step needs it: watched from the folders its record
/// knows, then its index read.
fn read_checkouts_ahead(repo: &Repo, watches: &LaneWatches, names: &[String]) {
    for name in names {
        watch_checkouts_ahead(repo, watches, std::slice::from_ref(name));
        repo.preload_checkout(name);
    }
}

/// Watches breeze's checkouts `names` ahead, each from the folders its record knows.
fn watch_checkouts_ahead(repo: &Repo, watches: &LaneWatches, names: &[String]) {
    let Ok(root) = repo.worktree_root() else { return };
    for name in names {
        watch_parked_ahead(repo.workdir(), watches, name, &root.join(name));
    }
}

/// A plan with to-do items that have no task id would run without them: breeze offers to
/// number them instead (no question asked — CI and scripts run breeze too).
fn refuse_unnumbered_items(plan: &Plan) -> Result<(), EngineError> {
    let Some(first) = plan.unnumbered.first() else { return Ok(()) };
    let count = plan.unnumbered.len();
    let (items, lines) = if count == 1 {
        ("1 to-do item has".to_owned(), format!("line {first}"))
    } else {
        let listed: Vec<String> = plan.unnumbered.iter().map(ToString::to_string).collect();
        (format!("{count} to-do items have"), format!("lines {}", listed.join(", ")))
    };
    Err(EngineError::usage(
        format!(
            "{items} no task id in {} ({lines}), so breeze would run without them",
            plan.path.display()
        ),
        format!(
            "run `breeze plan --fill-ids` to number the {count} item(s), commit the plan, then `breeze run` again"
        ),
    ))
}

/// With `[land] to` a remote: fetches the branch landings go to, so that the first lanes
/// start from its tip and tasks already there are known. Its tip, `None` when the remote
/// has no such branch (or landings are local).
fn fetch_landing_target(
    repo: &Repo,
    config: &Config,
) -> Result<Option<breeze_git::Oid>, EngineError> {
    if !config.land.is_remote() {
        return Ok(None);
    }
    let target = config.land.target(repo.main_branch());
    let access = breeze_git::RemoteAccess::from_process(config.land.remote_timeout);
    Ok(repo.fetch_branch(&target, &access)?)
}

/// Tasks of earlier runs already on main — or on the remote branch landings go to, at
/// `target_tip` — found by their trailers: they are not run again, whatever the plan says,
/// and the user is told.
fn landed_before(
    repo: &Repo,
    plan: &Plan,
    template: &crate::landing_message::MessageTemplate,
    target_tip: Option<breeze_git::Oid>,
    notices: &mut Vec<String>,
) -> Result<BTreeMap<String, breeze_git::Oid>, EngineError> {
    let subjects = crate::landing_message::subjects_of(plan, template);
    let mut landed = repo.find_landed_tasks(&subjects)?;
    if let Some(tip) = target_tip {
        for (id, commit) in repo.find_landed_tasks_from(tip, &subjects)? {
            landed.entry(id).or_insert(commit);
        }
    }
    for (id, commit) in &landed {
        notices.push(format!(
            "task {id} is already on {} ({}); it is not run again (mark it done in the plan, or give it a new id to redo it)",
            repo.main_branch(),
            &commit.to_string()[..12]
        ));
    }
    Ok(landed)
}

/// The records of a new run: every task queued, except those already on main.
fn first_records(
    plan: &Plan,
    analysis: &breeze_plan::Analysis,
    landed_before: &BTreeMap<String, breeze_git::Oid>,
) -> Vec<TaskRecord> {
    plan.tasks
        .iter()
        .enumerate()
        .map(|(index, task)| {
            let group = Some(analysis.group_of(index) as u32);
            let mut record = TaskRecord::new(task.id.as_str(), &task.title, group);
            if let Some(commit) = landed_before.get(task.id.as_str()) {
                record.phase = TaskPhase::Landed;
                record.commit = Some((*commit).into());
                record.reason = Some("already on main before this run".into());
            }
            record
        })
        .collect()
}

/// Keeps the records in the plan's order; a task the plan gained since the start cannot be
/// resumed, tasks it lost are dropped.
fn keep_plan_order(snapshot: &mut RunSnapshot, plan: &Plan) -> Result<(), EngineError> {
    if let Some(added) = plan.tasks.iter().find(|task| snapshot.task(task.id.as_str()).is_none()) {
        return Err(EngineError::usage(
            format!(
                "task {} was added to {} after run {} started",
                added.id, snapshot.plan, snapshot.run_id
            ),
            "resume needs the plan the run started with; revert the plan change, or `breeze abort` and start a new run",
        ));
    }
    let mut records: BTreeMap<String, TaskRecord> =
        snapshot.tasks.drain(..).map(|record| (record.id.clone(), record)).collect();
    snapshot.tasks =
        plan.tasks.iter().filter_map(|task| records.remove(task.id.as_str())).collect();
    Ok(())
}

/// A landing that happened just before the engine died is recognized by its trailers
/// (the session journals it: `recovery::journal_landings`); every other unfinished task
/// goes on from its phase.
fn recognize_landings(repo: &Repo, snapshot: &mut RunSnapshot) -> Result<(), EngineError> {
    let stop_at = snapshot.main_tip_at_start.0;
    // Main read once for all the tasks, not once per task.
    let seen = crate::landings_seen::LandingsSeen::default();
    for record in snapshot.tasks.iter_mut().filter(|record| !record.phase.is_terminal()) {
        if let Some(commit) = seen.find(repo, &snapshot.run_id, &record.id, stop_at)? {
            record.phase = TaskPhase::Landed;
            record.commit = Some(commit.into());
            record.set_cause(None);
        } else if !record.phase.waits_to_land() {
            record.set_cause(None);
        }
    }
    Ok(())
}

/// Open pull requests are followed only by a landing mode that follows what it published
/// (`[land] to = "pull-request"`): a run that has some cannot be resumed landing elsewhere.
fn refuse_other_landing_mode(snapshot: &RunSnapshot, config: &Config) -> Result<(), EngineError> {
    if super::land::choose(config).follow_every().is_some() {
        return Ok(());
    }
    let Some(open) = snapshot.tasks.iter().find(|record| record.phase == TaskPhase::PrOpen) else {
        return Ok(());
    };
    Err(EngineError::usage(
        format!(
            "task {} of run {} has an open pull request, but breeze.toml now says [land] to = {:?}",
            open.id,
            snapshot.run_id,
            config.land.to.as_str()
        ),
        "put back `to = \"pull-request\"` in [land] to resume the run, or `breeze abort` it",
    ))
}

/// A Plans.md breeze will mark must not hold the user's uncommitted edits.
fn refuse_uncommitted_plan(repo: &Repo, plans_file: Option<&str>) -> Result<(), EngineError> {
    let Some(plans_file) = plans_file else { return Ok(()) };
    if !repo.main_checkout_has_changes(plans_file)? {
        return Ok(());
    }
    Err(EngineError::usage(
        format!("{plans_file} has uncommitted changes in your checkout of {}", repo.main_branch()),
        format!(
            "breeze marks tasks done in {plans_file} as they land, which would touch your edits: commit it first (`git commit {plans_file}`), then run again"
        ),
    ))
}

/// What the user should know about a Plans.md git does not track.
fn untracked_plan_notice(repo: &Repo, plan: &Plan, plans_file: Option<&str>) -> Vec<String> {
    if plan.format != PlanFormat::PlansMd || plans_file.is_some() {
        return Vec::new();
    }
    vec![format!(
        "{} is not tracked by git on {}: breeze cannot mark tasks cc:done in it; tasks already on main are recognized by their Breeze-Task trailers and not run again (commit the plan to have it kept up to date)",
        plan.path.display(),
        repo.main_branch()
    )]
}

/// An interrupted run must be resumed or given up before a new one starts.
fn refuse_if_resumable(root: &Path) -> Result<(), EngineError> {
    let Some(previous) = latest_run(root) else { return Ok(()) };
    let Ok(snapshot) = RunSnapshot::load(&RunDir::new(root, &previous).snapshot()) else {
        return Ok(());
    };
    if !snapshot.state.is_resumable() {
        return Ok(());
    }
    Err(EngineError::usage(
        format!("run {previous} was interrupted and can be resumed"),
        "continue it with `breeze resume`, or give it up with `breeze abort` before starting a new run",
    ))
}

/// The run folder of a new run, with a copy of its plan.
fn create_run_dir(root: &Path, plan_path: &Path) -> Result<RunDir, EngineError> {
    let run_id = uuid::Uuid::now_v7().to_string();
    let run_dir = RunDir::new(root, &run_id);
    run_dir.create().map_err(|err| {
        EngineError::io(format!("cannot create {}", run_dir.root().display()), err)
    })?;
    let copy = run_dir.plan_copy(plan_path);
    std::fs::copy(plan_path, &copy).map_err(|err| {
        EngineError::io(format!("cannot keep a copy of the plan in {}", copy.display()), err)
    })?;
    Ok(run_dir)
}

/// How this run confines its roles (`sandbox.*` and the kernel).
fn decide_containment(config: &Config, repo: &Repo) -> Result<Containment, EngineError> {
    Containment::for_repository(config, repo)
}

/// The commit of this run's last landing, from its journal.
fn last_landing(run_dir: &RunDir) -> Option<breeze_git::Oid> {
    let mut last = None;
    for_each_event(&run_dir.events(), |event| {
        if let EventKind::Landed { commit, .. } = event.event
            && let Ok(oid) = breeze_git::Oid::from_str(&commit)
        {
            last = Some(oid);
        }
    })
    .ok()?;
    last
}

/// Reopens the repository with `branch` as main when one is configured (its checkout tool
/// chosen `later` or when opened: [`breeze_git::OpenOptions::checkout_tool_later`]).
fn with_main_branch(repo: Repo, branch: &str, later: bool) -> Result<Repo, EngineError> {
    if branch.is_empty() || branch == repo.main_branch() {
        return Ok(repo);
    }
    let options = breeze_git::OpenOptions {
        main_branch: Some(branch.to_string()),
        checkout_tool_later: later,
        ..Default::default()
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_git::{OpenOptions, WorktreeRoot};
    use breeze_test_support::repo::TestRepo;

    #[test]
    fn the_lanes_read_ahead_are_those_the_run_takes_under_their_second_names_too() {
        // A lane made as `lane-1-2` (its first name was held) is taken as such by every later
        // run; read ahead as `lane-1`, its reads were wasted and its first task did them again.
        let test = TestRepo::with_files(&[("a.txt", "a\n")]);
        let root = test.root.as_path();
        let options = OpenOptions {
            worktree_root: WorktreeRoot::Under(test.worktrees()),
            ..OpenOptions::default()
        };
        let repo = Repo::open_with(root, &options).unwrap();
        let lanes = repo.worktree_root().unwrap();
        let lane = |name: &str, record: bool| {
            std::fs::create_dir_all(lanes.join(name)).unwrap();
            if record {
                crate::lane_record::save(
                    root,
                    name,
                    &crate::lane_record::LaneRecord::in_use("r", None),
                );
            }
        };
        lane("lane-1", false); // a folder of something else, held
        lane("lane-1-2", true);
        lane("lane-2", true);
        lane("lane-3-2", true); // never taken: `lane-3` itself is free, a new lane goes there
        assert_eq!(kept_lanes(&repo, 3), ["lane-1-2", "lane-2"]);
        assert_eq!(kept_lanes(&repo, 1), ["lane-1-2"]);
    }
}
