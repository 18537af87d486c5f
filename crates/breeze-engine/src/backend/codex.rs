//! OpenAI Codex (`backend = "codex"`): an agent CLI that reports tokens (priced with
//! `[budget.prices]`), runs the model the role's settings name (else its own default —
//! Claude Code's aliases in role definitions mean nothing to it), keeps its login in
//! `auth.json` and resumes a session with `codex resume <thread_id>`.

use breeze_agents::AgentKind;

use super::description::{
    AgentCli, Answers, Attach, Description, HomeLayout, Identity, ModelChoice, Runs, Spend,
};
use super::login::{Login, LoginQuestion, file_mentions};

/// What `backend = "codex"` is.
pub(super) static CODEX: Description = Description {
    name: "codex",
    runs: Runs::Agent(&CLI),
    answers: Answers::FinalMessage,
    model: ModelChoice::Setting,
    spend: Spend::TokensPricedByModel,
    identity: Identity::Model { same: str::eq_ignore_ascii_case },
    suggested_instead: "claude",
};

static CLI: AgentCli = AgentCli {
    kind: AgentKind::Codex,
    session_id_name: "thread_id",
    install: "npm i -g @openai/codex",
    log_in: "run `codex login`, or set pass_credentials = true in the role's table with OPENAI_API_KEY in your environment",
    login,
    home: HomeLayout {
        copied: &["auth.json"],
        memory: "AGENTS.md",
        // Codex prefers AGENTS.override.md in its home: the person's, if they have one.
        memory_override: Some("AGENTS.override.md"),
        project_files: &["AGENTS.md"],
        login: &["auth.json"],
        account: None,
        config_without_projects: Some("config.toml"),
    },
    attach,
};

/// Logged in: `OPENAI_API_KEY` or `CODEX_API_KEY` reaching the role; or `auth.json` in the
/// person's state folder. A `model_provider` of its own (in the role's `args` or the
/// person's `config.toml`) cannot be told: "not checked".
fn login(question: &LoginQuestion<'_>) -> Login {
    for name in ["OPENAI_API_KEY", "CODEX_API_KEY"] {
        if question.var(name).is_some() {
            return Login::Yes(format!("{name} is passed to it"));
        }
    }
    if question.args.iter().any(|arg| arg.contains("model_provider"))
        || file_mentions(&question.state_dir.join("config.toml"), "model_provider")
    {
        return Login::Unknown("it uses a model provider of its own configuration".into());
    }
    let auth = question.state_dir.join("auth.json");
    if auth.is_file() {
        return Login::Yes(format!("{} exists", auth.display()));
    }
    Login::No(format!("no {} and no OPENAI_API_KEY passed to it", auth.display()))
}

/// `codex [resume] <no project config> [--sandbox danger-full-access] [--model <model>]
/// <args> [<thread_id>]`. Inside breeze's confinement codex's own sandbox runs no command
/// at all (as for the worker): the outer one keeps the session's writes in the worktree.
fn attach(session: &Attach<'_>) -> Vec<String> {
    let mut argv = vec![CLI.kind.as_str().to_string()];
    if session.session.is_some() {
        argv.push("resume".into());
    }
    argv.extend(CLI.kind.no_project_config_args().iter().map(|arg| arg.to_string()));
    if session.confined {
        argv.extend(["--sandbox".to_string(), "danger-full-access".to_string()]);
    }
    if !session.model.is_empty() {
        argv.extend(["--model".to_string(), session.model.to_string()]);
    }
    argv.extend(session.args.iter().cloned());
    if let Some(thread) = session.session {
        argv.push(thread.to_string());
    }
    argv
}
