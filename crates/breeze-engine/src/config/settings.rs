//! The validated configuration: [`Config`] and the settings it holds, as the rest of the
//! engine reads them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use breeze_protocol::Role;
use serde::Deserialize;

use crate::backend::BackendKind;

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
    /// Who takes the role's calls while its backend is paused for a usage window.
    pub fallback: Option<Fallback>,
}

/// `[roles.<role>] fallback`: the backend (with its model, arguments, variables) that takes
/// a role's calls while the role's own backend is paused for a usage window.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// Another backend than the role's.
    pub backend: BackendKind,
    /// Its model (empty = the CLI's default).
    pub model: String,
    /// Its extra CLI arguments.
    pub args: Vec<String>,
    /// Extra environment variable names it may see.
    pub env: Vec<String>,
    /// Pass its credential variables through.
    pub pass_credentials: bool,
}

impl RoleConfig {
    /// The role's settings on its fallback (timeouts kept), if it has one.
    pub fn on_fallback(&self) -> Option<RoleConfig> {
        let fallback = self.fallback.as_ref()?;
        Some(RoleConfig {
            backend: fallback.backend,
            command: Vec::new(),
            model: fallback.model.clone(),
            args: fallback.args.clone(),
            env: fallback.env.clone(),
            pass_credentials: fallback.pass_credentials,
            fallback: None,
            ..self.clone()
        })
    }
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
    /// Landings the landing queue verifies side by side, each on the ones before it, each in
    /// an integration checkout of its own (`land.queue_depth`); 1 = one at a time. With
    /// `land.batch` above 1, batches land one at a time instead (docs/DECISIONS.md).
    pub land_queue_depth: u32,
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
    /// More paths in the person's home roles and project commands may read
    /// (`sandbox.read`, `~/` allowed).
    pub sandbox_read: Vec<String>,
    /// Where roles and project commands may connect (`sandbox.network`).
    pub network: NetworkPolicy,
    /// Variables the project's commands get besides the allow-list (`sandbox.env`; a
    /// trailing `*` is a prefix).
    pub command_env: Vec<String>,
    /// Run on escalation, deferral, awaiting approval and the run's end, with the event as
    /// JSON on stdin (`notify.command`; empty = none).
    pub notify_command: Vec<String>,
    /// Whether the reviewer and the Advisor must run on another backend or model than the
    /// worker (`review.independent`).
    pub independent: Independence,
    /// Caps on what a run spends, and the prices of models whose CLI reports tokens only.
    pub budget: BudgetConfig,
    /// `quota.pause_at`: the share of a usage window beyond which no new role call starts on
    /// the backend that reported it, until the window resets.
    pub pause_at: f64,
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
    /// `session_usd`: US dollars per role call, the call's own cap (claude's
    /// `--max-budget-usd`).
    pub session_usd: Option<f64>,
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

/// The placeholders the commands following pull requests may use (`land.pr_checks_command`,
/// `pr_reviews_command`, `pr_main_checks_command`, `pr_rerun_command`, `pr_edit_command`);
/// `{owner}` and `{repo}` are left as they are, for `gh api` to fill in.
pub const FOLLOW_PLACEHOLDERS: &[&str] = &[
    "{branch}",
    "{url}",
    "{number}",
    "{target}",
    "{remote}",
    "{task}",
    "{commit}",
    "{target_commit}",
    "{check}",
    "{link}",
    "{run}",
    "{body_file}",
    "{owner}",
    "{repo}",
];

/// How open pull requests are followed on the forge: the commands that read their checks
/// and reviews, and how many follow-up rounds each gets.
#[derive(Debug, Clone, PartialEq)]
pub struct PrFollowConfig {
    /// argv printing the pull request's checks as JSON (`gh pr checks --json …`); empty =
    /// checks are not followed.
    pub checks_command: Vec<String>,
    /// argv printing its reviews and comments as JSON (`gh pr view --json reviews,comments`);
    /// empty = reviews are not followed.
    pub reviews_command: Vec<String>,
    /// argv printing the checks of the target branch's tip (`{commit}`), in the checks
    /// command's form: a failed check main fails too is main's; empty = not asked.
    pub main_checks_command: Vec<String>,
    /// argv asking the forge to run a failed check again (`{check}`, `{link}`, `{run}`):
    /// one that passes then was flaky; empty = a failed check is charged at once.
    pub rerun_command: Vec<String>,
    /// argv replacing the pull request's description with `{body_file}` after a follow-up
    /// round; empty = the description is left as opened.
    pub edit_command: Vec<String>,
    /// Follow-up rounds a pull request gets before its task is escalated.
    pub rounds: u32,
}

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
    /// How open pull requests' checks and reviews are followed.
    pub pr_follow: PrFollowConfig,
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

/// Where roles and the project's commands may connect (`sandbox.network`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// No network namespace: everything the engine reaches (`"open"`).
    Open,
    /// A network namespace each, its only way out the proxy: these hosts, and for a role
    /// its backend's model API.
    AllowList(Vec<breeze_supervise::HostRule>),
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
}
