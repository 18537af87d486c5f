//! A role's network namespace: only a loopback, and on it listening sockets that the engine
//! serves (module `network`).
//!
//! The namespace's init (P1 of module `isolation`, made with `CLONE_NEWNET` too) brings its
//! loopback up, opens a listening TCP socket on `127.0.0.1` for each planned port and hands
//! them to the engine over a socket pair made before the fork (`SCM_RIGHTS`); then closes
//! them. A socket keeps the namespace it was made in: the engine accepts the role's
//! connections on them from outside and decides where each may go. If anything here fails
//! the role has no network at all — never the engine's.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use std::sync::OnceLock;

use super::fd_passing::{receive_fds, send_fds};
use super::namespace::{close, errno, in_probe_child};

/// Most sockets one namespace hands over: the proxy and the forwarded ports.
pub(super) const MAX_LISTENERS: usize = 1 + crate::network::MAX_FORWARDED_PORTS;

// Every listener fits one message.
const _: () = assert!(MAX_LISTENERS <= super::fd_passing::MAX_FDS);

/// How long the engine waits for a namespace's sockets (they come within milliseconds of
/// the spawn; a child that died first closes the pair sooner).
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(20);

/// What P1 needs, prepared before the fork.
#[derive(Debug)]
pub(super) struct NetworkPlan {
    ports: [u16; MAX_LISTENERS],
    count: usize,
    /// The child's end of the pair; kept open until the spawn returned.
    channel: OwnedFd,
}

/// The engine's end of a namespace's socket pair.
#[derive(Debug)]
pub(crate) struct ListenerHandover(OwnedFd);

impl NetworkPlan {
    /// A plan for `ports` (the first [`MAX_LISTENERS`]), and the engine's end of its pair.
    pub(super) fn new(ports: &[u16]) -> io::Result<(NetworkPlan, ListenerHandover)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid out-array of two descriptors.
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if made != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: socketpair just returned both descriptors; each is owned once.
        let (engine, child) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((NetworkPlan::received(ports, child), ListenerHandover(engine)))
    }
}

impl NetworkPlan {
    /// The planned ports and the child's end of the pair: what a launcher is sent
    /// (module `launcher`).
    pub(super) fn parts(&self) -> (&[u16], &OwnedFd) {
        (&self.ports[..self.count], &self.channel)
    }

    /// The plan a launcher was sent: `ports` (the first [`MAX_LISTENERS`]) and the
    /// child's end of the engine's pair.
    pub(super) fn received(ports: &[u16], channel: OwnedFd) -> NetworkPlan {
        let mut planned = [0u16; MAX_LISTENERS];
        let count = ports.len().min(MAX_LISTENERS);
        planned[..count].copy_from_slice(&ports[..count]);
        NetworkPlan { ports: planned, count, channel }
    }
}

/// `struct ifreq` as `SIOCSIFFLAGS` reads it: the name, then the flags (40 bytes).
#[repr(C)]
struct InterfaceFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// In P1, in its new network namespace: the loopback up, the listeners made and handed
/// over. Allocation-free. Returns the errno of the first failure (the pair is closed
/// either way, which tells the engine).
pub(super) fn open_network(plan: &NetworkPlan) -> Result<(), i32> {
    let result = loopback_up().and_then(|()| hand_over_listeners(plan));
    close(plan.channel.as_raw_fd());
    result
}

fn loopback_up() -> Result<(), i32> {
    // SAFETY: a datagram socket for the ioctl; closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(errno());
    }
    let mut request = InterfaceFlags { name: [0; libc::IFNAMSIZ], flags: 0, _rest: [0; 22] };
    request.name[..2].copy_from_slice(b"lo");
    request.flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: `request` is a valid ifreq-sized buffer the kernel reads.
    let result =
        unsafe { libc::ioctl(socket, libc::SIOCSIFFLAGS, &mut request as *mut InterfaceFlags) };
    let failure = errno();
    close(socket);
    if result != 0 { Err(failure) } else { Ok(()) }
}

fn hand_over_listeners(plan: &NetworkPlan) -> Result<(), i32> {
    let mut fds = [-1 as libc::c_int; MAX_LISTENERS];
    let mut made = Ok(());
    for (slot, &port) in fds.iter_mut().zip(&plan.ports[..plan.count]) {
        match listen_on_loopback(port) {
            Ok(fd) => *slot = fd,
            Err(failure) => {
                made = Err(failure);
                break;
            }
        }
    }
    let sent = made.and_then(|()| send_fds(plan.channel.as_raw_fd(), b"n", &fds[..plan.count]));
    for fd in fds.into_iter().filter(|fd| *fd >= 0) {
        close(fd);
    }
    sent
}

fn listen_on_loopback(port: u16) -> Result<libc::c_int, i32> {
    // SAFETY: plain socket calls on a descriptor made here and on stack values.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
            sin_zero: [0; 8],
        };
        let bound = libc::bind(
            fd,
            (&address as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        if bound != 0 || libc::listen(fd, 128) != 0 {
            let failure = errno();
            close(fd);
            return Err(failure);
        }
        Ok(fd)
    }
}

impl ListenerHandover {
    /// In the engine (blocking): the listening sockets of the namespace, in the order of
    /// the plan's ports. Fails when the child closed its end without them (its network
    /// could not be made: it has none) or did not send them in time.
    pub(crate) fn receive(self) -> io::Result<Vec<std::net::TcpListener>> {
        let fd = self.0.as_raw_fd();
        let timeout =
            libc::timeval { tv_sec: HANDOVER_TIMEOUT.as_secs() as libc::time_t, tv_usec: 0 };
        // SAFETY: a valid option value for a socket we own.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        let (received, fds) = receive_fds(fd, &mut [0u8; 1])?;
        if received == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the role's network namespace could not be set up (it has no network)",
            ));
        }
        Ok(fds.into_iter().map(std::net::TcpListener::from).collect())
    }
}

/// Whether roles can have network namespaces of their own here (probed once per process
/// by a forked child that makes one and brings its loopback up); `Err` names the cause.
pub fn network_namespace_support() -> Result<(), String> {
    static SUPPORT: OnceLock<Result<(), String>> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err(format!(
            "network namespaces are a Linux feature and this is {}",
            std::env::consts::OS
        ));
    }
    let probed = in_probe_child(|report_fd| {
        // SAFETY: unshare takes flags only.
        let failure = match unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } {
            0 => loopback_up().err().unwrap_or(0),
            _ => errno(),
        };
        let bytes = failure.to_ne_bytes();
        // SAFETY: `bytes` is valid for its length; the descriptor is open.
        unsafe { libc::write(report_fd, bytes.as_ptr().cast(), bytes.len()) };
        0
    });
    match probed {
        Ok((_, report)) if report.len() == 4 => {
            match i32::from_ne_bytes([report[0], report[1], report[2], report[3]]) {
                0 => Ok(()),
                failure => Err(format!(
                    "an unprivileged user and network namespace cannot be made here ({}); on most distributions `sysctl kernel.unprivileged_userns_clone=1` or `kernel.apparmor_restrict_unprivileged_userns=0` allows it",
                    io::Error::from_raw_os_error(failure)
                )),
            }
        }
        Ok(_) => Err("probing network namespaces failed: the probe reported nothing".into()),
        Err(err) => Err(format!("probing network namespaces failed: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interface_request_has_the_kernel_layout() {
        assert_eq!(size_of::<InterfaceFlags>(), 40);
    }
}
