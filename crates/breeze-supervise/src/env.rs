//! The scrubbed environment a role process gets: an allow-list, never the engine's secrets.

use std::collections::BTreeMap;

/// Variables copied from the engine's environment into every role's environment.
///
/// Besides these, every `BREEZE_*` variable is copied. The list is PATH, HOME, LANG,
/// TERM, USER and TMPDIR; the locale (`LC_*`), time zone, login name and shell are added
/// because tools behave differently without them and they never hold secrets.
pub const ENV_ALLOW_LIST: &[&str] =
    &["PATH", "HOME", "LANG", "LANGUAGE", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ"];

/// Variables the project's own commands (setup, checks, verify, hooks) get besides
/// [`ENV_ALLOW_LIST`]: where the toolchains and their caches are and how they build — never
/// credentials. More are named in `sandbox.env`.
pub const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_TERM_COLOR",
    "CARGO_INCREMENTAL",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "NODE_PATH",
    "NODE_OPTIONS",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "JAVA_HOME",
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "CI",
];

/// Variables that reach the user's remotes and forges: the ssh agent and askpass programs,
/// git's transport and credential settings passed through the environment, and the tokens
/// forge CLIs read. A wildcard in a role's `env` (`SSH_*`, `GIT_*`, `*`) never copies them;
/// only their exact name does (and with landings going to a remote, the engine refuses even
/// that). Names ending in `*` are prefixes.
pub const REMOTE_ACCESS_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "SSH_ASKPASS_REQUIRE",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_*",
    "GIT_CONFIG_VALUE_*",
    "GIT_CONFIG_GLOBAL",
    "GIT_TERMINAL_PROMPT",
    "GIT_PROXY_COMMAND",
    "GIT_HTTP_*",
    "GCM_*",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GITLAB_TOKEN",
    "GL_TOKEN",
    "GLAB_TOKEN",
    "CI_JOB_TOKEN",
];

/// Whether `name` is one of [`REMOTE_ACCESS_VARS`].
pub fn is_remote_access_var(name: &str) -> bool {
    REMOTE_ACCESS_VARS.iter().any(|listed| match listed.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => *listed == name,
    })
}

/// Builds a role's complete environment.
///
/// Copied from `engine_env` (usually `std::env::vars()`): the names in [`ENV_ALLOW_LIST`],
/// every `LC_*` and `BREEZE_*` variable, and the names in `extra_names` (what the role's
/// `env` setting lists). An entry of `extra_names` ending in `*` is a prefix (`AWS_*`);
/// a prefix never copies [`REMOTE_ACCESS_VARS`], which only their exact names do.
/// Then `set` is applied: explicit key/values win over anything copied. Everything else —
/// `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `OPENAI_API_KEY` — stays out unless named.
///
/// The result is sorted by name and has no duplicates, so it can be logged and compared.
pub fn scrubbed_env(
    engine_env: impl IntoIterator<Item = (String, String)>,
    extra_names: &[String],
    set: &[(String, String)],
) -> Vec<(String, String)> {
    let allowed = |name: &str| {
        ENV_ALLOW_LIST.contains(&name)
            || name.starts_with("BREEZE_")
            || name.starts_with("LC_")
            || extra_names.iter().any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix) && !is_remote_access_var(name),
                None => pattern == name,
            })
    };
    let mut env: BTreeMap<String, String> =
        engine_env.into_iter().filter(|(name, _)| !name.is_empty() && allowed(name)).collect();
    for (name, value) in set {
        env.insert(name.clone(), value.clone());
    }
    env.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn secrets_stay_out_unless_named() {
        let engine = pairs(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws_secret"),
            ("AWS_REGION", "eu-west-1"),
            ("BREEZE_LOG", "debug"),
            ("LC_ALL", "C.UTF-8"),
            ("EDITOR", "vim"),
        ]);
        let env = scrubbed_env(engine.clone(), &[], &[]);
        assert_eq!(
            env,
            pairs(&[
                ("BREEZE_LOG", "debug"),
                ("HOME", "/home/u"),
                ("LC_ALL", "C.UTF-8"),
                ("PATH", "/usr/bin")
            ])
        );

        let env = scrubbed_env(engine, &["GITHUB_TOKEN".into(), "AWS_*".into()], &[]);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "AWS_REGION",
                "AWS_SECRET_ACCESS_KEY",
                "BREEZE_LOG",
                "GITHUB_TOKEN",
                "HOME",
                "LC_ALL",
                "PATH"
            ]
        );
    }

    #[test]
    fn remote_access_stays_out_even_of_wildcards() {
        let engine = pairs(&[
            ("PATH", "/usr/bin"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
            ("SSH_CONNECTION", "10.0.0.1 22"),
            ("GIT_ASKPASS", "/usr/bin/askpass"),
            ("GIT_CONFIG_KEY_0", "credential.helper"),
            ("GIT_AUTHOR_NAME", "A"),
            ("GH_TOKEN", "gho_secret"),
        ]);
        let env = scrubbed_env(engine.clone(), &[], &[]);
        assert_eq!(env, pairs(&[("PATH", "/usr/bin")]));
        let wild = scrubbed_env(engine.clone(), &["SSH_*".into(), "GIT_*".into(), "*".into()], &[]);
        let names: Vec<&str> = wild.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["GIT_AUTHOR_NAME", "PATH", "SSH_CONNECTION"]);
        let exact = scrubbed_env(engine, &["SSH_AUTH_SOCK".into()], &[]);
        assert!(
            exact.iter().any(|(k, _)| k == "SSH_AUTH_SOCK"),
            "an exact name is the user's choice"
        );
        assert!(is_remote_access_var("GCM_INTERACTIVE") && !is_remote_access_var("GCC"));
    }

    #[test]
    fn explicit_values_win_and_names_absent_from_the_engine_are_skipped() {
        let engine = pairs(&[("PATH", "/usr/bin"), ("BREEZE_ROLE", "engine")]);
        let env = scrubbed_env(
            engine,
            &["NOT_SET_ANYWHERE".into()],
            &pairs(&[("BREEZE_ROLE", "worker"), ("MODEL", "local")]),
        );
        assert_eq!(
            env,
            pairs(&[("BREEZE_ROLE", "worker"), ("MODEL", "local"), ("PATH", "/usr/bin")])
        );
    }
}
