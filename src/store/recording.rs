//! A session's recording on disk: `recording/NNNNNN.gif`, one frame per acting step (its
//! step number), each written atomically (temp file, fsync, rename), so a frame is either
//! whole or absent. The folder is created 0700 on the first frame and never followed when it
//! is a symbolic link (nor are links inside it); its bytes count toward the session's storage
//! (`files.rs` adds them to the index's total).

use super::{SessionDir, private_dir, real_dir, write_atomic};
use std::fs;
use std::io;
use std::path::PathBuf;

pub const RECORDING_DIR: &str = "recording";

impl SessionDir {
    fn recording_dir(&self) -> PathBuf {
        self.path(RECORDING_DIR)
    }

    /// Write step `step`'s frame (replacing one of the same step).
    pub fn write_frame(&self, step: u64, gif: &[u8]) -> io::Result<()> {
        let dir = self.recording_dir();
        match private_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && real_dir(&dir) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(io::Error::other("recording/ is not a plain folder"));
            }
            Err(e) => return Err(e),
        }
        write_atomic(&dir.join(format!("{step:06}.gif")), gif)
    }

    /// The frames in step order, each with its size: plain files named `NNNNNN.gif` only.
    pub fn frames(&self) -> Vec<(PathBuf, u64)> {
        let dir = self.recording_dir();
        if !real_dir(&dir) {
            return Vec::new();
        }
        let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
        let mut out: Vec<(String, PathBuf, u64)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                let step = name.strip_suffix(".gif")?;
                let meta = fs::symlink_metadata(e.path()).ok()?;
                (step.len() == 6 && step.bytes().all(|b| b.is_ascii_digit()) && meta.file_type().is_file())
                    .then(|| (name, e.path(), meta.len()))
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, path, size)| (path, size)).collect()
    }

    /// What the frames hold, in bytes.
    pub fn recording_bytes(&self) -> u64 {
        self.frames().iter().map(|(_, size)| size).sum()
    }
}
