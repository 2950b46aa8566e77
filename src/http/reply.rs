//! What a route hands back and how it becomes exactly one response: `Reply` (a response, a
//! parked long poll, or a stream), JSON bodies and errors, `finish` (the one dispatch of a
//! handler's result), and the `Responder` that answers a parked poll once.

use super::drain::{send, send_off_pool};
use super::incoming::Incoming;
use super::stream::{Stream, stream};
use crate::error::ApiError;
use crate::wait::park::Responder;
use serde::Serialize;
use std::io::Read;
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

/// The answer to a parked request: the JSON body it is given with its status, sent once.
pub fn responder(request: Request) -> Responder {
    Box::new(move |status, body| send(request, json_bytes_response(status, body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_always_built() {
        let h = header("X-Name", "a\nb\u{e9}c\u{7f}");
        assert_eq!(h.value.as_str(), "a_b_c_");
    }

    #[test]
    fn a_body_that_cannot_be_encoded_is_a_500_saying_so() {
        let (status, body) = encoded(200, &serde_json::json!({"ok": true}));
        assert_eq!((status, body), (200, br#"{"ok":true}"#.to_vec()));
        let mut map = std::collections::BTreeMap::new();
        map.insert((1, 2), "tuple keys are no JSON");
        let (status, body) = encoded(200, &map);
        assert_eq!(status, 500);
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(body["error"].as_str().unwrap().contains("cannot encode response"), "{body}");
    }

    #[test]
    fn an_unauthorized_answer_names_the_scheme() {
        let resp = error_response(&ApiError::Unauthorized);
        assert_eq!(resp.status_code().0, 401);
        assert!(resp.headers().iter().any(|h| h.field.equiv("WWW-Authenticate") && h.value == "Bearer"));
        let resp = json_response(201, &serde_json::json!([]));
        assert!(resp.headers().iter().any(|h| h.field.equiv("Content-Type") && h.value == "application/json"));
    }
}
