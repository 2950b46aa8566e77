//! Sessions: their state in memory, mirrored to their folder as it changes, and the thread
//! each one runs on.
//!
//! A session is created `waiting`, gets its own OS thread, leases a capable worker (then
//! `running`), hands a `SessionRunner` to the agent, and ends `finished`, `error` or `stopped`.
//! Invariants: `session.json` is rewritten (atomically, after the state lock is released, never with an older version) on every change of the record; the log
//! lives on disk and memory keeps only line offsets; the vault is emptied when the session
//! ends; a stop or a shutdown wakes every wait the session is in (lease, command,
//! confirmation) at once.

use crate::config::Config;
use crate::error::ApiError;
use crate::http::{self, ParkKey, Parker};
use crate::hub::WorkerHub;
use crate::protocol::*;
use crate::runner::{AgentOutcome, SessionRunner};
use crate::store::{self, FileIndex, SessionDir, StageError, StagedFile, Store};
use crate::vault::Vault;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The agent plugged into every session (the LLM loop, or a test acting as one).
pub type AgentFn = Arc<dyn Fn(SessionRunner) -> AgentOutcome + Send + Sync>;

/// Most log entries returned by one `GET /log`.
const LOG_PAGE_MAX: usize = 500;
/// Longest `wait` a log poll may ask for.
pub const LOG_WAIT_MAX: Duration = Duration::from_secs(60);

pub struct Session {
    pub id: String,
    dir: SessionDir,
    config: Arc<Config>,
    parker: Arc<Parker>,
    state: Mutex<SessionState>,
    changed: Condvar,
    stop: AtomicBool,
    vault: Mutex<Vault>,
    /// Version of the record last written to session.json (writes happen outside `state`).
    record_written: Mutex<u64>,
}

struct SessionState {
    record: SessionRecord,
    /// Byte offset of each line of log.jsonl; `None` until first needed.
    log_offsets: Option<Vec<u64>>,
    log_waiters: Vec<(ParkKey, u64)>,
    files: Option<FileIndex>,
    notes: Option<Vec<Note>>,
    confirmation_answer: Option<bool>,
    confirmations_asked: u32,
    /// Bumped at every snapshot of `record`, so an older snapshot never overwrites a newer one.
    record_version: u64,
}

/// session.json as it was when taken under the state lock; written once the lock is released,
/// so readers of the session never wait for the disk.
#[must_use = "write it with Session::write_record after releasing the state lock"]
struct RecordSnapshot {
    version: u64,
    json: Result<String, serde_json::Error>,
}

/// How a confirmation request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmationOutcome {
    Approved,
    /// Approved without asking (`auto_confirm`).
    AutoApproved,
    Denied,
    TimedOut,
    Stopped,
}

impl Session {
    /// A new session (`fresh`: empty indices, not stopped) or one loaded from disk (indices
    /// read lazily; it already ended, so it counts as stopped).
    fn new(
        record: SessionRecord,
        dir: SessionDir,
        config: &Arc<Config>,
        parker: &Arc<Parker>,
        vault: Vault,
        fresh: bool,
    ) -> Session {
        Session {
            id: record.session_id.clone(),
            dir,
            config: Arc::clone(config),
            parker: Arc::clone(parker),
            state: Mutex::new(SessionState {
                record,
                log_offsets: fresh.then(Vec::new),
                log_waiters: Vec::new(),
                files: fresh.then(FileIndex::default),
                notes: fresh.then(Vec::new),
                confirmation_answer: None,
                confirmations_asked: 0,
                record_version: 0,
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(!fresh),
            vault: Mutex::new(vault),
            record_written: Mutex::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn record(&self) -> SessionRecord {
        self.lock().record.clone()
    }

    pub fn status(&self) -> Status {
        self.lock().record.status
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub(crate) fn vault(&self) -> MutexGuard<'_, Vault> {
        self.vault.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change the record and write session.json.
    pub fn update(&self, change: impl FnOnce(&mut SessionRecord)) {
        let mut state = self.lock();
        change(&mut state.record);
        self.unlock_and_save(state);
    }

    /// Release the state lock, then write the record as it was to session.json.
    fn unlock_and_save(&self, mut state: MutexGuard<'_, SessionState>) {
        let snapshot = snapshot_record(&mut state);
        drop(state);
        self.write_record(snapshot);
    }

    /// Write a snapshot to session.json unless a newer one is already there.
    fn write_record(&self, snapshot: RecordSnapshot) {
        let mut written = self.record_written.lock().unwrap_or_else(|p| p.into_inner());
        if snapshot.version <= *written {
            return;
        }
        match snapshot.json.map_err(std::io::Error::other).and_then(|j| self.dir.write_text(store::SESSION_JSON, &j)) {
            Ok(()) => *written = snapshot.version,
            Err(e) => log::error!("{}: cannot write session.json: {e}", self.id),
        }
    }

    // ----- log -------------------------------------------------------------------------------

    fn ensure_log_index<'a>(&self, state: &'a mut SessionState) -> &'a mut Vec<u64> {
        state.log_offsets.get_or_insert_with(|| {
            self.dir.index_log().unwrap_or_else(|e| {
                log::error!("{}: cannot read log.jsonl: {e}", self.id);
                Vec::new()
            })
        })
    }

    /// Append a log entry (secrets scrubbed) and answer everyone long-polling for it.
    pub fn log(&self, kind: LogKind, text: &str, data: Option<Value>) -> u64 {
        let (text, data) = {
            let vault = self.vault();
            let mut data = data;
            if let Some(d) = data.as_mut() {
                vault.scrub_json(d);
            }
            (vault.scrub(text), data)
        };
        let mut state = self.lock();
        let offsets = self.ensure_log_index(&mut state);
        let seq = offsets.len() as u64 + 1;
        let entry = LogEntry { seq, ts: crate::clock::Utc::now().rfc3339_millis(), kind, text, data };
        let line = serde_json::to_string(&entry).unwrap_or_default();
        match self.dir.append_log_line(&line) {
            Ok(offset) => offsets.push(offset),
            Err(e) => log::error!("{}: cannot append to log.jsonl: {e}", self.id),
        }
        let waiters = std::mem::take(&mut state.log_waiters);
        drop(state);
        self.answer_log_waiters(waiters);
        seq
    }

    fn answer_log_waiters(&self, waiters: Vec<(ParkKey, u64)>) {
        for (key, after) in waiters {
            if let Some(request) = self.parker.take(key) {
                let page = self.read_log(after);
                http::send(request, http::json_response(200, &page));
            }
        }
    }

    pub fn read_log(&self, after: u64) -> LogPage {
        let mut state = self.lock();
        let offsets = self.ensure_log_index(&mut state);
        let total = offsets.len() as u64;
        if after >= total {
            return LogPage { entries: Vec::new(), next: after.max(total) };
        }
        let from = offsets[after as usize];
        drop(state);
        let lines = self.dir.read_log_lines(from, LOG_PAGE_MAX).unwrap_or_else(|e| {
            log::error!("{}: cannot read log.jsonl: {e}", self.id);
            Vec::new()
        });
        let entries: Vec<LogEntry> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let next = entries.last().map(|e| e.seq).unwrap_or(after);
        LogPage { entries, next }
    }

    /// Entries mentioning `query` (case-insensitive), at most `max`, the most recent ones.
    pub fn search_log(&self, query: &str, max: usize) -> Vec<LogEntry> {
        let needle = query.to_lowercase();
        let mut hits = Vec::new();
        let mut after = 0;
        loop {
            let page = self.read_log(after);
            if page.entries.is_empty() {
                break;
            }
            after = page.next;
            for e in page.entries {
                let data = e.data.as_ref().map(|d| d.to_string()).unwrap_or_default();
                if e.text.to_lowercase().contains(&needle) || data.to_lowercase().contains(&needle) {
                    hits.push(e);
                }
            }
        }
        let skip = hits.len().saturating_sub(max);
        hits.split_off(skip)
    }

    /// `GET /log?wait=S`: answer now if there is something after `after` or the session has
    /// ended, else park until the next entry or the deadline.
    pub fn log_long_poll(self: &Arc<Self>, request: tiny_http::Request, after: u64, wait: Duration) {
        let mut state = self.lock();
        let total = self.ensure_log_index(&mut state).len() as u64;
        if total > after || !state.record.status.is_active() || wait.is_zero() {
            drop(state);
            http::send(request, http::json_response(200, &self.read_log(after)));
            return;
        }
        let empty = serde_json::to_vec(&LogPage { entries: Vec::new(), next: after }).unwrap_or_default();
        if let Some(key) = self.parker.park(request, wait, empty) {
            state.log_waiters.push((key, after));
        }
    }

    // ----- files -----------------------------------------------------------------------------

    fn ensure_files<'a>(&self, state: &'a mut SessionState) -> &'a mut FileIndex {
        state.files.get_or_insert_with(|| {
            self.dir.scan_files().unwrap_or_else(|e| {
                log::error!("{}: cannot list files: {e}", self.id);
                FileIndex::default()
            })
        })
    }

    pub fn files(&self) -> Vec<FileEntry> {
        let mut state = self.lock();
        self.ensure_files(&mut state)
            .entries
            .iter()
            .map(|(name, info)| FileEntry { filename: name.clone(), size_kb: size_kb(info.size), kind: info.kind })
            .collect()
    }

    /// Path and size of a stored file, or 404.
    pub fn file_path(&self, name: &str) -> Result<(std::path::PathBuf, u64), ApiError> {
        let mut state = self.lock();
        let index = self.ensure_files(&mut state);
        let size = index.entries.get(name).map(|i| i.size);
        match (self.dir.file_path(index, name), size) {
            (Some(p), Some(size)) => Ok((p, size)),
            _ => Err(ApiError::NotFound(format!("session {} has no file {name:?}", self.id))),
        }
    }

    /// Every stored file as (name in a zip, path): files at the top, screenshots in a folder.
    pub fn zip_listing(&self) -> Vec<(String, std::path::PathBuf)> {
        let mut state = self.lock();
        let index = self.ensure_files(&mut state).clone();
        index
            .entries
            .iter()
            .filter_map(|(name, info)| {
                let path = self.dir.file_path(&index, name)?;
                let in_zip =
                    if info.kind == FileKind::Screenshot { format!("screenshots/{name}") } else { name.clone() };
                Some((in_zip, path))
            })
            .collect()
    }

    /// Room left for one more file: `(max bytes for it, whether the per-file limit binds)`.
    pub fn upload_allowance(&self) -> Result<(u64, bool), ApiError> {
        let mut state = self.lock();
        let max_files = self.config.files.max_files_per_session;
        let index = self.ensure_files(&mut state);
        if index.file_count() >= max_files {
            return Err(ApiError::StorageFull(format!(
                "session {} already holds {max_files} files (files.max_files_per_session)",
                self.id
            )));
        }
        let per_file = self.config.max_file_bytes();
        let remaining = self.config.max_session_bytes().saturating_sub(index.total_bytes);
        Ok((per_file.min(remaining), per_file <= remaining))
    }

    pub fn stage(&self) -> Result<StagedFile, ApiError> {
        Ok(self.dir.stage()?)
    }

    /// Move a complete staged file into `files/` under a sanitized, unused name.
    pub fn commit_file(
        &self,
        mut staged: StagedFile,
        wanted_name: &str,
        kind: FileKind,
    ) -> Result<FileEntry, ApiError> {
        let name = store::sanitize_filename(wanted_name);
        let size = staged.written();
        // The fsync may take seconds for a big file: not under the session lock.
        staged.finish()?;
        let mut state = self.lock();
        let max_files = self.config.files.max_files_per_session;
        let max_bytes = self.config.max_session_bytes();
        let index = self.ensure_files(&mut state);
        if kind != FileKind::Screenshot && index.file_count() >= max_files {
            return Err(ApiError::StorageFull(format!(
                "session {} already holds {max_files} files (files.max_files_per_session)",
                self.id
            )));
        }
        if index.total_bytes + size > max_bytes {
            return Err(ApiError::StorageFull(format!(
                "session {} would exceed its {} MiB of storage (files.max_session_storage_mb)",
                self.id, self.config.files.max_session_storage_mb
            )));
        }
        let name = index.unique_name(&name);
        let dest = self.dir.path_for(kind, &name);
        staged.commit(&dest)?;
        index.insert(name.clone(), kind, size);
        if kind != FileKind::Screenshot {
            if let Err(e) = self.dir.save_file_kinds(index) {
                log::error!("{}: cannot write files.json: {e}", self.id);
            }
        }
        let count = index.file_count();
        state.record.files = count;
        self.unlock_and_save(state);
        Ok(FileEntry { filename: name, size_kb: size_kb(size), kind })
    }

    /// Store bytes produced in the controller (save_file, screenshots), within the limits.
    pub fn store_bytes(&self, wanted_name: &str, bytes: &[u8], kind: FileKind) -> Result<FileEntry, ApiError> {
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

    // ----- notes, report, conversation ---------------------------------------------------------

    pub fn notes(&self) -> Vec<Note> {
        let mut state = self.lock();
        self.ensure_notes(&mut state).clone()
    }

    fn ensure_notes<'a>(&self, state: &'a mut SessionState) -> &'a mut Vec<Note> {
        state.notes.get_or_insert_with(|| {
            self.dir
                .read_text(store::NOTES_JSON)
                .ok()
                .flatten()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default()
        })
    }

    pub fn add_note(&self, title: Option<&str>, content: &str) {
        let (title, content) = {
            let vault = self.vault();
            (title.map(|t| vault.scrub(t)), vault.scrub(content))
        };
        let mut state = self.lock();
        let notes = self.ensure_notes(&mut state);
        notes.push(Note { title, content, ts: crate::clock::now_rfc3339() });
        if let Err(e) = self.dir.write_json(store::NOTES_JSON, notes) {
            log::error!("{}: cannot write notes.json: {e}", self.id);
        }
    }

    pub fn report(&self) -> String {
        self.dir.read_text(store::REPORT_MD).ok().flatten().unwrap_or_default()
    }

    pub fn write_report(&self, markdown: &str) {
        let text = self.vault().scrub(markdown);
        if let Err(e) = self.dir.write_text(store::REPORT_MD, &text) {
            log::error!("{}: cannot write report.md: {e}", self.id);
        }
    }

    pub fn write_conversation(&self, conversation: &Value) {
        let mut value = conversation.clone();
        self.vault().scrub_json(&mut value);
        if let Err(e) = self.dir.write_json(store::CONVERSATION_JSON, &value) {
            log::error!("{}: cannot write conversation_log.json: {e}", self.id);
        }
    }

    // ----- confirmations -----------------------------------------------------------------------

    /// Ask a person; wait up to `task.confirmation_timeout` (timeout = denied).
    pub fn request_confirmation(
        &self,
        action: &str,
        description: &str,
        details: Value,
        risk_level: &str,
    ) -> ConfirmationOutcome {
        let auto = self.lock().record.options.auto_confirm;
        if auto {
            self.log(
                LogKind::Confirmation,
                &format!("Auto-approved: {description}"),
                Some(serde_json::json!({"action": action, "auto": true})),
            );
            return ConfirmationOutcome::AutoApproved;
        }
        let (description, details) = {
            let vault = self.vault();
            let mut details = details;
            vault.scrub_json(&mut details);
            (vault.scrub(description), details)
        };
        let description = description.as_str();
        let mut state = self.lock();
        if self.stop_requested() || !state.record.status.is_active() {
            return ConfirmationOutcome::Stopped;
        }
        state.confirmations_asked += 1;
        let confirmation = Confirmation {
            confirmation_id: format!("conf_{:03}", state.confirmations_asked),
            action: action.to_string(),
            description: description.to_string(),
            details,
            risk_level: risk_level.to_string(),
        };
        let id = confirmation.confirmation_id.clone();
        state.confirmation_answer = None;
        state.record.confirmation_pending = Some(confirmation.clone());
        state.record.status = Status::Confirming;
        self.unlock_and_save(state);
        self.log(
            LogKind::Confirmation,
            &format!("Awaiting confirmation ({risk_level} risk): {description}"),
            serde_json::to_value(&confirmation).ok(),
        );

        let timeout = Duration::from_secs(self.config.task.confirmation_timeout);
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        let outcome = loop {
            if let Some(approved) = state.confirmation_answer.take() {
                break if approved { ConfirmationOutcome::Approved } else { ConfirmationOutcome::Denied };
            }
            if self.stop_requested() {
                break ConfirmationOutcome::Stopped;
            }
            let now = Instant::now();
            if now >= deadline {
                break ConfirmationOutcome::TimedOut;
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        };
        if state.record.confirmation_pending.as_ref().is_some_and(|c| c.confirmation_id == id) {
            state.record.confirmation_pending = None;
        }
        if state.record.status == Status::Confirming {
            state.record.status = Status::Running;
        }
        self.unlock_and_save(state);
        let text = match outcome {
            ConfirmationOutcome::Approved => format!("Approved: {description}"),
            ConfirmationOutcome::Denied => format!("Denied: {description}"),
            ConfirmationOutcome::TimedOut => {
                format!("No answer within {} s, treated as denied: {description}", timeout.as_secs())
            }
            ConfirmationOutcome::Stopped => format!("Session stopped while waiting for: {description}"),
            ConfirmationOutcome::AutoApproved => String::new(),
        };
        self.log(LogKind::Confirmation, &text, Some(serde_json::json!({"confirmation_id": id})));
        outcome
    }

    /// `POST /confirmation`: the answer for the pending question with this id.
    pub fn answer_confirmation(&self, confirmation_id: &str, approved: bool) -> Result<(), ApiError> {
        let mut state = self.lock();
        match &state.record.confirmation_pending {
            None => Err(ApiError::Conflict(format!("session {} has no pending confirmation", self.id))),
            Some(c) if c.confirmation_id != confirmation_id => Err(ApiError::Conflict(format!(
                "confirmation {confirmation_id:?} is not the pending one ({:?})",
                c.confirmation_id
            ))),
            Some(_) => {
                state.confirmation_answer = Some(approved);
                state.record.confirmation_pending = None;
                let snapshot = snapshot_record(&mut state);
                drop(state);
                self.changed.notify_all();
                self.write_record(snapshot);
                Ok(())
            }
        }
    }

    /// Block until a stop is requested or `timeout` passes; true when stopped.
    pub fn wait_for_stop(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if self.stop_requested() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Set the stop flag and wake the session's own waits (the hub's are woken by the caller).
    fn raise_stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _state = self.lock();
        self.changed.notify_all();
    }

    fn end_log_waiters(&self) {
        let waiters = std::mem::take(&mut self.lock().log_waiters);
        self.answer_log_waiters(waiters);
    }
}

/// Take the record for session.json under the state lock (see [`RecordSnapshot`]).
fn snapshot_record(state: &mut SessionState) -> RecordSnapshot {
    state.record_version += 1;
    RecordSnapshot { version: state.record_version, json: serde_json::to_string_pretty(&state.record) }
}

/// What an ended record looks like: its final status, why (for errors), no pending question,
/// the time it ended.
fn end_record(record: &mut SessionRecord, status: Status, error: Option<String>) {
    record.status = status;
    if error.is_some() {
        record.error = error;
    }
    record.confirmation_pending = None;
    record.finished_at.get_or_insert_with(crate::clock::now_rfc3339);
}

fn limit_error(per_file_binds: bool, config: &Config, id: &str) -> ApiError {
    if per_file_binds {
        ApiError::TooLarge(format!(
            "file is larger than {} MiB (files.max_file_size_mb)",
            config.files.max_file_size_mb
        ))
    } else {
        ApiError::StorageFull(format!(
            "session {id} would exceed its {} MiB of storage (files.max_session_storage_mb)",
            config.files.max_session_storage_mb
        ))
    }
}

/// Map a staging failure to the right status.
pub fn stage_error(err: StageError, per_file_binds: bool, config: &Config, id: &str) -> ApiError {
    match err {
        StageError::Limit => limit_error(per_file_binds, config, id),
        StageError::Io(e)
            if matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded) =>
        {
            ApiError::from(e)
        }
        StageError::Io(e) => ApiError::BadRequest(format!("upload interrupted: {e}")),
    }
}

/// Validated input for a new session, secrets split off into the vault.
pub struct NewSession {
    pub record: SessionRecord,
    pub vault: Vault,
}

struct ThreadCount {
    running: Mutex<usize>,
    done: Condvar,
}

pub struct SessionManager {
    config: Arc<Config>,
    store: Store,
    hub: Arc<WorkerHub>,
    parker: Arc<Parker>,
    sessions: Mutex<BTreeMap<String, Arc<Session>>>,
    agent: AgentFn,
    threads: Arc<ThreadCount>,
    shutting_down: AtomicBool,
}

impl SessionManager {
    /// Load every session folder; those that were active become `error` (interrupted).
    pub fn open(
        config: Arc<Config>,
        store: Store,
        hub: Arc<WorkerHub>,
        parker: Arc<Parker>,
        agent: AgentFn,
    ) -> std::io::Result<SessionManager> {
        let mut sessions = BTreeMap::new();
        for (dir, mut record) in store.load_all()? {
            dir.remove_leftovers();
            let interrupted = record.status.is_active();
            if interrupted {
                end_record(&mut record, Status::Error, Some("interrupted by controller restart".into()));
            }
            let session = Arc::new(Session::new(record, dir, &config, &parker, Vault::default(), false));
            if interrupted {
                session.unlock_and_save(session.lock());
                session.log(LogKind::Error, "interrupted by controller restart", None);
                log::warn!("{}: was active when the controller stopped; marked error", session.id);
            }
            sessions.insert(session.id.clone(), session);
        }
        if !sessions.is_empty() {
            log::info!("loaded {} sessions from {}", sessions.len(), store.root().display());
        }
        Ok(SessionManager {
            config,
            store,
            hub,
            parker,
            sessions: Mutex::new(sessions),
            agent,
            threads: Arc::new(ThreadCount { running: Mutex::new(0), done: Condvar::new() }),
            shutting_down: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &str) -> Result<Arc<Session>, ApiError> {
        self.lock().get(id).cloned().ok_or_else(|| ApiError::no_session(id))
    }

    /// Newest first.
    pub fn list(&self) -> Vec<SessionSummary> {
        let sessions: Vec<Arc<Session>> = self.lock().values().rev().cloned().collect();
        sessions.iter().map(|s| SessionSummary::from(&s.lock().record)).collect()
    }

    pub fn status_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        for s in self.lock().values() {
            *counts.entry(s.status().as_str()).or_default() += 1;
        }
        counts
    }

    /// Check a `POST /sessions` body and split it into a record and a vault.
    pub fn validate(&self, req: CreateSessionRequest) -> Result<NewSession, ApiError> {
        let bad = |m: &str| Err(ApiError::BadRequest(m.to_string()));
        let target = req.target.trim().to_string();
        if target.is_empty() {
            return bad("`target` must not be empty");
        }
        if target.len() > 4096 {
            return bad("`target` is longer than 4096 characters");
        }
        let instruction = req.instruction.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        if req.mode == Mode::Task && instruction.is_none() {
            return bad("a task session needs an `instruction`");
        }
        let goal = req.goal.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let session_type = req.session_type.unwrap_or_else(|| SessionType::infer(&target));
        let options = req.options.unwrap_or_default();
        let default_turns = match req.mode {
            Mode::Explore => self.config.exploration.max_turns,
            Mode::Task => self.config.task.max_turns,
        };
        let max_turns = options.max_turns.unwrap_or(default_turns);
        if !(1..=10_000).contains(&max_turns) {
            return bad("`options.max_turns` must be between 1 and 10000");
        }
        if let Some(c) = &req.credentials {
            if c.username.is_empty() || c.password.is_empty() {
                return bad("`credentials` need a non-empty `username` and `password`");
            }
        }
        if let Some(n) = &req.notifications {
            if let Some(t) = &n.telegram {
                if t.bot_token.is_empty() || t.chat_id.trim().is_empty() {
                    return bad("`notifications.telegram` needs `bot_token` and `chat_id`");
                }
            }
            if let Some(w) = &n.webhook {
                let url = w.url.expose();
                if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
                    return bad("`notifications.webhook.url` must be an http:// or https:// URL");
                }
                if let Some(m) = &w.method {
                    if !m.eq_ignore_ascii_case("POST") && !m.eq_ignore_ascii_case("PUT") {
                        return bad("`notifications.webhook.method` must be POST or PUT");
                    }
                }
            }
        }
        let requested_worker = req.worker.map(|w| w.trim().to_string()).filter(|w| !w.is_empty());
        if let Some(name) = &requested_worker {
            let worker = self.hub.find(name).ok_or_else(|| {
                ApiError::BadRequest(format!("no worker {name:?} has registered (GET /workers lists them)"))
            })?;
            let cap = session_type.capability();
            if !worker.capabilities().iter().any(|c| c == cap) {
                return Err(ApiError::BadRequest(format!(
                    "worker {name:?} cannot run {cap} sessions (capabilities: {})",
                    worker.capabilities().join(", ")
                )));
            }
        }
        let notifications = NotifySummary {
            telegram: req.notifications.as_ref().is_some_and(|n| n.telegram.is_some()),
            webhook: req.notifications.as_ref().is_some_and(|n| n.webhook.is_some()),
        };
        let record = SessionRecord {
            session_id: String::new(),
            status: Status::Waiting,
            mode: req.mode,
            session_type,
            target,
            instruction,
            goal,
            options: SessionOptions { max_turns, auto_confirm: options.auto_confirm.unwrap_or(false) },
            has_credentials: req.credentials.is_some(),
            notifications,
            requested_worker,
            worker: None,
            turn: 0,
            max_turns,
            created_at: String::new(),
            finished_at: None,
            confirmation_pending: None,
            files: 0,
            usage: Usage::default(),
            error: None,
            summary: None,
        };
        Ok(NewSession { record, vault: Vault { credentials: req.credentials, notifications: req.notifications } })
    }

    /// Create the folder, register the session and start its thread.
    pub fn create(&self, new: NewSession) -> Result<Arc<Session>, ApiError> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(ApiError::Unavailable("the controller is shutting down".into()));
        }
        let NewSession { mut record, vault } = new;
        let now = crate::clock::Utc::now();
        let mut sessions = self.lock();
        let base = format!("sess_{}", now.compact());
        let mut n = 1;
        let (id, dir) = loop {
            let id = if n == 1 { base.clone() } else { format!("{base}_{n}") };
            if !sessions.contains_key(&id) {
                match self.store.create_session_dir(&id) {
                    Ok(dir) => break (id, dir),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(ApiError::Internal(format!("cannot create the session folder: {e}"))),
                }
            }
            n += 1;
        };
        record.session_id = id.clone();
        record.created_at = now.rfc3339();
        let session = Arc::new(Session::new(record, dir, &self.config, &self.parker, vault, true));
        session.unlock_and_save(session.lock());
        sessions.insert(id.clone(), Arc::clone(&session));
        drop(sessions);
        {
            let r = session.record();
            let what = r.instruction.as_deref().or(r.goal.as_deref()).unwrap_or("");
            session.log(
                LogKind::System,
                &format!(
                    "{} session on {} created: {what}",
                    match r.mode {
                        Mode::Explore => "explore",
                        Mode::Task => "task",
                    },
                    r.target
                ),
                None,
            );
        }
        self.spawn(Arc::clone(&session))?;
        log::info!("{id}: created");
        Ok(session)
    }

    fn spawn(&self, session: Arc<Session>) -> Result<(), ApiError> {
        let id = session.id.clone();
        let hub = Arc::clone(&self.hub);
        let agent = Arc::clone(&self.agent);
        let config = Arc::clone(&self.config);
        let threads = Arc::clone(&self.threads);
        *threads.running.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        let spawned = std::thread::Builder::new()
            .name(format!("session-{}", session.id))
            .stack_size(1024 * 1024)
            .spawn(move || {
                run_session(&session, &hub, &agent, config);
                let mut running = threads.running.lock().unwrap_or_else(|p| p.into_inner());
                *running -= 1;
                threads.done.notify_all();
            });
        if let Err(e) = spawned {
            *self.threads.running.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
            let reason = format!("cannot start the session thread: {e}");
            if let Ok(session) = self.get(&id) {
                self.end_from_outside(&session, Status::Error, Some(reason.clone()));
            }
            return Err(ApiError::Internal(reason));
        }
        Ok(())
    }

    /// `DELETE /sessions/:id`.
    pub fn stop(&self, id: &str) -> Result<Status, ApiError> {
        let session = self.get(id)?;
        if self.end_from_outside(&session, Status::Stopped, None) {
            session.log(LogKind::System, "stopped by request", None);
            log::info!("{id}: stopped by request");
            return Ok(Status::Stopped);
        }
        match session.status() {
            Status::Stopped => Ok(Status::Stopped),
            status => Err(ApiError::Conflict(format!("session {id} has already ended ({})", status.as_str()))),
        }
    }

    /// End an active session from outside its thread (DELETE, shutdown, a failed start): record
    /// it, then wake every wait it is in. False when it had already ended.
    fn end_from_outside(&self, session: &Session, status: Status, error: Option<String>) -> bool {
        let mut state = session.lock();
        if !state.record.status.is_active() {
            return false;
        }
        // The flag goes up under the state lock, so nothing can slip a new wait in between.
        session.stop.store(true, Ordering::Release);
        end_record(&mut state.record, status, error);
        let snapshot = snapshot_record(&mut state);
        drop(state);
        // Wake first: the waits need no disk, the reply to the stop does.
        session.raise_stop();
        self.hub.wake_waits();
        session.write_record(snapshot);
        true
    }

    /// Mark active sessions interrupted, wake them all and wait (bounded) for their threads.
    pub fn shutdown(&self, wait: Duration) {
        self.shutting_down.store(true, Ordering::Release);
        let sessions: Vec<Arc<Session>> = self.lock().values().cloned().collect();
        for s in &sessions {
            self.end_from_outside(s, Status::Error, Some("interrupted: the controller shut down".into()));
        }
        let deadline = Instant::now() + wait;
        let mut running = self.threads.running.lock().unwrap_or_else(|p| p.into_inner());
        while *running > 0 {
            let now = Instant::now();
            if now >= deadline {
                log::warn!("{} session threads still running at shutdown", *running);
                break;
            }
            running = self.threads.done.wait_timeout(running, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// The whole life of one session, on its own thread.
fn run_session(session: &Arc<Session>, hub: &Arc<WorkerHub>, agent: &AgentFn, config: Arc<Config>) {
    let record = session.record();
    let capability = record.session_type.capability();
    session.log(LogKind::System, &format!("waiting for a worker that can run {capability} sessions"), None);
    let stopped = || session.stop_requested();
    let Some(worker) = hub.lease(&session.id, capability, record.requested_worker.as_deref(), &stopped) else {
        finish(session, AgentOutcome::Stopped);
        return;
    };
    session.update(|r| {
        if r.status == Status::Waiting {
            r.status = Status::Running;
        }
        r.worker = Some(worker.hostname.clone());
    });
    session.log(LogKind::System, &format!("worker {} ({}) assigned", worker.hostname, worker.id), None);
    let runner = SessionRunner::new(Arc::clone(session), Arc::clone(hub), Arc::clone(&worker), config);
    let outcome = if session.stop_requested() { AgentOutcome::Stopped } else { agent(runner) };
    finish(session, outcome);
    hub.release(&worker, &session.id);
}

/// Record how the session ended (a stop or shutdown already did), empty the vault, answer
/// log pollers.
fn finish(session: &Arc<Session>, outcome: AgentOutcome) {
    // Summaries and errors come from the model, the API or a worker: scrub them like the log.
    let outcome = {
        let vault = session.vault();
        match outcome {
            AgentOutcome::Finished { summary } => AgentOutcome::Finished { summary: vault.scrub(&summary) },
            AgentOutcome::Failed(reason) => AgentOutcome::Failed(vault.scrub(&reason)),
            AgentOutcome::Stopped => AgentOutcome::Stopped,
        }
    };
    let mut state = session.lock();
    let active = state.record.status.is_active();
    if active {
        match &outcome {
            AgentOutcome::Finished { summary } => {
                state.record.summary = Some(summary.clone());
                end_record(&mut state.record, Status::Finished, None);
            }
            AgentOutcome::Failed(reason) => end_record(&mut state.record, Status::Error, Some(reason.clone())),
            AgentOutcome::Stopped => end_record(&mut state.record, Status::Stopped, None),
        }
    }
    let ended = active.then(|| snapshot_record(&mut state));
    let status = state.record.status;
    drop(state);
    if let Some(ended) = ended {
        session.write_record(ended);
    }
    if active {
        let (kind, text) = match &outcome {
            AgentOutcome::Finished { summary } => (LogKind::System, format!("finished: {summary}")),
            AgentOutcome::Failed(reason) => (LogKind::Error, format!("ended with an error: {reason}")),
            AgentOutcome::Stopped => (LogKind::System, "stopped".to_string()),
        };
        session.log(kind, &text, None);
    }
    session.vault().clear();
    session.end_log_waiters();
    log::info!("{}: ended ({})", session.id, status.as_str());
}
