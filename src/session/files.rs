//! A session's files: the index of `files/` and `screenshots/`, the limits on them, and the
//! way in for every file (staged, then committed under a sanitized, unused name).
//!
//! The files lock orders commits (a name is unique and the totals are right) and may be held
//! across the rename of a committed file; the fsync of a big file happens before it is taken.

use super::error::SessionError;
use super::{Session, lock};
use crate::config::Config;
use crate::protocol::{FileEntry, FileKind, size_kb};
use crate::store::{FileIndex, StageError, StagedFile};
use crate::util::filename::sanitize_filename;
use std::path::PathBuf;
use std::sync::MutexGuard;

impl Session {
    fn file_index(&self) -> MutexGuard<'_, Option<FileIndex>> {
        let mut files = lock(&self.files);
        if files.is_none() {
            *files = Some(self.dir.scan_files().unwrap_or_else(|e| {
                log::error!("{}: cannot list files: {e}", self.id);
                FileIndex::default()
            }));
        }
        files
    }

    pub(super) fn with_index<T>(&self, f: impl FnOnce(&mut FileIndex) -> T) -> T {
        let mut files = self.file_index();
        let mut empty = FileIndex::default();
        f(files.as_mut().unwrap_or(&mut empty))
    }

    pub fn files(&self) -> Vec<FileEntry> {
        self.with_index(|index| {
            index
                .entries
                .iter()
                .map(|(name, info)| FileEntry {
                    filename: name.clone(),
                    size_kb: size_kb(info.size),
                    kind: info.kind,
                    duplicate: false,
                })
                .collect()
        })
    }

    /// Path and size of a stored file, or not found.
    pub fn file_path(&self, name: &str) -> Result<(PathBuf, u64), SessionError> {
        let found = self.with_index(|index| Some((self.dir.file_path(index, name)?, index.entries.get(name)?.size)));
        found.ok_or_else(|| SessionError::NotFound(format!("session {} has no file {name:?}", self.id)))
    }

    /// Every stored file as (name in a zip, path): files at the top, screenshots in a folder.
    pub fn zip_listing(&self) -> Vec<(String, PathBuf)> {
        self.with_index(|index| {
            index
                .entries
                .iter()
                .filter_map(|(name, info)| {
                    let path = self.dir.file_path(index, name)?;
                    let in_zip = match info.kind {
                        FileKind::Screenshot => format!("screenshots/{name}"),
                        FileKind::Input => format!("inputs/{name}"),
                        FileKind::Download | FileKind::Generated => name.clone(),
                    };
                    Some((in_zip, path))
                })
                .collect()
        })
    }

    fn too_many_files(&self) -> SessionError {
        SessionError::NoRoom(format!(
            "session {} already holds {} files (files.max_files_per_session)",
            self.id, self.config.files.max_files_per_session
        ))
    }

    /// Room left for one more file: `(max bytes for it, whether the per-file limit binds)`.
    pub fn upload_allowance(&self) -> Result<(u64, bool), SessionError> {
        let (count, total) = self.with_index(|index| (index.file_count(), index.total_bytes));
        if count >= self.config.files.max_files_per_session {
            return Err(self.too_many_files());
        }
        let per_file = self.config.max_file_bytes();
        let remaining = self.config.max_session_bytes().saturating_sub(total);
        Ok((per_file.min(remaining), per_file <= remaining))
    }

    pub fn stage(&self) -> Result<StagedFile, SessionError> {
        Ok(self.dir.stage()?)
    }

    /// Move a complete staged file into `files/` under a sanitized, unused name.
    pub fn commit_file(
        &self,
        mut staged: StagedFile,
        wanted_name: &str,
        kind: FileKind,
    ) -> Result<FileEntry, SessionError> {
        let name = sanitize_filename(wanted_name);
        let size = staged.written();
        // The fsync may take seconds for a big file: before the files lock.
        staged.finish()?;
        let count = self.with_index(|index| {
            if kind != FileKind::Screenshot && index.file_count() >= self.config.files.max_files_per_session {
                return Err(self.too_many_files());
            }
            if index.total_bytes + size > self.config.max_session_bytes() {
                return Err(limit_error(false, &self.config, &self.id));
            }
            if let Some(existing) = self.same_bytes(index, &staged, kind, size, &name) {
                return Ok((existing, index.file_count(), true));
            }
            let name = index.unique_name(&name);
            staged.commit(&self.dir.path_for(kind, &name))?;
            index.insert(name.clone(), kind, size);
            if kind != FileKind::Screenshot {
                if let Err(e) = self.dir.save_file_kinds(index) {
                    log::error!("{}: cannot write files.json: {e}", self.id);
                }
            }
            Ok((name, index.file_count(), false))
        });
        let (name, count, duplicate) = count?;
        // Commits may finish out of order; files are never removed, so the larger count is right.
        self.update(|r| r.files = r.files.max(count));
        Ok(FileEntry { filename: name, size_kb: size_kb(size), kind, duplicate })
    }

    /// A file the session produced (not a screenshot, not an input) with exactly the staged bytes: a model that downloads or
    /// saves the same thing again gets the name it already has, not a copy. A file the model writes
    /// under another name is stored: that name is what the task asked for (`answer.txt` after a
    /// `notes.txt` that says the same).
    fn same_bytes(
        &self,
        index: &FileIndex,
        staged: &StagedFile,
        kind: FileKind,
        size: u64,
        name: &str,
    ) -> Option<String> {
        let produced = |kind: FileKind| matches!(kind, FileKind::Download | FileKind::Generated);
        if !produced(kind) {
            return None;
        }
        index
            .entries
            .iter()
            .filter(|(_, info)| produced(info.kind) && info.size == size)
            .filter(|(held, _)| kind != FileKind::Generated || held.as_str() == name)
            .find(|(name, _)| self.dir.file_path(index, name).is_some_and(|p| staged.same_bytes_as(&p)))
            .map(|(name, _)| name.clone())
    }

    /// Write `size` more bytes that are no listed file (the recording's frames) with `write`,
    /// only while the session's storage has room for them; counted in its total.
    pub(super) fn within_storage(
        &self,
        size: u64,
        write: impl FnOnce() -> std::io::Result<()>,
    ) -> Result<(), SessionError> {
        self.with_index(|index| {
            if index.total_bytes + size > self.config.max_session_bytes() {
                return Err(limit_error(false, &self.config, &self.id));
            }
            write()?;
            index.total_bytes += size;
            Ok(())
        })
    }

    /// Store bytes produced in the controller (save_file, screenshots), within the limits.
    pub fn store_bytes(&self, wanted_name: &str, bytes: &[u8], kind: FileKind) -> Result<FileEntry, SessionError> {
        let (allowance, per_file_binds) = if kind == FileKind::Screenshot {
            (self.config.max_session_bytes(), false)
        } else {
            self.upload_allowance()?
        };
        if bytes.len() as u64 > allowance {
            return Err(limit_error(per_file_binds, &self.config, &self.id));
        }
        let mut staged = self.stage()?;
        staged.write_all(bytes)?;
        self.commit_file(staged, wanted_name, kind)
    }
}

pub(super) fn limit_error(per_file_binds: bool, config: &Config, id: &str) -> SessionError {
    if per_file_binds {
        SessionError::TooLarge(format!(
            "file is larger than {} MiB (files.max_file_size_mb)",
            config.files.max_file_size_mb
        ))
    } else {
        SessionError::NoRoom(format!(
            "session {id} would exceed its {} MiB of storage (files.max_session_storage_mb)",
            config.files.max_session_storage_mb
        ))
    }
}

/// Map a staging failure to the right status.
pub fn stage_error(err: StageError, per_file_binds: bool, config: &Config, id: &str) -> SessionError {
    match err {
        StageError::Limit => limit_error(per_file_binds, config, id),
        StageError::Io(e) if super::disk::is_full(&e) => SessionError::Io(e),
        StageError::Io(e) => SessionError::Interrupted(e),
    }
}
