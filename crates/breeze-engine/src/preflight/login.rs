//! Whether an agent CLI is logged in, told from files and variables only — no network, no
//! run of the CLI. What counts, for the environment the role will get:
//!
//! - claude: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `CLAUDE_CODE_OAUTH_TOKEN`
//!   reaching the role (`pass_credentials = true`, or named in the role's `env`); or
//!   `.credentials.json` in its config folder (`$CLAUDE_CONFIG_DIR`, else `~/.claude`); or a
//!   `primaryApiKey` in `~/.claude.json`. Bedrock, Vertex, an `apiKeyHelper` in its
//!   settings, or `ANTHROPIC_BASE_URL` (another endpoint) cannot be told: "not checked".
//! - codex: `OPENAI_API_KEY` or `CODEX_API_KEY` reaching the role; or `auth.json` in
//!   `$CODEX_HOME` (else `~/.codex`). A `model_provider` of its own (in the role's `args` or
//!   the CLI's `config.toml`) cannot be told: "not checked".
//!
//! On macOS claude keeps its login in the keychain: "not checked" there.

use std::path::Path;

use breeze_agents::AgentKind;

/// What the files say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Login {
    /// Logged in: how.
    Yes(String),
    /// Certainly not: what was looked for.
    No(String),
    /// Cannot be told cheaply: why.
    Unknown(String),
}

/// Whether `kind` is logged in for a role with environment `env` and CLI arguments `args`.
pub(crate) fn login(kind: AgentKind, env: &[(String, String)], args: &[String]) -> Login {
    let var = |name: &str| {
        env.iter().find(|(key, value)| key == name && !value.is_empty()).map(|(_, v)| v.as_str())
    };
    let state = kind.state_paths(env);
    let Some(dir) = state.dirs.first() else {
        return Login::Unknown("no HOME, so its login folder is unknown".into());
    };
    match kind {
        AgentKind::Claude => {
            for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"] {
                if var(name).is_some() {
                    return Login::Yes(format!("{name} is passed to it"));
                }
            }
            for name in ["CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_BASE_URL"]
            {
                if var(name).is_some() {
                    return Login::Unknown(format!(
                        "{name} is set: its login is not breeze's to tell"
                    ));
                }
            }
            let credentials = dir.join(".credentials.json");
            if credentials.is_file() {
                return Login::Yes(format!("{} exists", credentials.display()));
            }
            if file_mentions(&dir.join("settings.json"), "apiKeyHelper") {
                return Login::Unknown("an apiKeyHelper in its settings gives its key".into());
            }
            if let Some(json) = state.files.first()
                && file_mentions(json, "primaryApiKey")
            {
                return Login::Yes(format!("an API key in {}", json.display()));
            }
            if cfg!(target_os = "macos") {
                return Login::Unknown("on macOS its login is in the keychain".into());
            }
            Login::No(format!("no {} and no ANTHROPIC_API_KEY passed to it", credentials.display()))
        }
        AgentKind::Codex => {
            for name in ["OPENAI_API_KEY", "CODEX_API_KEY"] {
                if var(name).is_some() {
                    return Login::Yes(format!("{name} is passed to it"));
                }
            }
            if args.iter().any(|arg| arg.contains("model_provider"))
                || file_mentions(&dir.join("config.toml"), "model_provider")
            {
                return Login::Unknown("it uses a model provider of its own configuration".into());
            }
            let auth = dir.join("auth.json");
            if auth.is_file() {
                return Login::Yes(format!("{} exists", auth.display()));
            }
            Login::No(format!("no {} and no OPENAI_API_KEY passed to it", auth.display()))
        }
    }
}

/// What to do when `kind` is not logged in.
pub(crate) fn how_to_log_in(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => {
            "run `claude` once and log in (/login), or set pass_credentials = true in the role's table with ANTHROPIC_API_KEY in your environment"
        }
        AgentKind::Codex => {
            "run `codex login`, or set pass_credentials = true in the role's table with OPENAI_API_KEY in your environment"
        }
    }
}

/// How to install `kind`.
pub(crate) fn how_to_install(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => "npm i -g @anthropic-ai/claude-code",
        AgentKind::Codex => "npm i -g @openai/codex",
    }
}

/// Whether the file at `path` (at most 1 MiB read) contains `needle`.
fn file_mentions(path: &Path, needle: &str) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut text = String::new();
    file.take(1 << 20).read_to_string(&mut text).is_ok() && text.contains(needle)
}

/// The config folder of `kind` for `env`, for messages.
#[cfg(test)]
fn state_dir(kind: AgentKind, env: &[(String, String)]) -> Option<std::path::PathBuf> {
    kind.state_paths(env).dirs.first().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn claude_is_logged_in_by_its_credentials_file_or_a_key_passed() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let bare = env(&[("HOME", &home_var)]);
        assert!(matches!(login(AgentKind::Claude, &bare, &[]), Login::No(_)));
        let with_key = env(&[("HOME", &home_var), ("ANTHROPIC_API_KEY", "sk-x")]);
        assert!(matches!(login(AgentKind::Claude, &with_key, &[]), Login::Yes(_)));
        let empty_key = env(&[("HOME", &home_var), ("ANTHROPIC_API_KEY", "")]);
        assert!(matches!(login(AgentKind::Claude, &empty_key, &[]), Login::No(_)));
        let dir = state_dir(AgentKind::Claude, &bare).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), r#"{"apiKeyHelper":"x"}"#).unwrap();
        assert!(matches!(login(AgentKind::Claude, &bare, &[]), Login::Unknown(_)));
        std::fs::write(dir.join(".credentials.json"), "{}").unwrap();
        assert!(matches!(login(AgentKind::Claude, &bare, &[]), Login::Yes(_)));
        assert!(matches!(login(AgentKind::Claude, &[], &[]), Login::Unknown(_)), "no HOME");
    }

    #[test]
    fn codex_is_logged_in_by_its_auth_file_or_a_key_passed() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let bare = env(&[("HOME", &home_var)]);
        assert!(matches!(login(AgentKind::Codex, &bare, &[]), Login::No(_)));
        let provider = ["-c".to_string(), "model_provider=mock".to_string()];
        assert!(matches!(login(AgentKind::Codex, &bare, &provider), Login::Unknown(_)));
        let with_key = env(&[("HOME", &home_var), ("OPENAI_API_KEY", "sk-x")]);
        assert!(matches!(login(AgentKind::Codex, &with_key, &[]), Login::Yes(_)));
        let dir = state_dir(AgentKind::Codex, &bare).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("auth.json"), "{}").unwrap();
        assert!(matches!(login(AgentKind::Codex, &bare, &[]), Login::Yes(_)));
    }
}
