//! The work phase of a task: worker attempts until one completes, with retries, stall
//! re-spawns, Advisor consults and escalation.
//!
//! An [`Attempt`] is one worker call: its briefing, the call, committing what the worker
//! left, and the verdict ([`AttemptEnd`]). The [`WorkPhase`] keeps what spans attempts —
//! failures in a row and their signatures, stalls, requests for advice, the backoff of the
//! backend's trouble — and decides what comes next.

use breeze_protocol::{
    AttemptOutcome, Cause, CauseKind, EventKind, GateResult, ReasonCode, Role, ScopeRequest,
    WorkerInput, WorkerInputV1, WorkerReport, WorkerStatus, validate,
};

use super::driver::TaskDriver;
use super::outcome::{Consult, GateFailure, Question, SafePoint, Work};
use crate::advice::{normalize_signature, signature_line};
use crate::clock;
use crate::error::EngineError;
use crate::journal::CycleRecord;
use crate::progress::ProgressEvent;
use crate::roles::backoff::Backoff;
use crate::roles::definition::RoleDefinition;
use crate::roles::{RoleCall, RoleEnding, RoleOutcome, RoleReply, definition, prompt};
use crate::run::book::Transition;
use crate::snapshot::ObjectId;

/// Failed attempts in a row before a task is escalated.
const MAX_FAILURES_IN_ROW: u32 = 3;
/// Stalls (the first is re-spawned once) before a task is escalated.
const MAX_STALLS: u32 = 2;
/// `needs-advice` answers in a row before a task is escalated.
const MAX_ADVICE_REQUESTS: u32 = 3;
/// Completed reports sent back for a self-review that does not hold, before escalation.
const MAX_SELF_REVIEW_BOUNCES: u32 = 2;

/// What the worker left that fails its attempt before anything is judged.
pub(super) enum CommitProblem {
    /// A worktree breeze cannot commit (moved HEAD, conflict markers, …): a failed attempt.
    Failed(String),
    /// Files the gates refuse before anything is staged (above the size limit, a FIFO):
    /// a gate failure, like one on the diff.
    Gates(Vec<GateResult>),
}

impl CommitProblem {
    /// The problem in one line (what a person who stepped in is told).
    pub(super) fn line(&self) -> String {
        match self {
            Self::Failed(why) => why.clone(),
            Self::Gates(gates) => crate::causes::of_gates(&gates.iter().collect::<Vec<_>>()).line(),
        }
    }
}

/// What spans the attempts of one work phase.
pub(crate) struct WorkPhase {
    definition: RoleDefinition,
    failures_in_row: u32,
    signatures: Vec<String>,
    stalls: u32,
    advice_requests: u32,
    /// Calls of the current attempt cut short by the backend (their logs are kept apart).
    retries: u32,
    backoff: Backoff,
    last_failure: Option<String>,
}

/// One worker attempt.
struct Attempt {
    number: u32,
    round: u32,
    base: ObjectId,
    input: WorkerInput,
    started_at: String,
    consultations: u32,
    /// It goes on with the worker that asked for scope (same session where it resumes).
    continues_session: bool,
}

/// Who left what a lane holds before it is committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeftInLane {
    /// A worker's attempt.
    WorkerAttempt,
    /// A person (`breeze attach`): what they leave is theirs.
    Person,
}

/// How an attempt ended.
enum AttemptEnd {
    /// The worker completed with changes: the task goes to review.
    Completed { head: ObjectId },
    /// It failed; why (its first line is the failure's signature).
    Failed(String),
    /// It stalled (re-spawned once).
    Stalled(String),
    /// The worker (or the rules) gave up.
    Escalated(Box<Cause>),
    /// A gate refused what the worker left before anything was staged.
    GatesFailed(Box<GateFailure>),
    /// The worker asks the Advisor.
    NeedsAdvice(Box<WorkerReport>),
    /// The worker asks to write outside its write set.
    NeedsScope(ScopeRequest),
    /// The worker reported completion, but its own self-review does not hold; why.
    SelfReview(String),
    /// Not an attempt after all: the backend's trouble was waited out.
    Retry,
    /// The run is stopping.
    Interrupted,
}

impl TaskDriver {
    /// Runs worker attempts until one completes.
    pub(super) async fn work(&mut self) -> Result<Work, EngineError> {
        let definition = definition::load(self.ctx.roles.repo_root(), Role::Worker)
            .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
        let mut phase = WorkPhase {
            definition,
            failures_in_row: 0,
            signatures: Vec::new(),
            stalls: 0,
            advice_requests: 0,
            retries: 0,
            backoff: Backoff::new(self.ctx.backoff),
            last_failure: None,
        };
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Ok(Work::Interrupted);
            }
            // Between attempts a person may step in; their change goes to review.
            match self.safe_point().await? {
                SafePoint::Changed { head } => return Ok(Work::Completed { head }),
                SafePoint::Interrupted => return Ok(Work::Interrupted),
                SafePoint::Passed | SafePoint::Unchanged => {}
            }
            let attempt = self.begin_attempt(&phase).await?;
            let end = self.make_attempt(&attempt, &mut phase).await?;
            if let Some(work) = self.after_attempt(&attempt, &mut phase, end).await? {
                return Ok(work);
            }
        }
    }

    /// What comes after an attempt: `Some` when the work phase ends.
    async fn after_attempt(
        &mut self,
        attempt: &Attempt,
        phase: &mut WorkPhase,
        end: AttemptEnd,
    ) -> Result<Option<Work>, EngineError> {
        let escalation = match end {
            AttemptEnd::Completed { head } => return Ok(Some(Work::Completed { head })),
            AttemptEnd::Escalated(cause) => Some(*cause),
            AttemptEnd::Interrupted => return Ok(Some(Work::Interrupted)),
            AttemptEnd::Retry => None,
            AttemptEnd::Stalled(why) => {
                phase.stalls += 1;
                (phase.stalls >= MAX_STALLS)
                    .then(|| Cause::new(CauseKind::Stall, format!("stalled twice ({why})")))
            }
            AttemptEnd::GatesFailed(failure) => {
                let head = self.record().head.unwrap_or(attempt.base);
                let line = failure.cause.line();
                self.log_attempt(attempt, AttemptOutcome::SentBack, head, Some(&line)).await?;
                self.gates_failed(*failure).await?
            }
            AttemptEnd::NeedsAdvice(report) => self.ask_for_advice(attempt, phase, *report).await?,
            AttemptEnd::NeedsScope(request) => {
                if !self.ask_for_scope(request).await? {
                    return Ok(Some(Work::Interrupted));
                }
                None
            }
            AttemptEnd::SelfReview(why) => self.self_review_bounce(attempt, phase, why).await?,
            AttemptEnd::Failed(text) => self.after_failure(attempt, phase, text).await?,
        };
        Ok(escalation.map(Work::Escalated))
    }

    /// Counts the attempt and builds the worker's briefing.
    async fn begin_attempt(&self, phase: &WorkPhase) -> Result<Attempt, EngineError> {
        let record = self
            .change(|record| {
                record.attempts += 1;
                // New work needs a new approval, if approvals are required.
                record.human_approved = false;
                let copy = record.clone();
                // The answer to a scope request is told once, to the next attempt.
                record.scope_decision = None;
                copy
            })
            .await?;
        self.ctx.book.transition(self.index, Transition::Work).await?;
        let base = record.base.unwrap_or(self.ctx.main_tip_at_start);
        let universal_violations = self.ctx.book.read(|s| s.universal_violations.clone());
        let input = WorkerInput {
            schema_version: WorkerInputV1,
            run_id: self.ctx.run_id.clone(),
            task: self.ctx.brief(self.index),
            attempt: record.attempts,
            round: record.rounds + 1,
            base: base.to_string(),
            contract_path: self.ctx.contract_path(self.index).display().to_string(),
            advisor_guidance: record.guidance.clone(),
            review_feedback: record.feedback.clone(),
            conflict: record.conflict.clone(),
            verify_failure: record.verify_failure.clone(),
            last_failure: phase.last_failure.clone(),
            scope_decision: record.scope_decision.clone(),
            note: record.note.clone(),
            universal_violations,
        };
        Ok(Attempt {
            number: record.attempts,
            round: record.rounds + 1,
            base,
            input,
            started_at: clock::now_rfc3339(),
            consultations: record.advisor_consults,
            continues_session: record.scope_decision.is_some(),
        })
    }

    /// Calls the worker, commits what it left, and judges the attempt.
    async fn make_attempt(
        &self,
        attempt: &Attempt,
        phase: &mut WorkPhase,
    ) -> Result<AttemptEnd, EngineError> {
        let reply = self.call_worker(attempt, phase).await?;
        match &reply.outcome {
            RoleOutcome::Cancelled => {
                // Cut off by the stop: not an attempt; resume makes it again.
                self.change(|record| record.attempts -= 1).await?;
                return Ok(AttemptEnd::Interrupted);
            }
            RoleOutcome::OverBudget(over) => {
                // Never started: the task escalates, or the run stops, with the figure.
                self.change(|record| record.attempts -= 1).await?;
                return Err(EngineError::OverBudget(over.clone()));
            }
            RoleOutcome::Trouble(trouble) => {
                // The backend failed, not the task: the attempt does not count.
                self.change(|record| record.attempts -= 1).await?;
                phase.retries += 1;
                let (roles, cancel) = (&self.ctx.roles, &self.ctx.cancel);
                roles.wait_out(&mut phase.backoff, trouble, &self.id, Role::Worker, cancel).await?;
                return Ok(AttemptEnd::Retry);
            }
            RoleOutcome::CouldNotStart(message) => {
                return Err(EngineError::usage(
                    format!("the worker of task {} could not start: {message}", self.id),
                    "check roles.worker in breeze.toml (backend, command) and that the program is installed",
                ));
            }
            _ => {}
        }
        phase.backoff = Backoff::new(self.ctx.backoff);
        phase.retries = 0;
        // Whatever happened, the worker's files are committed on the task branch.
        let (head, commit_problem) = self.commit_work(attempt).await?;
        if !reply.escaped.is_empty() {
            // Changed outside its lane (seen only without kernel confinement): the attempt
            // fails and the run stops before anything of it can land.
            let who = format!("the worker of task {} (attempt {})", self.id, attempt.number);
            let error = self.ctx.roles.guard.escape_error(&who, &reply.escaped);
            self.log_attempt(attempt, AttemptOutcome::Failed, head, Some(&error.to_string()))
                .await?;
            self.ctx.book.report(ProgressEvent::AttemptFailed {
                id: self.id.clone(),
                attempt: attempt.number,
                reason: error.to_string(),
            });
            return Err(error);
        }
        let problem = commit_problem.or_else(|| lane_problem(&reply).map(CommitProblem::Failed));
        self.judge(attempt, reply, head, problem).await
    }

    /// Runs the worker role once.
    async fn call_worker(
        &self,
        attempt: &Attempt,
        phase: &WorkPhase,
    ) -> Result<RoleReply, EngineError> {
        let record = self.record();
        // Fix rounds, and the answer to a scope request, continue the same agent session
        // where the backend can.
        // A gate's findings (not a round) go back to the same session too.
        let resume_session =
            if attempt.round > 1 || attempt.continues_session || record.feedback.is_some() {
                record.session_id.clone()
            } else {
                None
            };
        let resume_baseline = resume_session.as_ref().and(record.session_usage);
        let worktree = self.worktree.clone().expect("the lane was taken before work");
        let label = match phase.retries {
            0 => attempt.number.to_string(),
            n => format!("{}.retry-{n}", attempt.number),
        };
        let input = serde_json::to_value(&attempt.input)
            .map_err(EngineError::internal("the worker input"))?;
        let call = RoleCall {
            role: Role::Worker,
            task_id: self.id.clone(),
            attempt: attempt.number,
            round: attempt.round,
            cwd: worktree.path.clone(),
            base: attempt.base.to_string(),
            input,
            prompt: prompt::worker(&phase.definition, &attempt.input),
            resume_session,
            label,
            resume_baseline,
            lane: Some(worktree),
            lane_env: Some(self.lane_env()),
        };
        let reply = self.ctx.call_role(call).await?;
        self.change(|record| {
            record.usage.add(&reply.usage);
            if let Some(session) = &reply.session {
                record.session_id = Some(session.id.clone());
                record.session_usage = session.usage;
            }
        })
        .await?;
        if !reply.write_violations.is_empty() {
            // Seen in the agent's stream; what was committed is judged by the write-set gate.
            tracing::warn!(
                task = %self.id,
                attempt = attempt.number,
                "the worker tried to write outside its write set: {}",
                reply.write_violations.join(", ")
            );
        }
        Ok(reply)
    }

    /// Commits what the worker left on the task branch; the head after it, and what the
    /// worker did to its worktree that fails the attempt (moved HEAD, rewrote history, left
    /// conflict markers, a file above `gates.max_file_size` — refused from its size alone,
    /// nothing staged — or a FIFO, socket or device, removed), if anything.
    ///
    /// Only the paths the lane's watch saw change since the lane last agreed with git are
    /// looked at (with what is staged in the index); after lost notifications, the whole
    /// worktree, once. Once committed, those changes are settled.
    async fn commit_work(
        &self,
        attempt: &Attempt,
    ) -> Result<(ObjectId, Option<CommitProblem>), EngineError> {
        let message = format!("breeze: task {}, attempt {}", self.id, attempt.number);
        self.commit_left(message, attempt.base, LeftInLane::WorkerAttempt).await
    }

    /// Commits what the lane holds with `message` (see [`TaskDriver::commit_work`]); the head
    /// after it (`fallback` when the task has none), and what makes the lane's state
    /// impossible to commit, if anything.
    pub(super) async fn commit_lane(
        &self,
        message: String,
        fallback: ObjectId,
    ) -> Result<(ObjectId, Option<CommitProblem>), EngineError> {
        self.commit_left(message, fallback, LeftInLane::Person).await
    }

    /// [`TaskDriver::commit_lane`] after `left` — a worker's attempt (what it wrote that git
    /// ignores is removed then) or a person's session.
    async fn commit_left(
        &self,
        message: String,
        fallback: ObjectId,
        left: LeftInLane,
    ) -> Result<(ObjectId, Option<CommitProblem>), EngineError> {
        let wt = self.worktree.clone().expect("the lane was taken before work");
        let path = wt.path.clone();
        let committed = self.ctx.git_watched(&path, move |repo, changes| {
            // A write the worker's CLI never finished (stopped by its own budget cap, a
            // timeout, a kill) is nobody's change.
            if let LeftInLane::WorkerAttempt = left {
                repo.remove_unfinished_writes(&wt, changes)?;
            }
            let outcome = repo.commit_worktree_changed(&wt, &message, changes)?;
            // What a worker wrote that git ignores never reaches the checks, the next
            // attempt or the next task on the lane (a person's files are theirs).
            let removed = match left {
                LeftInLane::WorkerAttempt => {
                    repo.remove_ignored_writes(&wt, changes, &breeze_git::is_agent_config)?
                }
                LeftInLane::Person => Vec::new(),
            };
            Ok((outcome, removed))
        });
        let problem = match committed.await {
            Ok((outcome, removed)) => {
                let head = ObjectId::from(outcome.head());
                self.change(|record| record.head = Some(head)).await?;
                if !removed.is_empty() {
                    self.ignored_writes_removed(removed).await?;
                }
                None
            }
            Err(EngineError::Git(err)) if crate::causes::worker_caused(&err) => {
                let gates = err.refused_gates();
                Some(if gates.is_empty() {
                    CommitProblem::Failed(err.to_string())
                } else {
                    CommitProblem::Gates(gates)
                })
            }
            Err(err) => return Err(err),
        };
        Ok((self.record().head.unwrap_or(fallback), problem))
    }

    /// Says (in the log and the journal) which ignored paths an attempt wrote that breeze
    /// removed, and provisions the lane's included files again if one was among them.
    async fn ignored_writes_removed(&self, removed: Vec<String>) -> Result<(), EngineError> {
        tracing::warn!(
            task = %self.id,
            "the worker wrote what git ignores, which is never its change and is removed from the lane: {}",
            crate::advice::bound_text(&removed.join(", "), 2000)
        );
        self.ctx
            .book
            .journal(EventKind::IgnoredWritesRemoved { task: self.id.clone(), paths: removed })
            .await?;
        if !self.ctx.config.worktree_include.is_empty()
            && let Some(worktree) = self.worktree.clone()
        {
            self.provision(&worktree).await?;
        }
        Ok(())
    }

    /// The verdict on an attempt whose worker ran.
    async fn judge(
        &self,
        attempt: &Attempt,
        reply: RoleReply,
        head: ObjectId,
        problem: Option<CommitProblem>,
    ) -> Result<AttemptEnd, EngineError> {
        let report = match report_of(reply, &self.ctx.config.worker) {
            Err(AttemptEnd::Stalled(why)) => {
                self.log_attempt(attempt, AttemptOutcome::Stalled, head, Some("stalled")).await?;
                self.ctx.book.report(ProgressEvent::AttemptFailed {
                    id: self.id.clone(),
                    attempt: attempt.number,
                    reason: why.clone(),
                });
                return Ok(AttemptEnd::Stalled(why));
            }
            Err(end) => return Ok(end),
            Ok(report) => report,
        };
        // A worktree the engine cannot commit fails the attempt (or the gates), whatever
        // the worker said.
        match problem {
            Some(CommitProblem::Failed(problem)) => return Ok(AttemptEnd::Failed(problem)),
            Some(CommitProblem::Gates(gates)) => {
                let failed: Vec<&GateResult> = gates.iter().collect();
                return Ok(AttemptEnd::GatesFailed(Box::new(GateFailure::of_gates(&failed))));
            }
            None => {}
        }
        match report.status {
            WorkerStatus::Completed if head == attempt.base => {
                Ok(AttemptEnd::Failed("the worker reported completed but changed nothing".into()))
            }
            WorkerStatus::Completed => {
                if let Some(why) = unverified_self_review(&report) {
                    return Ok(AttemptEnd::SelfReview(why));
                }
                self.log_attempt(attempt, AttemptOutcome::Completed, head, None).await?;
                // Kept as it will land: the reviewer is shown exactly this line.
                let changelog =
                    report.changelog.as_deref().and_then(crate::changelog::landing_line);
                self.change(|record| {
                    record.conflict = None;
                    record.verify_failure = None;
                    record.changelog = changelog;
                })
                .await?;
                Ok(AttemptEnd::Completed { head })
            }
            WorkerStatus::Failed => Ok(AttemptEnd::Failed(
                report
                    .escalation_reason
                    .clone()
                    .filter(|reason| !reason.trim().is_empty())
                    .unwrap_or_else(|| format!("worker reported failure: {}", report.summary)),
            )),
            WorkerStatus::Escalated => {
                self.log_attempt(attempt, AttemptOutcome::Escalated, head, None).await?;
                let reason = report.escalation_reason.unwrap_or(report.summary);
                Ok(AttemptEnd::Escalated(Box::new(Cause::new(
                    CauseKind::Worker,
                    format!("the worker escalated: {}", crate::causes::flat(&reason)),
                ))))
            }
            WorkerStatus::NeedsAdvice => {
                self.log_attempt(attempt, AttemptOutcome::NeedsAdvice, head, None).await?;
                Ok(AttemptEnd::NeedsAdvice(Box::new(report)))
            }
            WorkerStatus::NeedsScope => {
                self.log_attempt(attempt, AttemptOutcome::NeedsScope, head, None).await?;
                match report.scope_request {
                    Some(request) => Ok(AttemptEnd::NeedsScope(request)),
                    None => Ok(AttemptEnd::Failed(
                        "the worker answered needs-scope without a scope_request".into(),
                    )),
                }
            }
        }
    }

    /// The worker asked for advice: consult, or escalate when it keeps asking or no advice
    /// is to be had. `Some` is the escalation.
    async fn ask_for_advice(
        &mut self,
        attempt: &Attempt,
        phase: &mut WorkPhase,
        report: WorkerReport,
    ) -> Result<Option<Cause>, EngineError> {
        phase.advice_requests += 1;
        if phase.advice_requests > MAX_ADVICE_REQUESTS {
            return Ok(Some(Cause::new(
                CauseKind::Worker,
                format!("the worker asked for advice {MAX_ADVICE_REQUESTS} times without progress"),
            )));
        }
        let request = report.advisor_request.clone();
        let question = Question {
            reason: request.as_ref().map_or(ReasonCode::AdvisorRequired, |r| r.reason_code),
            signature: report.summary.clone(),
            question: report.summary.clone(),
            last_error: String::new(),
            attempt: attempt.number,
        };
        match self.consult(question, request).await? {
            Consult::Advice(response) => self.apply_advice(&response).await,
            Consult::Unavailable(why) => Ok(Some(Cause::new(
                CauseKind::Worker,
                format!("the worker needs advice and none is available: {why}"),
            ))),
        }
    }

    /// A failed attempt: recorded, counted, and — three in a row — the end; the same
    /// failure `retry_threshold` times in a row consults the Advisor first. `Some` is the
    /// escalation.
    async fn after_failure(
        &mut self,
        attempt: &Attempt,
        phase: &mut WorkPhase,
        text: String,
    ) -> Result<Option<Cause>, EngineError> {
        phase.last_failure = Some(crate::advice::bound_text(&text, 4096));
        let head = self.record().head.unwrap_or(attempt.base);
        self.log_attempt(attempt, AttemptOutcome::Failed, head, Some(&text)).await?;
        self.ctx.book.report(ProgressEvent::AttemptFailed {
            id: self.id.clone(),
            attempt: attempt.number,
            reason: text.clone(),
        });
        phase.failures_in_row += 1;
        phase.signatures.push(normalize_signature(signature_line(&text)));
        if phase.failures_in_row >= MAX_FAILURES_IN_ROW {
            let cause = Cause::new(
                CauseKind::Attempts,
                format!(
                    "{MAX_FAILURES_IN_ROW} failed attempts in a row; the last: {}",
                    signature_line(&text)
                ),
            );
            return Ok(Some(cause));
        }
        let threshold = self.ctx.config.retry_threshold as usize;
        let recent = &phase.signatures[phase.signatures.len().saturating_sub(threshold)..];
        let same_cause =
            phase.failures_in_row as usize >= threshold && recent.iter().all(|s| *s == recent[0]);
        if !same_cause {
            return Ok(None);
        }
        let question = Question {
            reason: ReasonCode::RetryThreshold,
            signature: signature_line(&text).to_string(),
            question: format!(
                "The same failure happened {} times in a row. What should the worker change before attempt {}?",
                phase.failures_in_row,
                attempt.number + 1
            ),
            last_error: text,
            attempt: attempt.number,
        };
        match self.consult(question, None).await? {
            Consult::Advice(response) => self.apply_advice(&response).await,
            Consult::Unavailable(_) => Ok(None),
        }
    }

    /// A completed report whose self-review does not hold goes back to the worker; the third
    /// time, the task escalates. `Some` is the escalation.
    async fn self_review_bounce(
        &mut self,
        attempt: &Attempt,
        phase: &mut WorkPhase,
        why: String,
    ) -> Result<Option<Cause>, EngineError> {
        let head = self.record().head.unwrap_or(attempt.base);
        self.log_attempt(attempt, AttemptOutcome::SelfReview, head, Some(&why)).await?;
        self.ctx.book.report(ProgressEvent::AttemptFailed {
            id: self.id.clone(),
            attempt: attempt.number,
            reason: why.clone(),
        });
        let bounces = self
            .change(|record| {
                record.self_review_bounces += 1;
                record.self_review_bounces
            })
            .await?;
        if bounces > MAX_SELF_REVIEW_BOUNCES {
            return Ok(Some(Cause::new(
                CauseKind::Worker,
                format!(
                    "the worker's self-review did not hold {bounces} times; the last: {}",
                    signature_line(&why)
                ),
            )));
        }
        phase.last_failure = Some(why);
        Ok(None)
    }

    /// Journals and logs (`cycles.jsonl`) one worker attempt.
    async fn log_attempt(
        &self,
        attempt: &Attempt,
        outcome: AttemptOutcome,
        head: ObjectId,
        error: Option<&str>,
    ) -> Result<(), EngineError> {
        self.ctx
            .book
            .journal(EventKind::Attempt {
                task: self.id.clone(),
                attempt: attempt.number,
                round: attempt.round,
                outcome,
                head: Some(head.to_string()),
                error: error.map(str::to_string),
            })
            .await?;
        let cycle = CycleRecord {
            run_id: self.ctx.run_id.clone(),
            cycle: 0,
            task_id: self.id.clone(),
            executor: "breezing",
            job_status: outcome.as_str().to_string(),
            verdict: None,
            commit_hash: Some(head.to_string().chars().take(7).collect()),
            summary: crate::advice::bound_text(error.unwrap_or(outcome.as_str()), 8192),
            attempts: attempt.number,
            consultations: attempt.consultations,
            started_at: attempt.started_at.clone(),
            finished_at: clock::now_rfc3339(),
        };
        if outcome == AttemptOutcome::Completed {
            // Its line waits for the verdict of the review it goes to.
            *self.pending_cycle.lock().unwrap_or_else(|p| p.into_inner()) = Some(cycle);
        } else {
            self.ctx.book.cycle(cycle);
        }
        Ok(())
    }
}

/// The worker's report, or how the attempt ended without one.
fn report_of(
    reply: RoleReply,
    settings: &crate::config::RoleConfig,
) -> Result<WorkerReport, AttemptEnd> {
    let diagnostics = reply.diagnostics.trim().to_string();
    match reply.outcome {
        RoleOutcome::Answered(value) => validate::parse::<WorkerReport>(value)
            .map_err(|invalid| AttemptEnd::Failed(format!("invalid worker report: {invalid}"))),
        RoleOutcome::NoAnswer(why) => Err(AttemptEnd::Failed(format!("no worker report: {why}"))),
        RoleOutcome::Ended(RoleEnding::Stalled) => Err(AttemptEnd::Stalled(format!(
            "stalled: no output and no file changes for {}",
            humantime::format_duration(settings.stall_timeout)
        ))),
        RoleOutcome::Ended(RoleEnding::TimedOut) => Err(AttemptEnd::Failed(format!(
            "timed out after {}",
            humantime::format_duration(settings.timeout)
        ))),
        // The failure's own first line leads, so two runs of the same error share a
        // signature; how the process ended follows.
        RoleOutcome::Ended(ending) if diagnostics.is_empty() => {
            Err(AttemptEnd::Failed(format!("worker {ending}")))
        }
        RoleOutcome::Ended(ending) => {
            Err(AttemptEnd::Failed(format!("{diagnostics}\n(worker {ending})")))
        }
        // Handled before a report is looked for.
        RoleOutcome::Cancelled
        | RoleOutcome::Trouble(_)
        | RoleOutcome::CouldNotStart(_)
        | RoleOutcome::OverBudget(_) => Err(AttemptEnd::Interrupted),
    }
}

/// Why a completed report's self-review does not hold: an entry not verified, or one
/// without evidence.
fn unverified_self_review(report: &WorkerReport) -> Option<String> {
    let bad: Vec<String> = report
        .self_review
        .iter()
        .filter(|entry| !entry.verified || entry.evidence.trim().is_empty())
        .map(|entry| {
            if entry.verified {
                format!("`{}` has no evidence", entry.rule)
            } else {
                format!("`{}` is not verified", entry.rule)
            }
        })
        .collect();
    (!bad.is_empty()).then(|| {
        format!(
            "the report says completed, but its self-review does not hold: {}; make each rule hold and give its evidence, or report failed",
            bad.join("; ")
        )
    })
}

/// What the worker did to its lane's links (repaired), as the failure of its attempt.
fn lane_problem(reply: &RoleReply) -> Option<String> {
    (!reply.lane_problems.is_empty()).then(|| {
        format!(
            "the worker changed how its worktree links to the repository ({}); breeze repaired it — leave `.git` alone",
            reply.lane_problems.join("; ")
        )
    })
}
