//! Claude Code (`backend = "claude"`): an agent CLI that reports its cost and tokens, runs
//! its role definition's model unless the role's settings name one, keeps its login in
//! `.credentials.json` (or an API key in `.claude.json`) and resumes a session with
//! `claude --resume <session_id>`.

use breeze_agents::AgentKind;

use super::description::{
    AgentCli, Answers, Attach, Description, HomeLayout, Identity, ModelChoice, Runs, Spend,
};
use super::login::{Login, LoginQuestion, file_mentions};

/// What `backend = "claude"` is.
pub(super) static CLAUDE: Description = Description {
    name: "claude",
    runs: Runs::Agent(&CLI),
    answers: Answers::FinalMessage,
    model: ModelChoice::SettingElseDefinition,
    spend: Spend::CostAndTokens,
    identity: Identity::Model { same: same_model },
    suggested_instead: "codex",
};

static CLI: AgentCli = AgentCli {
    kind: AgentKind::Claude,
    session_id_name: "session_id",
    install: "npm i -g @anthropic-ai/claude-code",
    log_in: "run `claude` once and log in (/login), or set pass_credentials = true in the role's table with ANTHROPIC_API_KEY in your environment",
    login,
    home: HomeLayout {
        copied: &[".credentials.json", "settings.json"],
        memory: "CLAUDE.md",
        memory_override: None,
        // Claude reads AGENTS.md where a project has no CLAUDE.md.
        project_files: &["CLAUDE.md", "AGENTS.md"],
        login: &[".credentials.json", ".claude.json", "backups"],
        account: Some(".claude.json"),
        config_without_projects: None,
    },
    attach,
};

/// Logged in: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `CLAUDE_CODE_OAUTH_TOKEN`
/// reaching the role (`pass_credentials = true`, or named in the role's `env`); or
/// `.credentials.json` in the person's config folder; or a `primaryApiKey` in their
/// `.claude.json`. Bedrock, Vertex, an `apiKeyHelper` in their settings, or
/// `ANTHROPIC_BASE_URL` (another endpoint) cannot be told: "not checked" — nor can the
/// keychain, where claude keeps its login on macOS.
fn login(question: &LoginQuestion<'_>) -> Login {
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"] {
        if question.var(name).is_some() {
            return Login::Yes(format!("{name} is passed to it"));
        }
    }
    for name in ["CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_BASE_URL"] {
        if question.var(name).is_some() {
            return Login::Unknown(format!("{name} is set: its login is not breeze's to tell"));
        }
    }
    let credentials = question.state_dir.join(".credentials.json");
    if credentials.is_file() {
        return Login::Yes(format!("{} exists", credentials.display()));
    }
    if file_mentions(&question.state_dir.join("settings.json"), "apiKeyHelper") {
        return Login::Unknown("an apiKeyHelper in its settings gives its key".into());
    }
    if let Some(json) = question.account
        && file_mentions(json, "primaryApiKey")
    {
        return Login::Yes(format!("an API key in {}", json.display()));
    }
    if cfg!(target_os = "macos") {
        return Login::Unknown("on macOS its login is in the keychain".into());
    }
    Login::No(format!("no {} and no ANTHROPIC_API_KEY passed to it", credentials.display()))
}

/// `claude [--resume <session_id>] --setting-sources user [--model <model>] <args>`.
fn attach(session: &Attach<'_>) -> Vec<String> {
    let mut argv = vec![CLI.kind.as_str().to_string()];
    if let Some(id) = session.session {
        argv.extend(["--resume".to_string(), id.to_string()]);
    }
    argv.extend(CLI.kind.no_project_config_args().iter().map(|arg| arg.to_string()));
    if !session.model.is_empty() {
        argv.extend(["--model".to_string(), session.model.to_string()]);
    }
    argv.extend(session.args.iter().cloned());
    argv
}

/// Whether two Claude Code model names can mean the same model: equal, one a dated version
/// of the other (`claude-sonnet-4-5` and `claude-sonnet-4-5-20250929`), or one an alias of
/// the other's family (`sonnet` and `claude-sonnet-4-5`).
fn same_model(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let dated = |short: &str, long: &str| {
        long.strip_prefix(short).and_then(|rest| rest.strip_prefix('-')).is_some_and(|tail| {
            tail == "latest" || (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let alias =
        |alias: &str, name: &str| !alias.contains('-') && name.split('-').any(|w| w == alias);
    a == b || dated(&a, &b) || dated(&b, &a) || alias(&a, &b) || alias(&b, &a)
}
