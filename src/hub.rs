//! The worker hub: who is connected, what each worker may do, which session holds it, and the
//! one-command-at-a-time handshake between an agent thread and a worker's long poll.
//!
//! Per worker: a crossbeam `bounded(1)` command channel (at most one command queued or in
//! flight), a result slot guarded by a `Mutex` with a `Condvar` the agent waits on, and the
//! key of its parked `GET /command` (answered by whoever puts the next command, or by the
//! parker's deadline). Lock order, everywhere: hub state → worker inner → parker. A worker
//! that stops polling for `worker_timeout_s` while not busy with a delivered command is
//! disconnected and its undelivered command fails at once.

use crate::http::{self, ParkKey, Parker};
use crate::protocol::{Command, CommandResult, RegisterRequest, WorkerInfo};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tiny_http::Request;

/// Why a worker command did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// The worker ran it and reported a failure (its message, for the model).
    Failed(String),
    Timeout {
        action: String,
        after: Duration,
    },
    Disconnected(String),
    Stopped,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Failed(msg) => f.write_str(msg),
            CommandError::Timeout { action, after } => {
                write!(f, "{action} timed out after {} s without a result from the worker", after.as_secs())
            }
            CommandError::Disconnected(msg) => f.write_str(msg),
            CommandError::Stopped => f.write_str("the session was stopped"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HubSettings {
    pub long_poll: Duration,
    pub worker_timeout: Duration,
}

pub struct Worker {
    pub id: String,
    pub hostname: String,
    tx: Sender<Command>,
    rx: Receiver<Command>,
    inner: Mutex<WorkerInner>,
    result_ready: Condvar,
}

struct InFlight {
    id: String,
    delivered: bool,
    /// Silence allowed once delivered: the command's own timeout (a busy worker does not poll).
    busy_allowance: Duration,
}

struct WorkerInner {
    capabilities: Vec<String>,
    last_seen: Instant,
    last_seen_wall: String,
    connected: bool,
    parked: Option<ParkKey>,
    session: Option<String>,
    in_flight: Option<InFlight>,
    result: Option<(String, Result<Value, String>)>,
    /// Set when the worker disconnects with an undelivered command.
    failure: Option<(String, String)>,
}

impl Worker {
    fn lock(&self) -> MutexGuard<'_, WorkerInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn capabilities(&self) -> Vec<String> {
        self.lock().capabilities.clone()
    }

    pub fn is_connected(&self) -> bool {
        self.lock().connected
    }
}

struct LeaseRequest {
    session_id: String,
    capability: String,
    preferred: Option<String>,
}

#[derive(Default)]
struct HubState {
    workers: BTreeMap<String, Arc<Worker>>,
    by_addr: HashMap<IpAddr, String>,
    waiting: Vec<LeaseRequest>,
    next_worker: u64,
}

pub struct WorkerHub {
    /// Differs per daemon start, so ids from before a restart are unknown (404) rather than
    /// taken for someone else's.
    boot: String,
    settings: HubSettings,
    parker: Arc<Parker>,
    state: Mutex<HubState>,
    lease_changed: Condvar,
    next_command: AtomicU64,
    shutting_down: AtomicBool,
}

const WAIT_BODY: &[u8] = br#"{"action":"wait"}"#;

impl WorkerHub {
    pub fn new(settings: HubSettings, parker: Arc<Parker>) -> WorkerHub {
        WorkerHub {
            settings,
            parker,
            state: Mutex::new(HubState::default()),
            lease_changed: Condvar::new(),
            next_command: AtomicU64::new(0),
            boot: format!("{:04x}", crate::clock::random_u64() & 0xffff),
            shutting_down: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `POST /register`: a new worker, or a known hostname coming back (same id, resumes).
    pub fn register(&self, req: &RegisterRequest, addr: Option<IpAddr>) -> Arc<Worker> {
        let caps = req.capabilities();
        let mut state = self.lock();
        let existing = state.workers.values().find(|w| w.hostname == req.hostname).cloned();
        let worker = match existing {
            Some(w) => {
                let mut inner = w.lock();
                inner.capabilities = caps.clone();
                let was = inner.connected;
                touch(&mut inner);
                // A worker that registers again has restarted: its old poll is dead and a
                // command it had taken will never get a result.
                if let Some(request) = inner.parked.take().and_then(|k| self.parker.take(k)) {
                    send_wait(request);
                }
                let lost =
                    fail_lost_command(&mut inner, &format!("worker {} restarted (registered again)", w.hostname));
                drop(inner);
                if lost {
                    w.result_ready.notify_all();
                }
                log::info!(
                    "worker {} ({}) registered again{}; capabilities: {}",
                    w.id,
                    w.hostname,
                    if was { "" } else { " and is connected" },
                    caps.join(",")
                );
                w
            }
            None => {
                state.next_worker += 1;
                let id = format!("wkr_{}_{:04}", self.boot, state.next_worker);
                let (tx, rx) = crossbeam_channel::bounded(1);
                let w = Arc::new(Worker {
                    id: id.clone(),
                    hostname: req.hostname.clone(),
                    tx,
                    rx,
                    inner: Mutex::new(WorkerInner {
                        capabilities: caps.clone(),
                        last_seen: Instant::now(),
                        last_seen_wall: crate::clock::now_rfc3339(),
                        connected: true,
                        parked: None,
                        session: None,
                        in_flight: None,
                        result: None,
                        failure: None,
                    }),
                    result_ready: Condvar::new(),
                });
                state.workers.insert(id.clone(), Arc::clone(&w));
                log::info!("worker {id} registered: host {}, capabilities: {}", req.hostname, caps.join(","));
                w
            }
        };
        if let Some(addr) = addr {
            state.by_addr.insert(addr, worker.id.clone());
        }
        drop(state);
        self.lease_changed.notify_all();
        worker
    }

    /// The worker a request comes from: by `worker_id`, else the last registration from the
    /// same address, else the only registered worker (the seed's single-worker setups).
    pub fn identify(&self, worker_id: Option<&str>, addr: Option<IpAddr>) -> Option<Arc<Worker>> {
        let state = self.lock();
        if let Some(id) = worker_id.filter(|s| !s.is_empty()) {
            return state.workers.get(id).cloned();
        }
        if let Some(id) = addr.and_then(|a| state.by_addr.get(&a)) {
            return state.workers.get(id).cloned();
        }
        if state.workers.len() == 1 {
            return state.workers.values().next().cloned();
        }
        None
    }

    pub fn find(&self, id_or_hostname: &str) -> Option<Arc<Worker>> {
        let state = self.lock();
        state
            .workers
            .get(id_or_hostname)
            .or_else(|| state.workers.values().find(|w| w.hostname == id_or_hostname))
            .cloned()
    }

    /// Note that the worker is alive; a disconnected worker comes back.
    pub fn touch(&self, worker: &Worker) {
        let mut inner = worker.lock();
        let was = inner.connected;
        touch(&mut inner);
        drop(inner);
        if !was {
            self.reconnected(worker);
        }
    }

    /// A worker that was disconnected polls again: sessions waiting for one may lease it.
    fn reconnected(&self, worker: &Worker) {
        log::info!("worker {} ({}) is connected again", worker.id, worker.hostname);
        let _state = self.lock();
        self.lease_changed.notify_all();
    }

    /// `GET /command`: hand over a queued command at once, or park the request.
    pub fn poll(&self, worker: &Worker, request: Request) {
        let mut inner = worker.lock();
        let was = inner.connected;
        touch(&mut inner);
        // Workers run one command at a time: a new poll while a handed-over command has no
        // result means the worker never got it (dead socket) or dropped it.
        if fail_lost_command(&mut inner, &format!("worker {} asked for new work instead", worker.hostname)) {
            worker.result_ready.notify_all();
        }
        let previous = inner.parked.take().and_then(|k| self.parker.take(k));
        let reply = match take_command(worker, &mut inner) {
            Some(body) => Some(body),
            None if self.shutting_down.load(Ordering::Acquire) => Some(WAIT_BODY.to_vec()),
            None => None,
        };
        let request = match reply {
            Some(body) => Some((request, body)),
            None => {
                inner.parked = self.parker.park(request, self.settings.long_poll, WAIT_BODY.to_vec());
                None
            }
        };
        drop(inner);
        if let Some(old) = previous {
            send_wait(old);
        }
        if let Some((request, body)) = request {
            http::send(request, http::json_bytes_response(200, body));
        }
        if !was {
            self.reconnected(worker);
        }
    }

    /// Send one command to `worker` and wait for its result, at most `timeout`, waking early
    /// when `stopped()` turns true (callers notify through `wake_waits`).
    pub fn execute(
        &self,
        worker: &Worker,
        session_id: &str,
        action: &str,
        params: Value,
        timeout: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> Result<Value, CommandError> {
        let id = format!("cmd_{}_{:04}", self.boot, self.next_command.fetch_add(1, Ordering::Relaxed) + 1);
        let cmd = Command {
            id: id.clone(),
            action: action.to_string(),
            params,
            session_id: session_id.to_string(),
            timeout_s: timeout.as_secs(),
        };
        let mut inner = worker.lock();
        if !inner.connected {
            return Err(CommandError::Disconnected(format!(
                "worker {} is disconnected (no poll for {} s); the command was not sent",
                worker.hostname,
                self.settings.worker_timeout.as_secs()
            )));
        }
        // A command left over from an abandoned wait must not block this one.
        while worker.rx.try_recv().is_ok() {}
        inner.result = None;
        inner.failure = None;
        inner.in_flight = Some(InFlight { id: id.clone(), delivered: false, busy_allowance: timeout });
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = worker.tx.try_send(cmd) {
            inner.in_flight = None;
            return Err(CommandError::Failed("internal error: the worker's command slot is busy".into()));
        }
        let handoff = inner.parked.take().and_then(|k| self.parker.take(k)).map(|request| {
            let body = take_command(worker, &mut inner).unwrap_or_else(|| WAIT_BODY.to_vec());
            (request, body)
        });
        drop(inner);
        if let Some((request, body)) = handoff {
            http::send(request, http::json_bytes_response(200, body));
        }

        let deadline =
            Instant::now().checked_add(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        let mut inner = worker.lock();
        let outcome = loop {
            if let Some((rid, result)) = inner.result.take() {
                if rid == id {
                    break result.map_err(CommandError::Failed);
                }
            }
            if let Some((fid, msg)) = inner.failure.take() {
                if fid == id {
                    break Err(CommandError::Disconnected(msg));
                }
            }
            if stopped() || self.shutting_down.load(Ordering::Acquire) {
                break Err(CommandError::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                break Err(CommandError::Timeout { action: action.to_string(), after: timeout });
            }
            inner = worker.result_ready.wait_timeout(inner, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        };
        if inner.in_flight.as_ref().is_some_and(|f| f.id == id) {
            let delivered = inner.in_flight.as_ref().is_some_and(|f| f.delivered);
            inner.in_flight = None;
            if !delivered {
                while worker.rx.try_recv().is_ok() {}
            }
        }
        outcome
    }

    /// `POST /result`. False when the id is not the one the worker was given (late or stray).
    pub fn post_result(&self, worker: &Worker, result: CommandResult) -> bool {
        let mut inner = worker.lock();
        touch(&mut inner);
        if inner.in_flight.as_ref().is_none_or(|f| f.id != result.id) {
            return false;
        }
        let outcome = if result.success {
            Ok(result.data.unwrap_or(Value::Null))
        } else {
            Err(result
                .error
                .filter(|e| !e.trim().is_empty())
                .unwrap_or_else(|| "the worker reported a failure without a message".into()))
        };
        inner.result = Some((result.id, outcome));
        drop(inner);
        worker.result_ready.notify_all();
        true
    }

    /// Wait until a capable, connected, idle worker can be leased to `session_id`, in the
    /// order sessions asked. `None` when `stopped()` turns true first.
    pub fn lease(
        &self,
        session_id: &str,
        capability: &str,
        preferred: Option<&str>,
        stopped: &dyn Fn() -> bool,
    ) -> Option<Arc<Worker>> {
        let mut state = self.lock();
        state.waiting.push(LeaseRequest {
            session_id: session_id.to_string(),
            capability: capability.to_string(),
            preferred: preferred.map(str::to_string),
        });
        loop {
            if stopped() || self.shutting_down.load(Ordering::Acquire) {
                state.waiting.retain(|r| r.session_id != session_id);
                return None;
            }
            if let Some(worker) = match_waiting(&state, session_id) {
                worker.lock().session = Some(session_id.to_string());
                state.waiting.retain(|r| r.session_id != session_id);
                drop(state);
                self.lease_changed.notify_all();
                return Some(worker);
            }
            state = self.lease_changed.wait_timeout(state, Duration::from_secs(1)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    pub fn release(&self, worker: &Worker, session_id: &str) {
        let _state = self.lock();
        let mut inner = worker.lock();
        if inner.session.as_deref() == Some(session_id) {
            inner.session = None;
        }
        drop(inner);
        self.lease_changed.notify_all();
    }

    /// Wake every lease and command wait so a stopped session sees its flag.
    ///
    /// All command waits are woken, not only the one on the worker leased to the session: the
    /// lease may already be released (the agent saw the flag first) while a clone of the runner
    /// still waits. Each wait rechecks its own flag, so the others just go back to sleep.
    pub fn wake_waits(&self) {
        let workers: Vec<Arc<Worker>> = self.lock().workers.values().cloned().collect();
        for w in workers {
            // Taking the lock orders this wake after a waiter's flag check: no lost wakeup.
            drop(w.lock());
            w.result_ready.notify_all();
        }
        self.lease_changed.notify_all();
    }

    /// The session a worker serves now (uploads may only go there).
    pub fn serving(&self, worker: &Worker) -> Option<String> {
        worker.lock().session.clone()
    }

    /// Mark silent workers disconnected; the daemon calls this every 500 ms.
    pub fn check_liveness(&self) {
        let workers: Vec<Arc<Worker>> = self.lock().workers.values().cloned().collect();
        for w in workers {
            let mut inner = w.lock();
            if !inner.connected {
                continue;
            }
            let parked = inner.parked.is_some_and(|k| self.parker.contains(k));
            let allowance = match &inner.in_flight {
                Some(f) if f.delivered => self.settings.worker_timeout.max(f.busy_allowance),
                _ => self.settings.worker_timeout,
            };
            if parked || inner.last_seen.elapsed() <= allowance {
                continue;
            }
            inner.connected = false;
            let silent = inner.last_seen.elapsed().as_secs();
            log::warn!("worker {} ({}) has not polled for {silent} s: disconnected", w.id, w.hostname);
            if let Some(f) = inner.in_flight.take() {
                while w.rx.try_recv().is_ok() {}
                inner.failure = Some((
                    f.id,
                    format!(
                        "worker {} disconnected (no poll for {silent} s) before it took the command; \
                         it may come back: try again later",
                        w.hostname
                    ),
                ));
                drop(inner);
                w.result_ready.notify_all();
            }
        }
    }

    pub fn workers(&self) -> Vec<WorkerInfo> {
        let state = self.lock();
        state
            .workers
            .values()
            .map(|w| {
                let inner = w.lock();
                WorkerInfo {
                    worker_id: w.id.clone(),
                    hostname: w.hostname.clone(),
                    capabilities: inner.capabilities.clone(),
                    connected: inner.connected,
                    last_seen: inner.last_seen_wall.clone(),
                    session_id: inner.session.clone(),
                }
            })
            .collect()
    }

    pub fn connected_count(&self) -> usize {
        self.lock().workers.values().filter(|w| w.is_connected()).count()
    }

    /// Stop handing out work: waiting leases and commands return, new polls get `wait`.
    pub fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        let state = self.lock();
        for w in state.workers.values() {
            // Taking the lock orders this wake-up after any waiter's check of the flag.
            drop(w.lock());
            w.result_ready.notify_all();
        }
        self.lease_changed.notify_all();
    }
}

/// The queued command as a response body, marked delivered; `None` when nothing is queued.
fn take_command(worker: &Worker, inner: &mut WorkerInner) -> Option<Vec<u8>> {
    let cmd = worker.rx.try_recv().ok()?;
    if let Some(f) = inner.in_flight.as_mut().filter(|f| f.id == cmd.id) {
        f.delivered = true;
    }
    Some(serde_json::to_vec(&cmd).unwrap_or_default())
}

fn send_wait(request: Request) {
    http::send(request, http::json_bytes_response(200, WAIT_BODY.to_vec()));
}

/// Fail a delivered command that has no result yet; true when one was failed.
fn fail_lost_command(inner: &mut WorkerInner, why: &str) -> bool {
    let Some(f) = inner.in_flight.as_ref().filter(|f| f.delivered) else { return false };
    let answered = inner.result.as_ref().is_some_and(|(id, _)| id == &f.id);
    if answered || inner.failure.is_some() {
        return false;
    }
    let id = f.id.clone();
    inner.failure =
        Some((id.clone(), format!("{why} without returning a result for {id}; the command may not have run")));
    inner.in_flight = None;
    true
}

fn touch(inner: &mut WorkerInner) {
    inner.last_seen = Instant::now();
    inner.last_seen_wall = crate::clock::now_rfc3339();
    inner.connected = true;
}

/// First-come matching of waiting sessions to free workers; the worker for `session_id`, if
/// its turn has come.
fn match_waiting(state: &HubState, session_id: &str) -> Option<Arc<Worker>> {
    let mut taken: Vec<&str> = Vec::new();
    for req in &state.waiting {
        let candidate = state.workers.values().find(|w| {
            if taken.contains(&w.id.as_str()) {
                return false;
            }
            if let Some(p) = &req.preferred {
                if &w.id != p && &w.hostname != p {
                    return false;
                }
            }
            let inner = w.lock();
            inner.connected && inner.session.is_none() && inner.capabilities.iter().any(|c| c == &req.capability)
        });
        if let Some(w) = candidate {
            if req.session_id == session_id {
                return Some(Arc::clone(w));
            }
            taken.push(&w.id);
        }
    }
    None
}
