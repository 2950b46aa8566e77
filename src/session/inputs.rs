//! Files a person hands to a session (`PUT /sessions/:id/inputs/NAME`): kept in its `inputs/`
//! folder beside what it produces, listed as `type: input`, and waited for before the session
//! starts when its request named them (`inputs`).
//!
//! An input arrives like an upload: streamed into a staged file within the session's limits
//! (`files.max_file_size_mb`, `files.max_session_storage_mb`), fsynced, then renamed into place,
//! so a half-sent body leaves nothing and a second `PUT` of a name replaces the first whole. A
//! name is one plain file (`protocol::profiles::check_input_name`), never a path, and never the
//! name of a file the session produced.

use super::Session;
use super::error::SessionError;
use super::files::{limit_error, stage_error};
use crate::protocol::profiles::check_input_name;
use crate::protocol::{FileEntry, FileKind, LogKind, size_kb};
use crate::store::StageError;
use std::io::Read;
use std::time::{Duration, Instant};

/// How long a session waits for the inputs its request named, at most.
pub const INPUT_WAIT: Duration = Duration::from_secs(30 * 60);

/// The inputs a session named that never came (its end's reason).
#[derive(Debug, thiserror::Error)]
#[error("the input files {} were not handed over within {} s", .missing.join(", "), .waited.as_secs())]
pub(super) struct InputsLate {
    missing: Vec<String>,
    waited: Duration,
}

impl Session {
    /// Take `body` as the input file `name`; answers its entry and whether it is new (else it
    /// replaced an input of that name).
    pub fn put_input(&self, name: &str, body: &mut dyn Read) -> Result<(FileEntry, bool), SessionError> {
        check_input_name(name).map_err(|e| SessionError::Invalid(e.to_string()))?;
        if !self.status().is_active() {
            return Err(SessionError::Conflict(format!("session {} has ended; it takes no more inputs", self.id)));
        }
        let (existing, count, total) =
            self.with_index(|i| (i.entries.get(name).map(|e| (e.kind, e.size)), i.file_count(), i.total_bytes));
        let replaced = match existing {
            Some((FileKind::Input, size)) => Some(size),
            Some(_) => {
                return Err(SessionError::Conflict(format!(
                    "session {} already has a file {name:?} it produced; give the input another name",
                    self.id
                )));
            }
            None => None,
        };
        let files = &self.config.files;
        if replaced.is_none() && count >= files.max_files_per_session {
            return Err(SessionError::NoRoom(format!(
                "session {} already holds {count} files (files.max_files_per_session)",
                self.id
            )));
        }
        let per_file = self.config.max_file_bytes();
        let room = self.config.max_session_bytes().saturating_sub(total - replaced.unwrap_or(0));
        let mut staged = self.stage()?;
        staged
            .copy_from(body, per_file.min(room))
            .map_err(|e: StageError| stage_error(e, per_file <= room, &self.config, &self.id))?;
        let size = staged.written();
        staged.finish()?;
        let dir = &self.dir;
        self.with_index(|index| {
            let before = index.entries.get(name).filter(|e| e.kind == FileKind::Input).map_or(0, |e| e.size);
            if index.total_bytes - before + size > self.config.max_session_bytes() {
                return Err(limit_error(false, &self.config, &self.id));
            }
            dir.make_inputs_dir()?;
            staged.commit(&dir.path_for(FileKind::Input, name))?;
            index.insert(name.to_string(), FileKind::Input, size);
            Ok(())
        })?;
        let count = self.with_index(|i| i.file_count());
        self.update(|r| r.files = r.files.max(count));
        let verb = if replaced.is_some() { "replaced" } else { "handed over" };
        self.log(LogKind::System, &format!("input file {name} ({} KB) {verb}", size_kb(size)), None);
        let entry =
            FileEntry { filename: name.to_string(), size_kb: size_kb(size), kind: FileKind::Input, duplicate: false };
        Ok((entry, replaced.is_none()))
    }

    /// The names of the session's input files.
    pub fn input_names(&self) -> Vec<String> {
        self.with_index(|i| {
            i.entries.iter().filter(|(_, e)| e.kind == FileKind::Input).map(|(n, _)| n.clone()).collect()
        })
    }

    /// The line the model reads about its inputs, if it has any: names and sizes, nothing more.
    pub fn inputs_line(&self) -> Option<String> {
        let inputs: Vec<String> = self.with_index(|i| {
            i.entries
                .iter()
                .filter(|(_, e)| e.kind == FileKind::Input)
                .map(|(n, e)| format!("{n} ({} KB)", size_kb(e.size)))
                .collect()
        });
        (!inputs.is_empty()).then(|| format!("Files handed over for this task (by name): {}.", inputs.join(", ")))
    }

    /// Wait until every input the request named has been put, the stop, or `INPUT_WAIT`;
    /// `Err` says which never came.
    pub(super) fn wait_for_inputs(&self) -> Result<(), InputsLate> {
        let wanted = self.record().inputs;
        let missing = || -> Vec<String> {
            let have = self.input_names();
            wanted.iter().filter(|n| !have.contains(n)).cloned().collect()
        };
        let first = missing();
        if first.is_empty() {
            return Ok(());
        }
        let waiting_for = format!("the input files {}", first.join(", "));
        self.update(|r| r.waiting_for = Some(waiting_for.clone()));
        self.log(LogKind::System, &format!("waiting for {waiting_for} (PUT /sessions/{}/inputs/NAME)", self.id), None);
        let deadline = Instant::now() + INPUT_WAIT;
        loop {
            let left = missing();
            if left.is_empty() || self.stop_requested() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(InputsLate { missing: left, waited: INPUT_WAIT });
            }
            self.stop_signal().wait(Duration::from_millis(100));
        }
    }
}

impl Session {
    /// A file the session's worker may fetch to upload into a page: an input, or one the
    /// session downloaded or made (never a screenshot); a name it does not hold is refused with
    /// the names it does.
    pub fn file_for_upload(&self, name: &str) -> Result<(std::path::PathBuf, u64), SessionError> {
        let kind = self.with_index(|i| i.entries.get(name).map(|e| e.kind));
        match kind {
            Some(FileKind::Input | FileKind::Download | FileKind::Generated) => self.file_path(name),
            _ => {
                let names: Vec<String> = self.with_index(|i| {
                    i.entries.iter().filter(|(_, e)| e.kind != FileKind::Screenshot).map(|(n, _)| n.clone()).collect()
                });
                let have = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                Err(SessionError::NotFound(format!(
                    "this session has no file {:?} to upload (its files: {have})",
                    name.chars().take(200).collect::<String>()
                )))
            }
        }
    }
}
