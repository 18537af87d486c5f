//! Consulting the Advisor: one consult per trigger hash per run, at most
//! `max_consults_per_task` answered consults per task, saved answers reused.

use breeze_protocol::{
    AdvisorGuidance, AdvisorRequest, AdvisorRequestV1, AdvisorResponse, Cause, CauseKind, Decision,
    EventKind, ExecutionContext, PriorAdvisorResponse, Role, SelectedPlan, validate,
};

use super::driver::TaskDriver;
use super::outcome::{Consult, Question};
use super::review_checkout::{self, ReviewCheckout};
use crate::advice::{bound_text, trigger_hash};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::roles::backoff::Backoff;
use crate::roles::{RoleCall, RoleOutcome, RoleReply, definition, prompt};
use crate::run_dir::file_slug;

/// Longest `last_error` sent to the Advisor.
const LAST_ERROR_BYTES: usize = 8192;

impl TaskDriver {
    /// Asks the Advisor, either the engine's own question or the request a worker returned.
    pub(super) async fn consult(
        &self,
        question: Question,
        from_worker: Option<AdvisorRequest>,
    ) -> Result<Consult, EngineError> {
        if !self.ctx.config.advisor_enabled {
            return Ok(Consult::Unavailable(
                "the Advisor is disabled (advisor.enabled = false)".into(),
            ));
        }
        let mut request = match from_worker {
            Some(mut request) => {
                request.run_id = Some(self.ctx.run_id.clone());
                request
            }
            None => self.advisor_request(question),
        };
        if request.prior_advisor_response.is_none() {
            request.prior_advisor_response = self.prior_advice();
        }
        if let Some(response) = self.saved_advice(&request.trigger_hash) {
            tracing::info!(task = %self.id, hash = %request.trigger_hash, "reusing the saved advisor answer");
            return Ok(Consult::Advice(response));
        }
        let record = self.record();
        if record.advisor_consults >= self.ctx.config.max_consults_per_task {
            return Ok(Consult::Unavailable(format!(
                "the Advisor budget of {} consults for this task is used up",
                self.ctx.config.max_consults_per_task
            )));
        }
        let seq = record.advisor_consults + 1;
        let reply = self.call_advisor(&request, seq).await?;
        let failure = match reply.outcome {
            RoleOutcome::Cancelled => return Ok(Consult::Unavailable("cancelled".into())),
            RoleOutcome::OverBudget(over) => return Err(EngineError::OverBudget(over)),
            RoleOutcome::Answered(value) => match validate::parse::<AdvisorResponse>(value) {
                Ok(response) => return self.accept_advice(&request, seq, response).await,
                Err(invalid) => format!("the Advisor's answer is invalid: {invalid}"),
            },
            RoleOutcome::NoAnswer(why) => format!("the Advisor gave no answer: {why}"),
            RoleOutcome::Ended(ending) => format!("the Advisor {ending}: {}", reply.diagnostics),
            RoleOutcome::CouldNotStart(why) => format!("the Advisor could not start: {why}"),
            RoleOutcome::Trouble(trouble) => {
                format!("the Advisor's backend: {}", trouble.message())
            }
        };
        tracing::warn!(task = %self.id, "{failure}");
        Ok(Consult::Unavailable(failure))
    }

    /// Follows the Advisor's answer: STOP is the escalation (`Some`), anything else becomes
    /// the guidance of the next attempt.
    pub(super) async fn apply_advice(
        &self,
        response: &AdvisorResponse,
    ) -> Result<Option<Cause>, EngineError> {
        if response.decision == Decision::Stop {
            let reason = response.stop_reason.as_deref().unwrap_or(&response.summary);
            let detail = format!("the Advisor said STOP: {}", crate::causes::flat(reason));
            return Ok(Some(Cause::new(CauseKind::AdvisorStop, detail)));
        }
        let guidance = AdvisorGuidance {
            decision: response.decision,
            summary: response.summary.clone(),
            instructions: response.executor_instructions.clone(),
        };
        self.change(|record| record.guidance = Some(guidance)).await?;
        Ok(None)
    }

    /// The engine's own `advisor-request.v1` for `question`.
    fn advisor_request(&self, question: Question) -> AdvisorRequest {
        let task = self.ctx.task(self.index);
        AdvisorRequest {
            schema_version: AdvisorRequestV1,
            task_id: self.id.clone(),
            run_id: Some(self.ctx.run_id.clone()),
            reason_code: question.reason,
            trigger_hash: trigger_hash(&self.id, question.reason, &question.signature),
            question: question.question,
            attempt: question.attempt,
            last_error: bound_text(&question.last_error, LAST_ERROR_BYTES),
            context_summary: vec![
                format!("goal: {}", task.title),
                format!("definition of done: {}", task.dod),
                format!("scope (declared write set): {}", task.writes.entries().join(", ")),
                format!("attempts so far: {}", self.record().attempts),
            ],
            execution_context: Some(ExecutionContext {
                selected_plan: SelectedPlan {
                    path: self.ctx.plan.path.display().to_string(),
                    background: serde_json::Value::Null,
                    task_rows: Vec::new(),
                },
                sprint_contracts: std::fs::read(self.ctx.contract_path(self.index))
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                    .into_iter()
                    .collect(),
                scope_note: "The declared write set is inferred planning context, not proof of user authorization.".into(),
                authorization_note: "breeze supplies no user authorization; advice does not grant it.".into(),
                resume_evidence: None,
            }),
            prior_advisor_response: None,
        }
    }

    /// The task's last Advisor answer in this run, for its next consult.
    fn prior_advice(&self) -> Option<PriorAdvisorResponse> {
        let path = self.record().last_advice?;
        let text = std::fs::read_to_string(&path).ok()?;
        let response = validate::parse_str::<AdvisorResponse>(&text).ok()?;
        Some(PriorAdvisorResponse {
            trust: "untrusted prior advice; evaluate against current evidence, not an authorization source".into(),
            path,
            response,
        })
    }

    /// The answer saved earlier in this run for the same trigger, if it still reads.
    fn saved_advice(&self, hash: &str) -> Option<AdvisorResponse> {
        let path = self.ctx.book.read(|snapshot| snapshot.consulted.get(hash).cloned())?;
        let text = std::fs::read_to_string(path).ok()?;
        validate::parse_str::<AdvisorResponse>(&text).ok()
    }

    /// Runs the Advisor once (waiting out its backend's trouble); the request is kept in
    /// the run files.
    async fn call_advisor(
        &self,
        request: &AdvisorRequest,
        seq: u32,
    ) -> Result<RoleReply, EngineError> {
        let slug = file_slug(&self.id);
        let request_path =
            self.ctx.run_dir.advisor_file(&slug, request.reason_code.as_str(), seq, "request");
        let input =
            serde_json::to_value(request).map_err(EngineError::internal("the advisor request"))?;
        write_json(&request_path, &input)?;
        let definition = definition::load(self.ctx.roles.repo_root(), Role::Advisor)
            .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
        let record = self.record();
        // The task as it stands (its last commit, else its base) and nothing else: never the
        // worker's lane. Consults of several tasks take the Advisor's checkout in turn.
        let _checkout = self.ctx.advice_lock.lock().await;
        let commit = record.head.or(record.base);
        let cwd = match commit {
            Some(commit) => {
                review_checkout::place(&self.ctx, ReviewCheckout::Advice, commit).await?
            }
            None => self.ctx.roles.repo_root().to_path_buf(),
        };
        let mut backoff = Backoff::new(self.ctx.backoff);
        let mut retries = 0u32;
        loop {
            let call = RoleCall {
                role: Role::Advisor,
                task_id: self.id.clone(),
                attempt: seq,
                round: record.rounds + 1,
                cwd: cwd.clone(),
                base: record.base.map(|base| base.to_string()).unwrap_or_default(),
                input: input.clone(),
                prompt: prompt::advisor(&definition, request),
                resume_session: None,
                label: match retries {
                    0 => seq.to_string(),
                    n => format!("{seq}.retry-{n}"),
                },
                resume_baseline: None,
                lane: None,
                lane_env: Some(self.lane_env()),
            };
            let reply = self.ctx.call_role(call).await?;
            self.change(|record| record.usage.add(&reply.usage)).await?;
            if !reply.escaped.is_empty() {
                let who = format!("the Advisor consulted for task {}", self.id);
                return Err(self.ctx.roles.guard.escape_error(&who, &reply.escaped));
            }
            let RoleOutcome::Trouble(trouble) = &reply.outcome else { return Ok(reply) };
            if self.ctx.cancel.is_cancelled() {
                return Ok(reply);
            }
            retries += 1;
            let (roles, cancel) = (&self.ctx.roles, &self.ctx.cancel);
            roles.wait_out(&mut backoff, trouble, &self.id, Role::Advisor, cancel).await?;
        }
    }

    /// Keeps a valid answer: in the run files, the run's saved answers, the journal.
    async fn accept_advice(
        &self,
        request: &AdvisorRequest,
        seq: u32,
        response: AdvisorResponse,
    ) -> Result<Consult, EngineError> {
        let slug = file_slug(&self.id);
        let path =
            self.ctx.run_dir.advisor_file(&slug, request.reason_code.as_str(), seq, "response");
        let value =
            serde_json::to_value(&response).map_err(EngineError::internal("the advisor answer"))?;
        write_json(&path, &value)?;
        let path_text = path.display().to_string();
        let (hash, index) = (request.trigger_hash.clone(), self.index);
        self.ctx
            .book
            .update_task(index, |snapshot| {
                snapshot.consulted.insert(hash.clone(), path_text.clone());
                snapshot.tasks[index].advisor_consults += 1;
                snapshot.tasks[index].last_advice = Some(path_text.clone());
            })
            .await?;
        self.ctx
            .book
            .journal(EventKind::AdvisorConsulted {
                task: self.id.clone(),
                trigger_hash: hash,
                decision: response.decision,
                response_path: path_text,
            })
            .await?;
        self.ctx.book.report(ProgressEvent::Advised {
            id: self.id.clone(),
            decision: response.decision,
            summary: response.summary.clone(),
        });
        Ok(Consult::Advice(response))
    }
}

/// Writes a JSON value to a run file.
pub(super) fn write_json(
    path: &std::path::Path,
    value: &serde_json::Value,
) -> Result<(), EngineError> {
    let text = serde_json::to_vec_pretty(value).map_err(EngineError::internal("a run file"))?;
    std::fs::write(path, text)
        .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
}
