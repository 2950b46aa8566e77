//! Browser profiles the workers keep (`options.browser_profile`): what each worker reported
//! (at registration, and with the results of commands that ran in one), listed for
//! `GET /profiles`, and deleted on `DELETE /profiles/NAME` by the worker that keeps it.
//!
//! The hub holds only names, sizes and times: a profile's data never leaves its worker. A
//! profile is in use while the session that runs in it holds its worker's lease; deleting one
//! then is refused. A deletion leases the idle worker for a moment (as a session would, so no
//! session's command can come between) and sends it one `delete_browser_profile` command.

use super::{CommandScope, Presence, WorkerHub};
use crate::protocol::profiles::{ProfileInfo, ProfileReport, check_profile_name};
use crate::wait::stop::StopSignal;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a deletion waits for the profile's worker to be free.
const DELETE_LEASE: Duration = Duration::from_secs(5);
/// How long the worker may take to remove the folder.
const DELETE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most profiles one worker's report is taken with.
const MAX_REPORTED: usize = 1000;

/// Why a profile could not be deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileRefusal {
    #[error("{0}")]
    BadName(String),
    #[error("{0}")]
    Unknown(String),
    #[error("{0}")]
    InUse(String),
    /// Its worker is not connected (or stayed busy).
    #[error("{0}")]
    Away(String),
    #[error("{0}")]
    Failed(String),
}

/// A profile the hub has just leased a session into, before its worker reports it.
pub(super) fn fresh(name: &str) -> ProfileReport {
    ProfileReport { name: name.to_string(), size_kb: 0, last_used: Some(crate::util::clock::now_rfc3339()) }
}

/// Take a worker's report of its profiles (valid names only), keeping the one in use.
pub(super) fn take_report(presence: &mut Presence, reported: &[ProfileReport]) {
    let in_use = presence.profile.as_ref().and_then(|p| presence.profiles.get(p).cloned());
    presence.profiles = reported
        .iter()
        .filter(|r| check_profile_name(&r.name).is_ok())
        .take(MAX_REPORTED)
        .map(|r| (r.name.clone(), r.clone()))
        .collect();
    if let Some(kept) = in_use {
        presence.profiles.entry(kept.name.clone()).or_insert(kept);
    }
}

impl WorkerHub {
    /// Every worker's profiles, by name then worker.
    pub fn profiles(&self) -> Vec<ProfileInfo> {
        let state = self.lock();
        let mut out: Vec<ProfileInfo> = Vec::new();
        for w in state.workers.values() {
            let p = w.presence();
            for r in p.profiles.values() {
                let in_use = p.session.clone().filter(|_| p.profile.as_deref() == Some(r.name.as_str()));
                out.push(ProfileInfo {
                    name: r.name.clone(),
                    worker: w.hostname.clone(),
                    worker_id: w.id.clone(),
                    connected: p.connected,
                    in_use,
                    size_kb: r.size_kb,
                    last_used: r.last_used.clone(),
                });
            }
        }
        out.sort_by(|a, b| (&a.name, &a.worker).cmp(&(&b.name, &b.worker)));
        out
    }

    /// Delete the profile `name` on every worker that keeps it.
    pub fn delete_profile(self: &Arc<Self>, name: &str) -> Result<(), ProfileRefusal> {
        check_profile_name(name).map_err(|e| ProfileRefusal::BadName(e.to_string()))?;
        let holders: Vec<_> = {
            let state = self.lock();
            state.workers.values().filter(|w| w.presence().profiles.contains_key(name)).cloned().collect()
        };
        if holders.is_empty() {
            return Err(ProfileRefusal::Unknown(format!("no worker keeps a browser profile {name:?}")));
        }
        for w in &holders {
            let p = w.presence();
            if let Some(session) = p.session.as_ref().filter(|_| p.profile.as_deref() == Some(name)) {
                return Err(ProfileRefusal::InUse(format!("session {session} runs in browser profile {name:?} now")));
            }
            if !p.connected {
                return Err(ProfileRefusal::Away(format!(
                    "worker {} keeps browser profile {name:?} and is not connected; try again when it is",
                    w.hostname
                )));
            }
        }
        for w in holders {
            let holder = format!("profile-delete:{name}");
            let stop = StopSignal::new(false);
            let deadline = Some(Instant::now() + DELETE_LEASE);
            let leased = self.lease(&holder, "browser", Some(&w.id), &stop, deadline).map_err(|_| {
                ProfileRefusal::Away(format!("worker {} stayed busy; try again when it is free", w.hostname))
            })?;
            let scope = CommandScope::session(&holder);
            let done = self.execute(&leased, &scope, DELETE_ACTION, json!({"name": name}), DELETE_TIMEOUT, &stop);
            self.release(&leased, &holder);
            done.map_err(|e| ProfileRefusal::Failed(format!("worker {} could not delete it: {e}", w.hostname)))?;
            leased.presence().profiles.remove(name);
            log::info!("browser profile {name} deleted on worker {} ({})", w.hostname, w.id);
        }
        Ok(())
    }
}

/// The worker command that removes a profile's folder.
pub const DELETE_ACTION: &str = "delete_browser_profile";
