//! Leases: a session waits for a worker with its capability (or the one it asked for), first
//! come first served, until one is free, its deadline passes or its stop is raised; the worker
//! then serves that session alone until it is released. A session in a browser profile waits
//! for the worker that keeps it (so one session at a time uses a profile); a profile no worker
//! keeps yet goes to one worker only, which keeps it from then on.

use super::{HubState, LeaseEnd, Worker, WorkerHub, identity};
use crate::wait::stop::StopSignal;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A session waiting for a worker.
pub(super) struct LeaseRequest {
    session_id: String,
    capability: String,
    preferred: Option<String>,
    /// The browser profile it runs in: only a worker that keeps it (any, if none does yet).
    pub(super) profile: Option<String>,
}

impl WorkerHub {
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
        self.lease_in_profile(session_id, capability, preferred, None, stop, deadline)
    }

    /// `lease`, for a session that runs in the browser profile `profile`: it waits for the
    /// worker that keeps it, which one session uses at a time.
    pub fn lease_in_profile(
        self: &Arc<Self>,
        session_id: &str,
        capability: &str,
        preferred: Option<&str>,
        profile: Option<&str>,
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
            profile: profile.map(str::to_string),
        });
        loop {
            let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            if stop.is_raised() || self.closing() || timed_out {
                state.waiting.retain(|r| r.session_id != session_id);
                return Err(if timed_out { LeaseEnd::TimedOut } else { LeaseEnd::Stopped });
            }
            if let Some(worker) = match_waiting(&state, session_id) {
                let mut presence = worker.presence();
                presence.session = Some(session_id.to_string());
                presence.profile = profile.map(str::to_string);
                if let Some(name) = profile {
                    presence.profiles.entry(name.to_string()).or_insert_with(|| super::profiles::fresh(name));
                }
                drop(presence);
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
            presence.profile = None;
        }
        drop(presence);
        self.lease_changed.notify_all();
    }

    /// The session a worker serves now (uploads may only go there).
    pub fn serving(&self, worker: &Worker) -> Option<String> {
        worker.presence().session.clone()
    }
}

/// First-come matching of waiting sessions to free workers; the worker for `session_id`, if
/// its turn has come.
fn match_waiting(state: &HubState, session_id: &str) -> Option<Arc<Worker>> {
    let mut taken: Vec<&str> = Vec::new();
    let mut profiles_taken: Vec<&str> = Vec::new();
    for req in &state.waiting {
        let profile = req.profile.as_deref();
        // A profile no worker keeps yet goes to the first worker matched for it, not to two.
        if profile.is_some_and(|p| profiles_taken.contains(&p)) {
            continue;
        }
        let kept = profile.is_some_and(|p| state.workers.values().any(|w| w.presence().profiles.contains_key(p)));
        let candidate = state.workers.values().find(|w| {
            if taken.contains(&w.id.as_str()) {
                return false;
            }
            if kept && !profile.is_some_and(|p| w.presence().profiles.contains_key(p)) {
                return false;
            }
            if req.preferred.as_ref().is_some_and(|p| &w.id != p && !identity::same_name(&w.hostname, p)) {
                return false;
            }
            let p = w.presence();
            p.connected && p.session.is_none() && p.capabilities.iter().any(|c| c == &req.capability)
        });
        if let Some(p) = profile {
            profiles_taken.push(p);
        }
        if let Some(w) = candidate {
            if req.session_id == session_id {
                return Some(Arc::clone(w));
            }
            taken.push(&w.id);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::tests::{hub, register};
    use super::*;
    use crate::hub::ProfileRefusal;

    fn no_stop() -> StopSignal {
        StopSignal::new(false)
    }

    /// Lease on a thread of its own; returns once the hub has the request in its queue.
    fn lease_async(
        hub: &Arc<WorkerHub>,
        session: &str,
        capability: &str,
        preferred: Option<&str>,
        stop: &Arc<StopSignal>,
    ) -> std::thread::JoinHandle<Result<Arc<Worker>, LeaseEnd>> {
        let waiting = hub.lock().waiting.len();
        let (h, s, c, p, stop) = (
            Arc::clone(hub),
            session.to_string(),
            capability.to_string(),
            preferred.map(str::to_string),
            Arc::clone(stop),
        );
        let handle = std::thread::spawn(move || h.lease(&s, &c, p.as_deref(), &stop, None));
        while hub.lock().waiting.len() == waiting && !handle.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        handle
    }

    #[test]
    fn first_come_first_served() {
        let hub = hub();
        let stop = Arc::new(no_stop());
        let first = lease_async(&hub, "s1", "browser", None, &stop);
        let second = lease_async(&hub, "s2", "browser", None, &stop);
        let (w, _) = register(&hub, "pc-01", &["browser"]);
        let got = first.join().unwrap().unwrap();
        assert_eq!(got.id, w.id);
        assert_eq!(hub.serving(&w).as_deref(), Some("s1"));
        assert!(!second.is_finished(), "the second waits while the only worker serves the first");
        hub.release(&w, "s2");
        assert_eq!(hub.serving(&w).as_deref(), Some("s1"), "only the holder releases");
        hub.release(&w, "s1");
        assert_eq!(second.join().unwrap().unwrap().id, w.id);
        assert_eq!(hub.serving(&w).as_deref(), Some("s2"));
        assert!(hub.lock().waiting.is_empty());
    }

    #[test]
    fn a_profile_goes_to_the_worker_that_keeps_it_one_session_at_a_time() {
        let hub = hub();
        let (a, _) = register(&hub, "pc-a", &["browser"]);
        let (b, _) = register(&hub, "pc-b", &["browser"]);
        let soon = || Some(Instant::now() + Duration::from_millis(200));
        let first = hub.lease_in_profile("s1", "browser", None, Some("shop"), &no_stop(), None).unwrap();
        let (keeper, other) = if first.id == a.id { (&a, &b) } else { (&b, &a) };
        let second = hub.lease_in_profile("s2", "browser", None, Some("shop"), &no_stop(), soon());
        assert_eq!(second.err(), Some(LeaseEnd::TimedOut), "the other worker is free, but does not keep it");
        assert_eq!(hub.profiles()[0].in_use.as_deref(), Some("s1"));
        assert_eq!(hub.lease("s3", "browser", None, &no_stop(), None).unwrap().id, other.id);
        hub.release(&first, "s1");
        let again = hub.lease_in_profile("s4", "browser", None, Some("shop"), &no_stop(), None).unwrap();
        assert_eq!(again.id, keeper.id);
        assert_eq!(
            hub.delete_profile("shop"),
            Err(ProfileRefusal::InUse("session s4 runs in browser profile \"shop\" now".into()))
        );
    }

    #[test]
    fn a_new_profile_goes_to_one_worker_only() {
        let hub = hub();
        let stop = Arc::new(no_stop());
        let spawn = |id: &'static str| {
            let (h, stop) = (Arc::clone(&hub), Arc::clone(&stop));
            let waiting = hub.lock().waiting.len();
            let t = std::thread::spawn(move || h.lease_in_profile(id, "browser", None, Some("new"), &stop, None));
            while hub.lock().waiting.len() == waiting {
                std::thread::sleep(Duration::from_millis(1));
            }
            t
        };
        let (one, two) = (spawn("n1"), spawn("n2"));
        register(&hub, "pc-a", &["browser"]);
        register(&hub, "pc-b", &["browser"]);
        let got = one.join().unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!two.is_finished(), "the second waits for the worker the first made the profile on");
        hub.release(&got, "n1");
        assert_eq!(two.join().unwrap().unwrap().id, got.id);
    }

    #[test]
    fn only_a_worker_with_the_capability_is_leased() {
        let hub = hub();
        register(&hub, "pc-01", &["shell"]);
        let soon = Some(Instant::now() + Duration::from_millis(30));
        assert_eq!(hub.lease("s1", "browser", None, &no_stop(), soon).err(), Some(LeaseEnd::TimedOut));
        assert_eq!(hub.availability("browser"), "none of the 1 connected worker(s) has the browser capability");
        let (w, _) = register(&hub, "pc-02", &["browser", "shell"]);
        assert_eq!(hub.lease("s1", "browser", None, &no_stop(), None).unwrap().id, w.id);
        assert_eq!(hub.availability("browser"), "all 1 worker(s) with the browser capability are busy");
        assert_eq!(hub.availability("shell"), "2 worker(s) with the shell capability, 1 free");
    }

    #[test]
    fn a_requested_worker_by_name_or_id() {
        let hub = hub();
        let (a, _) = register(&hub, "alpha", &["browser"]);
        let (b, _) = register(&hub, "beta", &["browser"]);
        assert_eq!(hub.lease("s1", "browser", Some("BETA"), &no_stop(), None).unwrap().id, b.id);
        assert_eq!(hub.lease("s2", "browser", Some(a.id.as_str()), &no_stop(), None).unwrap().id, a.id);
        let soon = Some(Instant::now() + Duration::from_millis(30));
        assert_eq!(hub.lease("s3", "browser", Some("gamma"), &no_stop(), soon).err(), Some(LeaseEnd::TimedOut));
    }

    #[test]
    fn a_session_waiting_for_a_busy_worker_does_not_hold_back_the_next() {
        let hub = hub();
        let (a, _) = register(&hub, "alpha", &["browser"]);
        let stop = Arc::new(no_stop());
        assert_eq!(hub.lease("s0", "browser", Some("alpha"), &stop, None).unwrap().id, a.id);
        let wants_alpha = lease_async(&hub, "s1", "browser", Some("alpha"), &stop);
        let (b, _) = register(&hub, "beta", &["browser"]);
        assert_eq!(hub.lease("s2", "browser", None, &stop, None).unwrap().id, b.id, "s1 waits for alpha only");
        hub.release(&a, "s0");
        assert_eq!(wants_alpha.join().unwrap().unwrap().id, a.id);
    }

    #[test]
    fn a_disconnected_worker_is_not_leased_until_it_is_back() {
        let hub = hub();
        let (w, _) = register(&hub, "pc-01", &["browser"]);
        w.presence().connected = false;
        let stop = Arc::new(no_stop());
        let waiting = lease_async(&hub, "s1", "browser", None, &stop);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiting.is_finished());
        hub.touch(&w);
        assert_eq!(waiting.join().unwrap().unwrap().id, w.id);
    }

    #[test]
    fn a_stop_ends_a_lease_wait_at_once() {
        let hub = hub();
        let stop = Arc::new(no_stop());
        let waiting = lease_async(&hub, "s1", "browser", None, &stop);
        let t = Instant::now();
        stop.raise();
        assert_eq!(waiting.join().unwrap().err(), Some(LeaseEnd::Stopped));
        // Woken by the stop, not by the once-a-second re-check.
        assert!(t.elapsed() < Duration::from_millis(900), "{:?}", t.elapsed());
        assert!(hub.lock().waiting.is_empty(), "a stopped wait leaves the queue");
        assert_eq!(hub.lease("s2", "browser", None, &stop, None).err(), Some(LeaseEnd::Stopped), "raised before");
    }

    #[test]
    fn a_deadline_ends_a_lease_wait() {
        let hub = hub();
        let t = Instant::now();
        let deadline = Some(t + Duration::from_millis(50));
        assert_eq!(hub.lease("s1", "browser", None, &no_stop(), deadline).err(), Some(LeaseEnd::TimedOut));
        assert!(t.elapsed() >= Duration::from_millis(50) && t.elapsed() < Duration::from_millis(900));
        assert!(hub.lock().waiting.is_empty());
    }

    #[test]
    fn the_shutdown_ends_every_lease_wait() {
        let hub = hub();
        let stop = Arc::new(no_stop());
        let waiting = lease_async(&hub, "s1", "browser", None, &stop);
        hub.shutdown();
        assert_eq!(waiting.join().unwrap().err(), Some(LeaseEnd::Stopped));
    }
}
