//! The output directory: one folder per session, written as things happen.
//!
//! Layout: `session.json`, `log.jsonl`, `steps.jsonl`, `conversation.jsonl` (the journal),
//! `notes.json`, `report.md`, `conversation_log.json` (written whole at the end), `files.json`
//! (which file is a download, which generated),
//! `screenshots/`, `files/` (`files.rs`, uploads through `staged.rs`), `inputs/` (what a person
//! handed to the session, made with the first), `tool_outputs/` (`tool_outputs.rs`), `recording/`
//! (`recording.rs`, one GIF frame per acting step); beside the session folders,
//! `schedules/<name>.json` (`schedules.rs`).
//! The log is read back by `log_lines.rs`, the files zipped by `archive.rs`. Invariants: JSON state is replaced atomically (temp file, fsync,
//! rename); an incoming file is staged under the session folder and renamed into `files/` only
//! when complete, so a failed upload leaves nothing; names are sanitized and never overwrite.
//! No other module builds paths inside the output directory. Folders are created 0700 and
//! files 0600 whatever the umask; `files/`, `inputs/` and `screenshots/` are never followed when they are
//! symbolic links (nor are links inside them).

use crate::protocol::{SessionRecord, SyncPolicy};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod appends;
mod archive;
mod files;
mod lock;
mod log_lines;
mod recording;
mod retention;
mod schedules;
mod sniff;
mod staged;
mod sync;
mod tool_outputs;
pub use archive::write_zip;
pub use files::{FileIndex, FileInfo};
pub use lock::{DirLock, LOCK_FILE};
pub use recording::RECORDING_DIR;
pub use staged::{StageError, StagedFile};
use sync::Syncer;

pub const SESSION_JSON: &str = "session.json";
pub const LOG_JSONL: &str = "log.jsonl";
pub const STEPS_JSONL: &str = "steps.jsonl";
pub const NOTES_JSON: &str = "notes.json";
pub const REPORT_MD: &str = "report.md";
pub const CONVERSATION_JSON: &str = "conversation_log.json";
pub const CONVERSATION_JSONL: &str = "conversation.jsonl";
pub const FILES_JSON: &str = "files.json";
pub const FILES_DIR: &str = "files";
pub const SCREENSHOTS_DIR: &str = "screenshots";
pub const TOOL_OUTPUTS_DIR: &str = "tool_outputs";
pub const INPUTS_DIR: &str = "inputs";

/// The root of all session folders.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    syncer: Arc<Syncer>,
}

impl Store {
    pub fn open(root: &Path, sync: SyncPolicy) -> io::Result<Store> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(root)?;
        Ok(Store { root: root.to_path_buf(), syncer: Syncer::start(sync) })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The exclusive lock on the directory (see `store/lock.rs`), held while the daemon runs.
    pub fn lock(&self) -> io::Result<DirLock> {
        lock::lock_dir(&self.root)
    }

    /// Create a new, empty session folder; fails with `AlreadyExists` on a clash.
    pub fn create_session_dir(&self, id: &str) -> io::Result<SessionDir> {
        let dir = self.root.join(id);
        private_dir(&dir)?;
        let made = private_dir(&dir.join(FILES_DIR)).and_then(|()| private_dir(&dir.join(SCREENSHOTS_DIR)));
        if let Err(e) = made {
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(SessionDir { dir, syncer: Arc::clone(&self.syncer), appends: Arc::default() })
    }

    /// Every session folder with a readable `session.json`. Unreadable ones are reported and
    /// skipped: one damaged folder must not keep the daemon from starting.
    pub fn load_all(&self) -> io::Result<Vec<(SessionDir, SessionRecord)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.root)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with("sess_") || !entry.file_type()?.is_dir() {
                continue;
            }
            let dir = SessionDir { dir: entry.path(), syncer: Arc::clone(&self.syncer), appends: Arc::default() };
            match fs::read(dir.path(SESSION_JSON))
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<SessionRecord>(&b).map_err(|e| e.to_string()))
            {
                Ok(record) if record.session_id == name => out.push((dir, record)),
                Ok(_) => log::warn!("skipping {name}: session.json names another session"),
                Err(e) => log::warn!("skipping {name}: cannot load session.json: {e}"),
            }
        }
        Ok(out)
    }
}

/// One session's folder.
#[derive(Debug, Clone)]
pub struct SessionDir {
    dir: PathBuf,
    syncer: Arc<Syncer>,
    appends: Arc<appends::Appends>,
}

impl SessionDir {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write_json<T: serde::Serialize>(&self, name: &str, value: &T) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        write_atomic(&self.path(name), &bytes)
    }

    pub fn write_text(&self, name: &str, text: &str) -> io::Result<()> {
        write_atomic(&self.path(name), text.as_bytes())
    }

    pub fn read_text(&self, name: &str) -> io::Result<Option<String>> {
        match fs::read_to_string(self.path(name)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Append one line to `log.jsonl`; returns the byte offset the line starts at.
    pub fn append_log_line(&self, line: &str) -> io::Result<u64> {
        self.append_line(LOG_JSONL, line)
    }

    /// Sync this session's appended files now (before it reports a final status).
    pub fn sync_now(&self) {
        self.syncer.sync_under(&self.dir);
    }

    pub fn files_dir(&self) -> PathBuf {
        self.path(FILES_DIR)
    }

    pub fn screenshots_dir(&self) -> PathBuf {
        self.path(SCREENSHOTS_DIR)
    }

    /// Where a person's input files are kept (made with the first one).
    pub fn inputs_dir(&self) -> PathBuf {
        self.path(INPUTS_DIR)
    }

    /// Remove staging and temp files a crash left behind (`.upload-*.part`, `.*.tmp`).
    pub fn remove_leftovers(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if (name.starts_with(".upload-") && name.ends_with(".part"))
                || (name.starts_with('.') && name.ends_with(".tmp"))
            {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// A new folder only its owner may enter (0700 exactly, the umask notwithstanding).
pub(super) fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// A directory itself, not a symbolic link to one.
pub(super) fn real_dir(dir: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir())
}

/// Replace `path` atomically: temp file beside it, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
