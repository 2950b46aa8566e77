//! The HTTP transport every wire format shares: one POST with a JSON body, retried the way
//! the official SDKs do, abandoned at once on a stop.
//!
//! Retries: 408/409/429/≥500 and connection errors, except an error saying the model takes no
//! images (the agent drops them and asks again); a server's `x-should-retry` wins;
//! `retry-after-ms` / `retry-after` honoured up to 60 s, otherwise 0.5 s doubling to 8 s with up
//! to 25 % jitter; at most `api.max_retries` retries. Other statuses fail at once with the API's
//! own message (the adapter words it), cut to `MAX_ERROR_CHARS`. Keys only ever go into a
//! header, and error texts never carry a URL.
//!
//! Where an attempt runs: over a pooled connection, on the caller's own thread, and a stop
//! shuts that connection down (a hand-off to another thread and back cost two thread wake-ups
//! on every agent step). An attempt that needs a lookup or a new connection (which a shutdown
//! cannot interrupt) runs on a caller thread (`callers.rs`) instead, and the caller selects over
//! its result and the stop. Either way a stop never waits for the network.

use super::LlmError;
use crate::util::clock;
use crate::wait::stop::StopSignal;
use crossbeam_channel::{RecvTimeoutError, select};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::http::uri::{Authority, Scheme};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectionDetails, Connector, DefaultConnector, NextTimeout};

const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// Response headers the retry rules read.
const KEPT_HEADERS: [&str; 4] = ["retry-after", "retry-after-ms", "x-should-retry", "request-id"];

pub struct Transport {
    /// Replaced once a stop has shut it down: the provider still writes a report after a stop.
    agent: Mutex<Arc<Generation>>,
    timeout: Duration,
    max_retries: u32,
}

/// One agent and whether a stop has shut it down (closing its pool for good).
struct Generation {
    agent: ureq::Agent,
    shut: AtomicBool,
}

/// One call: where, with which headers, and how the adapter words failures.
pub struct Call<'a> {
    pub url: &'a str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Arc<[u8]>,
    /// "Anthropic API", for "… unreachable" messages.
    pub api_name: &'a str,
    /// The API's message for a failed status.
    pub describe: &'a dyn Fn(u16, &str) -> String,
    /// A failure that looks retryable but is not (e.g. a spend cap behind a 429).
    pub is_final: &'a dyn Fn(u16, &str) -> bool,
    /// A delay the error body asks for (Gemini's `RetryInfo.retryDelay`), when no header does.
    pub retry_delay: &'a dyn Fn(u16, &str) -> Option<Duration>,
}

/// What one HTTP attempt produced.
enum Attempt {
    Done(u16, Vec<(String, String)>, String),
    /// Connection error or timeout (no HTTP status).
    Network(NetworkError),
}

/// An HTTP exchange that ended without a status: ureq's error, worded without its URL. The
/// source is ureq's own error, whose text may name the URL: what is shown is this `Display`.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("{}", describe(.0))]
    Send(#[source] ureq::Error),
    #[error("reading the response failed: {}", describe(.0))]
    Read(#[source] ureq::Error),
    /// The caller thread ended without sending the attempt's result.
    #[error("the LLM call ended without a result")]
    Lost,
}

impl Transport {
    pub fn new(timeout: Duration, max_retries: u32) -> Transport {
        Transport { agent: Mutex::new(Arc::new(Generation::new(timeout))), timeout, max_retries }
    }

    /// POST until a 200 (its body), a final failure, the retry budget, or a stop.
    pub fn send(&self, call: &Call<'_>, stop: &StopSignal) -> Result<String, LlmError> {
        let mut retries = 0;
        loop {
            let mut cause = None;
            let attempt = self.attempt(call, retries, stop)?;
            crate::util::metrics::llm_attempt(call.api_name, retries > 0, matches!(attempt, Attempt::Done(200, ..)));
            let (delay, failure) = match attempt {
                Attempt::Done(200, _, text) => return Ok(text),
                Attempt::Done(status, headers, text) => {
                    // An endpoint's words are bounded here, where they are read: a 5 MB error
                    // body never reaches the record, the log or a terminal.
                    let message = super::bounded_message(&(call.describe)(status, &text));
                    // Sent again as it is, a request a model cannot take fails the same way: what
                    // it says is classified here, once, where the error is read.
                    if super::context_exceeded(&text) {
                        return Err(LlmError::ContextExceeded(message));
                    }
                    if super::images_unsupported(&text) {
                        return Err(LlmError::ImagesUnsupported(message));
                    }
                    if (call.is_final)(status, &text) || !should_retry(status, &headers) {
                        return Err(LlmError::Rejected(message));
                    }
                    let asked = retry_after(&headers).or_else(|| (call.retry_delay)(status, &text));
                    (asked.unwrap_or_else(|| backoff(retries)), message)
                }
                Attempt::Network(e) => {
                    let failure = format!("{} unreachable: {e}", call.api_name);
                    cause = Some(e);
                    (backoff(retries), failure)
                }
            };
            if retries >= self.max_retries {
                return Err(LlmError::GaveUp {
                    failure: format!("{failure} (gave up after {retries} retries)"),
                    cause,
                });
            }
            log::warn!("LLM call failed ({failure}); retry {} in {:.1} s", retries + 1, delay.as_secs_f64());
            if !matches!(stop.receiver().recv_timeout(delay), Err(RecvTimeoutError::Timeout)) {
                return Err(LlmError::Cancelled);
            }
            retries += 1;
        }
    }

    fn attempt(&self, call: &Call<'_>, retry_count: u32, stop: &StopSignal) -> Result<Attempt, LlmError> {
        let mut headers = call.headers.clone();
        headers.push(("x-stainless-retry-count", retry_count.to_string()));
        match self.attempt_here(call.url, &headers, &call.body, stop) {
            Some(attempt) => attempt,
            None => self.attempt_on_a_caller(call.url, headers, &call.body, stop),
        }
    }

    /// The attempt on this thread over a pooled connection, which a stop shuts down (with the
    /// whole agent: ureq shuts down every connection of an agent at once). None when it needs
    /// a lookup or a new connection, and nothing was sent.
    fn attempt_here(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
        stop: &StopSignal,
    ) -> Option<Result<Attempt, LlmError>> {
        let generation = self.generation();
        let shut_down = Arc::clone(&generation);
        let _interrupt = stop.on_raise(Arc::new(move || {
            shut_down.shut.store(true, Ordering::Release);
            shut_down.agent.clone().shutdown();
        }));
        if stop.is_raised() {
            return Some(Err(LlmError::Cancelled));
        }
        HERE.set(Here::PooledOnly);
        let attempt = post(&generation.agent, url, headers, body);
        let refused = HERE.replace(Here::Anything) == Here::Refused;
        if stop.is_raised() { Some(Err(LlmError::Cancelled)) } else { (!refused).then_some(Ok(attempt)) }
    }

    /// The attempt on a caller thread, selected over the stop.
    fn attempt_on_a_caller(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: &Arc<[u8]>,
        stop: &StopSignal,
    ) -> Result<Attempt, LlmError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let agent = self.generation().agent.clone();
        let url = url.to_string();
        // Shared, not copied: with screenshots a request body is megabytes.
        let body = Arc::clone(body);
        super::callers::shared()
            .run(move || drop(tx.send(post(&agent, &url, &headers, &body))))
            .map_err(LlmError::Start)?;
        let stopped = stop.receiver();
        select! {
            recv(rx) -> attempt => Ok(attempt.unwrap_or(Attempt::Network(NetworkError::Lost))),
            // The helper finishes on its own, bounded by the global timeout.
            recv(stopped) -> _ => Err(LlmError::Cancelled),
        }
    }

    /// The agent to use now: a fresh one in place of one a stop shut down.
    fn generation(&self) -> Arc<Generation> {
        let mut current = self.agent.lock().unwrap_or_else(PoisonError::into_inner);
        if current.shut.load(Ordering::Acquire) {
            *current = Arc::new(Generation::new(self.timeout));
        }
        Arc::clone(&current)
    }
}

impl Generation {
    fn new(timeout: Duration) -> Generation {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(Duration::from_secs(10).min(timeout)))
            // ureq's default is 128 KiB each way per connection, kept while pooled: 200 sessions
            // waiting on the model held about 50 MiB in them. Response headers fit in 32 KiB;
            // bodies stream through either size.
            .input_buffer_size(32 * 1024)
            .output_buffer_size(16 * 1024)
            .build();
        let agent = ureq::Agent::with_parts(config, PooledOnlyHere(DefaultConnector::new()), CachedResolver::default());
        Generation { agent, shut: AtomicBool::new(false) }
    }
}

/// What an attempt on this thread may do.
#[derive(Clone, Copy, PartialEq)]
enum Here {
    Anything,
    /// Only use a pooled connection (the attempt runs on the session's thread).
    PooledOnly,
    /// It needed more, was refused, and sent nothing.
    Refused,
}

thread_local! {
    /// Read by the connector and the resolver, which run on the attempt's thread.
    static HERE: Cell<Here> = const { Cell::new(Here::Anything) };
}

/// Whether this thread's attempt may not block on a lookup or a connect (and now knows it).
fn refused_here() -> bool {
    let refused = HERE.get() != Here::Anything;
    if refused {
        HERE.set(Here::Refused);
    }
    refused
}

/// ureq's connectors, which an attempt that may use only a pooled connection never reaches.
#[derive(Debug)]
struct PooledOnlyHere(DefaultConnector);

impl Connector<()> for PooledOnlyHere {
    type Out = <DefaultConnector as Connector<()>>::Out;

    fn connect(&self, details: &ConnectionDetails, chained: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        if refused_here() {
            return Err(ureq::Error::ConnectionFailed);
        }
        self.0.connect(details, chained)
    }
}

/// How long a model host's addresses are reused before they are looked up again.
const RESOLVED_FOR: Duration = Duration::from_secs(60);

/// The model host's addresses, looked up at most once a minute. ureq resolves a host before it
/// looks in its connection pool, so every model call ran getaddrinfo (reading /etc/hosts and
/// more) on a thread started for the lookup's timeout: a spawn and a dozen system calls per
/// agent step. A transport speaks to one endpoint, so one entry is kept.
#[derive(Debug, Default)]
struct CachedResolver {
    last: Mutex<Option<Resolved>>,
}

#[derive(Debug)]
struct Resolved {
    scheme: Option<Scheme>,
    authority: Option<Authority>,
    at: Instant,
    addrs: ResolvedSocketAddrs,
}

impl Resolver for CachedResolver {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = last.as_ref().filter(|k| {
            k.scheme.as_ref() == uri.scheme()
                && k.authority.as_ref() == uri.authority()
                && k.at.elapsed() < RESOLVED_FOR
        }) {
            return Ok(known.addrs.clone());
        }
        if refused_here() {
            return Err(ureq::Error::HostNotFound);
        }
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        *last = Some(Resolved {
            scheme: uri.scheme().cloned(),
            authority: uri.authority().cloned(),
            at: Instant::now(),
            addrs: addrs.clone(),
        });
        Ok(addrs)
    }
}

fn post(agent: &ureq::Agent, url: &str, headers: &[(&'static str, String)], body: &[u8]) -> Attempt {
    let mut request = agent.post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    match request.send(body) {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let kept = resp
                .headers()
                .iter()
                .filter(|(k, _)| KEPT_HEADERS.contains(&k.as_str()))
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect();
            match resp.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_string() {
                Ok(text) => Attempt::Done(status, kept, text),
                Err(e) => Attempt::Network(NetworkError::Read(e)),
            }
        }
        Err(e) => Attempt::Network(NetworkError::Send(e)),
    }
}

/// An error description without the URL (ureq's messages can carry it; ours never need it).
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "the request timed out (api.timeout_s)".into(),
        ureq::Error::Io(io) => format!("connection error: {}", io.kind()),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::BodyExceedsLimit(n) => format!("response larger than {n} bytes"),
        _ => "HTTP client error".into(),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Whether to retry: `x-should-retry` first, then the status.
fn should_retry(status: u16, headers: &[(String, String)]) -> bool {
    match header(headers, "x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The server's requested delay, when it is sane (0 < d ≤ 60 s).
pub fn retry_after(headers: &[(String, String)]) -> Option<Duration> {
    let ms = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()).map(|ms| ms / 1000.0);
    let secs = ms.or_else(|| header(headers, "retry-after").and_then(|v| v.trim().parse::<f64>().ok()))?;
    (secs > 0.0 && secs <= 60.0).then(|| Duration::from_secs_f64(secs))
}

/// 0.5 s · 2^n, capped at 8 s, minus up to 25 % jitter.
pub fn backoff(retries_done: u32) -> Duration {
    let base = (0.5 * 2f64.powi(retries_done.min(10) as i32)).min(8.0);
    Duration::from_secs_f64(base * (1.0 - 0.25 * (clock::random_u64() % 10_000) as f64 / 10_000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules_follow_the_sdks() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(should_retry(s, &[]), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!should_retry(s, &[]), "{s}");
        }
        assert!(!should_retry(529, &[("x-should-retry".into(), "false".into())]));
        assert!(should_retry(400, &[("x-should-retry".into(), "true".into())]));
        assert_eq!(retry_after(&[("retry-after".into(), "2".into())]), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&[("retry-after-ms".into(), "1500".into())]), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(&[("retry-after".into(), "600".into())]), None);
        assert_eq!(retry_after(&[("retry-after".into(), "0".into())]), None);
    }

    #[test]
    fn the_backoff_schedule_doubles_to_eight_seconds_with_jitter() {
        let bounds =
            [(0, 375, 500), (1, 750, 1000), (2, 1500, 2000), (3, 3000, 4000), (4, 6000, 8000), (10, 6000, 8000)];
        for (n, lo, hi) in bounds {
            for _ in 0..50 {
                let d = backoff(n);
                assert!(d >= Duration::from_millis(lo) && d <= Duration::from_millis(hi), "retry {n}: {d:?}");
            }
        }
    }

    /// One endpoint's addresses are reused; another endpoint's are looked up.
    #[test]
    fn an_endpoint_is_resolved_once_and_another_on_its_own() {
        let resolver = CachedResolver::default();
        let config = Config::default();
        let timeout = || NextTimeout {
            after: Duration::from_secs(5).into(),
            reason: ureq::Timeout::Global,
            per_read: None,
            per_write: None,
        };
        let first: Uri = "http://127.0.0.1:8080/v1/messages".parse().unwrap();
        let a = resolver.resolve(&first, &config, timeout()).unwrap();
        assert_eq!(a.first().map(|s| s.to_string()), Some("127.0.0.1:8080".into()));
        let at = resolver.last.lock().unwrap().as_ref().unwrap().at;
        resolver.resolve(&"http://127.0.0.1:8080/v1/other".parse().unwrap(), &config, timeout()).unwrap();
        assert_eq!(resolver.last.lock().unwrap().as_ref().unwrap().at, at, "looked up again");
        let b = resolver.resolve(&"http://127.0.0.2:9090/".parse().unwrap(), &config, timeout()).unwrap();
        assert_eq!(b.first().map(|s| s.to_string()), Some("127.0.0.2:9090".into()));
    }

    /// A call to `url` with `body`, its failures worded plainly.
    fn test_call<'a>(url: &'a str, body: &[u8]) -> Call<'a> {
        Call {
            url,
            headers: Vec::new(),
            body: Arc::from(body),
            api_name: "test API",
            describe: &|s, _| format!("status {s}"),
            is_final: &|_, _| false,
            retry_delay: &|_, _| None,
        }
    }

    /// Raise `stop` from another thread after `ms`.
    fn raise_after(stop: &Arc<StopSignal>, ms: u64) -> std::thread::JoinHandle<()> {
        let stop = Arc::clone(stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            stop.raise();
        })
    }

    /// A stop ends the wait between retries at once, not after the delay.
    #[test]
    fn a_stop_cancels_a_call_that_cannot_connect() {
        let transport = Transport::new(Duration::from_secs(5), 5);
        let stop = Arc::new(StopSignal::default());
        let raiser = raise_after(&stop, 100);
        let call = test_call("http://127.0.0.1:9/", b"{}");
        let started = std::time::Instant::now();
        assert!(matches!(transport.send(&call, &stop), Err(LlmError::Cancelled)));
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        raiser.join().unwrap();
    }

    /// A model server on loopback, keeping connections alive: it answers `{}` at once, except
    /// to a body that says "hold", which it never answers.
    fn keep_alive_server() -> String {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut writer = conn;
                    loop {
                        let mut length = 0;
                        let mut line = String::new();
                        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap();
                            }
                            line.clear();
                        }
                        let mut body = vec![0; length];
                        if line.is_empty() || reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        if body == b"hold" {
                            std::thread::sleep(Duration::from_secs(30));
                            return;
                        }
                        let _ = writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
                    }
                });
            }
        });
        url
    }

    /// A stop ends a call already sent on a pooled connection at once, and the transport
    /// still works afterwards (the report after a stop uses it).
    #[test]
    fn a_stop_interrupts_a_call_in_flight_and_the_transport_goes_on() {
        let url = keep_alive_server();
        let transport = Transport::new(Duration::from_secs(20), 0);
        let call = |body: &[u8]| test_call(&url, body);
        let unstopped = StopSignal::default();
        // The first call connects (on a caller thread); the second goes over the pooled connection.
        assert_eq!(transport.send(&call(b"a"), &unstopped).as_deref().map_err(|e| e.to_string()), Ok("{}"));
        assert_eq!(transport.send(&call(b"b"), &unstopped).as_deref().map_err(|e| e.to_string()), Ok("{}"));
        let stop = Arc::new(StopSignal::default());
        let raiser = raise_after(&stop, 200);
        let started = std::time::Instant::now();
        assert!(matches!(transport.send(&call(b"hold"), &stop), Err(LlmError::Cancelled)));
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        raiser.join().unwrap();
        assert_eq!(transport.send(&call(b"c"), &unstopped).as_deref().map_err(|e| e.to_string()), Ok("{}"));
    }
}
