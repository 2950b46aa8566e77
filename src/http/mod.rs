//! The HTTP layer: the two servers, their request guards, bodies, auth, routing and the
//! answers to parked long polls. The only place tiny_http is named.
//!
//! Invariants: every request gets exactly one response, with a JSON body for errors; bodies are
//! read through `take(limit + 1)` so no client can make us buffer more than the limit; a
//! parked request is answered once, by whoever takes its `Responder` first (the event it
//! waits for, its deadline, or shutdown). Answers that may leave a body unread go out on a
//! short-lived thread, since tiny_http drains it with no socket timeout.

pub mod api;
mod body;
mod contain;
mod front;
mod guard;
mod heads;
mod metrics;
mod openapi;
mod openapi_schemas;
mod relay;
mod server;
mod splice;
mod tls;
mod web;
pub mod worker_api;

pub use body::{
    check_bearer, header_value, parse_json, percent_decode, percent_encode, query_param, read_body, read_json,
    split_url,
};
pub use contain::contained;
pub use front::Limits as ConnLimits;
pub use relay::{chunk_size, reread_head};
pub use server::{HttpServer, ServerSpec};
pub use tls::{TlsConfig, load as load_tls};

use crate::error::ApiError;
use crate::wait::park::Responder;
use serde::Serialize;
use std::io::Read;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use tiny_http::{Header, Request, Response};

pub type Body = Box<dyn Read + Send + 'static>;
pub type HttpResponse = Response<Body>;

/// What a route handler hands back.
pub enum Reply {
    Response(HttpResponse),
    /// The handler keeps the request (long poll): the closure gets its `Responder`.
    Park(Box<dyn FnOnce(Responder) + Send>),
    /// A body of unknown length written straight to the connection (see `stream`).
    Stream(Stream),
}

/// A 200 whose body is written by `write` onto the socket, in large writes, chunked by us
/// unless its length is known: no pipe, no second thread between the writer and the client.
pub struct Stream {
    pub headers: Vec<Header>,
    /// Sent as Content-Length; `write` must then write exactly this many bytes.
    pub length: Option<u64>,
    pub write: WriteBody,
}

/// Writes a streamed body onto the connection.
pub type WriteBody = Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send>;

/// HTTP/1.1 chunked framing: each write one chunk (the buffer in front makes them large).
struct Chunked<W: std::io::Write>(W);

impl<W: std::io::Write> std::io::Write for Chunked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !buf.is_empty() {
            write!(self.0, "{:x}\r\n", buf.len())?;
            self.0.write_all(buf)?;
            self.0.write_all(b"\r\n")?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Reply {
    pub fn json<T: Serialize>(status: u16, value: &T) -> Reply {
        Reply::Response(json_response(status, value))
    }
}

/// What the guards and the token check read of a request: from tiny_http, or from the head
/// the front read (`relay/head.rs`, for the token before a `100 Continue`).
pub trait Incoming {
    fn method(&self) -> &str;
    fn url(&self) -> &str;
    fn header(&self, name: &str) -> Option<&str>;
    /// The client's address (see `peer_ip`).
    fn peer(&self) -> Option<IpAddr>;
}

impl Incoming for Request {
    fn method(&self) -> &str {
        Request::method(self).as_str()
    }

    fn url(&self) -> &str {
        Request::url(self)
    }

    fn header(&self, name: &str) -> Option<&str> {
        header_value(self, name)
    }

    fn peer(&self) -> Option<IpAddr> {
        peer_ip(self)
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
    let (status, body) = encoded(status, value);
    json_bytes_response(status, body)
}

/// `value` as a JSON body for `status`; one that cannot be encoded is a 500 saying so.
fn encoded<T: Serialize>(status: u16, value: &T) -> (u16, Vec<u8>) {
    serde_json::to_vec(value).map(|body| (status, body)).unwrap_or_else(|e| {
        let err = ApiError::Internal(format!("cannot encode response: {e}"));
        (err.status(), err.body().into_bytes())
    })
}

pub fn error_response(err: &ApiError) -> HttpResponse {
    let mut resp = json_bytes_response(err.status(), err.body().into_bytes());
    if matches!(err, ApiError::Unauthorized) {
        resp.add_header(header("WWW-Authenticate", "Bearer"));
    }
    resp
}

/// The client's IP address, as the front acceptor passed it on (tiny_http itself sees only
/// its private Unix socket). The relay drops any such header a client sends and writes its own
/// last, so the last one is taken.
pub fn peer_ip(request: &Request) -> Option<std::net::IpAddr> {
    let field = request.headers().iter().rev().find(|h| h.field.equiv(relay::PEER_HEADER))?;
    field.value.as_str().parse::<std::net::SocketAddr>().ok().map(|a| a.ip())
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
pub(crate) fn may_stall(request: &Request) -> bool {
    request.body_length().map_or_else(|| header_value(request, "Transfer-Encoding").is_some(), |n| n > 1024)
}

/// Answer on a thread of its own when the unread body could stall, so such clients cannot
/// take the handler pool (eight idle connections would otherwise freeze a server).
pub(crate) fn send_off_pool(request: Request, response: HttpResponse) {
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

/// Dispatch helper: run a handler and turn its `Result` into exactly one response.
pub fn finish(request: Request, result: Result<Reply, ApiError>) {
    match result {
        Ok(Reply::Response(resp)) => send(request, resp),
        Ok(Reply::Park(park)) => park(responder(request)),
        Ok(Reply::Stream(body)) => stream(request, body),
        Err(err) => {
            log_error(&request, &err);
            // Refused requests (bad token, too large, bad JSON) may leave their body unread.
            send_off_pool(request, error_response(&err));
        }
    }
}

/// An error answer in the log: the server's own faults as errors, the client's as debug.
fn log_error(request: &(impl Incoming + ?Sized), err: &ApiError) {
    if err.status() >= 500 {
        log::error!("{} {} -> {err}", request.method(), request.url().escape_debug());
    } else {
        log::debug!("{} {} -> {err}", request.method(), request.url().escape_debug());
    }
}

/// Write the head (`heads.rs` says why not tiny_http's), then the body: with its length, else in chunks and the last chunk
/// (HTTP/1.1), else up to the close (HTTP/1.0, which knows no chunks). The head says
/// `Connection: close`, and the front's relay then closes the client's connection after the
/// answer: a stream cut short (a zip that failed, a file that shrank) ends in a closed
/// connection the client notices, never a short body on a connection still open.
fn stream(request: Request, body: Stream) {
    use std::io::Write;
    let head_only = *request.method() == tiny_http::Method::Head;
    let chunks = body.length.is_none() && *request.http_version() != tiny_http::HTTPVersion(1, 0);
    let url = request.url().escape_debug().to_string();
    let length = body.length.map(|n| n.to_string());
    let mut headers: Vec<(&str, &str)> = match (&length, chunks) {
        (Some(n), _) => vec![("Content-Length", n.as_str())],
        (None, true) => vec![("Transfer-Encoding", "chunked")],
        (None, false) => Vec::new(),
    };
    headers.extend(body.headers.iter().map(|h| (h.field.as_str().as_str(), h.value.as_str())));
    let head = heads::closing(200, &headers);
    let mut raw = request.into_writer();
    let written = raw.write_all(head.as_bytes()).and_then(|()| {
        if head_only {
            return Ok(());
        }
        if !chunks {
            let mut out = std::io::BufWriter::with_capacity(256 * 1024, &mut raw);
            (body.write)(&mut out)?;
            return out.flush();
        }
        let mut chunked = std::io::BufWriter::with_capacity(256 * 1024, Chunked(&mut raw));
        (body.write)(&mut chunked)?;
        chunked.flush()?;
        drop(chunked);
        raw.write_all(b"0\r\n\r\n")
    });
    if let Err(e) = written.and_then(|()| raw.flush()) {
        log::debug!("GET {url}: the stream ended early: {e}");
    }
}

/// The answer to a parked request: a 200 with the JSON body it is given, sent once.
pub fn responder(request: Request) -> Responder {
    Box::new(move |body| send(request, json_bytes_response(200, body)))
}
