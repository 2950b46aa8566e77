//! A schedule's runs: starting one (a session marked `schedule: {name, run}`, told to report
//! its end back), skipping one whose previous run still goes, recording how each ended,
//! reporting an error or a diverged replay, and the state kept on disk and shown by the API.

use super::spec::{self, Spec, Task};
use super::{Entry, Inner, LastRun, Origin, Running, ScheduleError, StartupError, not_found};
use crate::protocol::replay::ReplayRequest;
use crate::protocol::schedule::ScheduleMark;
use crate::protocol::{CreateSessionRequest, SessionRecord, Status};
use crate::session::SessionError;
use crate::session::{EndHook, NewSession, Session};
use crate::util::cause::chain;
use crate::util::clock;
use serde_json::{Value, json};
use std::sync::{Arc, Weak};

/// How a run ended, as `/metrics` counts it.
fn outcome(record: &SessionRecord) -> &'static str {
    let diverged = record.replay.as_ref().is_some_and(|r| r.diverged.is_some());
    match record.status {
        Status::Finished if diverged => "diverged",
        Status::Finished => "finished",
        Status::Error => "error",
        Status::Stopped => "stopped",
        _ => "running",
    }
}

impl Inner {
    /// A due run: started, or skipped while the previous one still goes.
    pub(super) fn fire_due(self: &Arc<Self>, name: &str, due_ms: i64) {
        match self.fire(name, Some(due_ms)) {
            Ok(_) | Err(ScheduleError::NotFound(_)) => {}
            Err(ScheduleError::Busy(why)) => {
                log::warn!("schedule {name}: run due at {} skipped: {why}", clock::rfc3339_from_ms(due_ms))
            }
            Err(e) => {
                log::error!(
                    "schedule {name}: the run due at {} did not start: {}",
                    clock::rfc3339_from_ms(due_ms),
                    chain(&e)
                )
            }
        }
    }

    /// Start a run (`due_ms`: the due time it is for; none for "run now").
    pub(super) fn fire(self: &Arc<Self>, name: &str, due_ms: Option<i64>) -> Result<Arc<Session>, ScheduleError> {
        let (spec, run) = self.reserve(name, due_ms)?;
        let made = self.start_session(&spec, run);
        {
            let mut book = self.book();
            if let Some(e) = book.entries.get_mut(name) {
                let (session_id, status, error) = match &made {
                    Ok(s) => (Some(s.id.clone()), s.status().as_str().to_string(), None),
                    Err(e) => (None, "failed".to_string(), Some((self.describe)(e))),
                };
                e.running = session_id.clone().map_or(Running::Idle, Running::Session);
                e.last = Some(LastRun { run, session_id, status, at_ms: clock::unix_ms(), error });
                if made.is_err() {
                    e.count("failed");
                }
            }
        }
        let kept = self.persist(name);
        let session = made.map_err(ScheduleError::Session)?;
        log::info!("schedule {name}: run {run} started as {}", session.id);
        kept.map(|()| session)
    }

    /// Count the run, or refuse it while the previous one is still going.
    fn reserve(&self, name: &str, due_ms: Option<i64>) -> Result<(Arc<Spec>, u64), ScheduleError> {
        let mut book = self.book();
        let e = book.entries.get_mut(name).ok_or_else(|| not_found(name))?;
        // A run of an earlier schedule of this name (deleted and made again) still counts.
        if e.running == Running::Idle {
            if let Some(id) = self.sessions.active_run_of(name) {
                e.running = Running::Session(id);
            }
        }
        let going = match &e.running {
            Running::Idle => None,
            Running::Starting => Some("its previous run is being started".to_string()),
            Running::Session(id) => self
                .sessions
                .get(id)
                .is_ok_and(|s| s.status().is_active())
                .then(|| format!("run {} (session {id}) is still going", e.runs)),
        };
        if let Some(why) = going {
            if due_ms.is_some() {
                e.skipped += 1;
                e.count("skipped");
            }
            return Err(ScheduleError::Busy(why));
        }
        e.runs += 1;
        e.running = Running::Starting;
        if due_ms.is_some() {
            e.last_due_ms = due_ms;
        }
        Ok((Arc::clone(&e.spec), e.runs))
    }

    /// The run's session, marked and told to report its end.
    fn start_session(self: &Arc<Self>, spec: &Spec, run: u64) -> Result<Arc<Session>, SessionError> {
        let mut new: NewSession = match &spec.task {
            Task::Session(body) => {
                let req: CreateSessionRequest = crate::protocol::strict::from_value(body)
                    .map_err(|e| SessionError::Invalid(format!("`session`: {e}")))?;
                self.sessions.validate(req)?
            }
            Task::Replay { source, params } => {
                let req = ReplayRequest { params: params.clone(), instruction: None, worker: None };
                self.sessions.prepare_replay(source, req)?
            }
        };
        new.record.schedule = Some(ScheduleMark { name: spec.name.clone(), run });
        new.on_end = Some(self.end_hook(spec.name.clone(), run));
        self.sessions.create(new)
    }

    /// What a run's session calls at its end.
    fn end_hook(self: &Arc<Self>, name: String, run: u64) -> EndHook {
        let weak: Weak<Inner> = Arc::downgrade(self);
        Box::new(move |record: &SessionRecord| {
            if let Some(inner) = weak.upgrade() {
                inner.ended(&name, run, record);
            }
        })
    }

    /// A run's session a restart interrupted is resumed: the schedule's run again (the next
    /// one waits for it, its end is recorded), unless another run of it goes on meanwhile.
    pub(super) fn resumed(self: &Arc<Self>, record: &SessionRecord) -> Result<Option<EndHook>, String> {
        let Some(mark) = &record.schedule else { return Ok(None) };
        {
            let mut book = self.book();
            let Some(e) = book.entries.get_mut(&mark.name) else { return Ok(None) };
            if let Running::Session(other) = &e.running {
                if *other != record.session_id && self.sessions.get(other).is_ok_and(|s| s.status().is_active()) {
                    return Err(format!("schedule {}'s run {} (session {other}) is going", mark.name, e.runs));
                }
            }
            e.running = Running::Session(record.session_id.clone());
            if let Some(last) = e.last.as_mut().filter(|l| l.run == mark.run) {
                last.status = record.status.as_str().to_string();
                last.error = None;
            }
        }
        if let Err(e) = self.persist(&mark.name) {
            log::error!("schedule {}: {}", mark.name, chain(&e));
        }
        log::info!("schedule {}: run {} ({}) resumed", mark.name, mark.run, record.session_id);
        Ok(Some(self.end_hook(mark.name.clone(), mark.run)))
    }

    /// A run's session ended: record it, count it, report an error or a diverged replay.
    fn ended(&self, name: &str, run: u64, record: &SessionRecord) {
        let outcome = outcome(record);
        let (spec, stopping) = {
            let mut book = self.book();
            let stopping = book.stopping;
            let Some(e) = book.entries.get_mut(name) else { return };
            if e.running == Running::Session(record.session_id.clone()) {
                e.running = Running::Idle;
            }
            if let Some(last) = e.last.as_mut().filter(|l| l.run == run) {
                last.status = record.status.as_str().to_string();
                last.error = record.error.clone();
            }
            e.count(outcome);
            (Arc::clone(&e.spec), stopping)
        };
        if let Err(e) = self.persist(name) {
            log::error!("schedule {name}: {}", chain(&e));
        }
        log::info!("schedule {name}: run {run} ({}) ended: {outcome}", record.session_id);
        if !stopping && matches!(outcome, "error" | "diverged") {
            self.report(&spec, run, record);
        }
    }

    /// Tell the schedule's targets (else the session's) what went wrong, off this thread.
    fn report(&self, spec: &Spec, run: u64, record: &SessionRecord) {
        let Some(targets) = spec.notify.clone().or_else(|| spec.session_notifications()) else { return };
        let id = record.session_id.clone();
        let head = format!("Schedule {}, run {run} (session {id})", spec.name);
        let message = match (&record.replay.as_ref().and_then(|r| r.diverged.clone()), record.status) {
            (Some(why), Status::Error) => format!(
                "{head}: the replay diverged ({why}) and then ended with an error: {}",
                record.error.as_deref().unwrap_or("unknown")
            ),
            (Some(why), _) => format!(
                "{head}: the replay diverged, the model took over: {why}. Outcome: {}",
                record.summary.as_deref().unwrap_or(record.status.as_str())
            ),
            (None, _) => format!("{head} ended with an error: {}", record.error.as_deref().unwrap_or("unknown")),
        };
        let notifier = Arc::clone(&self.notifier);
        let _ = std::thread::Builder::new().name(format!("notify-{id}")).spawn(move || {
            for d in notifier.send(&targets, &message, &id, &[]) {
                if let Err(e) = d.result {
                    log::warn!("{id}: schedule notification failed ({}): {e}", d.channel);
                }
            }
        });
    }

    /// Write the schedule's file (or nothing, once it is deleted).
    pub(super) fn persist(&self, name: &str) -> Result<(), ScheduleError> {
        let _disk = super::lock(&self.disk);
        let Some(json) = self.book().entries.get(name).map(Entry::kept) else { return Ok(()) };
        let bytes = serde_json::to_vec_pretty(&json).unwrap_or_default();
        self.store
            .write_schedule(name, &bytes)
            .map_err(|source| ScheduleError::Disk { what: format!("cannot keep schedule {name:?}"), source })
    }

    /// Every schedule (or the one named) as the API shows it.
    pub(super) fn views(&self, only: Option<&str>) -> Vec<Value> {
        let book = self.book();
        let picked = book.entries.iter().filter(|(n, _)| only.is_none_or(|o| o == n.as_str()));
        let mut out: Vec<(Value, Option<String>)> = picked.map(|(_, e)| (e.view(), e.last_session())).collect();
        drop(book);
        // A run's status as it is now, read outside the book.
        for (view, id) in &mut out {
            if let Some(s) = id.as_deref().and_then(|id| self.sessions.get(id).ok()) {
                view["last_run"]["status"] = json!(s.status().as_str());
            }
        }
        out.into_iter().map(|(v, _)| v).collect()
    }

    /// config.yaml's schedules, then the stored ones with their run state.
    pub(super) fn load(&self, from_config: &[Value]) -> Result<(), StartupError> {
        let now = clock::unix_ms();
        let mut book = self.book();
        for (index, raw) in from_config.iter().enumerate() {
            let spec = spec::check(raw.clone(), &self.sessions, false, self.min_gap_s)
                .map_err(|source| StartupError::ConfigSchedule { index, source })?;
            if book.entries.contains_key(&spec.name) {
                return Err(StartupError::NameTwice { index, name: spec.name.clone() });
            }
            book.entries.insert(spec.name.clone(), Entry::new(Arc::new(spec), Origin::Config, now));
        }
        let stored = self.store.load_schedules().map_err(StartupError::Stored)?;
        for (name, bytes) in stored {
            let kept: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let from_config = kept["origin"] == "config";
            if !from_config && !book.entries.contains_key(&name) {
                match spec::check(kept["definition"].clone(), &self.sessions, false, self.min_gap_s) {
                    Ok(spec) if spec.name == name => {
                        let anchor = kept["created_ms"].as_i64().unwrap_or(now);
                        book.entries.insert(name.clone(), Entry::new(Arc::new(spec), Origin::Api, anchor));
                    }
                    Ok(_) => log::error!("schedules/{name}.json names another schedule; left out"),
                    Err(e) => log::error!("schedules/{name}.json cannot be used ({}); left out", chain(&e)),
                }
            } else if !from_config {
                log::warn!("schedule {name}: config.yaml defines it too; the stored one is left out");
                continue;
            }
            if let Some(e) = book.entries.get_mut(&name).filter(|e| (e.origin == Origin::Config) == from_config) {
                e.restore(&kept, now);
            }
        }
        if !book.entries.is_empty() {
            log::info!("{} schedules loaded", book.entries.len());
        }
        Ok(())
    }
}

impl Entry {
    /// What the file keeps: the definition (API schedules only: config.yaml holds the others)
    /// and the run state.
    fn kept(&self) -> Value {
        let last = self.last.as_ref().map(|l| {
            json!({"run": l.run, "session_id": l.session_id, "status": l.status, "at_ms": l.at_ms, "error": l.error})
        });
        json!({
            "origin": self.origin.as_str(),
            "definition": if self.origin == Origin::Api { self.spec.raw.clone() } else { Value::Null },
            "created_ms": self.anchor_ms,
            "runs": self.runs,
            "skipped": self.skipped,
            "last_due_ms": self.last_due_ms,
            "last": last,
        })
    }

    /// The run state from the file; the next due time from now, or at once for one catch-up
    /// run when one was missed while the daemon was down.
    fn restore(&mut self, kept: &Value, now: i64) {
        self.anchor_ms = kept["created_ms"].as_i64().unwrap_or(self.anchor_ms);
        self.runs = kept["runs"].as_u64().unwrap_or(0);
        self.skipped = kept["skipped"].as_u64().unwrap_or(0);
        self.last_due_ms = kept["last_due_ms"].as_i64();
        self.last = kept["last"].as_object().map(|l| LastRun {
            run: l.get("run").and_then(Value::as_u64).unwrap_or(0),
            session_id: l.get("session_id").and_then(Value::as_str).map(str::to_string),
            status: l.get("status").and_then(Value::as_str).unwrap_or("").to_string(),
            at_ms: l.get("at_ms").and_then(Value::as_i64).unwrap_or(0),
            error: l.get("error").and_then(Value::as_str).map(str::to_string),
        });
        let since = self.last_due_ms.unwrap_or(self.anchor_ms);
        let missed = self.spec.when.next_after(self.anchor_ms, since).is_some_and(|t| t <= now);
        self.next_ms = if self.spec.catch_up && missed {
            log::info!("schedule {}: a run was missed while the daemon was down; catching up", self.spec.name);
            Some(now)
        } else {
            self.spec.when.next_after(self.anchor_ms, now)
        };
    }

    fn last_session(&self) -> Option<String> {
        self.last.as_ref().and_then(|l| l.session_id.clone())
    }

    /// The definition (secrets left out), where it comes from, its runs, last and next.
    fn view(&self) -> Value {
        let mut v = self.spec.shown();
        v["from"] = json!(self.origin.as_str());
        v["catch_up"] = json!(self.spec.catch_up);
        v["created_at"] = json!(clock::rfc3339_from_ms(self.anchor_ms));
        v["runs"] = json!(self.runs);
        v["skipped"] = json!(self.skipped);
        v["running"] = json!(matches!(self.running, Running::Starting | Running::Session(_)));
        v["next_run"] = json!(self.next_ms.map(clock::rfc3339_from_ms));
        v["last_run"] = json!(self.last.as_ref().map(|l| json!({
            "run": l.run,
            "session_id": l.session_id,
            "status": l.status,
            "at": clock::rfc3339_from_ms(l.at_ms),
            "error": l.error,
        })));
        v
    }
}
