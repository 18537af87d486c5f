//! The flow of one task through its lane, as small named steps: the contract, the lane's
//! worktree, a preflight consult, then work → review → landing until the task lands,
//! escalates, defers or the run stops. The [`TaskDriver`] owns the task's worktree and lane;
//! the task's record lives in the run's book and changes only through transitions.

use std::sync::Arc;

use breeze_protocol::{Cause, CauseKind, ReasonCode, ReviewFeedback, Verdict};

use super::outcome::{Consult, Judged, Question, SafePoint, Step, TaskExit, Work};
use crate::advice::{is_plateau, plateau_score};
use crate::containment::LaneWriter;
use crate::error::EngineError;
use crate::run::book::Transition;
use crate::run::context::RunContext;
use crate::run::land::LandMode;
use crate::snapshot::{TaskPhase, TaskRecord};

/// Drives one task on one lane.
pub(crate) struct TaskDriver {
    pub(super) ctx: Arc<RunContext>,
    /// Where and how the task lands, and where its work starts.
    pub(super) land: Arc<dyn LandMode>,
    pub(super) index: usize,
    pub(super) lane: u32,
    pub(super) id: String,
    /// The lane's worktree, once taken.
    pub(super) worktree: Option<breeze_git::Worktree>,
    /// Held while breeze or the task's worker may change the lane, so no other role is
    /// blamed for it.
    pub(super) writer: Option<LaneWriter>,
    /// The `cycles.jsonl` line of the attempt under review, written with its verdict.
    pub(super) pending_cycle: std::sync::Mutex<Option<crate::journal::CycleRecord>>,
}

impl TaskDriver {
    pub fn new(
        ctx: Arc<RunContext>,
        land: Arc<dyn LandMode>,
        index: usize,
        lane: u32,
    ) -> TaskDriver {
        let id = ctx.task(index).id.to_string();
        TaskDriver {
            ctx,
            land,
            index,
            lane,
            id,
            worktree: None,
            writer: None,
            pending_cycle: Default::default(),
        }
    }

    /// A copy of the task's record.
    pub(super) fn record(&self) -> TaskRecord {
        self.ctx.book.record(self.index)
    }

    /// The lane's number and ports, for every process the task runs on it.
    pub(super) fn lane_env(&self) -> crate::lane_env::LaneEnv {
        crate::lane_env::LaneEnv::of(&self.ctx.config, self.lane)
    }

    /// Changes the task's record (not its phase).
    pub(super) async fn change<R>(
        &self,
        change: impl FnOnce(&mut TaskRecord) -> R,
    ) -> Result<R, EngineError> {
        self.ctx.book.change(self.index, change).await
    }

    /// Runs the task until it leaves its lane.
    pub async fn run(mut self) -> Result<TaskExit, EngineError> {
        self.write_contract()?;
        if let Some(exit) = self.land_deferred_work().await? {
            return Ok(exit);
        }
        self.take_lane().await?;
        if let Some(reason) = self.preflight().await? {
            return Ok(TaskExit::Escalated(reason));
        }
        loop {
            if self.record().phase != TaskPhase::Approved {
                match self.work_and_review().await? {
                    Step::Exit(exit) => return Ok(exit),
                    Step::Again => continue,
                    Step::Approved => {}
                }
            }
            if self.ctx.cancel.is_cancelled() {
                return Ok(TaskExit::Interrupted);
            }
            // Before landing a person may step in: a change is reviewed first.
            match self.safe_point().await? {
                SafePoint::Changed { .. } => {
                    self.ctx.book.transition(self.index, Transition::Review).await?;
                    continue;
                }
                SafePoint::Interrupted => return Ok(TaskExit::Interrupted),
                SafePoint::Passed | SafePoint::Unchanged => {}
            }
            if let Some(reason) = self.awaiting_approval() {
                return Ok(TaskExit::AwaitingApproval(reason));
            }
            // Approved work leaves its lane for the landing queue: the dispatcher lands it,
            // and a landing that sends it back starts it on a lane again.
            return Ok(TaskExit::QueuedToLand);
        }
    }

    /// Approved work whose landing was deferred goes to the landing queue without a
    /// worktree.
    async fn land_deferred_work(&mut self) -> Result<Option<TaskExit>, EngineError> {
        let record = self.record();
        let deferred = matches!(record.phase, TaskPhase::Deferred | TaskPhase::Approved);
        // A person who asked to step in gets the task's lane first.
        if !deferred || record.conflict.is_some() || self.attach_files().requested() {
            return Ok(None);
        }
        self.ctx.book.transition(self.index, Transition::Approve).await?;
        if let Some(reason) = self.awaiting_approval() {
            return Ok(Some(TaskExit::AwaitingApproval(reason)));
        }
        Ok(Some(TaskExit::QueuedToLand))
    }

    /// With `land.require_approval`, reviewed work waits for a person: why, with where the
    /// diff is and what to run.
    fn awaiting_approval(&self) -> Option<Cause> {
        let record = self.record();
        if !self.ctx.config.require_approval || record.human_approved {
            return None;
        }
        let round = record.approved_round.unwrap_or(record.rounds);
        let diff =
            self.ctx.run_dir.review_file(&crate::run_dir::file_slug(&self.id), round, "diff");
        Some(Cause::new(
            CauseKind::Approval,
            format!(
                "the reviewer approved round {round}; its diff is {} — `breeze approve {id}` lands it, `breeze reject {id} --note \"…\"` sends it back",
                diff.display(),
                id = self.id
            ),
        ))
    }

    /// Writes the task's sprint contract (once).
    fn write_contract(&self) -> Result<(), EngineError> {
        if self.ctx.contract_path(self.index).exists() {
            return Ok(());
        }
        self.write_contract_now()
    }

    /// Writes the task's sprint contract as the task is now (its write set widened by the
    /// scope grants so far).
    pub(super) fn write_contract_now(&self) -> Result<(), EngineError> {
        let path = self.ctx.contract_path(self.index);
        let config = &self.ctx.config;
        let options = breeze_plan::ContractOptions {
            plans_file: self.ctx.plan.path.display().to_string(),
            verify: (!config.verify.is_empty()).then(|| config.verify.clone()),
            checks: config.review_checks.clone(),
            advisor_enabled: config.advisor_enabled,
            max_consults: config.max_consults_per_task,
            retry_threshold: config.retry_threshold,
            generated_at: crate::clock::now_rfc3339(),
            shared_files: self.ctx.plan.shared_files.paths().map(str::to_string).collect(),
        };
        let mut task = self.ctx.task(self.index).clone();
        task.writes = self.ctx.write_sets.get(self.index);
        let contract = breeze_plan::sprint_contract(&task, &options);
        let text =
            serde_json::to_vec_pretty(&contract).map_err(EngineError::internal("the contract"))?;
        crate::snapshot::write_atomically(&path, &text)
            .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
    }

    /// A high-risk task consults the Advisor once before its first attempt; `Some` is the
    /// escalation an Advisor STOP gives.
    async fn preflight(&mut self) -> Result<Option<Cause>, EngineError> {
        let task = self.ctx.task(self.index);
        if !task.is_high_risk() || self.record().attempts > 0 {
            return Ok(None);
        }
        let flags: Vec<&str> = task.risk.iter().map(|flag| flag.as_str()).collect();
        let reason = match task.risk.first() {
            Some(breeze_plan::RiskFlag::NeedsSpike) => ReasonCode::NeedsSpike,
            Some(breeze_plan::RiskFlag::SecuritySensitive) => ReasonCode::SecuritySensitive,
            Some(breeze_plan::RiskFlag::StateMigration) => ReasonCode::StateMigration,
            None => ReasonCode::AdvisorRequired,
        };
        let named =
            if flags.is_empty() { "advisor:required".to_string() } else { flags.join(", ") };
        let question = Question {
            reason,
            signature: if flags.is_empty() { "advisor-required".into() } else { flags.join(",") },
            question: format!(
                "Task {} is high-risk ({named}). How should the worker approach it before the first attempt?",
                self.id
            ),
            last_error: String::new(),
            attempt: 0,
        };
        match self.consult(question, None).await? {
            Consult::Advice(response) => self.apply_advice(&response).await,
            Consult::Unavailable(_) => Ok(None),
        }
    }

    /// Work until a worker completes, then the gates and the reviewer judge the result.
    async fn work_and_review(&mut self) -> Result<Step, EngineError> {
        let record = self.record();
        // A task stopped while its result waited for review is reviewed, not redone.
        let head = match (record.phase, record.head) {
            (TaskPhase::Reviewing, Some(head)) => head,
            _ => {
                self.hold_lane();
                self.rebase_onto_conflict().await?;
                let head = match self.work().await? {
                    Work::Completed { head } => head,
                    Work::Escalated(reason) => return Ok(Step::Exit(TaskExit::Escalated(reason))),
                    Work::Interrupted => return Ok(Step::Exit(TaskExit::Interrupted)),
                };
                self.ctx.book.transition(self.index, Transition::Review).await?;
                head
            }
        };
        // Before the review a person may step in: their change is what is reviewed.
        let head = match self.safe_point().await? {
            SafePoint::Changed { head } => head,
            SafePoint::Interrupted => return Ok(Step::Exit(TaskExit::Interrupted)),
            SafePoint::Passed | SafePoint::Unchanged => head,
        };
        // Under review and while landing nothing may change the lane.
        self.writer = None;
        let base = self.record().base.unwrap_or(head);
        let judged = self.review(base, head).await?;
        self.writer = None;
        let round = match judged {
            Judged::GatesFailed(failure) => {
                return Ok(match self.gates_failed(failure).await? {
                    Some(cause) => Step::Exit(TaskExit::Escalated(cause)),
                    None => Step::Again,
                });
            }
            Judged::Reviewed(round) => round,
        };
        match round.verdict {
            Verdict::Approve => {
                self.change(|record| {
                    record.approved_round = Some(record.rounds);
                    record.reviewer_said = round.reviewer_said.map(|v| v.as_str().to_string());
                    record.feedback = None;
                })
                .await?;
                self.ctx.book.transition(self.index, Transition::Approve).await?;
                Ok(Step::Approved)
            }
            Verdict::RequestChanges => {
                let record = self.record();
                if record.gap_files.len() as u32 >= self.ctx.config.max_rounds {
                    let cause = self.escalation_after_reviews(&record, &round.blocking).await?;
                    return Ok(Step::Exit(TaskExit::Escalated(cause)));
                }
                self.change(|record| {
                    record.feedback =
                        Some(ReviewFeedback { round: record.rounds, gaps: round.blocking });
                })
                .await?;
                self.ctx.book.transition(self.index, Transition::Work).await?;
                Ok(Step::Again)
            }
        }
    }

    /// Marks the lane as written by this task (from now until the review).
    pub(super) fn hold_lane(&mut self) {
        if self.writer.is_none()
            && let Some(worktree) = &self.worktree
        {
            self.writer = Some(self.ctx.roles.guard.lane_writer(&worktree.path));
        }
    }

    /// After the last allowed REQUEST_CHANGES: consult the Advisor if the reviewer's rounds
    /// plateaued (pivot-required) and put its advice into the escalation for the user.
    async fn escalation_after_reviews(
        &mut self,
        record: &TaskRecord,
        blocking: &[breeze_protocol::Gap],
    ) -> Result<Cause, EngineError> {
        let rounds = record.gap_files.len() as u32;
        let last = blocking.first().map(|gap| match gap.file() {
            Some(file) => format!("{file}: {}", crate::causes::flat(&gap.issue)),
            None => crate::causes::flat(&gap.issue),
        });
        let mut detail = format!("{rounds} review rounds requested changes");
        if !is_plateau(&record.gap_files) {
            if let Some(last) = &last {
                detail.push_str(&format!("; the last: {last}"));
            }
            return Ok(Cause::new(CauseKind::Reviewer, detail));
        }
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
            last_error: last.clone().unwrap_or_default(),
            attempt: record.attempts,
        };
        detail.push_str(&format!(" on the same files (plateau: {})", files.join(", ")));
        if let Some(last) = &last {
            detail.push_str(&format!("; the last: {last}"));
        }
        if let Consult::Advice(response) = self.consult(question, None).await? {
            detail.push_str(&format!(
                "; Advisor ({}): {}",
                response.decision.as_str(),
                crate::causes::flat(&response.summary)
            ));
        }
        let mut cause = Cause::new(CauseKind::Reviewer, detail);
        cause.paths = files;
        Ok(cause)
    }
}
