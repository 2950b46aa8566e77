//! Deleting whole session folders and measuring them, for `DELETE …?purge=true` and the
//! retention rules (`output.retain_days`, `output.max_total_mb`).
//!
//! A folder is first renamed to `.purge-<id>` (atomic: the session is gone at once, never half
//! there), then removed; a crash in between leaves only a `.purge-*` folder, removed at the
//! next start.

use super::{SESSION_JSON, SessionDir, Store};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

const PURGE_PREFIX: &str = ".purge-";

impl Store {
    /// Delete a session's folder (`id` is a session id from the map, never from a URL).
    pub fn remove_session(&self, id: &str) -> io::Result<()> {
        let doomed = self.unlink_session(id)?;
        fs::remove_dir_all(doomed)
    }

    /// The first half of `remove_session`: the folder is out of sight at once (renamed);
    /// returns where it went, for `fs::remove_dir_all` outside any lock.
    pub fn unlink_session(&self, id: &str) -> io::Result<PathBuf> {
        if !id.starts_with("sess_") || id.contains(['/', '\\']) || id.contains("..") {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a session id"));
        }
        let doomed = self.root.join(format!("{PURGE_PREFIX}{id}"));
        fs::rename(self.root.join(id), &doomed)?;
        Ok(doomed)
    }

    /// Remove `.purge-*` folders a crash left half deleted.
    pub fn remove_purge_leftovers(&self) {
        let Ok(entries) = fs::read_dir(&self.root) else { return };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(PURGE_PREFIX) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

impl SessionDir {
    /// Bytes used by everything in the folder (files and screenshots included).
    pub fn disk_usage(&self) -> u64 {
        usage(&self.dir, 3)
    }

    /// When `session.json` was last written: for an ended session, when it ended.
    pub fn last_written(&self) -> Option<SystemTime> {
        fs::metadata(self.path(SESSION_JSON)).and_then(|m| m.modified()).ok()
    }
}

fn usage(dir: &Path, depth: u32) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() && depth > 0 {
            total += usage(&entry.path(), depth - 1);
        } else if meta.is_file() {
            total += meta.len();
        }
    }
    total
}
