//! A role in a PID namespace of its own, so that everything it starts ends with it, and
//! away from the person's terminal.
//!
//! Between `fork` and `exec` the child the engine spawned (P0, the process group leader
//! the supervisor knows) makes three processes of itself:
//!
//! - **P0** stays in the engine's namespaces. It forks P1 into new user, mount and PID
//!   namespaces, closes every descriptor (so `spawn` returns: std's error channel is
//!   closed by the last process that holds it, P2 at its `exec`), holds off SIGTERM,
//!   SIGINT and SIGHUP, and waits for the role's exit status, which P1 sends it. Then it
//!   ends the same way: the same exit code, or the same signal — once P1 is gone too when
//!   nothing else was left, so that the supervisor finds the group empty when it sees its
//!   leader end. P0 never returns.
//! - **P1** is PID 1 of the namespace. It mounts a fresh `/proc` (only the namespace's
//!   processes), a private `/dev/pts` and `/dev/ptmx` (pseudo-terminals of its own), and a
//!   private `/dev/shm` when asked; forks P2 into one more user and mount namespace, which
//!   locks those mounts (a role running as root cannot unmount them to see the machine's);
//!   then reaps every process orphaned in the namespace, sends P2's exit status to P0 (and
//!   whether anything else is still running) and exits once no process is left. P1 never
//!   returns.
//! - **P2** returns from [`isolate`] and becomes the role (Landlock, then `exec`).
//!
//! When P1 ends — on its own, or by the SIGKILL the supervisor sends to the group — the
//! kernel kills every process left in the namespace: double-forked, `setsid`, with an
//! empty environment or not. Signals reach P2 and its group as before (P1, the
//! namespace's init, takes none it has no handler for, except SIGKILL), and P0 ends as P2
//! did, so the supervisor sees the same endings. P1 stays in the group while anything of
//! the role lives, so what the role leaves behind is ended with the group, as before.
//!
//! Everything here runs in the forked child: raw system calls, no allocation, strings
//! formatted before the fork.

#![allow(unsafe_code)]

use std::fmt;
use std::io;
use std::sync::OnceLock;

use super::namespace::{
    Forked, NamespacePlan, NamespaceStep, close, errno, fork_into_namespaces, in_probe_child,
    make_mounts_private, mount_own_proc, mount_private_dev_shm, mount_private_devpts, pipe,
    read_fully, wait_for,
};
use super::network_namespace::{NetworkPlan, open_network};

/// How a role process is kept apart from the person's terminal, and from what it leaves
/// behind. [`crate::run_interactive`] (a person's own session) gets neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// A session of its own (no controlling terminal) and, where [`isolation_support`]
    /// says the machine allows it, a PID namespace of its own: a fresh `/proc`, private
    /// pseudo-terminals, and everything it starts ends with it. If the namespace cannot be
    /// made for one process, that process runs with its session only (never fails for it).
    #[default]
    PidNamespaceWherePossible,
    /// A session of its own only, in the engine's PID namespace.
    SessionOnly,
}

/// What this machine gives role processes besides their own session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsolationSupport {
    /// Roles run in a PID namespace of their own.
    PidNamespace {
        /// Why a role sees every process of the machine in `/proc` (`None`: only its own).
        proc_limit: Option<String>,
        /// Why a role gets no pseudo-terminals of its own (`None`: a private `/dev/pts`).
        pts_limit: Option<String>,
        /// Why a role running as root could unmount what was mounted for it (`None`: the
        /// mounts are locked).
        lock_limit: Option<String>,
    },
    /// Roles run in a session of their own, in the engine's PID namespace.
    SessionOnly {
        /// A sentence naming the cause.
        reason: String,
    },
}

impl IsolationSupport {
    /// Whether roles run in PID namespaces of their own.
    pub fn is_pid_namespace(&self) -> bool {
        matches!(self, Self::PidNamespace { .. })
    }
}

impl fmt::Display for IsolationSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PidNamespace { proc_limit, pts_limit, lock_limit } => {
                f.write_str(
                    "roles run in their own PID namespace: everything a role starts ends with it; \
                     no role has a controlling terminal, each sees only its own processes in /proc \
                     and gets pseudo-terminals of its own (a private /dev/pts), never the person's",
                )?;
                for limit in [proc_limit, pts_limit, lock_limit].into_iter().flatten() {
                    write!(f, "; but {limit}")?;
                }
                Ok(())
            }
            Self::SessionOnly { reason } => write!(
                f,
                "roles run in a session of their own (no controlling terminal) but not in a PID \
                 namespace: {reason}; what a role leaves behind is ended by its process group or \
                 its environment marker, so a process that leaves both (setsid and an empty \
                 environment) can outlive it, and confined roles may not write /dev/tty, /dev/ptmx \
                 or /dev/pts (no pseudo-terminals)"
            ),
        }
    }
}

/// Whether role processes can have PID namespaces of their own here: probed once per
/// process by a forked child that does what a role's child does.
pub fn isolation_support() -> IsolationSupport {
    static SUPPORT: OnceLock<IsolationSupport> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

/// What a role's child needs to isolate itself, prepared before the fork.
#[derive(Debug)]
pub(super) struct IsolationPlan {
    ids: NamespacePlan,
    /// Mount a private tmpfs on `/dev/shm`.
    dev_shm: bool,
    /// A network namespace of its own too, with these listeners (module
    /// `network_namespace`).
    pub(super) network: Option<NetworkPlan>,
}

impl IsolationPlan {
    pub(super) fn new(dev_shm: bool, network: Option<NetworkPlan>) -> IsolationPlan {
        IsolationPlan { ids: NamespacePlan::for_this_process(), dev_shm, network }
    }

    /// Whether a private `/dev/shm` is asked for.
    pub(super) fn dev_shm(&self) -> bool {
        self.dev_shm
    }
}

/// What holds for the role's process in its namespace: for each mount, 0 where it was
/// made, else the errno of the failure.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Isolated {
    pub(super) own_proc: i32,
    pub(super) private_pts: i32,
    /// [`NOT_ASKED`] when no private `/dev/shm` was asked for.
    pub(super) dev_shm: i32,
    pub(super) locked: i32,
    /// The network namespace's loopback and listeners (0 also when none was asked for).
    pub(super) network: i32,
}

/// [`Isolated::dev_shm`] when the plan did not ask for it.
const NOT_ASKED: i32 = -1;

fn outcome(result: Result<(), i32>) -> i32 {
    result.err().unwrap_or(0)
}

/// Puts the calling child (P0, a forked single-threaded process) and what it starts in a
/// PID namespace of its own; see the module documentation. Returns only in the role's
/// process, with what holds there — or `Err` in the caller when the namespaces could not
/// be made, which then is the role itself, in its own namespaces as before.
pub(super) fn isolate(plan: &IsolationPlan) -> Result<Isolated, (NamespaceStep, i32)> {
    let [status_read, status_write] = pipe().map_err(|e| (NamespaceStep::Create, e))?;
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if plan.network.is_some() {
        flags |= libc::CLONE_NEWNET;
    }
    match fork_into_namespaces(flags, &plan.ids) {
        Ok(Forked::Parent(init)) => {
            close(status_write);
            end_as_the_role(init, status_read)
        }
        Ok(Forked::Child) => close(status_read),
        Err(failure) => {
            close(status_read);
            close(status_write);
            return Err(failure);
        }
    }
    let mut isolated = mount_namespace_files(plan);
    if let Some(network) = &plan.network {
        // A failure leaves the namespace without a way out, which is all it may have.
        isolated.network = outcome(open_network(network));
    }
    // A second user namespace locks the mounts above together with what they cover. It
    // needs this namespace's /proc to find the new process.
    let role = match isolated.own_proc {
        0 => fork_into_namespaces(libc::CLONE_NEWUSER | libc::CLONE_NEWNS, &plan.ids).or_else(
            |(_, failure)| {
                isolated.locked = failure;
                plain_fork()
            },
        ),
        failure => {
            isolated.locked = failure;
            plain_fork()
        }
    };
    match role {
        Ok(Forked::Parent(role)) => be_init(role, status_write),
        // No process could be made for the role: P1 is the role itself.
        Ok(Forked::Child) | Err(_) => close(status_write),
    }
    Ok(isolated)
}

/// P1's mounts: a fresh `/proc`, a private `/dev/pts`, and `/dev/shm` when asked.
fn mount_namespace_files(plan: &IsolationPlan) -> Isolated {
    if let Err(failure) = make_mounts_private() {
        let dev_shm = if plan.dev_shm { failure } else { NOT_ASKED };
        return Isolated {
            own_proc: failure,
            private_pts: failure,
            dev_shm,
            locked: failure,
            network: 0,
        };
    }
    Isolated {
        own_proc: outcome(mount_own_proc()),
        private_pts: outcome(mount_private_devpts()),
        dev_shm: if plan.dev_shm { outcome(mount_private_dev_shm(&plan.ids)) } else { NOT_ASKED },
        locked: 0,
        network: 0,
    }
}

/// `fork` as a raw system call, like [`fork_into_namespaces`] without namespaces.
fn plain_fork() -> Result<Forked, (NamespaceStep, i32)> {
    // SAFETY: clone with only the exit signal and no new stack is fork.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as usize, 0, 0, 0, 0) };
    match pid {
        0 => Ok(Forked::Child),
        pid if pid > 0 => Ok(Forked::Parent(pid as libc::pid_t)),
        _ => Err((NamespaceStep::Create, errno())),
    }
}

/// Closes every descriptor but `keep`. Allocation-free.
fn close_all_but(keep: libc::c_int) {
    let close_range = |first: libc::c_uint, last: libc::c_uint| {
        // SAFETY: close_range takes numbers only.
        unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) == 0 }
    };
    let keep = keep as libc::c_uint;
    let below = keep == 0 || close_range(0, keep - 1);
    if below && close_range(keep + 1, libc::c_uint::MAX) {
        return;
    }
    // Kernels before 5.9 have no close_range.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid out-pointer.
    let open_max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur.min(1 << 16) as libc::c_uint,
        _ => 1024,
    };
    for fd in (0..open_max).filter(|&fd| fd != keep) {
        close(fd as libc::c_int);
    }
}

/// What P1 sends P0 once the role ended: its wait status, and whether P1 is about to exit
/// (nothing else is left in the namespace).
const STATUS_REPORT_BYTES: usize = 5;

/// The namespace's init (P1): reaps every process of the namespace, sends the role's
/// wait status to P0 on `report` as soon as it has it, and exits when nothing is left —
/// which the kernel makes the end of everything in the namespace.
fn be_init(role: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(report);
    let mut role_status = None;
    let nothing_left = loop {
        let mut status = 0;
        // Blocking until the role ended; then only a look, so that the report can say
        // whether anything outlived it.
        let options = if role_status.is_some() { libc::WNOHANG } else { 0 };
        // SAFETY: `status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, options) };
        match pid {
            _ if pid == role => role_status = Some(status),
            1.. => {}                         // an orphan of the namespace, reaped
            0 => break false,                 // others still run
            _ if errno() == libc::EINTR => {} // interrupted: again
            _ => break true,                  // ECHILD: the namespace is empty
        }
    };
    if let Some(status) = role_status {
        let mut bytes = [0u8; STATUS_REPORT_BYTES];
        bytes[..4].copy_from_slice(&status.to_ne_bytes());
        bytes[4] = nothing_left as u8;
        // SAFETY: a valid buffer; a P0 already gone makes this fail, which changes nothing.
        unsafe { libc::write(report, bytes.as_ptr().cast(), bytes.len()) };
    }
    close(report);
    if !nothing_left {
        wait_for_all();
    }
    // SAFETY: ends P1 without running anything of the engine's.
    unsafe { libc::_exit(0) }
}

/// Reaps children until there are none left.
fn wait_for_all() {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        if unsafe { libc::waitpid(-1, &mut status, 0) } < 0 && errno() != libc::EINTR {
            return;
        }
    }
}

/// P0: waits for the role's wait status from P1 on `report` (or, if P1 dies first, for
/// P1's own) and ends the same way — after P1, when nothing else was left, so that the
/// group is empty when the supervisor sees its leader end; else at once, leaving P1 and
/// what the role left to the supervisor's leak handling.
fn end_as_the_role(init: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(report);
    // Signals to the group are for the role; P0 ends only as the role did.
    let held = signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]);
    // SAFETY: a valid signal set; the old mask is not wanted.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &held, std::ptr::null_mut()) };
    let mut bytes = [0u8; STATUS_REPORT_BYTES];
    let status = match read_fully(report, &mut bytes) {
        STATUS_REPORT_BYTES => {
            if bytes[4] == 1 {
                let _ = wait_for(init);
            }
            libc::c_int::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
        }
        _ => wait_for(init).unwrap_or(1 << 8),
    };
    end_with(status)
}

fn signal_set(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for &signal in signals {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Exits with wait status `status`: its exit code, or death by its signal (without a core
/// dump; 128 + the signal should the signal not end the process).
fn end_with(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain system calls on valid, initialised arguments.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let only = signal_set(&[signal]);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal)
        }
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 1 };
    // SAFETY: ends P0 without running anything of the engine's.
    unsafe { libc::_exit(code) }
}

/// The report of the probe's child: what failed, or what holds in the namespace.
const REPORT_FAILED: u8 = 1;
const REPORT_ISOLATED: u8 = 2;
const REPORT_BYTES: usize = 13;

fn probe() -> IsolationSupport {
    if !cfg!(target_os = "linux") {
        let os = std::env::consts::OS;
        return IsolationSupport::SessionOnly {
            reason: format!("PID namespaces are a Linux feature and this is {os}"),
        };
    }
    let plan = IsolationPlan::new(false, None);
    let probed = in_probe_child(|report_fd| {
        let mut report = [0u8; REPORT_BYTES];
        // SAFETY: as a role's child does first; it fails only for a group leader.
        unsafe { libc::setsid() };
        let code = match isolate(&plan) {
            Err((step, failure)) => {
                report[0] = REPORT_FAILED;
                report[1] = step as u8;
                report[2..6].copy_from_slice(&failure.to_ne_bytes());
                1
            }
            Ok(isolated) => {
                report[0] = REPORT_ISOLATED;
                report[1..5].copy_from_slice(&isolated.own_proc.to_ne_bytes());
                report[5..9].copy_from_slice(&isolated.private_pts.to_ne_bytes());
                report[9..13].copy_from_slice(&isolated.locked.to_ne_bytes());
                0
            }
        };
        // SAFETY: `report` is valid for its length; the descriptor is open.
        unsafe { libc::write(report_fd, report.as_ptr().cast(), report.len()) };
        code
    });
    match probed {
        Ok((_, report)) => read_report(&report),
        Err(err) => IsolationSupport::SessionOnly { reason: format!("probing failed: {err}") },
    }
}

fn read_report(report: &[u8]) -> IsolationSupport {
    let number = |at: usize| {
        i32::from_ne_bytes([report[at], report[at + 1], report[at + 2], report[at + 3]])
    };
    let failed = |errno: i32, what: &str| {
        (errno != 0).then(|| format!("{what} ({})", io::Error::from_raw_os_error(errno)))
    };
    match report.first() {
        Some(&REPORT_ISOLATED) if report.len() == REPORT_BYTES => IsolationSupport::PidNamespace {
            proc_limit: failed(
                number(1),
                "a fresh /proc could not be mounted, so a role sees every process in /proc",
            ),
            pts_limit: failed(
                number(5),
                "a private /dev/pts could not be mounted, so confined roles get no pseudo-terminals",
            ),
            lock_limit: failed(
                number(9),
                "the role's mounts could not be locked, so an unconfined role running as root could unmount them",
            ),
        },
        Some(&REPORT_FAILED) if report.len() == REPORT_BYTES => {
            let reason = match NamespaceStep::from_u8(report[1]) {
                Some(step) => step.reason(
                    io::Error::from_raw_os_error(number(2)),
                    "user, mount and PID namespaces",
                ),
                None => "probing failed: an unknown step failed".into(),
            };
            IsolationSupport::SessionOnly { reason }
        }
        _ => IsolationSupport::SessionOnly {
            reason: "probing failed: the probe process reported nothing".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_names_its_cause_or_what_holds() {
        let support = isolation_support();
        let text = support.to_string();
        match &support {
            IsolationSupport::PidNamespace { .. } => {
                assert!(text.contains("everything a role starts ends with it"), "{text}");
            }
            IsolationSupport::SessionOnly { reason } => {
                assert!(!reason.is_empty() && text.contains(reason.as_str()), "{text}");
            }
        }
    }

    #[test]
    fn a_failed_step_reads_as_its_cause() {
        let mut report = [0u8; REPORT_BYTES];
        report[0] = REPORT_FAILED;
        report[1] = NamespaceStep::Create as u8;
        report[2..6].copy_from_slice(&libc::EPERM.to_ne_bytes());
        let support = read_report(&report);
        let text = support.to_string();
        assert!(!support.is_pid_namespace());
        assert!(text.contains("not in a PID namespace"), "{text}");
        assert!(text.contains("user.max_user_namespaces"), "{text}");
        assert!(text.contains("Operation not permitted"), "{text}");
        assert!(text.contains("/dev/pts"), "{text}");
    }

    #[test]
    fn a_mount_that_failed_is_named_with_its_consequence() {
        let mut report = [0u8; REPORT_BYTES];
        report[0] = REPORT_ISOLATED;
        report[1..5].copy_from_slice(&libc::EPERM.to_ne_bytes());
        let support = read_report(&report);
        let IsolationSupport::PidNamespace { proc_limit, pts_limit, lock_limit } = &support else {
            panic!("{support:?}")
        };
        assert!(proc_limit.as_deref().is_some_and(|l| l.contains("sees every process")));
        assert_eq!((pts_limit, lock_limit), (&None, &None));
        assert!(support.to_string().contains("; but a fresh /proc could not be mounted"));
        assert!(read_report(&[]).to_string().contains("reported nothing"));
    }
}
