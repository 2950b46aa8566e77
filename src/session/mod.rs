//! Sessions: their state in memory, mirrored to their folder, and the thread each runs on.
//! A session is created `waiting`, leases a capable worker on its own thread (`thread.rs`;
//! then `running`, or `confirming`/`paused` while a person is asked), hands the agent a
//! `SessionRunner`, and ends `finished`, `error` or `stopped`. `manager.rs` holds them all; the
//! log, files, writings, confirmations, takeover and budget each have a file here.
//!
//! Disk: session.json is written atomically when the status changes (and at the end), never an
//! older snapshot over a newer one; counters live in memory and in the journal (`journal.rs`)
//! for a crash; appended lines follow `output.sync`, and the session's files are synced before
//! a final status is recorded.
//!
//! Locks: `state` (the record, the pending confirmation) is never held across disk I/O, so
//! reading or stopping a session never waits for the disk. Each file written has its own I/O
//! lock (`log`, `journal`, `files`, `notes`, `steps`, `record_written`), which may take `state`
//! briefly, never the reverse; neither is held while taking the hub's locks; the parker's lock
//! is innermost.

mod budget;
mod confirm;
mod disk;
mod error;
mod files;
mod inputs;
mod journal;
mod log;
mod manager;
mod outputs;
mod recording;
mod replay;
mod retention;
pub mod runner;
mod takeover;
mod thread;
mod validate;
mod writings;

pub use confirm::{AskOutcome, ConfirmationOutcome, Verdict};
pub use error::SessionError;
pub use files::stage_error;
pub use journal::close_open_calls;
pub use log::LOG_WAIT_MAX;
pub use manager::{ResumeHook, SessionManager};
pub use replay::plan as plan_replay;
pub use runner::{AgentFn, AgentOutcome, SessionRunner};
pub use takeover::{Act, PauseEvent, Render, check_act};
pub use validate::{NewSession, check_secrets, validate};

use crate::config::Config;
use crate::protocol::end::End;
use crate::protocol::{Note, SessionRecord, Status};
use crate::store::{self, FileIndex, SessionDir};
use crate::util::clock;
use crate::vault::Vault;
use crate::wait::park::Parker;
use crate::wait::stop::StopSignal;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

pub struct Session {
    pub id: String,
    dir: SessionDir,
    config: Arc<Config>,
    parker: Arc<Parker>,
    state: Mutex<SessionState>,
    /// Paired with `state`: a confirmation answer, a stop.
    changed: Condvar,
    stop: Arc<StopSignal>,
    vault: Mutex<Vault>,
    log: Mutex<log::LogState>,
    /// Orders appends to the conversation journal.
    journal: Mutex<()>,
    /// The file index, read lazily for sessions loaded from disk.
    files: Mutex<Option<FileIndex>>,
    notes: Mutex<Option<Vec<Note>>>,
    /// Steps written so far (read lazily for sessions loaded from disk).
    steps: Mutex<Option<u64>>,
    /// Version of the record last written to session.json.
    record_written: Mutex<u64>,
    /// Told the final record once the thread has recorded the end (a schedule's run).
    on_end: Mutex<Option<EndHook>>,
    /// When it was made here (its seconds budget counts from it).
    born: Instant,
    /// It goes on from its journal after a restart interrupted it (`POST /resume`).
    resumed: bool,
    /// Stopped with `?report=false`: no model call writes a report after the stop.
    no_stop_report: std::sync::atomic::AtomicBool,
}

/// What a session's creator is told when it ends: its final record.
pub type EndHook = Box<dyn FnOnce(&SessionRecord) + Send>;

struct SessionState {
    record: SessionRecord,
    confirmation_answer: Option<confirm::Answer>,
    question_answer: Option<String>,
    confirmations_asked: u32,
    /// A person taking over: the act handed to the session's thread, its result, the resume.
    handover: takeover::Handover,
    /// Bumped at every snapshot of `record`, so an older snapshot never overwrites a newer one.
    record_version: u64,
}

/// session.json as it was when taken under the state lock; written once the lock is released.
#[must_use = "write it with Session::write_record after releasing the state lock"]
struct RecordSnapshot {
    version: u64,
    json: Result<String, serde_json::Error>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    /// A new session (`fresh`: empty indices, not stopped) or one loaded from disk (indices
    /// read lazily; it already ended, so its stop is raised).
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
                confirmation_answer: None,
                question_answer: None,
                confirmations_asked: 0,
                handover: Default::default(),
                record_version: 0,
            }),
            changed: Condvar::new(),
            stop: Arc::new(StopSignal::new(!fresh)),
            vault: Mutex::new(vault),
            log: Mutex::new(log::LogState::new(fresh)),
            journal: Mutex::new(()),
            files: Mutex::new(fresh.then(FileIndex::default)),
            notes: Mutex::new(fresh.then(Vec::new)),
            steps: Mutex::new(fresh.then_some(0)),
            record_written: Mutex::new(0),
            on_end: Mutex::new(None),
            born: Instant::now(),
            resumed: false,
            no_stop_report: Default::default(),
        }
    }

    /// The same session again after a restart or shutdown interrupted it: `record` (made
    /// `waiting` by the caller), a stop not raised, its files and steps read from its folder.
    fn reopened(&self, record: SessionRecord) -> Session {
        let mut again = Session::new(record, self.dir.clone(), &self.config, &self.parker, Vault::default(), false);
        again.stop = Arc::new(StopSignal::new(false));
        again.resumed = true;
        again
    }

    /// Ended `error` because the controller stopped under it: it may be resumed.
    pub fn interrupted(&self) -> bool {
        self.record().interrupted()
    }

    /// Tell the creator the session ended (once; `thread.rs` calls it last).
    fn run_end_hook(&self) {
        let hook = lock(&self.on_end).take();
        if let Some(hook) = hook {
            hook(&self.record());
        }
    }

    fn lock(&self) -> MutexGuard<'_, SessionState> {
        lock(&self.state)
    }

    pub fn record(&self) -> SessionRecord {
        self.lock().record.clone()
    }

    pub fn status(&self) -> Status {
        self.lock().record.status
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.is_raised()
    }

    /// The stop asked for no report from the model (`DELETE …?report=false`).
    pub fn skip_stop_report(&self) {
        self.no_stop_report.store(true, std::sync::atomic::Ordering::Release);
    }

    pub fn stop_report_wanted(&self) -> bool {
        !self.no_stop_report.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The session's stop, for waits outside the session (commands, LLM calls).
    pub fn stop_signal(&self) -> &Arc<StopSignal> {
        &self.stop
    }

    pub(crate) fn vault(&self) -> MutexGuard<'_, Vault> {
        lock(&self.vault)
    }

    /// Change the record; session.json is written only when the change is one of status.
    pub fn update(&self, change: impl FnOnce(&mut SessionRecord)) {
        let mut state = self.lock();
        let before = state.record.status;
        change(&mut state.record);
        if state.record.status != before {
            self.unlock_and_save(state);
        }
    }

    /// Release the state lock, then write the record as it was to session.json.
    fn unlock_and_save(&self, mut state: MutexGuard<'_, SessionState>) {
        let snapshot = snapshot_record(&mut state);
        drop(state);
        self.write_record(snapshot);
    }

    /// Write a snapshot to session.json unless a newer one is already there.
    fn write_record(&self, snapshot: RecordSnapshot) {
        let mut written = lock(&self.record_written);
        if snapshot.version <= *written {
            return;
        }
        match snapshot.json.map_err(std::io::Error::other).and_then(|j| self.dir.write_text(store::SESSION_JSON, &j)) {
            Ok(()) => *written = snapshot.version,
            Err(e) => {
                drop(written);
                self.write_failed("session.json", &e);
            }
        }
    }

    /// End an active session from outside its thread (DELETE, shutdown, a failed start): record
    /// it, then wake every wait it is in. False when it had already ended.
    fn end_from_outside(&self, status: Status, error: Option<String>) -> bool {
        self.end_from_outside_as(status, error, None)
    }

    /// The same, with the typed end (`record.end`) the controller stopping gives it.
    fn end_from_outside_as(&self, status: Status, error: Option<String>, end: Option<End>) -> bool {
        let mut state = self.lock();
        if !state.record.status.is_active() {
            return false;
        }
        end_record(&mut state.record, status, error);
        state.record.end = end;
        let snapshot = snapshot_record(&mut state);
        drop(state);
        // Wake first: the waits need no disk, the reply to the stop does.
        self.raise_stop();
        self.dir.sync_now();
        self.write_record(snapshot);
        true
    }

    /// Raise the stop: every wait registered on it ends, and the session's own waits
    /// (confirmations) wake.
    fn raise_stop(&self) {
        self.stop.raise();
        let state = self.lock();
        self.changed.notify_all();
        drop(state);
        // A person's act parked for its result learns of the stop at once.
        self.settle_act();
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
    record.question_pending = None;
    record.waiting_for = None;
    record.pause_requested = false;
    record.takeover_requested = None;
    record.finished_at.get_or_insert_with(clock::now_rfc3339);
}
