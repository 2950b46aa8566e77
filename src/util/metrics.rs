//! The process-wide counters behind `GET /metrics`: worker commands and their round trips,
//! LLM requests / errors / retries per provider, bytes uploaded by workers.
//!
//! A small global registry so that the hub, the LLM transport and the worker routes can count
//! with one line each and without knowing about HTTP or Prometheus. Counters only ever grow
//! and are shared by every daemon in the process (tests run several; the binary runs one).
//! Everything that is state rather than an event (sessions by status, workers, tokens,
//! pending confirmations, memory) is read from its owner at scrape time instead.
//! Recording never blocks on anything slower than an atomic add or one short lock.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the command round-trip histogram: from a loopback click to a
/// long download.
pub const ROUND_TRIP_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0, 300.0];

/// Counts of one LLM provider's HTTP attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmCounts {
    /// Every attempt, retries included.
    pub requests: u64,
    /// Attempts that did not end in a 200 (an error status or no answer).
    pub errors: u64,
    /// Attempts that were retries of a failed one.
    pub retries: u64,
}

pub struct Metrics {
    commands_ok: AtomicU64,
    commands_failed: AtomicU64,
    /// Per bucket of `ROUND_TRIP_BUCKETS` (not cumulative), then the sum in microseconds.
    round_trip: [AtomicU64; ROUND_TRIP_BUCKETS.len() + 1],
    round_trip_micros: AtomicU64,
    uploads: AtomicU64,
    uploaded_bytes: AtomicU64,
    llm: Mutex<BTreeMap<String, LlmCounts>>,
}

/// A copy of the counters, for rendering.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub commands_ok: u64,
    pub commands_failed: u64,
    /// Cumulative counts per bucket bound (the last one is +Inf), as Prometheus wants them.
    pub round_trip_buckets: Vec<(f64, u64)>,
    pub round_trip_count: u64,
    pub round_trip_seconds: f64,
    pub uploads: u64,
    pub uploaded_bytes: u64,
    pub llm: BTreeMap<String, LlmCounts>,
}

static GLOBAL: Metrics = Metrics {
    commands_ok: AtomicU64::new(0),
    commands_failed: AtomicU64::new(0),
    round_trip: [const { AtomicU64::new(0) }; ROUND_TRIP_BUCKETS.len() + 1],
    round_trip_micros: AtomicU64::new(0),
    uploads: AtomicU64::new(0),
    uploaded_bytes: AtomicU64::new(0),
    llm: Mutex::new(BTreeMap::new()),
};

/// The registry.
pub fn global() -> &'static Metrics {
    &GLOBAL
}

/// `Metrics::command_done` on the registry.
pub fn command_done(took: Duration, ok: bool) {
    GLOBAL.command_done(took, ok);
}

/// `Metrics::uploaded` on the registry.
pub fn uploaded(bytes: u64) {
    GLOBAL.uploaded(bytes);
}

/// `Metrics::llm_attempt` on the registry.
pub fn llm_attempt(api_name: &str, retry: bool, ok: bool) {
    GLOBAL.llm_attempt(api_name, retry, ok);
}

impl Metrics {
    /// A worker command got its outcome (`ok`: a result rather than a failure) after `took`.
    pub fn command_done(&self, took: Duration, ok: bool) {
        let counter = if ok { &self.commands_ok } else { &self.commands_failed };
        counter.fetch_add(1, Relaxed);
        let secs = took.as_secs_f64();
        let bucket = ROUND_TRIP_BUCKETS.iter().position(|b| secs <= *b).unwrap_or(ROUND_TRIP_BUCKETS.len());
        self.round_trip[bucket].fetch_add(1, Relaxed);
        self.round_trip_micros.fetch_add(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Relaxed);
    }

    /// A worker's upload was stored.
    pub fn uploaded(&self, bytes: u64) {
        self.uploads.fetch_add(1, Relaxed);
        self.uploaded_bytes.fetch_add(bytes, Relaxed);
    }

    /// One HTTP attempt to a model API ("Anthropic API", "OpenAI-compatible API"…): whether
    /// it was a retry and whether it got a 200.
    pub fn llm_attempt(&self, api_name: &str, retry: bool, ok: bool) {
        let provider = provider_label(api_name);
        let mut llm = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        let counts = llm.entry(provider).or_default();
        counts.requests += 1;
        counts.errors += u64::from(!ok);
        counts.retries += u64::from(retry);
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut cumulative = 0;
        let round_trip_buckets: Vec<(f64, u64)> = ROUND_TRIP_BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(&self.round_trip)
            .map(|(bound, n)| {
                cumulative += n.load(Relaxed);
                (bound, cumulative)
            })
            .collect();
        Snapshot {
            commands_ok: self.commands_ok.load(Relaxed),
            commands_failed: self.commands_failed.load(Relaxed),
            round_trip_count: cumulative,
            round_trip_seconds: self.round_trip_micros.load(Relaxed) as f64 / 1e6,
            round_trip_buckets,
            uploads: self.uploads.load(Relaxed),
            uploaded_bytes: self.uploaded_bytes.load(Relaxed),
            llm: self.llm.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

/// "OpenAI-compatible API" → "openai": the wire format's name, as the config spells it.
fn provider_label(api_name: &str) -> String {
    let first = api_name.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or("");
    if first.is_empty() { "unknown".to_string() } else { first.to_ascii_lowercase() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_providers_are_named_as_in_the_config() {
        let m = Metrics {
            commands_ok: AtomicU64::new(0),
            commands_failed: AtomicU64::new(0),
            round_trip: [const { AtomicU64::new(0) }; ROUND_TRIP_BUCKETS.len() + 1],
            round_trip_micros: AtomicU64::new(0),
            uploads: AtomicU64::new(0),
            uploaded_bytes: AtomicU64::new(0),
            llm: Mutex::new(BTreeMap::new()),
        };
        m.command_done(Duration::from_micros(500), true);
        m.command_done(Duration::from_millis(30), false);
        m.command_done(Duration::from_secs(1000), true);
        let s = m.snapshot();
        assert_eq!((s.commands_ok, s.commands_failed, s.round_trip_count), (2, 1, 3));
        assert_eq!(s.round_trip_buckets[0], (0.001, 1));
        assert_eq!(s.round_trip_buckets[5], (0.05, 2));
        assert_eq!(s.round_trip_buckets.last().copied(), Some((f64::INFINITY, 3)));
        assert!((s.round_trip_seconds - 1000.0305).abs() < 1e-6);
        m.llm_attempt("OpenAI-compatible API", false, false);
        m.llm_attempt("OpenAI-compatible API", true, true);
        m.llm_attempt("Anthropic API", false, true);
        let s = m.snapshot();
        assert_eq!(s.llm["openai"], LlmCounts { requests: 2, errors: 1, retries: 1 });
        assert_eq!(s.llm["anthropic"], LlmCounts { requests: 1, errors: 0, retries: 0 });
    }
}
