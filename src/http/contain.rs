//! A panic in a route ends that one request, not its handler thread: the route runs under
//! `catch_unwind` and a panic is answered 500 with the usual JSON error body.
//!
//! Debug builds (the tests) have triggers on either server, `GET /__test/panic`, which panics
//! inside a route, and `GET /__test/stall`, which holds its handler thread 8 s first. Release
//! builds compile them out.

use super::Reply;
use crate::error::ApiError;
use std::panic::{AssertUnwindSafe, catch_unwind};
use tiny_http::Request;

/// Run `route` on `request`; a panic becomes `ApiError::Internal`.
pub fn contained(
    request: &mut Request,
    route: impl FnOnce(&mut Request) -> Result<Reply, ApiError>,
) -> Result<Reply, ApiError> {
    // Nothing the route held is used after a panic but the request itself, whose state a route
    // only advances by reading its body: answering it is still sound.
    contain(|| {
        test_trigger(request);
        route(request)
    })
}

/// Run `route`; a panic becomes `ApiError::Internal`.
fn contain<T>(route: impl FnOnce() -> Result<T, ApiError>) -> Result<T, ApiError> {
    catch_unwind(AssertUnwindSafe(route)).unwrap_or_else(|panic| {
        Err(ApiError::Internal(format!("internal error: {}", crate::util::panic::message(&*panic))))
    })
}

#[cfg(debug_assertions)]
fn test_trigger(request: &Request) {
    match request.url() {
        "/__test/panic" => panic!("test trigger: a route panicked"),
        "/__test/stall" => std::thread::sleep(std::time::Duration::from_secs(8)),
        _ => {}
    }
}

#[cfg(not(debug_assertions))]
fn test_trigger(_: &Request) {}
