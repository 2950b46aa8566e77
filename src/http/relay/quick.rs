//! The quick lane: a request the relay holds whole (head and a body with a length under
//! `HOLD`; chunked bodies are left to tiny_http, which decodes them) whose route is one of the
//! server's `QuickRoutes` is served right here, on the connection's thread. The worker's poll,
//! result and heartbeat come several times per agent step, and this spares each of them
//! tiny_http's accept, its connection thread and the handler queue (three thread wake-ups and
//! a Unix connection each way).
//!
//! What the pool does for every request is done here too: the browser guard, a panic contained
//! to a 500, errors logged as `http::finish` logs them, the answer a JSON body. A parked poll
//! waits on this thread, for its `Responder` (sent by whoever takes it: the event, its
//! deadline, shutdown) or, failing that, as long as a relayed answer may take.

use super::head::Head;
use super::{ANSWER_WAIT_FACTOR, Ctx, Input, Stop, json_answer};
use crate::error::ApiError;
use crate::http::contain::{self, contain};
use crate::http::guard::BrowserGuard;
use crate::http::{Incoming, Quick, QuickRoutes, log_error};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

/// A server's quick routes and the guard its pool applies.
#[derive(Clone)]
pub struct Lane {
    pub routes: QuickRoutes,
    pub guard: BrowserGuard,
}

/// Serve a held request (`head` as the front read it, then its `body`) if its route is quick;
/// `None` when it is not, and the request is to be relayed.
pub(super) fn serve(
    lane: &Lane,
    request: &Head,
    body: &[u8],
    input: &mut Input<'_>,
    ctx: &Ctx<'_>,
) -> Option<Result<(), Stop>> {
    let close = request.close;
    // In flight from here (not evictable), as a relayed request is once a handler may see it.
    ctx.slot.set_busy(true);
    let outcome = match lane.guard.refusal(request) {
        Some(err) => Err(err),
        None => contain(|| {
            contain::quick_test_trigger(request.url());
            (lane.routes)(request, body).transpose()
        })
        .transpose()?,
    };
    Some(match outcome {
        Ok(Quick::Json(status, body)) => write_json(input, status, &body, false, close),
        Ok(Quick::Park(park)) => wait_parked(park, input, ctx, close),
        Err(err) => {
            log_error(request, &err);
            let unauthorized = matches!(err, ApiError::Unauthorized);
            write_json(input, err.status(), err.body().as_bytes(), unauthorized, close)
        }
    })
}

/// Park the request and wait for its answer, as long as a relayed answer may take.
///
/// On a plain connection whoever takes the `Responder` (mostly a session thread, with the
/// worker's next command) writes the answer onto the socket itself when it goes out whole at
/// once: the worker has it a thread wake-up sooner. What does not (TLS, a full socket buffer)
/// is written here. The socket is a clone, so a late answer never writes to a reused one, and
/// it sits behind a lock this thread empties when it gives up, so a late answer never follows
/// the 503 either.
fn wait_parked(
    park: Box<dyn FnOnce(crate::wait::park::Responder) + Send>,
    input: &mut Input<'_>,
    ctx: &Ctx<'_>,
    close: bool,
) -> Result<(), Stop> {
    let direct = Arc::new(Mutex::new(input.client.plain().and_then(|s| s.try_clone().ok())));
    let giver = Arc::clone(&direct);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let respond: crate::wait::park::Responder = Box::new(move |body| {
        let answer = json_answer(200, &body, false, close);
        // Sent and handed on under the lock: this thread, once it has taken the lock, either
        // finds the rest in the channel or knows nothing was sent.
        let socket = giver.lock().unwrap_or_else(PoisonError::into_inner);
        let left = match &*socket {
            Some(socket) => send_at_once(socket, answer),
            None => answer,
        };
        let _ = tx.send(left);
    });
    let parked = catch_unwind(AssertUnwindSafe(|| park(respond)));
    let left = parked.as_ref().ok().and_then(|()| rx.recv_timeout(ctx.limits.idle_timeout * ANSWER_WAIT_FACTOR).ok());
    let left = left.or_else(|| {
        let mut socket = direct.lock().unwrap_or_else(PoisonError::into_inner);
        *socket = None;
        rx.try_recv().ok()
    });
    match (left, parked) {
        (Some(left), _) => Ok(input.client.write_all(&left)?),
        (None, Ok(())) => Err(Stop::Answer(503, "the server did not answer in time; try again")),
        (None, Err(panic)) => {
            log::error!("parking a long poll panicked: {}", crate::util::panic::message(&*panic));
            Err(Stop::Answer(500, "internal error"))
        }
    }
}

/// Write what the socket takes without waiting; what is left of `answer`.
fn send_at_once(socket: &TcpStream, mut answer: Vec<u8>) -> Vec<u8> {
    // SAFETY: a buffer of ours, on a descriptor `socket` keeps open.
    let sent = unsafe {
        libc::send(socket.as_raw_fd(), answer.as_ptr().cast(), answer.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
    };
    answer.drain(..usize::try_from(sent).unwrap_or(0));
    answer
}

fn write_json(input: &mut Input<'_>, status: u16, body: &[u8], unauthorized: bool, close: bool) -> Result<(), Stop> {
    Ok(input.client.write_all(&json_answer(status, body, unauthorized, close))?)
}
