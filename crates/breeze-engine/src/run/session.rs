//! A prepared run going on: its files' store, the role runner, the shared context, the
//! dispatcher — and what is recorded when it ends, however it ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_git::Repo;
use breeze_protocol::{ContainmentStatus, EventKind, RunState};
use tokio_util::sync::CancellationToken;

use super::book::TaskBook;
use super::cleanup;
use super::context::RunContext;
use super::dispatcher::{DispatchEnd, Dispatcher};
use super::options::{RunOptions, RunOutcome};
use super::prepare::Prepared;
use super::write_sets::WriteSets;
use crate::containment::RoleGuard;
use crate::error::EngineError;
use crate::journal::{RunStore, for_each_event};
use crate::lock::RepoLock;
use crate::progress::ProgressEvent;
use crate::roles::{RoleRunner, RoleRunnerParts};
use crate::run_dir::RunDir;

/// How long processes that outlived the run get between SIGTERM and SIGKILL.
const STRAY_GRACE: Duration = Duration::from_secs(5);

/// Runs a prepared run until every task is done or it stops.
pub(super) async fn go_on(
    prepared: Prepared,
    options: RunOptions,
    cancel: CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let resumed = prepared.resumed;
    if resumed {
        end_orphans_of(&prepared.run_dir).await;
    }
    let run_dir = prepared.run_dir.clone();
    let (ctx, _lock) = context(prepared, &options, cancel.clone()).await?;
    // A stop ends long git steps (checkouts by the git CLI, staging) where they are, not
    // after them.
    let stopper = {
        let repo = ctx.repo.clone();
        tokio::spawn(async move {
            cancel.cancelled().await;
            repo.stop_long_steps();
        })
    };
    // Landings a kill kept out of the journal are journaled before anything else.
    let recorded = if resumed { super::recovery::journal_landings(&ctx).await } else { Ok(()) };
    // A main moved onto a lane's commit while no engine watched is refused before anything.
    let end = match recorded.and_then(|()| ctx.roles.guard.check_main()) {
        Ok(()) => {
            let land = super::land::choose(&ctx.config);
            Dispatcher::new(ctx.clone(), land).waiting_for_people(options.wait).run().await
        }
        Err(err) => Err(err),
    };
    let (state, stop_reason) = match end {
        Ok(DispatchEnd::Finished) => {
            let all_landed =
                ctx.book.phases().iter().all(|phase| *phase == crate::snapshot::TaskPhase::Landed);
            cleanup::after_run(&ctx).await;
            (if all_landed { RunState::Succeeded } else { RunState::Failed }, None)
        }
        Ok(DispatchEnd::Interrupted(reason)) => (RunState::Interrupted, Some(reason)),
        Ok(DispatchEnd::Waiting(reason)) => (RunState::Waiting, Some(reason)),
        Err(err) => (RunState::Interrupted, Some(stop_reason_of(&err))),
    };
    // No process of the run's roles outlives it, wherever it went (at once after a hard
    // stop: the user asked for it twice).
    stopper.abort();
    let grace = if ctx.supervisor.is_stopping_hard() { Duration::ZERO } else { STRAY_GRACE };
    end_strays_of(&run_dir, grace).await;
    finish(&ctx, &run_dir, state, stop_reason).await
}

/// Opens the run's files, builds the role runner and the shared context, and tells the
/// user the run has started. The lock is handed back: it is held until the run ends.
async fn context(
    prepared: Prepared,
    options: &RunOptions,
    cancel: CancellationToken,
) -> Result<(Arc<RunContext>, RepoLock), EngineError> {
    let (config, run_dir, mut snapshot) = (prepared.config, prepared.run_dir, prepared.snapshot);
    let (containment, resumed) = (prepared.containment, prepared.resumed);
    let root = prepared.repo.workdir().to_path_buf();
    // No step reads a lane file bigger than the gate lets land.
    let repo = prepared.repo;
    snapshot.containment =
        Some(ContainmentStatus { kernel: containment.enforced, summary: containment.summary() });
    let notifier = notifier_of(&config, &root, &run_dir, options);
    let events = options.events.clone();
    let store =
        open_store(&run_dir, &snapshot, prepared.main_tip, resumed, notifier.clone(), events)
            .await?;
    let write_sets = Arc::new(WriteSets::new(&prepared.plan, &snapshot.tasks));
    let roles = RoleRunner::new(RoleRunnerParts {
        config: config.clone(),
        run_dir: run_dir.clone(),
        run_id: snapshot.run_id.clone(),
        repo_root: root,
        store: store.clone(),
        supervisor: options.supervisor.clone(),
        engine_env: std::env::vars().collect(),
        guard: role_guard(&config, &repo, &containment, prepared.known_main),
        write_sets: write_sets.checks(&prepared.plan),
        sims: prepared.sims,
        budget: Arc::new(crate::budget::Budget::new(
            snapshot.budget.caps,
            crate::budget::Prices::of(&config),
            &snapshot.tasks,
        )),
        windows: snapshot.windows.clone(),
        calls_pass_the_gate: true,
        watches: prepared.watches,
    });
    let (lanes, retired) = lanes_of(&repo, snapshot.workers, resumed).await?;
    // What killed engines left in the temporary folder goes, off the first task's way.
    drop(tokio::task::spawn_blocking(crate::scratch::remove_those_of_ended_engines));
    let mut notices = prepared.notices;
    notices.extend(retired);
    let progress = options.progress.clone();
    let (plan, analysis) = (prepared.plan, prepared.analysis);
    let pairings = &prepared.pairings;
    let start = Start { snapshot: &snapshot, plan: &plan, analysis: &analysis, pairings };
    announce(&progress, &start, &containment, notices, resumed);
    let verify_cache = crate::verify_cache::VerifyCache::open(repo.workdir(), &config.verify);
    let ctx = Arc::new(RunContext {
        run_id: snapshot.run_id.clone(),
        main_tip_at_start: snapshot.main_tip_at_start,
        repo,
        config,
        plan,
        analysis,
        run_dir,
        landings_seen: Default::default(),
        book: TaskBook::new(snapshot, store, progress),
        roles,
        supervisor: options.supervisor.clone(),
        backoff: options.backoff,
        review_lock: tokio::sync::Mutex::new(()),
        advice_lock: tokio::sync::Mutex::new(()),
        land_lock: tokio::sync::Mutex::new(()),
        verify_cache,
        main_checks: Default::default(),
        cancel: cancel.child_token(),
        tracked_plans_file: prepared.plans_file,
        lanes: Mutex::new(lanes),
        write_sets,
        scope_waiting: Mutex::default(),
        notifier,
        told_main_stays: Default::default(),
    });
    Ok((ctx, prepared.lock))
}

/// `notify.command`'s notifier, when one is set.
fn notifier_of(
    config: &crate::config::Config,
    root: &std::path::Path,
    run_dir: &RunDir,
    options: &RunOptions,
) -> Option<Arc<crate::notify::Notifier>> {
    let logs = run_dir.root().join("logs");
    let supervisor = options.supervisor.clone();
    crate::notify::Notifier::new(&config.notify_command, root.to_path_buf(), logs, supervisor)
        .map(Arc::new)
}

/// What keeps the run's roles to their lanes: the containment, main as it was known, and
/// the remote branch landings go to (no role may push there).
fn role_guard(
    config: &crate::config::Config,
    repo: &Arc<Repo>,
    containment: &crate::containment::Containment,
    known_main: breeze_git::Oid,
) -> Arc<RoleGuard> {
    let target = config.land.is_remote().then(|| config.land.target(repo.main_branch()));
    Arc::new(RoleGuard::new(containment.clone(), repo.clone(), known_main).knowing_remote(target))
}

/// The run's lanes, adopted from an interrupted run or kept by a finished one, off the
/// async threads; with what the user should know about breeze's worktrees elsewhere.
async fn lanes_of(
    repo: &Arc<Repo>,
    workers: u32,
    resumed: bool,
) -> Result<(Vec<Option<breeze_git::Worktree>>, Vec<String>), EngineError> {
    let repo = repo.clone();
    tokio::task::spawn_blocking(move || {
        // What breeze made outside the worktree folder before is out of the lanes' way.
        let retired = crate::worktree_folder::retire_elsewhere(&repo, resumed);
        adopt_lanes(&repo, workers, resumed).map(|lanes| (lanes, retired))
    })
    .await
    .map_err(EngineError::internal("adopting the lanes"))?
}

/// What the run start tells about the run.
struct Start<'a> {
    snapshot: &'a crate::snapshot::RunSnapshot,
    plan: &'a breeze_plan::Plan,
    analysis: &'a breeze_plan::Analysis,
    /// Who reviews and advises the worker's work ([`crate::independence::report`]).
    pairings: &'a [(String, bool)],
}

/// Tells the user the run has started: how many lanes and tasks, how roles are confined,
/// who reviews whose work, the budget, and what they should know first.
fn announce(
    progress: &crate::progress::ProgressSink,
    start: &Start<'_>,
    containment: &crate::containment::Containment,
    notices: Vec<String>,
    resumed: bool,
) {
    let Start { snapshot, plan, analysis, pairings } = *start;
    let started = ProgressEvent::RunStarted {
        run_id: snapshot.run_id.clone(),
        workers: snapshot.workers,
        tasks: plan.tasks.len(),
        groups: analysis.groups.len(),
        resumed,
        lands_on: snapshot.main_branch.clone(),
    };
    let contained = ProgressEvent::Containment {
        enforced: containment.enforced,
        summary: containment.summary(),
    };
    let pairings = pairings.iter().map(|(line, independent)| ProgressEvent::Pairing {
        line: line.clone(),
        independent: *independent,
    });
    let budget = crate::budget::summary(&snapshot.budget.caps, &snapshot.spent())
        .map(|summary| ProgressEvent::Budget { summary });
    let notices = notices.into_iter().map(|message| ProgressEvent::Notice { message });
    let events = [started, contained].into_iter().chain(pairings).chain(budget).chain(notices);
    for event in events {
        progress(&event);
    }
}

/// Opens the run's files and journals the start.
async fn open_store(
    run_dir: &RunDir,
    snapshot: &crate::snapshot::RunSnapshot,
    main_tip: crate::snapshot::ObjectId,
    resumed: bool,
    notifier: Option<Arc<crate::notify::Notifier>>,
    events: Option<crate::progress::EventSink>,
) -> Result<RunStore, EngineError> {
    let listener = (notifier.is_some() || events.is_some()).then(|| {
        Box::new(move |event: &breeze_protocol::BreezeEvent| {
            if let Some(events) = &events {
                events(event);
            }
            if let Some(notifier) = &notifier {
                notifier.tell(event);
            }
        }) as crate::journal::EventListener
    });
    let store =
        RunStore::open_with(&run_dir.events(), &run_dir.cycles(), &run_dir.snapshot(), listener)
            .map_err(|err| {
                let folder = run_dir.root().display();
                EngineError::io(format!("cannot open the run files in {folder}"), err)
            })?;
    store
        .record(EventKind::RunStarted {
            plan: snapshot.plan.clone(),
            workers: snapshot.workers,
            main_tip: main_tip.to_string(),
            resumed,
        })
        .await
        .map_err(|err| EngineError::io("cannot write the journal", err))?;
    Ok(store)
}

/// Why the run stopped, with what to do.
fn stop_reason_of(err: &EngineError) -> String {
    let hint = err.hints().join("; ");
    if err.to_string().contains("breeze resume") && hint.is_empty() {
        err.to_string()
    } else if hint.contains("breeze resume") {
        format!("{err}; {hint}")
    } else if hint.is_empty() {
        format!("{err}; `breeze resume` continues the run")
    } else {
        format!("{err}; {hint}, then `breeze resume` continues the run")
    }
}

/// Records how the run ended and builds the outcome the caller reports.
async fn finish(
    ctx: &RunContext,
    run_dir: &RunDir,
    state: RunState,
    stop_reason: Option<String>,
) -> Result<RunOutcome, EngineError> {
    let reason = stop_reason.clone();
    ctx.book
        .update(|snapshot| {
            snapshot.state = state;
            snapshot.stop_reason = reason;
        })
        .await?;
    ctx.book.journal(EventKind::RunFinished { state }).await?;
    if let Some(notifier) = &ctx.notifier {
        notifier.flush().await;
    }
    let mut status = ctx.book.read(|snapshot| snapshot.status());
    // Stopped by `breeze abort`, which records the abort once this engine has let go: a
    // person gave the run up, so its unfinished tasks are failed, as `breeze status` will
    // say (`maintenance::record_abort`), not interrupted — no resume takes them up.
    let stopped = matches!(state, RunState::Interrupted | RunState::Waiting);
    let (state, stop_reason) = if stopped && run_dir.abort_marker().exists() {
        status.state = RunState::Aborted;
        for task in status.tasks.iter_mut().filter(|task| !task.state.is_terminal()) {
            let cause = breeze_protocol::Cause::new(
                breeze_protocol::CauseKind::Person,
                "run aborted with `breeze abort`; `breeze status` says where its work is",
            );
            task.state = breeze_protocol::TaskState::Failed;
            task.reason = Some(cause.line());
            task.cause = Some(cause);
        }
        (RunState::Aborted, Some("aborted with `breeze abort`".to_string()))
    } else {
        (state, stop_reason)
    };
    Ok(RunOutcome {
        run_id: ctx.run_id.clone(),
        state,
        status,
        stop_reason,
        run_dir: run_dir.root().to_path_buf(),
    })
}

/// Lane worktrees left by an interrupted run are reused; what a killed worker left in
/// them is committed on its task branch first (what breeze's own steps left there, the
/// lane's baseline, is not), so nothing is lost.
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
            // Parked by a finished run: no task's work in it; taken when the lane is first
            // used, as in a new run (`lanes.rs`).
            if worktree.branch.is_empty() {
                continue;
            }
            repair_interrupted_lane(repo, &worktree)?;
            *slot = Some(worktree);
        }
    }
    Ok(lanes)
}

/// Readies a lane an interrupted run left with its task's branch checked out for the task
/// again: the locks a killed commit left are removed, the links a killed worker's seal
/// left are pointed back, and what the worker left is committed on the task branch.
pub(crate) fn repair_interrupted_lane(
    repo: &Repo,
    worktree: &breeze_git::Worktree,
) -> Result<(), breeze_git::GitError> {
    // A commit the kill cut short left its locks: nothing holds them now.
    for lock in repo.remove_left_lane_locks(worktree)? {
        tracing::warn!("{}: a lock a killed engine left (removed)", lock.display());
    }
    // A killed run may have left the lane sealed for its worker (`.git` naming the
    // worker's private git directory): point it back, and repair what is wrong.
    for problem in repo.check_lane_links(worktree)? {
        tracing::warn!("{}: {problem} (repaired)", worktree.path.display());
    }
    // A worker killed mid-way may leave what cannot be committed yet (conflict markers it
    // was resolving); the worktree is kept as it is for its task.
    if let Err(err) = repo.commit_worktree(worktree, "breeze: work left by an interrupted run") {
        tracing::warn!("{}: {err}; kept as it is", worktree.path.display());
    }
    Ok(())
}

/// Ends role process groups a killed engine left behind.
pub(crate) async fn end_orphans_of(run_dir: &RunDir) {
    let mut live: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    let read = for_each_event(&run_dir.events(), |event| match event.event {
        EventKind::ProcessStarted { pid, start_ticks, .. }
        | EventKind::CommandStarted { pid, start_ticks, .. } => {
            live.insert(pid, start_ticks);
        }
        EventKind::ProcessEnded { pid, .. } | EventKind::CommandEnded { pid, .. } => {
            live.remove(&pid);
        }
        _ => {}
    });
    if read.is_err() {
        return;
    }
    for (pid, start_ticks) in live {
        let outcome =
            breeze_supervise::end_orphan_group(pid, start_ticks, Duration::from_secs(5)).await;
        tracing::info!(pid, "orphaned role process group: {outcome:?}");
    }
    end_strays_of(run_dir, STRAY_GRACE).await;
}

/// Ends processes of the run's roles that left their process groups (`setsid`, a double
/// fork): every role process carries the run's marker in its environment.
pub(crate) async fn end_strays_of(run_dir: &RunDir, grace: Duration) {
    let run_id = run_dir.run_id();
    if run_id.is_empty() {
        return;
    }
    let ended = breeze_supervise::end_processes_with_env("BREEZE_RUN_ID", run_id, grace).await;
    if !ended.is_empty() {
        tracing::info!(pids = ?ended, "ended processes of the run's roles that had left their groups");
    }
}
