//! The flow of one task through a lane: contract, worktree, preflight consult, work,
//! gates and review rounds, landing — and back to the worker when landing fails.

use breeze_protocol::{ConflictInfo, EventKind, ReasonCode, ReviewFeedback, TaskState, Verdict};

use super::consult::{Consult, Question, consult};
use super::context::RunContext;
use super::landing::{Landing, land};
use super::review::{parse_oid, review};
use super::work::{Work, apply_advice, work};
use crate::advice::{is_plateau, plateau_score};
use crate::error::EngineError;
use crate::snapshot::Stage;

/// How a task left its lane.
#[derive(Debug)]
pub(crate) enum TaskExit {
    /// On main.
    Landed { commit: String },
    /// Gave up (reason for the user).
    Escalated(String),
    /// Approved, but landing waits for the user's checkout.
    Deferred(String),
    /// The run is shutting down; resume continues from the record.
    Interrupted,
}

/// Runs task `index` on `lane` until it lands, escalates, defers or the run stops.
pub(crate) async fn run_task(
    ctx: &RunContext,
    index: usize,
    lane: u32,
) -> Result<TaskExit, EngineError> {
    let task = ctx.task(index);
    let id = task.id.to_string();
    write_contract(ctx, index)?;
    let record = ctx.record(index);

    // Approved work whose landing was deferred lands without a worktree.
    if record.stage == Stage::Approved
        && record.conflict.is_none()
        && let Some(exit) = try_landing(ctx, index).await?
    {
        return Ok(exit);
    }

    // While breeze or the task's worker may change the lane, no other role is blamed for it.
    let current = ctx.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1]
        .as_ref()
        .map(|wt| wt.path.clone());
    let preparing = current.map(|path| ctx.roles.guard.lane_writer(&path));
    let mut worktree = prepare_worktree(ctx, index, lane).await?;
    let mut writer = Some(ctx.roles.guard.lane_writer(&worktree.path));
    drop(preparing);
    ctx.update_task(index, |record| {
        if record.stage == Stage::Queued {
            record.stage = Stage::Working;
        }
    })?;

    // Preflight: a high-risk task consults the Advisor once before its first attempt.
    if task.is_high_risk() && ctx.record(index).attempts == 0 {
        let flags: Vec<&str> = task.risk.iter().map(|flag| flag.as_str()).collect();
        let reason = match task.risk.first() {
            Some(breeze_plan::RiskFlag::NeedsSpike) => ReasonCode::NeedsSpike,
            Some(breeze_plan::RiskFlag::SecuritySensitive) => ReasonCode::SecuritySensitive,
            Some(breeze_plan::RiskFlag::StateMigration) => ReasonCode::StateMigration,
            None => ReasonCode::AdvisorRequired,
        };
        let signature =
            if flags.is_empty() { "advisor-required".to_string() } else { flags.join(",") };
        let question = Question {
            reason,
            signature,
            question: format!(
                "Task {id} is high-risk ({}). How should the worker approach it before the first attempt?",
                if flags.is_empty() { "advisor:required".to_string() } else { flags.join(", ") }
            ),
            last_error: String::new(),
            attempt: 0,
        };
        if let Consult::Advice(response) =
            consult(ctx, index, &worktree.path, question, None).await?
            && let Some(reason) = apply_advice(ctx, index, &response)?
        {
            return Ok(TaskExit::Escalated(reason));
        }
    }

    loop {
        let record = ctx.record(index);
        if record.stage != Stage::Approved {
            // A task stopped while its result waited for review is reviewed, not redone.
            let head = match (record.stage, record.head) {
                (Stage::Reviewing, Some(head)) => head,
                _ => {
                    writer.get_or_insert_with(|| ctx.roles.guard.lane_writer(&worktree.path));
                    rebase_onto_conflict(ctx, index, lane, &mut worktree).await?;
                    let head = match work(ctx, index, &worktree).await? {
                        Work::Completed { head } => head,
                        Work::Escalated(reason) => return Ok(TaskExit::Escalated(reason)),
                        Work::Interrupted => return Ok(TaskExit::Interrupted),
                    };
                    ctx.update_task(index, |record| record.stage = Stage::Reviewing)?;
                    head
                }
            };
            // Under review and while landing nothing may change the lane.
            drop(writer.take());
            let base = ctx.record(index).base.unwrap_or_default();
            let round = review(ctx, index, &worktree.path, &base, &head).await?;
            match round.verdict {
                Verdict::Approve => {
                    ctx.update_task(index, |record| {
                        record.stage = Stage::Approved;
                        record.approved_round = Some(record.rounds);
                        record.reviewer_said = round.reviewer_said.map(|v| v.as_str().to_string());
                        record.feedback = None;
                    })?;
                }
                Verdict::RequestChanges => {
                    let record = ctx.record(index);
                    let requested = record.gap_files.len() as u32;
                    if requested >= ctx.config.max_rounds {
                        return Ok(TaskExit::Escalated(
                            escalation_after_reviews(ctx, index, &worktree, &record).await?,
                        ));
                    }
                    ctx.update_task(index, |record| {
                        record.stage = Stage::Working;
                        record.feedback = Some(ReviewFeedback {
                            round: record.rounds,
                            gaps: round.blocking.clone(),
                        });
                    })?;
                    continue;
                }
            }
        }
        if ctx.cancel.is_cancelled() {
            return Ok(TaskExit::Interrupted);
        }
        if let Some(exit) = try_landing(ctx, index).await? {
            return Ok(exit);
        }
        // Sent back to the worker: the record says why (a conflict or a failed verify).
    }
}

/// After a landing conflict, moves the task's worktree onto the main tip it conflicted
/// with, its change re-applied and the conflicts left in the files for the worker. Done
/// once: afterwards the task's base is that tip.
async fn rebase_onto_conflict(
    ctx: &RunContext,
    index: usize,
    lane: u32,
    worktree: &mut breeze_git::Worktree,
) -> Result<(), EngineError> {
    let record = ctx.record(index);
    let Some(onto) = record.conflict_onto.clone() else { return Ok(()) };
    if record.base.as_deref() == Some(onto.as_str()) {
        return Ok(());
    }
    let base = parse_oid(record.base.as_deref().unwrap_or_default())?;
    let head = parse_oid(record.head.as_deref().unwrap_or_default())?;
    let onto = parse_oid(&onto)?;
    let wt = worktree.clone();
    let rebased =
        ctx.git(move |repo| repo.rebase_worktree_with_conflicts(&wt, base, head, onto)).await?;
    *worktree = rebased.worktree;
    ctx.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1] = Some(worktree.clone());
    ctx.update_task(index, |record| {
        record.base = Some(onto.to_string());
        record.head = Some(onto.to_string());
        record.conflict = Some(ConflictInfo { files: rebased.conflicts });
    })
}

/// Lands an approved task. `Some(exit)` when the task leaves its lane; `None` when it
/// goes back to the worker (the record then says why).
async fn try_landing(ctx: &RunContext, index: usize) -> Result<Option<TaskExit>, EngineError> {
    match land(ctx, index).await? {
        Landing::Landed { commit } => {
            ctx.update_task(index, |record| {
                record.commit = Some(commit.clone());
                record.stage = Stage::Done;
            })?;
            Ok(Some(TaskExit::Landed { commit }))
        }
        Landing::Deferred { reason } => Ok(Some(TaskExit::Deferred(reason))),
        Landing::Conflict { files, onto } => {
            let bounces = bounce(ctx, index)?;
            if bounces > ctx.config.max_land_bounces {
                return Ok(Some(TaskExit::Escalated(format!(
                    "landing failed {} times; the last conflict was in {}",
                    bounces - 1,
                    files.join(", ")
                ))));
            }
            ctx.update_task(index, |record| {
                record.stage = Stage::Working;
                record.conflict = Some(ConflictInfo { files });
                record.conflict_onto = Some(onto);
            })?;
            Ok(None)
        }
        Landing::VerifyFailed(failure) => {
            let bounces = bounce(ctx, index)?;
            if bounces > ctx.config.max_land_bounces {
                return Ok(Some(TaskExit::Escalated(format!(
                    "`{}` failed on the merged tree {} times",
                    failure.command.join(" "),
                    bounces - 1
                ))));
            }
            ctx.update_task(index, |record| {
                record.stage = Stage::Working;
                record.verify_failure = Some(failure);
            })?;
            Ok(None)
        }
    }
}

fn bounce(ctx: &RunContext, index: usize) -> Result<u32, EngineError> {
    ctx.update_task(index, |record| {
        record.land_bounces += 1;
        record.land_bounces
    })
}

/// After the last allowed REQUEST_CHANGES: consult the Advisor if the rounds plateaued
/// (pivot-required) and put its advice into the escalation for the user.
async fn escalation_after_reviews(
    ctx: &RunContext,
    index: usize,
    worktree: &breeze_git::Worktree,
    record: &crate::snapshot::TaskRecord,
) -> Result<String, EngineError> {
    let mut reason = format!("{} review rounds requested changes", record.gap_files.len());
    if is_plateau(&record.gap_files) {
        let files: Vec<String> =
            record.gap_files.last().map(|set| set.iter().cloned().collect()).unwrap_or_default();
        let question = Question {
            reason: ReasonCode::PivotRequired,
            signature: files.join(","),
            question: format!(
                "Review rounds keep finding problems in the same files ({}; similarity {:.2}). What should change before a human takes over?",
                files.join(", "),
                plateau_score(&record.gap_files).unwrap_or(0.0)
            ),
            last_error: String::new(),
            attempt: record.attempts,
        };
        reason.push_str(" on the same files (plateau)");
        if let Consult::Advice(response) =
            consult(ctx, index, &worktree.path, question, None).await?
        {
            reason.push_str(&format!(
                "; Advisor ({}): {}",
                response.decision.as_str(),
                response.summary
            ));
        }
    }
    Ok(reason)
}

/// Writes the task's sprint contract (once).
fn write_contract(ctx: &RunContext, index: usize) -> Result<(), EngineError> {
    let path = ctx.contract_path(index);
    if path.exists() {
        return Ok(());
    }
    let options = breeze_plan::ContractOptions {
        plans_file: ctx.plan.path.display().to_string(),
        verify: (!ctx.config.verify.is_empty()).then(|| ctx.config.verify.clone()),
        advisor_enabled: ctx.config.advisor_enabled,
        max_consults: ctx.config.max_consults_per_task,
        retry_threshold: ctx.config.retry_threshold,
        generated_at: crate::clock::now_rfc3339(),
    };
    let contract = breeze_plan::sprint_contract(ctx.task(index), &options);
    let text = serde_json::to_vec_pretty(&contract).unwrap_or_default();
    crate::snapshot::write_atomically(&path, &text)
        .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
}

/// Gives the task a worktree on its branch: the lane's worktree moved to the task
/// (checking out only the differing paths), or a new lane worktree the first time — or
/// when the lane's worktree cannot be reused (a worker left it in a state breeze will not
/// discard; it stays on disk for the user and `breeze clean`).
async fn prepare_worktree(
    ctx: &RunContext,
    index: usize,
    lane: u32,
) -> Result<breeze_git::Worktree, EngineError> {
    let id = ctx.task(index).id.to_string();
    let record = ctx.record(index);
    let (branch, fresh_base) = match &record.branch {
        Some(branch) => (branch.clone(), None),
        None => {
            let base = ctx.git(|repo| repo.main_tip()).await?;
            let slug = breeze_git::Repo::slug(&id);
            // An earlier run may have left `task/<slug>` with work that never landed: it is
            // kept, and this run takes the next free name.
            let branch = ctx
                .git(move |repo| {
                    let mut name = format!("task/{slug}");
                    let mut n = 1;
                    while repo.branch_exists(&name)? {
                        n += 1;
                        name = format!("task/{slug}-{n}");
                    }
                    Ok(name)
                })
                .await?;
            (branch, Some(base))
        }
    };
    let existing = ctx.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1].clone();
    let reused = match existing {
        // Resuming on the lane that already holds this task's worktree: keep it exactly
        // as the interrupted attempt left it.
        Some(wt) if fresh_base.is_none() && wt.branch == branch => Some(wt),
        Some(wt) => {
            let path = wt.path.clone();
            let target = branch.clone();
            let placed = ctx
                .git(move |repo| match fresh_base {
                    Some(base) => repo.move_worktree(&wt, &target, base),
                    None => repo.switch_worktree(&wt, &target),
                })
                .await;
            match placed {
                Ok(wt) => Some(wt),
                Err(err) => {
                    tracing::warn!(
                        "lane {lane}: {} cannot be reused ({err}); it is left as it is and a new worktree is created",
                        path.display()
                    );
                    None
                }
            }
        }
        None => None,
    };
    let (worktree, created) = match reused {
        Some(wt) => (wt, false),
        None => (create_lane_worktree(ctx, lane, &branch, fresh_base).await?, true),
    };
    if let Some(base) = fresh_base {
        ctx.update_task(index, |record| {
            record.branch = Some(branch.clone());
            record.base = Some(base.to_string());
            record.head = Some(base.to_string());
        })?;
    }
    ctx.journal(EventKind::WorktreeCreated {
        task: id.clone(),
        path: worktree.path.display().to_string(),
        branch,
        base: worktree.base.to_string(),
    })?;
    if created {
        provision(ctx, &id, &worktree).await?;
    }
    ctx.lanes.lock().unwrap_or_else(|p| p.into_inner())[lane as usize - 1] = Some(worktree.clone());
    Ok(worktree)
}

/// A new worktree for `lane`: `lane-<n>`, or `lane-<n>-<k>` when that name is taken.
async fn create_lane_worktree(
    ctx: &RunContext,
    lane: u32,
    branch: &str,
    fresh_base: Option<breeze_git::Oid>,
) -> Result<breeze_git::Worktree, EngineError> {
    let lock_reason = format!("breeze run {} (lane {lane})", ctx.run_id);
    let root = ctx.repo.worktree_root();
    let name = (1..)
        .map(|k| if k == 1 { format!("lane-{lane}") } else { format!("lane-{lane}-{k}") })
        .find(|name| !root.join(name).exists())
        .unwrap_or_else(|| format!("lane-{lane}"));
    let branch = branch.to_string();
    ctx.git(move |repo| match fresh_base {
        Some(base) => repo.create_worktree(&name, &branch, base, &lock_reason),
        None => repo.create_worktree_on_branch(&name, &branch, &lock_reason),
    })
    .await
}

/// Copies the declared ignored files and runs the setup command in a new worktree.
async fn provision(
    ctx: &RunContext,
    id: &str,
    worktree: &breeze_git::Worktree,
) -> Result<(), EngineError> {
    if !ctx.config.worktree_include.is_empty() {
        let include = ctx.config.worktree_include.clone();
        let wt = worktree.clone();
        let report = ctx.git(move |repo| repo.provision(&wt, &include)).await?;
        tracing::info!(task = %id, copied = ?report.copied, "provisioned {}", worktree.path.display());
        if !report.unmatched.is_empty() {
            tracing::warn!(
                "worktree.include: {} matched nothing in {}; workers will not have it",
                report.unmatched.join(", "),
                ctx.repo.workdir().display()
            );
        }
        if !report.not_ignored.is_empty() {
            tracing::warn!(
                "worktree.include: {} are tracked or not ignored by git; they reach worktrees by checkout, not by copying",
                report.not_ignored.join(", ")
            );
        }
    }
    if ctx.config.worktree_setup.is_empty() {
        return Ok(());
    }
    let log = worktree_setup_log(ctx, worktree);
    let outcome = ctx
        .run_project_command(
            id,
            "worktree.setup",
            &ctx.config.worktree_setup,
            &worktree.path,
            &log,
            ctx.config.setup_timeout,
        )
        .await?;
    if outcome.ending.is_success() {
        return Ok(());
    }
    Err(EngineError::usage(
        format!(
            "worktree.setup {} in {}: {}",
            outcome.ending,
            worktree.path.display(),
            outcome.stderr_tail.lines().last().unwrap_or("")
        ),
        format!("see the setup log {}.stderr", log.display()),
    ))
}

fn worktree_setup_log(ctx: &RunContext, worktree: &breeze_git::Worktree) -> std::path::PathBuf {
    let name = worktree.path.file_name().and_then(|n| n.to_str()).unwrap_or("worktree");
    ctx.run_dir.root().join("logs").join(format!("setup.{name}"))
}

/// The visible state of a task that left its lane.
pub(crate) fn exit_state(exit: &TaskExit) -> (TaskState, Option<String>) {
    match exit {
        TaskExit::Landed { .. } => (TaskState::Landed, None),
        TaskExit::Escalated(reason) => (TaskState::Escalated, Some(reason.clone())),
        TaskExit::Deferred(reason) => (TaskState::Deferred, Some(reason.clone())),
        TaskExit::Interrupted => {
            (TaskState::Pending, Some("interrupted; `breeze resume` continues".into()))
        }
    }
}
