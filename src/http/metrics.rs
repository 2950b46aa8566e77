//! `GET /metrics`: Prometheus text exposition format 0.0.4.
//!
//! State is read from its owners at scrape time (sessions by status, connected workers by
//! capability, tokens per model endpoint, pending confirmations, the process's memory and open
//! files from `/proc/self`); events come from the process-wide counters in `util::metrics`
//! (worker commands and their round trips, LLM requests / errors / retries, uploads). Every
//! label value is escaped; nothing here takes a lock for longer than a copy.

use super::{Body, Reply, header};
use crate::hub::WorkerHub;
use crate::protocol::Status;
use crate::protocol::guards::Guard;
use crate::protocol::takeover::EndedBy;
use crate::session::SessionManager;
use crate::util::metrics;
use std::collections::BTreeMap;
use std::fmt::Write;
use tiny_http::Response;

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family being written.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Family<'_> {
    fn sample(&mut self, suffix: &str, labels: &[(&str, &str)], value: f64) {
        let _ = write!(self.out, "{}{suffix}", self.name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let _ = write!(self.out, "{{{}}}", inner.join(","));
        }
        let _ = writeln!(self.out, " {}", number(value));
    }
}

fn family<'a>(out: &'a mut String, name: &'static str, kind: &str, help: &str) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    Family { out, name }
}

/// The route's answer.
pub fn reply(sessions: &SessionManager, hub: &WorkerHub, schedules: &[(String, &str, u64)]) -> Reply {
    let body = render(sessions, hub, schedules).into_bytes();
    let len = body.len();
    let response = Response::new(
        200.into(),
        vec![header("Content-Type", CONTENT_TYPE), header("Cache-Control", "no-store")],
        Box::new(std::io::Cursor::new(body)) as Body,
        Some(len),
        None,
    )
    .with_chunked_threshold(usize::MAX);
    Reply::Response(response)
}

/// The whole exposition.
pub fn render(sessions: &SessionManager, hub: &WorkerHub, schedules: &[(String, &str, u64)]) -> String {
    let mut out = String::with_capacity(8 * 1024);
    render_sessions(&mut out, sessions);
    render_workers(&mut out, hub);
    let mut f = family(
        &mut out,
        "agent_controller_schedule_runs_total",
        "counter",
        "Runs of each schedule since the start, by outcome (finished, diverged, error, stopped, skipped, failed).",
    );
    for (name, outcome, n) in schedules {
        f.sample("", &[("schedule", name), ("outcome", outcome)], *n as f64);
    }
    render_events(&mut out, &metrics::global().snapshot());
    render_process(&mut out);
    out
}

fn render_sessions(out: &mut String, sessions: &SessionManager) {
    let records: Vec<_> =
        sessions.list().iter().filter_map(|s| sessions.get(&s.session_id).ok()).map(|s| s.record()).collect();
    let mut by_status: BTreeMap<&str, u64> = BTreeMap::new();
    let all = [
        Status::Waiting,
        Status::Running,
        Status::Confirming,
        Status::Paused,
        Status::Finished,
        Status::Error,
        Status::Stopped,
    ];
    for status in all {
        by_status.insert(status.as_str(), 0);
    }
    // (provider, llm, kind) → tokens.
    let mut tokens: BTreeMap<(String, String, &str), u64> = BTreeMap::new();
    let mut guards: BTreeMap<&str, u64> = Guard::ALL.iter().map(|g| (g.name(), 0)).collect();
    let (mut pending, mut by_budget) = (0, 0);
    for r in &records {
        *by_status.entry(r.status.as_str()).or_default() += 1;
        for (name, n) in &r.guards_fired {
            if let Some(count) = Guard::from_name(name).and_then(|g| guards.get_mut(g.name())) {
                *count = count.saturating_add(*n);
            }
        }
        pending += u64::from(r.confirmation_pending.is_some());
        by_budget += u64::from(r.ended_by == Some(EndedBy::Budget));
        let (provider, llm) = r.llm.as_ref().map_or(("unknown", "unknown"), |l| (l.provider.as_str(), l.name.as_str()));
        let u = &r.usage;
        for (kind, n) in [
            ("input", u.input_tokens),
            ("output", u.output_tokens),
            ("cache_read", u.cache_read_input_tokens),
            ("cache_creation", u.cache_creation_input_tokens),
        ] {
            let sum = tokens.entry((provider.to_string(), llm.to_string(), kind)).or_default();
            *sum = sum.saturating_add(n);
        }
    }
    let mut f = family(out, "agent_controller_sessions", "gauge", "Sessions by status.");
    for (status, n) in &by_status {
        f.sample("", &[("status", status)], *n as f64);
    }
    let mut f =
        family(out, "agent_controller_confirmations_pending", "gauge", "Sessions waiting for a person to confirm.");
    f.sample("", &[], pending as f64);
    let mut f = family(
        out,
        "agent_controller_sessions_ended_by_budget_total",
        "counter",
        "Sessions a budget (tokens, dollars, seconds) ended, of those kept.",
    );
    f.sample("", &[], by_budget as f64);
    let mut f = family(
        out,
        "agent_controller_guard_firings_total",
        "counter",
        "Times each agent guard acted (README's guard table), in the sessions kept.",
    );
    for (guard, n) in &guards {
        f.sample("", &[("guard", guard)], *n as f64);
    }
    let mut f = family(
        out,
        "agent_controller_llm_tokens_total",
        "counter",
        "Tokens used by sessions, by provider (wire format), model endpoint and kind.",
    );
    for ((provider, llm, kind), n) in &tokens {
        f.sample("", &[("provider", provider), ("llm", llm), ("kind", kind)], *n as f64);
    }
}

fn render_workers(out: &mut String, hub: &WorkerHub) {
    let workers = hub.workers();
    let connected: Vec<_> = workers.iter().filter(|w| w.connected).collect();
    let mut by_capability: BTreeMap<&str, u64> = BTreeMap::new();
    for w in &connected {
        for c in &w.capabilities {
            *by_capability.entry(c.as_str()).or_default() += 1;
        }
    }
    let mut f = family(out, "agent_controller_workers_connected", "gauge", "Connected workers.");
    f.sample("", &[], connected.len() as f64);
    let mut f =
        family(out, "agent_controller_workers_busy", "gauge", "Connected workers leased to a session right now.");
    f.sample("", &[], connected.iter().filter(|w| w.session_id.is_some()).count() as f64);
    let mut f = family(
        out,
        "agent_controller_workers_connected_by_capability",
        "gauge",
        "Connected workers by capability (a worker counts once per capability).",
    );
    for (capability, n) in &by_capability {
        f.sample("", &[("capability", capability)], *n as f64);
    }
}

fn render_events(out: &mut String, s: &metrics::Snapshot) {
    let mut f = family(out, "agent_controller_commands_total", "counter", "Worker commands dispatched, by outcome.");
    f.sample("", &[("outcome", "ok")], s.commands_ok as f64);
    f.sample("", &[("outcome", "error")], s.commands_failed as f64);
    let mut f = family(
        out,
        "agent_controller_command_round_trip_seconds",
        "histogram",
        "Time from handing a command to a worker to its result.",
    );
    for (bound, n) in &s.round_trip_buckets {
        f.sample("_bucket", &[("le", &number(*bound))], *n as f64);
    }
    f.sample("_sum", &[], s.round_trip_seconds);
    f.sample("_count", &[], s.round_trip_count as f64);
    let llm = [
        ("agent_controller_llm_requests_total", "HTTP requests to model APIs, retries included, by provider."),
        ("agent_controller_llm_errors_total", "Model API requests that did not succeed, by provider."),
        ("agent_controller_llm_retries_total", "Model API requests that were retries, by provider."),
    ];
    for (i, (name, help)) in llm.into_iter().enumerate() {
        let mut f = family(out, name, "counter", help);
        for (provider, c) in &s.llm {
            f.sample("", &[("provider", provider)], [c.requests, c.errors, c.retries][i] as f64);
        }
    }
    let mut f = family(out, "agent_controller_uploads_total", "counter", "Files workers uploaded.");
    f.sample("", &[], s.uploads as f64);
    let mut f = family(out, "agent_controller_uploaded_bytes_total", "counter", "Bytes of the files workers uploaded.");
    f.sample("", &[], s.uploaded_bytes as f64);
}

fn render_process(out: &mut String) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    if let Some(kib) = field("VmRSS:") {
        let mut f = family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        f.sample("", &[], kib * 1024.0);
    }
    if let Some(threads) = field("Threads:") {
        let mut f = family(out, "process_threads", "gauge", "Threads of the process.");
        f.sample("", &[], threads);
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        let mut f = family(out, "process_open_fds", "gauge", "Open file descriptors.");
        f.sample("", &[], entries.count() as f64);
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        let mut f = family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        f.sample("", &[], limit.rlim_cur as f64);
    }
}

/// A sample value or `le` bound as the format spells it.
fn number(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Label values: backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_labels_are_written_as_the_format_wants() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.0025), "0.0025");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let mut out = String::new();
        family(&mut out, "agent_controller_sessions", "gauge", "Sessions.").sample("", &[("status", "x\"y")], 2.0);
        assert_eq!(
            out,
            "# HELP agent_controller_sessions Sessions.\n# TYPE agent_controller_sessions gauge\nagent_controller_sessions{status=\"x\\\"y\"} 2\n"
        );
    }
}
