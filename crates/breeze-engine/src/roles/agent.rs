//! Roles on an agent CLI (`claude`, `codex`: whichever the role's backend describes): the
//! CLI run through `breeze-agents`, answering with its final message in the shape of its
//! message type's JSON schema, in the role's own CLI home, filled before the call and rid
//! of its login after it ([`crate::role_home`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use breeze_agents::{AgentCall, AgentFailure, AgentKind};
use breeze_protocol::{MessageKind, Role};
use breeze_supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use super::backoff::Trouble;
use super::call::{RoleOutcome, RoleReply, Session};
use super::definition;
use super::invocation::{Backend, BackendFuture, Invocation, ProcessLog, keep_for_the_record};
use crate::backend::AgentCli;
use crate::error::EngineError;
use crate::role_home;

/// Runs roles on the agent CLI their backend describes.
pub(crate) struct AgentBackend {
    pub supervisor: Supervisor,
    pub log: ProcessLog,
    pub repo_root: PathBuf,
    pub engine_env: Vec<(String, String)>,
    pub write_sets: Arc<BTreeMap<String, breeze_agents::WriteSetCheck>>,
}

impl Backend for AgentBackend {
    fn run<'a>(
        &'a self,
        run: &'a Invocation<'a>,
        cancel: &'a CancellationToken,
    ) -> BackendFuture<'a> {
        Box::pin(self.run_cli(run, cancel))
    }
}

/// The message a role answers with, whose schema the CLI is given.
pub(crate) fn answer_kind(role: Role) -> Option<MessageKind> {
    match role {
        Role::Advisor => Some(MessageKind::AdvisorResponse),
        Role::Reviewer => Some(MessageKind::ReviewResult),
        Role::Worker => Some(MessageKind::WorkerReport),
        Role::Scaffolder => Some(MessageKind::PlanDraft),
    }
}

/// The CLI call for an invocation: the role definition's tools and model, the role's
/// settings, its confinement and scratch folder, its answer's schema. A definition that
/// cannot be read is the built-in one (the run checked it before).
pub(crate) fn agent_call(
    kind: AgentKind,
    repo_root: &Path,
    engine_env: &[(String, String)],
    run: &Invocation<'_>,
) -> AgentCall {
    let (call, settings) = (run.call, &run.settings);
    let definition =
        definition::load(repo_root, call.role).unwrap_or_else(|_| definition::builtin(call.role));
    let mut agent = AgentCall::new(kind, call.role, &call.cwd, call.prompt.clone(), &run.log_path);
    agent.env = run.env.clone();
    agent.engine_env = engine_env.to_vec();
    agent.pass_credentials = settings.pass_credentials;
    agent.home = kind.home_in(&run.env);
    agent.timeout = settings.timeout;
    agent.stall_timeout = settings.stall_timeout;
    agent.grace = settings.stop_grace;
    agent.model = definition::model(&definition, settings).unwrap_or_default();
    agent.extra_args = settings.args.clone();
    agent.allowed_tools = definition.tools.clone();
    agent.disallowed_tools = definition.disallowed_tools.clone();
    agent.max_turns = definition.max_turns;
    agent.max_budget_usd = run.max_budget_usd;
    agent.resume_session = call.resume_session.clone();
    agent.resume_baseline = call.resume_baseline;
    agent.scratch_dir = run.scratch.clone();
    agent.private_git = run.private_git.clone();
    agent.confinement = run.confinement.clone();
    agent.network = run.network.clone();
    agent.marker = Some(run.marker.clone());
    // A worker's lane watch: its activity for the stall clock, without a walk of the lane.
    agent.activity =
        run.activity.clone().map(|watch| watch as Arc<dyn breeze_supervise::ActivityProbe>);
    agent.output_schema = answer_kind(call.role).map(|kind| kind.schema().clone());
    agent
}

/// Why a role's CLI home is not ready for its call.
#[derive(Debug)]
enum HomeNotReady {
    /// The role's environment names no home.
    NoHome(AgentKind),
    /// It could not be filled.
    Fill(AgentKind, EngineError),
    /// Filling it ended without an answer.
    Interrupted(AgentKind, tokio::task::JoinError),
}

impl std::fmt::Display for HomeNotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoHome(kind) => {
                write!(f, "the {kind} role has no CLI home ({} is not set)", kind.home_var())
            }
            Self::Fill(kind, err) => {
                let hints = err.hints().join("; ");
                let hints = if hints.is_empty() { hints } else { format!(" ({hints})") };
                write!(f, "cannot prepare the role's {kind} home: {err}{hints}")
            }
            Self::Interrupted(kind, err) => {
                write!(f, "cannot prepare the role's {kind} home: {err}")
            }
        }
    }
}

impl AgentBackend {
    /// [`agent_call`], with the worker's write-set check.
    fn agent_call(&self, kind: AgentKind, run: &Invocation<'_>) -> AgentCall {
        let mut agent = agent_call(kind, &self.repo_root, &self.engine_env, run);
        if run.call.role == Role::Worker {
            agent.in_write_set = self.write_sets.get(&run.call.task_id).cloned();
        }
        agent
    }

    /// Fills the role's home (the one its environment names) for this call: the person's
    /// login and settings, main's instructions at the call's base. Err: why the role cannot
    /// start.
    async fn fill_home(
        &self,
        cli: &'static AgentCli,
        run: &Invocation<'_>,
    ) -> Result<role_home::FilledHome, HomeNotReady> {
        let kind = cli.kind;
        let Some(home) = kind.home_in(&run.env) else { return Err(HomeNotReady::NoHome(kind)) };
        let person = role_home::PersonState::of(cli, &self.engine_env);
        let (root, base) = (self.repo_root.clone(), run.call.base.clone());
        let filled = tokio::task::spawn_blocking(move || {
            let repo = breeze_git::Repo::open(&root)?;
            let project = role_home::ProjectInstructions::at(&repo, &base, cli)?;
            role_home::fill(cli, &home, person.as_ref(), project.as_ref())
        })
        .await;
        match filled {
            Ok(Ok(filled)) => Ok(filled),
            Ok(Err(err)) => Err(HomeNotReady::Fill(kind, err)),
            Err(err) => Err(HomeNotReady::Interrupted(kind, err)),
        }
    }

    async fn run_cli(&self, run: &Invocation<'_>, cancel: &CancellationToken) -> RoleReply {
        let call = run.call;
        let log_path = run.log_path.clone();
        let Some(cli) = run.settings.backend.describe().agent() else {
            let message =
                format!("the {} backend runs no agent CLI", run.settings.backend.as_str());
            return RoleReply::of(RoleOutcome::CouldNotStart(message), log_path);
        };
        let home = match self.fill_home(cli, run).await {
            Ok(home) => home,
            Err(why) => {
                return RoleReply::of(RoleOutcome::CouldNotStart(why.to_string()), log_path);
            }
        };
        let on_spawn = self.log.started(call, &log_path);
        let result = breeze_agents::run_agent(
            &self.supervisor,
            self.agent_call(cli.kind, run),
            cancel.clone(),
            on_spawn,
        )
        .await;
        // The login leaves the home as soon as the CLI has ended.
        drop(home);
        let result = match result {
            Ok(result) => result,
            Err(err) => {
                let message =
                    format!("{err} (is the {} CLI installed and on PATH?)", cli.kind.as_str());
                return RoleReply::of(RoleOutcome::CouldNotStart(message), log_path);
            }
        };
        self.log.ended(call, result.pid, result.ending, result.usage);
        if let Some(answer) = &result.answer {
            keep_for_the_record(&run.record_path, answer);
        }
        let outcome = match (&result.failure, result.ending) {
            (_, breeze_supervise::Ending::Cancelled) => RoleOutcome::Cancelled,
            (Some(failure), _) => match trouble_of(failure) {
                Some(trouble) => RoleOutcome::Trouble(trouble),
                // A failure the CLI reported (API error, max turns) is a failed attempt even
                // when the process exited 0.
                None => match result.ending {
                    breeze_supervise::Ending::Exited(0) => {
                        RoleOutcome::NoAnswer(failure.to_string())
                    }
                    ending => RoleReply::from_ending(ending, Err(failure.to_string())),
                },
            },
            (None, ending) => RoleReply::from_ending(
                ending,
                result.answer.clone().ok_or_else(|| {
                    result.answer_error.clone().unwrap_or_else(|| "no answer".into())
                }),
            ),
        };
        RoleReply {
            diagnostics: result.diagnostics.clone(),
            usage: result.usage,
            session: result
                .session_id
                .clone()
                .map(|id| Session { id, usage: result.session_usage }),
            write_violations: result.write_violations.clone(),
            windows: result.windows.clone(),
            ..RoleReply::of(outcome, log_path)
        }
    }
}

/// The backend's part of an agent's failure, if it is one.
fn trouble_of(failure: &AgentFailure) -> Option<Trouble> {
    let message = failure.to_string();
    match failure {
        failure if failure.is_limit() => {
            Some(Trouble::Limited { retry_after: failure.retry_after(), message })
        }
        AgentFailure::Auth { .. } => Some(Trouble::Auth { message }),
        failure if failure.is_transient() => Some(Trouble::Transient { message }),
        _ => None,
    }
}
