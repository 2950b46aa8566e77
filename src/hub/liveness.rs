//! Liveness: a worker is connected while it polls, posts or sends heartbeats. One silent for
//! `worker_timeout_s` is marked disconnected (a command it never took fails at once); a busy
//! worker that sends heartbeats is held to the same limit ("worker lost"), one that never did
//! (the seed's) gets its command's whole timeout. A disconnected worker that is heard from again
//! is connected again, and the sessions waiting for a lease are told.

use super::{Worker, WorkerHub};
use std::sync::Arc;
use std::time::Duration;

impl WorkerHub {
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
    pub(super) fn reconnected(&self, worker: &Worker) {
        log::info!("worker {} ({}) is connected again", worker.id, worker.hostname);
        let _state = self.lock();
        self.lease_changed.notify_all();
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
}

#[cfg(test)]
mod tests {
    use super::super::HubSettings;
    use super::super::tests::{execute_async, hub_with, register, responder, settings, take_command};
    use super::*;
    use crate::exec::ExecError;
    use crate::wait::stop::StopSignal;

    const TIMEOUT: Duration = Duration::from_millis(150);

    fn quick() -> HubSettings {
        HubSettings { worker_timeout: TIMEOUT, ..settings() }
    }

    fn silent() {
        std::thread::sleep(TIMEOUT * 2);
    }

    #[test]
    fn a_silent_worker_is_disconnected_and_comes_back_when_heard() {
        let hub = hub_with(quick());
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        hub.check_liveness();
        assert!(w.is_connected(), "heard from just now");
        silent();
        hub.check_liveness();
        assert!(!w.is_connected());
        assert_eq!(hub.availability("shell"), "no worker is connected");
        hub.touch(&w);
        assert!(w.is_connected());
    }

    #[test]
    fn a_parked_poll_is_alive() {
        let hub = hub_with(quick());
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let (respond, _answer) = responder();
        hub.poll(&w, respond);
        silent();
        hub.check_liveness();
        assert!(w.is_connected(), "waiting in its long poll is not silence");
    }

    #[test]
    fn a_command_never_taken_fails_when_its_worker_goes_silent() {
        let hub = hub_with(quick());
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(30), &stop);
        silent();
        hub.check_liveness();
        let err = running.join().unwrap().unwrap_err();
        assert!(matches!(&err, ExecError::Disconnected(m) if m.contains("before it took the command")), "{err:?}");
    }

    #[test]
    fn a_busy_worker_without_heartbeats_gets_its_commands_timeout() {
        let hub = hub_with(quick());
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        let stop = Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(5), &stop);
        take_command(&hub, &w);
        silent();
        hub.check_liveness();
        assert!(w.is_connected(), "silent while it works, within the command's 5 s");
        // Once it has sent a heartbeat, a busy silence counts like any other.
        hub.heartbeat(&w);
        silent();
        hub.check_liveness();
        assert!(!w.is_connected());
        let err = running.join().unwrap().unwrap_err();
        assert!(matches!(&err, ExecError::Disconnected(m) if m.starts_with("worker lost")), "{err:?}");
    }

    #[test]
    fn a_heartbeat_brings_a_worker_back() {
        let hub = hub_with(quick());
        let (w, _) = register(&hub, "pc-01", &["shell"]);
        silent();
        hub.check_liveness();
        hub.heartbeat(&w);
        assert!(w.is_connected());
    }

    #[test]
    fn heartbeats_come_three_times_per_timeout_at_most_once_a_second() {
        assert_eq!(hub_with(settings()).heartbeat_interval(), Duration::from_secs(10));
        assert_eq!(hub_with(quick()).heartbeat_interval(), Duration::from_secs(1));
    }
}
