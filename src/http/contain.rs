//! A panic in a route ends that one request, not its handler thread: the route runs under
//! `catch_unwind` and a panic is answered 500 with the usual JSON error body.
//!
//! Debug builds (the tests) have a trigger, `GET /__test/panic` on either server, that panics
//! inside a route; release builds compile it out.

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
    catch_unwind(AssertUnwindSafe(|| {
        test_trigger(request);
        route(request)
    }))
    .unwrap_or_else(|panic| {
        Err(ApiError::Internal(format!("internal error: {}", crate::util::panic::message(&*panic))))
    })
}

#[cfg(debug_assertions)]
fn test_trigger(request: &Request) {
    if request.url() == "/__test/panic" {
        panic!("test trigger: a route panicked");
    }
}

#[cfg(not(debug_assertions))]
fn test_trigger(_: &Request) {}
