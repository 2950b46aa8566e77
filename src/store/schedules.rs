//! Schedules kept in the output directory: `schedules/<name>.json`, one file per schedule,
//! each replaced atomically (temp file, fsync, rename) and 0600, since a schedule's session
//! body may hold credentials. The scheduler says what goes inside; names are checked by it as
//! safe file names before they reach here.

use super::{Store, write_atomic};
use std::fs;
use std::io;
use std::path::PathBuf;

const SCHEDULES_DIR: &str = "schedules";

impl Store {
    fn schedules_dir(&self) -> PathBuf {
        self.root.join(SCHEDULES_DIR)
    }

    /// Every `<name>.json` with its bytes; temp files and anything else are skipped.
    pub fn load_schedules(&self) -> io::Result<Vec<(String, Vec<u8>)>> {
        let dir = self.schedules_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            let file = entry.file_name();
            let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".json")) else { continue };
            if name.starts_with('.') || !entry.file_type()?.is_file() {
                continue;
            }
            out.push((name.to_string(), fs::read(entry.path())?));
        }
        out.sort();
        Ok(out)
    }

    /// Write `<name>.json` whole, atomically.
    pub fn write_schedule(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let dir = self.schedules_dir();
        if !dir.is_dir() {
            super::private_dir(&dir)
                .or_else(|e| if e.kind() == io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) })?;
        }
        write_atomic(&dir.join(format!("{name}.json")), bytes)
    }

    /// Remove `<name>.json` (gone already is fine).
    pub fn remove_schedule(&self, name: &str) -> io::Result<()> {
        match fs::remove_file(self.schedules_dir().join(format!("{name}.json"))) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
