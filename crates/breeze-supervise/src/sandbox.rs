//! Kernel confinement of role processes with Landlock — the crate's only `unsafe` code.
//!
//! A [`Confinement`] names what a role may write; everything else on the machine stays
//! readable and executable but not writable. The ruleset is built in the engine (opening
//! each allowed path with `O_PATH`), and the child enforces it on itself between `fork`
//! and `exec` with two raw system calls — `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self` — which allocate nothing and are async-signal-safe. The engine
//! itself is never restricted. The domain is inherited by every descendant of the role and
//! can only be narrowed further (an agent CLI's own sandbox stacks on top of it).
//!
//! Landlock is an allow-list: a path under an allowed folder cannot be taken back, so a
//! role gets its own scratch folder rather than `/tmp` as a whole.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

// Access rights of `landlock_path_beneath_attr.allowed_access` (linux/landlock.h).
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;

/// Rights that apply to a regular file (a rule on a file may hold only these).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
/// What every role keeps on the whole file system.
const READ_RIGHTS: u64 = EXECUTE | READ_FILE | READ_DIR;

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
}

impl Ruleset {
    /// Builds the ruleset of `confinement`: read and execute on `/`, everything on `/dev`
    /// (terminals, `/dev/null`) and on the writable paths.
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
        let ruleset = Ruleset { fd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) } };
        ruleset.allow(Path::new("/"), READ_RIGHTS & handled)?;
        ruleset.allow(Path::new("/dev"), handled)?;
        for dir in &confinement.writable_dirs {
            ruleset.allow(dir, handled)?;
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
        let attr = PathBeneathAttr { allowed_access: allowed, parent_fd: parent.as_raw_fd() };
        // SAFETY: `attr` is a valid packed `landlock_path_beneath_attr` that outlives the call.
        let result = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            )
        };
        if result != 0 {
            return Err(path_error(io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Makes the child enforce the ruleset on itself right before `exec`.
    pub(crate) fn install(self, command: &mut tokio::process::Command) {
        let fd = self.fd;
        // SAFETY: the closure runs in the forked child before exec. It only makes two
        // system calls (no allocation, no locks), which is what a pre-exec hook may do.
        // The descriptor is close-on-exec, so the program never sees it; it is dropped in
        // the engine when the Command is.
        unsafe {
            command.pre_exec(move || {
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
