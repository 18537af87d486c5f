//! Roles started through a launcher: a fresh process of a small program that sets the role
//! up in its own address space, instead of a fork of the engine.
//!
//! A forked child of the engine carries the engine's memory with it: the kernel copies the
//! page tables of everything the engine holds (the indexes of a 100,000-file repository are
//! a hundred megabytes) for the child, again for the PID namespace's init and again for
//! the role, and the first two stay for as long as the role runs, so every page the engine
//! writes meanwhile is copied on write. The launcher is `posix_spawn`ed instead (no copy of
//! the engine's memory: glibc's `clone(CLONE_VM | CLONE_VFORK)`), `exec`s this very binary
//! (`/proc/self/exe`, [`start_roles_through_this_binary`]), receives the role's setup over
//! a socket, and does exactly what a forked child does (`ChildSetup::apply`: a session of
//! its own, the namespaces, Landlock, the role's `exec`).
//!
//! The launcher's stdin is the engine's socket: first a four-byte length with the
//! descriptors the setup needs (`SCM_RIGHTS`: the role's stdin, the Landlock ruleset, the
//! network namespace's end of its pair), then the plan ([`encode`]). The launcher answers
//! only when the setup or the role's `exec` failed (the errno); an `exec` closes the socket
//! (close-on-exec), which the engine takes as the start, as std's `spawn` does with its
//! own error pipe — so a role started either way is in its session and namespaces when
//! `spawn` returns.
//!
//! A binary that does not call [`start_roles_through_this_binary`] (a test binary of the
//! library, say) starts its roles as forked children, as before.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

use super::fd_passing::{receive_fds, send_fds};
use super::isolation::IsolationPlan;
use super::namespace::NamespacePlan;
use super::network_namespace::NetworkPlan;
use super::{ChildSetup, Exec, Ruleset};

/// The argument that makes a binary calling [`start_roles_through_this_binary`] a launcher.
pub const LAUNCHER_ARG: &str = "--breeze-role-launcher";

/// The launcher's `argv[0]`, as `ps` shows it until the role's `exec`.
const LAUNCHER_NAME: &str = "breeze-role-launcher";

/// The plan's first bytes: what it is and its version.
const MAGIC: &[u8; 5] = b"BRZL1";

/// What the launcher answers when it refuses the plan (no step failed: none was taken).
const PLAN_REFUSED: i32 = libc::EPROTO;

/// A plan longer than this is refused (an environment of megabytes is not a role's).
const MAX_PLAN_BYTES: usize = 64 << 20;

// The plan's flags.
const PID_NAMESPACE: u8 = 1 << 0;
const PID_NAMESPACE_DEV_SHM: u8 = 1 << 1;
const NETWORK: u8 = 1 << 2;
const DEV_SHM_ONLY: u8 = 1 << 3;
const RULESET: u8 = 1 << 4;

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Call first thing in `main` of a binary that runs roles.
///
/// In a process the engine started as a role's launcher (`<binary> --breeze-role-launcher`,
/// its stdin the engine's socket) this sets the role up and `exec`s it: it never returns.
/// Everywhere else it returns at once, having made this binary the launcher of every role
/// this process starts (the default of [`crate::Supervisor::new`]).
pub fn start_roles_through_this_binary() {
    let mut args = std::env::args_os().skip(1);
    if let (Some(first), None) = (args.next(), args.next())
        && first == LAUNCHER_ARG
    {
        serve();
    }
    let this = Path::new("/proc/self/exe");
    let binary = match this.exists() {
        true => Some(this.to_path_buf()),
        false => std::env::current_exe().ok(),
    };
    if let Some(binary) = binary {
        let _ = LAUNCHER.set(binary);
    }
}

/// The launcher [`start_roles_through_this_binary`] registered, if any.
pub(crate) fn registered_launcher() -> Option<PathBuf> {
    LAUNCHER.get().cloned()
}

/// A role's start through a launcher, prepared in the engine.
#[derive(Debug)]
pub(crate) struct Launch {
    setup: ChildSetup,
    /// What the role reads as stdin (`/dev/null` or a pipe's reading end).
    stdin: OwnedFd,
    engine_end: UnixStream,
    /// The launcher's stdin, until the spawn.
    launcher_end: Option<OwnedFd>,
}

/// The engine's end of a launched role's stdin, when it has one to feed.
pub(crate) type LaunchedStdin = Option<pipe::Sender>;

impl Launch {
    /// Prepares `setup` (a role's: [`ChildSetup::launchable`]) for a launcher; with
    /// `stdin_pipe`, the role's stdin is a pipe whose writing end is returned, else
    /// `/dev/null`.
    pub(crate) fn prepare(
        setup: ChildSetup,
        stdin_pipe: bool,
    ) -> io::Result<(Launch, LaunchedStdin)> {
        let (stdin, writer): (OwnedFd, _) = if stdin_pipe {
            let (reader, writer) = io::pipe()?;
            (reader.into(), Some(pipe::Sender::from_owned_fd(writer.into())?))
        } else {
            (std::fs::File::open("/dev/null")?.into(), None)
        };
        let (engine_end, launcher_end) = UnixStream::pair()?;
        let launch = Launch { setup, stdin, engine_end, launcher_end: Some(launcher_end.into()) };
        Ok((launch, writer))
    }

    /// The launcher's command (`launcher` `--breeze-role-launcher`, no environment, its
    /// stdin the engine's socket); the caller sets the directory, stdout and stderr.
    pub(crate) fn command(&mut self, launcher: &Path) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(launcher);
        command.arg0(LAUNCHER_NAME).arg(LAUNCHER_ARG).env_clear();
        if let Some(end) = self.launcher_end.take() {
            command.stdin(end);
        }
        command
    }

    /// Sends the launcher (just spawned, and its command dropped: the engine must hold no
    /// copy of the launcher's end) the plan, and waits until the role's `exec`: `Err` with
    /// the errno of the setup or the `exec` that failed.
    pub(crate) async fn hand_over(self) -> io::Result<()> {
        let Launch { setup, stdin, engine_end, launcher_end } = self;
        drop(launcher_end);
        let plan = encode(&setup)?;
        let mut fds = vec![stdin.as_raw_fd()];
        if let Some(ruleset) = &setup.ruleset {
            fds.push(ruleset.fd.as_raw_fd());
        }
        if let Some(network) = setup.pid_namespace.as_ref().and_then(|p| p.network.as_ref()) {
            fds.push(network.parts().1.as_raw_fd());
        }
        // Four bytes into an empty socket buffer: never blocks.
        send_fds(engine_end.as_raw_fd(), &(plan.len() as u32).to_le_bytes(), &fds)
            .map_err(io::Error::from_raw_os_error)?;
        // The launcher holds its copies now; the engine's close with the setup (a network
        // pair then tells the engine when the namespace's end closes).
        drop((setup, stdin));
        engine_end.set_nonblocking(true)?;
        let mut socket = tokio::net::UnixStream::from_std(engine_end)?;
        // A launcher that died early makes the write fail; its report (or its end) says why.
        let written = socket.write_all(&plan).await;
        let mut report = Vec::new();
        (&mut socket).take(4).read_to_end(&mut report).await?;
        match report.as_slice() {
            [a, b, c, d] => match i32::from_le_bytes([*a, *b, *c, *d]) {
                PLAN_REFUSED => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the role's launcher refused its plan (a breeze bug: please report it)",
                )),
                errno => Err(io::Error::from_raw_os_error(errno)),
            },
            [] => written,
            _ => Err(io::Error::new(io::ErrorKind::InvalidData, "the role's launcher broke off")),
        }
    }
}

/// The plan of `setup`: what each descriptor sent with it is, and the role's `exec`.
fn encode(setup: &ChildSetup) -> io::Result<Vec<u8>> {
    let mut plan = MAGIC.to_vec();
    let mut flags = 0;
    let mut ports: &[u16] = &[];
    if let Some(isolation) = &setup.pid_namespace {
        flags |= PID_NAMESPACE;
        if isolation.dev_shm() {
            flags |= PID_NAMESPACE_DEV_SHM;
        }
        if let Some(network) = &isolation.network {
            flags |= NETWORK;
            ports = network.parts().0;
        }
    }
    if setup.dev_shm_only.is_some() {
        flags |= DEV_SHM_ONLY;
    }
    if setup.ruleset.is_some() {
        flags |= RULESET;
    }
    plan.push(flags);
    plan.extend(setup.ruleset.as_ref().map_or(0, |r| r.handled).to_le_bytes());
    plan.push(ports.len() as u8);
    for port in ports {
        plan.extend(port.to_le_bytes());
    }
    let exec = setup.exec.as_ref().ok_or_else(|| io::Error::other("not a role's setup"))?;
    let (program, args, vars) = exec.parts();
    put_bytes(&mut plan, program.to_bytes());
    for list in [args, vars] {
        plan.extend((list.len() as u32).to_le_bytes());
        for string in list {
            put_bytes(&mut plan, string.to_bytes());
        }
    }
    Ok(plan)
}

fn put_bytes(plan: &mut Vec<u8>, bytes: &[u8]) {
    plan.extend((bytes.len() as u32).to_le_bytes());
    plan.extend(bytes);
}

/// Reads a plan front to back; every read is checked.
struct PlanReader<'a>(&'a [u8]);

impl PlanReader<'_> {
    fn take(&mut self, count: usize) -> io::Result<&[u8]> {
        if self.0.len() < count {
            return Err(bad_plan("it ends early"));
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Ok(taken)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    fn c_string(&mut self) -> io::Result<CString> {
        let length = self.u32()? as usize;
        CString::new(self.take(length)?).map_err(|_| bad_plan("a string holds a NUL byte"))
    }

    fn c_strings(&mut self) -> io::Result<Vec<CString>> {
        let count = self.u32()? as usize;
        // Each string takes at least its four-byte length: a count beyond that is a lie.
        if count > self.0.len() / 4 {
            return Err(bad_plan("a list is longer than the plan"));
        }
        (0..count).map(|_| self.c_string()).collect()
    }
}

fn bad_plan(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the role's plan is malformed: {what}"))
}

/// The setup `plan` describes, with the descriptors sent with it (in the engine's order:
/// the role's stdin first, which the caller has taken).
fn decode(plan: &[u8], mut fds: impl Iterator<Item = OwnedFd>) -> io::Result<ChildSetup> {
    let mut reader = PlanReader(plan);
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(bad_plan("not a plan of this version of breeze"));
    }
    let flags = reader.u8()?;
    let handled = u64::from_le_bytes(reader.take(8)?.try_into().expect("eight bytes"));
    let ports = (0..reader.u8()?)
        .map(|_| Ok(u16::from_le_bytes(reader.take(2)?.try_into().expect("two bytes"))))
        .collect::<io::Result<Vec<u16>>>()?;
    let program = reader.c_string()?;
    let args = reader.c_strings()?;
    let vars = reader.c_strings()?;
    if args.is_empty() || !reader.0.is_empty() {
        return Err(bad_plan("no argv[0], or bytes after the environment"));
    }
    let mut next_fd = |what: &str| fds.next().ok_or_else(|| bad_plan(what));
    let ruleset = match flags & RULESET {
        0 => None,
        _ => Some(Ruleset { fd: next_fd("no ruleset was sent")?, handled }),
    };
    let network = match flags & NETWORK {
        0 => None,
        _ => Some(NetworkPlan::received(&ports, next_fd("no network pair was sent")?)),
    };
    let pid_namespace = (flags & PID_NAMESPACE != 0)
        .then(|| IsolationPlan::new(flags & PID_NAMESPACE_DEV_SHM != 0, network));
    let dev_shm_only = (flags & DEV_SHM_ONLY != 0).then(NamespacePlan::for_this_process);
    let exec = Some(Exec::from_parts(program, args, vars));
    Ok(ChildSetup { own_session: true, pid_namespace, dev_shm_only, ruleset, exec })
}

/// The launcher: receives the setup on stdin, applies it, and reports what failed.
fn serve() -> ! {
    let code = match take_control() {
        Err(err) => {
            eprintln!(
                "breeze: {LAUNCHER_ARG} is how breeze's engine starts a role process, over a socket it passes as stdin; it cannot run on its own: {err}"
            );
            2
        }
        Ok(mut control) => {
            let (errno, code) = match receive(&control) {
                // Returns only with what failed; the role's exec closed `control` otherwise.
                Ok(setup) => {
                    let failure =
                        setup.apply().err().unwrap_or_else(|| io::Error::other("no exec"));
                    (failure.raw_os_error().unwrap_or(libc::EIO), 127)
                }
                Err(err) => {
                    eprintln!("breeze: the role's launcher refused what the engine sent: {err}");
                    (PLAN_REFUSED, 2)
                }
            };
            let _ = io::Write::write_all(&mut control, &errno.to_le_bytes());
            code
        }
    };
    // SAFETY: ends the launcher without running anything else.
    unsafe { libc::_exit(code) }
}

/// The socket on stdin, moved out of the way (close-on-exec, above fd 2).
fn take_control() -> io::Result<UnixStream> {
    // SAFETY: fstat writes into a zeroed stat buffer.
    let is_socket = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(0, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFSOCK
    };
    if !is_socket {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "stdin is not a socket"));
    }
    // SAFETY: fcntl takes numbers only; F_DUPFD_CLOEXEC returns a new descriptor.
    let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just made, and is owned once here.
    Ok(UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The plan and descriptors from `control`, the role's stdin made fd 0.
fn receive(control: &UnixStream) -> io::Result<ChildSetup> {
    let mut length = [0u8; 4];
    let (received, fds) = receive_fds(control.as_raw_fd(), &mut length)?;
    if received != length.len() {
        return Err(bad_plan("no length"));
    }
    let length = u32::from_le_bytes(length) as usize;
    if length > MAX_PLAN_BYTES {
        return Err(bad_plan("longer than 64 MiB"));
    }
    let mut plan = vec![0u8; length];
    (&*control).read_exact(&mut plan)?;
    let mut fds = fds.into_iter();
    let stdin = fds.next().ok_or_else(|| bad_plan("no stdin was sent"))?;
    // SAFETY: dup2 onto fd 0 (the socket's copy, replaced) with a descriptor we own; the
    // new fd 0 is not close-on-exec, so the role reads it.
    if unsafe { libc::dup2(stdin.as_raw_fd(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    drop(stdin);
    decode(&plan, fds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn role_setup() -> ChildSetup {
        let exec = Exec::new(Path::new("/bin/echo"), ["echo", "a b"], [("HOME", "/h"), ("X", "1")])
            .unwrap();
        ChildSetup {
            own_session: true,
            pid_namespace: Some(IsolationPlan::new(true, None)),
            dev_shm_only: None,
            ruleset: None,
            exec: Some(exec),
        }
    }

    #[test]
    fn a_plan_reads_back_as_the_setup_it_was_made_from() {
        let setup = role_setup();
        let plan = encode(&setup).unwrap();
        let back = decode(&plan, std::iter::empty()).unwrap();
        assert!(back.own_session && back.ruleset.is_none() && back.dev_shm_only.is_none());
        let isolation = back.pid_namespace.as_ref().unwrap();
        assert!(isolation.dev_shm() && isolation.network.is_none());
        assert_eq!(back.exec.as_ref().unwrap().parts().0, c"/bin/echo");
        let (_, args, vars) = back.exec.as_ref().unwrap().parts();
        assert_eq!(args, [c"echo".to_owned(), c"a b".to_owned()]);
        assert_eq!(vars, [c"HOME=/h".to_owned(), c"X=1".to_owned()]);
    }

    #[test]
    fn a_damaged_plan_is_refused_not_guessed() {
        let plan = encode(&role_setup()).unwrap();
        for cut in [0, 3, MAGIC.len() + 1, plan.len() - 1] {
            let err = decode(&plan[..cut], std::iter::empty()).expect_err("refused");
            assert!(err.to_string().contains("malformed"), "{cut}: {err}");
        }
        let mut longer = plan.clone();
        longer.push(0);
        assert!(decode(&longer, std::iter::empty()).is_err());
        let mut lying = plan.clone();
        lying[MAGIC.len()] |= RULESET; // a ruleset named, none sent
        let err = decode(&lying, std::iter::empty()).expect_err("no ruleset was sent");
        assert!(err.to_string().contains("no ruleset"), "{err}");
    }
}
