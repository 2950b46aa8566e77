//! Ctrl-C or `kill` during an eval. SIGINT and SIGTERM are taken on a thread of their own
//! (blocked in every other thread: `arm` runs before any starts), which stops the eval's worker
//! (SIGTERM first, so it takes its browser down), removes the scratch folder unless `--keep`
//! asked for it, and exits 130 (SIGINT) or 143 (SIGTERM). Without this the default action ended
//! the process and left the private folder (the sessions, downloads, the site's posts) behind.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the worker has to end its browser after SIGTERM before it is killed.
const WORKER_GRACE: Duration = Duration::from_secs(5);

/// What a signal must clean up.
struct Owned {
    scratch: Option<PathBuf>,
    worker: Option<u32>,
}

static OWNED: Mutex<Owned> = Mutex::new(Owned { scratch: None, worker: None });

fn owned() -> MutexGuard<'static, Owned> {
    // A panic elsewhere must not stop the cleanup: the data is still right.
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Take SIGINT and SIGTERM on a thread of their own from now on. Call it before any other
/// thread starts: one started earlier keeps its own mask, and the signal could end it there.
pub fn arm() -> std::io::Result<()> {
    // SAFETY: a zeroed sigset is initialised by sigemptyset before use; pthread_sigmask sets
    // this thread's mask only, which the threads it starts inherit.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        set
    };
    std::thread::Builder::new().name("eval-signals".into()).spawn(move || {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` was initialised above; `sig` is a valid out pointer.
        while unsafe { libc::sigwait(&set, &mut sig) } != 0 {}
        clean_up();
        std::process::exit(128 + sig);
    })?;
    Ok(())
}

/// The scratch folder a signal removes (none with `keep`).
pub fn own_scratch(dir: &Path, keep: bool) {
    owned().scratch = (!keep).then(|| dir.to_path_buf());
}

/// The scratch folder is gone (or kept): nothing for a signal to remove.
pub fn disown_scratch() {
    owned().scratch = None;
}

/// The worker process a signal stops.
pub fn own_worker(pid: u32) {
    owned().worker = Some(pid);
}

/// Stop the worker now (the stack is done with it): SIGTERM, then SIGKILL after the grace.
pub fn end_worker(worker: &mut Child) {
    owned().worker = None;
    stop(worker.id());
    // Reaped by `stop` already; this only updates the handle's own record.
    let _ = worker.try_wait();
}

fn clean_up() {
    let (scratch, worker) = {
        let mut o = owned();
        (o.scratch.take(), o.worker.take())
    };
    if let Some(pid) = worker {
        stop(pid);
    }
    if let Some(dir) = scratch {
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!("agent-controller: eval stopped by a signal; removed {}", dir.display());
    }
}

/// SIGTERM to our child `pid`, waited for up to `WORKER_GRACE`, then SIGKILL; reaped either way.
fn stop(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    // SAFETY: `pid` is our own child, not yet reaped (only `stop` reaps it).
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + WORKER_GRACE;
    while Instant::now() < deadline {
        // SAFETY: as above; WNOHANG does not block. Non-zero: reaped, or no such child.
        if unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}
