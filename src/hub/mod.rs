//! The worker hub: who is connected, what each worker may do, which session holds it, and
//! the command handshake with each worker (its `CommandSlot`).
//!
//! A worker registers (a known hostname resumes its old id), long-polls `GET /command`, and
//! is leased to one session at a time, first come first served among the sessions waiting for
//! its capability. A worker silent for `worker_timeout_s` while not busy with a delivered
//! command is disconnected, and a command it never took fails at once. The hub knows nothing
//! of HTTP: a poll arrives as a `Responder` closure. Lock order: hub state → a worker's
//! presence → its slot → the parker.

mod executor;
mod identity;
mod slot;

pub use executor::WorkerExecutor;
pub use identity::Refusal;

use crate::exec::ExecError;
use crate::protocol::{Command, CommandResult, RegisterRequest, WorkerInfo};
use crate::util::clock;
use crate::util::secret::Secret;
use crate::wait::park::{Parker, Responder};
use crate::wait::stop::StopSignal;
use serde_json::Value;
use slot::CommandSlot;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a lease wait ended without a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEnd {
    Stopped,
    TimedOut,
}

#[derive(Debug, Clone)]
pub struct HubSettings {
    pub long_poll: Duration,
    pub worker_timeout: Duration,
    /// Bare requests (no `worker_id`) accepted, for workers that registered bare.
    pub legacy_workers: bool,
    /// Registered workers at most; 0 = no cap.
    pub max_workers: usize,
}

pub struct Worker {
    pub id: String,
    pub hostname: String,
    presence: Mutex<Presence>,
    slot: CommandSlot,
}

struct Presence {
    capabilities: Vec<String>,
    last_seen: Instant,
    last_seen_wall: String,
    connected: bool,
    /// The session holding the lease.
    session: Option<String>,
    /// What a request naming this worker must carry (new at each registration).
    secret: Secret,
    /// Registered without asking for a secret: bare requests may map here (legacy only).
    bare: bool,
    /// Whether it has ever sent `POST /heartbeat`: then a busy silence counts like any other
    /// (`worker_timeout_s`), not the command's whole timeout.
    heartbeats: bool,
}

impl Presence {
    /// Seen now; returns whether it was connected before.
    fn touch(&mut self) -> bool {
        self.last_seen = Instant::now();
        self.last_seen_wall = clock::now_rfc3339();
        std::mem::replace(&mut self.connected, true)
    }
}

impl Worker {
    fn presence(&self) -> MutexGuard<'_, Presence> {
        self.presence.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn capabilities(&self) -> Vec<String> {
        self.presence().capabilities.clone()
    }

    pub fn is_connected(&self) -> bool {
        self.presence().connected
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

impl WorkerHub {
    pub fn new(settings: HubSettings, parker: Arc<Parker>) -> WorkerHub {
        WorkerHub {
            settings,
            parker,
            state: Mutex::new(HubState::default()),
            lease_changed: Condvar::new(),
            next_command: AtomicU64::new(0),
            boot: format!("{:04x}", clock::random_u64() & 0xffff),
            shutting_down: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn closing(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// `POST /register`: a new worker, or a known hostname coming back (same id, resumes; a
    /// worker holding a secret only with `proof` of it, see `identity`). Returns the worker
    /// and its new secret.
    pub fn register(
        &self,
        req: &RegisterRequest,
        addr: Option<IpAddr>,
        proof: Option<&str>,
    ) -> Result<(Arc<Worker>, String), Refusal> {
        let caps = req.capabilities();
        let bare = self.settings.legacy_workers && !req.use_secret.unwrap_or(false);
        let secret = identity::new_secret();
        let mut restarted = None;
        let mut state = self.lock();
        let existing = state.workers.values().find(|w| identity::same_name(&w.hostname, &req.hostname)).cloned();
        let worker = match existing {
            Some(w) => {
                self.register_again(&w, caps, &secret, bare, proof)?;
                restarted = Some(Arc::clone(&w));
                w
            }
            None => {
                if self.settings.max_workers > 0 && state.workers.len() >= self.settings.max_workers {
                    return Err(Refusal::Full(format!(
                        "{} workers are registered, the most server.max_workers allows",
                        state.workers.len()
                    )));
                }
                let id = identity::new_id();
                let w = Arc::new(Worker {
                    id: id.clone(),
                    hostname: req.hostname.trim().to_string(),
                    presence: Mutex::new(Presence {
                        capabilities: caps.clone(),
                        last_seen: Instant::now(),
                        last_seen_wall: clock::now_rfc3339(),
                        connected: true,
                        session: None,
                        secret: Secret::new(secret.clone()),
                        bare,
                        heartbeats: false,
                    }),
                    slot: CommandSlot::default(),
                });
                state.workers.insert(id.clone(), Arc::clone(&w));
                let how = if bare { " (bare, legacy)" } else { "" };
                log::info!("worker {id} registered{how}: host {}, capabilities: {}", req.hostname, caps.join(","));
                w
            }
        };
        state.by_addr.retain(|_, id| id != &worker.id);
        if let Some(addr) = addr.filter(|_| bare) {
            state.by_addr.insert(addr, worker.id.clone());
        }
        // Under the hub's lock, so no lease can hand the restarted worker a command first.
        let dead_poll = restarted.and_then(|w| {
            w.slot.restarted(&self.parker, &format!("worker {} restarted (registered again)", w.hostname))
        });
        drop(state);
        slot::answer(dead_poll);
        self.lease_changed.notify_all();
        Ok((worker, secret))
    }

    /// A known hostname registers again (its slot is told once the hub's lock is released).
    /// A worker holding a secret, connected or serving a session, is resumed only by its
    /// secret: a hostname alone cannot take it over.
    fn register_again(
        &self,
        w: &Worker,
        caps: Vec<String>,
        secret: &str,
        bare: bool,
        proof: Option<&str>,
    ) -> Result<(), Refusal> {
        let mut presence = w.presence();
        let held = !presence.bare && (presence.connected || presence.session.is_some());
        if held && !identity::matches(presence.secret.expose(), proof) {
            return Err(Refusal::HostnameTaken(format!(
                "hostname {:?} belongs to a connected worker holding a secret; register with its \
                 secret (X-Worker-Secret), use another --hostname, or wait until it disconnects",
                w.hostname
            )));
        }
        presence.secret = Secret::new(secret);
        presence.bare = bare;
        presence.capabilities = caps.clone();
        presence.heartbeats = false;
        let was = presence.touch();
        drop(presence);
        log::info!(
            "worker {} ({}) registered again{}; capabilities: {}",
            w.id,
            w.hostname,
            if was { "" } else { " and is connected" },
            caps.join(",")
        );
        Ok(())
    }

    /// The worker a request comes from: by `worker_id` with its secret; a bare request (only
    /// while `legacy_workers` is on) by the last bare registration from the same address, else
    /// the only registered worker if it registered bare (the seed's single-worker setups).
    pub fn identify(
        &self,
        worker_id: Option<&str>,
        secret: Option<&str>,
        addr: Option<IpAddr>,
    ) -> Result<Arc<Worker>, Refusal> {
        let state = self.lock();
        if let Some(id) = worker_id.filter(|s| !s.is_empty()) {
            let unknown = || Refusal::Unknown(format!("unknown worker_id {id:?}; POST /register first"));
            let w = state.workers.get(id).ok_or_else(unknown)?;
            if !identity::matches(w.presence().secret.expose(), secret) {
                return Err(Refusal::WrongSecret(format!(
                    "worker {id} needs its secret from /register (header X-Worker-Secret)"
                )));
            }
            return Ok(Arc::clone(w));
        }
        if !self.settings.legacy_workers {
            return Err(Refusal::BareRefused(
                "send worker_id and its secret (X-Worker-Secret): server.legacy_workers is off".into(),
            ));
        }
        let is_bare = |w: &&Arc<Worker>| w.presence().bare;
        let by_addr = addr.and_then(|a| state.by_addr.get(&a)).and_then(|id| state.workers.get(id));
        let only = if state.workers.len() == 1 { state.workers.values().next() } else { None };
        by_addr
            .filter(is_bare)
            .or_else(|| only.filter(is_bare))
            .cloned()
            .ok_or_else(|| Refusal::Unknown("unknown worker; POST /register first (or send worker_id)".into()))
    }

    pub fn find(&self, id_or_hostname: &str) -> Option<Arc<Worker>> {
        let state = self.lock();
        state
            .workers
            .get(id_or_hostname)
            .or_else(|| state.workers.values().find(|w| identity::same_name(&w.hostname, id_or_hostname)))
            .cloned()
    }

    /// Note that the worker is alive; a disconnected worker comes back.
    pub fn touch(&self, worker: &Worker) {
        if !worker.presence().touch() {
            self.reconnected(worker);
        }
    }

    /// `POST /heartbeat`: a busy worker is alive. From now on its silences are held to
    /// `worker_timeout_s` even while it runs a command.
    pub fn heartbeat(&self, worker: &Worker) {
        let was = {
            let mut presence = worker.presence();
            presence.heartbeats = true;
            presence.touch()
        };
        if !was {
            self.reconnected(worker);
        }
    }

    /// How often a busy worker should send a heartbeat: a third of `worker_timeout_s`.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.settings.worker_timeout / 3).max(Duration::from_secs(1))
    }

    /// A worker that was disconnected polls again: sessions waiting for one may lease it.
    fn reconnected(&self, worker: &Worker) {
        log::info!("worker {} ({}) is connected again", worker.id, worker.hostname);
        let _state = self.lock();
        self.lease_changed.notify_all();
    }

    /// `GET /command`: hand over a queued command at once, or park the poll.
    pub fn poll(&self, worker: &Worker, respond: Responder) {
        let was = worker.presence().touch();
        let lost = format!("worker {} asked for new work instead", worker.hostname);
        worker.slot.poll(&self.parker, respond, self.settings.long_poll, self.closing(), &lost);
        if !was {
            self.reconnected(worker);
        }
    }

    /// Send one command to `worker` and wait for its result, at most `timeout`, ending at
    /// once when `stop` is raised.
    pub fn execute(
        &self,
        worker: &Arc<Worker>,
        session_id: &str,
        action: &str,
        params: Value,
        timeout: Duration,
        stop: &StopSignal,
    ) -> Result<Value, ExecError> {
        let id = format!("cmd_{}_{:04}", self.boot, self.next_command.fetch_add(1, Ordering::Relaxed) + 1);
        let cmd = Command {
            id: id.clone(),
            action: action.to_string(),
            params,
            session_id: session_id.to_string(),
            timeout_s: timeout.as_secs(),
        };
        if !worker.is_connected() {
            return Err(ExecError::Disconnected(format!(
                "worker {} is disconnected (no poll for {} s); the command was not sent",
                worker.hostname,
                self.settings.worker_timeout.as_secs()
            )));
        }
        worker.slot.send(&self.parker, cmd, &|| stop.is_raised())?;
        let sent = Instant::now();
        // Disconnected between the check and the send: the liveness check has already passed
        // this worker by, so fail the command here rather than wait out its timeout.
        if !worker.is_connected() {
            worker.slot.fail_queued(format!("worker {} disconnected before it took the command", worker.hostname));
        }
        let waker = Arc::clone(worker);
        let _registered = stop.on_raise(Arc::new(move || waker.slot.wake()));
        let outcome = worker.slot.wait(&id, action, timeout, &|| stop.is_raised() || self.closing());
        crate::util::metrics::command_done(sent.elapsed(), outcome.is_ok());
        outcome
    }

    /// `POST /result`. False when the id is not the one the worker was given (late or stray).
    pub fn post_result(&self, worker: &Worker, result: CommandResult) -> bool {
        worker.presence().touch();
        let outcome = if result.success {
            Ok(result.data.unwrap_or(Value::Null))
        } else {
            Err(ExecError::Failed(
                result
                    .error
                    .filter(|e| !e.trim().is_empty())
                    .unwrap_or_else(|| "the worker reported a failure without a message".into()),
            ))
        };
        worker.slot.fill(&result.id, outcome)
    }

    /// Wait until a capable, connected, idle worker can be leased to `session_id`, in the
    /// order sessions asked, until `deadline` if one is given. Ends early when `stop` is raised
    /// (or the hub shuts down).
    pub fn lease(
        self: &Arc<Self>,
        session_id: &str,
        capability: &str,
        preferred: Option<&str>,
        stop: &StopSignal,
        deadline: Option<Instant>,
    ) -> Result<Arc<Worker>, LeaseEnd> {
        let hub = Arc::clone(self);
        let _registered = stop.on_raise(Arc::new(move || {
            let _state = hub.lock();
            hub.lease_changed.notify_all();
        }));
        let mut state = self.lock();
        state.waiting.push(LeaseRequest {
            session_id: session_id.to_string(),
            capability: capability.to_string(),
            preferred: preferred.map(str::to_string),
        });
        loop {
            let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            if stop.is_raised() || self.closing() || timed_out {
                state.waiting.retain(|r| r.session_id != session_id);
                return Err(if timed_out { LeaseEnd::TimedOut } else { LeaseEnd::Stopped });
            }
            if let Some(worker) = match_waiting(&state, session_id) {
                worker.presence().session = Some(session_id.to_string());
                state.waiting.retain(|r| r.session_id != session_id);
                drop(state);
                self.lease_changed.notify_all();
                return Ok(worker);
            }
            // Re-checked each second as well, so a missed notification costs at most that.
            let left = deadline.map_or(Duration::from_secs(1), |d| d.saturating_duration_since(Instant::now()));
            let wait = left.clamp(Duration::from_millis(1), Duration::from_secs(1));
            state = self.lease_changed.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Why no worker for `capability` is free right now, in words for a person.
    pub fn availability(&self, capability: &str) -> String {
        let state = self.lock();
        let (mut capable, mut busy, mut connected) = (0, 0, 0);
        for w in state.workers.values() {
            let p = w.presence();
            if !p.connected {
                continue;
            }
            connected += 1;
            if p.capabilities.iter().any(|c| c == capability) {
                capable += 1;
                busy += usize::from(p.session.is_some());
            }
        }
        match (connected, capable) {
            (0, _) => "no worker is connected".to_string(),
            (n, 0) => format!("none of the {n} connected worker(s) has the {capability} capability"),
            (_, c) if busy == c => format!("all {c} worker(s) with the {capability} capability are busy"),
            (_, c) => format!("{c} worker(s) with the {capability} capability, {} free", c - busy),
        }
    }

    pub fn release(&self, worker: &Worker, session_id: &str) {
        let _state = self.lock();
        let mut presence = worker.presence();
        if presence.session.as_deref() == Some(session_id) {
            presence.session = None;
        }
        drop(presence);
        self.lease_changed.notify_all();
    }

    /// The session a worker serves now (uploads may only go there).
    pub fn serving(&self, worker: &Worker) -> Option<String> {
        worker.presence().session.clone()
    }

    /// Mark silent workers disconnected; the daemon calls this every 500 ms.
    pub fn check_liveness(&self) {
        let workers: Vec<Arc<Worker>> = self.lock().workers.values().cloned().collect();
        for w in workers {
            let mut presence = w.presence();
            if !presence.connected {
                continue;
            }
            let (busy, parked) = w.slot.liveness(&self.parker);
            // A worker that never sent a heartbeat (the seed's) is silent while it works: it
            // gets the command's whole timeout.
            let allowance = match busy {
                Some(b) if !presence.heartbeats => b.max(self.settings.worker_timeout),
                _ => self.settings.worker_timeout,
            };
            if parked || presence.last_seen.elapsed() <= allowance {
                continue;
            }
            presence.connected = false;
            let silent = presence.last_seen.elapsed().as_secs();
            if busy.is_some() {
                log::warn!("worker {} ({}) sent no heartbeat for {silent} s while busy: lost", w.id, w.hostname);
                w.slot.lost(&format!(
                    "worker lost: {} sent no heartbeat for {silent} s (server.worker_timeout_s) while running the command",
                    w.hostname
                ));
                continue;
            }
            log::warn!("worker {} ({}) has not polled for {silent} s: disconnected", w.id, w.hostname);
            w.slot.fail_queued(format!(
                "worker {} disconnected (no poll for {silent} s) before it took the command; \
                 it may come back: try again later",
                w.hostname
            ));
        }
    }

    pub fn workers(&self) -> Vec<WorkerInfo> {
        let state = self.lock();
        state
            .workers
            .values()
            .map(|w| {
                let p = w.presence();
                WorkerInfo {
                    worker_id: w.id.clone(),
                    hostname: w.hostname.clone(),
                    capabilities: p.capabilities.clone(),
                    connected: p.connected,
                    last_seen: p.last_seen_wall.clone(),
                    session_id: p.session.clone(),
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
            w.slot.wake();
        }
        self.lease_changed.notify_all();
    }
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
            if req.preferred.as_ref().is_some_and(|p| &w.id != p && !identity::same_name(&w.hostname, p)) {
                return false;
            }
            let p = w.presence();
            p.connected && p.session.is_none() && p.capabilities.iter().any(|c| c == &req.capability)
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
