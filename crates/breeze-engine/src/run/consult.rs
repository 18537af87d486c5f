//! Consulting the Advisor: one consult per trigger hash per run, at most
//! `max_consults_per_task` successful consults per task, saved answers reused.

use breeze_protocol::{
    AdvisorRequest, AdvisorRequestV1, AdvisorResponse, EventKind, ExecutionContext, ReasonCode,
    Role, SelectedPlan, validate,
};

use super::context::RunContext;
use crate::advice::{bound_text, trigger_hash};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::roles::{RoleCall, RoleEnding, definition, prompt};
use crate::run_dir::file_slug;

/// Longest `last_error` sent to the Advisor (the seeds' bound).
const LAST_ERROR_BYTES: usize = 8192;

/// What asking the Advisor gave.
#[derive(Debug, Clone)]
pub(crate) enum Consult {
    /// A valid answer (new, or saved earlier in this run for the same trigger).
    Advice(AdvisorResponse),
    /// No answer: disabled, budget used up, or the Advisor failed (recorded).
    Unavailable(String),
}

/// Why the engine asks.
pub(crate) struct Question {
    pub reason: ReasonCode,
    /// Text whose normalized form completes the trigger hash.
    pub signature: String,
    pub question: String,
    pub last_error: String,
    pub attempt: u32,
}

/// Asks the Advisor about task `index`, either with the engine's own question or with
/// the request a worker returned.
pub(crate) async fn consult(
    ctx: &RunContext,
    index: usize,
    worktree: &std::path::Path,
    question: Question,
    from_worker: Option<AdvisorRequest>,
) -> Result<Consult, EngineError> {
    let task = ctx.task(index);
    let id = task.id.to_string();
    if !ctx.config.advisor_enabled {
        return Ok(Consult::Unavailable(
            "the Advisor is disabled (advisor.enabled = false)".into(),
        ));
    }
    let request = match from_worker {
        Some(mut request) => {
            request.run_id = Some(ctx.run_id.clone());
            request
        }
        None => AdvisorRequest {
            schema_version: AdvisorRequestV1,
            task_id: id.clone(),
            run_id: Some(ctx.run_id.clone()),
            reason_code: question.reason,
            trigger_hash: trigger_hash(&id, question.reason, &question.signature),
            question: question.question,
            attempt: question.attempt,
            last_error: bound_text(&question.last_error, LAST_ERROR_BYTES),
            context_summary: vec![
                format!("goal: {}", task.title),
                format!("definition of done: {}", task.dod),
                format!("scope (declared write set): {}", task.writes.entries().join(", ")),
                format!("attempts so far: {}", ctx.record(index).attempts),
            ],
            execution_context: Some(ExecutionContext {
                selected_plan: SelectedPlan {
                    path: ctx.plan.path.display().to_string(),
                    background: serde_json::Value::Null,
                    task_rows: Vec::new(),
                },
                sprint_contracts: std::fs::read(ctx.contract_path(index))
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                    .into_iter()
                    .collect(),
                scope_note: "The declared write set is inferred planning context, not proof of user authorization.".into(),
                authorization_note: "breeze supplies no user authorization; advice does not grant it.".into(),
                resume_evidence: None,
            }),
            prior_advisor_response: None,
        },
    };
    let hash = request.trigger_hash.clone();

    let saved =
        ctx.snapshot.lock().unwrap_or_else(|p| p.into_inner()).consulted.get(&hash).cloned();
    if let Some(path) = saved
        && let Ok(response) =
            std::fs::read_to_string(&path).map_err(|err| err.to_string()).and_then(|text| {
                validate::parse_str::<AdvisorResponse>(&text).map_err(|err| err.to_string())
            })
    {
        tracing::info!(task = %id, %hash, "reusing the saved advisor answer");
        return Ok(Consult::Advice(response));
    }
    let record = ctx.record(index);
    if record.advisor_consults >= ctx.config.max_consults_per_task {
        return Ok(Consult::Unavailable(format!(
            "the Advisor budget of {} consults for this task is used up",
            ctx.config.max_consults_per_task
        )));
    }

    let seq = record.advisor_consults + 1;
    let slug = file_slug(&id);
    let reason = request.reason_code.as_str();
    let request_path = ctx.run_dir.advisor_file(&slug, reason, seq, "request");
    let request_value = serde_json::to_value(&request)
        .map_err(|err| EngineError::io("advisor request", std::io::Error::other(err)))?;
    std::fs::write(&request_path, serde_json::to_vec_pretty(&request_value).unwrap_or_default())
        .map_err(|err| EngineError::io(format!("cannot write {}", request_path.display()), err))?;
    let definition = definition::load(ctx.roles.repo_root(), Role::Advisor)
        .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
    let mut backoff = crate::roles::backoff::Backoff::new(ctx.backoff);
    let mut retries = 0u32;
    let reply = loop {
        let reply = ctx
            .roles
            .invoke(
                RoleCall {
                    lane: None,
                    role: Role::Advisor,
                    task_id: id.clone(),
                    attempt: seq,
                    round: record.rounds + 1,
                    cwd: worktree.to_path_buf(),
                    base: record.base.clone().unwrap_or_default(),
                    input: request_value.clone(),
                    prompt: prompt::advisor(&definition, &request),
                    resume_session: None,
                    label: if retries == 0 {
                        seq.to_string()
                    } else {
                        format!("{seq}.retry-{retries}")
                    },
                    resume_baseline: None,
                },
                &ctx.cancel,
            )
            .await;
        ctx.update_task(index, |record| record.usage.add(&reply.usage))?;
        if !reply.escaped.is_empty() {
            let who = format!("the Advisor consulted for task {id}");
            return Err(ctx.roles.guard.escape_error(&who, &reply.escaped));
        }
        match &reply.trouble {
            Some(trouble) if !ctx.cancel.is_cancelled() => {
                retries += 1;
                ctx.wait_out(&mut backoff, trouble, &id, Role::Advisor).await?;
            }
            _ => break reply,
        }
    };
    if reply.ending == RoleEnding::Cancelled {
        return Ok(Consult::Unavailable("cancelled".into()));
    }
    let failure = match (&reply.ending, reply.result) {
        (RoleEnding::Exited(0), Some(value)) => match validate::parse::<AdvisorResponse>(value) {
            Ok(response) => {
                let response_path = ctx.run_dir.advisor_file(&slug, reason, seq, "response");
                std::fs::write(
                    &response_path,
                    serde_json::to_vec_pretty(&response).unwrap_or_default(),
                )
                .map_err(|err| {
                    EngineError::io(format!("cannot write {}", response_path.display()), err)
                })?;
                let path_text = response_path.display().to_string();
                ctx.update(|snapshot| {
                    snapshot.consulted.insert(hash.clone(), path_text.clone());
                    snapshot.tasks[index].advisor_consults += 1;
                })?;
                ctx.journal(EventKind::AdvisorConsulted {
                    task: id.clone(),
                    trigger_hash: hash,
                    decision: response.decision,
                    response_path: path_text,
                })?;
                ctx.report(ProgressEvent::Advised {
                    id,
                    decision: response.decision,
                    summary: response.summary.clone(),
                });
                return Ok(Consult::Advice(response));
            }
            Err(invalid) => format!("the Advisor's answer is invalid: {invalid}"),
        },
        (RoleEnding::Exited(0), None) => {
            format!("the Advisor gave no answer: {}", reply.result_error.unwrap_or_default())
        }
        (ending, _) => format!("the Advisor {ending}: {}", reply.diagnostics),
    };
    tracing::warn!(task = %id, "{failure}");
    Ok(Consult::Unavailable(failure))
}
