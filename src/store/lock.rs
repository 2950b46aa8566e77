//! One daemon per output directory: an exclusive `flock` on `<output.dir>/.lock`, held for the
//! daemon's life, with the holder's pid written inside so a second daemon can name it.
//!
//! The lock belongs to the open file description: it is released when the `DirLock` is
//! dropped or the process dies (even by SIGKILL), so a stale file never blocks a restart.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub const LOCK_FILE: &str = ".lock";

/// The held lock; dropping it releases the directory.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Take the lock or say who holds it. `Err` with `WouldBlock` names the holder's pid.
pub fn lock_dir(root: &Path) -> io::Result<DirLock> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(root.join(LOCK_FILE))?;
    // SAFETY: flock on a valid, owned descriptor; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(err);
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let holder = text.trim();
        let holder = if holder.is_empty() { "an unknown pid".to_string() } else { format!("pid {holder}") };
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("another agent-controller ({holder}) already uses this output directory"),
        ));
    }
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    Ok(DirLock { _file: file })
}
