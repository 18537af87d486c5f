//! A process a person works in, in their own terminal (`breeze attach`): it inherits stdin,
//! stdout and stderr and stays in the caller's process group — the terminal's foreground —
//! so job control, Ctrl-C and full-screen programs behave as if the person had started it.
//! It gets exactly the environment it is given and, when asked, the same Landlock
//! confinement as a role, except that the terminal devices ([`crate::TERMINAL_DEVICES`])
//! stay writable: the terminal is the person's own. Nothing else of a role's supervision
//! applies: no session or PID namespace of its own, no timeout, no stall clock, no captured
//! output — the person is there.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitStatus;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};

use crate::error::SpawnError;
use crate::resolve::resolve_program;
use crate::sandbox::{ChildSetup, Confinement};

/// What to run in the person's terminal.
#[derive(Debug, Clone)]
pub struct InteractiveSpec {
    /// Program and arguments; the program is looked up in `env`'s `PATH`.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The whole environment.
    pub env: Vec<(String, String)>,
    /// What the kernel lets it write (`None`: everything the person may).
    pub confinement: Option<Confinement>,
}

/// Runs `spec` in this process's terminal until it exits, and gives the terminal back.
///
/// While it runs, SIGINT and SIGQUIT typed at the terminal reach it (and its children) but
/// not the caller, which goes on once it exits. The caller's own handlers are untouched
/// afterwards except for those two signals: they stay caught (and dropped) for the rest of
/// the process — the caller is expected to finish soon after. If the program left another
/// process group in the terminal's foreground (a shell killed before it could give the
/// terminal back), the caller's group takes it back.
pub async fn run_interactive(spec: InteractiveSpec) -> Result<ExitStatus, SpawnError> {
    let Some(name) = spec.argv.first().cloned() else { return Err(SpawnError::EmptyCommand) };
    let program = resolve_program(&name, &spec.cwd, &spec.env)?;
    let setup = ChildSetup::for_person(spec.confinement.as_ref())
        .map_err(|source| SpawnError::Sandbox { program: name.clone(), source })?;
    // Caught here, so the program (whose handlers exec resets) gets them and the caller
    // does not die of a Ctrl-C meant for it.
    let _interrupts = [SignalKind::interrupt(), SignalKind::quit()]
        .map(|kind| signal(kind).map_err(|source| exec_error(&name, &program, source)));
    let mut command = Command::new(&program);
    command
        .arg0(&name)
        .args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    setup.install(&mut command);
    let terminal_owner = foreground_group();
    let mut child = command.spawn().map_err(|source| exec_error(&name, &program, source))?;
    let status = child.wait().await.map_err(|source| exec_error(&name, &program, source));
    if let Some(owner) = terminal_owner {
        take_terminal_back(owner);
    }
    status
}

fn exec_error(name: &str, program: &std::path::Path, source: std::io::Error) -> SpawnError {
    SpawnError::Exec { program: name.to_owned(), path: program.to_path_buf(), source }
}

/// The process group in the foreground of this process's terminal (on stdin), when it is
/// this process's own.
fn foreground_group() -> Option<nix::unistd::Pid> {
    let stdin = std::io::stdin();
    let owner = tcgetpgrp(stdin.as_fd()).ok()?;
    (owner == getpgrp()).then_some(owner)
}

/// Puts `group` back in the terminal's foreground if another took it. From the background
/// this needs SIGTTOU held off, or the kernel would stop this process for trying.
fn take_terminal_back(group: nix::unistd::Pid) {
    let stdin = std::io::stdin();
    if tcgetpgrp(stdin.as_fd()).is_ok_and(|now| now == group) {
        return;
    }
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut before = SigSet::empty();
    if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut before)).is_err() {
        return;
    }
    if let Err(err) = tcsetpgrp(stdin.as_fd(), group) {
        tracing::warn!("cannot take the terminal back: {err}");
    }
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
}
