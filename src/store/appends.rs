//! A session's JSON-lines files (`log.jsonl`, `steps.jsonl`, `conversation.jsonl`), kept open
//! while its thread runs: an agent step appends about six lines, and opening, seeking and
//! closing the file around each write were three system calls of four. A session that is not
//! running (recovered at start, or ended) opens the file for each line, so ended sessions hold
//! no descriptors.
//!
//! Invariant: every append to these files goes through `SessionDir::append_line`, under one
//! lock per session, so a kept file's recorded length is where its next line starts.

use super::SessionDir;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The files a running session keeps open; `None` while it is not running.
#[derive(Debug, Default)]
pub(super) struct Appends(Mutex<Option<Vec<Kept>>>);

#[derive(Debug)]
struct Kept {
    name: &'static str,
    file: File,
    len: u64,
}

impl Appends {
    fn lock(&self) -> MutexGuard<'_, Option<Vec<Kept>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionDir {
    /// From now on, appended files stay open (the session's thread starts its work).
    pub fn keep_files_open(&self) {
        self.appends.lock().get_or_insert_with(Vec::new);
    }

    /// Close them (the session ended); later lines open their file each.
    pub fn close_files(&self) {
        *self.appends.lock() = None;
    }

    /// Append one line to a JSON-lines file of the session (in one write); returns the byte
    /// offset it starts at. A failed write (a full disk) is cut back off, so no torn line is
    /// left for the next one to follow.
    pub fn append_line(&self, name: &'static str, line: &str) -> io::Result<u64> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let mut appends = self.appends.lock();
        let Some(kept) = appends.as_mut() else {
            let (mut file, offset) = self.open_to_append(name)?;
            return self.write_line(name, &mut file, offset, &buf);
        };
        let at = match kept.iter().position(|k| k.name == name) {
            Some(at) => at,
            None => {
                let (file, len) = self.open_to_append(name)?;
                kept.push(Kept { name, file, len });
                kept.len() - 1
            }
        };
        let k = &mut kept[at];
        match self.write_line(name, &mut k.file, k.len, &buf) {
            Ok(offset) => {
                k.len += buf.len() as u64;
                Ok(offset)
            }
            Err(e) => {
                // Its length is uncertain now: the next line opens the file afresh.
                kept.swap_remove(at);
                Err(e)
            }
        }
    }

    fn open_to_append(&self, name: &str) -> io::Result<(File, u64)> {
        let mut file = OpenOptions::new().create(true).append(true).mode(0o600).open(self.path(name))?;
        let len = file.seek(SeekFrom::End(0))?;
        Ok((file, len))
    }

    fn write_line(&self, name: &str, file: &mut File, offset: u64, buf: &[u8]) -> io::Result<u64> {
        if let Err(e) = file.write_all(buf) {
            let _ = file.set_len(offset);
            return Err(e);
        }
        // The line is in the file either way: a failed fdatasync is reported, not a lost line.
        if let Err(e) = self.syncer.appended(&self.path(name), file) {
            log::warn!("cannot sync {}: {e}", self.path(name).display());
        }
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::SyncPolicy;
    use crate::store::{LOG_JSONL, STEPS_JSONL, Store};

    /// Offsets are where each line starts, kept open or not, and an ended session holds no file.
    #[test]
    fn lines_start_where_their_offsets_say_kept_open_or_not() {
        let root = std::env::temp_dir().join(format!("ac-appends-{}", std::process::id()));
        let store = Store::open(&root, SyncPolicy::Off).unwrap();
        let dir = store.create_session_dir("sess_appends").unwrap();
        assert_eq!(dir.append_line(LOG_JSONL, "one").unwrap(), 0);
        dir.keep_files_open();
        assert_eq!(dir.append_line(LOG_JSONL, "two").unwrap(), 4);
        assert_eq!(dir.append_line(STEPS_JSONL, "s").unwrap(), 0);
        assert_eq!(dir.append_line(LOG_JSONL, "three").unwrap(), 8);
        dir.close_files();
        assert!(dir.appends.lock().is_none());
        assert_eq!(dir.append_line(LOG_JSONL, "four").unwrap(), 14);
        assert_eq!(dir.read_log_lines(8, 10).unwrap(), ["three", "four"]);
        assert_eq!(dir.index_log().unwrap(), [0, 4, 8, 14]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
