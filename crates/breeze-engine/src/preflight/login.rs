//! Whether an agent CLI is logged in, told from files and variables only — no network, no
//! run of the CLI. What counts: the variables of the environment the role will get, and the
//! files of the person's own CLI state (breeze's environment), which is what every role's
//! home is filled from ([`crate::role_home`]):
//!
//! - claude: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `CLAUDE_CODE_OAUTH_TOKEN`
//!   reaching the role (`pass_credentials = true`, or named in the role's `env`); or
//!   `.credentials.json` in the person's config folder (`$CLAUDE_CONFIG_DIR`, else
//!   `~/.claude`); or a `primaryApiKey` in their `~/.claude.json`. Bedrock, Vertex, an
//!   `apiKeyHelper` in their settings, or `ANTHROPIC_BASE_URL` (another endpoint) cannot be
//!   told: "not checked".
//! - codex: `OPENAI_API_KEY` or `CODEX_API_KEY` reaching the role; or `auth.json` in the
//!   person's `$CODEX_HOME` (else `~/.codex`). A `model_provider` of its own (in the role's
//!   `args` or the person's `config.toml`) cannot be told: "not checked".
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

/// Whether `kind` is logged in for a role with environment `env` and CLI arguments `args`,
/// its home filled from the person's state in breeze's own environment `engine_env`.
pub(crate) fn login(
    kind: AgentKind,
    env: &[(String, String)],
    engine_env: &[(String, String)],
    args: &[String],
) -> Login {
    let var = |name: &str| {
        env.iter().find(|(key, value)| key == name && !value.is_empty()).map(|(_, v)| v.as_str())
    };
    let Some(person) = crate::role_home::PersonState::of(kind, engine_env) else {
        return Login::Unknown("no HOME, so its login folder is unknown".into());
    };
    let dir = &person.dir;
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
            if let Some(json) = &person.account
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
        let claude = |role: &[(String, String)]| login(AgentKind::Claude, role, &bare, &[]);
        assert!(matches!(claude(&bare), Login::No(_)));
        let with_key = env(&[("HOME", &home_var), ("ANTHROPIC_API_KEY", "sk-x")]);
        assert!(matches!(claude(&with_key), Login::Yes(_)));
        let empty_key = env(&[("HOME", &home_var), ("ANTHROPIC_API_KEY", "")]);
        assert!(matches!(claude(&empty_key), Login::No(_)));
        let dir = home.path().join(".claude");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), r#"{"apiKeyHelper":"x"}"#).unwrap();
        assert!(matches!(claude(&bare), Login::Unknown(_)));
        std::fs::write(dir.join(".credentials.json"), "{}").unwrap();
        assert!(matches!(claude(&bare), Login::Yes(_)));
        assert!(matches!(login(AgentKind::Claude, &[], &[], &[]), Login::Unknown(_)), "no HOME");
    }

    #[test]
    fn the_login_checked_is_the_persons_that_homes_are_filled_from_not_the_roles_home() {
        let person = tempfile::tempdir().unwrap();
        let config_dir = person.path().join("claude-config");
        std::fs::create_dir_all(&config_dir).unwrap();
        std::fs::write(config_dir.join(".credentials.json"), "{}").unwrap();
        let engine = env(&[
            ("HOME", "/nonexistent-home"),
            ("CLAUDE_CONFIG_DIR", config_dir.to_str().unwrap()),
        ]);
        // The role's environment names its own (empty) home: not what is checked.
        let role = env(&[("HOME", "/nonexistent-home"), ("CLAUDE_CONFIG_DIR", "/run/homes/1")]);
        assert!(matches!(login(AgentKind::Claude, &role, &engine, &[]), Login::Yes(_)));
        std::fs::remove_file(config_dir.join(".credentials.json")).unwrap();
        match login(AgentKind::Claude, &role, &engine, &[]) {
            Login::No(what) => assert!(what.contains("claude-config"), "{what}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn codex_is_logged_in_by_its_auth_file_or_a_key_passed() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let bare = env(&[("HOME", &home_var)]);
        assert!(matches!(login(AgentKind::Codex, &bare, &bare, &[]), Login::No(_)));
        let provider = ["-c".to_string(), "model_provider=mock".to_string()];
        assert!(matches!(login(AgentKind::Codex, &bare, &bare, &provider), Login::Unknown(_)));
        let with_key = env(&[("HOME", &home_var), ("OPENAI_API_KEY", "sk-x")]);
        assert!(matches!(login(AgentKind::Codex, &with_key, &bare, &[]), Login::Yes(_)));
        let dir = home.path().join(".codex");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("auth.json"), "{}").unwrap();
        assert!(matches!(login(AgentKind::Codex, &bare, &bare, &[]), Login::Yes(_)));
    }
}
