//! What a person's `breeze attach` session runs: the worker's own agent session resumed
//! interactively — `claude --resume <session_id>`, `codex resume <thread_id>` (a new session
//! of that CLI when the worker has none yet) — or `$SHELL` for the other backends (and with
//! `--shell`), in the task's worktree, with the worker's environment and, unless the person
//! asks otherwise, the worker's confinement.
//!
//! The environment is the worker's: the scrubbed allow-list, `roles.worker.env`, the CLI's
//! credentials with `pass_credentials`, the protocol variables that make sense outside a
//! role call (`BREEZE_ROLE=worker`, `BREEZE_TASK_ID`, `BREEZE_WORKTREE`, `BREEZE_BASE`), the
//! lane's (`BREEZE_LANE`, `BREEZE_PORT_BASE`, `BREEZE_PORT_COUNT`), a scratch folder as
//! `TMPDIR`, and `BREEZE_ATTACHED=1`. Not `BREEZE_RUN_ID`: breeze ends whatever carries it
//! when a run ends, and a person's session is not breeze's to end.
//!
//! An agent CLI runs in the worker's own CLI home (`.breeze/runs/<run>/homes/<task>.worker`,
//! [`crate::role_home`]), where the worker's session is: filled from the person's login and
//! settings and main's instructions as before every worker call, its login removed when the
//! session is dropped. Like the worker, it reads no configuration from the worktree
//! (`claude --setting-sources user`, codex without `AGENTS.md` and skills).
//!
//! Confined (the default where roles are), the session may write what the worker may: the
//! worktree, the lane's private git directory (the lane is sealed as for a worker, and
//! handed back when the person leaves), the scratch folder and the worker's CLI home — so
//! nothing it does reaches the shared repository (breeze commits what it leaves), the
//! user's checkout or another lane. `--unconfined` runs it with the person's own rights.

use std::path::{Path, PathBuf};

use breeze_protocol::Role;
use breeze_supervise::Confinement;

use super::request::Paused;
use crate::backend::{AgentCli, Attach, ModelChoice, Runs};
use crate::config::Config;
use crate::containment::Containment;
use crate::error::EngineError;
use crate::lane_env::LaneEnv;
use crate::run_dir::RunDir;

/// How the person wants their session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// `$SHELL` whatever the worker's backend.
    pub shell: bool,
    /// Without the worker's confinement.
    pub unconfined: bool,
}

/// A session ready to open in the person's terminal.
#[derive(Debug)]
pub struct Session {
    /// What runs.
    pub spec: breeze_supervise::InteractiveSpec,
    /// What it is, for the person: `claude --resume 5f1c… (the worker's session)`.
    pub what: String,
    /// How it is confined, for the person.
    pub confinement: String,
    /// The repository and the lane sealed for the session (its `.git` naming the lane's
    /// private git directory, as for a worker), to hand back when the person leaves.
    sealed: Option<(PathBuf, String)>,
    /// The session's `TMPDIR`, removed when the session is dropped.
    _scratch: tempfile::TempDir,
    /// The worker's CLI home, filled for the session; its login is removed when the session
    /// is dropped.
    _home: Option<crate::role_home::FilledHome>,
}

impl Session {
    /// After the person left: the lane's `.git` names its admin folder again, and what the
    /// session planted there (a link, a folder for `.git`) is repaired, as after a worker.
    /// The repairs, described (empty: all was in order).
    pub fn hand_back(&self) -> Result<Vec<String>, EngineError> {
        let Some((root, name)) = &self.sealed else { return Ok(Vec::new()) };
        let repo = breeze_git::Repo::open(root)?;
        let Some(worktree) = repo.find_worktree(name)? else { return Ok(Vec::new()) };
        Ok(repo.check_lane_links(&worktree)?)
    }
}

/// What the session opens.
#[derive(Debug, Clone, Copy)]
enum Opens {
    Shell,
    Agent(&'static AgentCli),
}

/// The session for task `id` of the run in `run_dir`, paused at `paused`, in the repository
/// at `root`.
pub fn prepare(
    root: &Path,
    run_dir: &RunDir,
    config: &Config,
    id: &str,
    paused: &Paused,
    options: SessionOptions,
) -> Result<Session, EngineError> {
    let settings = &config.worker;
    let opens = match settings.backend.describe().agent() {
        Some(cli) if !options.shell => Opens::Agent(cli),
        _ => Opens::Shell,
    };
    let scratch = tempfile::Builder::new()
        .prefix("breeze-attach-")
        .tempdir()
        .map_err(|err| EngineError::io("cannot create a scratch folder for the session", err))?;
    let cli_home = crate::role_home::home_dir(run_dir, id, Role::Worker);
    let env = environment(config, id, paused, opens, scratch.path(), &cli_home);
    // Filled before the lane is sealed: a home that cannot be filled leaves nothing to undo.
    let filled = match opens {
        Opens::Agent(cli) => Some(fill_home(root, cli, &cli_home, &paused.base)?),
        Opens::Shell => None,
    };
    let containment = Containment::decide(config, home(&env).as_deref())?;
    let (confinement, confined_text, sealed) = if options.unconfined {
        (None, "not confined (--unconfined): it may write anything you may".to_string(), None)
    } else if !containment.enforced {
        let why = containment.unconfined_reason();
        (None, format!("not confined: roles are not confined here either ({why})"), None)
    } else {
        let (confinement, lane) = confine(root, &containment, paused, opens, scratch.path(), &env)?;
        let text = "confined like the worker: it may write the task's worktree, its private git directory, its scratch folder and the worker's CLI home (breeze commits what you leave)";
        (confinement, text.to_string(), Some((root.to_path_buf(), lane)))
    };
    let argv = command_line(root, config, paused, opens, confinement.is_some(), &env);
    let what = describe(&argv, opens, paused);
    let spec =
        breeze_supervise::InteractiveSpec { argv, cwd: paused.worktree.clone(), env, confinement };
    Ok(Session { spec, what, confinement: confined_text, sealed, _scratch: scratch, _home: filled })
}

/// Fills the worker's CLI home `dir` for the session, as before a worker call: the person's
/// login and settings (breeze's own environment is the person's), main's instructions at
/// the task's base.
fn fill_home(
    root: &Path,
    cli: &'static AgentCli,
    dir: &Path,
    base: &str,
) -> Result<crate::role_home::FilledHome, EngineError> {
    let own: Vec<(String, String)> = std::env::vars().collect();
    let person = crate::role_home::PersonState::of(cli, &own);
    let repo = breeze_git::Repo::open(root)?;
    let project = crate::role_home::ProjectInstructions::at(&repo, base, cli)?;
    crate::role_home::fill(cli, dir, person.as_ref(), project.as_ref())
}

/// The worker's environment for the session (see the module's documentation); an agent
/// CLI's home is `cli_home`.
fn environment(
    config: &Config,
    id: &str,
    paused: &Paused,
    opens: Opens,
    scratch: &Path,
    cli_home: &Path,
) -> Vec<(String, String)> {
    let settings = &config.worker;
    let own: Vec<(String, String)> = std::env::vars().collect();
    let engine_env = own.iter().filter(|(name, _)| !name.starts_with("BREEZE_")).cloned();
    let mut set = vec![
        ("BREEZE_ROLE".to_string(), Role::Worker.as_str().to_string()),
        ("BREEZE_TASK_ID".into(), id.to_string()),
        ("BREEZE_WORKTREE".into(), paused.worktree.display().to_string()),
        ("BREEZE_BASE".into(), paused.base.clone()),
        ("BREEZE_ATTACHED".into(), "1".into()),
    ];
    for name in ["TMPDIR", "TMP", "TEMP"] {
        set.push((name.into(), scratch.display().to_string()));
    }
    if let Some(lane) = paused.lane {
        set.extend(LaneEnv::of(config, lane).vars());
    }
    let env = breeze_supervise::scrubbed_env(engine_env, &settings.env, &set);
    match opens {
        Opens::Agent(cli) => {
            let mut call =
                breeze_agents::AgentCall::new(cli.kind, Role::Worker, &paused.worktree, "", "");
            call.env = env;
            call.engine_env = own;
            call.pass_credentials = settings.pass_credentials;
            call.home = Some(cli_home.to_path_buf());
            breeze_agents::agent_env(&call)
        }
        Opens::Shell => env,
    }
}

fn home(env: &[(String, String)]) -> Option<PathBuf> {
    env.iter().find(|(name, _)| name == "HOME").map(|(_, home)| PathBuf::from(home))
}

/// What the worker may write, for the session, and the name of the lane, sealed as for a
/// worker: its git works on the lane's private git directory, nothing under `.git`.
fn confine(
    root: &Path,
    containment: &Containment,
    paused: &Paused,
    opens: Opens,
    scratch: &Path,
    env: &[(String, String)],
) -> Result<(Option<Confinement>, String), EngineError> {
    let repo = breeze_git::Repo::open(root)?;
    let name = paused.worktree.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    let worktree = repo.find_worktree(name)?.ok_or_else(|| {
        EngineError::usage(
            format!("{} is not a worktree breeze made", paused.worktree.display()),
            "`breeze status` shows the task's state; `breeze attach` it again",
        )
    })?;
    let lane_git = vec![repo.seal_lane(&worktree)?];
    // A shell is confined as a worker running a program; an agent CLI keeps its own state
    // writable.
    let runs = match opens {
        Opens::Shell => Runs::Program,
        Opens::Agent(cli) => Runs::Agent(cli),
    };
    let confinement =
        containment.confinement(Role::Worker, runs, &paused.worktree, &lane_git, scratch, env)?;
    Ok((confinement, worktree.name))
}

/// The program and arguments of the session.
fn command_line(
    root: &Path,
    config: &Config,
    paused: &Paused,
    opens: Opens,
    confined: bool,
    env: &[(String, String)],
) -> Vec<String> {
    let settings = &config.worker;
    let Opens::Agent(cli) = opens else {
        let shell = env.iter().find(|(name, _)| name == "SHELL").map(|(_, shell)| shell);
        return vec![shell.filter(|shell| !shell.is_empty()).cloned().unwrap_or("/bin/sh".into())];
    };
    // The worker's model: `roles.worker.model`, else (claude) the role definition's.
    let model = match settings.backend.describe().model {
        ModelChoice::SettingElseDefinition if settings.model.is_empty() => {
            crate::roles::definition::load(root, Role::Worker)
                .map(|definition| definition.model)
                .unwrap_or_default()
        }
        _ => settings.model.clone(),
    };
    (cli.attach)(&Attach {
        session: paused.session.as_deref(),
        model: &model,
        args: &settings.args,
        confined,
    })
}

fn describe(argv: &[String], opens: Opens, paused: &Paused) -> String {
    let command = argv.join(" ");
    match (opens, &paused.session) {
        (Opens::Shell, _) => format!("{command} (a shell)"),
        (Opens::Agent(_), Some(_)) => format!("{command} (the worker's own session)"),
        (Opens::Agent(_), None) => {
            format!("{command} (a new session: the worker has none yet)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

    fn paused(session: Option<&str>) -> Paused {
        Paused {
            lane: Some(2),
            worktree: "/home/u/.local/share/breeze/worktrees/repo-0123456789/lane-2".into(),
            branch: "task/1".into(),
            base: "b".into(),
            head: "h".into(),
            session: session.map(String::from),
        }
    }

    fn config(backend: &str, extra: &str) -> Config {
        let command = if backend == "command" { "command = [\"sh\", \"w.sh\"]\n" } else { "" };
        Config::parse(&format!("[roles.worker]\nbackend = \"{backend}\"\n{command}{extra}"), "b")
            .unwrap()
    }

    #[test]
    fn the_workers_own_session_is_resumed_in_its_cli_and_a_shell_otherwise() {
        let root = Path::new("/nonexistent-repo");
        let env = vec![("SHELL".to_string(), "/bin/zsh".to_string())];
        let claude = config("claude", "model = \"sonnet\"\nargs = [\"--verbose\"]\n");
        let line = |config: &Config, session, opens, confined| {
            command_line(root, config, &paused(session), opens, confined, &env).join(" ")
        };
        let agent = |kind: BackendKind| Opens::Agent(kind.describe().agent().unwrap());
        use BackendKind::{Claude, Codex};
        assert_eq!(
            line(&claude, Some("5f1c"), agent(Claude), true),
            "claude --resume 5f1c --setting-sources user --model sonnet --verbose"
        );
        assert_eq!(
            line(&claude, None, agent(Claude), true),
            "claude --setting-sources user --model sonnet --verbose"
        );
        let codex = config("codex", "args = [\"-c\", \"model_provider=mock\"]\n");
        let no_project = "-c project_doc_max_bytes=0 -c skills.include_instructions=false";
        assert_eq!(
            line(&codex, Some("0199"), agent(Codex), true),
            format!(
                "codex resume {no_project} --sandbox danger-full-access -c model_provider=mock 0199"
            )
        );
        assert_eq!(
            line(&codex, Some("0199"), agent(Codex), false),
            format!("codex resume {no_project} -c model_provider=mock 0199")
        );
        assert_eq!(line(&config("command", ""), Some("x"), Opens::Shell, true), "/bin/zsh");
    }

    #[test]
    fn the_session_has_the_workers_environment_and_its_lane_but_not_the_run_id() {
        let config = config("command", "env = [\"PROJECT_TOKEN\"]\n");
        let scratch = tempfile::tempdir().unwrap();
        let home = Path::new("/repo/.breeze/runs/r1/homes/7.worker");
        let env = environment(&config, "7", &paused(None), Opens::Shell, scratch.path(), home);
        let value = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(value("BREEZE_TASK_ID").as_deref(), Some("7"));
        assert_eq!(value("BREEZE_ROLE").as_deref(), Some("worker"));
        assert_eq!(value("BREEZE_LANE").as_deref(), Some("2"));
        assert_eq!(value("BREEZE_PORT_BASE").as_deref(), Some("24020"));
        assert_eq!(value("BREEZE_ATTACHED").as_deref(), Some("1"));
        assert_eq!(value("TMPDIR"), Some(scratch.path().display().to_string()));
        assert_eq!(value("BREEZE_RUN_ID"), None, "breeze ends what carries its run's id");
    }

    #[test]
    fn the_session_runs_the_cli_in_the_workers_own_home_whatever_the_environment_says() {
        let config = config("claude", "pass_credentials = true\n");
        let scratch = tempfile::tempdir().unwrap();
        let run_dir = RunDir::new(Path::new("/repo"), "r1");
        let home = crate::role_home::home_dir(&run_dir, "7", Role::Worker);
        assert_eq!(home, Path::new("/repo/.breeze/runs/r1/homes/7.worker"));
        use BackendKind::{Claude, Codex};
        for (kind, var) in [(Claude, "CLAUDE_CONFIG_DIR"), (Codex, "CODEX_HOME")] {
            let opens = Opens::Agent(kind.describe().agent().unwrap());
            let env = environment(&config, "7", &paused(None), opens, scratch.path(), &home);
            let values: Vec<&str> =
                env.iter().filter(|(n, _)| n == var).map(|(_, v)| v.as_str()).collect();
            assert_eq!(values, [home.to_str().unwrap()], "{}", kind.as_str());
        }
    }
}
