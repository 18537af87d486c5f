//! The built-in `scripted` backend: a deterministic simulated team, so the demo and the
//! tests run without any AI CLI.
//!
//! It reads the same structured inputs a real role gets and answers with the same
//! messages. Each task can steer it with a `[task.sim]` table in plan.toml:
//!
//! | key | effect |
//! |---|---|
//! | `fail_attempts = N` | the first N worker attempts exit 1 with `fail_message` |
//! | `fail_message = "..."` | failure text (the same text twice triggers a retry-threshold consult) |
//! | `stall_attempts = N` | the first N worker attempts hang silently (stall detection ends them) |
//! | `request_changes = N` | the reviewer requests changes in the first N rounds |
//! | `ask_advisor = true` | the first worker attempt without guidance returns `needs-advice` |
//! | `advisor_decision = "PLAN"` | the advisor's decision: `PLAN`, `CORRECTION` or `STOP` |
//! | `garbage = ["reviewer"]` | these roles print prose without JSON on their first call |
//! | `write_outside = "path"` | the first worker attempt also writes this new file (a fix round removes it) |
//! | `write_outside_attempts = N` | the first N completed attempts write (and keep) `write_outside`; later ones remove it (default 1) |
//! | `escalate = true` | the worker gives up (`status: escalated`) |
//! | `delay_ms = N` | each worker attempt takes N milliseconds |
//! | `lesson = "..."` | the first REQUEST_CHANGES carries this universal memory update |
//! | `rate_limited_calls = N` | the worker's first N calls hit a rate limit (the backend's trouble) |
//! | `transient_calls = N` | the worker's next N calls fail with a passing API error (HTTP 503) |
//! | `auth_error = true` | the worker's backend is not logged in |
//! | `needs_scope = ["path"]` | the first completed attempt asks to write these paths too (`needs-scope`); once granted, it writes them |
//! | `unverified_self_review = N` | the N attempts after the failing and stalling ones report a self-review entry that is not verified |
//! | `changelog = "..."` | the completed report carries this line for the project's changelog |
//! | `cost_usd = 0.5` | every role call of the task reports this cost (without it: unknown, as a `command` role's) |
//! | `input_tokens = N`, `output_tokens = N` | every role call of the task reports these tokens |
//! | `window_used = 0.95` | every role call of the task reports the backend's `five_hour` usage window at this share (1.0: spent, every call is refused)… |
//! | `window_reset_s = N` | …until N seconds after it first did (then at 1 %); default 2 |
//!
//! `ScriptedBackend` runs the simulator for the engine, under the same clocks a process
//! gets (stall and wall-clock timeouts); it owns the per-task settings and counts the calls.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_protocol::{
    AdvisorRequest, Decision, DraftTask, ReviewInput, Role, ScaffoldInput, ScaffoldMode,
    WorkerInput, validate,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::call::{RoleEnding, RoleOutcome, RoleReply};
use super::invocation::{Backend, BackendFuture, Invocation};
use crate::plan_extensions::SIM_TABLE;

/// The simulated team of a run.
pub(crate) struct ScriptedBackend {
    /// `[task.sim]` of each task.
    sims: BTreeMap<String, SimSpec>,
    /// Each task's write set: the simulated worker writes inside it.
    write_sets: Arc<BTreeMap<String, breeze_agents::WriteSetCheck>>,
    /// Calls per (task, role) so far, for the "first call" behaviours.
    calls: Mutex<BTreeMap<(String, Role), u32>>,
    /// When each task's simulated usage window resets (unix seconds), once reported.
    window_resets: Mutex<BTreeMap<String, u64>>,
}

impl Backend for ScriptedBackend {
    fn run<'a>(
        &'a self,
        run: &'a Invocation<'a>,
        cancel: &'a CancellationToken,
    ) -> BackendFuture<'a> {
        Box::pin(self.play_call(run, cancel))
    }
}

impl ScriptedBackend {
    pub fn new(
        sims: BTreeMap<String, SimSpec>,
        write_sets: Arc<BTreeMap<String, breeze_agents::WriteSetCheck>>,
    ) -> ScriptedBackend {
        ScriptedBackend {
            sims,
            write_sets,
            calls: Mutex::new(BTreeMap::new()),
            window_resets: Mutex::new(BTreeMap::new()),
        }
    }

    /// The usage window a call of `task` reports (`[task.sim] window_used`): at its share
    /// until its reset, a few seconds after the task's first call; at 1 % after.
    fn window(&self, task: &str, sim: &SimSpec) -> Vec<breeze_protocol::UsageWindow> {
        let Some(used) = sim.window_used else { return Vec::new() };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let mut resets = self.window_resets.lock().unwrap_or_else(|p| p.into_inner());
        let after = if sim.window_reset_s == 0 { 2 } else { sim.window_reset_s };
        let resets_at = *resets.entry(task.to_string()).or_insert(now + after);
        let (used, resets_at) =
            if now < resets_at { (used, resets_at) } else { (0.01, now + 5 * 3600) };
        vec![breeze_protocol::UsageWindow {
            backend: "scripted".into(),
            window: "five_hour".into(),
            used,
            resets_at: Some(resets_at),
            minutes: Some(300),
        }]
    }

    /// The 1-based number of this call of `role` for `task`.
    fn count_call(&self, task: &str, role: Role) -> u32 {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let count = calls.entry((task.to_string(), role)).or_default();
        *count += 1;
        *count
    }

    async fn play_call(&self, run: &Invocation<'_>, cancel: &CancellationToken) -> RoleReply {
        let (call, settings) = (run.call, &run.settings);
        let log_path = run.log_path.clone();
        let sim = self.sims.get(&call.task_id).cloned().unwrap_or_default();
        let call_number = self.count_call(&call.task_id, call.role);
        let windows = self.window(&call.task_id, &sim);
        // A spent window refuses every call until it resets, as a vendor's does.
        let spent = windows.iter().any(|window| window.used >= 1.0).then(|| {
            super::backoff::Trouble::Limited {
                retry_after: None,
                message: "scripted backend: 429 usage limit reached for the five_hour window"
                    .into(),
            }
        });
        if let Some(trouble) = spent.or_else(|| sim.trouble(call.role, call_number)) {
            write_logs(&log_path, "", &format!("{}\n", trouble.message()));
            return RoleReply {
                diagnostics: trouble.message().to_string(),
                windows,
                ..RoleReply::of(RoleOutcome::Trouble(trouble), log_path)
            };
        }
        let matcher = self.write_sets.get(&call.task_id).cloned();
        let in_write_set = move |path: &str| matcher.as_ref().is_none_or(|matches| matches(path));
        let first_call = call_number == 1;
        let played = tokio::select! {
            reply = play(call.role, &call.input, &call.cwd, &sim, first_call, &in_write_set) => reply,
            () = cancel.cancelled() => return RoleReply::of(RoleOutcome::Cancelled, log_path),
        };
        let (outcome, stdout, stderr) = match played {
            ScriptedReply::Exited { exit_code: 0, stdout, stderr } => {
                let outcome = match breeze_supervise::last_json_object(stdout.as_bytes()) {
                    Some(value) => RoleOutcome::Answered(value),
                    None => RoleOutcome::NoAnswer("no JSON object on stdout".into()),
                };
                (outcome, stdout, stderr)
            }
            ScriptedReply::Exited { exit_code, stdout, stderr } => {
                (RoleOutcome::Ended(RoleEnding::Exited(exit_code)), stdout, stderr)
            }
            ScriptedReply::Hang => (hang(settings, cancel).await, String::new(), String::new()),
        };
        write_logs(&log_path, &stdout, &stderr);
        if let RoleOutcome::Answered(value) = &outcome {
            super::invocation::keep_for_the_record(&run.record_path, value);
        }
        RoleReply {
            diagnostics: super::invocation::diagnostics(&stderr, &stdout),
            usage: sim.usage(),
            windows,
            ..RoleReply::of(outcome, log_path)
        }
    }
}

/// A simulated hang ends the way a silent process does: when the stall timeout (or the
/// wall-clock timeout, if shorter) runs out — or when breeze stops. Only hangs wait: the
/// simulator's answers are instant, so no clock can cut them off on a slow machine.
async fn hang(settings: &crate::config::RoleConfig, cancel: &CancellationToken) -> RoleOutcome {
    let (limit, ending) = if settings.stall_timeout <= settings.timeout {
        (settings.stall_timeout, RoleEnding::Stalled)
    } else {
        (settings.timeout, RoleEnding::TimedOut)
    };
    tokio::select! {
        () = tokio::time::sleep(limit) => RoleOutcome::Ended(ending),
        () = cancel.cancelled() => RoleOutcome::Cancelled,
    }
}

/// Writes the simulated output to the log files, as a process's would be.
fn write_logs(log_path: &Path, stdout: &str, stderr: &str) {
    let (stdout_log, stderr_log) = breeze_supervise::stream_log_paths(log_path);
    let _ = std::fs::write(stdout_log, stdout);
    let _ = std::fs::write(stderr_log, stderr);
}

/// Every task's `[task.sim]` table, read up front so that a typo is a plan error (exit 2)
/// before anything runs.
pub(crate) fn sims_of(
    plan: &breeze_plan::Plan,
) -> Result<BTreeMap<String, SimSpec>, crate::error::EngineError> {
    let mut sims = BTreeMap::new();
    for task in &plan.tasks {
        let table = plan.extension(&task.id, SIM_TABLE);
        let spec = SimSpec::from_json(table).map_err(|message| {
            crate::error::EngineError::usage(
                format!("{}:{}: task {}: invalid [task.sim]: {message}", plan.path.display(), task.line, task.id),
                "the sim keys are listed in the scripted backend's documentation (README, \"The scripted backend\")",
            )
        })?;
        sims.insert(task.id.to_string(), spec);
    }
    Ok(sims)
}

/// Per-task steering of the simulator (`[task.sim]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimSpec {
    /// Worker attempts that fail first.
    pub fail_attempts: u32,
    /// Failure text.
    pub fail_message: Option<String>,
    /// Worker attempts that stall first.
    pub stall_attempts: u32,
    /// Review rounds that request changes first.
    pub request_changes: u32,
    /// The worker asks the advisor before working.
    pub ask_advisor: bool,
    /// The advisor's decision.
    pub advisor_decision: Option<String>,
    /// Roles that print garbage on their first call.
    pub garbage: Vec<String>,
    /// A path the first attempt writes outside the write set.
    pub write_outside: Option<String>,
    /// How many attempts write (and keep) `write_outside` before one removes it (0: 1).
    pub write_outside_attempts: u32,
    /// The worker escalates.
    pub escalate: bool,
    /// Milliseconds each worker attempt takes.
    pub delay_ms: u64,
    /// A universal lesson carried by the first REQUEST_CHANGES.
    pub lesson: Option<String>,
    /// The worker's first calls hit a rate limit (the backend's trouble, not the task's).
    pub rate_limited_calls: u32,
    /// The worker's first calls (after those) fail with a passing API error (HTTP 503).
    pub transient_calls: u32,
    /// The worker's backend is not logged in.
    pub auth_error: bool,
    /// Paths the worker asks to write too, before it completes.
    pub needs_scope: Vec<String>,
    /// Completed reports whose self-review does not hold, first.
    pub unverified_self_review: u32,
    /// The completed report's changelog line.
    pub changelog: Option<String>,
    /// What each role call of the task costs (US dollars).
    pub cost_usd: Option<f64>,
    /// Input tokens each role call of the task reports.
    pub input_tokens: u64,
    /// Output tokens each role call of the task reports.
    pub output_tokens: u64,
    /// The share of the backend's usage window each call of the task reports.
    pub window_used: Option<f64>,
    /// Seconds from the first report to the window's reset (0: 2).
    pub window_reset_s: u64,
}

/// Why a `[task.sim]` table is refused.
#[derive(Debug, thiserror::Error)]
pub enum SimRefused {
    /// An unknown key, or a value of the wrong type.
    #[error("{0}")]
    Table(#[from] serde_json::Error),
    /// An advisor decision the Advisor cannot make.
    #[error("advisor_decision must be PLAN, CORRECTION or STOP, found {0:?}")]
    AdvisorDecision(String),
    /// A cost below zero, or no number.
    #[error("cost_usd must be a dollar amount of 0 or more, found {0}")]
    Cost(f64),
    /// A role that cannot print garbage.
    #[error("garbage lists unknown role {0:?}; use worker, advisor or reviewer")]
    GarbageRole(String),
}

impl SimSpec {
    /// Reads a `[task.sim]` table; unknown keys are an error naming the key.
    pub fn from_json(value: Option<&Value>) -> Result<SimSpec, SimRefused> {
        let Some(value) = value else { return Ok(SimSpec::default()) };
        let spec: SimSpec = serde_json::from_value(value.clone())?;
        if let Some(decision) = &spec.advisor_decision
            && !matches!(decision.as_str(), "PLAN" | "CORRECTION" | "STOP")
        {
            return Err(SimRefused::AdvisorDecision(decision.clone()));
        }
        if let Some(cost) = spec.cost_usd
            && !(cost.is_finite() && cost >= 0.0)
        {
            return Err(SimRefused::Cost(cost));
        }
        if let Some(role) = spec
            .garbage
            .iter()
            .find(|role| !matches!(role.as_str(), "worker" | "advisor" | "reviewer"))
        {
            return Err(SimRefused::GarbageRole(role.clone()));
        }
        Ok(spec)
    }

    /// What one role call reports having spent.
    fn usage(&self) -> breeze_protocol::Usage {
        breeze_protocol::Usage {
            cost_usd: self.cost_usd,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..Default::default()
        }
    }

    fn garbage_for(&self, role: Role) -> bool {
        self.garbage.iter().any(|name| name == role.as_str())
    }

    /// The backend trouble of call number `call` (1-based) of `role`, if any.
    pub fn trouble(&self, role: Role, call: u32) -> Option<super::backoff::Trouble> {
        use super::backoff::Trouble;
        if role != Role::Worker {
            return None;
        }
        if self.auth_error {
            return Some(Trouble::Auth { message: "scripted backend: Not logged in".into() });
        }
        if call <= self.rate_limited_calls {
            return Some(Trouble::Limited {
                retry_after: None,
                message: "scripted backend: 429 Too Many Requests".into(),
            });
        }
        if call <= self.rate_limited_calls + self.transient_calls {
            return Some(Trouble::Transient {
                message: "scripted backend: HTTP 503 Service Unavailable".into(),
            });
        }
        None
    }
}

/// What a simulated role did, shaped like a finished process.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// The role "exited" with `exit_code` after printing `stdout`.
    Exited {
        /// Exit status.
        exit_code: i32,
        /// What it printed.
        stdout: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The role hangs without output (the engine's stall detection ends it).
    Hang,
}

impl ScriptedReply {
    fn json(value: Value) -> ScriptedReply {
        ScriptedReply::Exited { exit_code: 0, stdout: value.to_string(), stderr: String::new() }
    }
    fn failure(message: &str) -> ScriptedReply {
        ScriptedReply::Exited {
            exit_code: 1,
            stdout: String::new(),
            stderr: format!("{message}\n"),
        }
    }
    fn garbage(role: Role) -> ScriptedReply {
        ScriptedReply::Exited {
            exit_code: 0,
            stdout: format!(
                "Sure! As the {role}, I think everything looks great. Let me know if you need anything else."
            ),
            stderr: String::new(),
        }
    }
}

/// Plays `role` once. `first_call` says whether this role has been called for the task
/// before (garbage applies to first calls only). `in_write_set` checks generated paths.
pub async fn play(
    role: Role,
    input: &Value,
    worktree: &Path,
    sim: &SimSpec,
    first_call: bool,
    in_write_set: &(dyn Fn(&str) -> bool + Sync),
) -> ScriptedReply {
    if first_call && sim.garbage_for(role) {
        return ScriptedReply::garbage(role);
    }
    match role {
        Role::Worker => worker(input, worktree, sim, in_write_set).await,
        Role::Reviewer => reviewer(input, sim),
        Role::Advisor => advisor(input, sim),
        Role::Scaffolder => scaffolder(input),
    }
}

async fn worker(
    input: &Value,
    worktree: &Path,
    sim: &SimSpec,
    in_write_set: &(dyn Fn(&str) -> bool + Sync),
) -> ScriptedReply {
    let input: WorkerInput = match validate::parse(input.clone()) {
        Ok(input) => input,
        Err(err) => return ScriptedReply::failure(&format!("scripted worker: bad input: {err}")),
    };
    if sim.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(sim.delay_ms)).await;
    }
    let attempt = input.attempt;
    if attempt <= sim.stall_attempts {
        return ScriptedReply::Hang;
    }
    if attempt <= sim.stall_attempts + sim.fail_attempts {
        let message = sim.fail_message.clone().unwrap_or_else(|| "sim: the build failed".into());
        return ScriptedReply::failure(&message);
    }
    if sim.escalate {
        return ScriptedReply::json(json!({
            "schema_version": "worker-report.v1",
            "status": "escalated",
            "task": input.task.id,
            "summary": "scripted worker gives up",
            "escalation_reason": "sim.escalate is set for this task"
        }));
    }
    if sim.ask_advisor && input.advisor_guidance.is_none() {
        return needs_advice(&input);
    }
    if !sim.needs_scope.is_empty()
        && !sim.needs_scope.iter().all(|path| input.task.writes.contains(path))
        && input.scope_decision.is_none()
    {
        return ScriptedReply::json(json!({
            "schema_version": "worker-report.v1",
            "status": "needs-scope",
            "task": input.task.id,
            "summary": "the change needs files outside the write set",
            "scope_request": {
                "paths": sim.needs_scope,
                "reason": "the new module must be declared where the crate lists its modules"
            }
        }));
    }
    let written = write_the_work(&input, worktree, sim, in_write_set);
    let unverified =
        input.attempt <= sim.stall_attempts + sim.fail_attempts + sim.unverified_self_review;
    ScriptedReply::json(json!({
        "schema_version": "worker-report.v1",
        "status": "completed",
        "task": input.task.id,
        "files_changed": written,
        "summary": format!("scripted worker wrote {} file(s) for {}", written.len(), input.task.title),
        "changelog": sim.changelog,
        "self_review": [
            {"rule": "write-set-respected", "verified": true, "evidence": "files generated from the write set"},
            {"rule": "tests-pass", "verified": !unverified, "evidence": if unverified { "" } else { "scripted: nothing to test" }},
            {"rule": "plans-cc-markers-untouched", "verified": true, "evidence": "Plans.md not written"}
        ]
    }))
}

/// The worker's `needs-advice` answer, with its `advisor-request.v1`.
fn needs_advice(input: &WorkerInput) -> ScriptedReply {
    let task = &input.task;
    let reason = if task.risk.is_empty() { "advisor-required" } else { task.risk[0].as_str() };
    ScriptedReply::json(json!({
        "schema_version": "worker-report.v1",
        "status": "needs-advice",
        "task": task.id,
        "summary": "the approach is unclear",
        "advisor_request": {
            "schema_version": "advisor-request.v1",
            "task_id": task.id,
            "run_id": input.run_id,
            "reason_code": reason,
            "trigger_hash": format!("{}:{reason}:approach-unclear", task.id),
            "question": format!("How should task {} approach: {}?", task.id, task.title),
            "attempt": input.attempt,
            "last_error": "",
            "context_summary": [format!("goal: {}", task.dod), format!("scope: {}", task.writes.join(", "))]
        }
    }))
}

/// Writes one file per write-set entry (resolving conflict markers first, and the stray
/// file `write_outside` asks for on the first completed attempt); the paths written.
fn write_the_work(
    input: &WorkerInput,
    worktree: &Path,
    sim: &SimSpec,
    in_write_set: &(dyn Fn(&str) -> bool + Sync),
) -> Vec<String> {
    let mut written = Vec::new();
    // The attempts that write the stray file (after the failing and stalling ones); a
    // later one takes it out again (write_outside names a file the simulator created, so
    // removing it restores the base).
    let first = 1 + sim.stall_attempts + sim.fail_attempts;
    let writing = first..first + sim.write_outside_attempts.max(1);
    if let Some(outside) = &sim.write_outside
        && input.attempt >= writing.end
    {
        let _ = std::fs::remove_file(worktree.join(outside));
    }
    if let Some(conflict) = &input.conflict {
        for file in &conflict.files {
            if resolve_conflict_markers(&worktree.join(file)).is_ok() {
                written.push(file.clone());
            }
        }
    }
    for entry in &input.task.writes {
        let Some(path) = concrete_path(entry, &input.task.id) else { continue };
        if !in_write_set(&path) || written.contains(&path) {
            continue;
        }
        if write_task_file(worktree, &path, input).is_ok() {
            written.push(path);
        }
    }
    if writing.contains(&input.attempt)
        && let Some(outside) = &sim.write_outside
    {
        let _ = write_task_file(worktree, outside, input);
        written.push(outside.clone());
    }
    written
}

/// The scaffolder: write sets from the paths a task's text names (backticked paths and
/// path-like words); for a goal, one task per line of it.
fn scaffolder(input: &Value) -> ScriptedReply {
    let input: ScaffoldInput = match validate::parse(input.clone()) {
        Ok(input) => input,
        Err(err) => {
            return ScriptedReply::failure(&format!("scripted scaffolder: bad input: {err}"));
        }
    };
    let tasks: Vec<DraftTask> = match input.mode {
        ScaffoldMode::FillWrites => input
            .tasks
            .iter()
            .map(|task| DraftTask {
                writes: paths_named(&format!("{} {}", task.title, task.dod)),
                ..task.clone()
            })
            .collect(),
        ScaffoldMode::Draft => {
            draft_tasks(input.goal.as_deref().unwrap_or_default(), &input.other_tasks)
        }
    };
    ScriptedReply::json(json!({
        "schema_version": "plan-draft.v1",
        "tasks": tasks,
        "notes": "scripted scaffolder: write sets are the paths each task's text names"
    }))
}

/// The paths a text names: backticked spans and words that look like paths (a `/` in
/// them, or a file name with an extension), in order, once each.
pub(crate) fn paths_named(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let backticked = text.split('`').skip(1).step_by(2);
    let words = text.split('`').step_by(2).flat_map(str::split_whitespace);
    for candidate in backticked.chain(words) {
        let path = candidate
            .trim_matches(|c: char| {
                matches!(c, ',' | ';' | ':' | '(' | ')' | '[' | ']' | '"' | '\'' | '!' | '?')
            })
            .trim_end_matches('.')
            .trim_start_matches("./");
        if looks_like_path(path) && !found.iter().any(|p| p == path) {
            found.push(path.to_string());
        }
    }
    found
}

fn looks_like_path(word: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "rs", "toml", "md", "py", "ts", "tsx", "js", "jsx", "go", "java", "kt", "rb", "c", "h",
        "cpp", "hpp", "json", "yaml", "yml", "txt", "sh", "css", "html", "sql", "proto",
    ];
    if word.is_empty()
        || word.contains(char::is_whitespace)
        || word.contains("://")
        || word.starts_with(['-', '/', '~'])
    {
        return false;
    }
    let file = word.rsplit('/').next().unwrap_or(word);
    let has_extension = file
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    (word.contains('/') && word.chars().all(|c| c.is_alphanumeric() || "/._-*".contains(c)))
        || has_extension
}

/// One task per line of the goal (bullets and numbering dropped), numbered after the
/// plan's highest numeric id.
fn draft_tasks(goal: &str, others: &[DraftTask]) -> Vec<DraftTask> {
    let first_id = others.iter().filter_map(|t| t.id.parse::<u64>().ok()).max().unwrap_or(0) + 1;
    goal.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.trim_start_matches(['-', '*', '•']).trim_start())
        .map(|line| {
            line.trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start_matches(['.', ')'])
                .trim()
        })
        .filter(|line| !line.is_empty())
        .enumerate()
        .map(|(n, line)| DraftTask {
            id: (first_id + n as u64).to_string(),
            title: line.replace('`', ""),
            dod: format!("{} — done and tested", line.replace('`', "")),
            writes: paths_named(line),
            depends_on: Vec::new(),
            risk: Vec::new(),
        })
        .collect()
}

fn reviewer(input: &Value, sim: &SimSpec) -> ScriptedReply {
    let input: ReviewInput = match validate::parse(input.clone()) {
        Ok(input) => input,
        Err(err) => return ScriptedReply::failure(&format!("scripted reviewer: bad input: {err}")),
    };
    if input.round <= sim.request_changes {
        let location =
            input.changed_paths.first().map(|path| format!("{path}:1")).unwrap_or_default();
        let lessons: Vec<Value> = match (&sim.lesson, input.round) {
            (Some(lesson), 1) => vec![json!({"text": lesson, "scope": "universal"})],
            _ => Vec::new(),
        };
        return ScriptedReply::json(json!({
            "schema_version": "review-result.v1",
            "verdict": "REQUEST_CHANGES",
            "type": "code",
            "reviewer_profile": "static",
            "checks": [{"id": "dod-primary", "status": "failed", "source": "sprint-contract"}],
            "gaps": [{
                "severity": "major",
                "location": location,
                "issue": format!("round {} of {} scripted change requests", input.round, sim.request_changes),
                "suggestion": "address the finding and commit again"
            }],
            "followups": [],
            "memory_updates": lessons
        }));
    }
    ScriptedReply::json(json!({
        "schema_version": "review-result.v1",
        "verdict": "APPROVE",
        "type": "code",
        "reviewer_profile": "static",
        "checks": [{"id": "dod-primary", "status": "passed", "source": "sprint-contract"}],
        "gaps": [],
        "followups": [],
        "memory_updates": []
    }))
}

fn advisor(input: &Value, sim: &SimSpec) -> ScriptedReply {
    let request: AdvisorRequest = match validate::parse(input.clone()) {
        Ok(request) => request,
        Err(err) => return ScriptedReply::failure(&format!("scripted advisor: bad input: {err}")),
    };
    let decision = match sim.advisor_decision.as_deref() {
        Some("STOP") => Decision::Stop,
        Some("CORRECTION") => Decision::Correction,
        _ => Decision::Plan,
    };
    let stop_reason = (decision == Decision::Stop).then(|| {
        format!("scripted advisor stops task {} (sim.advisor_decision = \"STOP\")", request.task_id)
    });
    ScriptedReply::json(json!({
        "schema_version": "advisor-response.v1",
        "decision": decision.as_str(),
        "summary": format!("{} for task {}: narrow the change before retrying", request.reason_code, request.task_id),
        "executor_instructions": [
            "Re-read the definition of done and list what is still missing",
            "Change one thing at a time and re-run the check after each change"
        ],
        "confidence": 0.7,
        "stop_reason": stop_reason
    }))
}

/// A concrete repository path for a write-set entry: the file itself, a file inside a
/// directory, or a path matching a glob.
pub fn concrete_path(entry: &str, task_id: &str) -> Option<String> {
    let slug: String = task_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let name = format!("task-{}", slug.trim_matches('-'));
    let entry = entry.trim().trim_start_matches("./");
    if entry.is_empty() {
        return None;
    }
    if let Some(dir) = entry.strip_suffix('/') {
        return Some(format!("{dir}/{name}.md"));
    }
    if !entry.contains(['*', '?', '[', '{']) {
        return Some(entry.to_string());
    }
    let mut out = String::new();
    let mut chars = entry.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                } else {
                    out.push_str(&name);
                }
            }
            '*' => out.push_str(&name),
            '?' => out.push('x'),
            '[' => {
                let class: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let pick =
                    class.trim_start_matches(['!', '^']).chars().find(|c| *c != '-').unwrap_or('x');
                out.push(if class.starts_with(['!', '^']) { 'z' } else { pick });
            }
            '{' => {
                let group: String = chars.by_ref().take_while(|&c| c != '}').collect();
                out.push_str(group.split(',').next().unwrap_or(""));
            }
            other => out.push(other),
        }
    }
    if out.ends_with('/') || out.is_empty() {
        out.push_str(&format!("{name}.md"));
    }
    Some(out)
}

fn write_task_file(worktree: &Path, relative: &str, input: &WorkerInput) -> std::io::Result<()> {
    let path = worktree.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let task = &input.task;
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "{} task {}: {} (attempt {}, round {})\n",
        comment_prefix(relative),
        task.id,
        task.title,
        input.attempt,
        input.round
    ));
    if let Some(feedback) = &input.review_feedback {
        for gap in &feedback.gaps {
            text.push_str(&format!("{} addressed: {}\n", comment_prefix(relative), gap.issue));
        }
    }
    std::fs::write(path, text)
}

fn comment_prefix(path: &str) -> &'static str {
    match Path::new(path).extension().and_then(|e| e.to_str()) {
        Some("rs" | "js" | "ts" | "go" | "c" | "h" | "java" | "kt" | "swift") => "//",
        Some("md" | "txt") => "-",
        _ => "#",
    }
}

/// Keeps both sides of every conflict hunk, dropping the markers.
fn resolve_conflict_markers(path: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    let resolved: Vec<&str> = text
        .lines()
        .filter(|line| {
            !(line.starts_with("<<<<<<<")
                || line.starts_with("=======")
                || line.starts_with(">>>>>>>")
                || line.starts_with("|||||||"))
        })
        .collect();
    let mut out = resolved.join("\n");
    out.push('\n');
    std::fs::write(path, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concrete_paths_follow_the_write_set_shapes() {
        assert_eq!(concrete_path("src/a.rs", "1").as_deref(), Some("src/a.rs"));
        assert_eq!(concrete_path("docs/", "2.1").as_deref(), Some("docs/task-2-1.md"));
        assert_eq!(concrete_path("src/**/*.rs", "3").as_deref(), Some("src/task-3.rs"));
        assert_eq!(concrete_path("tests/*_test.go", "4").as_deref(), Some("tests/task-4_test.go"));
        assert_eq!(concrete_path("src/{a,b}.rs", "5").as_deref(), Some("src/a.rs"));
        assert_eq!(concrete_path("src/[ab]?.rs", "6").as_deref(), Some("src/ax.rs"));
        assert_eq!(concrete_path("  ", "7"), None);
    }

    #[test]
    fn unknown_sim_keys_are_named() {
        let err = SimSpec::from_json(Some(&json!({"fail_atempts": 1}))).unwrap_err().to_string();
        assert!(err.contains("fail_atempts"), "{err}");
        let err = SimSpec::from_json(Some(&json!({"advisor_decision": "MAYBE"})));
        let err = err.unwrap_err().to_string();
        assert!(err.contains("PLAN, CORRECTION or STOP"), "{err}");
        assert_eq!(SimSpec::from_json(None).unwrap(), SimSpec::default());
    }

    #[test]
    fn conflict_markers_are_resolved_keeping_both_sides() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\nd\n").unwrap();
        resolve_conflict_markers(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nc\nd\n");
    }
}
