//! Reading requests: headers, the bearer token (compared in constant time), bounded bodies,
//! JSON with errors that never echo a value, and URLs split into decoded segments.

use crate::error::ApiError;
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;
use std::io::Read;
use subtle::ConstantTimeEq;
use tiny_http::Request;

pub fn header_value<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

/// `Authorization: Bearer <token>` check; an empty expected token means auth is off.
pub fn check_bearer(request: &(impl super::Incoming + ?Sized), expected: &str) -> Result<(), ApiError> {
    if expected.is_empty() {
        return Ok(());
    }
    let given = request
        .header("Authorization")
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .unwrap_or("");
    // Constant time in the bytes; only the lengths may show.
    if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) { Ok(()) } else { Err(ApiError::Unauthorized) }
}

/// Read a whole body, refusing more than `limit` bytes.
pub fn read_body(request: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    let too_large = || ApiError::TooLarge(format!("request body is larger than the {} byte limit", limit));
    if request.body_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    // The declared length at once (at most `limit`): grown by doubling, a 17 MiB result
    // would take 32 MiB.
    let mut body = Vec::with_capacity(request.body_length().unwrap_or(0));
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
    parse_json(&read_body(request, limit)?)
}

/// An API request body as `T`, strictly (`protocol::strict`: an array is no object): an
/// empty body and bad JSON are 400s that never echo a value.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = parse_worker_json(body)?;
    crate::protocol::strict::from_value(&value).map_err(bad_json)
}

/// A worker's message as `T`, as tolerant as serde_json (and without a copy of a large result).
pub fn read_worker_json<T: DeserializeOwned>(request: &mut Request, limit: usize) -> Result<T, ApiError> {
    parse_worker_json(&read_body(request, limit)?)
}

/// See `read_worker_json`.
pub fn parse_worker_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest("request body is empty; expected a JSON object".into()));
    }
    serde_json::from_slice(body).map_err(bad_json)
}

fn bad_json(e: serde_json::Error) -> ApiError {
    ApiError::BadRequest(format!("invalid JSON body: {}", describe_json_error(&e)))
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
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

pub use crate::util::percent_encode;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_nested_100_000_deep_is_a_400() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_json::<serde_json::Value>(deep.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
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
