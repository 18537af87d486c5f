//! `breeze.toml`: parsed once into a validated [`Config`].
//!
//! Every key has a default (`default-config.toml`, embedded); the user's file overrides
//! keys one by one. Unknown keys are an error naming the key.

use std::path::Path;
use std::time::Duration;

use breeze_protocol::Role;
use serde::Deserialize;

/// The defaults, documented key by key.
pub const DEFAULT_CONFIG: &str = include_str!("../default-config.toml");

/// The name of the configuration file at the repository root.
pub const CONFIG_FILE: &str = "breeze.toml";

/// How a role is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Any program following the breeze role protocol (DESIGN §5).
    Command,
    /// Claude Code in print mode with stream-json output.
    Claude,
    /// `codex exec --json`.
    Codex,
    /// The built-in deterministic simulator (demo and tests).
    Scripted,
}

impl BackendKind {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Scripted => "scripted",
        }
    }
}

/// Validated settings of one role.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleConfig {
    /// Backend.
    pub backend: BackendKind,
    /// argv for `command`.
    pub command: Vec<String>,
    /// Wall-clock limit per process.
    pub timeout: Duration,
    /// No output and no worktree change for this long = stalled.
    pub stall_timeout: Duration,
    /// Extra environment variable names passed through.
    pub env: Vec<String>,
    /// Model for claude/codex (empty = CLI default).
    pub model: String,
    /// Extra CLI arguments for claude/codex.
    pub args: Vec<String>,
    /// Pass the backend's credential variables through.
    pub pass_credentials: bool,
}

/// Validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Lanes (1..=3).
    pub max_workers: u32,
    /// Branch approved work lands on; empty = `main`, else `master`, else the branch the
    /// primary checkout has.
    pub main_branch: String,
    /// Worker role.
    pub worker: RoleConfig,
    /// Advisor role.
    pub advisor: RoleConfig,
    /// Reviewer role.
    pub reviewer: RoleConfig,
    /// Scaffolder role.
    pub scaffolder: RoleConfig,
    /// Review rounds before escalation (1..=3).
    pub max_rounds: u32,
    /// Whether the Advisor is consulted.
    pub advisor_enabled: bool,
    /// Successful consults per task.
    pub max_consults_per_task: u32,
    /// Same-signature failures in a row before a consult.
    pub retry_threshold: u32,
    /// Verify command on the merged tree (empty = none).
    pub verify: Vec<String>,
    /// Verify timeout.
    pub verify_timeout: Duration,
    /// Landing conflicts / verify failures sent back before escalating.
    pub max_land_bounces: u32,
    /// Run the repository's `pre-commit` and `commit-msg` hooks on each landing.
    pub run_hooks: bool,
    /// Ignored files copied into each worktree.
    pub worktree_include: Vec<String>,
    /// Setup command run in each new worktree (empty = none).
    pub worktree_setup: Vec<String>,
    /// Setup timeout.
    pub setup_timeout: Duration,
    /// Largest file a task may add.
    pub max_file_bytes: u64,
    /// How role processes are confined.
    pub sandbox_mode: SandboxMode,
    /// More paths workers may write (`~/` allowed), beyond their lane, scratch folder and
    /// CLI state.
    pub sandbox_writable: Vec<String>,
}

/// How role processes are confined (`sandbox.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Kernel confinement where the kernel offers it, else detection.
    Auto,
    /// Refuse to run roles without kernel confinement.
    Require,
    /// No kernel confinement: check after every role what it changed outside its lane.
    Detect,
}

impl SandboxMode {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Require => "require",
            Self::Detect => "detect",
        }
    }
}

impl Config {
    /// The settings of `role`.
    pub fn role(&self, role: Role) -> &RoleConfig {
        match role {
            Role::Worker => &self.worker,
            Role::Advisor => &self.advisor,
            Role::Reviewer => &self.reviewer,
            Role::Scaffolder => &self.scaffolder,
        }
    }

    /// Sets the backend of every role (the demo uses `scripted`).
    pub fn set_all_backends(&mut self, backend: BackendKind) {
        for role in [&mut self.worker, &mut self.advisor, &mut self.reviewer, &mut self.scaffolder]
        {
            role.backend = backend;
        }
    }

    /// The defaults alone.
    pub fn defaults() -> Config {
        // The embedded defaults are tested to parse; failing here is a build defect.
        Self::parse("", "(defaults)").expect("embedded default-config.toml is valid")
    }

    /// Reads `breeze.toml` in `repo_root` if present, else the defaults.
    pub fn load(repo_root: &Path) -> Result<Config, ConfigError> {
        let path = repo_root.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path.display().to_string()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::defaults()),
            Err(err) => {
                Err(ConfigError { file: path.display().to_string(), message: err.to_string() })
            }
        }
    }

    /// Parses user TOML over the defaults.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let error = |message: String| ConfigError { file: file.to_string(), message };
        let defaults: RawConfig = toml::from_str(DEFAULT_CONFIG).map_err(|err| ConfigError {
            file: "default-config.toml".into(),
            message: err.to_string(),
        })?;
        let user: RawConfig = toml::from_str(text).map_err(|err| error(err.to_string()))?;
        merge(defaults, user).validate().map_err(error)
    }
}

/// A configuration problem, naming the file and key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The config file.
    pub file: String,
    /// What is wrong (toml's messages name the key, line and column).
    pub message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    run: RawRun,
    #[serde(default)]
    roles: RawRoles,
    #[serde(default)]
    review: RawReview,
    #[serde(default)]
    advisor: RawAdvisor,
    #[serde(default)]
    land: RawLand,
    #[serde(default)]
    worktree: RawWorktree,
    #[serde(default)]
    gates: RawGates,
    #[serde(default)]
    sandbox: RawSandbox,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    mode: Option<SandboxMode>,
    writable: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    max_workers: Option<i64>,
    main_branch: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoles {
    worker: Option<RawRole>,
    advisor: Option<RawRole>,
    reviewer: Option<RawRole>,
    scaffolder: Option<RawRole>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRole {
    backend: Option<BackendKind>,
    command: Option<Vec<String>>,
    timeout: Option<String>,
    stall_timeout: Option<String>,
    env: Option<Vec<String>>,
    model: Option<String>,
    args: Option<Vec<String>>,
    pass_credentials: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    max_rounds: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdvisor {
    enabled: Option<bool>,
    max_consults_per_task: Option<i64>,
    retry_threshold: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLand {
    verify: Option<Vec<String>>,
    verify_timeout: Option<String>,
    max_bounces: Option<i64>,
    run_hooks: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorktree {
    include: Option<Vec<String>>,
    setup: Option<Vec<String>>,
    setup_timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGates {
    max_file_size: Option<String>,
}

/// `user` wins key by key; roles merge field by field over the defaults of the same role.
fn merge(defaults: RawConfig, user: RawConfig) -> RawConfig {
    fn pick<T>(user: Option<T>, default: Option<T>) -> Option<T> {
        user.or(default)
    }
    fn role(
        user: Option<RawRole>,
        default: Option<RawRole>,
        fallback: &Option<RawRole>,
    ) -> Option<RawRole> {
        let default = default.or_else(|| fallback.clone()).unwrap_or_default();
        let user = user.unwrap_or_default();
        Some(RawRole {
            backend: pick(user.backend, default.backend),
            command: pick(user.command, default.command),
            timeout: pick(user.timeout, default.timeout),
            stall_timeout: pick(user.stall_timeout, default.stall_timeout),
            env: pick(user.env, default.env),
            model: pick(user.model, default.model),
            args: pick(user.args, default.args),
            pass_credentials: pick(user.pass_credentials, default.pass_credentials),
        })
    }
    // Roles without their own defaults inherit the worker's (for keys like `env`).
    let worker_defaults = defaults.roles.worker.clone();
    RawConfig {
        run: RawRun {
            max_workers: pick(user.run.max_workers, defaults.run.max_workers),
            main_branch: pick(user.run.main_branch, defaults.run.main_branch),
        },
        roles: RawRoles {
            worker: role(user.roles.worker, defaults.roles.worker, &None),
            advisor: role(user.roles.advisor, defaults.roles.advisor, &worker_defaults),
            reviewer: role(user.roles.reviewer, defaults.roles.reviewer, &worker_defaults),
            scaffolder: role(user.roles.scaffolder, defaults.roles.scaffolder, &worker_defaults),
        },
        review: RawReview { max_rounds: pick(user.review.max_rounds, defaults.review.max_rounds) },
        advisor: RawAdvisor {
            enabled: pick(user.advisor.enabled, defaults.advisor.enabled),
            max_consults_per_task: pick(
                user.advisor.max_consults_per_task,
                defaults.advisor.max_consults_per_task,
            ),
            retry_threshold: pick(user.advisor.retry_threshold, defaults.advisor.retry_threshold),
        },
        land: RawLand {
            verify: pick(user.land.verify, defaults.land.verify),
            verify_timeout: pick(user.land.verify_timeout, defaults.land.verify_timeout),
            max_bounces: pick(user.land.max_bounces, defaults.land.max_bounces),
            run_hooks: pick(user.land.run_hooks, defaults.land.run_hooks),
        },
        worktree: RawWorktree {
            include: pick(user.worktree.include, defaults.worktree.include),
            setup: pick(user.worktree.setup, defaults.worktree.setup),
            setup_timeout: pick(user.worktree.setup_timeout, defaults.worktree.setup_timeout),
        },
        gates: RawGates {
            max_file_size: pick(user.gates.max_file_size, defaults.gates.max_file_size),
        },
        sandbox: RawSandbox {
            mode: pick(user.sandbox.mode, defaults.sandbox.mode),
            writable: pick(user.sandbox.writable, defaults.sandbox.writable),
        },
    }
}

impl RawConfig {
    fn validate(self) -> Result<Config, String> {
        let roles = self.roles;
        Ok(Config {
            max_workers: int_in(self.run.max_workers, "run.max_workers", 1, 3)?,
            main_branch: self.run.main_branch.unwrap_or_default().trim().to_string(),
            worker: validate_role(roles.worker, "worker")?,
            advisor: validate_role(roles.advisor, "advisor")?,
            reviewer: validate_role(roles.reviewer, "reviewer")?,
            scaffolder: validate_role(roles.scaffolder, "scaffolder")?,
            max_rounds: int_in(self.review.max_rounds, "review.max_rounds", 1, 3)?,
            advisor_enabled: self.advisor.enabled.unwrap_or(true),
            max_consults_per_task: int_in(
                self.advisor.max_consults_per_task,
                "advisor.max_consults_per_task",
                0,
                3,
            )?,
            retry_threshold: int_in(self.advisor.retry_threshold, "advisor.retry_threshold", 1, 2)?,
            verify: self.land.verify.unwrap_or_default(),
            verify_timeout: duration(self.land.verify_timeout, "land.verify_timeout")?,
            max_land_bounces: int_in(self.land.max_bounces, "land.max_bounces", 1, 10)?,
            run_hooks: self.land.run_hooks.unwrap_or(false),
            worktree_include: inside_repository(
                self.worktree.include.unwrap_or_default(),
                "worktree.include",
            )?,
            worktree_setup: self.worktree.setup.unwrap_or_default(),
            setup_timeout: duration(self.worktree.setup_timeout, "worktree.setup_timeout")?,
            max_file_bytes: size(self.gates.max_file_size, "gates.max_file_size")?,
            sandbox_mode: self.sandbox.mode.ok_or("missing key `sandbox.mode`")?,
            sandbox_writable: self.sandbox.writable.unwrap_or_default(),
        })
    }
}

fn validate_role(raw: Option<RawRole>, name: &str) -> Result<RoleConfig, String> {
    let raw = raw.unwrap_or_default();
    let key = |field: &str| format!("roles.{name}.{field}");
    let backend = raw.backend.ok_or_else(|| format!("missing key `{}`", key("backend")))?;
    let command = raw.command.unwrap_or_default();
    if backend == BackendKind::Command && command.is_empty() {
        return Err(format!(
            "`{}` is empty but `{}` is \"command\"; write the argv to run, e.g. command = [\"bash\", \"scripts/{name}.sh\"]",
            key("command"),
            key("backend")
        ));
    }
    Ok(RoleConfig {
        backend,
        command,
        timeout: duration(raw.timeout, &key("timeout"))?,
        stall_timeout: duration(raw.stall_timeout, &key("stall_timeout"))?,
        env: raw.env.unwrap_or_default(),
        model: raw.model.unwrap_or_default(),
        args: raw.args.unwrap_or_default(),
        pass_credentials: raw.pass_credentials.unwrap_or(false),
    })
}

/// Repository-relative patterns only: no absolute path, no `..` component.
fn inside_repository(patterns: Vec<String>, key: &str) -> Result<Vec<String>, String> {
    for pattern in &patterns {
        let escapes = pattern.starts_with('/')
            || pattern.starts_with('~')
            || pattern.split(['/', '\\']).any(|part| part == "..");
        if escapes {
            return Err(format!(
                "`{key}`: `{pattern}` points outside the repository; name ignored files inside it, relative to its root (e.g. \".env\", \"config/*.local\")"
            ));
        }
    }
    Ok(patterns)
}

fn int_in(value: Option<i64>, key: &str, min: i64, max: i64) -> Result<u32, String> {
    let value = value.ok_or_else(|| format!("missing key `{key}`"))?;
    if value < min || value > max {
        return Err(format!("`{key}` is {value}; it must be between {min} and {max}"));
    }
    // Bounded by `max` (≤ 10) above.
    Ok(value as u32)
}

/// Parses durations like `600s`, `10m`, `1h 30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text.trim()).map_err(|err| {
        format!("invalid duration {text:?} ({err}); write it like \"600s\", \"10m\" or \"1h\"")
    })?;
    if duration.is_zero() {
        return Err(format!("invalid duration {text:?}: it must be longer than zero"));
    }
    Ok(duration)
}

fn duration(value: Option<String>, key: &str) -> Result<Duration, String> {
    let text = value.ok_or_else(|| format!("missing key `{key}`"))?;
    parse_duration(&text).map_err(|err| format!("`{key}`: {err}"))
}

/// Parses sizes like `10MiB`, `512KiB`, `2GB`, `1048576`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number.parse().map_err(|_| {
        format!("invalid size {text:?}; write it like \"10MiB\", \"512KiB\" or \"1048576\"")
    })?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => {
            return Err(format!("invalid size unit {other:?} in {text:?}; use B, KiB, MiB or GiB"));
        }
    };
    number.checked_mul(factor).ok_or_else(|| format!("size {text:?} is too large"))
}

fn size(value: Option<String>, key: &str) -> Result<u64, String> {
    let text = value.ok_or_else(|| format!("missing key `{key}`"))?;
    parse_size(&text).map_err(|err| format!("`{key}`: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_match_the_design() {
        let config = Config::defaults();
        assert_eq!(config.max_workers, 3);
        assert_eq!(config.max_rounds, 3);
        assert_eq!(config.worker.stall_timeout, Duration::from_secs(600));
        assert_eq!(config.worker.timeout, Duration::from_secs(45 * 60));
        assert_eq!(config.retry_threshold, 2);
        assert_eq!(config.max_consults_per_task, 3);
        assert_eq!(config.max_file_bytes, 10 * 1024 * 1024);
        assert!(config.verify.is_empty());
    }

    #[test]
    fn user_keys_override_defaults_one_by_one() {
        let config = Config::parse(
            r#"
            [run]
            max_workers = 2
            [roles.worker]
            backend = "command"
            command = ["bash", "w.sh"]
            stall_timeout = "30s"
            [land]
            verify = ["cargo", "test"]
            "#,
            "breeze.toml",
        )
        .unwrap();
        assert_eq!(config.max_workers, 2);
        assert_eq!(config.worker.backend, BackendKind::Command);
        assert_eq!(config.worker.command, ["bash", "w.sh"]);
        assert_eq!(config.worker.stall_timeout, Duration::from_secs(30));
        assert_eq!(
            config.worker.timeout,
            Duration::from_secs(45 * 60),
            "untouched key keeps its default"
        );
        assert_eq!(config.reviewer.backend, BackendKind::Claude);
        assert_eq!(config.verify, ["cargo", "test"]);
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let err = Config::parse("[run]\nmax_worker = 2\n", "breeze.toml").unwrap_err().to_string();
        assert!(err.starts_with("breeze.toml:"), "{err}");
        assert!(err.contains("max_worker"), "{err}");
        let err =
            Config::parse("[roles.worker]\nbakend = \"command\"\n", "breeze.toml").unwrap_err();
        assert!(err.to_string().contains("bakend"), "{err}");
        let err =
            Config::parse("[roles.janitor]\nbackend = \"command\"\n", "breeze.toml").unwrap_err();
        assert!(err.to_string().contains("janitor"), "{err}");
        let err = Config::parse("[colour]\n", "breeze.toml").unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let err = Config::parse("[run]\nmax_workers = 5\n", "b.toml").unwrap_err().to_string();
        assert!(err.contains("`run.max_workers` is 5; it must be between 1 and 3"), "{err}");
        let err = Config::parse("[roles.worker]\ntimeout = \"5 minutes please\"\n", "b.toml")
            .unwrap_err();
        assert!(err.to_string().contains("`roles.worker.timeout`: invalid duration"), "{err}");
        let err = Config::parse("[roles.reviewer]\nbackend = \"command\"\n", "b.toml").unwrap_err();
        assert!(err.to_string().contains("`roles.reviewer.command` is empty"), "{err}");
        let err = Config::parse("[roles.worker]\nbackend = \"gpt\"\n", "b.toml").unwrap_err();
        assert!(err.to_string().contains("gpt"), "{err}");
        let err = Config::parse("[gates]\nmax_file_size = \"10 parsecs\"\n", "b.toml").unwrap_err();
        assert!(err.to_string().contains("`gates.max_file_size`"), "{err}");
    }

    #[test]
    fn worktree_include_outside_the_repository_is_a_config_error() {
        for bad in ["../secrets/*", "/etc/passwd", "config/../../x", "~/.ssh/id_rsa"] {
            let text = format!("[worktree]\ninclude = [{bad:?}]\n");
            let err = Config::parse(&text, "breeze.toml").unwrap_err().to_string();
            assert!(err.contains("points outside the repository"), "{bad}: {err}");
        }
        let ok = Config::parse("[worktree]\ninclude = [\".env\", \"config/*.local\"]\n", "b.toml");
        assert_eq!(ok.unwrap().worktree_include, [".env", "config/*.local"]);
    }

    #[test]
    fn sizes_and_durations_parse() {
        assert_eq!(parse_size("10MiB").unwrap(), 10 << 20);
        assert_eq!(parse_size("512 KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("0s").is_err());
    }
}
