//! When appended lines reach the disk (`output.sync`, `protocol::SyncPolicy`).
//!
//! Every append is one `write` to the kernel, so a killed daemon loses nothing whatever the
//! policy; the policy is about power loss and kernel crashes. `always`: fdatasync before the
//! append returns. `batch` (the default): the file is marked dirty and the flusher thread
//! fdatasyncs it at most `BATCH_WINDOW` later; a session's dirty files are also synced before it
//! reports a final status (`SessionDir::sync_now`). `off`: the kernel decides.
//!
//! The flusher holds only the shared state; it ends when the last `Syncer` handle is dropped.

use crate::protocol::SyncPolicy;
use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The longest a line waits for its fdatasync under `batch`.
pub const BATCH_WINDOW: Duration = Duration::from_millis(200);

/// One per store, shared by its session folders.
pub struct Syncer {
    policy: SyncPolicy,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    dirty: Mutex<Dirty>,
    wake: Condvar,
}

#[derive(Default)]
struct Dirty {
    paths: BTreeSet<PathBuf>,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Dirty> {
        self.dirty.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for Syncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Syncer({})", self.policy.as_str())
    }
}

impl Syncer {
    /// A syncer for `policy`; under `batch` its flusher thread starts here.
    pub fn start(policy: SyncPolicy) -> Arc<Syncer> {
        let shared = Arc::new(Shared::default());
        if policy == SyncPolicy::Batch {
            let flusher = Arc::clone(&shared);
            let spawned = std::thread::Builder::new().name("fsync-batch".into()).spawn(move || flush_loop(&flusher));
            if let Err(e) = spawned {
                // Appends still reach the kernel; only the timed fdatasync is lost.
                log::error!("cannot start the fsync thread ({e}); lines are synced at session ends only");
            }
        }
        Arc::new(Syncer { policy, shared })
    }

    /// A line was appended to `file` (at `path`): make it as durable as the policy says.
    pub(super) fn appended(&self, path: &Path, file: &File) -> io::Result<()> {
        match self.policy {
            SyncPolicy::Always => file.sync_data(),
            SyncPolicy::Batch => {
                let mut dirty = self.shared.lock();
                // Most appends find their file dirty already: no copy of its path for those.
                if !dirty.paths.contains(path) {
                    dirty.paths.insert(path.to_path_buf());
                    if dirty.paths.len() == 1 {
                        self.shared.wake.notify_one();
                    }
                }
                Ok(())
            }
            SyncPolicy::Off => Ok(()),
        }
    }

    /// Sync now every dirty file under `dir` (a session about to report its final status).
    pub(super) fn sync_under(&self, dir: &Path) {
        let paths: Vec<PathBuf> = {
            let mut dirty = self.shared.lock();
            let under: Vec<PathBuf> = dirty.paths.iter().filter(|p| p.starts_with(dir)).cloned().collect();
            for p in &under {
                dirty.paths.remove(p);
            }
            under
        };
        sync_paths(&paths);
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let paths = {
            let mut dirty = self.shared.lock();
            dirty.closed = true;
            std::mem::take(&mut dirty.paths)
        };
        self.shared.wake.notify_all();
        sync_paths(&paths);
    }
}

/// Wait for a dirty file, let the window fill, sync what gathered; until the syncer is dropped.
fn flush_loop(shared: &Shared) {
    loop {
        let mut dirty = shared.lock();
        while dirty.paths.is_empty() && !dirty.closed {
            dirty = shared.wake.wait(dirty).unwrap_or_else(|p| p.into_inner());
        }
        if dirty.closed {
            return;
        }
        drop(dirty);
        std::thread::sleep(BATCH_WINDOW);
        let paths = std::mem::take(&mut shared.lock().paths);
        sync_paths(&paths);
    }
}

fn sync_paths<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) {
    for path in paths {
        // fdatasync through any descriptor flushes the file's data; a file deleted meanwhile
        // (a purged session) has nothing left to keep.
        match File::open(path).and_then(|f| f.sync_data()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => log::warn!("cannot sync {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn batch_marks_and_syncs_under_a_folder() {
        let dir = crate::util::private_temp_dir("sync-test").unwrap();
        let path = dir.join("a.jsonl");
        let mut file = File::create(&path).unwrap();
        file.write_all(b"x\n").unwrap();
        let syncer = Syncer::start(SyncPolicy::Batch);
        syncer.appended(&path, &file).unwrap();
        assert_eq!(syncer.shared.lock().paths.len(), 1);
        syncer.sync_under(&dir);
        assert!(syncer.shared.lock().paths.is_empty());
        syncer.appended(&path, &file).unwrap();
        std::thread::sleep(BATCH_WINDOW * 2);
        assert!(syncer.shared.lock().paths.is_empty(), "the flusher took it within the window");
        let _ = std::fs::remove_dir_all(dir);
    }
}
