//! The preflight: everything that can be checked before a run creates anything — no run
//! folder, lane, branch or lock exists while it runs — so that a missing CLI, program or
//! key fails in a second with what to do, not after lanes were made and a worker ran.
//! `breeze run`, `breeze resume` and `breeze doctor` make the same checks.
//!
//! | check | what | problem when |
//! |---|---|---|
//! | `config` | `breeze.toml` parses, no unknown key | it does not (each unknown key a line) |
//! | `plan` | the plan loads and is not `breeze init`'s untouched template | it is ([`template`]) |
//! | `backend` | the CLI of every role the run uses (`claude`, `codex`, a `command` role's programs) | not found where the role will look |
//! | `login` | claude/codex logged in, from files and variables only (`login.rs`) | certainly not; "not checked" when it cannot be told |
//! | `program` | the programs of `worktree.setup`, `[review] checks`, `land.verify` and, with `[land] to = "pull-request"`, `land.pr_command` (`programs.rs`); the module of a `python -m MODULE` command | not found on the PATH they run with; the module not importable by that python (a warning when `worktree.setup` may install it) |
//! | `remote` | with `[land] to` a remote: it is configured and answers, the branch pull requests merge into exists (`preflight/remote.rs`) | it does not |
//! | `review` | the reviewer and the Advisor run on another backend or model than the worker (`review.rs`) | `[review] independent = "require"` and one does not (a warning under "warn") |
//! | `budget` | every role's backend reports what a `[budget]` cap counts (`spend.rs`) | never: a warning when one does not |
//! | `setup` | `worktree.setup` once in a throwaway checkout of main ([`setup_trial`]) | it fails |
//! | `lane` | (`breeze doctor` only) each lane kept between runs and its disk use | never |
//!
//! A new check is one more function adding [`DoctorCheck`]s in [`check`].

mod login;
mod programs;
mod remote;
mod review;
pub mod setup_trial;
mod spend;
pub mod template;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use breeze_agents::AgentKind;
use breeze_git::Repo;
use breeze_protocol::{CheckOutcome, DoctorCheck, Role, SetupTrial};
use breeze_supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use crate::backend::{AgentCli, Login, Runs};
use crate::config::{CONFIG_FILE, Config, RoleConfig};
use crate::progress::{ProgressEvent, ProgressSink};

pub(crate) use programs::wait_within;

/// Which command the preflight runs for: what it checks differs a little.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `breeze run`: everything.
    NewRun,
    /// `breeze resume`: the run's plan and lanes exist already — no template check, no
    /// setup trial.
    Resume,
    /// `breeze doctor`: everything; a missing plan is only a warning.
    Doctor,
}

/// What to check and how.
#[derive(Clone)]
pub struct PreflightOptions {
    /// A directory inside the repository.
    pub repo_dir: PathBuf,
    /// The plan given; default: `plan.toml`, then `Plans.md`, at the root.
    pub plan: Option<PathBuf>,
    /// Use this configuration instead of reading `breeze.toml` (not checked then).
    pub config: Option<Config>,
    /// For which command.
    pub stage: Stage,
    /// Run `worktree.setup` in a throwaway checkout (unless its result is cached).
    pub setup_check: bool,
    /// Runs the setup trial.
    pub supervisor: Supervisor,
    /// Told what takes time (the setup trial) while it goes on.
    pub progress: ProgressSink,
    /// The environment roles and the project's commands will be started from (their PATH,
    /// the credentials passed to agent CLIs): the engine's own.
    pub env: Vec<(String, String)>,
    /// `breeze resume --budget-usd` / `--budget-tokens`: the caps the resumed run will have.
    pub budget_raise: crate::budget::BudgetRaise,
}

impl PreflightOptions {
    /// The checks of `stage` for the repository containing `repo_dir`.
    pub fn new(repo_dir: impl Into<PathBuf>, stage: Stage) -> PreflightOptions {
        PreflightOptions {
            repo_dir: repo_dir.into(),
            plan: None,
            config: None,
            stage,
            setup_check: true,
            supervisor: Supervisor::new(),
            progress: crate::progress::silent(),
            env: std::env::vars().collect(),
            budget_raise: Default::default(),
        }
    }
}

/// What the preflight found.
#[derive(Debug, Clone, Default)]
pub struct Preflight {
    /// The repository's root, when `repo_dir` is in one.
    pub root: Option<PathBuf>,
    /// Every check, in the order made.
    pub checks: Vec<DoctorCheck>,
    /// The setup trial, when it ran or was cached.
    pub setup: Option<SetupTrial>,
}

impl Preflight {
    /// The checks that stop a run.
    pub fn problems(&self) -> impl Iterator<Item = &DoctorCheck> {
        self.checks.iter().filter(|check| check.outcome == CheckOutcome::Problem)
    }

    /// Whether nothing stops a run.
    pub fn is_ok(&self) -> bool {
        self.problems().next().is_none()
    }

    /// The problems as one line each, with what to do: the error `breeze run` stops with.
    pub fn into_error(self) -> Result<(), crate::EngineError> {
        let lines: Vec<String> = self.problems().map(line).collect();
        if lines.is_empty() { Ok(()) } else { Err(crate::EngineError::Preflight(lines)) }
    }

    fn push(
        &mut self,
        check: &str,
        subject: impl Into<String>,
        outcome: CheckOutcome,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.checks.push(DoctorCheck {
            check: check.into(),
            subject: subject.into(),
            outcome,
            message: message.into(),
            hint,
            searched: Vec::new(),
        });
    }
}

/// A check as one line: `message: hint`.
pub fn line(check: &DoctorCheck) -> String {
    match &check.hint {
        Some(hint) => format!("{}: {hint}", check.message),
        None => check.message.clone(),
    }
}

/// Makes every check of `options.stage`.
pub async fn check(options: &PreflightOptions, cancel: &CancellationToken) -> Preflight {
    let mut found = Preflight::default();
    let repo = match Repo::open(&options.repo_dir) {
        Ok(repo) => repo,
        Err(err) => {
            let message = err.to_string();
            let hint = crate::EngineError::from(err).hints().into_iter().next();
            found.push("repository", "git", CheckOutcome::Problem, message, hint);
            return found;
        }
    };
    let root = repo.workdir().to_path_buf();
    found.root = Some(root.clone());
    let Some(config) = config_checks(&mut found, &root, options.config.as_ref()) else {
        return found;
    };
    // The run's worktrees, and the setup check's throwaway checkout, go where it says.
    let repo = repo.with_worktree_root(&crate::worktree_folder::choice(&config));
    worktree_folder_check(&mut found, &repo);
    let (plan, has_commit) = match options.stage {
        Stage::Resume => (None, true),
        Stage::NewRun | Stage::Doctor => {
            landing_branch_check(&mut found, &repo, &config);
            let has_commit = first_commit_check(&mut found, &repo);
            (plan_checks(&mut found, &root, options), has_commit)
        }
    };
    let engine_env = &options.env;
    backend_checks(&mut found, &root, &config, engine_env);
    program_checks(&mut found, &root, &config, engine_env);
    cache_checks(&mut found, &root, &config, engine_env);
    remote::landing_target_checks(&mut found, &repo, &config, engine_env);
    review::review_checks(&mut found, &root, &config);
    spend::spend_checks(&mut found, &root, &config, plan.as_ref(), options);
    // Without a commit there is no checkout of main to try the setup in; the missing
    // commit is the problem to name.
    if options.stage != Stage::Resume && !config.worktree_setup.is_empty() && has_commit {
        setup_check(&mut found, &repo, &config, options, cancel).await;
    }
    if options.stage == Stage::Doctor {
        kept_lane_checks(&mut found, &repo);
    }
    found
}

/// The branch a new run lands on: the one the checkout is on (its plan is read there);
/// a detached HEAD, or `run.main_branch` naming another, is a problem.
fn landing_branch_check(found: &mut Preflight, repo: &Repo, config: &Config) {
    let decided = repo
        .checked_out()
        .map_err(|err| crate::target_branch::Refused {
            message: format!("cannot tell which branch the checkout is on: {err}"),
            hint: "check the repository with `git status`".into(),
        })
        .and_then(|at| crate::target_branch::decide(&at, &config.main_branch));
    match decided {
        Ok(branch) => found.push(
            "landing",
            &branch,
            CheckOutcome::Ok,
            format!("a run lands on `{branch}`, the branch the checkout is on"),
            None,
        ),
        Err(refused) => found.push(
            "landing",
            "HEAD",
            CheckOutcome::Problem,
            refused.message,
            Some(refused.hint),
        ),
    }
}

/// The tools' caches and build folders the environment names: a cache confined commands
/// could not write is a warning (with the `sandbox.writable` line that fixes it); a build
/// folder outside the checkouts is said to be left for each checkout's own
/// ([`crate::tool_caches`]).
fn cache_checks(found: &mut Preflight, root: &Path, config: &Config, env: &[(String, String)]) {
    let mut dropped = env.to_vec();
    for var in crate::tool_caches::without_output_dirs(&mut dropped) {
        found.push(
            "caches",
            &var,
            CheckOutcome::Ok,
            format!("{var} is not passed on: each lane and checkout builds in its own folder, which lanes never share"),
            None,
        );
    }
    let confined = config.sandbox_mode != crate::config::SandboxMode::Detect
        && breeze_supervise::kernel_support().is_available();
    let home = env.iter().find(|(name, _)| name == "HOME").map(|(_, home)| Path::new(home));
    let Ok(writable) = crate::containment::writable_paths(config, home) else { return };
    if !confined {
        return;
    }
    for cache in crate::tool_caches::unwritable_caches(env, root, &writable) {
        let folder = cache.folder.display().to_string();
        found.push(
            "caches",
            cache.name,
            CheckOutcome::Warning,
            format!(
                "{} names {folder}, which confined workers and project commands may not write: a download into that cache fails there",
                cache.name
            ),
            Some(format!(
                "add \"{folder}\" to writable under [sandbox] in breeze.toml, or unset {}",
                cache.name
            )),
        );
    }
}

/// Whether the repository has a commit: a run starts every task from the tip of the branch
/// it lands on, so a repository without one is a problem that says to commit first.
fn first_commit_check(found: &mut Preflight, repo: &Repo) -> bool {
    let Err(breeze_git::GitError::NoCommits { .. }) = repo.main_tip() else { return true };
    found.push(
        "repository",
        "commits",
        CheckOutcome::Problem,
        "the repository has no commit yet: a run starts each task from the tip of the branch it lands on, and lands there",
        Some("commit what is there first — `git add -A && git commit -m \"Initial commit\"` (or `git commit --allow-empty -m init` to start empty) — then run again".into()),
    );
    false
}

/// The lanes kept between runs and what they take on disk (measured again for a lane
/// parked since its last measure).
fn kept_lane_checks(found: &mut Preflight, repo: &Repo) {
    for mut lane in crate::lane_record::kept_lanes(repo) {
        lane.disk_use_refreshed(repo.workdir());
        found.push(
            "lane",
            lane.name.clone(),
            CheckOutcome::Ok,
            format!("kept lane {}", lane.describe()),
            Some("the next run reuses it; `breeze clean` removes it".into()),
        );
    }
}

/// The folder the run's worktrees go in (`[worktree] root`, else breeze's data folder):
/// a problem when there is none (no `HOME`) or it is inside the checkout.
fn worktree_folder_check(found: &mut Preflight, repo: &Repo) {
    match repo.worktree_root() {
        Ok(root) => found.push(
            "worktrees",
            root.display().to_string(),
            CheckOutcome::Ok,
            format!("lanes live in {}, outside the checkout", root.display()),
            None,
        ),
        Err(err) => found.push(
            "worktrees",
            "worktree.root",
            CheckOutcome::Problem,
            err.to_string(),
            Some("set `[worktree] root` in breeze.toml to an absolute folder outside the checkout (e.g. \"~/breeze-worktrees\"), or set HOME".into()),
        ),
    }
}

/// `breeze.toml`: every unknown key and every value breeze cannot take a problem of its own
/// ([`crate::config::value_problems`]); the configuration without them (their defaults in
/// their place) for the other checks, `None` when the file is no TOML.
fn config_checks(found: &mut Preflight, root: &Path, given: Option<&Config>) -> Option<Config> {
    if let Some(config) = given {
        return Some(config.clone());
    }
    let path = root.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            found.push(
                "config",
                CONFIG_FILE,
                CheckOutcome::Ok,
                "no breeze.toml: every key has its default (`breeze init` writes one for this project)",
                None,
            );
            return Some(Config::defaults());
        }
        Err(err) => {
            let message = format!("{CONFIG_FILE}: cannot read it: {err}");
            found.push("config", CONFIG_FILE, CheckOutcome::Problem, message, None);
            return None;
        }
    };
    let unknown = crate::config::unknown_keys(&text);
    for key in &unknown {
        let hint = match &key.suggestion {
            Some(_) => "fix its name (every key with its default and what it does: `breeze init --print-config`)".to_string(),
            None => "remove it (every key with its default and what it does: `breeze init --print-config`)".to_string(),
        };
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Problem,
            format!("{CONFIG_FILE}: {key}"),
            Some(hint),
        );
    }
    // Every value breeze cannot take, each named; the other checks go on with the rest.
    let (refused, config) = crate::config::value_problems(&text);
    for problem in &refused {
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Problem,
            format!("{CONFIG_FILE}: {problem}"),
            Some("fix it (every key with its default and what it does: `breeze init --print-config`)".into()),
        );
    }
    if unknown.is_empty() && refused.is_empty() {
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Ok,
            format!("{CONFIG_FILE} is valid"),
            None,
        );
    }
    config
}

/// The plan loads and is not init's template; the plan, when it loads.
fn plan_checks(
    found: &mut Preflight,
    root: &Path,
    options: &PreflightOptions,
) -> Option<breeze_plan::Plan> {
    let path = match &options.plan {
        Some(path) => Some(path.clone()),
        None => {
            ["plan.toml", "Plans.md"].into_iter().map(|name| root.join(name)).find(|p| p.is_file())
        }
    };
    let Some(path) = path.filter(|path| path.is_file()) else {
        // `breeze run` says what to do about a missing plan itself.
        if options.stage == Stage::Doctor {
            found.push(
                "plan",
                "plan",
                CheckOutcome::Warning,
                "no plan: neither plan.toml nor Plans.md is at the repository root",
                Some("write one with `breeze init` or `breeze draft \"GOAL\"`".into()),
            );
        }
        return None;
    };
    let shown = path.strip_prefix(root).unwrap_or(&path).display().to_string();
    if let Some((line, _)) =
        std::fs::read_to_string(&path).ok().as_deref().and_then(template::template_marker)
    {
        let (message, hint) = template::template_message(&shown, line);
        found.push("plan", &shown, CheckOutcome::Problem, message, Some(hint));
        return None;
    }
    match breeze_plan::load_with_extensions(&path, crate::PLAN_EXTENSIONS) {
        Ok(plan) => {
            let message = format!("{shown}: {} tasks", plan.tasks.len());
            found.push("plan", &shown, CheckOutcome::Ok, message, None);
            Some(plan)
        }
        Err(err) => {
            let message = err.to_string().lines().next().unwrap_or_default().to_string();
            let hint = Some("fix the plan, then check it with `breeze plan`".to_string());
            found.push("plan", &shown, CheckOutcome::Problem, message, hint);
            None
        }
    }
}

/// `roles.worker, roles.reviewer and roles.advisor`.
fn role_list(roles: &[Role]) -> String {
    let names: Vec<String> = roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
    join_and(&names)
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and(items: &[impl AsRef<str>]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The environment the role's CLI gets, as far as its login is concerned.
fn role_env(
    settings: &RoleConfig,
    kind: AgentKind,
    engine: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = breeze_supervise::scrubbed_env(engine.iter().cloned(), &settings.env, &[]);
    if settings.pass_credentials {
        let patterns = kind.credential_patterns();
        let passes = |name: &str| {
            patterns.iter().any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *pattern,
            })
        };
        env.extend(engine.iter().filter(|(name, _)| passes(name)).cloned());
    }
    env
}

/// Each role's backend is installed (and logged in, where that can be told).
fn backend_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    engine_env: &[(String, String)],
) {
    let mut agents: BTreeMap<&'static str, (&'static AgentCli, Vec<Role>)> = BTreeMap::new();
    for role in config.run_roles() {
        let settings = config.role(role);
        let subject = format!("roles.{}", role.as_str());
        match settings.backend.describe().runs {
            Runs::InProcess => {
                found.push(
                    "backend",
                    subject,
                    CheckOutcome::Ok,
                    format!(
                        "roles.{}: the built-in {} backend",
                        role.as_str(),
                        settings.backend.as_str()
                    ),
                    None,
                );
            }
            Runs::Program => {
                for program in programs::programs_of(&settings.command) {
                    let lookup = programs::find(&program, root, engine_env);
                    let what = format!("roles.{}.command", role.as_str());
                    push_lookup(found, "backend", &subject, &what, lookup);
                }
            }
            Runs::Agent(cli) => {
                let name = cli.kind.as_str();
                agents.entry(name).or_insert_with(|| (cli, Vec::new())).1.push(role);
            }
        }
    }
    for (name, (cli, roles)) in agents {
        let subject: Vec<String> =
            roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
        let subject = subject.join(", ");
        let lookup = programs::find(name, root, engine_env);
        if lookup.found.is_err() {
            let tables: Vec<String> =
                roles.iter().map(|role| format!("[roles.{}]", role.as_str())).collect();
            let hint = format!(
                "install {name}: {}, or set another backend in {} of breeze.toml",
                cli.install,
                tables.join(", ")
            );
            found.checks.push(DoctorCheck {
                check: "backend".into(),
                subject,
                outcome: CheckOutcome::Problem,
                message: format!("{lookup} (the backend of {})", role_list(&roles)),
                hint: Some(hint),
                searched: lookup.searched,
            });
            continue;
        }
        found.checks.push(DoctorCheck {
            check: "backend".into(),
            subject: subject.clone(),
            outcome: CheckOutcome::Ok,
            message: format!("{lookup}, for {}", role_list(&roles)),
            hint: None,
            searched: Vec::new(),
        });
        login_checks(found, config, cli, &roles, engine_env);
    }
}

/// One line per verdict: the roles logged in the same way share it.
fn login_checks(
    found: &mut Preflight,
    config: &Config,
    cli: &'static AgentCli,
    roles: &[Role],
    engine_env: &[(String, String)],
) {
    let mut verdicts: Vec<(Login, Vec<Role>)> = Vec::new();
    for role in roles {
        let settings = config.role(*role);
        let role_env = role_env(settings, cli.kind, engine_env);
        let verdict = login::login(cli, &role_env, engine_env, &settings.args);
        match verdicts.iter_mut().find(|(seen, _)| *seen == verdict) {
            Some((_, roles)) => roles.push(*role),
            None => verdicts.push((verdict, vec![*role])),
        }
    }
    let name = cli.kind.as_str();
    for (verdict, roles) in verdicts {
        let subject: Vec<String> =
            roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
        let (outcome, message, hint) = match verdict {
            Login::Yes(how) => (
                CheckOutcome::Ok,
                format!("{name} is logged in for {} ({how})", role_list(&roles)),
                None,
            ),
            Login::Unknown(why) => (
                CheckOutcome::NotChecked,
                format!("{name}'s login for {} is not checked: {why}", role_list(&roles)),
                None,
            ),
            Login::No(what) => (
                CheckOutcome::Problem,
                format!("{name} is not logged in for {} ({what})", role_list(&roles)),
                Some(cli.log_in.to_string()),
            ),
        };
        found.push("login", subject.join(", "), outcome, message, hint);
    }
}

/// The programs of `worktree.setup`, `[review] checks` and `land.verify`, one line per
/// program with every key naming it.
fn program_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    engine_env: &[(String, String)],
) {
    let mut commands: Vec<(String, &[String])> = Vec::new();
    if !config.worktree_setup.is_empty() {
        commands.push(("worktree.setup".into(), &config.worktree_setup));
    }
    for (index, check) in config.review_checks.iter().enumerate() {
        let key = if config.review_checks.len() == 1 {
            "review.checks".to_string()
        } else {
            format!("review.checks[{index}]")
        };
        commands.push((key, check));
    }
    if !config.verify.is_empty() {
        commands.push(("land.verify".into(), &config.verify));
    }
    if config.land.to == crate::config::LandTo::PullRequest && !config.land.pr_command.is_empty() {
        commands.push(("land.pr_command".into(), &config.land.pr_command));
    }
    let mut by_program: Vec<(String, Vec<String>)> = Vec::new();
    for (key, argv) in &commands {
        for program in programs::programs_of(argv) {
            match by_program.iter_mut().find(|(seen, _)| *seen == program) {
                Some((_, keys)) => keys.push(key.clone()),
                None => by_program.push((program, vec![key.clone()])),
            }
        }
    }
    // One probe per python and module, whichever commands run it (`python -m pytest` in
    // both `[review] checks` and `land.verify`).
    let mut modules: Vec<((String, String), Vec<String>)> = Vec::new();
    for (key, argv) in &commands {
        if let Some((python, module)) = programs::python_module_of(argv) {
            let wanted = (python.to_string(), module.to_string());
            match modules.iter_mut().find(|(seen, _)| *seen == wanted) {
                Some((_, keys)) => keys.push(key.clone()),
                None => modules.push((wanted, vec![key.clone()])),
            }
        }
    }
    let mut missing_programs = Vec::new();
    for (program, keys) in by_program {
        let lookup = programs::find(&program, root, engine_env);
        if lookup.found.is_err() {
            missing_programs.push(program);
        }
        push_lookup(found, "program", &keys.join(", "), &join_and(&keys), lookup);
    }
    // `python -m pytest` without pytest fails every check and verify, on main as in any
    // lane: found here, before a task is worked on. With a setup, which may install it in
    // each lane, it is worth knowing only.
    for ((python, module), keys) in modules {
        let key = join_and(&keys);
        if missing_programs.contains(&python)
            || programs::python_has_module(&python, &module, root, engine_env) != Some(false)
        {
            continue;
        }
        let setup = !config.worktree_setup.is_empty();
        let outcome = if setup { CheckOutcome::Warning } else { CheckOutcome::Problem };
        let also = if setup { " (unless worktree.setup installs it in each lane)" } else { "" };
        found.push(
            "program",
            keys.join(", "),
            outcome,
            format!("`{python} -m {module}` for {key}: {python} has no module {module}{also}"),
            Some(format!(
                "install it (`{python} -m pip install {module}`, or in the project's virtual environment and name that python), or change {key} in breeze.toml"
            )),
        );
    }
}

/// A program lookup as a check: a problem when it is not found, naming `what` needs it.
fn push_lookup(
    found: &mut Preflight,
    check: &str,
    subject: &str,
    what: &str,
    lookup: programs::Lookup,
) {
    let (outcome, message, hint) = match &lookup.found {
        Ok(_) => (CheckOutcome::Ok, format!("{lookup}, for {what}"), None),
        Err(_) => (
            CheckOutcome::Problem,
            format!("{lookup} for {what}"),
            Some(format!("install {}, or change {what} in breeze.toml", lookup.program)),
        ),
    };
    let searched = if lookup.found.is_err() { lookup.searched } else { Vec::new() };
    found.checks.push(DoctorCheck {
        check: check.into(),
        subject: subject.into(),
        outcome,
        message,
        hint,
        searched,
    });
}

/// `worktree.setup` once in a throwaway checkout, unless skipped, cached, or pointless (its
/// program is missing, another run holds the repository).
async fn setup_check(
    found: &mut Preflight,
    repo: &Repo,
    config: &Config,
    options: &PreflightOptions,
    cancel: &CancellationToken,
) {
    let subject = "worktree.setup";
    if !options.setup_check {
        if let Some(trial) = setup_trial::cached_trial(repo, config) {
            found.push("setup", subject, CheckOutcome::Ok, setup_line(&trial), None);
            found.setup = Some(trial);
            return;
        }
        let flag = if options.stage == Stage::Doctor { "--no-setup" } else { "--skip-setup-check" };
        found.push(
            "setup",
            subject,
            CheckOutcome::Skipped,
            format!("worktree.setup was not tried ({flag})"),
            None,
        );
        return;
    }
    let program_missing = found.checks.iter().any(|check| {
        check.outcome == CheckOutcome::Problem && check.subject.split(", ").any(|s| s == subject)
    });
    if program_missing {
        return;
    }
    if crate::lock::RepoLock::is_held(repo.workdir()) {
        found.push(
            "setup",
            subject,
            CheckOutcome::Skipped,
            "worktree.setup was not tried: a run is going on in this repository",
            None,
        );
        return;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let containment = match crate::containment::Containment::decide(config, home.as_deref()) {
        Ok(containment) => containment,
        Err(err) => {
            found.push(
                "setup",
                subject,
                CheckOutcome::Problem,
                err.to_string(),
                err.hints().into_iter().next(),
            );
            return;
        }
    };
    let command = config.worktree_setup.join(" ");
    let starting = || {
        (options.progress)(&ProgressEvent::Notice {
            message: format!(
                "preflight: trying worktree.setup (`{command}`) once in a throwaway checkout of main, to see what it creates in each lane (skip: {})",
                if options.stage == Stage::Doctor { "--no-setup" } else { "--skip-setup-check" }
            ),
        });
    };
    let trial = setup_trial::run_trial(
        repo,
        config,
        &containment,
        (&options.supervisor, &options.env),
        cancel,
        starting,
    );
    match trial.await {
        Ok((trial, _)) if trial.succeeded => {
            found.push("setup", subject, CheckOutcome::Ok, setup_line(&trial), None);
            found.setup = Some(trial);
        }
        Ok((trial, refused)) => {
            let tail = trial.output_tail.clone().unwrap_or_default();
            let telling = breeze_protocol::telling_line(&tail).unwrap_or_default();
            let log = setup_trial::cache_path(repo.workdir()).with_file_name("setup.stderr");
            let mut message = format!(
                "worktree.setup (`{command}`) {} in a fresh checkout of main",
                trial.ending
            );
            if !telling.is_empty() {
                message.push_str(&format!(": {telling}"));
            }
            let hint = match refused {
                Some(refused) => format!("{refused} (its output: {})", log.display()),
                None => format!(
                    "fix it so it works in a fresh checkout (its output: {})",
                    log.display()
                ),
            };
            found.push("setup", subject, CheckOutcome::Problem, message, Some(hint));
            found.setup = Some(trial);
        }
        Err(err) => {
            found.push("setup", subject, CheckOutcome::Problem, format!("worktree.setup could not be tried: {err}"), Some("check worktree.setup in breeze.toml, or skip the trial with --skip-setup-check".into()));
        }
    }
}

/// A successful trial as one line.
fn setup_line(trial: &SetupTrial) -> String {
    let mut message = format!("worktree.setup: {}", trial.summary);
    if trial.cached {
        message.push_str(&format!(" (as tried at {}; its inputs have not changed)", trial.ran_at));
    }
    message
}

/// The preflight of `breeze run` / `breeze resume`: warnings and the setup's report are
/// told as notices; problems are the error, before anything is created.
pub(crate) async fn before_run(
    options: &crate::RunOptions,
    stage: Stage,
    cancel: &CancellationToken,
) -> Result<(), crate::EngineError> {
    let preflight_options = PreflightOptions {
        repo_dir: options.repo_dir.clone(),
        plan: options.plan.clone(),
        config: options.config.clone(),
        stage,
        setup_check: !options.skip_setup_check,
        supervisor: options.supervisor.clone(),
        progress: options.progress.clone(),
        env: std::env::vars().collect(),
        budget_raise: options.budget_raise,
    };
    // A token cancelled before the start is left to the run (it ends interrupted at once);
    // Ctrl-C during the preflight stops here, with nothing created.
    let cancelled_before = cancel.is_cancelled();
    let found = check(&preflight_options, cancel).await;
    if !cancelled_before && cancel.is_cancelled() {
        return Err(crate::EngineError::usage(
            "stopped during the preflight; nothing was created",
            "run it again when you are ready",
        ));
    }
    for check in &found.checks {
        let tell = match check.outcome {
            // The run start says every pairing, with what to change.
            CheckOutcome::Warning => check.check != "review",
            CheckOutcome::Ok => check.check == "setup",
            _ => false,
        };
        if tell && found.is_ok() {
            (options.progress)(&ProgressEvent::Notice { message: line(check) });
        }
    }
    found.into_error()
}
