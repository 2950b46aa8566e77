//! `SessionManager`: every session of this output directory, loaded at start, created on
//! `POST /sessions`, stopped on `DELETE`, and all interrupted together at shutdown.
//!
//! Sessions found active at start were cut off by a crash or a kill: they become `error`
//! ("interrupted by controller restart"). Each new session gets its own named thread; the
//! manager counts them so shutdown can wait (bounded) for them to end. A resumed session gets
//! its end hook back from the `ResumeHook` (a schedule's run stays the schedule's).

use super::error::SessionError;
use super::thread::run_session;
use super::validate::{NewSession, validate};
use super::{AgentFn, EndHook, Session, end_record, lock};
use crate::config::Config;
use crate::hub::WorkerHub;
use crate::protocol::end::{End, Interruption};
use crate::protocol::{CreateSessionRequest, LogKind, Mode, SessionRecord, SessionSummary, Status};
use crate::store::Store;
use crate::util::clock;
use crate::vault::Vault;
use crate::wait::park::Parker;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

#[derive(Default)]
pub(super) struct ThreadCount {
    running: Mutex<usize>,
    done: Condvar,
    /// Sessions whose thread has not returned yet (never purged, even once ended).
    pub(super) live: Mutex<std::collections::BTreeSet<String>>,
}

pub struct SessionManager {
    pub(super) config: Arc<Config>,
    pub(super) store: Store,
    hub: Arc<WorkerHub>,
    parker: Arc<Parker>,
    pub(super) sessions: Mutex<BTreeMap<String, Arc<Session>>>,
    agent: AgentFn,
    pub(super) threads: Arc<ThreadCount>,
    shutting_down: AtomicBool,
    on_resume: OnceLock<ResumeHook>,
}

/// Called when an interrupted session is resumed, before its thread starts: its end hook back
/// (a schedule's run), or why it may not go on. Set once, by the scheduler; never called with
/// a session lock held.
pub type ResumeHook = Box<dyn Fn(&SessionRecord) -> Result<Option<EndHook>, String> + Send + Sync>;

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
        store.remove_purge_leftovers();
        for (dir, mut record) in store.load_all()? {
            dir.remove_leftovers();
            let interrupted = record.status.is_active();
            if interrupted {
                let by = Interruption::Restart;
                end_record(&mut record, Status::Error, Some(by.error_text().into()));
                record.end = Some(End::Interrupted { by });
            }
            let session = Arc::new(Session::new(record, dir, &config, &parker, Vault::default(), false));
            if interrupted {
                session.recover_progress();
                session.unlock_and_save(session.lock());
                session.log(LogKind::Error, Interruption::Restart.error_text(), None);
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
            threads: Arc::default(),
            shutting_down: AtomicBool::new(false),
            on_resume: OnceLock::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Session>>> {
        lock(&self.sessions)
    }

    pub fn get(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        self.lock().get(id).cloned().ok_or_else(|| SessionError::no_session(id))
    }

    /// See `ResumeHook`; a second one is ignored.
    pub fn set_resume_hook(&self, hook: ResumeHook) {
        let _ = self.on_resume.set(hook);
    }

    /// The active session that is a run of the schedule `name`, if any.
    pub fn active_run_of(&self, name: &str) -> Option<String> {
        let sessions: Vec<Arc<Session>> = self.lock().values().cloned().collect();
        let active = sessions.into_iter().filter(|s| s.status().is_active());
        active.map(|s| s.record()).find(|r| r.schedule.as_ref().is_some_and(|m| m.name == name)).map(|r| r.session_id)
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
    pub fn validate(&self, req: CreateSessionRequest) -> Result<NewSession, SessionError> {
        validate(req, &self.config, &self.hub)
    }

    /// Create the folder, register the session and start its thread.
    pub fn create(&self, new: NewSession) -> Result<Arc<Session>, SessionError> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(SessionError::Unavailable("the controller is shutting down".into()));
        }
        let NewSession { mut record, vault, on_end } = new;
        let now = clock::now();
        let mut sessions = self.lock();
        self.check_capacity(&sessions)?;
        let base = format!("sess_{}", clock::compact(now));
        let mut n = 1;
        let (id, dir) = loop {
            let id = if n == 1 { base.clone() } else { format!("{base}_{n}") };
            if !sessions.contains_key(&id) {
                match self.store.create_session_dir(&id) {
                    Ok(dir) => break (id, dir),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(SessionError::CreateFolder(e)),
                }
            }
            n += 1;
        };
        record.session_id = id.clone();
        record.created_at = clock::rfc3339(now);
        // The first record must land, or there is no session: a full disk refuses it, no folder left.
        if let Err(e) = dir.write_json(crate::store::SESSION_JSON, &record) {
            let _ = self.store.remove_session(&id);
            return Err(SessionError::CreateFolder(e));
        }
        let session = Arc::new(Session::new(record, dir, &self.config, &self.parker, vault, true));
        *lock(&session.on_end) = on_end;
        session.unlock_and_save(session.lock());
        sessions.insert(id.clone(), Arc::clone(&session));
        drop(sessions);
        let r = session.record();
        let what = r.instruction.as_deref().or(r.goal.as_deref()).unwrap_or("");
        let mode = match r.mode {
            Mode::Explore => "explore",
            Mode::Task => "task",
        };
        session.log(LogKind::System, &format!("{mode} session on {} created: {what}", r.target), None);
        self.spawn(Arc::clone(&session))?;
        log::info!("{id}: created");
        Ok(session)
    }

    fn spawn(&self, session: Arc<Session>) -> Result<(), SessionError> {
        let hub = Arc::clone(&self.hub);
        let agent = Arc::clone(&self.agent);
        let config = Arc::clone(&self.config);
        let threads = Arc::clone(&self.threads);
        *lock(&threads.running) += 1;
        lock(&threads.live).insert(session.id.clone());
        let for_thread = Arc::clone(&session);
        let spawned = std::thread::Builder::new()
            .name(format!("session-{}", session.id))
            .stack_size(1024 * 1024)
            .spawn(move || {
                run_session(&for_thread, &hub, &agent, config);
                lock(&threads.live).remove(&for_thread.id);
                *lock(&threads.running) -= 1;
                threads.done.notify_all();
            });
        if let Err(e) = spawned {
            *lock(&self.threads.running) -= 1;
            lock(&self.threads.live).remove(&session.id);
            let reason = format!("cannot start the session thread: {e}");
            session.end_from_outside(Status::Error, Some(reason.clone()));
            return Err(SessionError::Internal(reason));
        }
        Ok(())
    }

    /// At most `server.max_sessions` active at once.
    fn check_capacity(&self, sessions: &BTreeMap<String, Arc<Session>>) -> Result<(), SessionError> {
        let max = self.config.server.max_sessions;
        if max > 0 && sessions.values().filter(|s| s.status().is_active()).count() >= max {
            return Err(SessionError::Unavailable(format!(
                "{max} sessions are active, the most server.max_sessions allows; try again when one ends"
            )));
        }
        Ok(())
    }

    /// `POST /resume` on a session a restart or shutdown interrupted: it goes on from its
    /// journal in its own folder, on its worker again when that one is back and free.
    pub fn resume_interrupted(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        let old = self.get(id)?;
        if !old.interrupted() {
            let status = old.status();
            return Err(SessionError::Conflict(format!("session {id} is not paused ({})", status.as_str())));
        }
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(SessionError::Unavailable("the controller is shutting down".into()));
        }
        let mut record = old.record();
        record.status = Status::Waiting;
        (record.error, record.finished_at, record.summary, record.end) = (None, None, None, None);
        let free = |name: &String| {
            self.hub.workers().iter().any(|w| &w.hostname == name && w.connected && w.session_id.is_none())
        };
        record.requested_worker = record.worker.clone().filter(free).or(record.requested_worker);
        let on_end = match self.on_resume.get() {
            Some(hook) => {
                hook(&record).map_err(|why| SessionError::Conflict(format!("session {id} cannot go on: {why}")))?
            }
            None => None,
        };
        let session = Arc::new(old.reopened(record));
        *lock(&session.on_end) = on_end;
        {
            let mut sessions = self.lock();
            self.check_capacity(&sessions)?;
            if !Arc::ptr_eq(sessions.get(id).unwrap_or(&old), &old) {
                return Err(SessionError::Conflict(format!("session {id} is being resumed already")));
            }
            sessions.insert(id.to_string(), Arc::clone(&session));
        }
        session.unlock_and_save(session.lock());
        session.log(LogKind::System, "resumed after the controller restarted: going on from the journal", None);
        log::info!("{id}: resumed after an interruption");
        self.spawn(Arc::clone(&session))?;
        Ok(session)
    }

    /// `DELETE /sessions/:id`; `report`: the model writes a report on the stop (it costs a
    /// model call).
    pub fn stop(&self, id: &str, report: bool) -> Result<Status, SessionError> {
        let session = self.get(id)?;
        if !report {
            session.skip_stop_report();
        }
        if session.end_from_outside(Status::Stopped, None) {
            session.log(LogKind::System, "stopped by request", None);
            log::info!("{id}: stopped by request");
            return Ok(Status::Stopped);
        }
        match session.status() {
            Status::Stopped => Ok(Status::Stopped),
            status => Err(SessionError::Conflict(format!("session {id} has already ended ({})", status.as_str()))),
        }
    }

    /// Mark active sessions interrupted, wake them all and wait (bounded) for their threads.
    pub fn shutdown(&self, wait: Duration) {
        self.shutting_down.store(true, Ordering::Release);
        let sessions: Vec<Arc<Session>> = self.lock().values().cloned().collect();
        for s in &sessions {
            let by = Interruption::Shutdown;
            s.end_from_outside_as(Status::Error, Some(by.error_text().into()), Some(End::Interrupted { by }));
        }
        let deadline = Instant::now() + wait;
        let mut running = lock(&self.threads.running);
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
