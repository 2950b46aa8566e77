//! Bytes moved between two sockets through a pipe with splice(2), so a large request body the
//! relay passes on (an upload) is never copied through user space.

use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The most one call moves; also the pipe size asked for (the unprivileged ceiling).
const CHUNK: usize = 1 << 20;

pub struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 fills the two-element array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A larger pipe moves more per call; the default (64 KiB) still works.
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        Ok(Pipe { read, write })
    }

    /// Move up to `max` bytes from `from` to `to`; 0 at the end of `from`. The sockets' own
    /// timeouts bound both halves (a timeout is `TimedOut`).
    pub fn transfer(&mut self, from: RawFd, to: RawFd, max: usize) -> io::Result<usize> {
        let n = splice(from, self.write.as_raw_fd(), max.min(CHUNK))?;
        let mut left = n;
        while left > 0 {
            // Bytes are in the pipe now: no EINVAL here may send the caller back to plain
            // reads (they would skip these bytes), so it ends the transfer instead.
            left -= splice(self.read.as_raw_fd(), to, left).map_err(|e| match e.raw_os_error() {
                Some(libc::EINVAL) => io::Error::other("splice to the handler failed mid-transfer"),
                _ => e,
            })?;
        }
        Ok(n)
    }
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: splice between descriptors the caller keeps open, with no offsets.
    let n = unsafe { libc::splice(from, std::ptr::null_mut(), to, std::ptr::null_mut(), len, libc::SPLICE_F_MOVE) };
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => {
            let e = io::Error::last_os_error();
            Err(if e.kind() == ErrorKind::WouldBlock { ErrorKind::TimedOut.into() } else { e })
        }
    }
}
