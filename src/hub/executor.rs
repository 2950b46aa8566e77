//! The leased worker as the session's `Executor`: each target tool becomes one command in the
//! worker's slot, and the session thread waits for its result (bounded by the tool's timeout,
//! ended at once by the session's stop).

use super::{Worker, WorkerHub};
use crate::exec::{ExecError, Executor};
use crate::wait::stop::StopSignal;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub struct WorkerExecutor {
    hub: Arc<WorkerHub>,
    worker: Arc<Worker>,
    session_id: String,
    stop: Arc<StopSignal>,
}

impl WorkerExecutor {
    pub fn new(hub: Arc<WorkerHub>, worker: Arc<Worker>, session_id: String, stop: Arc<StopSignal>) -> Self {
        WorkerExecutor { hub, worker, session_id, stop }
    }
}

impl Executor for WorkerExecutor {
    fn describe(&self) -> String {
        format!("worker {} ({})", self.worker.hostname, self.worker.id)
    }

    fn run(&self, action: &str, params: Value, timeout: Duration) -> Result<Value, ExecError> {
        if self.stop.is_raised() {
            return Err(ExecError::Stopped);
        }
        self.hub.execute(&self.worker, &self.session_id, action, params, timeout, &self.stop)
    }
}
