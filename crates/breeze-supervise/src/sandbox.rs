//! Kernel confinement of role processes with Landlock — the crate's only `unsafe` code.
//!
//! A [`Confinement`] names what a role may write; everything else on the machine stays
//! readable and executable but not writable. Of `/dev` only the harmless devices
//! ([`WRITABLE_DEVICES`]) are writable, and `/dev/shm` is a private tmpfs of the role's own
//! where the machine allows unprivileged user and mount namespaces ([`dev_shm_support`]),
//! else not writable. The ruleset is built in the engine (opening each allowed path with
//! `O_PATH`), and the child enforces it on itself between `fork` and `exec` with raw system
//! calls that allocate nothing and are async-signal-safe: optionally `unshare`, the
//! identity maps and the tmpfs mount (strings formatted before the fork), then
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`. The engine itself is never
//! restricted. The domain is inherited by every descendant of the role and can only be
//! narrowed further (an agent CLI's own sandbox stacks on top of it).
//!
//! Landlock is an allow-list: a path under an allowed folder cannot be taken back, so a
//! role gets its own scratch folder rather than `/tmp` as a whole.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
/// (block devices, other character devices, the machine's `/dev/shm`) is read-only to it.
/// `/dev/pts` holds the pseudo-terminals that `/dev/ptmx` hands out. `/dev/fd` and
/// `/dev/stdin|stdout|stderr` need no rule: they are links into `/proc/self/fd`, and
/// Landlock lets a process reopen its own pipes and sockets there (a terminal behind them
/// is under `/dev/pts`; a file, wherever it is, by its own rules).
pub const WRITABLE_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The size limit of a role's private `/dev/shm` (a tmpfs: memory is used only as it fills).
pub const PRIVATE_DEV_SHM_BYTES: u64 = 1 << 30;

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

/// What one role process may write. Everything else stays readable and executable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
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
    /// A fresh tmpfs of its own (at most [`PRIVATE_DEV_SHM_BYTES`], gone with the role) in
    /// a user and mount namespace of its own, where [`dev_shm_support`] says this machine
    /// allows it; else the machine's `/dev/shm`, not writable.
    #[default]
    PrivateWherePossible,
    /// The machine's `/dev/shm`, not writable; the role stays in the engine's namespaces.
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
pub(crate) struct Ruleset {
    fd: OwnedFd,
    /// The rights the ruleset handles (this kernel's ABI).
    handled: u64,
    /// Set when the child is to get a private `/dev/shm`.
    private_dev_shm: Option<NamespacePlan>,
}

impl Ruleset {
    /// Builds the ruleset of `confinement`: read and execute on `/`, reading, writing and
    /// ioctls on [`WRITABLE_DEVICES`], everything but making device nodes on the writable
    /// paths.
    pub(crate) fn prepare(confinement: &Confinement) -> Result<Ruleset, SandboxError> {
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
        let private_dev_shm = (confinement.dev_shm == DevShm::PrivateWherePossible
            && dev_shm_support() == DevShmSupport::Private)
            .then(NamespacePlan::for_this_process);
        let ruleset = Ruleset { fd, handled, private_dev_shm };
        ruleset.allow(Path::new("/"), READ_RIGHTS & handled)?;
        for device in WRITABLE_DEVICES {
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
        let parent = unsafe { OwnedFd::from_raw_fd(raw) };
        let is_dir = std::fs::metadata(path).map_err(path_error)?.is_dir();
        let allowed = if is_dir { rights } else { rights & FILE_RIGHTS };
        add_rule(self.fd.as_raw_fd(), parent.as_raw_fd(), allowed)
            .map_err(|errno| path_error(io::Error::from_raw_os_error(errno)))
    }

    /// Makes the child enforce the ruleset on itself right before `exec` — in a user and
    /// mount namespace of its own with a fresh `/dev/shm` first, when prepared so.
    pub(crate) fn install(self, command: &mut tokio::process::Command) {
        let Ruleset { fd, handled, private_dev_shm } = self;
        // SAFETY: the closure runs in the forked child before exec. It only makes system
        // calls on memory prepared before the fork (no allocation, no locks), which is what
        // a pre-exec hook may do. The descriptor is close-on-exec, so the program never
        // sees it; it is dropped in the engine when the Command is.
        unsafe {
            command.pre_exec(move || {
                // Any failure leaves the machine's /dev/shm (unwritable) and the role running.
                if let Some(plan) = &private_dev_shm
                    && enter_private_dev_shm(plan).is_ok()
                {
                    let _ =
                        add_rule_at(fd.as_raw_fd(), c"/dev/shm", PRIVATE_DEV_SHM_RIGHTS & handled);
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// What a role may do in its private `/dev/shm` (the `nodev` mount makes device nodes
/// inert there anyway).
const PRIVATE_DEV_SHM_RIGHTS: u64 = NO_DEVICE_NODES;

/// The errno of the last failed system call, read without allocating.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

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

/// Adds a rule for the folder at `path` as this process sees it now (in a forked child:
/// its own mounts). Allocation-free.
fn add_rule_at(ruleset: RawFd, path: &CStr, rights: u64) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; O_PATH opens no contents.
    let fd =
        unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    let added = add_rule(ruleset, fd, rights);
    // SAFETY: `fd` was opened above and is not used afterwards.
    unsafe { libc::close(fd) };
    added
}

/// What this machine gives a confined role as `/dev/shm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevShmSupport {
    /// A private tmpfs per role process, in a user and mount namespace of its own.
    Private,
    /// The machine's `/dev/shm`, not writable to roles; why there is no private one.
    NotWritable {
        /// A sentence naming the cause.
        reason: String,
    },
}

impl fmt::Display for DevShmSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Private => write!(
                f,
                "a private tmpfs per role process (its own user and mount namespace; at most {} GiB, gone with the role)",
                PRIVATE_DEV_SHM_BYTES >> 30
            ),
            Self::NotWritable { reason } => write!(f, "not writable to roles: {reason}"),
        }
    }
}

/// Whether role processes can get a private `/dev/shm` here: probed once per process by a
/// forked child that does what a role's child will do.
pub fn dev_shm_support() -> DevShmSupport {
    static SUPPORT: OnceLock<DevShmSupport> = OnceLock::new();
    SUPPORT.get_or_init(probe_dev_shm).clone()
}

/// The steps of entering a private `/dev/shm`, as the probe reports a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum NamespaceStep {
    Unshare = 1,
    Setgroups,
    UidMap,
    GidMap,
    PrivateMounts,
    MountTmpfs,
}

impl NamespaceStep {
    fn from_u8(value: u8) -> Option<NamespaceStep> {
        [
            Self::Unshare,
            Self::Setgroups,
            Self::UidMap,
            Self::GidMap,
            Self::PrivateMounts,
            Self::MountTmpfs,
        ]
        .into_iter()
        .find(|step| *step as u8 == value)
    }

    /// Why roles get no private `/dev/shm` when this step failed with `err`.
    fn reason(self, err: io::Error) -> String {
        match self {
            Self::Unshare => format!(
                "this machine does not let an unprivileged process create a user and mount namespace (unshare: {err}; see the sysctls user.max_user_namespaces and kernel.unprivileged_userns_clone, or an AppArmor/SELinux policy)"
            ),
            Self::Setgroups | Self::UidMap | Self::GidMap => format!(
                "the user cannot be mapped into a new user namespace ({}: {err})",
                match self {
                    Self::Setgroups => "/proc/self/setgroups",
                    Self::UidMap => "/proc/self/uid_map",
                    _ => "/proc/self/gid_map",
                }
            ),
            Self::PrivateMounts | Self::MountTmpfs => format!(
                "a new mount namespace may not mount a tmpfs on /dev/shm here (mount: {err}; e.g. AppArmor's kernel.apparmor_restrict_unprivileged_userns)"
            ),
        }
    }
}

/// The strings a child needs to enter its namespace, formatted before the fork.
#[derive(Debug)]
struct NamespacePlan {
    /// `<euid> <euid> 1`: the engine's user, and only it, keeps its id.
    uid_map: CString,
    /// `<egid> <egid> 1`.
    gid_map: CString,
    /// The tmpfs mount options (size limit, sticky world-writable root like the original).
    tmpfs_options: CString,
}

impl NamespacePlan {
    fn for_this_process() -> NamespacePlan {
        // SAFETY: geteuid and getegid cannot fail and touch no memory of ours.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let text = |s: String| CString::new(s).unwrap_or_default();
        NamespacePlan {
            uid_map: text(format!("{uid} {uid} 1")),
            gid_map: text(format!("{gid} {gid} 1")),
            tmpfs_options: text(format!("size={PRIVATE_DEV_SHM_BYTES},mode=1777")),
        }
    }
}

/// Writes `data` to a `/proc` file in one `write`, as the id-map files require.
/// Allocation-free.
fn write_proc_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `data` is valid for `data.len()` bytes.
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let result = if written == data.len() as isize { Ok(()) } else { Err(errno()) };
    // SAFETY: `fd` was opened above and is not used afterwards.
    unsafe { libc::close(fd) };
    result
}

/// Moves the calling process — a forked, single-threaded child — into a new user and mount
/// namespace where it keeps its own uid and gid, and mounts a fresh tmpfs on `/dev/shm`
/// there. Allocation-free and async-signal-safe. The mounts are made private first, so
/// nothing mounted here can reach the engine's namespace.
fn enter_private_dev_shm(plan: &NamespacePlan) -> Result<(), (NamespaceStep, i32)> {
    use NamespaceStep::*;
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err((Unshare, errno()));
    }
    write_proc_file(c"/proc/self/setgroups", b"deny").map_err(|e| (Setgroups, e))?;
    write_proc_file(c"/proc/self/uid_map", plan.uid_map.as_bytes()).map_err(|e| (UidMap, e))?;
    write_proc_file(c"/proc/self/gid_map", plan.gid_map.as_bytes()).map_err(|e| (GidMap, e))?;
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: NUL-terminated strings or null pointers, as mount(2) takes them.
    if unsafe {
        libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null())
    } != 0
    {
        return Err((PrivateMounts, errno()));
    }
    // SAFETY: as above; the options are a NUL-terminated string.
    if unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/shm".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            plan.tmpfs_options.as_ptr().cast(),
        )
    } != 0
    {
        return Err((MountTmpfs, errno()));
    }
    Ok(())
}

fn probe_dev_shm() -> DevShmSupport {
    let not_writable = |reason: String| DevShmSupport::NotWritable { reason };
    if !cfg!(target_os = "linux") {
        return not_writable(format!(
            "namespaces are a Linux feature and this is {}",
            std::env::consts::OS
        ));
    }
    if !Path::new("/dev/shm").is_dir() {
        return not_writable("this machine has no /dev/shm".into());
    }
    let plan = NamespacePlan::for_this_process();
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return not_writable(format!("probing failed: {}", io::Error::last_os_error()));
    }
    // SAFETY: pipe2 just returned these descriptors; nothing else owns them.
    let (report_read, report_write) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    // SAFETY: the child makes only allocation-free system calls (the same as a role's
    // pre-exec hook) and leaves with _exit, running no destructor or exit handler.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = match enter_private_dev_shm(&plan) {
            Ok(()) => 0,
            Err((step, errno)) => {
                let mut report = [0u8; 5];
                report[0] = step as u8;
                report[1..].copy_from_slice(&errno.to_ne_bytes());
                // SAFETY: `report` is valid for its length; the descriptor is open.
                unsafe { libc::write(report_write.as_raw_fd(), report.as_ptr().cast(), 5) };
                1
            }
        };
        // SAFETY: ends the child without touching the parent's state.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return not_writable(format!("probing failed: fork: {}", io::Error::last_os_error()));
    }
    drop(report_write);
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above; `status` is a valid out-pointer.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid || errno() != libc::EINTR {
            break;
        }
    }
    let mut report = [0u8; 5];
    let read = std::fs::File::from(report_read).read(&mut report).unwrap_or(0);
    if read == 5
        && let Some(step) = NamespaceStep::from_u8(report[0])
    {
        let errno = i32::from_ne_bytes([report[1], report[2], report[3], report[4]]);
        return not_writable(step.reason(io::Error::from_raw_os_error(errno)));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        DevShmSupport::Private
    } else {
        not_writable(format!("probing failed: the probe process ended with status {status}"))
    }
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
