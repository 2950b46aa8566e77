//! Private temporary files (folders: `agent_controller::util::private_temp_dir`).
//!
//! Everything the worker writes to a shared temporary place is created exclusively, with an
//! unguessable name and owner-only permissions, so another user can neither predict it nor
//! plant a symlink in its way. Removing what is created here is the caller's job.

use std::path::{Path, PathBuf};

/// A new file in `dir` that did not exist before (never follows a planted symlink).
pub fn temp_file(dir: &Path, tag: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        let path = dir.join(format!(".{tag}-{:016x}", agent_controller::util::clock::random_u64()));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
