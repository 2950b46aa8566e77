//! Named browser profiles kept between sessions (`options.browser_profile`): one Chromium
//! user-data folder per name under `--profile-dir`, so cookies, local storage and IndexedDB are
//! there again the next time a session runs in it.
//!
//! Folders are made 0700 (the root too) and are never a symbolic link; a name is checked by the
//! library's one rule (`check_profile_name`) before it becomes a path. What leaves the worker is
//! only each profile's name, size and the time a session last ran in it (a marker file's
//! mtime), reported at registration and with the result of a session's first command in one
//! (then at most every ten seconds); the data itself never does.

use crate::error::WorkerError;
use agent_controller::protocol::profiles::{ProfileReport, check_profile_name};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file whose mtime says when a session last ran in a profile.
const USED_MARK: &str = ".agent-worker-used";
/// How often a profile in use is reported again, at most.
const REPORT_EVERY: Duration = Duration::from_secs(10);
/// The most entries a size walk counts (a profile is a few hundred).
const WALK_MAX: usize = 200_000;

pub struct Profiles {
    root: PathBuf,
    /// Something changed that the controller has not heard of.
    changed: bool,
    reported: Option<Instant>,
}

impl Profiles {
    pub fn new(root: PathBuf) -> Profiles {
        Profiles { root, changed: false, reported: None }
    }

    /// The folder of profile `name`, made (0700) if it is new.
    pub fn dir(&self, name: &str) -> Result<PathBuf, WorkerError> {
        check_profile_name(name).map_err(|e| WorkerError::bad(e.to_string()))?;
        let io = |e| WorkerError::io(format!("cannot use the profile folder {}", self.root.display()), e);
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.root).map_err(io)?;
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o700)).map_err(io)?;
        let dir = self.root.join(name);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => return Err(WorkerError::bad(format!("the profile {name:?} is not a plain folder here"))),
            Err(_) => fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io)?,
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
        Ok(dir)
    }

    /// A session runs in `name` now: mark the time, and report it (at a session's first
    /// command, then not more than every 10 s).
    pub fn used(&mut self, name: &str, new_session: bool) {
        let _ = fs::write(self.root.join(name).join(USED_MARK), b"");
        if new_session || self.reported.is_none_or(|at| at.elapsed() >= REPORT_EVERY) {
            self.changed = true;
        }
    }

    /// Every profile kept here, by name.
    pub fn list(&self) -> Vec<ProfileReport> {
        let Ok(entries) = fs::read_dir(&self.root) else { return Vec::new() };
        let mut out: Vec<ProfileReport> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| check_profile_name(n).is_ok())
            .map(|name| {
                let dir = self.root.join(&name);
                let used = fs::metadata(dir.join(USED_MARK)).and_then(|m| m.modified()).ok();
                let last_used = used.map(|t| {
                    let ms = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
                    agent_controller::util::clock::rfc3339_from_ms(ms)
                });
                ProfileReport { size_kb: size_of(&dir).div_ceil(1024), name, last_used }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The list when the controller should hear it (`all`: always).
    pub fn report(&mut self, all: bool) -> Option<Vec<ProfileReport>> {
        if !all && !self.changed {
            return None;
        }
        self.changed = false;
        self.reported = Some(Instant::now());
        Some(self.list())
    }

    /// Remove profile `name`'s folder (the browser using it is closed first by the caller).
    pub fn delete(&mut self, name: &str) -> Result<bool, WorkerError> {
        check_profile_name(name).map_err(|e| WorkerError::bad(e.to_string()))?;
        let dir = self.root.join(name);
        self.changed = true;
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {
                fs::remove_dir_all(&dir).map_err(|e| WorkerError::io(format!("cannot delete profile {name}"), e))?;
                Ok(true)
            }
            Ok(_) => fs::remove_file(&dir).map(|()| true).map_err(|e| WorkerError::io("cannot delete the profile", e)),
            Err(_) => Ok(false),
        }
    }
}

/// Bytes of the plain files below `dir` (links not followed), up to `WALK_MAX` entries.
fn size_of(dir: &Path) -> u64 {
    let (mut total, mut seen, mut stack) = (0u64, 0usize, vec![dir.to_path_buf()]);
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            seen += 1;
            if seen > WALK_MAX {
                return total;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_private_and_names_never_paths() {
        let root = agent_controller::util::private_temp_dir("profiles-test-").unwrap().join("kept");
        let mut p = Profiles::new(root.clone());
        assert!(p.dir("../x").is_err() && p.dir("a/b").is_err() && p.dir("").is_err());
        let dir = p.dir("work").unwrap();
        for d in [&root, &dir] {
            assert_eq!(fs::metadata(d).unwrap().permissions().mode() & 0o777, 0o700, "{}", d.display());
        }
        fs::write(dir.join("Cookies"), vec![0u8; 5000]).unwrap();
        p.used("work", true);
        let list = p.report(false).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!((list[0].name.as_str(), list[0].size_kb), ("work", 5));
        assert!(list[0].last_used.is_some());
        assert_eq!(p.report(false), None, "nothing new");
        assert!(p.delete("work").unwrap());
        assert!(!dir.exists() && p.report(false).unwrap().is_empty());
        let _ = fs::remove_dir_all(root.parent().unwrap());
    }
}
