//! `breeze-status.v1`: what `breeze status --json` prints for a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cause::Cause;
use crate::version::BreezeStatusV1;

/// State of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// The engine is working on it (or was killed; `breeze resume` tells).
    Running,
    /// Every task landed.
    Succeeded,
    /// The run finished with escalated, blocked or failed tasks.
    Failed,
    /// Stopped before the end; `breeze resume` continues it.
    Interrupted,
    /// Stopped while every unfinished task waits for a person or a forge (an approval, a
    /// pull request's merge, a clean checkout to land in): nothing is interrupted; once
    /// they are decided `breeze resume` goes on (`breeze run --wait` waits with them
    /// instead of stopping). The status's `waiting` says what for.
    Waiting,
    /// Given up with `breeze abort`.
    Aborted,
}

impl RunState {
    /// Whether the run can still make progress (`running`, `interrupted` or `waiting`).
    pub fn is_resumable(self) -> bool {
        matches!(self, Self::Running | Self::Interrupted | Self::Waiting)
    }
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Waiting => "waiting",
            Self::Aborted => "aborted",
        }
    }
}

/// State of one task. A finished run leaves every task `landed`, `escalated`,
/// `blocked` or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Waiting for dependencies, a lane or a conflicting task.
    Pending,
    /// A worker attempt is running (or the Advisor is being consulted).
    Running,
    /// Gates and reviewer are looking at the change.
    Reviewing,
    /// Approved, waiting for or in the serial landing step.
    Landing,
    /// Approved, but landing waits for the user's checkout (a touched path is dirty).
    Deferred,
    /// Approved by the reviewer; `[land] require_approval` makes it wait for
    /// `breeze approve` (or `breeze reject`).
    #[serde(rename = "awaiting-approval")]
    AwaitingApproval,
    /// Approved and pushed as a pull request (`[land] to = "pull-request"`): it lands when
    /// its change reaches the target branch (a person or a merge queue merges it).
    #[serde(rename = "pr-open")]
    PrOpen,
    /// Its work had started (a worker, a review or a landing under way) when the run
    /// stopped — Ctrl-C, a stop on an error, or an engine that was killed; `breeze resume`
    /// takes it up again where it was, with the work its lane held committed on its branch.
    Interrupted,
    /// On `main` (with `[land] to = "remote"` or `"pull-request"`: on the remote's branch).
    Landed,
    /// Gave up: review rounds, gate failures, attempts, stalls or an Advisor `STOP`.
    Escalated,
    /// A dependency did not land.
    Blocked,
    /// An error outside the task's control (git, configuration, I/O), or a person gave the
    /// run up while the task was unfinished (`breeze abort`: no resume takes it up).
    Failed,
}

impl TaskState {
    /// Whether the task is done for this run.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Landed | Self::Escalated | Self::Blocked | Self::Failed)
    }
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Reviewing => "reviewing",
            Self::Landing => "landing",
            Self::Deferred => "deferred",
            Self::AwaitingApproval => "awaiting-approval",
            Self::PrOpen => "pr-open",
            Self::Interrupted => "interrupted",
            Self::Landed => "landed",
            Self::Escalated => "escalated",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
        }
    }
}

/// Cost and tokens, summed over role calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// US dollars: what the backends reported (claude), or breeze's estimate from its price
    /// table (`[budget.prices]`, codex); `null` when no call's cost is known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens served from cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Role calls in this sum whose cost is unknown: their backend reported none (`command`,
    /// the simulator without a `[task.sim] cost_usd`) and no price applied — `cost_usd`
    /// leaves them out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_calls: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another usage record to this one.
    pub fn add(&mut self, other: &Usage) {
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.unpriced_calls += other.unpriced_calls;
    }
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
    /// Input and output tokens: what `[budget] run_tokens` counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
    /// Whether a backend reported a cost or tokens (calls that reported nothing do not
    /// count).
    pub fn reported(&self) -> bool {
        self.cost_usd.is_some() || self.tokens() > 0
    }
}

/// Where one usage window of a backend stood when it last reported it: claude's five-hour
/// and weekly limits (`rate_limit_event`), codex's primary and secondary windows (its
/// `token_count` rate limits). breeze starts no new role call on a backend while one of its
/// windows is used beyond `[quota] pause_at`, until the window resets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageWindow {
    /// The backend that reported it (`claude`, `codex`).
    pub backend: String,
    /// Which window: claude's `five_hour`, `seven_day`, …; codex's `primary`, `secondary`.
    pub window: String,
    /// The share of the window used, 0.0 to 1.0.
    pub used: f64,
    /// When the window resets (unix seconds), if the backend said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<u64>,
    /// The window's length in minutes, if the backend said (codex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes: Option<u64>,
}

impl UsageWindow {
    /// The window as one line a person reads, its reset in UTC:
    /// `claude five_hour 95% used, resets 2026-12-06 12:40:00 UTC`.
    pub fn line(&self) -> String {
        let used = format!("{} {} {:.0}% used", self.backend, self.window, self.used * 100.0);
        match self.resets_at {
            Some(at) => format!("{used}, resets {} {} UTC", date_of(at), clock_of(at)),
            None => used,
        }
    }
}

/// `HH:MM:SS` UTC of a unix time.
pub fn clock_of(unix: u64) -> String {
    let day = unix % 86_400;
    format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60)
}

/// `YYYY-MM-DD` (UTC) of a unix time.
pub fn date_of(unix: u64) -> String {
    // Days to the civil date (H. Hinnant's algorithm), in the era of 400 years.
    let days = (unix / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let of_era = days.rem_euclid(146_097);
    let year_of_era = (of_era - of_era / 1460 + of_era / 36_524 - of_era / 146_096) / 365;
    let of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * of_year + 2) / 153;
    let day = of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The caps of a run's budget (`[budget]`, raised by `breeze resume --budget-usd` /
/// `--budget-tokens`); `null` is no cap. What is spent is the status's `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetCaps {
    /// US dollars for the whole run: reached, no new role call starts and the run stops
    /// resumably.
    #[serde(default)]
    pub run_usd: Option<f64>,
    /// US dollars per task: reached, the task escalates.
    #[serde(default)]
    pub task_usd: Option<f64>,
    /// Input + output tokens for the whole run: reached, the run stops resumably.
    #[serde(default)]
    pub run_tokens: Option<u64>,
}

impl BudgetCaps {
    /// Whether any cap is set.
    pub fn any(&self) -> bool {
        self.run_usd.is_some() || self.task_usd.is_some() || self.run_tokens.is_some()
    }
}

/// One task in a status report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStatus {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Current state.
    pub state: TaskState,
    /// Worker attempts so far.
    pub attempts: u32,
    /// Reviewer verdicts so far (gate and check failures are counted apart, in
    /// `gate_failures`).
    pub rounds: u32,
    /// Times a gate or a `[review] checks` command sent the work back to the worker.
    #[serde(default)]
    pub gate_failures: u32,
    /// Successful Advisor consults.
    pub advisor_consults: u32,
    /// The landing commit on main, once landed.
    pub commit: Option<String>,
    /// Why the task is escalated, blocked, failed, deferred or awaiting approval — or, while
    /// it works again, why it was sent back: the cause as one line.
    pub reason: Option<String>,
    /// The same cause, structured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// Write group (connected component of the conflict graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    /// Cost and tokens of this task's role processes.
    #[serde(default)]
    pub usage: Usage,
    /// The review that approved it, as its landing's `Breeze-Review` trailer says
    /// (`APPROVE (round 2)`; a reviewer's REQUEST_CHANGES with minor gaps only that breeze
    /// normalized says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
    /// Paths the Lead added to the task's write set during the run (scope requests).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub granted_writes: Vec<String>,
    /// The branch the task works on, once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Branches holding earlier work of the task, set aside by `breeze retry --fresh`
    /// (kept until `breeze clean --force`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_branches: Vec<String>,
    /// The task's pull request (`[land] to = "pull-request"`), once its branch was pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequestStatus>,
}

/// A task's pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PullRequestStatus {
    /// Its address: the first URL the `land.pr_command` printed (`null` when it printed
    /// none).
    pub url: Option<String>,
    /// The branch breeze pushed (`breeze/3`).
    pub branch: String,
    /// The branch it merges into, as `<remote>/<branch>` (`origin/main`; another task's
    /// branch when stacked).
    pub target: String,
    /// The commit breeze pushed last.
    pub commit: String,
    /// Whether its change has reached the target branch (then the task is `landed`, its
    /// `commit` the one that brought it).
    pub merged: bool,
    /// What its checks said the last time breeze looked (`null` before it looked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::forge::PrChecks>,
    /// What its reviews said the last time breeze looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::forge::PrReview>,
    /// Follow-up rounds: how many times its failed checks or review comments went back
    /// to the worker (at most `land.pr_rounds`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub follow_ups: u32,
}

/// `breeze-status.v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreezeStatus {
    /// Always `breeze-status.v1`.
    pub schema_version: BreezeStatusV1,
    /// Run id (uuid v7).
    pub run_id: String,
    /// Run state.
    pub state: RunState,
    /// Lanes: `min(max_workers, write groups)`.
    pub workers: u32,
    /// Plan file the run reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The branch the run lands on: the one the checkout was on when it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lands_on: Option<String>,
    /// RFC 3339 UTC start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// RFC 3339 UTC time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Tasks in plan order.
    pub tasks: Vec<TaskStatus>,
    /// Cost and tokens of the whole run.
    #[serde(default)]
    pub usage: Usage,
    /// The caps `usage` is held to, when the run has any (`[budget]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetCaps>,
    /// How the run's role processes are confined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<ContainmentStatus>,
    /// What the run waits for, when nothing it can do itself is left (each with the tasks
    /// still waiting and since when): while a `--wait` run waits, and after a run stopped
    /// `waiting`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<RunWait>,
    /// Each backend's usage windows as last reported (subscriptions report them; API keys
    /// do not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<UsageWindow>,
}

/// What a run waits for: a person or a forge.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum WaitingFor {
    /// A person's `breeze approve` or `breeze reject` of reviewed work
    /// (`land.require_approval`).
    Approval,
    /// The team to merge the tasks' pull requests (`[land] to = "pull-request"`).
    PullRequests,
    /// The user's checkout to be clean where an approved task lands (a deferred landing,
    /// tried again now and then).
    Checkout,
}

impl WaitingFor {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::PullRequests => "pull-requests",
            Self::Checkout => "checkout",
        }
    }
}

/// One thing a run waits for: what, for which tasks, since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunWait {
    /// What for.
    pub waiting_for: WaitingFor,
    /// The tasks that wait for it, in plan order.
    pub tasks: Vec<String>,
    /// When the run began waiting for it (RFC 3339 UTC): the longest-waiting of these
    /// tasks' wait.
    pub since: String,
}

impl RunWait {
    /// The wait as one line a person reads, its time as `HH:MM:SS` UTC: `waiting for
    /// approval of 2, 4 since 12:03:10`.
    pub fn line(&self) -> String {
        let tasks = self.tasks.join(", ");
        let what = match self.waiting_for {
            WaitingFor::Approval => format!("approval of {tasks}"),
            WaitingFor::PullRequests => format!("the pull requests of {tasks} to merge"),
            WaitingFor::Checkout => format!("a clean checkout to land {tasks}"),
        };
        // `2026-11-30T12:03:10.123Z` → `12:03:10`.
        let clock = self.since.get(11..19).unwrap_or(&self.since);
        format!("waiting for {what} since {clock}")
    }
}

/// How role processes are kept in their lanes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContainmentStatus {
    /// The kernel confines them (Landlock); otherwise breeze only detects escapes.
    pub kernel: bool,
    /// The mechanism, why (not), and what workers may write besides their lane.
    pub summary: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_says_its_share_and_its_reset_with_the_date() {
        let window = UsageWindow {
            backend: "claude".into(),
            window: "seven_day".into(),
            used: 0.954,
            // 2026-12-13T10:41:19Z
            resets_at: Some(1_797_158_479),
            minutes: None,
        };
        assert_eq!(window.line(), "claude seven_day 95% used, resets 2026-12-13 10:41:19 UTC");
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
    }
}
