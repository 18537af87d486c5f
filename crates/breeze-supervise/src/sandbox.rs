//! Kernel confinement and isolation of role processes — the crate's only `unsafe` code
//! (here and in its two submodules).
//!
//! A [`Confinement`] names what a role may write; everything else on the machine stays
//! readable and executable but not writable. Of `/dev` only the harmless devices
//! ([`WRITABLE_DEVICES`]) are writable — plus, in a role's own PID namespace, its private
//! pseudo-terminals — and `/dev/shm` is a private tmpfs of the role's own where the machine
//! allows unprivileged user and mount namespaces ([`dev_shm_support`]), else not writable.
//! The ruleset is built in the engine (opening each allowed path with `O_PATH`), and the
//! child enforces it on itself between `fork` and `exec` with raw system calls that
//! allocate nothing and are async-signal-safe (strings formatted before the fork), then
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`. The engine itself is never
//! restricted. The domain is inherited by every descendant of the role and can only be
//! narrowed further (an agent CLI's own sandbox stacks on top of it).
//!
//! Whether confined or not, a role's child first leaves the engine's session (`setsid`: no
//! controlling terminal) and, where [`isolation_support`] says so, puts itself in a PID
//! namespace of its own ([`Isolation`], module `isolation`), so that everything it starts
//! ends with it. The namespaces themselves are made in module `namespace`.
//!
//! Landlock is an allow-list: a path under an allowed folder cannot be taken back, so a
//! role gets its own scratch folder rather than `/tmp` as a whole.

#![allow(unsafe_code)]

mod fd_passing;
mod isolation;
pub(crate) mod launcher;
mod namespace;
mod network_namespace;

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use isolation::{Isolation, IsolationSupport, isolation_support};
pub use namespace::{DevShmSupport, PRIVATE_DEV_SHM_BYTES, dev_shm_support};
pub(crate) use network_namespace::ListenerHandover;
pub use network_namespace::network_namespace_support;

use isolation::{IsolationPlan, isolate};
use namespace::{NamespacePlan, enter_private_dev_shm, errno};
use network_namespace::NetworkPlan;

// Access rights of `landlock_path_beneath_attr.allowed_access` (linux/landlock.h).
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_BLOCK: u64 = 1 << 11;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;

/// Rights that apply to a regular file (a rule on a file may hold only these).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
/// What every role keeps on the whole file system.
const READ_RIGHTS: u64 = EXECUTE | READ_FILE | READ_DIR;
/// Everything but making device nodes: what a role may do in a folder it may write. A
/// role running as root could otherwise `mknod` a disk's block device in its lane and
/// write the disk through it.
const NO_DEVICE_NODES: u64 = !(MAKE_CHAR | MAKE_BLOCK);
/// What a role may do with the devices of [`WRITABLE_DEVICES`]: open them for reading and
/// writing (`> /dev/null` truncates) and, from ABI 5, use their ioctls (terminals).
const DEVICE_RIGHTS: u64 = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV;

/// The devices a confined role may write, where they exist: everything else under `/dev`
/// (block devices, other character devices, the machine's `/dev/shm`, every terminal) is
/// read-only to it. `/dev/fd` and `/dev/stdin|stdout|stderr` need no rule: they are links
/// into `/proc/self/fd`, and Landlock lets a process reopen its own pipes and sockets there.
/// In a PID namespace of its own a role also gets its private pseudo-terminals
/// (of [`TERMINAL_DEVICES`]).
pub const WRITABLE_DEVICES: [&str; 5] =
    ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The terminal devices: writable to a person's own session ([`crate::run_interactive`]),
/// whose terminal they are; to a confined role only in its own PID namespace, where
/// `/dev/pts` and `/dev/ptmx` are a private instance (pseudo-terminals of its own, never
/// the person's) and `/dev/tty` can only be one of those (a role has no controlling
/// terminal but one it made itself). Elsewhere a confined role may write none of them.
pub const TERMINAL_DEVICES: [&str; 3] = ["/dev/tty", "/dev/ptmx", "/dev/pts"];

/// [`TERMINAL_DEVICES`] as a role's child adds them, after its private `/dev/pts` is
/// mounted: each path and whether it is a folder.
const ROLE_TERMINAL_DEVICES: [(&CStr, bool); 3] =
    [(c"/dev/tty", false), (c"/dev/ptmx", false), (c"/dev/pts", true)];

/// `LANDLOCK_SCOPE_SIGNAL` (ABI 6): signals only reach processes of the same domain, so a
/// role cannot signal the engine or another role.
const SCOPE_SIGNAL: u64 = 1 << 1;

const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: libc::c_int = 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The file-system rights each Landlock ABI version handles.
fn handled_rights(abi: u32) -> u64 {
    let v1 = (1u64 << 13) - 1; // EXECUTE ..= MAKE_SYM
    match abi {
        0 => 0,
        1 => v1,
        2 => v1 | 1 << 13,                     // REFER
        3 | 4 => v1 | 1 << 13 | 1 << 14,       // TRUNCATE
        _ => v1 | 1 << 13 | 1 << 14 | 1 << 15, // IOCTL_DEV (ABI 5)
    }
}

/// What the kernel of this machine offers for confining role processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSupport {
    /// Landlock is available at this ABI version.
    Landlock {
        /// The ABI version (1 = Linux 5.13; 7 on Linux 6.18).
        abi: u32,
    },
    /// No kernel confinement; why not.
    Unavailable {
        /// A sentence naming the cause and what would change it.
        reason: String,
    },
}

impl KernelSupport {
    /// Whether roles can be confined by the kernel.
    pub fn is_available(&self) -> bool {
        matches!(self, Self::Landlock { .. })
    }
}

impl fmt::Display for KernelSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Landlock { abi } => {
                write!(f, "Landlock ABI {abi}: file-system writes confined")?;
                if *abi >= 6 {
                    f.write_str(", signals scoped to the role")?;
                }
                Ok(())
            }
            Self::Unavailable { reason } => write!(f, "no kernel confinement: {reason}"),
        }
    }
}

/// Probes Landlock once per process.
pub fn kernel_support() -> KernelSupport {
    static SUPPORT: OnceLock<KernelSupport> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> KernelSupport {
    if !cfg!(target_os = "linux") {
        return KernelSupport::Unavailable {
            reason: format!("Landlock is a Linux feature and this is {}", std::env::consts::OS),
        };
    }
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns the
    // ABI version (or an error); it reads and writes no memory of ours.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if abi >= 1 {
        return KernelSupport::Landlock { abi: abi as u32 };
    }
    let err = io::Error::last_os_error();
    let reason = match err.raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)".to_string()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into this kernel but disabled at boot (add `landlock` to the `lsm=` kernel parameter)".to_string()
        }
        _ => format!("probing Landlock failed: {err}"),
    };
    KernelSupport::Unavailable { reason }
}

/// What one role process may read and write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// What it may read and execute besides what it may write: `None`, everything; else
    /// only beneath these paths (those that exist; see [`crate::readable_except`]).
    pub readable: Option<Vec<PathBuf>>,
    /// Folders the role may change anything beneath (create, write, delete, rename).
    pub writable_dirs: Vec<PathBuf>,
    /// Single files the role may read, write and truncate (not delete or replace).
    pub writable_files: Vec<PathBuf>,
    /// What the role gets as `/dev/shm`.
    pub dev_shm: DevShm,
}

/// What a confined role gets as `/dev/shm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DevShm {
    /// A fresh tmpfs of its own (at most [`PRIVATE_DEV_SHM_BYTES`], gone with the role):
    /// in its PID namespace's mounts where it has one, else in a user and mount namespace
    /// of its own where [`dev_shm_support`] says this machine allows it; else the
    /// machine's `/dev/shm`, not writable.
    #[default]
    PrivateWherePossible,
    /// The machine's `/dev/shm`, not writable.
    NotWritable,
}

impl Confinement {
    /// Every path the role may write, folders first.
    pub fn writable(&self) -> impl Iterator<Item = &Path> {
        self.writable_dirs.iter().chain(&self.writable_files).map(PathBuf::as_path)
    }
}

/// A confinement could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel offers no Landlock.
    #[error("{0}")]
    Unsupported(String),
    /// A network namespace was asked for where the machine cannot make one.
    #[error("this process cannot get a network namespace of its own: {0}")]
    NoNetworkNamespace(String),
    /// A writable path could not be opened for its rule.
    #[error("cannot confine the role to {}: {source}", path.display())]
    Path {
        /// The path.
        path: PathBuf,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },
    /// The kernel refused to build the ruleset.
    #[error("the kernel refused the Landlock ruleset: {0}")]
    Ruleset(#[source] io::Error),
}

/// A Landlock ruleset built in the engine, ready for a child to enforce on itself.
#[derive(Debug)]
struct Ruleset {
    fd: OwnedFd,
    /// The rights the ruleset handles (this kernel's ABI).
    handled: u64,
}

impl Ruleset {
    /// Builds the ruleset of `confinement`: read and execute on `/`, reading, writing and
    /// ioctls on [`WRITABLE_DEVICES`] and `extra_devices`, everything but making device
    /// nodes on the writable paths.
    fn prepare(confinement: &Confinement, extra_devices: &[&str]) -> Result<Ruleset, SandboxError> {
        let abi = match kernel_support() {
            KernelSupport::Landlock { abi } => abi,
            KernelSupport::Unavailable { reason } => return Err(SandboxError::Unsupported(reason)),
        };
        let handled = handled_rights(abi);
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: 0,
            scoped: if abi >= 6 { SCOPE_SIGNAL } else { 0 },
        };
        // Older kernels take a shorter attribute; the fields they do not know must not be sent.
        let size = if abi >= 6 {
            size_of::<RulesetAttr>()
        } else if abi >= 4 {
            16
        } else {
            8
        };
        // SAFETY: `attr` is a valid `landlock_ruleset_attr` whose first `size` bytes the
        // kernel reads; the call returns a new file descriptor or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                size,
                0u32,
            )
        };
        if fd < 0 {
            return Err(SandboxError::Ruleset(io::Error::last_os_error()));
        }
        // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let ruleset = Ruleset { fd, handled };
        match &confinement.readable {
            None => ruleset.allow(Path::new("/"), READ_RIGHTS & handled)?,
            Some(paths) => {
                for path in paths {
                    // Gone since the list was made (a folder of /tmp, say): nothing to allow.
                    match ruleset.allow(path, READ_RIGHTS & handled) {
                        Err(SandboxError::Path { source, .. })
                            if source.kind() == io::ErrorKind::NotFound => {}
                        other => other?,
                    }
                }
            }
        }
        for device in WRITABLE_DEVICES.iter().chain(extra_devices) {
            let device = Path::new(device);
            // A container may lack some of them (no /dev/tty, say): nothing to allow then.
            if device.exists() {
                ruleset.allow(device, DEVICE_RIGHTS & handled)?;
            }
        }
        for dir in &confinement.writable_dirs {
            ruleset.allow(dir, NO_DEVICE_NODES & handled)?;
        }
        for file in &confinement.writable_files {
            ruleset.allow(file, FILE_RIGHTS & handled)?;
        }
        Ok(ruleset)
    }

    fn allow(&self, path: &Path, rights: u64) -> Result<(), SandboxError> {
        let path_error = |source| SandboxError::Path { path: path.to_path_buf(), source };
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| path_error(io::Error::from(io::ErrorKind::InvalidInput)))?;
        // SAFETY: `c_path` is a NUL-terminated path; O_PATH opens no file contents.
        let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(path_error(io::Error::last_os_error()));
        }
        // SAFETY: `open` just returned this descriptor; it is closed when `parent` drops.
        let parent = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(raw) });
        // What was opened, not what the path names by now (fstat works on O_PATH).
        let is_dir = parent.metadata().map_err(path_error)?.is_dir();
        let allowed = if is_dir { rights } else { rights & FILE_RIGHTS };
        add_rule(self.fd.as_raw_fd(), parent.as_raw_fd(), allowed)
            .map_err(|errno| path_error(io::Error::from_raw_os_error(errno)))
    }

    /// In the forked child: adds the rules for what its namespaces gave it, then restricts
    /// the child to the ruleset. Allocation-free. A rule that cannot be added leaves that
    /// path unwritable, never the child unconfined.
    fn restrict_self(&self, granted: Granted) -> io::Result<()> {
        let ruleset = self.fd.as_raw_fd();
        if granted.dev_shm {
            let _ = add_rule_at(ruleset, c"/dev/shm", true, PRIVATE_DEV_SHM_RIGHTS & self.handled);
        }
        if granted.terminals {
            for (device, is_dir) in ROLE_TERMINAL_DEVICES {
                let _ = add_rule_at(ruleset, device, is_dir, DEVICE_RIGHTS & self.handled);
            }
        }
        // SAFETY: prctl and landlock_restrict_self take numbers and a descriptor we own.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// What a child's namespaces gave it that its ruleset must then allow.
#[derive(Debug, Clone, Copy, Default)]
struct Granted {
    /// A private tmpfs on `/dev/shm`.
    dev_shm: bool,
    /// A private `/dev/pts` and `/dev/ptmx` (and so a `/dev/tty` that can only be one of
    /// those).
    terminals: bool,
}

/// The `execve` a role's child makes itself at the end of its setup, prepared before the
/// fork. (std's own `execvp` would, in glibc, run a file the kernel refuses to execute
/// with `/bin/sh`; `execve` reports the error, as `posix_spawn` did for a child without a
/// setup.)
#[derive(Debug)]
pub(crate) struct Exec {
    program: CString,
    /// NUL-terminated pointers into `strings`.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// The arguments (`argv[0]` first), then the environment's `NAME=value` entries.
    strings: Vec<CString>,
}

// SAFETY: the pointers point into the `CString`s the struct owns, which are never changed
// or moved (a `CString`'s bytes live on the heap) while it exists.
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is ever written through the pointers.
unsafe impl Sync for Exec {}

impl Exec {
    /// `program` with `args` (the first one is `argv[0]`) and exactly the environment
    /// `env` (a later value of a name wins). A NUL byte anywhere is `InvalidInput`.
    pub(crate) fn new<'a>(
        program: &Path,
        args: impl IntoIterator<Item = &'a str>,
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> io::Result<Exec> {
        let text = |bytes: Vec<u8>| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a NUL byte in the command or environment",
                )
            })
        };
        let program = text(program.as_os_str().as_bytes().to_vec())?;
        let args = args.into_iter().map(|a| text(a.into())).collect::<io::Result<Vec<_>>>()?;
        let mut vars: Vec<(&str, &str)> = Vec::new();
        for (name, value) in env {
            vars.retain(|(known, _)| *known != name);
            vars.push((name, value));
        }
        let vars = vars
            .into_iter()
            .map(|(name, value)| text(format!("{name}={value}").into_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Exec::from_parts(program, args, vars))
    }

    /// `program` with `args` (`argv[0]` first) and the environment entries `vars`.
    fn from_parts(program: CString, args: Vec<CString>, vars: Vec<CString>) -> Exec {
        let pointers = |strings: &[CString]| {
            strings.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect::<Vec<_>>()
        };
        let (argv, envp) = (pointers(&args), pointers(&vars));
        let strings = args.into_iter().chain(vars).collect();
        Exec { program, argv, envp, strings }
    }

    /// The program, the arguments and the environment entries.
    fn parts(&self) -> (&CStr, &[CString], &[CString]) {
        let args = self.argv.len() - 1;
        (&self.program, &self.strings[..args], &self.strings[args..])
    }

    /// Replaces this (forked) process with the program; returns only the error.
    /// Allocation-free.
    fn run(&self) -> io::Error {
        // SAFETY: NUL-terminated strings in NULL-terminated arrays, all owned by `self`.
        unsafe { libc::execve(self.program.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// Everything a child does to itself between `fork` and `exec`, prepared in the engine.
#[derive(Debug)]
pub(crate) struct ChildSetup {
    /// Leave the engine's session (`setsid`): no controlling terminal.
    own_session: bool,
    /// Try a PID namespace of its own (`isolation`).
    pid_namespace: Option<IsolationPlan>,
    /// Without a PID namespace: a private `/dev/shm` in a user and mount namespace.
    dev_shm_only: Option<NamespacePlan>,
    ruleset: Option<Ruleset>,
    /// The child's own `execve` (a role's); `None`: std's.
    exec: Option<Exec>,
}

impl ChildSetup {
    /// Whether the process is to get a PID namespace of its own (where the machine allows
    /// one; a failure to make it leaves the process in its session only).
    pub(crate) fn plans_pid_namespace(&self) -> bool {
        self.pid_namespace.is_some()
    }

    /// A role's process or a project's command: its own session, its own PID namespace as
    /// `isolation` says and the machine allows, and `confinement`; then `exec`. With
    /// `network_ports`, a network namespace of its own too, whose listeners on those ports
    /// the returned handover gives the engine — and never the engine's network: where the
    /// namespace cannot be made, preparing or spawning fails.
    pub(crate) fn for_role(
        confinement: Option<&Confinement>,
        isolation: Isolation,
        exec: Exec,
        network_ports: Option<&[u16]>,
    ) -> Result<(ChildSetup, Option<ListenerHandover>), SandboxError> {
        let ruleset = confinement.map(|c| Ruleset::prepare(c, &[])).transpose()?;
        let private_dev_shm =
            confinement.is_some_and(|c| c.dev_shm == DevShm::PrivateWherePossible);
        let pid_namespaces = isolation == Isolation::PidNamespaceWherePossible
            && isolation_support().is_pid_namespace();
        let (network, handover) = match network_ports {
            None => (None, None),
            Some(_) if !pid_namespaces => {
                let why = match isolation_support() {
                    IsolationSupport::SessionOnly { reason } => reason,
                    _ => "the process runs in a session of its own only".into(),
                };
                return Err(SandboxError::NoNetworkNamespace(why));
            }
            Some(ports) => {
                let (plan, handover) = NetworkPlan::new(ports)
                    .map_err(|err| SandboxError::NoNetworkNamespace(err.to_string()))?;
                (Some(plan), Some(handover))
            }
        };
        let pid_namespace = pid_namespaces.then(|| IsolationPlan::new(private_dev_shm, network));
        let dev_shm_only = (pid_namespace.is_none()
            && private_dev_shm
            && dev_shm_support() == DevShmSupport::Private)
            .then(NamespacePlan::for_this_process);
        let exec = Some(exec);
        let setup = ChildSetup { own_session: true, pid_namespace, dev_shm_only, ruleset, exec };
        Ok((setup, handover))
    }

    /// A person's session in their own terminal ([`crate::run_interactive`]): their
    /// session and process group, the terminal devices writable, and a private `/dev/shm`
    /// where possible when confined.
    pub(crate) fn for_person(
        confinement: Option<&Confinement>,
    ) -> Result<ChildSetup, SandboxError> {
        let ruleset = confinement.map(|c| Ruleset::prepare(c, &TERMINAL_DEVICES)).transpose()?;
        let dev_shm_only = (confinement.is_some_and(|c| c.dev_shm == DevShm::PrivateWherePossible)
            && dev_shm_support() == DevShmSupport::Private)
            .then(NamespacePlan::for_this_process);
        Ok(ChildSetup {
            own_session: false,
            pid_namespace: None,
            dev_shm_only,
            ruleset,
            exec: None,
        })
    }

    /// Whether a launcher can do it (module `launcher`): a role's setup, which ends in
    /// its own `exec` in a session of its own.
    pub(crate) fn launchable(&self) -> bool {
        self.own_session && self.exec.is_some()
    }

    /// Makes the child do it right before `exec`.
    pub(crate) fn install(self, command: &mut tokio::process::Command) {
        if !self.own_session && self.ruleset.is_none() {
            return; // nothing to do: an unconfined person's session
        }
        // SAFETY: the closure runs in the forked child before exec. `apply` only makes
        // system calls on memory prepared before the fork (no allocation, no locks), which
        // is what a pre-exec hook may do. The ruleset's descriptor is close-on-exec, so the
        // program never sees it; it is dropped in the engine when the Command is.
        unsafe {
            command.pre_exec(move || self.apply());
        }
    }

    /// Does it in this process: a forked child of the engine, or a launcher. With a role's
    /// own `exec` this returns only its error (or a setup's); else `Ok` for std's `exec`.
    /// Allocation-free.
    fn apply(&self) -> io::Result<()> {
        // SAFETY: setsid takes no arguments.
        if self.own_session && unsafe { libc::setsid() } < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut granted = Granted::default();
        if let Some(plan) = &self.pid_namespace {
            // Returns only in the role's own process; any failure leaves the child in its
            // session, running — unless it was to have a network namespace: it never runs
            // on the engine's network.
            match isolate(plan) {
                Ok(isolated) => {
                    granted.dev_shm = isolated.dev_shm == 0;
                    granted.terminals = isolated.private_pts == 0;
                }
                Err((_, failure)) if plan.network.is_some() => {
                    return Err(io::Error::from_raw_os_error(failure));
                }
                Err(_) => {}
            }
        } else if let Some(plan) = &self.dev_shm_only {
            // Any failure leaves the machine's /dev/shm (unwritable) and the role running.
            granted.dev_shm = enter_private_dev_shm(plan).is_ok();
        }
        if let Some(ruleset) = &self.ruleset {
            ruleset.restrict_self(granted)?;
        }
        match &self.exec {
            // std passes the error on to `spawn`, as for its own exec.
            Some(exec) => {
                stop_ignoring_signals();
                Err(exec.run())
            }
            None => Ok(()),
        }
    }
}

/// Gives every signal this process ignores its default disposition back: an ignored signal
/// stays ignored across `exec`, and a role must not inherit what the engine ignores (Rust
/// ignores SIGPIPE; a harness may ignore more) or what glibc's `posix_spawn` ignores in a
/// launcher (its internal signals, which glibc's own `sigaction` refuses to touch: hence
/// the system call). Allocation-free.
fn stop_ignoring_signals() {
    /// The kernel's `struct sigaction` (x86-64, arm64: with `sa_restorer`).
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: libc::c_ulong,
        restorer: usize,
        mask: u64,
    }
    let ignored = libc::SIG_IGN;
    for signal in 1..=64 {
        let mut current = KernelSigaction { handler: 0, flags: 0, restorer: 0, mask: 0 };
        let default = KernelSigaction { handler: libc::SIG_DFL, flags: 0, restorer: 0, mask: 0 };
        let size = size_of::<u64>();
        // SAFETY: rt_sigaction reads and writes kernel-layout structs that outlive the
        // calls; signals that cannot be changed (SIGKILL, SIGSTOP) just fail.
        unsafe {
            let read = libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                std::ptr::null::<KernelSigaction>(),
                &mut current as *mut KernelSigaction,
                size,
            );
            if read == 0 && current.handler == ignored {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signal,
                    &default as *const KernelSigaction,
                    std::ptr::null_mut::<KernelSigaction>(),
                    size,
                );
            }
        }
    }
}

/// What a role may do in its private `/dev/shm` (the `nodev` mount makes device nodes
/// inert there anyway).
const PRIVATE_DEV_SHM_RIGHTS: u64 = NO_DEVICE_NODES;

/// Adds a path-beneath rule for the file `parent` names. Allocation-free (usable in a
/// forked child); the error is an errno.
fn add_rule(ruleset: RawFd, parent: RawFd, rights: u64) -> Result<(), i32> {
    let attr = PathBeneathAttr { allowed_access: rights, parent_fd: parent };
    // SAFETY: `attr` is a valid packed `landlock_path_beneath_attr` that outlives the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if result != 0 { Err(errno()) } else { Ok(()) }
}

/// Adds a rule for the folder (or, not `is_dir`, the file) at `path` as this process sees
/// it now (in a forked child: its own mounts). Allocation-free.
fn add_rule_at(ruleset: RawFd, path: &CStr, is_dir: bool, rights: u64) -> Result<(), i32> {
    let (kind, rights) =
        if is_dir { (libc::O_DIRECTORY, rights) } else { (0, rights & FILE_RIGHTS) };
    // SAFETY: `path` is NUL-terminated; O_PATH opens no contents.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | kind | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    let added = add_rule(ruleset, fd, rights);
    // SAFETY: `fd` was opened above and is not used afterwards.
    unsafe { libc::close(fd) };
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_abi_handles_a_superset_of_the_previous() {
        for abi in 1..8 {
            let (older, newer) = (handled_rights(abi), handled_rights(abi + 1));
            assert_eq!(older & newer, older, "abi {abi}");
        }
        assert_eq!(handled_rights(1), 0x1fff);
        assert_eq!(handled_rights(7), 0xffff);
    }

    #[test]
    fn the_probe_names_a_cause_when_there_is_no_landlock() {
        match kernel_support() {
            KernelSupport::Landlock { abi } => assert!(abi >= 1),
            KernelSupport::Unavailable { reason } => assert!(!reason.is_empty()),
        }
    }

    #[test]
    fn the_path_rule_attribute_has_the_kernel_layout() {
        assert_eq!(size_of::<PathBeneathAttr>(), 12);
        assert_eq!(size_of::<RulesetAttr>(), 24);
    }
}
