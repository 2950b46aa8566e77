//! One client connection (plain or TLS), relayed to tiny_http request by request, each on an inner
//! connection of its own (a private Unix socket, see `front.rs`).
//!
//! Guarantees: a head is at most `MAX_HEAD` bytes and complete within `header_timeout` of its first
//! byte (of the accept, for the first; over TLS this bounds the handshake too), else 431/408 and
//! closed; every read is bounded by `read_timeout`. The head is read once, strictly (`head.rs`),
//! and tiny_http gets only the head written again from that reading, with `Connection: close` and
//! the client's address in `PEER_HEADER` (a client's own is dropped); chunked bodies are written
//! again too. A head is held back until its body is complete or `HOLD` bytes of it came, so a body
//! never sent takes no handler thread. An answer given before the body ended reaches the client at
//! once, and the connection ends. An idle connection holds only a 4 KiB read buffer.
//!
//! **Rationale**: tiny_http has no limits of its own and reads heads its own way; a head read once
//! here, never passed on as sent, cannot be read differently by the two (no smuggling).

use super::conns::{Limits, Slot};
use super::tls::Client;
use crate::util::secret::Secret;
use input::Input;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

mod head;
mod input;

use head::{Framing, Refused};

/// The longest request head accepted (request line and headers together).
pub const MAX_HEAD: usize = 64 * 1024;
/// Body bytes gathered before the request is handed on (all of it, if smaller).
pub(super) const HOLD: usize = 64 * 1024;
/// The read buffer at first, and again after a request that grew it.
const SMALL_BUFFER: usize = 4096;
/// The read buffer for a large body where splice(2) cannot serve: larger reads, fewer system
/// calls. (Over TLS a read yields at most a record, 16 KiB.)
const BODY_BUFFER: usize = 256 * 1024;
const TLS_BODY_BUFFER: usize = 32 * 1024;
/// The response copy buffers: on the stack for the many small answers, on the heap and larger
/// once an answer fills the one before.
const SMALL_REPLY: usize = 2048;
const REPLY_BUFFER: usize = 16 * 1024;
const LARGE_REPLY_BUFFER: usize = 256 * 1024;
/// How long an answer given before the request's body ended may take to come, and how long
/// the rest of that body is then read off.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(1);
/// How many `idle_timeout`s an answer's bytes may keep the relay waiting.
const ANSWER_WAIT_FACTOR: u32 = 3;
/// The longest chunk-size or trailer line of a chunked body.
const MAX_CHUNK_LINE: usize = 4096;
/// The header carrying the client's address to the routes.
pub const PEER_HEADER: &str = "X-Agent-Controller-Peer";
/// What a request without the server's token hears (as `ApiError::Unauthorized` says it).
const UNAUTHORIZED: &str = "missing or invalid bearer token";

/// The front's reading of a request head (up to and including its blank line), as the fuzz
/// tests see it: the head tiny_http would get, or the status and reason of the refusal.
pub fn reread_head(raw: &[u8], peer: SocketAddr) -> Result<Vec<u8>, (u16, &'static str)> {
    head::parse_head(raw, peer, u64::MAX).map(|h| h.inner()).map_err(|r| (r.status(), r.why()))
}

/// A chunk-size line's size (the line without its CRLF), as the relay reads it.
pub fn chunk_size(line: &[u8]) -> Result<u64, (u16, &'static str)> {
    head::chunk_size(line).map_err(|r| (r.status(), r.why()))
}

/// Why a connection ends early: an answer for the client, or none (it went away or timed out
/// between requests).
enum Stop {
    Answer(u16, &'static str),
    Quiet,
}

impl From<Refused> for Stop {
    fn from(refused: Refused) -> Stop {
        Stop::Answer(refused.status(), refused.why())
    }
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Stop {
        Stop::Quiet
    }
}

/// Serve one client connection until it closes, fails a limit or is evicted.
pub(super) fn serve(socket: &TcpStream, peer: SocketAddr, inner: &Path, limits: &Limits, slot: &Slot) {
    let ctx = Ctx { peer, inner, limits, slot, token: slot.token() };
    let Ok(client) = Client::new(socket, slot.tls()) else { return };
    let mut input = Input::new(client, limits.read_timeout);
    let mut first = Some(slot.accepted);
    loop {
        slot.set_busy(false);
        let outcome = relay_one(&mut input, first.take(), &ctx);
        input.settle();
        match outcome {
            Ok(true) => continue,
            Ok(false) | Err(Stop::Quiet) => break,
            Err(Stop::Answer(status, why)) => {
                answer(&mut input.client, status, why);
                return;
            }
        }
    }
    input.client.close();
}

/// What every step of a connection's relay needs.
struct Ctx<'a> {
    peer: SocketAddr,
    inner: &'a Path,
    limits: &'a Limits,
    slot: &'a Slot,
    /// The server's token, if it has one.
    token: Option<&'a Secret>,
}

/// Relay one request and its response; `Ok(true)` if the connection may carry another.
fn relay_one(input: &mut Input<'_>, accepted: Option<Instant>, ctx: &Ctx<'_>) -> Result<bool, Stop> {
    let Some(head_len) = read_head(input, accepted, ctx.limits)? else { return Ok(false) };
    let drain_cap = super::guard::safe_drain_bytes() as u64;
    let head = head::parse_head(&input.available()[..head_len], ctx.peer, drain_cap)?;
    input.consume(head_len);
    if head.expect_continue && head.framing != Framing::Length(0) {
        // Only for a client that may send its body: one without the token hears so at once.
        if let Some(token) = ctx.token
            && crate::http::check_bearer(&head, token.expose()).is_err()
        {
            return Err(Stop::Answer(401, UNAUTHORIZED));
        }
        input.client.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let mut out = Out::Held(head.inner());
    match forward_body(input, &head.framing, &mut out, ctx) {
        // Still held: no handler saw it, so the client hears why.
        Err(Stop::Quiet) if input.timed_out && !out.is_open() => {
            return Err(Stop::Answer(408, "request body not received in time"));
        }
        // A handler saw it: it may have answered already (tiny_http closes without draining
        // a refused chunked body), or answers once it sees the body end.
        Err(Stop::Quiet) if out.is_open() => return Ok(early_answer(&mut out, input)),
        other => other?,
    }
    input.deadline = None;
    input.release();
    let answer_closes = copy_response(out.open(ctx)?, &mut input.client)?;
    Ok(!head.close && !answer_closes)
}

/// The answer to a request whose body could not be forwarded to its end, or was answered
/// before it (a refusal), passed on if one comes within `EARLY_ANSWER_WAIT`; then what the
/// client still sends is read off for a while, so that closing with its bytes unread does not
/// reset the connection before it has read the answer. The connection then ends (`false`):
/// where its next request starts is unknown.
#[cold]
fn early_answer(out: &mut Out, input: &mut Input<'_>) -> bool {
    let Out::Open(inner) = out else { return false };
    // The handler sees the body end, so it answers rather than waits for the rest.
    let _ = inner.shutdown(Shutdown::Write);
    if inner.set_read_timeout(Some(EARLY_ANSWER_WAIT)).is_err() || copy_response(inner, &mut input.client).is_err() {
        return false;
    }
    // Through the reads every request takes, bounded by a deadline of their own.
    input.deadline = Some(Instant::now() + EARLY_ANSWER_WAIT);
    while matches!(input.fill(), Ok(n) if n > 0) {
        input.consume(input.available().len());
    }
    false
}

/// Wait for a request head; its length including the blank line, or `None` for a clean close.
fn read_head(input: &mut Input<'_>, accepted: Option<Instant>, limits: &Limits) -> Result<Option<usize>, Stop> {
    match accepted {
        Some(at) => input.deadline = Some(at + limits.header_timeout),
        None if input.available().is_empty() => {
            // Between requests: an idle keep-alive connection may wait as long as a write may
            // (longer than one read of a request may).
            input.deadline = Some(Instant::now() + limits.idle_timeout);
            let per_read = std::mem::replace(&mut input.per_read, limits.idle_timeout);
            let first = input.fill();
            input.per_read = per_read;
            match first {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(_) => return Ok(None),
            }
            input.deadline = Some(Instant::now() + limits.header_timeout);
        }
        None => input.deadline = Some(Instant::now() + limits.header_timeout),
    }
    let mut searched = 0;
    loop {
        if let Some(end) = find(input.available(), searched, b"\r\n\r\n") {
            return Ok(Some(end + 4));
        }
        searched = input.available().len();
        if input.available().len() >= MAX_HEAD {
            return Err(Stop::Answer(431, "request head larger than 64 KiB"));
        }
        match input.fill() {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::TimedOut && !input.available().is_empty() => {
                return Err(Stop::Answer(408, "request head not received in time"));
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Forward a body by its framing; the head goes out with the first `HOLD` bytes of it.
fn forward_body(input: &mut Input<'_>, framing: &Framing, out: &mut Out, ctx: &Ctx<'_>) -> Result<(), Stop> {
    match *framing {
        Framing::Length(n) => {
            if n > HOLD as u64 {
                input.grow_for_body();
            }
            copy_exact(input, n, out, ctx)
        }
        // Written again as sizes and data only: no extensions, no trailers.
        Framing::Chunked => loop {
            let line = input.line(MAX_CHUNK_LINE)?;
            let size = head::chunk_size(&line[..line.len() - 2])?;
            out.write(format!("{size:x}\r\n").as_bytes(), ctx)?;
            if size == 0 {
                return skip_trailers(input).and_then(|()| Ok(out.write(b"\r\n", ctx)?));
            }
            copy_exact(input, size, out, ctx)?;
            let end = input.line(MAX_CHUNK_LINE)?;
            if end != b"\r\n" {
                return Err(Stop::Answer(400, "chunk data longer than its size"));
            }
            out.write(&end, ctx)?;
        },
    }
}

/// The trailer lines of a chunked body, up to its blank line: read and dropped (no route reads
/// trailers), at most `MAX_HEAD` bytes of them.
fn skip_trailers(input: &mut Input<'_>) -> Result<(), Stop> {
    let mut total = 0;
    loop {
        let trailer = input.line(MAX_CHUNK_LINE)?;
        if trailer == b"\r\n" {
            return Ok(());
        }
        total += trailer.len();
        if total > MAX_HEAD {
            return Err(Stop::Answer(431, "chunked body trailers larger than 64 KiB"));
        }
    }
}

/// Copy exactly `n` body bytes from the client; stopped (`Quiet`, which passes the answer on)
/// as soon as the handler answers before the body is all there: a refusal, which the client
/// then hears at once, and which no thread drains at the client's pace.
fn copy_exact(input: &mut Input<'_>, mut n: u64, out: &mut Out, ctx: &Ctx<'_>) -> Result<(), Stop> {
    while n > 0 {
        if out.answered() {
            return Err(Stop::Quiet);
        }
        if input.available().is_empty() {
            // Past the held part, straight from socket to socket.
            if let Out::Open(to) = out
                && let Some(moved) = input.splice_to(to.as_raw_fd(), n)?
            {
                n -= moved as u64;
                continue;
            }
            if input.fill()? == 0 {
                return Err(Stop::Quiet);
            }
        }
        let take = input.available().len().min(usize::try_from(n).unwrap_or(usize::MAX));
        out.write(&input.available()[..take], ctx)?;
        if out.is_open() {
            input.deadline = None;
        }
        input.consume(take);
        n -= take as u64;
    }
    Ok(())
}

/// tiny_http's answer, until it closes the inner connection. (Copied, not spliced: tiny_http
/// writes in small pieces, and splice(2) measured no faster here.) A parked long poll waits
/// here, so small answers go through a small buffer on the stack; a heap buffer is taken only
/// once an answer fills that, and lives only as long as the answer. True when the answer's
/// head says `Connection: close` (streamed bodies, see `http::stream`): this relay cannot
/// check their framing, so the client's connection ends with them.
fn copy_response(upstream: &mut UnixStream, client: &mut Client<'_>) -> Result<bool, Stop> {
    let mut small = [0u8; SMALL_REPLY];
    let mut large = Vec::new();
    let mut closes = None;
    loop {
        let buf: &mut [u8] = if large.is_empty() { &mut small } else { &mut large };
        let n = match upstream.read(buf) {
            Err(e) if closes.is_none() && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Stop::Answer(503, "the server did not answer in time; try again"));
            }
            read => read?,
        };
        if n == 0 {
            return Ok(closes.unwrap_or(false));
        }
        closes = closes.or_else(|| Some(super::heads::says_close(&buf[..n])));
        let full = n == buf.len();
        client.write_all(&buf[..n])?;
        if full && large.len() < LARGE_REPLY_BUFFER {
            large.resize(if large.is_empty() { REPLY_BUFFER } else { LARGE_REPLY_BUFFER }, 0);
        }
    }
}

/// Where a request goes: held here until it is worth a handler thread, then the inner socket.
enum Out {
    Held(Vec<u8>),
    Open(UnixStream),
}

impl Out {
    fn write(&mut self, data: &[u8], ctx: &Ctx<'_>) -> io::Result<()> {
        match self {
            Out::Held(held) if held.len() + data.len() < HOLD => {
                held.extend_from_slice(data);
                Ok(())
            }
            Out::Held(_) => self.open(ctx)?.write_all(data),
            Out::Open(stream) => stream.write_all(data),
        }
    }

    fn is_open(&self) -> bool {
        matches!(self, Out::Open(_))
    }

    /// Whether the handler has begun its answer (or closed), without waiting. Asked only while
    /// body bytes remain: a handler that takes the body answers after its end.
    fn answered(&self) -> bool {
        let Out::Open(inner) = self else { return false };
        let mut fd = libc::pollfd { fd: inner.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd of ours, for a descriptor `inner` keeps open.
        unsafe { libc::poll(&mut fd, 1, 0) > 0 }
    }

    /// The inner connection, opened (and the held bytes sent) if it was not yet. From then
    /// on the connection has a request in flight and may not be evicted.
    fn open(&mut self, ctx: &Ctx<'_>) -> io::Result<&mut UnixStream> {
        if let Out::Held(held) = self {
            let held = std::mem::take(held);
            ctx.slot.set_busy(true);
            *self = Out::Open(connect(ctx.inner, ctx.limits, &held)?);
        }
        match self {
            Out::Open(stream) => Ok(stream),
            Out::Held(_) => Err(ErrorKind::NotConnected.into()),
        }
    }
}

fn connect(inner: &Path, limits: &Limits, held: &[u8]) -> io::Result<UnixStream> {
    let mut stream = UnixStream::connect(inner)?;
    // An answer waits for a parked poll (shorter than `idle_timeout`), or in tiny_http's queue
    // while slow clients hold every handler thread (each freed within a blocked write,
    // `idle_timeout`): three times that, before the client is told 503. A handler not
    // reading waits as long as a client may stall a write.
    stream.set_read_timeout(Some(limits.idle_timeout * ANSWER_WAIT_FACTOR))?;
    stream.set_write_timeout(Some(limits.idle_timeout))?;
    stream.write_all(held)?;
    Ok(stream)
}

/// Where `needle` starts in `hay`, looking only at what is new since `searched` bytes (a
/// byte-at-a-time client must not make each read rescan the whole head).
fn find(hay: &[u8], searched: usize, needle: &[u8]) -> Option<usize> {
    let from = searched.saturating_sub(needle.len() - 1);
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|at| at + from)
}

/// A JSON error for a request refused before tiny_http saw it; the connection then closes.
pub(super) fn answer(client: &mut Client<'_>, status: u16, why: &str) {
    let code = match status {
        401 => "unauthorized",
        408 => "timeout",
        413 | 431 => "too_large",
        500 => "internal",
        503 => "unavailable",
        _ => "bad_request",
    };
    let body = serde_json::json!({"error": why, "code": code}).to_string();
    let length = body.len().to_string();
    let mut headers = vec![("Content-Type", "application/json"), ("Content-Length", length.as_str())];
    if status == 401 {
        headers.push(("WWW-Authenticate", "Bearer"));
    }
    let head = super::heads::closing(status, &headers);
    let _ = client.write_all(&[head.as_bytes(), body.as_bytes()].concat());
    client.close();
}

/// The framing table against a real front and tiny_http (`relay/tests.rs`).
#[cfg(test)]
mod tests;

/// The relay's own pieces, directly: the head search, the fuzz seams, what ends a connection.
#[cfg(test)]
mod unit {
    use super::*;

    fn peer() -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 7], 4000))
    }

    #[test]
    fn the_end_of_a_head_is_found_across_reads_without_rescanning() {
        assert_eq!(find(b"GET / HTTP/1.1\r\n\r\n", 0, b"\r\n\r\n"), Some(14));
        // The blank line split over two reads: the search restarts just before the new bytes.
        let hay = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
        assert_eq!(find(hay, 26, b"\r\n\r\n"), Some(23));
        assert_eq!(find(hay, 27, b"\r\n\r\n"), None, "bytes before `searched - 3` are not looked at again");
        assert_eq!(find(b"\r\n", 0, b"\r\n\r\n"), None);
        assert_eq!(find(b"", 10, b"\r\n\r\n"), None, "a searched count beyond the bytes is no panic");
    }

    #[test]
    fn a_head_is_written_again_with_the_peer_last_and_connection_close() {
        let raw = b"GET /health HTTP/1.1\r\nHost: a\r\nX-Agent-Controller-Peer: 6.6.6.6:1\r\n\r\n";
        let inner = String::from_utf8(reread_head(raw, peer()).unwrap()).unwrap();
        assert!(inner.starts_with("GET /health HTTP/1.1\r\n"), "{inner}");
        assert!(inner.contains("Connection: close\r\n"), "{inner}");
        assert!(!inner.contains("6.6.6.6"), "a client's own peer header is dropped: {inner}");
        assert!(inner.ends_with(&format!("{PEER_HEADER}: 192.0.2.7:4000\r\n\r\n")), "{inner}");
        assert_eq!(reread_head(b"GET / HTTP/2.0\r\n\r\n", peer()), Err((505, "only HTTP/1.0 and HTTP/1.1 are served")));
        assert_eq!(reread_head(b"GET / HTTP/1.1\r\nA: b\nC: d\r\n\r\n", peer()).unwrap_err().0, 400);
    }

    #[test]
    fn chunk_sizes_are_read_strictly() {
        assert_eq!(chunk_size(b"1a"), Ok(26));
        assert_eq!(chunk_size(b"0"), Ok(0));
        assert_eq!(chunk_size(b"").unwrap_err().0, 400);
        assert_eq!(chunk_size(b"-1").unwrap_err().0, 400);
        assert_eq!(chunk_size(b"fffffffffffffffffffff").unwrap_err().0, 400, "no overflow");
    }

    #[test]
    fn a_refusal_is_answered_and_a_broken_read_is_not() {
        assert!(matches!(Stop::from(Refused::Version), Stop::Answer(505, why) if why.contains("HTTP/1.1")));
        assert!(matches!(Stop::from(io::Error::from(ErrorKind::TimedOut)), Stop::Quiet));
    }
}
