//! Descriptors passed over a Unix socket (`SCM_RIGHTS`): a network namespace's listeners
//! to the engine (module `network_namespace`), and a role's descriptors to its launcher
//! (module `launcher`).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::namespace::errno;

/// Most descriptors one message carries.
pub(super) const MAX_FDS: usize = 8;

/// Room for [`MAX_FDS`] descriptors in one `SCM_RIGHTS` message (aligned).
type ControlBuffer = [u64; 8];

/// Sends `data` (at least one byte) with `fds` attached (at most [`MAX_FDS`]) in one
/// message. Allocation-free (usable in a forked child); the error is an errno.
pub(super) fn send_fds(channel: RawFd, data: &[u8], fds: &[RawFd]) -> Result<(), i32> {
    if fds.len() > MAX_FDS || data.is_empty() {
        return Err(libc::EINVAL);
    }
    let mut control: ControlBuffer = [0; 8];
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    let fds_bytes = size_of_val(fds) as libc::c_uint;
    // SAFETY: the message points at buffers that outlive the call (the kernel only reads
    // `data`); the control buffer is large enough for the header and MAX_FDS descriptors
    // (checked by a test), and CMSG_* only compute offsets into it.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        if !fds.is_empty() {
            message.msg_control = control.as_mut_ptr().cast();
            message.msg_controllen = libc::CMSG_SPACE(fds_bytes) as _;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(fds_bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast(), fds.len());
        }
        loop {
            let sent = libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL);
            if sent == data.len() as isize {
                return Ok(());
            }
            if sent >= 0 {
                // A stream socket took part of it: the peer reads a short message.
                return Err(libc::EMSGSIZE);
            }
            if errno() != libc::EINTR {
                return Err(errno());
            }
        }
    }
}

/// Receives one message into `data` (for a stream socket: waits until `data` is full or
/// the peer closed) and the descriptors attached to it, close-on-exec. The byte count is
/// 0 when the peer closed without sending.
pub(super) fn receive_fds(channel: RawFd, data: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut control: ControlBuffer = [0; 8];
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
    // SAFETY: the message points at buffers that outlive the call; the descriptors the
    // kernel placed in the control buffer are taken over once each.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = size_of::<ControlBuffer>() as _;
        let received = loop {
            let received =
                libc::recvmsg(channel, &mut message, libc::MSG_CMSG_CLOEXEC | libc::MSG_WAITALL);
            if received >= 0 {
                break received as usize;
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        };
        let mut fds = Vec::new();
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                for index in 0..bytes / size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(index).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
        if message.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "too many descriptors sent"));
        }
        Ok((received, fds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_control_buffer_holds_the_most_descriptors_a_message_carries() {
        // SAFETY: CMSG_SPACE only computes a size.
        let needed = unsafe { libc::CMSG_SPACE((MAX_FDS * size_of::<RawFd>()) as u32) };
        assert!(needed as usize <= size_of::<ControlBuffer>());
    }

    #[test]
    fn descriptors_arrive_with_their_message_and_work() {
        let (engine, child) = UnixStream::pair().unwrap();
        let (reader, mut writer) = io::pipe().unwrap();
        send_fds(engine.as_raw_fd(), b"hello", &[reader.as_raw_fd()]).unwrap();
        drop(reader);
        let mut data = [0u8; 5];
        let (count, fds) = receive_fds(child.as_raw_fd(), &mut data).unwrap();
        assert_eq!((count, &data), (5, b"hello"));
        assert_eq!(fds.len(), 1);
        io::Write::write_all(&mut writer, b"through").unwrap();
        drop(writer);
        let mut read = String::new();
        io::Read::read_to_string(
            &mut std::fs::File::from(fds.into_iter().next().unwrap()),
            &mut read,
        )
        .unwrap();
        assert_eq!(read, "through");
        drop(engine);
        assert_eq!(receive_fds(child.as_raw_fd(), &mut data).unwrap().0, 0);
    }
}
