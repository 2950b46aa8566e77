//! The output directory: one folder per session, written as things happen.
//!
//! Layout: `session.json`, `log.jsonl`, `steps.jsonl`, `conversation.jsonl` (the journal),
//! `notes.json`, `report.md`, `conversation_log.json` (written whole at the end), `files.json`
//! (which file is a download, which generated),
//! `screenshots/`, `files/`, `tool_outputs/` (tool outputs too long for the model's context,
//! one `<id>.txt` each, ids `out_NNN_<tool>`); beside the session folders, `schedules/<name>.json`
//! (`store/schedules.rs`). Invariants: JSON state is replaced atomically (temp file, fsync,
//! rename); an incoming file is staged under the session folder and renamed into `files/` only
//! when complete, so a failed upload leaves nothing; names are sanitized and never overwrite.
//! No other module builds paths inside the output directory. Folders are created 0700 and
//! files 0600 whatever the umask; `files/` and `screenshots/` are never followed when they are
//! symbolic links (nor are links inside them).

use crate::protocol::{FileKind, SessionRecord, SyncPolicy};
use crate::util::filename::split_ext;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

mod appends;
mod lock;
mod retention;
mod schedules;
mod sniff;
mod sync;
pub use lock::{DirLock, LOCK_FILE};
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

    /// Byte offsets of every complete line of `log.jsonl` (a torn last line is ignored).
    pub fn index_log(&self) -> io::Result<Vec<u64>> {
        let file = match File::open(self.path(LOG_JSONL)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut reader = BufReader::new(file);
        let mut offsets = Vec::new();
        let mut offset = 0u64;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            offsets.push(offset);
            offset += n as u64;
        }
        Ok(offsets)
    }

    /// Up to `max` lines of `log.jsonl` starting at byte `from`.
    pub fn read_log_lines(&self, from: u64, max: usize) -> io::Result<Vec<String>> {
        let mut file = File::open(self.path(LOG_JSONL))?;
        file.seek(SeekFrom::Start(from))?;
        let mut out = Vec::new();
        for line in BufReader::new(file).lines() {
            if out.len() >= max {
                break;
            }
            out.push(line?);
        }
        Ok(out)
    }

    pub fn files_dir(&self) -> PathBuf {
        self.path(FILES_DIR)
    }

    pub fn screenshots_dir(&self) -> PathBuf {
        self.path(SCREENSHOTS_DIR)
    }

    /// The file manifest: what is in `files/` and `screenshots/`, with kinds and sizes.
    pub fn scan_files(&self) -> io::Result<FileIndex> {
        let kinds: BTreeMap<String, FileKind> = match fs::read(self.path(FILES_JSON)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        let mut index = FileIndex::default();
        for (dir, default_kind) in
            [(self.files_dir(), FileKind::Download), (self.screenshots_dir(), FileKind::Screenshot)]
        {
            if !real_dir(&dir) {
                continue;
            }
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
                let meta = entry.metadata()?;
                if !meta.is_file() || name.starts_with('.') {
                    continue;
                }
                let kind = if default_kind == FileKind::Screenshot {
                    FileKind::Screenshot
                } else {
                    kinds.get(&name).copied().unwrap_or(FileKind::Download)
                };
                index.insert(name, kind, meta.len());
            }
        }
        Ok(index)
    }

    pub fn save_file_kinds(&self, index: &FileIndex) -> io::Result<()> {
        let kinds: BTreeMap<&str, FileKind> = index
            .entries
            .iter()
            .filter(|(_, e)| e.kind != FileKind::Screenshot)
            .map(|(n, e)| (n.as_str(), e.kind))
            .collect();
        self.write_json(FILES_JSON, &kinds)
    }

    /// Absolute path of a stored file, resolved strictly inside this session's folders.
    pub fn file_path(&self, index: &FileIndex, name: &str) -> Option<PathBuf> {
        let entry = index.entries.get(name)?;
        let path = self.path_for(entry.kind, name);
        let parent_real = path.parent().is_some_and(real_dir);
        let file_real = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        (parent_real && file_real).then_some(path)
    }

    /// Where a file of this kind and (already sanitized) name lives.
    pub fn path_for(&self, kind: FileKind, name: &str) -> PathBuf {
        let dir = if kind == FileKind::Screenshot { self.screenshots_dir() } else { self.files_dir() };
        dir.join(name)
    }

    /// Store a tool output under `tool_outputs/` as the next `out_NNN_<tool>`; its id.
    pub fn write_tool_output(&self, tool: &str, text: &str) -> io::Result<String> {
        let dir = self.path(TOOL_OUTPUTS_DIR);
        fs::create_dir_all(&dir)?;
        let tool: String = tool.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect();
        let id = format!("out_{:03}_{tool}", self.tool_outputs()?.len() + 1);
        write_atomic(&dir.join(format!("{id}.txt")), text.as_bytes())?;
        Ok(id)
    }

    /// A stored tool output by id; `None` for an id that is not one (nothing outside the folder
    /// can be named: ids are letters, digits and `_`).
    pub fn read_tool_output(&self, id: &str) -> io::Result<Option<String>> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(None);
        }
        match fs::read_to_string(self.path(TOOL_OUTPUTS_DIR).join(format!("{id}.txt"))) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The ids of the stored tool outputs, in order, with their sizes in bytes.
    pub fn tool_outputs(&self) -> io::Result<Vec<(String, u64)>> {
        let entries = match fs::read_dir(self.path(TOOL_OUTPUTS_DIR)) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_suffix(".txt").filter(|n| n.starts_with("out_")) {
                out.push((id.to_string(), entry.metadata()?.len()));
            }
        }
        out.sort();
        Ok(out)
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

    /// A staging file for an incoming upload, removed on drop unless committed.
    pub fn stage(&self) -> io::Result<StagedFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = self.path(&format!(".upload-{}-{n}.part", std::process::id()));
        let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        Ok(StagedFile { path, file: Some(file), written: 0, committed: false })
    }
}

#[derive(Debug, Clone, Copy)]
pub struct FileInfo {
    pub kind: FileKind,
    pub size: u64,
}

/// In-memory view of a session's stored files.
#[derive(Debug, Default, Clone)]
pub struct FileIndex {
    pub entries: BTreeMap<String, FileInfo>,
    pub total_bytes: u64,
}

impl FileIndex {
    pub fn insert(&mut self, name: String, kind: FileKind, size: u64) {
        self.total_bytes += size;
        if let Some(old) = self.entries.insert(name, FileInfo { kind, size }) {
            self.total_bytes -= old.size;
        }
    }

    /// Files that count against `max_files_per_session` (screenshots do not).
    pub fn file_count(&self) -> usize {
        self.entries.values().filter(|e| e.kind != FileKind::Screenshot).count()
    }

    /// `name`, or `name-2`, `name-3`… before the extension, whichever is free.
    pub fn unique_name(&self, name: &str) -> String {
        if !self.entries.contains_key(name) {
            return name.to_string();
        }
        let (stem, ext) = split_ext(name);
        (2..)
            .map(|n| format!("{stem}-{n}{ext}"))
            .find(|candidate| !self.entries.contains_key(candidate))
            .unwrap_or_else(|| name.to_string())
    }
}

/// An upload in progress. Dropped without `commit`, it deletes itself.
pub struct StagedFile {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    committed: bool,
}

/// Why copying into a staged file stopped.
#[derive(Debug)]
pub enum StageError {
    /// The source had more than `limit` bytes.
    Limit,
    Io(io::Error),
}

impl StagedFile {
    /// Copy `src` in, refusing to go past `limit` bytes in total.
    pub fn copy_from(&mut self, src: &mut dyn Read, limit: u64) -> Result<u64, StageError> {
        let file = self.file.as_mut().ok_or_else(|| StageError::Io(io::Error::other("staged file already closed")))?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) => return Ok(self.written),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StageError::Io(e)),
            };
            if self.written + n as u64 > limit {
                return Err(StageError::Limit);
            }
            file.write_all(&buf[..n]).map_err(StageError::Io)?;
            self.written += n as u64;
        }
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let file = self.file.as_mut().ok_or_else(|| io::Error::other("staged file already closed"))?;
        file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Whether the staged bytes (after `finish`) equal the file at `other`'s, compared in
    /// pieces so a large file needs no large buffer.
    pub fn same_bytes_as(&self, other: &Path) -> bool {
        let (Ok(mut a), Ok(mut b)) = (File::open(&self.path), File::open(other)) else { return false };
        let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
        loop {
            let n = match a.read(&mut x) {
                Ok(n) => n,
                Err(_) => return false,
            };
            if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
                return false;
            }
            if n == 0 {
                return b.read(&mut y[..1]).is_ok_and(|m| m == 0);
            }
        }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// fsync and close; done before taking any lock, since it may take seconds for big files.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            file.sync_all()?;
        }
        Ok(())
    }

    /// Rename to `dest` (after `finish`, which this does if it was not done). `dest` must not
    /// exist (names are made unique first).
    pub fn commit(mut self, dest: &Path) -> io::Result<()> {
        self.finish()?;
        if !dest.parent().is_some_and(real_dir) {
            return Err(io::Error::other("the session's files folder is not a plain directory"));
        }
        fs::rename(&self.path, dest)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.committed {
            self.file.take();
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A new folder only its owner may enter (0700 exactly, the umask notwithstanding).
fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// A directory itself, not a symbolic link to one.
fn real_dir(dir: &Path) -> bool {
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

/// Write a zip of `files` (name in archive, path on disk) to `out`, streaming: each file is
/// copied through a fixed buffer, never held whole in memory; incompressible content is
/// stored, the rest deflated fast (`store/sniff.rs`).
pub fn write_zip(files: &[(String, PathBuf)], out: impl Write) -> zip::result::ZipResult<()> {
    use zip::CompressionMethod;
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new_stream(out);
    for (name, path) in files {
        let mut src = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // removed meanwhile
            Err(e) => return Err(e.into()),
        };
        let size = src.metadata()?.len();
        let (method, level) = if sniff::compressible(&mut src)? {
            (CompressionMethod::Deflated, Some(sniff::FAST_LEVEL))
        } else {
            (CompressionMethod::Stored, None)
        };
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .compression_level(level)
            .large_file(size >= u32::MAX as u64)
            .unix_permissions(0o644);
        zip.start_file(name.as_str(), options)?;
        copy_big(&mut src, &mut zip)?;
    }
    zip.finish()?;
    Ok(())
}

/// `io::copy` through 256 KiB instead of 8 KiB: fewer, larger writes into the zip and the pipe.
fn copy_big(src: &mut File, out: &mut impl Write) -> io::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match src.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => out.write_all(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names() {
        let mut idx = FileIndex::default();
        idx.insert("a.pdf".into(), FileKind::Download, 1);
        idx.insert("a-2.pdf".into(), FileKind::Download, 1);
        assert_eq!(idx.unique_name("a.pdf"), "a-3.pdf");
        assert_eq!(idx.unique_name("b"), "b");
        idx.insert("b".into(), FileKind::Download, 1);
        assert_eq!(idx.unique_name("b"), "b-2");
    }
}
