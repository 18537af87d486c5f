//! `breeze.toml`: parsed once into a validated [`Config`].
//!
//! Every key has a default in `default-config.toml` (embedded). The user's file is laid
//! over the defaults as TOML tables (tables merge key by key, any other value replaces
//! the default), the result is deserialized once into `RawConfig` and then validated.
//! Unknown keys are an error naming the key. A new key is a field in `RawConfig`'s
//! tables, a line in `default-config.toml` and its place in [`Config`]. `breeze doctor`
//! names every unknown key ([`unknown_keys`]) and every value it cannot take
//! ([`value_problems`], `config/values.rs`), not only the first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use breeze_protocol::Role;
use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::backend::Runs;

mod values;
pub use values::{MAX_VALUE_PROBLEMS, ValueProblem, value_problems};

pub use crate::backend::BackendKind;

/// The defaults, documented key by key.
pub const DEFAULT_CONFIG: &str = include_str!("../default-config.toml");

/// The name of the configuration file at the repository root.
pub const CONFIG_FILE: &str = "breeze.toml";

/// The most lanes a run has (`run.max_workers` is 1 to this).
pub const MAX_LANES: u32 = 3;

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
    /// Between SIGTERM and SIGKILL when breeze stops the role's processes (Ctrl-C, a
    /// timeout, a stall); a second Ctrl-C skips it.
    pub stop_grace: Duration,
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
    /// Branch approved work lands on; empty = the branch the checkout is on when a run
    /// starts (see [`crate::target_branch`]): a name must be that branch.
    pub main_branch: String,
    /// The first port of the integration checkout's range; lane `n` starts at
    /// `port_base + n * ports_per_lane` (`run.port_base`; the lanes' environment is `lane_env`'s).
    pub port_base: u16,
    /// Ports per lane (`run.ports_per_lane`).
    pub ports_per_lane: u16,
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
    /// Commands run in the task's worktree before the reviewer (`review.checks`); each
    /// appears as a gate, and a failure is a REQUEST_CHANGES without a reviewer call.
    pub review_checks: Vec<Vec<String>>,
    /// How long one review check may take.
    pub check_timeout: Duration,
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
    /// Approved tasks verified together at most (`land.batch`); 1 = each landing alone.
    pub land_batch: u32,
    /// What a landing does when its verify fails and main's own tip fails it too.
    pub on_main_failure: OnMainFailure,
    /// Run the repository's `pre-commit` and `commit-msg` hooks on each landing.
    pub run_hooks: bool,
    /// Reviewed work waits for `breeze approve` before it lands.
    pub require_approval: bool,
    /// Where approved work lands (`[land] to`, `remote`, `target_branch`, …).
    pub land: LandConfig,
    /// Ignored files copied into each worktree.
    pub worktree_include: Vec<String>,
    /// Setup command run in each new worktree (empty = none).
    pub worktree_setup: Vec<String>,
    /// Setup timeout.
    pub setup_timeout: Duration,
    /// Lanes stay (parked at main's tip) after a finished run, for the next run to reuse.
    pub keep_lanes: bool,
    /// The folder breeze's worktrees go in, each repository in its own folder under it
    /// (`[worktree] root`, absolute, `~/` expanded); `None`: breeze's data folder
    /// (`$XDG_DATA_HOME/breeze/worktrees`, else `~/.local/share/breeze/worktrees`).
    pub worktree_root: Option<PathBuf>,
    /// Largest file a task may add.
    pub max_file_bytes: u64,
    /// How role processes are confined.
    pub sandbox_mode: SandboxMode,
    /// More paths workers and the project's commands (setup, checks, verify, hooks) may
    /// write (`~/` allowed), beyond their checkout, scratch folder and CLI state.
    pub sandbox_writable: Vec<String>,
    /// Run on escalation, deferral, awaiting approval and the run's end, with the event as
    /// JSON on stdin (`notify.command`; empty = none).
    pub notify_command: Vec<String>,
    /// Whether the reviewer and the Advisor must run on another backend or model than the
    /// worker (`review.independent`).
    pub independent: Independence,
    /// Caps on what a run spends, and the prices of models whose CLI reports tokens only.
    pub budget: BudgetConfig,
}

/// How a reviewer (or Advisor) on the worker's own backend and model is taken
/// (`review.independent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Independence {
    /// Said at the start of a run, by `breeze plan` and `breeze doctor`; the run goes on.
    Warn,
    /// Such a configuration is refused before the run (exit 2).
    Require,
    /// Not checked.
    Off,
}

impl Independence {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Require => "require",
            Self::Off => "off",
        }
    }
}

/// `[budget]`: the caps (any subset; absent = no cap) and the price table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BudgetConfig {
    /// `run_usd`, `task_usd`, `run_tokens`.
    pub caps: breeze_protocol::BudgetCaps,
    /// `[budget.prices]`: model name → price per million tokens.
    pub prices: BTreeMap<String, Price>,
}

/// US dollars per million tokens of one model (`[budget.prices]`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens not served from cache.
    pub input: f64,
    /// Input tokens served from cache.
    pub cached_input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
}

/// Where approved work lands (`[land] to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandTo {
    /// The local main branch (compare-and-swap, the user's clean checkout fast-forwarded).
    Local,
    /// A remote's branch: rebased on its fetched tip, verified, pushed with a lease.
    Remote,
    /// A pull request per task, merged by the team; landed once its change is on the
    /// remote's branch.
    PullRequest,
}

impl LandTo {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Remote => "remote",
            Self::PullRequest => "pull-request",
        }
    }
}

/// The placeholders `land.pr_command` may use.
pub const PR_PLACEHOLDERS: &[&str] =
    &["{target}", "{branch}", "{title}", "{body_file}", "{task}", "{remote}", "{commit}"];

/// Where and how approved work lands (`[land]` beyond the checks).
#[derive(Debug, Clone, PartialEq)]
pub struct LandConfig {
    /// `local`, `remote` or `pull-request`.
    pub to: LandTo,
    /// The remote (`remote`, `pull-request`).
    pub remote: String,
    /// The remote's branch work lands on; empty = the branch of main's name.
    pub target_branch: String,
    /// A task's pull-request branch, `{task}` replaced by the task's slug.
    pub pr_branch: String,
    /// argv opening a pull request, with placeholders ([`PR_PLACEHOLDERS`]).
    pub pr_command: Vec<String>,
    /// How often open pull requests are looked for on the remote's branch.
    pub pr_poll: Duration,
    /// A task whose one unlanded dependency is an open pull request starts on that
    /// pull request's branch, and its pull request targets it.
    pub stack: bool,
    /// Pushes refused because the remote branch moved, retried (each after a new fetch,
    /// merge and verify) before the landing is deferred.
    pub push_retries: u32,
    /// Time limit of one fetch, push or look-up.
    pub remote_timeout: Duration,
    /// Where the worker's changelog line goes (`land.changelog`): the project's own
    /// changelog, a named file, or nowhere.
    pub changelog: crate::changelog::Changelog,
    /// The landing commit's subject (`land.message`): `{type}`, `{title}`, `{id}`.
    pub message: crate::landing_message::MessageTemplate,
}

impl LandConfig {
    /// Whether landings go to a remote (`remote` or `pull-request`).
    pub fn is_remote(&self) -> bool {
        self.to != LandTo::Local
    }

    /// The remote's branch work lands on: `target_branch`, else the branch named like
    /// main (`main_branch`).
    pub fn target(&self, main_branch: &str) -> breeze_git::RemoteBranch {
        let branch = if self.target_branch.is_empty() {
            main_branch.to_string()
        } else {
            self.target_branch.clone()
        };
        breeze_git::RemoteBranch::new(self.remote.clone(), branch)
    }
}

/// What a landing does when `land.verify` fails on it and main's own tip fails it too
/// (`land.on_main_failure`): the failure is main's, never the task's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnMainFailure {
    /// Stop the run resumably with main's failure; `breeze resume` once main is fixed.
    Stop,
    /// Land the task anyway when it fails exactly the way main does (same failing
    /// output); a task that fails differently goes back to its worker.
    Land,
}

impl OnMainFailure {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Land => "land",
        }
    }
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

    /// The roles a run calls: the worker, the reviewer and (when enabled) the Advisor.
    pub fn run_roles(&self) -> Vec<Role> {
        let mut roles = vec![Role::Worker, Role::Reviewer];
        if self.advisor_enabled {
            roles.push(Role::Advisor);
        }
        roles
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
        parse_over(DEFAULT_CONFIG, text, file)
    }
}

/// Parses `text` (the contents of `file`) laid over the defaults `defaults_text`.
fn parse_over(defaults_text: &str, text: &str, file: &str) -> Result<Config, ConfigError> {
    let in_defaults = |message: String| ConfigError { file: "default-config.toml".into(), message };
    let in_file = |message: String| ConfigError { file: file.to_string(), message };
    let mut tables = DeTable::parse(defaults_text).map_err(|err| in_defaults(err.to_string()))?;
    inherit_worker_keys(tables.get_mut());
    // The defaults alone are complete and valid, so every error after the merge is about
    // a key or value of the user's file, and its position is one in `text`.
    typed(tables.clone(), defaults_text).map_err(in_defaults)?;
    let user = DeTable::parse(text).map_err(|err| in_file(err.to_string()))?;
    // Every unknown key at once, each with its line and the key probably meant.
    let unknown = unknown_in(tables.get_ref(), user.get_ref(), "", text);
    if !unknown.is_empty() {
        let keys: Vec<String> = unknown.iter().map(ToString::to_string).collect();
        return Err(in_file(keys.join("; ")));
    }
    merge(tables.get_mut(), user.into_inner());
    typed(tables, text).map_err(in_file)
}

/// Deserializes and validates merged tables; toml's messages show the line in `source`.
fn typed(tables: Spanned<DeTable<'_>>, source: &str) -> Result<Config, String> {
    let raw = RawConfig::deserialize(toml::de::Deserializer::from(tables)).map_err(|mut err| {
        err.set_input(Some(source));
        err.to_string()
    })?;
    raw.validate()
}

/// Lays `over` onto `base`: tables merge key by key, any other value replaces.
fn merge<'i>(base: &mut DeTable<'i>, over: DeTable<'i>) {
    for (key, value) in over {
        if let (Some(DeValue::Table(base_table)), DeValue::Table(_)) =
            (base.get_mut(key.get_ref().as_ref()).map(Spanned::get_mut), value.get_ref())
        {
            if let DeValue::Table(over_table) = value.into_inner() {
                merge(base_table, over_table);
            }
            continue;
        }
        // The user's key replaces the default's, so that messages point at the user's.
        base.remove(key.get_ref().as_ref());
        base.insert(key, value);
    }
}

/// In the defaults, `[roles.advisor]`, `[roles.reviewer]` and `[roles.scaffolder]` take
/// the keys of `[roles.worker]` they do not set (`command`, `env`, `model`, ...). This
/// happens before the user's file is laid over: a user's `[roles.worker]` changes the
/// worker only.
fn inherit_worker_keys(defaults: &mut DeTable<'_>) {
    let Some(DeValue::Table(roles)) = defaults.get_mut("roles").map(Spanned::get_mut) else {
        return;
    };
    let Some(DeValue::Table(worker)) = roles.get("worker").map(Spanned::get_ref) else {
        return;
    };
    let worker = worker.clone();
    for name in ["advisor", "reviewer", "scaffolder"] {
        if let Some(DeValue::Table(role)) = roles.get_mut(name).map(Spanned::get_mut) {
            for (key, value) in &worker {
                if !role.contains_key(key.get_ref().as_ref()) {
                    role.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

/// A key of a `breeze.toml` that breeze does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Dotted: `run.max_worker`.
    pub key: String,
    /// Where it is written (from 1).
    pub line: usize,
    /// The known key of the same table it is probably a typo of.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown key {} at line {}", self.key, self.line)?;
        match &self.suggestion {
            Some(known) => write!(f, " (did you mean {known}?)"),
            None => Ok(()),
        }
    }
}

/// The keys of `text` (a `breeze.toml`) that breeze does not know; empty when there are
/// none or the text is not TOML (parsing says why then).
pub fn unknown_keys(text: &str) -> Vec<UnknownKey> {
    let (Ok(mut known), Ok(user)) = (DeTable::parse(DEFAULT_CONFIG), DeTable::parse(text)) else {
        return Vec::new();
    };
    inherit_worker_keys(known.get_mut());
    unknown_in(known.get_ref(), user.get_ref(), "", text)
}

/// The keys of `user` not in `known`, recursively through the tables both have but the
/// [`OPEN_TABLES`], whose keys the user names.
fn unknown_in(
    known: &DeTable<'_>,
    user: &DeTable<'_>,
    prefix: &str,
    text: &str,
) -> Vec<UnknownKey> {
    let mut unknown = Vec::new();
    for (key, value) in user {
        let name = key.get_ref().as_ref();
        let dotted = format!("{prefix}{name}");
        match known.get(name).map(Spanned::get_ref) {
            Some(DeValue::Table(_)) if OPEN_TABLES.contains(&dotted.as_str()) => {}
            Some(DeValue::Table(known_table)) => {
                if let DeValue::Table(user_table) = value.get_ref() {
                    unknown.extend(unknown_in(
                        known_table,
                        user_table,
                        &format!("{dotted}."),
                        text,
                    ));
                }
            }
            Some(_) => {}
            None => {
                let at = key.span().start.min(text.len());
                unknown.push(UnknownKey {
                    key: dotted,
                    line: text[..at].matches('\n').count() + 1,
                    suggestion: closest(name, known.keys().map(|k| k.get_ref().as_ref())),
                });
            }
        }
    }
    unknown.sort_by_key(|key| key.line);
    unknown
}

/// The candidate `word` is most likely a typo of: within two edits, or one containing it.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, candidate)| {
            *distance <= 2 || (word.len() >= 4 && candidate.contains(word))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.to_string())
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
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

/// `breeze.toml` as written, defaults filled in, before validation. Field order is the
/// order messages list the expected keys in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    run: RawRun,
    roles: RawRoles,
    review: RawReview,
    advisor: RawAdvisor,
    land: RawLand,
    worktree: RawWorktree,
    gates: RawGates,
    sandbox: RawSandbox,
    notify: RawNotify,
    budget: RawBudget,
}

/// `[budget]`: a cap of 0 (the default, so also a cap left out) is no cap.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    run_usd: f64,
    task_usd: f64,
    run_tokens: i64,
    prices: BTreeMap<String, Price>,
}

/// Tables whose keys the user names (model names in `[budget.prices]`), not breeze: a check
/// for unknown keys does not look into them.
pub const OPEN_TABLES: &[&str] = &["budget.prices"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotify {
    command: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    mode: SandboxMode,
    writable: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    max_workers: i64,
    main_branch: String,
    port_base: i64,
    ports_per_lane: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoles {
    worker: RawRole,
    advisor: RawRole,
    reviewer: RawRole,
    scaffolder: RawRole,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRole {
    backend: BackendKind,
    command: Vec<String>,
    timeout: String,
    stall_timeout: String,
    stop_grace: String,
    env: Vec<String>,
    model: String,
    args: Vec<String>,
    pass_credentials: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    max_rounds: i64,
    checks: Vec<Vec<String>>,
    check_timeout: String,
    independent: Independence,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdvisor {
    enabled: bool,
    max_consults_per_task: i64,
    retry_threshold: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLand {
    verify: Vec<String>,
    verify_timeout: String,
    max_bounces: i64,
    batch: i64,
    on_main_failure: OnMainFailure,
    run_hooks: bool,
    require_approval: bool,
    to: LandTo,
    remote: String,
    target_branch: String,
    pr_branch: String,
    pr_command: Vec<String>,
    pr_poll: String,
    stack: bool,
    push_retries: i64,
    remote_timeout: String,
    changelog: String,
    message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorktree {
    include: Vec<String>,
    setup: Vec<String>,
    setup_timeout: String,
    keep_lanes: bool,
    root: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGates {
    max_file_size: String,
}

impl RawLand {
    /// The landing target, checked: a pull-request branch per task, known placeholders,
    /// stacking only for pull requests.
    fn target(&self) -> Result<LandConfig, String> {
        let remote = self.remote.trim().to_string();
        if self.to != LandTo::Local && (remote.is_empty() || remote.starts_with('-')) {
            return Err(format!(
                "`land.remote` is {:?}; name the remote work lands on, e.g. \"origin\" (`git remote -v` lists them)",
                self.remote
            ));
        }
        if self.to == LandTo::PullRequest {
            if !self.pr_branch.contains("{task}") {
                return Err(format!(
                    "`land.pr_branch` is {:?}; it must contain {{task}} so that each task gets a branch of its own, e.g. \"breeze/{{task}}\"",
                    self.pr_branch
                ));
            }
            if self.pr_command.first().is_none_or(|program| program.trim().is_empty()) {
                return Err("`land.pr_command` is empty but `land.to` is \"pull-request\"; write the argv that opens a pull request, e.g. [\"gh\", \"pr\", \"create\", \"--base\", \"{target}\", \"--head\", \"{branch}\", \"--title\", \"{title}\", \"--body-file\", \"{body_file}\"]".to_string());
            }
            for arg in &self.pr_command {
                let mut rest = arg.as_str();
                while let Some(open) = rest.find('{') {
                    let Some(close) = rest[open..].find('}') else { break };
                    let placeholder = &rest[open..open + close + 1];
                    if !PR_PLACEHOLDERS.contains(&placeholder) {
                        return Err(format!(
                            "`land.pr_command` uses {placeholder}, which breeze does not fill in; the placeholders are {}",
                            PR_PLACEHOLDERS.join(", ")
                        ));
                    }
                    rest = &rest[open + close + 1..];
                }
            }
        }
        if self.stack && self.to != LandTo::PullRequest {
            return Err(format!(
                "`land.stack` is true but `land.to` is {:?}; stacking puts a task's pull request on its dependency's, so it needs `to = \"pull-request\"`",
                self.to.as_str()
            ));
        }
        Ok(LandConfig {
            to: self.to,
            remote,
            target_branch: self.target_branch.trim().to_string(),
            pr_branch: self.pr_branch.clone(),
            pr_command: self.pr_command.clone(),
            pr_poll: duration(&self.pr_poll, "land.pr_poll")?,
            stack: self.stack,
            push_retries: int_in(self.push_retries, "land.push_retries", 0, 10)?,
            remote_timeout: duration(&self.remote_timeout, "land.remote_timeout")?,
            changelog: crate::changelog::Changelog::parse(&self.changelog)?,
            message: crate::landing_message::MessageTemplate::parse(&self.message)?,
        })
    }
}

/// With landings going to a remote, no role may be handed what reaches it: the ssh agent,
/// askpass programs, git's credential and transport settings, forge tokens. A role's `env`
/// naming one is refused (wildcards never pass them: [`breeze_supervise::scrubbed_env`]).
fn no_remote_access_for_roles(roles: &RawRoles, land: &LandConfig) -> Result<(), String> {
    if !land.is_remote() {
        return Ok(());
    }
    for (name, role) in [
        ("worker", &roles.worker),
        ("advisor", &roles.advisor),
        ("reviewer", &roles.reviewer),
        ("scaffolder", &roles.scaffolder),
    ] {
        if let Some(var) = role.env.iter().find(|var| breeze_supervise::is_remote_access_var(var)) {
            return Err(format!(
                "`roles.{name}.env` names {var}, which gives access to your remotes; with `land.to = \"{}\"` breeze pushes with your git setup itself and never hands it to a role: remove {var} from the list",
                land.to.as_str()
            ));
        }
    }
    Ok(())
}

impl RawConfig {
    fn validate(self) -> Result<Config, String> {
        let land = self.land.target()?;
        if self.land.batch > 1 && land.is_remote() {
            return Err(format!(
                "`land.batch` is {} but `land.to` is {:?}; batches move the local main in one compare-and-swap, so they need `to = \"local\"` (a remote's own merge queue batches pull requests)",
                self.land.batch,
                land.to.as_str()
            ));
        }
        no_remote_access_for_roles(&self.roles, &land)?;
        let roles = self.roles;
        let (port_base, ports_per_lane) = self.run.port_range()?;
        Ok(Config {
            land,
            max_workers: int_in(self.run.max_workers, "run.max_workers", 1, i64::from(MAX_LANES))?,
            main_branch: self.run.main_branch.trim().to_string(),
            port_base,
            ports_per_lane,
            worker: roles.worker.validate("worker")?,
            advisor: roles.advisor.validate("advisor")?,
            reviewer: roles.reviewer.validate("reviewer")?,
            scaffolder: roles.scaffolder.validate("scaffolder")?,
            max_rounds: int_in(self.review.max_rounds, "review.max_rounds", 1, 3)?,
            review_checks: checks(self.review.checks)?,
            check_timeout: duration(&self.review.check_timeout, "review.check_timeout")?,
            advisor_enabled: self.advisor.enabled,
            max_consults_per_task: int_in(
                self.advisor.max_consults_per_task,
                "advisor.max_consults_per_task",
                0,
                3,
            )?,
            retry_threshold: int_in(self.advisor.retry_threshold, "advisor.retry_threshold", 1, 2)?,
            verify: self.land.verify,
            verify_timeout: duration(&self.land.verify_timeout, "land.verify_timeout")?,
            max_land_bounces: int_in(self.land.max_bounces, "land.max_bounces", 1, 10)?,
            land_batch: int_in(self.land.batch, "land.batch", 1, MAX_LAND_BATCH)?,
            on_main_failure: self.land.on_main_failure,
            run_hooks: self.land.run_hooks,
            require_approval: self.land.require_approval,
            worktree_include: inside_repository(self.worktree.include, "worktree.include")?,
            worktree_setup: self.worktree.setup,
            setup_timeout: duration(&self.worktree.setup_timeout, "worktree.setup_timeout")?,
            keep_lanes: self.worktree.keep_lanes,
            worktree_root: worktree_root(&self.worktree.root, std::env::var_os("HOME"))?,
            max_file_bytes: size(&self.gates.max_file_size, "gates.max_file_size")?,
            sandbox_mode: self.sandbox.mode,
            sandbox_writable: self.sandbox.writable,
            notify_command: self.notify.command,
            independent: self.review.independent,
            budget: self.budget.validate()?,
        })
    }
}

impl RawBudget {
    fn validate(self) -> Result<BudgetConfig, String> {
        let dollars = |usd: f64, key: &str| match usd {
            0.0 => Ok(None),
            usd if usd.is_finite() && usd > 0.0 => Ok(Some(usd)),
            usd => Err(format!(
                "`budget.{key}` is {usd}; write a dollar amount above zero, or 0 (or nothing) for no cap"
            )),
        };
        let run_tokens = match self.run_tokens {
            0 => None,
            tokens if tokens > 0 => Some(tokens as u64),
            tokens => {
                return Err(format!(
                    "`budget.run_tokens` is {tokens}; write a token count above zero, or 0 (or nothing) for no cap"
                ));
            }
        };
        for (model, price) in &self.prices {
            for (field, value) in [
                ("input", price.input),
                ("cached_input", price.cached_input),
                ("output", price.output),
            ] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(format!(
                        "`budget.prices.\"{model}\".{field}` is {value}; write US dollars per million tokens (0 or more)"
                    ));
                }
            }
        }
        Ok(BudgetConfig {
            caps: breeze_protocol::BudgetCaps {
                run_usd: dollars(self.run_usd, "run_usd")?,
                task_usd: dollars(self.task_usd, "task_usd")?,
                run_tokens,
            },
            prices: self.prices,
        })
    }
}

impl RawRun {
    /// `port_base` and `ports_per_lane`, checked: every range — the integration checkout's
    /// and each possible lane's — lies within the unprivileged ports.
    fn port_range(&self) -> Result<(u16, u16), String> {
        let per_lane = int_in(self.ports_per_lane, "run.ports_per_lane", 1, 1000)?;
        let ranges = i64::from(MAX_LANES + 1) * i64::from(per_lane);
        let top = 65_536 - ranges;
        let base = int_in(self.port_base, "run.port_base", 1024, top).map_err(|err| {
            format!(
                "{err}, so that its {ranges} ports (integration and lanes 1 to 3) fit below 65536"
            )
        })?;
        // Both bounded by 65535 above.
        Ok((base as u16, per_lane as u16))
    }
}

impl RawRole {
    fn validate(self, name: &str) -> Result<RoleConfig, String> {
        let key = |field: &str| format!("roles.{name}.{field}");
        let runs_a_program = matches!(self.backend.describe().runs, Runs::Program);
        if runs_a_program && self.command.is_empty() {
            return Err(format!(
                "`{}` is empty but `{}` is {:?}; write the argv to run, e.g. command = [\"bash\", \"scripts/{name}.sh\"]",
                key("command"),
                key("backend"),
                self.backend.as_str()
            ));
        }
        Ok(RoleConfig {
            backend: self.backend,
            command: self.command,
            timeout: duration(&self.timeout, &key("timeout"))?,
            stall_timeout: duration(&self.stall_timeout, &key("stall_timeout"))?,
            stop_grace: duration(&self.stop_grace, &key("stop_grace"))?,
            env: self.env,
            model: self.model,
            args: self.args,
            pass_credentials: self.pass_credentials,
        })
    }
}

/// The review checks: each a non-empty argv.
fn checks(checks: Vec<Vec<String>>) -> Result<Vec<Vec<String>>, String> {
    match checks
        .iter()
        .position(|argv| argv.first().is_none_or(|program| program.trim().is_empty()))
    {
        Some(index) => Err(format!(
            "`review.checks[{index}]` is empty; write the command as an argv, e.g. [\"cargo\", \"test\"]"
        )),
        None => Ok(checks),
    }
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

/// `[worktree] root`: empty for breeze's data folder, else an absolute folder or one under
/// `~/` (expanded with `home`); a relative one is refused (relative to what?).
fn worktree_root(text: &str, home: Option<std::ffi::OsString>) -> Result<Option<PathBuf>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let under_home = match text {
        "~" => Some(""),
        _ => text.strip_prefix("~/"),
    };
    let path = match (under_home, home) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        (Some(_), None) => {
            return Err(format!(
                "`worktree.root` is {text:?}, but HOME is not set to expand `~`; name an absolute folder"
            ));
        }
        (None, _) => PathBuf::from(text),
    };
    if !path.is_absolute() {
        return Err(format!(
            "`worktree.root` is {text:?}: name an absolute folder outside the checkout (or one under `~/`), e.g. \"~/breeze-worktrees\"; a relative one is refused"
        ));
    }
    Ok(Some(path))
}

/// The largest `land.batch`: a failing batch of 16 is bisected in at most 5 verify runs.
const MAX_LAND_BATCH: i64 = 16;

fn int_in(value: i64, key: &str, min: i64, max: i64) -> Result<u32, String> {
    if value < min || value > max {
        return Err(format!("`{key}` is {value}; it must be between {min} and {max}"));
    }
    // Bounded by `max` above, which callers keep within u32.
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

fn duration(text: &str, key: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|err| format!("`{key}`: {err}"))
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

fn size(text: &str, key: &str) -> Result<u64, String> {
    parse_size(text).map_err(|err| format!("`{key}`: {err}"))
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
        assert_eq!(config.land_batch, 1, "each landing verified alone unless asked");
        assert_eq!(config.on_main_failure, OnMainFailure::Stop);
    }

    #[test]
    fn batches_and_main_failures_are_configured_in_land() {
        let config =
            Config::parse("[land]\nbatch = 4\non_main_failure = \"land\"\n", "b.toml").unwrap();
        assert_eq!(config.land_batch, 4);
        assert_eq!(config.on_main_failure, OnMainFailure::Land);
        let err = Config::parse("[land]\nbatch = 0\n", "b.toml").unwrap_err().to_string();
        assert!(err.contains("`land.batch` is 0; it must be between 1 and 16"), "{err}");
        let err = Config::parse("[land]\non_main_failure = \"ignore\"\n", "b.toml").unwrap_err();
        assert!(err.to_string().contains("ignore") && err.to_string().contains("stop"), "{err}");
        // Batches move the local main; a remote's own merge queue batches pull requests.
        let err = Config::parse("[land]\nbatch = 2\nto = \"pull-request\"\n", "b.toml");
        let err = err.unwrap_err().to_string();
        assert!(err.contains("`land.batch` is 2 but `land.to` is \"pull-request\""), "{err}");
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
    fn unknown_keys_are_all_named_with_their_line_and_the_key_meant() {
        let text = "[run]\nmax_worker = 2\n\n[roles.reviewer]\nbakend = \"codex\"\n[land]\nverify = []\nzzz = 1\n";
        let keys: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        assert_eq!(
            keys,
            [
                "unknown key run.max_worker at line 2 (did you mean max_workers?)",
                "unknown key roles.reviewer.bakend at line 5 (did you mean backend?)",
                "unknown key land.zzz at line 8",
            ]
        );
        // The advisor's table knows the keys it inherits from the worker's.
        assert!(unknown_keys("[roles.advisor]\ncommand = [\"x\"]\n").is_empty());
        let err = Config::parse(text, "breeze.toml").unwrap_err().to_string();
        assert_eq!(
            err,
            format!("breeze.toml: {}", keys.join("; ")),
            "every unknown key at once, in one line"
        );
    }

    #[test]
    fn a_model_of_the_users_own_in_budget_prices_is_no_unknown_key() {
        let text = "[budget.prices]\n\"my-model\" = { input = 1, cached_input = 0.1, output = 4 }\n[budget]\nrun_usd = 3\nrun_dolars = 4\n";
        let keys: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        // The open table is not looked into; the table around it still is.
        assert_eq!(keys, ["unknown key budget.run_dolars at line 5"]);
        let text = text.replace("run_dolars = 4\n", "");
        assert!(unknown_keys(&text).is_empty(), "{:?}", unknown_keys(&text));
        let config = Config::parse(&text, "breeze.toml").unwrap();
        assert_eq!(config.budget.prices["my-model"].output, 4.0);
        // A misspelled price field is still an error: the price's own fields are closed.
        let err = Config::parse(
            "[budget.prices]\nm = { input = 1, cached_input = 0, outptu = 2 }\n",
            "b.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("outptu"), "{err}");
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
    fn the_worktree_folder_is_absolute_with_home_expanded_and_never_relative() {
        assert_eq!(Config::defaults().worktree_root, None, "breeze's data folder by default");
        let parsed =
            |root: &str| Config::parse(&format!("[worktree]\nroot = {root:?}\n"), "b.toml");
        assert_eq!(parsed("/srv/lanes").unwrap().worktree_root, Some(PathBuf::from("/srv/lanes")));
        match std::env::var_os("HOME") {
            Some(home) => assert_eq!(
                parsed("~/lanes").unwrap().worktree_root,
                Some(PathBuf::from(home).join("lanes"))
            ),
            None => assert!(parsed("~/lanes").unwrap_err().message.contains("HOME")),
        }
        let expand = |text: &str| worktree_root(text, Some("/home/me".into()));
        assert_eq!(expand("~/w").unwrap(), Some(PathBuf::from("/home/me/w")));
        assert_eq!(expand("~").unwrap(), Some(PathBuf::from("/home/me")));
        assert_eq!(expand("  ").unwrap(), None);
        assert!(worktree_root("~/w", None).unwrap_err().contains("HOME is not set"));
        for relative in ["lanes", "./lanes", "../lanes", "~user/lanes"] {
            let err = parsed(relative).unwrap_err();
            assert!(err.message.contains("`worktree.root`"), "{relative}: {}", err.message);
            assert!(err.message.contains("relative one is refused"), "{relative}: {}", err.message);
        }
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
    fn errors_show_the_line_of_the_users_file() {
        let err =
            Config::parse("[land]\nverify_timeout = \"30m\"\n\n[run]\nmax_worker = 2\n", "b.toml")
                .unwrap_err()
                .to_string();
        assert!(err.contains("unknown key run.max_worker at line 5"), "{err}");
        let err = Config::parse("[roles]\nworker = \"x\"\n", "b.toml").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("invalid type"), "{err}");
    }

    #[test]
    fn tables_merge_and_other_values_replace() {
        let config = Config::parse(
            "[roles.advisor]\nenv = [\"A\"]\n[worktree]\ninclude = [\".env\"]\n",
            "b.toml",
        )
        .unwrap();
        assert_eq!(config.advisor.env, ["A"]);
        assert_eq!(config.advisor.timeout, Duration::from_secs(600), "the advisor's default");
        assert_eq!(config.worktree_include, [".env"]);
        assert_eq!(config.setup_timeout, Duration::from_secs(600));
    }

    #[test]
    fn roles_take_the_default_workers_keys_but_not_the_users() {
        let defaults = DEFAULT_CONFIG.replace("env = []", "env = [\"FROM_DEFAULTS\"]");
        let config = parse_over(&defaults, "[roles.worker]\nenv = [\"USER\"]\n", "b.toml").unwrap();
        assert_eq!(config.worker.env, ["USER"]);
        for role in [&config.advisor, &config.reviewer, &config.scaffolder] {
            assert_eq!(role.env, ["FROM_DEFAULTS"], "{role:?}");
        }
        assert_eq!(config.reviewer.timeout, Duration::from_secs(20 * 60), "its own default");
    }

    #[test]
    fn a_key_missing_from_the_defaults_is_named() {
        let defaults = DEFAULT_CONFIG.replace("verify_timeout = \"30m\"\n", "");
        assert_ne!(defaults, DEFAULT_CONFIG);
        let err = parse_over(&defaults, "", "b.toml").unwrap_err().to_string();
        assert!(err.starts_with("default-config.toml:"), "{err}");
        assert!(err.contains("missing field `verify_timeout`"), "{err}");
    }

    #[test]
    fn budget_caps_are_optional_and_prices_add_to_breezes_table() {
        let defaults = Config::defaults();
        assert!(!defaults.budget.caps.any(), "no cap by default");
        assert_eq!(defaults.independent, Independence::Warn);
        assert_eq!(
            defaults.budget.prices.get("gpt-5"),
            Some(&Price { input: 1.25, cached_input: 0.125, output: 10.0 })
        );
        let config = Config::parse(
            "[budget]\nrun_usd = 20\nrun_tokens = 5000000\n[budget.prices]\n\"my-model\" = { input = 1, cached_input = 0.1, output = 4 }\n\"gpt-5\" = { input = 2.0, cached_input = 0.2, output = 20.0 }\n[review]\nindependent = \"require\"\n",
            "b.toml",
        )
        .unwrap();
        let caps = config.budget.caps;
        assert_eq!(
            (caps.run_usd, caps.task_usd, caps.run_tokens),
            (Some(20.0), None, Some(5_000_000))
        );
        assert_eq!(config.budget.prices["my-model"].output, 4.0, "a model of the user's own");
        assert_eq!(config.budget.prices["gpt-5"].input, 2.0, "a corrected price");
        assert!(config.budget.prices.contains_key("gpt-5-mini"), "the rest of the table stays");
        assert_eq!(config.independent, Independence::Require);
        for (bad, key) in [
            ("[budget]\nrun_usd = -1\n", "`budget.run_usd` is -1"),
            ("[budget]\ntask_usd = nan\n", "`budget.task_usd` is NaN"),
            ("[budget]\nrun_tokens = -5\n", "`budget.run_tokens` is -5"),
            (
                "[budget.prices]\nm = { input = -1.0, cached_input = 0.0, output = 0.0 }\n",
                "`budget.prices.\"m\".input`",
            ),
            ("[budget.prices]\nm = { input = 1.0 }\n", "missing field `cached_input`"),
            ("[budget]\nrun_dollars = 5\n", "run_dollars"),
            ("[review]\nindependent = \"maybe\"\n", "maybe"),
        ] {
            let err = Config::parse(bad, "b.toml").unwrap_err().to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
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
