//! Linux namespaces for a role's child, made with raw system calls that allocate nothing
//! (a forked child of a multi-threaded engine may do no more): a user namespace in which
//! the engine's user keeps its own ids, a mount namespace whose mounts are private, and the
//! mounts a role gets there — a fresh `/proc`, a tmpfs on `/dev/shm`, a private `/dev/pts`.
//! Every string is formatted before the fork ([`NamespacePlan`]); a path that needs a pid
//! is written into a buffer on the stack.
//!
//! Two ways in: [`fork_into_namespaces`] creates a child in new namespaces and writes its id
//! maps from the parent, so that a failure leaves the caller where it was (used for the PID
//! namespace, see `isolation`); [`enter_private_dev_shm`] moves the caller itself into a user
//! and mount namespace (used for a private `/dev/shm` without a PID namespace).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

/// The size limit of a role's private `/dev/shm` (a tmpfs: memory is used only as it fills).
pub const PRIVATE_DEV_SHM_BYTES: u64 = 1 << 30;

/// The errno of the last failed system call, read without allocating.
pub(super) fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// The steps of making namespaces, as a probe reports a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum NamespaceStep {
    /// `unshare` or `clone` with the namespace flags.
    Create = 1,
    Setgroups,
    UidMap,
    GidMap,
    PrivateMounts,
    MountTmpfs,
}

impl NamespaceStep {
    pub(super) fn from_u8(value: u8) -> Option<NamespaceStep> {
        [
            Self::Create,
            Self::Setgroups,
            Self::UidMap,
            Self::GidMap,
            Self::PrivateMounts,
            Self::MountTmpfs,
        ]
        .into_iter()
        .find(|step| *step as u8 == value)
    }

    /// Why `namespaces` (e.g. "user and mount namespaces") cannot be had when this step
    /// failed with `err`.
    pub(super) fn reason(self, err: io::Error, namespaces: &str) -> String {
        match self {
            Self::Create => format!(
                "this machine does not let an unprivileged process create {namespaces} (error: {err}; see the sysctls user.max_user_namespaces and kernel.unprivileged_userns_clone, or an AppArmor/SELinux policy)"
            ),
            Self::Setgroups | Self::UidMap | Self::GidMap => format!(
                "the user cannot be mapped into a new user namespace ({}: {err})",
                match self {
                    Self::Setgroups => "setgroups",
                    Self::UidMap => "uid_map",
                    _ => "gid_map",
                }
            ),
            Self::PrivateMounts | Self::MountTmpfs => format!(
                "a new mount namespace may not mount here (mount: {err}; e.g. AppArmor's kernel.apparmor_restrict_unprivileged_userns)"
            ),
        }
    }
}

/// The strings a child needs to enter its namespaces, formatted before the fork.
#[derive(Debug)]
pub(super) struct NamespacePlan {
    /// `<euid> <euid> 1`: the engine's user, and only it, keeps its id.
    uid_map: CString,
    /// `<egid> <egid> 1`.
    gid_map: CString,
    /// The tmpfs mount options (size limit, sticky world-writable root like the original).
    tmpfs_options: CString,
}

impl NamespacePlan {
    pub(super) fn for_this_process() -> NamespacePlan {
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

/// `/proc/<pid>/<name>` (or `/proc/self/<name>` for pid 0), NUL-terminated, in `buf`.
/// Allocation-free.
fn proc_path<'b>(pid: libc::pid_t, name: &[u8], buf: &'b mut [u8; 64]) -> &'b CStr {
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        let end = (len + bytes.len()).min(buf.len() - 1);
        buf[len..end].copy_from_slice(&bytes[..end - len]);
        len = end;
    };
    push(b"/proc/");
    if pid <= 0 {
        push(b"self");
    } else {
        let mut digits = [0u8; 12];
        let mut start = digits.len();
        let mut rest = pid as u32;
        while rest > 0 {
            start -= 1;
            digits[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        push(&digits[start..]);
    }
    push(b"/");
    push(name);
    buf[len] = 0;
    CStr::from_bytes_until_nul(&buf[..=len]).unwrap_or(c"/proc/self/nonexistent")
}

/// Maps the engine's own user and group into the user namespace of `pid` (0: this
/// process). Allocation-free.
fn write_id_maps(pid: libc::pid_t, plan: &NamespacePlan) -> Result<(), (NamespaceStep, i32)> {
    use NamespaceStep::*;
    let mut buf = [0u8; 64];
    write_proc_file(proc_path(pid, b"setgroups", &mut buf), b"deny").map_err(|e| (Setgroups, e))?;
    let map = plan.uid_map.as_bytes();
    write_proc_file(proc_path(pid, b"uid_map", &mut buf), map).map_err(|e| (UidMap, e))?;
    let map = plan.gid_map.as_bytes();
    write_proc_file(proc_path(pid, b"gid_map", &mut buf), map).map_err(|e| (GidMap, e))
}

/// Waits for the child `pid`, through interruptions; its wait status, or `None`.
pub(super) fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            return Some(status);
        }
        if waited < 0 && errno() != libc::EINTR {
            return None;
        }
    }
}

/// Reads into `buf` through interruptions; the byte count, 0 at end of file or on error.
pub(super) fn read_fully(fd: libc::c_int, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the pointer and length stay within `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            n if n > 0 => got += n as usize,
            n if n < 0 && errno() == libc::EINTR => {}
            _ => break,
        }
    }
    got
}

/// A pipe whose ends are close-on-exec, as raw descriptors. Allocation-free.
pub(super) fn pipe() -> Result<[libc::c_int; 2], i32> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno());
    }
    Ok(ends)
}

/// Closes `fd`. Allocation-free.
pub(super) fn close(fd: libc::c_int) {
    // SAFETY: the callers close descriptors they own and use no more.
    unsafe { libc::close(fd) };
}

/// Where [`fork_into_namespaces`] returned.
pub(super) enum Forked {
    /// In the caller, with the child's pid.
    Parent(libc::pid_t),
    /// In the child, in its new namespaces with its id maps written.
    Child,
}

/// What the child exits with when its parent gave up on its namespaces before it began.
const ABANDONED: libc::c_int = 125;

/// Forks a child into new namespaces (`flags`, which hold `CLONE_NEWUSER`) and writes its
/// id maps from here, the parent user namespace; the child waits for them before it goes
/// on. On failure nothing is left: no child, and the caller in its own namespaces.
/// `/proc` must show the caller's PID namespace (the child's pid is looked up there).
/// Allocation-free; the child must not use glibc functions that rely on the calling
/// thread's cached id (`raise`, `pthread_*`): the raw `clone` does not update it.
pub(super) fn fork_into_namespaces(
    flags: libc::c_int,
    plan: &NamespacePlan,
) -> Result<Forked, (NamespaceStep, i32)> {
    let [go_read, go_write] = pipe().map_err(|e| (NamespaceStep::Create, e))?;
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: clone without CLONE_VM and with no new stack is fork with namespace flags:
    // the child continues here on a copy of this process's memory.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid == 0 {
        close(go_write);
        let mut go = [0u8; 1];
        let started = read_fully(go_read, &mut go) == 1;
        close(go_read);
        if !started {
            // SAFETY: ends this child without running anything of the parent's.
            unsafe { libc::_exit(ABANDONED) };
        }
        return Ok(Forked::Child);
    }
    close(go_read);
    if pid < 0 {
        let failure = errno();
        close(go_write);
        return Err((NamespaceStep::Create, failure));
    }
    let pid = pid as libc::pid_t;
    let mapped = write_id_maps(pid, plan);
    if mapped.is_ok() {
        // SAFETY: one byte from a valid buffer to the pipe the child reads.
        unsafe { libc::write(go_write, b"g".as_ptr().cast(), 1) };
    }
    close(go_write);
    match mapped {
        Ok(()) => Ok(Forked::Parent(pid)),
        Err(failure) => {
            // The child sees the pipe closed without a go and exits; it is reaped here.
            let _ = wait_for(pid);
            Err(failure)
        }
    }
}

/// Makes every mount of this (new) mount namespace private, so nothing mounted here can
/// reach the engine's. Allocation-free.
pub(super) fn make_mounts_private() -> Result<(), i32> {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: NUL-terminated strings or null pointers, as mount(2) takes them.
    let result = unsafe {
        libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null())
    };
    if result != 0 { Err(errno()) } else { Ok(()) }
}

/// `mount -t <fstype> -o <options> <source> <target>`. Allocation-free.
fn mount(
    source: &CStr,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    options: Option<&CStr>,
) -> Result<(), i32> {
    let fstype = fstype.map_or(std::ptr::null(), CStr::as_ptr);
    let options = options.map_or(std::ptr::null(), |o| o.as_ptr().cast());
    // SAFETY: NUL-terminated strings or null pointers, as mount(2) takes them.
    let result = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype, flags, options) };
    if result != 0 { Err(errno()) } else { Ok(()) }
}

/// A fresh tmpfs (`nosuid`, `nodev`, at most [`PRIVATE_DEV_SHM_BYTES`]) on `/dev/shm`.
pub(super) fn mount_private_dev_shm(plan: &NamespacePlan) -> Result<(), i32> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    mount(c"tmpfs", c"/dev/shm", Some(c"tmpfs"), flags, Some(&plan.tmpfs_options))
}

/// A fresh `/proc` of the caller's PID namespace: it lists only that namespace's processes.
pub(super) fn mount_own_proc() -> Result<(), i32> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount(c"proc", c"/proc", Some(c"proc"), flags, None)
}

/// A new devpts instance on `/dev/pts` and its `ptmx` over `/dev/ptmx`: pseudo-terminals
/// of the namespace's own; the machine's (the person's terminal among them) are no longer
/// reachable by name. Opening `/dev/ptmx` finds the `pts` next to it, so a failed bind of
/// `ptmx` changes nothing and is not an error.
pub(super) fn mount_private_devpts() -> Result<(), i32> {
    let options = c"newinstance,ptmxmode=0666,mode=0620";
    let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    mount(c"devpts", c"/dev/pts", Some(c"devpts"), flags, Some(options))?;
    let _ = mount(c"/dev/pts/ptmx", c"/dev/ptmx", None, libc::MS_BIND, None);
    Ok(())
}

/// Moves the calling process — a forked, single-threaded child — into a new user and mount
/// namespace where it keeps its own uid and gid, and mounts a fresh tmpfs on `/dev/shm`
/// there. Allocation-free and async-signal-safe. The mounts are made private first, so
/// nothing mounted here can reach the engine's namespace.
pub(super) fn enter_private_dev_shm(plan: &NamespacePlan) -> Result<(), (NamespaceStep, i32)> {
    use NamespaceStep::*;
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err((Create, errno()));
    }
    write_id_maps(0, plan)?;
    make_mounts_private().map_err(|e| (PrivateMounts, e))?;
    mount_private_dev_shm(plan).map_err(|e| (MountTmpfs, e))
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
    let report = in_probe_child(|report_fd| {
        if let Err((step, errno)) = enter_private_dev_shm(&plan) {
            let mut report = [0u8; 5];
            report[0] = step as u8;
            report[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: `report` is valid for its length; the descriptor is open.
            unsafe { libc::write(report_fd, report.as_ptr().cast(), 5) };
            return 1;
        }
        0
    });
    let (status, report) = match report {
        Ok(done) => done,
        Err(err) => return not_writable(format!("probing failed: {err}")),
    };
    if report.len() == 5
        && let Some(step) = NamespaceStep::from_u8(report[0])
    {
        let errno = i32::from_ne_bytes([report[1], report[2], report[3], report[4]]);
        let namespaces = "a user and mount namespace with a tmpfs on /dev/shm";
        return not_writable(step.reason(io::Error::from_raw_os_error(errno), namespaces));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        DevShmSupport::Private
    } else {
        not_writable(format!("probing failed: the probe process ended with status {status}"))
    }
}

/// Runs `probe` in a forked child, which writes what it found to the descriptor it is
/// given and returns its exit code; returns the child's wait status and what it wrote.
/// `probe` runs in the child of a multi-threaded process: it must not allocate.
pub(super) fn in_probe_child(
    probe: impl FnOnce(libc::c_int) -> libc::c_int,
) -> io::Result<(libc::c_int, Vec<u8>)> {
    let [read_end, write_end] = pipe().map_err(io::Error::from_raw_os_error)?;
    // SAFETY: pipe2 just returned these descriptors; nothing else owns them.
    let (report_read, report_write) =
        unsafe { (OwnedFd::from_raw_fd(read_end), OwnedFd::from_raw_fd(write_end)) };
    // SAFETY: the child runs only `probe` (allocation-free system calls) and leaves with
    // _exit, running no destructor or exit handler.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = probe(report_write.as_raw_fd());
        // SAFETY: ends the child without touching the parent's state.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return Err(io::Error::other(format!("fork: {}", io::Error::last_os_error())));
    }
    drop(report_write);
    let mut report = Vec::new();
    // Read to the end first: the probe's own children may hold the pipe a moment longer.
    let _ = std::fs::File::from(report_read).read_to_end(&mut report);
    let status = wait_for(pid).unwrap_or(-1);
    Ok((status, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_paths_are_written_without_allocating() {
        let mut buf = [0u8; 64];
        assert_eq!(proc_path(4242, b"uid_map", &mut buf), c"/proc/4242/uid_map");
        assert_eq!(proc_path(0, b"setgroups", &mut buf), c"/proc/self/setgroups");
        assert_eq!(proc_path(1, b"gid_map", &mut buf), c"/proc/1/gid_map");
    }

    #[test]
    fn every_step_names_its_cause() {
        for value in 1..=6 {
            let step = NamespaceStep::from_u8(value).unwrap();
            let reason = step.reason(io::Error::from_raw_os_error(libc::EPERM), "namespaces");
            assert!(reason.contains("not permitted"), "{step:?}: {reason}");
        }
        assert_eq!(NamespaceStep::from_u8(0), None);
    }
}
