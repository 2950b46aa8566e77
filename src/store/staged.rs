//! Uploads in progress: staged under the session folder, copied in up to a limit, fsynced, and
//! renamed into `files/` only when complete; a staged file dropped before that deletes itself,
//! so a failed upload leaves nothing.

use super::{SessionDir, real_dir};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

impl SessionDir {
    /// A staging file for an incoming upload, removed on drop unless committed.
    pub fn stage(&self) -> io::Result<StagedFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = self.path(&format!(".upload-{}-{n}.part", std::process::id()));
        let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        Ok(StagedFile { path, file: Some(file), written: 0, committed: false })
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
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The source had more than `limit` bytes.
    #[error("more bytes than the staging limit")]
    Limit,
    #[error(transparent)]
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
