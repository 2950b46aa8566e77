//! The worker hub: who is connected, what each worker may do, which session holds it, and
//! the command handshake with each worker (its `CommandSlot`).
//!
//! A worker registers (`registry.rs`: a known hostname resumes its old id), long-polls
//! `GET /command` (`poll` here), and is leased to one session at a time (`lease.rs`: first
//! come first served among the sessions waiting for its capability). A worker silent for
//! `worker_timeout_s` while not busy with a delivered command is disconnected, and a command it
//! never took fails at once (`liveness.rs`). `execute` here sends one command and waits for
//! its result. The hub knows nothing of HTTP: a poll arrives as a `Responder` closure. Lock
//! order: hub state → a worker's presence → its slot → the parker.

mod executor;
mod identity;
mod lease;
mod liveness;
mod profiles;
mod registry;
mod slot;

pub use executor::WorkerExecutor;
pub use identity::Refusal;
pub use profiles::ProfileRefusal;

use crate::exec::{Answer, ExecError};
use crate::protocol::{Command, CommandResult, WorkerInfo};
use crate::util::clock;
use crate::util::secret::Secret;
use crate::wait::park::{Parker, Responder};
use crate::wait::stop::StopSignal;
use lease::LeaseRequest;
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
    /// The browser profiles it keeps, as last reported (or leased into).
    profiles: BTreeMap<String, crate::protocol::profiles::ProfileReport>,
    /// The profile the session holding the lease runs in.
    profile: Option<String>,
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

/// Who a command is for: its session, and the hosts that session's browser may reach.
#[derive(Debug, Clone, Default)]
pub struct CommandScope {
    pub session_id: String,
    pub allowed_domains: Vec<crate::protocol::domains::DomainPattern>,
    /// The browser profile the session runs in.
    pub browser_profile: Option<String>,
}

impl CommandScope {
    pub fn session(session_id: &str) -> CommandScope {
        CommandScope { session_id: session_id.to_string(), allowed_domains: Vec::new(), browser_profile: None }
    }
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
        scope: &CommandScope,
        action: &str,
        params: Value,
        timeout: Duration,
        stop: &StopSignal,
    ) -> Result<Answer, ExecError> {
        let id = format!("cmd_{}_{:04}", self.boot, self.next_command.fetch_add(1, Ordering::Relaxed) + 1);
        let cmd = Command {
            id: id.clone(),
            action: action.to_string(),
            params,
            session_id: scope.session_id.clone(),
            timeout_s: timeout.as_secs(),
            allowed_domains: scope.allowed_domains.clone(),
            browser_profile: scope.browser_profile.clone(),
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
        if let Some(reported) = &result.profiles {
            profiles::take_report(&mut worker.presence(), reported);
        }
        let data = result.data.as_deref().map(Answer::from_raw).transpose();
        let outcome = match data {
            Err(e) => Err(ExecError::Failed(format!("the worker's result is not JSON: {e}"))),
            Ok(data) => Self::outcome(result.success, data, result.error),
        };
        worker.slot.fill(&result.id, outcome)
    }

    /// A result's data and words as the session gets them: the answer, a typed refusal
    /// (`{"refused": CODE, …}` with a failure), or the failure's words.
    fn outcome(success: bool, data: Option<Answer>, error: Option<String>) -> Result<Answer, ExecError> {
        let refused = !success && data.as_ref().is_some_and(|d| d.tree["refused"].is_string());
        if success {
            Ok(data.unwrap_or_else(|| Answer::from(Value::Null)))
        } else if let Some(refusal) = data.filter(|_| refused) {
            let message = error.unwrap_or_else(|| "refused".into());
            Err(ExecError::Refused { message, refusal: refusal.into_tree() })
        } else {
            Err(ExecError::Failed(
                error
                    .filter(|e| !e.trim().is_empty())
                    .unwrap_or_else(|| "the worker reported a failure without a message".into()),
            ))
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

#[cfg(test)]
mod tests {
    //! The hub as the routes and session threads use it, without a server: a poll is a
    //! `Responder` that hands its body to the test. Helpers here serve the tests of
    //! `registry.rs`, `lease.rs` and `liveness.rs` too.

    use super::*;
    use crate::protocol::RegisterRequest;
    use crossbeam_channel::Receiver;
    use serde_json::json;

    pub(super) fn settings() -> HubSettings {
        HubSettings {
            long_poll: Duration::from_secs(20),
            worker_timeout: Duration::from_secs(30),
            legacy_workers: false,
            max_workers: 0,
        }
    }

    pub(super) fn hub_with(settings: HubSettings) -> Arc<WorkerHub> {
        Arc::new(WorkerHub::new(settings, Arc::new(Parker::default())))
    }

    pub(super) fn hub() -> Arc<WorkerHub> {
        hub_with(settings())
    }

    /// A registration as a secret-holding worker sends it.
    pub(super) fn request(hostname: &str, caps: &[&str]) -> RegisterRequest {
        serde_json::from_value(json!({"hostname": hostname, "capabilities": caps, "use_secret": true})).unwrap()
    }

    pub(super) fn register(hub: &WorkerHub, hostname: &str, caps: &[&str]) -> (Arc<Worker>, String) {
        hub.register(&request(hostname, caps), None, None).unwrap()
    }

    /// A poll's responder, and where its answer arrives.
    pub(super) fn responder() -> (Responder, Receiver<Vec<u8>>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (Box::new(move |_, body| drop(tx.send(body))), rx)
    }

    /// Run `execute` on a thread of its own (it blocks until the worker answers).
    pub(super) fn execute_async(
        hub: &Arc<WorkerHub>,
        w: &Arc<Worker>,
        timeout: Duration,
        stop: &Arc<StopSignal>,
    ) -> std::thread::JoinHandle<Result<Answer, ExecError>> {
        let (hub, w, stop) = (Arc::clone(hub), Arc::clone(w), Arc::clone(stop));
        std::thread::spawn(move || {
            hub.execute(&w, &CommandScope::session("s1"), "run_command", json!({"command": "ls"}), timeout, &stop)
        })
    }

    /// Poll as the worker until a command comes; the command.
    pub(super) fn take_command(hub: &WorkerHub, w: &Worker) -> Command {
        for _ in 0..500 {
            let (respond, got) = responder();
            hub.poll(w, respond);
            // A parked poll is answered when a command is queued, or by the next poll.
            if let Ok(body) = got.recv_timeout(Duration::from_millis(10)) {
                if let Ok(cmd) = serde_json::from_slice::<Command>(&body) {
                    return cmd;
                }
            }
        }
        panic!("no command came");
    }

    fn result(json: Value) -> CommandResult {
        // As the worker's body arrives: text (`data` is kept raw, which only text can give).
        serde_json::from_str(&json.to_string()).unwrap()
    }

    #[test]
    fn a_command_reaches_the_poll_and_its_result_the_session() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(5), &stop);
        let cmd = take_command(&hub, &w);
        assert_eq!((cmd.action.as_str(), cmd.session_id.as_str(), cmd.timeout_s), ("run_command", "s1", 5));
        assert_eq!(cmd.params, json!({"command": "ls"}));
        assert!(!hub.post_result(&w, result(json!({"id": "cmd_other", "success": true}))), "a stray id");
        assert!(hub.post_result(&w, result(json!({"id": cmd.id, "success": true, "data": {"out": "x"}}))));
        assert_eq!(running.join().unwrap().map(|a| a.tree).map_err(|e| e.to_string()), Ok(json!({"out": "x"})));
        assert!(!hub.post_result(&w, result(json!({"id": cmd.id, "success": true}))), "a late result");
    }

    #[test]
    fn a_failure_without_words_is_still_said() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(5), &stop);
        let cmd = take_command(&hub, &w);
        assert!(hub.post_result(&w, result(json!({"id": cmd.id, "success": false, "error": "  "}))));
        let err = running.join().unwrap().unwrap_err();
        assert!(
            matches!(&err, ExecError::Failed(m) if m == "the worker reported a failure without a message"),
            "{err:?}"
        );
    }

    #[test]
    fn command_ids_are_unique_and_carry_the_boot() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let mut ids = Vec::new();
        for _ in 0..2 {
            let running = execute_async(&hub, &w, Duration::from_secs(5), &stop);
            let cmd = take_command(&hub, &w);
            assert!(hub.post_result(&w, result(json!({"id": cmd.id, "success": true}))));
            running.join().unwrap().unwrap();
            ids.push(cmd.id);
        }
        assert_ne!(ids[0], ids[1]);
        assert!(ids.iter().all(|id| id.starts_with(&format!("cmd_{}_", hub.boot))), "{ids:?}");
    }

    #[test]
    fn a_disconnected_worker_is_sent_nothing() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        w.presence().connected = false;
        let stop = StopSignal::new(false);
        let err = hub
            .execute(&w, &CommandScope::session("s1"), "run_command", Value::Null, Duration::from_secs(5), &stop)
            .unwrap_err();
        assert!(matches!(&err, ExecError::Disconnected(m) if m.contains("was not sent")), "{err:?}");
        assert_eq!(hub.connected_count(), 0);
    }

    #[test]
    fn a_stop_or_the_shutdown_ends_a_command_wait() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(30), &stop);
        take_command(&hub, &w);
        let t = Instant::now();
        stop.raise();
        assert!(matches!(running.join().unwrap(), Err(ExecError::Stopped)));
        assert!(t.elapsed() < Duration::from_secs(2), "the stop wakes the wait: {:?}", t.elapsed());

        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(30), &stop);
        take_command(&hub, &w);
        hub.shutdown();
        assert!(matches!(running.join().unwrap(), Err(ExecError::Stopped)));
        let (respond, got) = responder();
        hub.poll(&w, respond);
        assert_eq!(got.try_recv().unwrap(), slot::WAIT_BODY, "a poll after the shutdown is told to wait at once");
    }

    #[test]
    fn the_worker_list_says_who_serves_what() {
        let hub = hub();
        let (a, _) = register(&hub, "a", &["browser"]);
        let (b, _) = register(&hub, "b", &["shell", "browser"]);
        let stop = StopSignal::new(false);
        let leased = hub.lease("s1", "shell", None, &stop, None).unwrap();
        assert_eq!(leased.id, b.id);
        let list = hub.workers();
        let info = |id: &str| list.iter().find(|i| i.worker_id == id).unwrap();
        assert_eq!((info(&a.id).session_id.as_deref(), info(&b.id).session_id.as_deref()), (None, Some("s1")));
        assert_eq!(info(&b.id).capabilities, ["browser", "shell"]);
        assert_eq!(hub.connected_count(), 2);
    }
}
