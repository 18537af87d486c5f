//! `breeze doctor`: what this machine gives breeze — kernel confinement and why, the agent
//! CLIs on PATH with their versions, git, what the claude and codex roles get as their CLI
//! homes ([`RoleHomes`]) — and, inside a repository, what its
//! `breeze.toml` makes of it and the [`crate::preflight`]'s verdict (as lines, or as
//! `breeze-doctor.v1` for CI).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use breeze_supervise::{DevShmSupport, IsolationSupport, KernelSupport};

use crate::config::Config;
use crate::containment::Containment;

/// A program breeze may run, as found on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCheck {
    /// `claude`, `codex`, `git`.
    pub name: &'static str,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// What `--version` printed (first line), or why it could not be read — as `breeze
    /// doctor` says it (the report holds what it shows).
    pub version: Result<String, String>,
}

/// Everything `breeze doctor` prints.
#[derive(Debug, Clone)]
pub struct DoctorReport {
    /// Landlock, or why not.
    pub kernel: KernelSupport,
    /// Whether unprivileged user namespaces are allowed (`None`: could not tell).
    pub user_namespaces: Option<bool>,
    /// What confined roles get as `/dev/shm`.
    pub dev_shm: DevShmSupport,
    /// Whether role processes run in PID namespaces of their own (everything they start
    /// ends with them; no terminal of the person's), or in a session of their own only.
    pub isolation: IsolationSupport,
    /// Whether roles can get network namespaces of their own (the allow-listed network),
    /// or why not.
    pub network_namespaces: Result<(), String>,
    /// Each role's command as a run started now would run it (relative files resolved
    /// against the checkout, [`crate::role_commands::resolved`]), when inside a repository
    /// whose `breeze.toml` names commands.
    pub role_commands: Vec<(&'static str, Vec<String>)>,
    /// The repository's configuration applied to this machine, when run inside one; or
    /// why it cannot be (its configuration's error, or the sandbox's refusal with what to
    /// do), as `breeze doctor` says it.
    pub containment: Option<Result<Containment, String>>,
    /// claude, codex, git.
    pub tools: Vec<ToolCheck>,
}

/// Looks at this machine (and the repository containing `dir`, if any).
pub fn examine(dir: &Path) -> DoctorReport {
    let repo = breeze_git::Repo::open(dir).ok();
    let config = repo.as_ref().map(|repo| Config::load(repo.workdir()));
    let containment = config.as_ref().zip(repo.as_ref()).map(|(config, repo)| {
        let config = config.as_ref().map_err(|err| err.to_string())?;
        Containment::for_repository(config, repo).map_err(|err| {
            let hints = err.hints().join("; ");
            if hints.is_empty() { err.to_string() } else { format!("{err} ({hints})") }
        })
    });
    let role_commands = match (&repo, &config) {
        (Some(repo), Some(Ok(config))) => role_commands(config, repo.workdir()),
        _ => Vec::new(),
    };
    DoctorReport {
        kernel: breeze_supervise::kernel_support(),
        user_namespaces: user_namespaces(),
        dev_shm: breeze_supervise::dev_shm_support(),
        isolation: breeze_supervise::isolation_support(),
        network_namespaces: breeze_supervise::network_namespace_support(),
        role_commands,
        containment,
        tools: crate::backend::agent_clis()
            .map(|cli| cli.kind.as_str())
            .chain(["git"])
            .map(check_tool)
            .collect(),
    }
}

/// The roles whose `command` is set, as a run started now in `root` would run it.
fn role_commands(config: &Config, root: &Path) -> Vec<(&'static str, Vec<String>)> {
    let roles = [
        ("worker", &config.worker),
        ("reviewer", &config.reviewer),
        ("advisor", &config.advisor),
        ("scaffolder", &config.scaffolder),
    ];
    roles
        .into_iter()
        .filter(|(_, role)| !role.command.is_empty())
        .map(|(name, role)| (name, crate::role_commands::resolved(&role.command, root)))
        .collect()
}

fn user_namespaces() -> Option<bool> {
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").ok()?;
    if max.trim() == "0" {
        return Some(false);
    }
    // Debian and Ubuntu kernels have an extra switch.
    match std::fs::read_to_string("/proc/sys/kernel/unprivileged_userns_clone") {
        Ok(value) => Some(value.trim() != "0"),
        Err(_) => Some(true),
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| {
        use std::os::unix::fs::PermissionsExt;
        candidate
            .metadata()
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

fn check_tool(name: &'static str) -> ToolCheck {
    let Some(path) = find_on_path(name) else {
        return ToolCheck { name, path: None, version: Err("not found on PATH".into()) };
    };
    let version = version_of(&path).map_err(|unknown| unknown.to_string());
    ToolCheck { name, path: Some(path), version }
}

/// Why a program's version is not known.
#[derive(Debug, thiserror::Error)]
enum VersionUnknown {
    /// It does not start.
    #[error("cannot run it: {0}")]
    CannotRun(#[source] std::io::Error),
    /// It did not answer in time (it was ended).
    #[error("`--version` did not answer within 10 s")]
    NoAnswer,
    /// Waiting for it failed.
    #[error("{0}")]
    Wait(#[source] std::io::Error),
    /// It failed, or printed nothing.
    #[error("`--version` exited with {0}")]
    Exited(std::process::ExitStatus),
}

/// `program --version`, first line, within a few seconds.
fn version_of(program: &Path) -> Result<String, VersionUnknown> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(VersionUnknown::CannotRun)?;
    match crate::preflight::wait_within(&mut child, Duration::from_secs(10)) {
        Ok(Some(_)) => {}
        Ok(None) => return Err(VersionUnknown::NoAnswer),
        Err(err) => return Err(VersionUnknown::Wait(err)),
    }
    let output = child.wait_with_output().map_err(VersionUnknown::Wait)?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.lines().find(|line| !line.trim().is_empty()) {
        Some(line) if output.status.success() => Ok(line.trim().to_string()),
        _ => Err(VersionUnknown::Exited(output.status)),
    }
}

/// What `breeze doctor` says of the CLI homes of claude and codex roles
/// ([`crate::role_home`]): where they are and what they get from the person's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleHomes {
    /// The person's claude and codex state, where homes are filled from (`None`: no `HOME`).
    pub person: Vec<(breeze_agents::AgentKind, Option<crate::role_home::PersonState>)>,
}

impl RoleHomes {
    /// The person's state as breeze's environment `engine_env` places it.
    pub fn of(engine_env: &[(String, String)]) -> RoleHomes {
        RoleHomes {
            person: crate::backend::agent_clis()
                .map(|cli| (cli.kind, crate::role_home::PersonState::of(cli, engine_env)))
                .collect(),
        }
    }

    /// The lines `breeze doctor` prints.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "role homes: each claude and codex role runs in a CLI home of its own, .breeze/runs/<run>/homes/<task>.<role>/ (its CLAUDE_CONFIG_DIR or CODEX_HOME; the scaffolder's under .breeze/planning/<id>/homes/), the only CLI state it may write; its sessions stay there for resume and `breeze attach`\n",
        );
        for (kind, person) in &self.person {
            match person {
                Some(person) => {
                    out.push_str(&format!(
                        "  copied in before every call: {}\n",
                        person.describe()
                    ));
                }
                None => out.push_str(&format!(
                    "  {kind}: no HOME and no {}, so roles get no login or settings of yours\n",
                    kind.home_var()
                )),
            }
        }
        out.push_str(
            "  the login files (.credentials.json, .claude.json, auth.json) leave a home when its call ends; your own CLI state is read-only to roles (a login the CLI refreshes in a role's home does not reach yours)\n",
        );
        out.push_str(
            "  what a task wrote in its worktree does not configure any role (.claude/, CLAUDE.md, AGENTS.md, .codex/, .mcp.json, skills): the home's CLAUDE.md / AGENTS.md give main's instead, from the task's base commit\n",
        );
        out
    }
}

/// What `breeze doctor` says of the git a worker runs in its lane (docs/SECURITY.md).
pub const WORKERS_GIT: &str = "private per lane (.breeze/lanes/<lane>/git, the lane's .git names it while the worker runs): it reads the shared objects and writes only there; what a worker commits or stashes itself is not landed — breeze commits the lane's files";

impl DoctorReport {
    /// The report as the lines `breeze doctor` prints.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("confinement: {}\n", self.kernel));
        if let KernelSupport::Landlock { abi } = self.kernel {
            out.push_str(&format!(
                "  role processes can be confined: a worker writes only its lane, its private git directory, its scratch folder and its own CLI home; no role writes anything under .git (Landlock ABI {abi})\n"
            ));
            let devices: Vec<&str> = breeze_supervise::WRITABLE_DEVICES
                .iter()
                .map(|device| device.trim_start_matches("/dev/"))
                .map(|device| if device == "pts" { "pts/*" } else { device })
                .collect();
            out.push_str(&format!(
                "  /dev: roles write only {}; no block device, no other device\n",
                devices.join(", ")
            ));
            out.push_str(&format!("  /dev/shm: {}\n", self.dev_shm));
            out.push_str(
                "  project commands (worktree.setup, review checks, land.verify, hooks) can be confined too: each writes only its checkout (its lane, or the integration checkout), a scratch folder of its own and sandbox.writable; their git reads the repository and writes nothing under .git\n",
            );
        } else {
            out.push_str(
                "  breeze will only detect what a role changes outside its lane (checked after every role process), not prevent it\n",
            );
        }
        out.push_str(&format!("roles: {}\n", self.isolation));
        out.push_str(&format!("workers' git: {WORKERS_GIT}\n"));
        for (role, argv) in &self.role_commands {
            out.push_str(&format!(
                "roles.{role}: runs `{}` (a file of the checkout is copied into each run at its start; the lane's own is never run)\n",
                argv.join(" ")
            ));
        }
        match &self.network_namespaces {
            Ok(()) => out.push_str("network namespaces: allowed (roles reach only the run's allow-list, through breeze's proxy)\n"),
            Err(why) => out.push_str(&format!("network namespaces: {why}\n")),
        }
        match self.user_namespaces {
            Some(true) => out.push_str("user namespaces: allowed\n"),
            Some(false) => out.push_str("user namespaces: not allowed for unprivileged users\n"),
            None => out.push_str("user namespaces: unknown\n"),
        }
        match &self.containment {
            Some(Ok(containment)) => {
                out.push_str(&format!("this repository: {}\n", containment.summary()));
                if let Some(reads) = &containment.reads {
                    for line in reads.describe() {
                        out.push_str(&format!("reads: {line}\n"));
                    }
                }
            }
            Some(Err(err)) => out.push_str(&format!("this repository: {err}\n")),
            None => out.push_str("this repository: (not inside a git repository)\n"),
        }
        for tool in &self.tools {
            match (&tool.path, &tool.version) {
                (Some(path), Ok(version)) => {
                    out.push_str(&format!("{}: {version} ({})\n", tool.name, path.display()));
                }
                (Some(path), Err(err)) => {
                    out.push_str(&format!("{}: {} — {err}\n", tool.name, path.display()));
                }
                (None, Err(err)) => out.push_str(&format!("{}: {err}\n", tool.name)),
                (None, Ok(_)) => {}
            }
        }
        out
    }
}

/// The preflight's checks as lines under a heading: `✓` passed, `!` a warning, `✗` a
/// problem (with the folders searched for a missing program), `?` not checked, `-` skipped.
pub fn render_preflight(preflight: &crate::preflight::Preflight) -> String {
    use breeze_protocol::CheckOutcome;
    let mut out = match &preflight.root {
        Some(root) => {
            format!("preflight of {} (what `breeze run` checks first):\n", root.display())
        }
        None => "preflight:\n".to_string(),
    };
    for check in &preflight.checks {
        let mark = match check.outcome {
            CheckOutcome::Ok => "✓",
            CheckOutcome::Warning => "!",
            CheckOutcome::Problem => "✗",
            CheckOutcome::NotChecked => "?",
            CheckOutcome::Skipped => "-",
        };
        out.push_str(&format!("  {mark} {}\n", crate::preflight::line(check)));
        if !check.searched.is_empty() {
            out.push_str(&format!("      searched: {}\n", check.searched.join(", ")));
        }
    }
    let problems = preflight.problems().count();
    out.push_str(&match problems {
        0 => "no problems: `breeze run` would start\n".to_string(),
        1 => "1 problem: `breeze run` would stop before creating anything\n".to_string(),
        n => format!("{n} problems: `breeze run` would stop before creating anything\n"),
    });
    out
}

/// The report and the preflight as `breeze-doctor.v1`.
pub fn wire_report(
    report: &DoctorReport,
    preflight: &crate::preflight::Preflight,
) -> breeze_protocol::DoctorReport {
    breeze_protocol::DoctorReport {
        schema_version: breeze_protocol::BreezeDoctorV1,
        ok: preflight.is_ok(),
        confinement: report.kernel.to_string(),
        user_namespaces: report.user_namespaces,
        tools: report
            .tools
            .iter()
            .map(|tool| breeze_protocol::DoctorTool {
                name: tool.name.to_string(),
                path: tool.path.as_ref().map(|path| path.display().to_string()),
                version: tool.version.as_ref().ok().cloned(),
                error: tool.version.as_ref().err().cloned(),
            })
            .collect(),
        repository: preflight.root.as_ref().map(|root| root.display().to_string()),
        checks: preflight.checks.clone(),
        setup: preflight.setup.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_says_where_role_homes_are_and_what_they_get_from_where() {
        let env = vec![
            ("HOME".to_string(), "/home/me".to_string()),
            ("CODEX_HOME".to_string(), "/cfg/codex".to_string()),
        ];
        let text = RoleHomes::of(&env).render();
        assert!(text.starts_with("role homes: each claude and codex role runs in a CLI home of its own, .breeze/runs/<run>/homes/<task>.<role>/"), "{text}");
        assert!(text.contains("copied in before every call: claude: .credentials.json, settings.json, CLAUDE.md from /home/me/.claude, .claude.json from /home/me/.claude.json"), "{text}");
        assert!(text.contains("copied in before every call: codex: auth.json, AGENTS.md, config.toml (without its [projects] trust) from /cfg/codex"), "{text}");
        assert!(text.contains("your own CLI state is read-only to roles"), "{text}");
        assert!(text.contains("main's instead"), "{text}");
        let text = RoleHomes::of(&[]).render();
        assert!(text.contains("claude: no HOME and no CLAUDE_CONFIG_DIR"), "{text}");
    }
}
