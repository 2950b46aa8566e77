//! Scheduled sessions: recurring runs of a session body, or replays of a finished session,
//! `every` so long or on a `cron` expression.
//!
//! One thread (`scheduler`) sleeps on a Condvar until the earliest due time, and is woken early
//! by an add, a delete and the shutdown: no polling. A due run whose previous run is still
//! going is skipped (logged, counted), never stacked. Schedules from the API are kept in the
//! output directory (`store/schedules.rs`) with their run count and last run, so they survive
//! a restart; those from config.yaml (`schedules:`) are read at start and cannot be changed
//! through the API, but their run state is kept the same way. Runs missed while the daemon was
//! down are dropped, or made up by one run at start with `catch_up: true`. At most
//! `server.max_schedules`, each run at most once per `server.schedule_min_interval_s`. A run
//! stays the schedule's when resumed after a restart, or when the schedule is deleted and made
//! again: the next one waits for it.
//!
//! Lock order: the book → the session manager's locks (a run's status is read under the book);
//! the book is never held while a session is created or a file written.

mod runs;
mod spec;
mod timing;

pub use spec::ScheduleError;

use crate::config::Config;
use crate::notify::Notifier;
use crate::session::{SessionError, SessionManager};
use crate::store::Store;
use crate::util::clock;
use serde_json::Value;
use spec::Spec;
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest the thread sleeps without a due run (a wall clock set forward is noticed then).
const MAX_SLEEP_MS: i64 = 60_000;

/// Why the scheduler did not start (the daemon's start-up message).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// config.yaml's `schedules[index]` is not a valid schedule.
    #[error("config key `schedules[{index}]`: {source}")]
    ConfigSchedule { index: usize, source: ScheduleError },
    /// config.yaml's `schedules[index]` takes a name an earlier one has.
    #[error("config key `schedules[{index}]`: the name {name:?} is used twice")]
    NameTwice { index: usize, name: String },
    /// The output directory's `schedules/` could not be read.
    #[error("cannot read the stored schedules: {0}")]
    Stored(#[source] std::io::Error),
    /// The scheduler's thread could not be started.
    #[error("cannot start the scheduler thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Where a schedule was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Api,
    Config,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Api => "api",
            Origin::Config => "config",
        }
    }
}

/// What the schedule's latest run is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Running {
    Idle,
    /// Its session is being created.
    Starting,
    Session(String),
}

/// The latest run.
#[derive(Debug, Clone)]
struct LastRun {
    run: u64,
    session_id: Option<String>,
    /// As recorded at its end (the session's live status is shown while it runs).
    status: String,
    at_ms: i64,
    error: Option<String>,
}

struct Entry {
    spec: Arc<Spec>,
    origin: Origin,
    /// When it was made: `every` counts from here.
    anchor_ms: i64,
    next_ms: Option<i64>,
    runs: u64,
    skipped: u64,
    last_due_ms: Option<i64>,
    last: Option<LastRun>,
    running: Running,
    /// Runs by outcome since the start (for `/metrics`), in the order of `OUTCOMES`.
    outcomes: [u64; OUTCOMES.len()],
}

/// How a run ended, as `/metrics` counts it.
const OUTCOMES: [&str; 6] = ["finished", "diverged", "error", "stopped", "skipped", "failed"];

impl Entry {
    fn count(&mut self, outcome: &str) {
        if let Some(i) = OUTCOMES.iter().position(|o| *o == outcome) {
            self.outcomes[i] += 1;
        }
    }
}

#[derive(Default)]
struct Book {
    entries: BTreeMap<String, Entry>,
    stopping: bool,
}

struct Inner {
    sessions: Arc<SessionManager>,
    /// How a run's failed start is worded in its `last` entry (the HTTP layer's words for it).
    describe: Describe,
    /// `server.max_schedules` (0: no cap) and `server.schedule_min_interval_s`.
    max_schedules: usize,
    min_gap_s: u64,
    store: Store,
    notifier: Arc<Notifier>,
    book: Mutex<Book>,
    /// Paired with `book`: an add, a delete, the shutdown.
    wake: Condvar,
    /// Orders the writes of schedule files.
    disk: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The words a run's failed start is kept with, as the API would answer them.
pub type Describe = fn(&SessionError) -> String;

pub struct Scheduler {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Scheduler {
    /// Load config.yaml's schedules and the stored ones, and start the thread. A bad schedule
    /// in config.yaml stops the start (naming it); a bad stored one is logged and left out.
    pub fn start(
        config: &Config,
        store: Store,
        sessions: Arc<SessionManager>,
        describe: Describe,
    ) -> Result<Scheduler, StartupError> {
        let notifier = Arc::new(
            Notifier::new(&config.notifications.telegram_base_url, Duration::from_secs(config.notifications.timeout_s))
                .allow_private(config.notifications.allow_private),
        );
        let inner = Arc::new(Inner {
            sessions,
            describe,
            max_schedules: config.server.max_schedules,
            min_gap_s: config.server.schedule_min_interval_s,
            store,
            notifier,
            book: Mutex::default(),
            wake: Condvar::new(),
            disk: Mutex::default(),
        });
        inner.load(&config.schedules)?;
        // A run a restart interrupted and a person resumes is this schedule's run again.
        let weak = Arc::downgrade(&inner);
        inner.sessions.set_resume_hook(Box::new(move |record| match weak.upgrade() {
            Some(inner) => inner.resumed(record),
            None => Ok(None),
        }));
        let for_thread = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("scheduler".into())
            .stack_size(256 * 1024)
            .spawn(move || for_thread.run())
            .map_err(StartupError::Thread)?;
        Ok(Scheduler { inner, thread: Mutex::new(Some(thread)) })
    }

    /// `POST /schedules`: check, keep, and wake the thread for its first due time.
    pub fn add(&self, raw: Value) -> Result<Value, ScheduleError> {
        self.inner.add(raw)
    }

    /// `GET /schedules`, by name.
    pub fn list(&self) -> Vec<Value> {
        self.inner.views(None)
    }

    /// `GET /schedules/{name}`.
    pub fn get(&self, name: &str) -> Result<Value, ScheduleError> {
        self.inner.views(Some(name)).pop().ok_or_else(|| not_found(name))
    }

    /// `DELETE /schedules/{name}`: no run after this (one going on goes on).
    pub fn delete(&self, name: &str) -> Result<(), ScheduleError> {
        self.inner.delete(name)
    }

    /// `POST /schedules/{name}/run`: a run now, its session's record (busy while one runs).
    pub fn run_now(&self, name: &str) -> Result<Value, ScheduleError> {
        let session = self.inner.fire(name, None)?;
        let mut value = serde_json::to_value(session.record()).unwrap_or_default();
        value["session_id"] = Value::from(session.id.clone());
        Ok(value)
    }

    /// Runs by schedule and outcome since the start, for `/metrics`.
    pub fn counts(&self) -> Vec<(String, &'static str, u64)> {
        let book = lock(&self.inner.book);
        let each = book.entries.iter().flat_map(|(n, e)| {
            OUTCOMES.iter().zip(e.outcomes).filter(|(_, c)| *c > 0).map(move |(o, c)| (n.clone(), *o, c))
        });
        each.collect()
    }

    /// Stop the thread; runs already going are left to the session manager's shutdown, and
    /// their ends notify nobody.
    pub fn shutdown(&self) {
        lock(&self.inner.book).stopping = true;
        self.inner.wake.notify_all();
        if let Some(h) = lock(&self.thread).take() {
            let _ = h.join();
        }
    }
}

fn not_found(name: &str) -> ScheduleError {
    ScheduleError::NotFound(format!("no schedule {name:?} (GET /schedules lists them)"))
}

impl Inner {
    fn book(&self) -> MutexGuard<'_, Book> {
        lock(&self.book)
    }

    /// The thread: fire what is due, then sleep until the next due time or a wake.
    fn run(self: Arc<Self>) {
        let mut book = self.book();
        loop {
            if book.stopping {
                return;
            }
            let now = clock::unix_ms();
            let mut due = Vec::new();
            for (name, e) in book.entries.iter_mut() {
                if let Some(at) = e.next_ms.filter(|at| *at <= now) {
                    e.next_ms = e.spec.when.next_after(e.anchor_ms, now.max(at));
                    due.push((name.clone(), at));
                }
            }
            if !due.is_empty() {
                drop(book);
                for (name, at) in due {
                    self.fire_due(&name, at);
                }
                book = self.book();
                continue;
            }
            let next = book.entries.values().filter_map(|e| e.next_ms).min();
            let wait = next.map_or(MAX_SLEEP_MS, |t| (t - now).clamp(1, MAX_SLEEP_MS));
            book = self
                .wake
                .wait_timeout(book, Duration::from_millis(wait.unsigned_abs()))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn add(&self, raw: Value) -> Result<Value, ScheduleError> {
        let spec = spec::check(raw, &self.sessions, true, self.min_gap_s)?;
        let name = spec.name.clone();
        {
            let mut book = self.book();
            if let Some(e) = book.entries.get(&name) {
                let from = match e.origin {
                    Origin::Config => " (in config.yaml)",
                    Origin::Api => "",
                };
                return Err(ScheduleError::Exists(format!("a schedule named {name:?} already exists{from}")));
            }
            if self.max_schedules > 0 && book.entries.len() >= self.max_schedules {
                return Err(ScheduleError::Full(format!(
                    "{} schedules exist, the most server.max_schedules allows; delete one first",
                    book.entries.len()
                )));
            }
            let now = clock::unix_ms();
            let entry = Entry::new(Arc::new(spec), Origin::Api, now);
            book.entries.insert(name.clone(), entry);
        }
        if let Err(e) = self.persist(&name) {
            self.book().entries.remove(&name);
            return Err(e);
        }
        log::info!("schedule {name}: added");
        self.wake.notify_all();
        self.views(Some(&name)).pop().ok_or_else(|| not_found(&name))
    }

    fn delete(&self, name: &str) -> Result<(), ScheduleError> {
        let _disk = lock(&self.disk);
        let mut book = self.book();
        let origin = book.entries.get(name).map(|e| e.origin).ok_or_else(|| not_found(name))?;
        if origin == Origin::Config {
            return Err(ScheduleError::ReadOnly(format!(
                "schedule {name:?} comes from config.yaml (`schedules:`); remove it there and restart"
            )));
        }
        book.entries.remove(name);
        drop(book);
        self.wake.notify_all();
        self.store
            .remove_schedule(name)
            .map_err(|source| ScheduleError::Disk { what: format!("cannot remove schedule {name:?}"), source })?;
        log::info!("schedule {name}: deleted");
        Ok(())
    }
}

impl Entry {
    fn new(spec: Arc<Spec>, origin: Origin, anchor_ms: i64) -> Entry {
        let next_ms = spec.when.next_after(anchor_ms, anchor_ms);
        Entry {
            spec,
            origin,
            anchor_ms,
            next_ms,
            runs: 0,
            skipped: 0,
            last_due_ms: None,
            last: None,
            running: Running::Idle,
            outcomes: [0; OUTCOMES.len()],
        }
    }
}
