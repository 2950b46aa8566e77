//! The leased worker as the session's `Executor`: each target tool becomes one command in the
//! worker's slot, and the session thread waits for its result (bounded by the tool's timeout,
//! ended at once by the session's stop).
//!
//! A worker lost mid-session (killed, silent past `worker_timeout_s`) is released and the
//! session leases another capable one (the one it asked for by name, if it did) that is free
//! now; the failed command is not re-sent (it may have acted), the model is told where the
//! session went and that the target's state is new. With none free, the session holds no
//! worker and the next tool call leases one first (the same one, if it came back).

use super::{CommandScope, Worker, WorkerHub};
use crate::exec::{Answer, ExecError, Executor};
use crate::wait::stop::StopSignal;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a session looks for another worker after losing its own: only one free now, so
/// the model hears at once.
const MOVE_WAIT: Duration = Duration::from_millis(100);

/// Told the new worker when the session moves (the session's record and log).
pub type OnMove = Box<dyn Fn(&Worker) + Send + Sync>;

pub struct WorkerExecutor {
    hub: Arc<WorkerHub>,
    /// The worker leased now; `None` after one was lost and no other was free.
    worker: Mutex<Option<Arc<Worker>>>,
    scope: CommandScope,
    capability: String,
    /// The worker the session asked for (id or hostname): a move goes only there.
    preferred: Option<String>,
    stop: Arc<StopSignal>,
    on_move: OnMove,
}

impl WorkerExecutor {
    pub fn new(
        hub: Arc<WorkerHub>,
        worker: Arc<Worker>,
        session_id: String,
        capability: &str,
        preferred: Option<String>,
        stop: Arc<StopSignal>,
    ) -> Self {
        WorkerExecutor {
            hub,
            worker: Mutex::new(Some(worker)),
            scope: CommandScope::session(&session_id),
            capability: capability.to_string(),
            preferred,
            stop,
            on_move: Box::new(|_| {}),
        }
    }

    /// The hosts the session's browser may reach, sent with every command.
    pub fn allowing(mut self, allowed: Vec<crate::protocol::domains::DomainPattern>) -> Self {
        self.scope.allowed_domains = allowed;
        self
    }

    /// The browser profile the session runs in: in every command, and a move goes only to the
    /// worker that keeps it.
    pub fn in_profile(mut self, profile: Option<String>) -> Self {
        self.scope.browser_profile = profile;
        self
    }

    pub fn on_move(mut self, on_move: OnMove) -> Self {
        self.on_move = on_move;
        self
    }

    fn current(&self) -> MutexGuard<'_, Option<Arc<Worker>>> {
        self.worker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Give back the worker held now (the session has ended).
    pub fn release(&self) {
        if let Some(worker) = self.current().take() {
            self.hub.release(&worker, &self.scope.session_id);
        }
    }

    /// A capable worker free now, leased and held (the session had none).
    fn lease_again(&self) -> Option<Arc<Worker>> {
        let deadline = Instant::now() + MOVE_WAIT;
        let preferred = self.preferred.as_deref();
        let (id, profile) = (&self.scope.session_id, self.scope.browser_profile.as_deref());
        let next =
            self.hub.lease_in_profile(id, &self.capability, preferred, profile, &self.stop, Some(deadline)).ok()?;
        (self.on_move)(&next);
        *self.current() = Some(Arc::clone(&next));
        Some(next)
    }

    /// The worker is gone: release it, lease another if one is free now; what to tell the model.
    fn move_on(&self, lost: &Arc<Worker>, why: &str) -> String {
        self.hub.release(lost, &self.scope.session_id);
        *self.current() = None;
        match self.lease_again() {
            Some(next) => format!(
                "{why}. The session moved to worker {}: it starts fresh (no open page, a new shell), \
                 so run the step again if it is still needed.",
                next.hostname
            ),
            None => format!(
                "{why}. No other worker that can run {} sessions is free now ({}); the next tool call tries again.",
                self.capability,
                self.hub.availability(&self.capability)
            ),
        }
    }
}

impl Executor for WorkerExecutor {
    fn describe(&self) -> String {
        match self.current().as_ref() {
            Some(w) => format!("worker {} ({})", w.hostname, w.id),
            None => "no worker".to_string(),
        }
    }

    fn run(&self, action: &str, params: Value, timeout: Duration) -> Result<Answer, ExecError> {
        if self.stop.is_raised() {
            return Err(ExecError::Stopped);
        }
        let held = self.current().clone();
        let Some(worker) = held.or_else(|| self.lease_again()) else {
            return Err(ExecError::Disconnected(format!(
                "{action} was not sent: the session's worker disconnected and no other that can run {} sessions is free ({})",
                self.capability,
                self.hub.availability(&self.capability)
            )));
        };
        match self.hub.execute(&worker, &self.scope, action, params, timeout, &self.stop) {
            // Only a worker that is gone: one that restarted or re-polled is still this session's.
            Err(ExecError::Disconnected(why)) if !self.stop.is_raised() && !worker.is_connected() => {
                Err(ExecError::Disconnected(self.move_on(&worker, &why)))
            }
            other => other,
        }
    }
}
