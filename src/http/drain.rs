//! Sending a response: `send` (a client that went away is no error), and `send_off_pool`.
//! After a response tiny_http reads the rest of an unread body with no socket timeout, so a
//! request whose body may stall is answered on a short-lived thread of its own (at most
//! `DRAINING_MAX` at once), never on a pool thread.

use super::body::header_value;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use tiny_http::{Request, Response};

/// Answer a request, ignoring a client that already went away.
pub fn send<R: Read>(request: Request, response: Response<R>) {
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
pub(crate) fn send_off_pool<R: Read + Send + 'static>(request: Request, response: Response<R>) {
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
