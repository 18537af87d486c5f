//! `breeze.toml` as written, defaults filled in ([`RawConfig`]), and its validation into a
//! [`Config`]: every value checked, each refusal a [`BadValue`] naming the key and what to
//! write.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::bad_value::BadValue;
use super::settings::{
    BudgetConfig, Config, FOLLOW_PLACEHOLDERS, Fallback, Independence, LandConfig, LandTo,
    MAX_LANES, NetworkPolicy, OnMainFailure, PR_PLACEHOLDERS, PrFollowConfig, Price, RoleConfig,
    SandboxMode,
};
use super::units::{parse_duration, parse_size};
use crate::backend::{BackendKind, Runs};

/// `breeze.toml` as written, defaults filled in, before validation. Field order is the
/// order messages list the expected keys in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
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
    quota: RawQuota,
}

/// `[quota]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuota {
    pause_at: f64,
}

/// `[budget]`: a cap of 0 (the default, so also a cap left out) is no cap.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    run_usd: f64,
    task_usd: f64,
    run_tokens: i64,
    session_usd: f64,
    prices: BTreeMap<String, Price>,
}

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
    read: Vec<String>,
    network: RawNetwork,
    env: Vec<String>,
}

/// `sandbox.network`: `"open"` or the hosts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawNetwork {
    Mode(String),
    Hosts(Vec<String>),
}

impl RawNetwork {
    fn validate(self) -> Result<NetworkPolicy, BadValue> {
        match self {
            RawNetwork::Mode(mode) if mode == "open" => Ok(NetworkPolicy::Open),
            RawNetwork::Mode(mode) => Err(BadValue::Network(format!(
                "`{mode}` is neither \"open\" nor a list of hosts, e.g. [\"registry.npmjs.org\"]"
            ))),
            RawNetwork::Hosts(hosts) => hosts
                .iter()
                .map(|host| breeze_supervise::HostRule::parse(host))
                .collect::<Result<Vec<_>, _>>()
                .map(NetworkPolicy::AllowList)
                .map_err(BadValue::Network),
        }
    }
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
    fallback: RawFallback,
}

/// `[roles.<role>] fallback`: `backend = ""` is none.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFallback {
    backend: String,
    model: String,
    args: Vec<String>,
    env: Vec<String>,
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
    queue_depth: i64,
    on_main_failure: OnMainFailure,
    run_hooks: bool,
    require_approval: bool,
    to: LandTo,
    remote: String,
    target_branch: String,
    pr_branch: String,
    pr_command: Vec<String>,
    pr_poll: String,
    pr_checks_command: Vec<String>,
    pr_reviews_command: Vec<String>,
    pr_main_checks_command: Vec<String>,
    pr_rerun_command: Vec<String>,
    pr_edit_command: Vec<String>,
    pr_rounds: i64,
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
    fn target(&self) -> Result<LandConfig, BadValue> {
        let remote = self.remote.trim().to_string();
        if self.to != LandTo::Local && (remote.is_empty() || remote.starts_with('-')) {
            return Err(BadValue::NoRemote { remote: self.remote.clone() });
        }
        if self.to == LandTo::PullRequest {
            self.pull_requests()?;
        }
        if self.stack && self.to != LandTo::PullRequest {
            return Err(BadValue::StackWithoutPullRequests { to: self.to.as_str() });
        }
        Ok(LandConfig {
            to: self.to,
            remote,
            target_branch: self.target_branch.trim().to_string(),
            pr_branch: self.pr_branch.clone(),
            pr_command: self.pr_command.clone(),
            pr_poll: duration(&self.pr_poll, "land.pr_poll")?,
            pr_follow: self.pr_follow()?,
            stack: self.stack,
            push_retries: int_in(self.push_retries, "land.push_retries", 0, 10)?,
            remote_timeout: duration(&self.remote_timeout, "land.remote_timeout")?,
            changelog: crate::changelog::Changelog::parse(&self.changelog)?,
            message: crate::landing_message::MessageTemplate::parse(&self.message)?,
        })
    }

    /// How pull requests are followed, checked: placeholders breeze fills in, a number of
    /// rounds in range.
    fn pr_follow(&self) -> Result<PrFollowConfig, BadValue> {
        let commands = [
            ("pr_checks_command", &self.pr_checks_command),
            ("pr_reviews_command", &self.pr_reviews_command),
            ("pr_main_checks_command", &self.pr_main_checks_command),
            ("pr_rerun_command", &self.pr_rerun_command),
            ("pr_edit_command", &self.pr_edit_command),
        ];
        for (key, argv) in commands {
            if let Some(placeholder) = unknown_placeholder(argv, FOLLOW_PLACEHOLDERS) {
                return Err(BadValue::UnknownFollowPlaceholder { key, placeholder });
            }
        }
        Ok(PrFollowConfig {
            checks_command: self.pr_checks_command.clone(),
            reviews_command: self.pr_reviews_command.clone(),
            main_checks_command: self.pr_main_checks_command.clone(),
            rerun_command: self.pr_rerun_command.clone(),
            edit_command: self.pr_edit_command.clone(),
            rounds: int_in(self.pr_rounds, "land.pr_rounds", 0, 20)?,
        })
    }

    /// Pull requests, checked: a branch per task, a command opening one with placeholders
    /// breeze fills in.
    fn pull_requests(&self) -> Result<(), BadValue> {
        if !self.pr_branch.contains("{task}") {
            return Err(BadValue::PrBranchWithoutTask { branch: self.pr_branch.clone() });
        }
        if self.pr_command.first().is_none_or(|program| program.trim().is_empty()) {
            return Err(BadValue::NoPrCommand);
        }
        match unknown_placeholder(&self.pr_command, PR_PLACEHOLDERS) {
            Some(placeholder) => Err(BadValue::UnknownPlaceholder { placeholder }),
            None => Ok(()),
        }
    }
}

/// The first placeholder — `{` a lowercase word `}` — in `argv` that is not one of `known`.
/// Other braces (a `jq` filter's `{name, state}`) are not placeholders.
fn unknown_placeholder(argv: &[String], known: &[&str]) -> Option<String> {
    for arg in argv {
        let mut rest = arg.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            let placeholder = &rest[open..open + close + 1];
            let word = &placeholder[1..placeholder.len() - 1];
            let is_placeholder =
                !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if is_placeholder && !known.contains(&placeholder) {
                return Some(placeholder.into());
            }
            rest = &rest[open + 1..];
        }
    }
    None
}

/// With landings going to a remote, no role may be handed what reaches it: the ssh agent,
/// askpass programs, git's credential and transport settings, forge tokens. A role's `env`
/// naming one is refused (wildcards never pass them: [`breeze_supervise::scrubbed_env`]).
fn no_remote_access_for_roles(roles: &RawRoles, land: &LandConfig) -> Result<(), BadValue> {
    if !land.is_remote() {
        return Ok(());
    }
    for (name, role) in [
        ("worker", &roles.worker),
        ("advisor", &roles.advisor),
        ("reviewer", &roles.reviewer),
        ("scaffolder", &roles.scaffolder),
    ] {
        // A fallback's variables reach the role's processes as much as its own.
        for (key, names) in [("env", &role.env), ("fallback.env", &role.fallback.env)] {
            if let Some(var) = names.iter().find(|var| breeze_supervise::is_remote_access_var(var))
            {
                return Err(BadValue::RemoteAccessForRole {
                    role: name,
                    key,
                    var: var.clone(),
                    to: land.to.as_str(),
                });
            }
        }
    }
    Ok(())
}

impl RawConfig {
    pub(super) fn validate(self) -> Result<Config, BadValue> {
        let land = self.land.target()?;
        if self.land.batch > 1 && land.is_remote() {
            return Err(BadValue::BatchToRemote { batch: self.land.batch, to: land.to.as_str() });
        }
        no_remote_access_for_roles(&self.roles, &land)?;
        let roles = self.roles;
        let queue_depth = int_in(
            self.land.queue_depth,
            "land.queue_depth",
            1,
            breeze_git::MAX_INTEGRATION_CHECKOUTS as i64,
        )?;
        let (port_base, ports_per_lane) = self.run.port_range(queue_depth)?;
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
            land_queue_depth: queue_depth,
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
            sandbox_read: self.sandbox.read,
            network: self.sandbox.network.validate()?,
            command_env: self.sandbox.env,
            notify_command: self.notify.command,
            independent: self.review.independent,
            budget: self.budget.validate()?,
            pause_at: pause_at(self.quota.pause_at)?,
        })
    }
}

impl RawBudget {
    fn validate(self) -> Result<BudgetConfig, BadValue> {
        let dollars = |usd: f64, key: &'static str| match usd {
            0.0 => Ok(None),
            usd if usd.is_finite() && usd > 0.0 => Ok(Some(usd)),
            usd => Err(BadValue::DollarCap { key, usd }),
        };
        let run_tokens = match self.run_tokens {
            0 => None,
            tokens if tokens > 0 => Some(tokens as u64),
            tokens => return Err(BadValue::TokenCap { tokens }),
        };
        for (model, price) in &self.prices {
            for (field, value) in [
                ("input", price.input),
                ("cached_input", price.cached_input),
                ("output", price.output),
            ] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(BadValue::Price { model: model.clone(), field, value });
                }
            }
        }
        Ok(BudgetConfig {
            caps: breeze_protocol::BudgetCaps {
                run_usd: dollars(self.run_usd, "run_usd")?,
                task_usd: dollars(self.task_usd, "task_usd")?,
                run_tokens,
            },
            session_usd: dollars(self.session_usd, "session_usd")?,
            prices: self.prices,
        })
    }
}

impl RawRun {
    /// `port_base` and `ports_per_lane`, checked: every range — the integration checkout's,
    /// each possible lane's and those of the `queue_depth - 1` further integration checkouts
    /// (`lane_env`) — lies within the unprivileged ports.
    fn port_range(&self, queue_depth: u32) -> Result<(u16, u16), BadValue> {
        let per_lane = int_in(self.ports_per_lane, "run.ports_per_lane", 1, 1000)?;
        let ports = i64::from(MAX_LANES + queue_depth) * i64::from(per_lane);
        let top = 65_536 - ports;
        let base = int_in(self.port_base, "run.port_base", 1024, top)
            .map_err(|_| BadValue::PortsDoNotFit { base: self.port_base, max: top, ports })?;
        // Both bounded by 65535 above.
        Ok((base as u16, per_lane as u16))
    }
}

impl RawRole {
    fn validate(self, name: &str) -> Result<RoleConfig, BadValue> {
        let key = |field: &str| format!("roles.{name}.{field}");
        let runs_a_program = matches!(self.backend.describe().runs, Runs::Program);
        if runs_a_program && self.command.is_empty() {
            return Err(BadValue::NoCommand { role: name.into(), backend: self.backend.as_str() });
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
            fallback: self.fallback.validate(name, self.backend)?,
        })
    }
}

impl RawFallback {
    /// The fallback, checked: an agent CLI or the simulator, not the role's own backend.
    fn validate(self, role: &str, own: BackendKind) -> Result<Option<Fallback>, BadValue> {
        if self.backend.trim().is_empty() {
            return Ok(None);
        }
        let backend = BackendKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == self.backend.trim())
            .filter(|kind| *kind != own && !matches!(kind.describe().runs, Runs::Program))
            .ok_or_else(|| BadValue::Fallback {
                role: role.into(),
                backend: self.backend.clone(),
                own: own.as_str(),
            })?;
        Ok(Some(Fallback {
            backend,
            model: self.model,
            args: self.args,
            env: self.env,
            pass_credentials: self.pass_credentials,
        }))
    }
}

/// `quota.pause_at`: a share of a window, above 0 and at most 1.
fn pause_at(share: f64) -> Result<f64, BadValue> {
    if share.is_finite() && share > 0.0 && share <= 1.0 {
        Ok(share)
    } else {
        Err(BadValue::PauseAt { share })
    }
}

/// The review checks: each a non-empty argv.
fn checks(checks: Vec<Vec<String>>) -> Result<Vec<Vec<String>>, BadValue> {
    match checks
        .iter()
        .position(|argv| argv.first().is_none_or(|program| program.trim().is_empty()))
    {
        Some(index) => Err(BadValue::EmptyCheck { index }),
        None => Ok(checks),
    }
}

/// Repository-relative patterns only: no absolute path, no `..` component.
fn inside_repository(patterns: Vec<String>, key: &str) -> Result<Vec<String>, BadValue> {
    for pattern in &patterns {
        let escapes = pattern.starts_with('/')
            || pattern.starts_with('~')
            || pattern.split(['/', '\\']).any(|part| part == "..");
        if escapes {
            return Err(BadValue::OutsideRepository { key: key.into(), pattern: pattern.clone() });
        }
    }
    Ok(patterns)
}

/// `[worktree] root`: empty for breeze's data folder, else an absolute folder or one under
/// `~/` (expanded with `home`); a relative one is refused (relative to what?).
pub(super) fn worktree_root(
    text: &str,
    home: Option<std::ffi::OsString>,
) -> Result<Option<PathBuf>, BadValue> {
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
        (Some(_), None) => return Err(BadValue::WorktreeRootWithoutHome { text: text.into() }),
        (None, _) => PathBuf::from(text),
    };
    if !path.is_absolute() {
        return Err(BadValue::WorktreeRootRelative { text: text.into() });
    }
    Ok(Some(path))
}

/// The largest `land.batch`: a failing batch of 16 is bisected in at most 5 verify runs.
const MAX_LAND_BATCH: i64 = 16;

fn int_in(value: i64, key: &str, min: i64, max: i64) -> Result<u32, BadValue> {
    if value < min || value > max {
        return Err(BadValue::OutOfRange { key: key.into(), value, min, max });
    }
    // Bounded by `max` above, which callers keep within u32.
    Ok(value as u32)
}

fn duration(text: &str, key: &str) -> Result<Duration, BadValue> {
    parse_duration(text).map_err(|error| BadValue::Duration { key: key.into(), error })
}

fn size(text: &str, key: &str) -> Result<u64, BadValue> {
    parse_size(text).map_err(|error| BadValue::Size { key: key.into(), error })
}
