//! The work phase of a task: worker attempts until one completes, with retries,
//! stall re-spawns, Advisor consults and escalation (DESIGN §4 step 3).

use breeze_protocol::{
    AdvisorGuidance, Decision, EventKind, ReasonCode, Role, WorkerInput, WorkerInputV1,
    WorkerReport, WorkerStatus, validate,
};

use super::consult::{Consult, Question, consult};
use super::context::RunContext;
use crate::advice::{normalize_signature, signature_line};
use crate::clock;
use crate::error::EngineError;
use crate::journal::CycleRecord;
use crate::progress::ProgressEvent;
use crate::roles::backoff::Backoff;
use crate::roles::{RoleCall, RoleEnding, definition, prompt};

/// Failed attempts in a row before a task is escalated.
const MAX_FAILURES_IN_ROW: u32 = 3;
/// Stalls (the first is re-spawned once) before a task is escalated.
const MAX_STALLS: u32 = 2;
/// `needs-advice` answers in a row before a task is escalated.
const MAX_ADVICE_REQUESTS: u32 = 3;

/// How the work phase ended.
pub(crate) enum Work {
    /// A worker completed; `head` is the committed result.
    Completed { head: String },
    /// The task cannot go on.
    Escalated(String),
    /// The run is shutting down.
    Interrupted,
}

/// Why an attempt did not produce a completed report.
struct Failure {
    text: String,
}

/// Runs worker attempts for task `index` in `worktree` until one completes.
pub(crate) async fn work(
    ctx: &RunContext,
    index: usize,
    worktree: &breeze_git::Worktree,
) -> Result<Work, EngineError> {
    let id = ctx.task(index).id.to_string();
    let definition = definition::load(ctx.roles.repo_root(), Role::Worker)
        .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
    let mut failures_in_row = 0u32;
    let mut signatures: Vec<String> = Vec::new();
    let mut stalls = 0u32;
    let mut advice_requests = 0u32;
    let mut backoff = Backoff::new(ctx.backoff);
    // Calls of the current attempt cut short by the backend (their logs are kept apart).
    let mut retries = 0u32;
    let mut last_failure: Option<String> = None;
    loop {
        if ctx.cancel.is_cancelled() {
            return Ok(Work::Interrupted);
        }
        let record = ctx.update_task(index, |record| {
            record.attempts += 1;
            record.clone()
        })?;
        ctx.set_state(index, breeze_protocol::TaskState::Running, None)?;
        let attempt = record.attempts;
        let round = record.rounds + 1;
        let base = record.base.clone().unwrap_or_default();
        let universal_violations =
            ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner()).universal_violations.clone();
        let input = WorkerInput {
            schema_version: WorkerInputV1,
            run_id: ctx.run_id.clone(),
            task: ctx.brief(index),
            attempt,
            round,
            base: base.clone(),
            contract_path: ctx.contract_path(index).display().to_string(),
            advisor_guidance: record.guidance.clone(),
            review_feedback: record.feedback.clone(),
            conflict: record.conflict.clone(),
            verify_failure: record.verify_failure.clone(),
            last_failure: last_failure.clone(),
            universal_violations,
        };
        let attempt_log = AttemptLog {
            id: &id,
            attempt,
            round,
            consultations: record.advisor_consults,
            started_at: clock::now_rfc3339(),
        };
        let input_value = serde_json::to_value(&input)
            .map_err(|err| EngineError::io("worker input", std::io::Error::other(err)))?;
        // Fix rounds continue the same agent session where the backend can.
        let resume_session = if round > 1 { record.session_id.clone() } else { None };
        let resume_baseline = resume_session.as_ref().and(record.session_usage);
        let reply = ctx
            .roles
            .invoke(
                RoleCall {
                    lane: Some(worktree.clone()),
                    role: Role::Worker,
                    task_id: id.clone(),
                    attempt,
                    round,
                    cwd: worktree.path.clone(),
                    base: base.clone(),
                    input: input_value,
                    prompt: prompt::worker(&definition, &input),
                    resume_session,
                    label: if retries == 0 {
                        attempt.to_string()
                    } else {
                        format!("{attempt}.retry-{retries}")
                    },
                    resume_baseline,
                },
                &ctx.cancel,
            )
            .await;
        ctx.update_task(index, |record| {
            record.usage.add(&reply.usage);
            if reply.session_id.is_some() {
                record.session_id = reply.session_id.clone();
                record.session_usage = reply.session_usage;
            }
        })?;
        if reply.ending == RoleEnding::Cancelled {
            // Cut off by the stop: not an attempt; resume makes it again.
            ctx.update_task(index, |record| record.attempts -= 1)?;
            return Ok(Work::Interrupted);
        }
        if !reply.write_violations.is_empty() {
            // Seen in the agent's stream; what was committed is judged by the write-set gate.
            tracing::warn!(
                task = %id,
                attempt,
                "the worker tried to write outside its write set: {}",
                reply.write_violations.join(", ")
            );
        }
        if let Some(trouble) = &reply.trouble {
            // The backend failed, not the task: the attempt does not count.
            ctx.update_task(index, |record| record.attempts -= 1)?;
            retries += 1;
            ctx.wait_out(&mut backoff, trouble, &id, Role::Worker).await?;
            continue;
        }
        backoff = Backoff::new(ctx.backoff);
        retries = 0;
        // Whatever happened, the worker's files are committed on the task branch: nothing is lost.
        let wt = worktree.clone();
        let message = format!("breeze: task {id}, attempt {attempt}");
        let commit_problem = match ctx.git(move |repo| repo.commit_worktree(&wt, &message)).await {
            Ok(outcome) => {
                let head = outcome.head().to_string();
                ctx.update_task(index, |record| record.head = Some(head))?;
                None
            }
            // What the worker did to its worktree (moved HEAD, rewrote history, left
            // conflict markers) fails the attempt, not the task.
            Err(EngineError::Git(err)) if worker_caused(&err) => Some(err.to_string()),
            Err(err) => return Err(err),
        };
        let head = ctx.record(index).head.unwrap_or_else(|| base.clone());
        if !reply.escaped.is_empty() {
            // Changed outside its lane (seen only without kernel confinement): the attempt
            // fails and the run stops before anything of it can land.
            let who = format!("the worker of task {id} (attempt {attempt})");
            let error = ctx.roles.guard.escape_error(&who, &reply.escaped);
            attempt_log.record(ctx, "failed", &head, Some(&error.to_string()))?;
            ctx.report(ProgressEvent::AttemptFailed {
                id: id.clone(),
                attempt,
                reason: error.to_string(),
            });
            return Err(error);
        }
        let commit_problem = match (commit_problem, reply.lane_problems.is_empty()) {
            (Some(problem), _) => Some(problem),
            (None, true) => None,
            (None, false) => Some(format!(
                "the worker changed how its worktree links to the repository ({}); breeze repaired it — leave `.git` alone",
                reply.lane_problems.join("; ")
            )),
        };

        let outcome: Result<WorkerReport, Failure> = match &reply.ending {
            RoleEnding::Stalled => {
                stalls += 1;
                attempt_log.record(ctx, "stalled", &head, Some("stalled"))?;
                let stall = format!(
                    "stalled: no output and no file changes for {}",
                    humantime::format_duration(ctx.config.worker.stall_timeout)
                );
                ctx.report(ProgressEvent::AttemptFailed {
                    id: id.clone(),
                    attempt,
                    reason: stall.clone(),
                });
                if stalls >= MAX_STALLS {
                    return Ok(Work::Escalated(format!("stalled twice ({stall})")));
                }
                continue; // re-spawn once
            }
            RoleEnding::SpawnFailed(message) => {
                return Err(EngineError::usage(
                    format!("the worker of task {id} could not start: {message}"),
                    "check roles.worker in breeze.toml (backend, command) and that the program is installed",
                ));
            }
            RoleEnding::TimedOut => Err(Failure {
                text: format!(
                    "timed out after {}",
                    humantime::format_duration(ctx.config.worker.timeout)
                ),
            }),
            RoleEnding::Exited(0) => match reply.result.clone() {
                Some(value) => validate::parse::<WorkerReport>(value).map_err(|invalid| Failure {
                    text: format!("invalid worker report: {invalid}"),
                }),
                None => Err(Failure {
                    text: format!(
                        "no worker report: {}",
                        reply.result_error.clone().unwrap_or_else(|| "no result".into())
                    ),
                }),
            },
            // The failure's own first line leads, so two runs of the same error share a
            // signature; how the process ended follows.
            ending if reply.diagnostics.trim().is_empty() => {
                Err(Failure { text: format!("worker {ending}") })
            }
            ending => {
                Err(Failure { text: format!("{}\n(worker {ending})", reply.diagnostics.trim()) })
            }
        };

        // A worktree the engine cannot commit fails the attempt, whatever the worker said.
        let outcome = match commit_problem {
            Some(problem) => Err(Failure { text: problem }),
            None => outcome,
        };
        let failure = match outcome {
            Ok(report) => match report.status {
                WorkerStatus::Completed if head == base => {
                    Failure { text: "the worker reported completed but changed nothing".into() }
                }
                WorkerStatus::Completed => {
                    attempt_log.record(ctx, "completed", &head, None)?;
                    ctx.update_task(index, |record| {
                        record.conflict = None;
                        record.verify_failure = None;
                    })?;
                    return Ok(Work::Completed { head });
                }
                WorkerStatus::Failed => Failure {
                    text: report
                        .escalation_reason
                        .clone()
                        .filter(|reason| !reason.trim().is_empty())
                        .unwrap_or_else(|| format!("worker reported failure: {}", report.summary)),
                },
                WorkerStatus::Escalated => {
                    attempt_log.record(ctx, "escalated", &head, None)?;
                    let reason = report.escalation_reason.unwrap_or(report.summary);
                    return Ok(Work::Escalated(format!("the worker escalated: {reason}")));
                }
                WorkerStatus::NeedsAdvice => {
                    attempt_log.record(ctx, "needs-advice", &head, None)?;
                    advice_requests += 1;
                    if advice_requests > MAX_ADVICE_REQUESTS {
                        return Ok(Work::Escalated(format!(
                            "the worker asked for advice {MAX_ADVICE_REQUESTS} times without progress"
                        )));
                    }
                    let request = report.advisor_request.clone();
                    let question = Question {
                        reason: request
                            .as_ref()
                            .map_or(ReasonCode::AdvisorRequired, |r| r.reason_code),
                        signature: report.summary.clone(),
                        question: report.summary.clone(),
                        last_error: String::new(),
                        attempt,
                    };
                    match consult(ctx, index, &worktree.path, question, request).await? {
                        Consult::Advice(response) => {
                            if let Some(escalation) = apply_advice(ctx, index, &response)? {
                                return Ok(Work::Escalated(escalation));
                            }
                        }
                        Consult::Unavailable(why) => {
                            return Ok(Work::Escalated(format!(
                                "the worker needs advice and none is available: {why}"
                            )));
                        }
                    }
                    continue;
                }
            },
            Err(failure) => failure,
        };

        // A failed attempt.
        last_failure = Some(crate::advice::bound_text(&failure.text, 4096));
        attempt_log.record(ctx, "failed", &head, Some(&failure.text))?;
        ctx.report(ProgressEvent::AttemptFailed {
            id: id.clone(),
            attempt,
            reason: failure.text.clone(),
        });
        failures_in_row += 1;
        signatures.push(normalize_signature(signature_line(&failure.text)));
        if failures_in_row >= MAX_FAILURES_IN_ROW {
            return Ok(Work::Escalated(format!(
                "{MAX_FAILURES_IN_ROW} failed attempts in a row; the last: {}",
                signature_line(&failure.text)
            )));
        }
        let threshold = ctx.config.retry_threshold as usize;
        let recent = &signatures[signatures.len().saturating_sub(threshold)..];
        let same_cause =
            failures_in_row as usize >= threshold && recent.iter().all(|s| *s == recent[0]);
        if same_cause {
            let question = Question {
                reason: ReasonCode::RetryThreshold,
                signature: signature_line(&failure.text).to_string(),
                question: format!(
                    "The same failure happened {failures_in_row} times in a row. What should the worker change before attempt {}?",
                    attempt + 1
                ),
                last_error: failure.text.clone(),
                attempt,
            };
            if let Consult::Advice(response) =
                consult(ctx, index, &worktree.path, question, None).await?
                && let Some(escalation) = apply_advice(ctx, index, &response)?
            {
                return Ok(Work::Escalated(escalation));
            }
        }
    }
}

/// Whether a git error after an attempt is the worker's doing (and so a failed
/// attempt the worker can fix) rather than a problem of the repository.
fn worker_caused(err: &breeze_git::GitError) -> bool {
    use breeze_git::GitError;
    matches!(
        err,
        GitError::HeadMoved { .. }
            | GitError::NotFromBase { .. }
            | GitError::UnresolvedConflicts { .. }
            | GitError::MidOperation { .. }
    )
}

/// Stores PLAN/CORRECTION guidance for the next attempts; returns the escalation
/// reason for STOP.
pub(crate) fn apply_advice(
    ctx: &RunContext,
    index: usize,
    response: &breeze_protocol::AdvisorResponse,
) -> Result<Option<String>, EngineError> {
    if response.decision == Decision::Stop {
        let reason = response.stop_reason.clone().unwrap_or_else(|| response.summary.clone());
        return Ok(Some(format!("the Advisor said STOP: {reason}")));
    }
    let guidance = AdvisorGuidance {
        decision: response.decision,
        summary: response.summary.clone(),
        instructions: response.executor_instructions.clone(),
    };
    ctx.update_task(index, |record| record.guidance = Some(guidance))?;
    Ok(None)
}

/// Journals and logs (`cycles.jsonl`) one worker attempt.
struct AttemptLog<'a> {
    id: &'a str,
    attempt: u32,
    round: u32,
    consultations: u32,
    started_at: String,
}

impl AttemptLog<'_> {
    fn record(
        &self,
        ctx: &RunContext,
        outcome: &str,
        head: &str,
        error: Option<&str>,
    ) -> Result<(), EngineError> {
        ctx.journal(EventKind::Attempt {
            task: self.id.to_string(),
            attempt: self.attempt,
            round: self.round,
            outcome: outcome.to_string(),
            head: Some(head.to_string()),
            error: error.map(str::to_string),
        })?;
        let _ = ctx.cycles.append(CycleRecord {
            run_id: ctx.run_id.clone(),
            cycle: 0,
            task_id: self.id.to_string(),
            executor: "breezing",
            job_status: outcome.to_string(),
            verdict: None,
            commit_hash: Some(head.chars().take(7).collect()),
            summary: crate::advice::bound_text(error.unwrap_or(outcome), 8192),
            attempts: self.attempt,
            consultations: self.consultations,
            started_at: self.started_at.clone(),
            finished_at: clock::now_rfc3339(),
        });
        Ok(())
    }
}
