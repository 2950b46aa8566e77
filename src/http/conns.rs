//! The open connections of a port, shared by the front (`front.rs`, which admits and evicts
//! them) and the relay (`relay.rs`, which serves one): the `Limits` on each, the `Registry` of
//! which have a request in flight, and a connection's `Slot` in it. A connection with no
//! request in flight is evictable; `Slot::set_busy` marks the one being served.

use super::tls::TlsConfig;
use crate::util::secret::Secret;
use std::collections::HashMap;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// What bounds each connection.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Open connections per port at most.
    pub max_connections: usize,
    /// From a head's first byte (from the accept, for the first) until its blank line.
    pub header_timeout: Duration,
    /// Each read of a request body.
    pub read_timeout: Duration,
    /// Each write to the client (about twice that for a whole write), a third of the wait
    /// for tiny_http's answer (parked polls included), and the silence allowed between two
    /// requests on one connection.
    pub idle_timeout: Duration,
}

/// The open connections of a port, and which of them have no request in flight.
pub(super) struct Registry {
    open: Mutex<HashMap<u64, Entry>>,
    next_id: AtomicU64,
    /// The port's TLS, if it speaks HTTPS.
    pub(super) tls: Option<TlsConfig>,
    /// The port's bearer token, if it has one: checked before a `100 Continue`.
    pub(super) token: Option<Secret>,
}

struct Entry {
    fd: RawFd,
    /// Since when the connection has had no request in flight; `None` while one is.
    idle_since: Option<Instant>,
}

impl Registry {
    pub(super) fn new(tls: Option<TlsConfig>, token: Option<Secret>) -> Registry {
        Registry { open: Mutex::new(HashMap::new()), next_id: AtomicU64::new(1), tls, token }
    }

    pub(super) fn admit(&self, client: &TcpStream, cap: usize) -> Option<u64> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= cap {
            let oldest = open.iter().filter_map(|(id, e)| Some((*id, e.idle_since?))).min_by_key(|(_, t)| *t)?;
            if let Some(e) = open.remove(&oldest.0) {
                // SAFETY: the entry is removed before its thread closes the descriptor (see
                // `admit`), and we hold the lock, so the fd is still that connection's.
                unsafe { libc::shutdown(e.fd, libc::SHUT_RDWR) };
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        open.insert(id, Entry { fd: client.as_raw_fd(), idle_since: Some(Instant::now()) });
        Some(id)
    }

    pub(super) fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }
}

/// A connection's place in the registry, held by its relay thread.
pub struct Slot {
    pub(super) registry: Arc<Registry>,
    pub(super) id: u64,
    pub accepted: Instant,
}

impl Slot {
    pub fn tls(&self) -> Option<&TlsConfig> {
        self.registry.tls.as_ref()
    }

    pub fn token(&self) -> Option<&Secret> {
        self.registry.token.as_ref()
    }

    /// Mark a request in flight (not evictable) or finished.
    pub fn set_busy(&self, busy: bool) {
        let mut open = self.registry.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = open.get_mut(&self.id) {
            match (busy, e.idle_since) {
                (true, _) => e.idle_since = None,
                (false, None) => e.idle_since = Some(Instant::now()),
                (false, Some(_)) => {}
            }
        }
    }
}
