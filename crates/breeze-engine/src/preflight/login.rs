//! Whether an agent CLI is logged in, told from files and variables only — no network, no
//! run of the CLI. What counts: the variables of the environment the role will get, and the
//! files of the person's own CLI state (breeze's environment), which is what every role's
//! home is filled from ([`crate::role_home`]). What each CLI looks for is its own
//! description's (`crate::backend`'s `claude.rs`, `codex.rs`): claude a key passed to the
//! role, `.credentials.json` or an API key in `.claude.json`; codex a key passed to the
//! role or `auth.json`.

use crate::backend::{AgentCli, Login, LoginQuestion};

/// Whether `cli` is logged in for a role with environment `env` and CLI arguments `args`,
/// its home filled from the person's state in breeze's own environment `engine_env`.
pub(crate) fn login(
    cli: &'static AgentCli,
    env: &[(String, String)],
    engine_env: &[(String, String)],
    args: &[String],
) -> Login {
    let Some(person) = crate::role_home::PersonState::of(cli, engine_env) else {
        return Login::Unknown("no HOME, so its login folder is unknown".into());
    };
    (cli.login)(&LoginQuestion {
        role_env: env,
        state_dir: &person.dir,
        account: person.account.as_deref(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

    fn claude_cli() -> &'static AgentCli {
        BackendKind::Claude.describe().agent().unwrap()
    }

    fn codex_cli() -> &'static AgentCli {
        BackendKind::Codex.describe().agent().unwrap()
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn claude_is_logged_in_by_its_credentials_file_or_a_key_passed() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let bare = env(&[("HOME", &home_var)]);
        let claude = |role: &[(String, String)]| login(claude_cli(), role, &bare, &[]);
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
        assert!(matches!(login(claude_cli(), &[], &[], &[]), Login::Unknown(_)), "no HOME");
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
        assert!(matches!(login(claude_cli(), &role, &engine, &[]), Login::Yes(_)));
        std::fs::remove_file(config_dir.join(".credentials.json")).unwrap();
        match login(claude_cli(), &role, &engine, &[]) {
            Login::No(what) => assert!(what.contains("claude-config"), "{what}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn codex_is_logged_in_by_its_auth_file_or_a_key_passed() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let bare = env(&[("HOME", &home_var)]);
        assert!(matches!(login(codex_cli(), &bare, &bare, &[]), Login::No(_)));
        let provider = ["-c".to_string(), "model_provider=mock".to_string()];
        assert!(matches!(login(codex_cli(), &bare, &bare, &provider), Login::Unknown(_)));
        let with_key = env(&[("HOME", &home_var), ("OPENAI_API_KEY", "sk-x")]);
        assert!(matches!(login(codex_cli(), &with_key, &bare, &[]), Login::Yes(_)));
        let dir = home.path().join(".codex");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("auth.json"), "{}").unwrap();
        assert!(matches!(login(codex_cli(), &bare, &bare, &[]), Login::Yes(_)));
    }
}
