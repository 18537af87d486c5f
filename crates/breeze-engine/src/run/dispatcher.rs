//! The dispatcher: decides which task runs on which lane, and when the run is over.
//!
//! A task starts when all its dependencies have landed and no task it conflicts with
//! is working, in review or waiting to land (DESIGN §3). Among ready tasks the one
//! with the longest chain of dependents goes first, then plan order. Lanes are a
//! semaphore of `workers` permits; each task holds one from start to landing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use breeze_protocol::TaskState;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::context::RunContext;
use super::task::{TaskExit, exit_state, run_task};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::snapshot::Stage;

/// How long a deferred landing waits before it is tried again.
const DEFERRED_RETRY: Duration = Duration::from_secs(2);

/// How the dispatch loop ended.
pub(crate) enum DispatchEnd {
    /// Every task reached a final state.
    Finished,
    /// Stopped early; `breeze resume` continues. The reason is shown to the user.
    Interrupted(String),
}

/// Runs every task of the plan to a final state, or until cancelled.
pub(crate) async fn dispatch(ctx: Arc<RunContext>) -> Result<DispatchEnd, EngineError> {
    let workers = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner()).workers.max(1);
    let lanes = Arc::new(Semaphore::new(workers as usize));
    let mut free_lanes: BTreeSet<u32> = (1..=workers).collect();
    let mut running: JoinSet<(usize, u32, Result<TaskExit, EngineError>)> = JoinSet::new();
    let mut in_flight: BTreeSet<usize> = BTreeSet::new();
    let mut deferred: BTreeMap<usize, Instant> = ctx
        .snapshot
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, record)| record.state == TaskState::Deferred)
        .map(|(index, _)| (index, Instant::now()))
        .collect();
    let mut idle_retry_done = false;
    let mut fatal: Option<String> = None;

    loop {
        if ctx.cancel.is_cancelled() || fatal.is_some() {
            break;
        }
        block_unreachable(&ctx)?;

        // Fill free lanes.
        while !free_lanes.is_empty() {
            let Some(index) = next_task(&ctx, &in_flight, &deferred) else { break };
            let lane = choose_lane(&ctx, &free_lanes, index);
            let Ok(permit) = lanes.clone().try_acquire_owned() else { break };
            free_lanes.remove(&lane);
            in_flight.insert(index);
            deferred.remove(&index);
            let task = ctx.task(index);
            ctx.report(ProgressEvent::TaskStarted {
                id: task.id.to_string(),
                title: task.title.clone(),
                lane,
            });
            let task_ctx = ctx.clone();
            running.spawn(async move {
                let _permit = permit;
                let exit = match run_task(&task_ctx, index, lane).await {
                    // Whatever broke off because the run is stopping resumes later.
                    Err(_) if task_ctx.cancel.is_cancelled() => Ok(TaskExit::Interrupted),
                    exit => exit,
                };
                (index, lane, exit)
            });
        }

        if running.is_empty() {
            if all_final(&ctx) {
                return Ok(DispatchEnd::Finished);
            }
            if !deferred.is_empty() {
                // Nothing else can move: one last try for every deferred landing, then
                // stop resumably, naming the file and what to do.
                if idle_retry_done {
                    let reason = first_deferred_reason(&ctx, &deferred);
                    return Ok(DispatchEnd::Interrupted(reason));
                }
                idle_retry_done = true;
                for due in deferred.values_mut() {
                    *due = Instant::now();
                }
                continue;
            }
            // No task can start and nothing runs: whatever is left waits on something
            // that will never land.
            mark_stuck_blocked(&ctx)?;
            return Ok(DispatchEnd::Finished);
        }

        let next_due = deferred.values().min().copied();
        tokio::select! {
            joined = running.join_next() => {
                let Some(joined) = joined else { continue };
                let (index, lane, exit) = match joined {
                    Ok(result) => result,
                    Err(err) => {
                        return Err(EngineError::io("a task runner panicked", std::io::Error::other(err.to_string())));
                    }
                };
                in_flight.remove(&index);
                free_lanes.insert(lane);
                // Only real progress earns the deferred landings another last try.
                if !matches!(exit, Ok(TaskExit::Deferred(_))) {
                    idle_retry_done = false;
                }
                match record_exit(&ctx, index, exit)? {
                    ExitEffect::Deferred => {
                        deferred.insert(index, Instant::now() + DEFERRED_RETRY);
                    }
                    ExitEffect::Fatal(reason) => {
                        fatal = Some(reason);
                        ctx.cancel.cancel();
                    }
                    ExitEffect::Settled => {}
                }
            }
            () = sleep_until(next_due), if next_due.is_some() => {}
            () = ctx.cancel.cancelled() => {}
        }
    }

    // Shutting down: role processes get SIGTERM through the shared token; wait for
    // every task to record where it stopped.
    while let Some(joined) = running.join_next().await {
        if let Ok((index, _, exit)) = joined
            && let ExitEffect::Fatal(reason) = record_exit(&ctx, index, exit)?
        {
            fatal.get_or_insert(reason);
        }
    }
    Ok(DispatchEnd::Interrupted(fatal.unwrap_or_else(|| "interrupted".into())))
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// What the dispatcher must do after a task left its lane.
enum ExitEffect {
    /// Nothing more: the task's state says it all.
    Settled,
    /// Its landing waits: retry it later.
    Deferred,
    /// A configuration problem every task would hit: stop the run resumably.
    Fatal(String),
}

/// Records how a task left its lane (state, journal, progress line).
fn record_exit(
    ctx: &RunContext,
    index: usize,
    exit: Result<TaskExit, EngineError>,
) -> Result<ExitEffect, EngineError> {
    match exit {
        Ok(TaskExit::Deferred(reason)) => {
            ctx.update_task(index, |record| record.stage = Stage::Approved)?;
            ctx.set_state(index, TaskState::Deferred, Some(reason.clone()))?;
            ctx.report(ProgressEvent::Deferred { id: ctx.task(index).id.to_string(), reason });
            Ok(ExitEffect::Deferred)
        }
        Ok(TaskExit::Interrupted) => {
            if !ctx.record(index).state.is_terminal() {
                let (state, reason) = exit_state(&TaskExit::Interrupted);
                ctx.set_state(index, state, reason)?;
            }
            Ok(ExitEffect::Settled)
        }
        Ok(exit) => {
            finish(ctx, index, &exit)?;
            Ok(ExitEffect::Settled)
        }
        Err(err) if err.stops_the_run() => {
            // Resumable: the task starts again once the user has acted.
            let message = err.to_string();
            ctx.set_state(index, TaskState::Pending, Some(message.clone()))?;
            let hint = err.hints().join("; ");
            let next = if hint.contains("breeze resume") {
                hint
            } else if hint.is_empty() {
                "then run `breeze resume`".to_string()
            } else {
                format!("{hint}, then run `breeze resume`")
            };
            Ok(ExitEffect::Fatal(format!("{message}; {next}")))
        }
        Err(err) => {
            let reason = err.to_string();
            ctx.update_task(index, |record| record.stage = Stage::Done)?;
            ctx.set_state(index, TaskState::Failed, Some(reason.clone()))?;
            ctx.report(ProgressEvent::TaskFinished {
                id: ctx.task(index).id.to_string(),
                state: TaskState::Failed,
                commit: None,
                reason: Some(reason),
            });
            Ok(ExitEffect::Settled)
        }
    }
}

/// Records a task that left its lane for good.
fn finish(ctx: &RunContext, index: usize, exit: &TaskExit) -> Result<(), EngineError> {
    let (state, reason) = exit_state(exit);
    let commit = match exit {
        TaskExit::Landed { commit } => Some(commit.clone()),
        _ => None,
    };
    ctx.update_task(index, |record| {
        record.stage = Stage::Done;
        if commit.is_some() {
            record.commit = commit.clone();
        }
    })?;
    ctx.set_state(index, state, reason.clone())?;
    ctx.report(ProgressEvent::TaskFinished {
        id: ctx.task(index).id.to_string(),
        state,
        commit,
        reason,
    });
    Ok(())
}

/// A free lane for task `index`: the one whose worktree already holds the task's branch
/// (a resumed task finds its own worktree again), else the lowest free one.
fn choose_lane(ctx: &RunContext, free_lanes: &BTreeSet<u32>, index: usize) -> u32 {
    let branch = ctx.record(index).branch;
    let lanes = ctx.lanes.lock().unwrap_or_else(|p| p.into_inner());
    free_lanes
        .iter()
        .copied()
        .find(|&lane| {
            let worktree = lanes.get(lane as usize - 1).and_then(Option::as_ref);
            branch.is_some() && worktree.map(|wt| &wt.branch) == branch.as_ref()
        })
        .or_else(|| free_lanes.first().copied())
        .unwrap_or(1)
}

/// The next task to start, if any: due deferred landings first, then ready tasks by
/// the longest chain of dependents, then plan order.
fn next_task(
    ctx: &RunContext,
    in_flight: &BTreeSet<usize>,
    deferred: &BTreeMap<usize, Instant>,
) -> Option<usize> {
    let now = Instant::now();
    if let Some((&index, _)) = deferred.iter().find(|(_, due)| **due <= now) {
        return Some(index);
    }
    let snapshot = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner());
    let records = &snapshot.tasks;
    // Tasks that hold a lane or wait to land keep conflicting tasks out.
    let busy: Vec<usize> = in_flight.iter().copied().chain(deferred.keys().copied()).collect();
    let mut ready: Vec<usize> = (0..records.len())
        .filter(|&index| !in_flight.contains(&index) && !deferred.contains_key(&index))
        .filter(|&index| records[index].state == TaskState::Pending)
        .filter(|&index| {
            dependencies(ctx, index).all(|dep| records[dep].state == TaskState::Landed)
        })
        .filter(|&index| busy.iter().all(|&other| !ctx.analysis.conflicts_between(index, other)))
        .collect();
    ready.sort_by_key(|&index| (std::cmp::Reverse(ctx.analysis.priority(index)), index));
    ready.first().copied()
}

fn dependencies(ctx: &RunContext, index: usize) -> impl Iterator<Item = usize> + '_ {
    ctx.task(index).depends_on.iter().filter_map(|dep| ctx.plan.index_of(dep))
}

/// Marks pending tasks whose dependency escalated, failed or was blocked.
fn block_unreachable(ctx: &RunContext) -> Result<(), EngineError> {
    loop {
        let newly: Vec<(usize, String)> = {
            let snapshot = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner());
            let records = &snapshot.tasks;
            (0..records.len())
                .filter(|&index| records[index].state == TaskState::Pending)
                .filter_map(|index| {
                    let task = ctx.task(index);
                    let plan_blocked =
                        task.depends_on.iter().find(|dep| ctx.plan.blocked.contains(*dep));
                    if let Some(dep) = plan_blocked {
                        return Some((index, format!("dependency {dep} is blocked in the plan")));
                    }
                    dependencies(ctx, index).find_map(|dep| {
                        let state = records[dep].state;
                        matches!(
                            state,
                            TaskState::Escalated | TaskState::Failed | TaskState::Blocked
                        )
                        .then(|| {
                            (
                                index,
                                format!("dependency {} is {}", ctx.task(dep).id, state.as_str()),
                            )
                        })
                    })
                })
                .collect()
        };
        if newly.is_empty() {
            return Ok(());
        }
        for (index, reason) in newly {
            ctx.update_task(index, |record| record.stage = Stage::Done)?;
            ctx.set_state(index, TaskState::Blocked, Some(reason.clone()))?;
            ctx.report(ProgressEvent::TaskFinished {
                id: ctx.task(index).id.to_string(),
                state: TaskState::Blocked,
                commit: None,
                reason: Some(reason),
            });
        }
    }
}

fn mark_stuck_blocked(ctx: &RunContext) -> Result<(), EngineError> {
    let stuck: Vec<usize> = {
        let snapshot = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        (0..snapshot.tasks.len()).filter(|&i| !snapshot.tasks[i].state.is_terminal()).collect()
    };
    for index in stuck {
        ctx.update_task(index, |record| record.stage = Stage::Done)?;
        ctx.set_state(index, TaskState::Blocked, Some("a dependency never landed".into()))?;
    }
    Ok(())
}

fn all_final(ctx: &RunContext) -> bool {
    let snapshot = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner());
    snapshot.tasks.iter().all(|record| record.state.is_terminal())
}

fn first_deferred_reason(ctx: &RunContext, deferred: &BTreeMap<usize, Instant>) -> String {
    let snapshot = ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner());
    deferred
        .keys()
        .map(|&index| {
            format!(
                "task {} is approved but cannot land: {}",
                ctx.task(index).id,
                snapshot.tasks[index].reason.clone().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
