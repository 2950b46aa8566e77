//! Stopping by signal, and the cleanup it needs.
//!
//! SIGINT/SIGTERM end the worker at once with exit code 0 (a panic ends it too, after the same
//! cleanup: `util::panic`). A long poll may be in flight then;
//! nothing is lost, because the controller fails the command when it sees the worker gone.
//! `exit` runs no destructors, so whoever starts a process group (the browser, a shell
//! command) or creates a temporary folder (a browser profile, the download folder) registers
//! it here under its own name while it exists, and the signal thread takes them down by hand.
//! A new backend registers its own names; nothing in this file changes for it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// Process groups to kill and folders to remove if a signal stops the worker, by owner.
struct Owned {
    groups: BTreeMap<&'static str, i32>,
    dirs: BTreeMap<&'static str, PathBuf>,
}

static OWNED: Mutex<Owned> = Mutex::new(Owned { groups: BTreeMap::new(), dirs: BTreeMap::new() });

fn owned() -> MutexGuard<'static, Owned> {
    // A panic elsewhere must not stop the cleanup: the data is still right.
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// `owner`'s running process group (replaces an earlier one of the same owner).
pub fn own_group(owner: &'static str, pgid: i32) {
    owned().groups.insert(owner, pgid);
}

/// `owner`'s process group has ended.
pub fn disown_group(owner: &'static str) {
    owned().groups.remove(owner);
}

/// A temporary folder `owner` created.
pub fn own_dir(owner: &'static str, dir: PathBuf) {
    owned().dirs.insert(owner, dir);
}

/// `owner`'s folder is gone (or no longer ours to remove).
pub fn disown_dir(owner: &'static str) {
    owned().dirs.remove(owner);
}

/// At a normal exit: remove the temporary folders still registered (a `--download-dir` never
/// is). Backends have removed their own by then; this catches the download folder.
pub fn remove_own_dirs() {
    let dirs = std::mem::take(&mut owned().dirs);
    for dir in dirs.into_values() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Block SIGINT/SIGTERM in every thread and handle them on a thread of their own.
pub fn stop_on_signal() {
    // SAFETY: a zeroed sigset is initialised by sigemptyset before use; the mask is set for
    // this thread before any other starts, so every thread inherits it.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: `set` was initialised above.
        unsafe { libc::sigwait(&set, &mut sig) };
        stop_everything();
        eprintln!("{} [info] stopping (signal {sig})", agent_controller::util::clock::now_rfc3339());
        std::process::exit(0);
    });
}

/// Kill every registered process group, then remove every registered folder (on a signal, and
/// when a panic ends the worker: nothing panics while holding `OWNED`).
pub fn stop_everything() {
    let (groups, dirs) = {
        let mut owned = owned();
        (std::mem::take(&mut owned.groups), std::mem::take(&mut owned.dirs))
    };
    for pgid in groups.into_values().filter(|&p| p > 0) {
        // SAFETY: our own children's process groups.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    for dir in dirs.into_values() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
