//! HTTP plumbing shared by both servers: handler thread pools over tiny_http, bounded body
//! reading, JSON responses, bearer auth, URL helpers, and the `Parker` that holds long-poll
//! requests without holding a thread.
//!
//! Invariants: every request gets exactly one response, with a JSON body for errors; bodies are
//! read through `take(limit + 1)` so no client can make us buffer more than the limit; a parked
//! request is answered by whoever takes it first (the event it waits for, its deadline, or
//! shutdown) and by nobody else.

use crate::error::ApiError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tiny_http::{Header, Method, Request, Response, Server};

pub type Body = Box<dyn Read + Send + 'static>;
pub type HttpResponse = Response<Body>;

/// What a route handler hands back.
pub enum Reply {
    Response(HttpResponse),
    /// The handler keeps the request (long poll); the closure owns answering it.
    Park(Box<dyn FnOnce(Request) + Send>),
}

impl Reply {
    pub fn json<T: Serialize>(status: u16, value: &T) -> Reply {
        Reply::Response(json_response(status, value))
    }
}

/// A header; non-ASCII or control characters in `value` become `_` so building cannot fail.
#[allow(clippy::expect_used)] // from_bytes fails only on non-ASCII input, ruled out above
pub fn header(name: &'static str, value: &str) -> Header {
    let value: String = value.chars().map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '_' }).collect();
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

pub fn json_bytes_response(status: u16, body: Vec<u8>) -> HttpResponse {
    let len = body.len();
    Response::new(
        status.into(),
        vec![header("Content-Type", "application/json")],
        Box::new(std::io::Cursor::new(body)) as Body,
        Some(len),
        None,
    )
    // The length is known: say so instead of chunking (tiny_http chunks above 32 KiB).
    .with_chunked_threshold(usize::MAX)
}

pub fn json_response<T: Serialize>(status: u16, value: &T) -> HttpResponse {
    match serde_json::to_vec(value) {
        Ok(body) => json_bytes_response(status, body),
        Err(e) => error_response(&ApiError::Internal(format!("cannot encode response: {e}"))),
    }
}

pub fn error_response(err: &ApiError) -> HttpResponse {
    let mut resp = json_bytes_response(err.status(), err.body().into_bytes());
    if matches!(err, ApiError::Unauthorized) {
        resp.add_header(header("WWW-Authenticate", "Bearer"));
    }
    resp
}

/// Answer a request, ignoring a client that already went away.
pub fn send(request: Request, response: HttpResponse) {
    if let Err(e) = request.respond(response) {
        log::debug!("client went away before the response was written: {e}");
    }
}

/// Requests answered by `send_off_pool` still draining their body.
static DRAINING: AtomicUsize = AtomicUsize::new(0);
/// Beyond this many, answer on the handler thread again rather than spawn without bound.
const DRAINING_MAX: usize = 256;

/// A body tiny_http streams (over 1 KiB, or chunked) and we may not have read. After the
/// response, dropping the request reads the rest of it, and tiny_http sets no socket timeouts:
/// a client that declares a body and never sends it would hold the thread for good.
fn may_stall(request: &Request) -> bool {
    request.body_length().map_or_else(|| header_value(request, "Transfer-Encoding").is_some(), |n| n > 1024)
}

/// Answer on a thread of its own when the unread body could stall, so such clients cannot
/// take the handler pool (eight idle connections would otherwise freeze a server).
fn send_off_pool(request: Request, response: HttpResponse) {
    if !may_stall(&request) {
        return send(request, response);
    }
    if DRAINING.fetch_add(1, Ordering::AcqRel) >= DRAINING_MAX {
        DRAINING.fetch_sub(1, Ordering::AcqRel);
        return send(request, response);
    }
    let spawned = std::thread::Builder::new().name("drain".into()).stack_size(128 * 1024).spawn(move || {
        send(request, response);
        DRAINING.fetch_sub(1, Ordering::AcqRel);
    });
    if spawned.is_err() {
        // The closure, request included, was dropped (tiny_http answered it 500).
        DRAINING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// GET, HEAD and DELETE take no body; one big enough to be streamed is refused before any
/// route, off the pool (see `send_off_pool`).
fn refuse_body_on_bodiless(request: Request) -> Option<Request> {
    if !matches!(request.method(), Method::Get | Method::Head | Method::Delete) || !may_stall(&request) {
        return Some(request);
    }
    let err = ApiError::BadRequest(format!("{} requests take no body", request.method()));
    send_off_pool(request, error_response(&err));
    None
}

/// Run `threads` handler threads that take requests from `server` and pass them to `handle`.
/// A receive error while not `stopping` means the listener died (tiny_http stops accepting
/// for good after an accept error): the process exits 1 so the service manager restarts it,
/// rather than living on deaf.
pub fn spawn_pool(
    name: &str,
    server: Arc<Server>,
    threads: usize,
    guard: BrowserGuard,
    stopping: Arc<AtomicBool>,
    handle: Arc<dyn Fn(Request) + Send + Sync>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    (0..threads)
        .map(|i| {
            let server = Arc::clone(&server);
            let handle = Arc::clone(&handle);
            let stopping = Arc::clone(&stopping);
            let thread_name = format!("{name}-{i}");
            std::thread::Builder::new().name(thread_name.clone()).stack_size(1024 * 1024).spawn(move || {
                loop {
                    match server.recv() {
                        // Guarded here, for every server, before any route sees the request.
                        Ok(request) => {
                            let request = refuse_oversized(request).and_then(|r| guard.check(r));
                            if let Some(request) = request.and_then(refuse_body_on_bodiless) {
                                handle(request)
                            }
                        }
                        Err(_) if stopping.load(Ordering::Acquire) => return,
                        Err(e) => {
                            log::error!("{thread_name}: the listener failed ({e}); exiting so the daemon is restarted");
                            std::process::exit(1);
                        }
                    }
                }
            })
        })
        .collect()
}

/// Stop a pool: one unblock per handler thread, then join them until `deadline`. Threads still
/// busy then (a slow download, a stalled upload) are left to the process exit.
pub fn stop_pool(server: &Server, handles: Vec<JoinHandle<()>>, deadline: Instant) -> usize {
    for _ in 0..handles.len() {
        server.unblock();
    }
    let (tx, rx) = crossbeam_channel::unbounded();
    let total = handles.len();
    let joiner = std::thread::Builder::new().name("pool-join".into()).spawn(move || {
        for h in handles {
            let _ = h.join();
            let _ = tx.send(());
        }
    });
    if joiner.is_err() {
        return total;
    }
    let mut joined = 0;
    while joined < total {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(()) => joined += 1,
            Err(_) => break,
        }
    }
    total - joined
}

/// A server without a token trusts whoever can connect, and on loopback that includes every web
/// page a browser on the host opens (the worker's own Chromium too). Such a server refuses what
/// only a browser sends: a request from another site (`Origin` not this server) and, on a
/// loopback bind, a `Host` that is a DNS name (DNS rebinding: a page's own name pointed at
/// 127.0.0.1). A server with a token needs none of this: a page cannot attach the token.
#[derive(Clone, Copy)]
pub struct BrowserGuard {
    /// Checks are on (the server has no token).
    pub open: bool,
    /// Bound to loopback, where the only names are IP literals and `localhost`. (A tokenless
    /// non-loopback bind, `--insecure`, may be reached by any name its network gives it.)
    pub loopback: bool,
}

impl BrowserGuard {
    fn check(&self, request: Request) -> Option<Request> {
        if !self.open {
            return Some(request);
        }
        let host = header_value(&request, "Host").unwrap_or("");
        let refusal = if self.loopback && !host.is_empty() && !loopback_name(host) {
            Some(format!("Host {host:?} is not an address of this server (DNS rebinding?)"))
        } else {
            match header_value(&request, "Origin") {
                Some(origin) if origin.strip_prefix("http://") != Some(host) => {
                    Some(format!("cross-site request from {origin:?} refused"))
                }
                _ => None,
            }
        };
        let Some(why) = refusal else { return Some(request) };
        log::warn!("{} {}: {why}", request.method(), request.url().escape_debug());
        let err = ApiError::Forbidden(format!("{why}; set a token to accept requests from browsers"));
        send_off_pool(request, error_response(&err));
        None
    }
}

/// A `Host` a loopback server can honestly be called by: an IP literal (rebinding needs a name)
/// or `localhost`, with or without a port.
fn loopback_name(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => return v6.split(']').next().is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.parse::<std::net::Ipv4Addr>().is_ok() || name.eq_ignore_ascii_case("localhost")
}

/// tiny_http 0.12 drains an unread request body when the request is dropped, allocating the
/// whole *declared* remainder at once (upstream issue #252, fix in PR #290, unreleased). A
/// zeroed allocation is mapped lazily, so that is harmless while the kernel agrees to map it;
/// beyond RAM + swap it refuses and the process aborts. So a request declaring more than
/// `safe_drain_bytes()` is answered 413 here and its connection deliberately abandoned (never
/// dropped), which costs what an idle connection costs. Honest large bodies never get here:
/// they are refused by the route's own limit and drained normally.
pub fn refuse_oversized(request: Request) -> Option<Request> {
    let cap = safe_drain_bytes();
    match request.body_length() {
        Some(n) if n > cap => {
            log::warn!(
                "{} {} declares a {n}-byte body (more than can be drained safely); answered 413 and abandoned",
                request.method(),
                request.url().escape_debug()
            );
            let err = ApiError::TooLarge(format!("request body of {n} bytes is far beyond any limit"));
            let body = err.body();
            let head = Response::empty(413).with_header(header("Content-Type", "application/json"));
            // `upgrade` writes the head and hands over the socket without touching the body
            // reader; the error body follows by hand.
            let mut stream = request.upgrade("none", head);
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            std::mem::forget(stream);
            None
        }
        _ => Some(request),
    }
}

/// Half of RAM + swap (the kernel's heuristic overcommit limit), at least 256 MiB.
pub fn safe_drain_bytes() -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        // SAFETY: sysinfo fills the zeroed struct we own.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        let total = if unsafe { libc::sysinfo(&mut info) } == 0 {
            (info.totalram as u128 + info.totalswap as u128) * u128::from(info.mem_unit.max(1))
        } else {
            1 << 30
        };
        usize::try_from(total / 2).unwrap_or(usize::MAX / 4).max(256 << 20)
    })
}

/// Dispatch helper: run a handler and turn its `Result` into exactly one response.
pub fn finish(request: Request, result: Result<Reply, ApiError>) {
    match result {
        Ok(Reply::Response(resp)) => send(request, resp),
        Ok(Reply::Park(park)) => park(request),
        Err(err) => {
            if err.status() >= 500 {
                log::error!("{} {} -> {err}", request.method(), request.url().escape_debug());
            } else {
                log::debug!("{} {} -> {err}", request.method(), request.url().escape_debug());
            }
            // Refused requests (bad token, too large, bad JSON) may leave their body unread.
            send_off_pool(request, error_response(&err));
        }
    }
}

pub fn header_value<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

/// Compare in time that depends only on the lengths, not on where the bytes differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// `Authorization: Bearer <token>` check; an empty expected token means auth is off.
pub fn check_bearer(request: &Request, expected: &str) -> Result<(), ApiError> {
    if expected.is_empty() {
        return Ok(());
    }
    let given = header_value(request, "Authorization")
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) { Ok(()) } else { Err(ApiError::Unauthorized) }
}

/// Read a whole body, refusing more than `limit` bytes.
pub fn read_body(request: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    let too_large = || ApiError::TooLarge(format!("request body is larger than the {} byte limit", limit));
    if request.body_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| ApiError::BadRequest(format!("could not read the request body: {e}")))?;
    if body.len() > limit {
        return Err(too_large());
    }
    Ok(body)
}

pub fn read_json<T: DeserializeOwned>(request: &mut Request, limit: usize) -> Result<T, ApiError> {
    let body = read_body(request, limit)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest("request body is empty; expected a JSON object".into()));
    }
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {}", describe_json_error(&e))))
}

/// serde's message, minus the offending value: "invalid type: string \"<a webhook URL>\"…"
/// would echo secrets into responses and logs.
fn describe_json_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            if let Some(i) = rest.find(", expected ") {
                return format!("{} (value not shown), expected {}", prefix.trim_end_matches(": "), &rest[i + 11..]);
            }
        }
    }
    msg
}

/// Split `/a/b?x=1` into decoded path segments and query pairs.
pub fn split_url(url: &str) -> (Vec<String>, Vec<(String, String)>) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let segments = path.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect();
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(&v.replace('+', " ")))
        })
        .collect();
    (segments, pairs)
}

pub fn query_param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Percent-decoding; invalid escapes are kept literally, invalid UTF-8 is replaced.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Parker: long polls without a thread each
// ---------------------------------------------------------------------------------------------

/// Identifies one parked request.
pub type ParkKey = (Instant, u64);

struct Parked {
    request: Request,
    on_timeout: Vec<u8>,
}

#[derive(Default)]
struct ParkState {
    entries: BTreeMap<ParkKey, Parked>,
    next_id: u64,
}

/// Holds requests until an event answers them or their deadline passes; one reaper thread
/// answers the expired ones with the body given at park time.
#[derive(Default)]
pub struct Parker {
    state: Mutex<ParkState>,
    changed: Condvar,
    closed: AtomicBool,
}

impl Parker {
    fn lock(&self) -> MutexGuard<'_, ParkState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Park `request` for `timeout`; on expiry it is answered 200 with `on_timeout`.
    /// After shutdown it is answered at once.
    pub fn park(&self, request: Request, timeout: Duration, on_timeout: Vec<u8>) -> Option<ParkKey> {
        if self.closed.load(Ordering::Acquire) {
            send(request, json_bytes_response(200, on_timeout));
            return None;
        }
        let mut state = self.lock();
        state.next_id += 1;
        let deadline =
            Instant::now().checked_add(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        let key = (deadline, state.next_id);
        let first = state.entries.keys().next().is_none_or(|k| key < *k);
        state.entries.insert(key, Parked { request, on_timeout });
        drop(state);
        if first {
            self.changed.notify_one();
        }
        Some(key)
    }

    /// Take a parked request to answer it now; `None` if it already timed out.
    pub fn take(&self, key: ParkKey) -> Option<Request> {
        self.lock().entries.remove(&key).map(|p| p.request)
    }

    pub fn contains(&self, key: ParkKey) -> bool {
        self.lock().entries.contains_key(&key)
    }

    /// The reaper loop; returns after `close`.
    pub fn run_reaper(&self) {
        let mut state = self.lock();
        loop {
            let closed = self.closed.load(Ordering::Acquire);
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = state.entries.first_entry() {
                if closed || entry.key().0 <= now {
                    due.push(entry.remove());
                } else {
                    break;
                }
            }
            if !due.is_empty() {
                drop(state);
                for p in due {
                    send(p.request, json_bytes_response(200, p.on_timeout));
                }
                state = self.lock();
                continue;
            }
            if closed {
                return;
            }
            let wait = state
                .entries
                .keys()
                .next()
                .map(|k| k.0.saturating_duration_since(now))
                .unwrap_or(Duration::from_secs(3600));
            state = self.changed.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Answer everything parked and stop the reaper; later parks are answered at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _guard = self.lock();
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_works() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn url_splitting() {
        let (segs, q) = split_url("/sessions/a%20b/files/x%2Fy?after=3&wait=1");
        assert_eq!(segs, vec!["sessions", "a b", "files", "x/y"]);
        assert_eq!(query_param(&q, "after"), Some("3"));
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("a%4"), "a%4");
        assert_eq!(percent_decode("%41"), "A");
        assert_eq!(percent_encode("a b/c"), "a%20b%2Fc");
    }
}
