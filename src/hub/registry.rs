//! Who the workers are: `POST /register` (a new worker, or a known hostname coming back under
//! its old id), and which worker a request speaks as (`identify`: by id and secret, or a bare
//! legacy request by address). The rules themselves (ids, secrets, names, who may take a
//! hostname over) are `identity.rs`'s; this file applies them to the registry under the hub's
//! lock.

use super::slot::{self, CommandSlot};
use super::{Presence, Refusal, Worker, WorkerHub, identity};
use crate::protocol::RegisterRequest;
use crate::util::clock;
use crate::util::secret::Secret;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl WorkerHub {
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
                        profiles: Default::default(),
                        profile: None,
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
        if let Some(reported) = &req.profiles {
            super::profiles::take_report(&mut worker.presence(), reported);
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
}

#[cfg(test)]
mod tests {
    use super::super::HubSettings;
    use super::super::tests::{execute_async, hub, hub_with, register, request, settings, take_command};
    use super::*;
    use crate::exec::ExecError;
    use crate::wait::stop::StopSignal;
    use std::time::Duration;

    fn bare(hostname: &str) -> RegisterRequest {
        serde_json::from_value(serde_json::json!({"hostname": hostname, "has_playwright": true})).unwrap()
    }

    fn legacy() -> HubSettings {
        HubSettings { legacy_workers: true, ..settings() }
    }

    fn addr(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
    }

    #[test]
    fn a_worker_speaks_by_its_id_and_secret() {
        let hub = hub();
        let (w, secret) = register(&hub, "pc-01", &["browser"]);
        assert!(w.id.starts_with("wkr_") && secret.len() == 32);
        assert_eq!(hub.identify(Some(&w.id), Some(&secret), None).unwrap().id, w.id);
        assert!(matches!(hub.identify(Some(&w.id), Some("guess"), None), Err(Refusal::WrongSecret(_))));
        assert!(matches!(hub.identify(Some(&w.id), None, None), Err(Refusal::WrongSecret(_))));
        assert!(matches!(hub.identify(Some("wkr_0"), Some(&secret), None), Err(Refusal::Unknown(_))));
        assert!(matches!(hub.identify(None, None, None), Err(Refusal::BareRefused(_))), "legacy_workers is off");
    }

    #[test]
    fn a_hostname_held_by_a_connected_worker_needs_its_secret() {
        let hub = hub();
        let (w, secret) = register(&hub, "pc-01", &["browser"]);
        let taken = hub.register(&request("PC-01 ", &["browser"]), None, None).err();
        assert!(matches!(taken, Some(Refusal::HostnameTaken(_))), "{taken:?}");
        let (again, new_secret) = hub.register(&request("pc-01", &["shell"]), None, Some(&secret)).unwrap();
        assert_eq!(again.id, w.id, "the same worker resumes");
        assert_eq!(again.capabilities(), ["shell"]);
        assert!(hub.identify(Some(&w.id), Some(&new_secret), None).is_ok());
        assert!(hub.identify(Some(&w.id), Some(&secret), None).is_err(), "the old secret is spent");
        // Gone and serving no session: the name is free again.
        w.presence().connected = false;
        let (taken_over, _) = hub.register(&request("pc-01", &["shell"]), None, None).unwrap();
        assert_eq!(taken_over.id, w.id);
        assert_eq!(hub.workers().len(), 1);
    }

    #[test]
    fn registering_again_fails_the_command_it_had_taken() {
        let hub = hub();
        let (w, secret) = register(&hub, "pc-01", &["shell"]);
        let stop = std::sync::Arc::new(StopSignal::new(false));
        let running = execute_async(&hub, &w, Duration::from_secs(30), &stop);
        take_command(&hub, &w);
        hub.register(&request("pc-01", &["shell"]), None, Some(&secret)).unwrap();
        let err = running.join().unwrap().unwrap_err();
        assert!(matches!(&err, ExecError::Disconnected(m) if m.contains("restarted")), "{err:?}");
    }

    #[test]
    fn bare_requests_map_to_bare_workers_only() {
        let hub = hub_with(legacy());
        let (a, _) = hub.register(&bare("a"), addr(1), None).unwrap();
        assert_eq!(hub.identify(None, None, addr(1)).unwrap().id, a.id);
        assert_eq!(hub.identify(None, None, addr(9)).unwrap().id, a.id, "the only worker");
        let (b, _) = hub.register(&bare("b"), addr(2), None).unwrap();
        assert_eq!(hub.identify(None, None, addr(2)).unwrap().id, b.id);
        assert!(matches!(hub.identify(None, None, addr(9)), Err(Refusal::Unknown(_))), "two: which one?");
        // A bare registration takes over a bare worker's name without a secret.
        let (again, _) = hub.register(&bare("A"), addr(3), None).unwrap();
        assert_eq!(again.id, a.id);
        assert_eq!(hub.identify(None, None, addr(3)).unwrap().id, a.id, "its address moved");
        assert!(matches!(hub.identify(None, None, addr(1)), Err(Refusal::Unknown(_))), "nor from where it was");

        let hub = hub_with(legacy());
        register(&hub, "holder", &["shell"]);
        assert!(
            matches!(hub.identify(None, None, addr(1)), Err(Refusal::Unknown(_))),
            "never to a worker holding a secret"
        );
    }

    #[test]
    fn at_most_max_workers() {
        let hub = hub_with(HubSettings { max_workers: 1, ..settings() });
        let (w, secret) = register(&hub, "a", &["shell"]);
        assert!(matches!(hub.register(&request("b", &["shell"]), None, None), Err(Refusal::Full(_))));
        assert!(hub.register(&request("a", &["shell"]), None, Some(&secret)).is_ok(), "coming back is no new one");
        assert_eq!(hub.find("A").map(|f| f.id.clone()), Some(w.id.clone()));
        assert_eq!(hub.find(&w.id).map(|f| f.hostname.clone()).as_deref(), Some("a"));
        assert!(hub.find("b").is_none());
    }
}
