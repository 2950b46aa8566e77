//! The JSON schemas of `/openapi.json`: every request and response body of the API server,
//! written from the wire types in `protocol/` (and checked against real responses by
//! `tests/openapi.rs`).
//!
//! They are JSON text (`openapi_schemas.json`, one schema per line), parsed when the document is
//! asked for: as text they cost the static binary about a third of what the code building them
//! with `json!` did (some 60 KiB). Requests are closed (`additionalProperties: false`, as the
//! server denies unknown fields); responses list what is always there and stay open, so a field
//! added later is not a lie.

use serde_json::{Value, json};

/// (status, code, what it means) of every error the API answers.
pub fn error_codes() -> &'static [(u16, &'static str, &'static str)] {
    &[
        (400, "bad_request", "the request is malformed (body, query or a value)"),
        (401, "unauthorized", "missing or invalid bearer token"),
        (403, "forbidden", "refused: a browser page on a server without a token"),
        (404, "not_found", "no such session, file or route"),
        (405, "method_not_allowed", "the route does not take this method"),
        (
            409,
            "conflict",
            "not now: no pending confirmation, a wrong confirmation id, an ended session, a schedule name taken",
        ),
        (413, "too_large", "the body is over the limit (1 MiB of JSON)"),
        (500, "internal", "the controller failed"),
        (503, "unavailable", "the controller is shutting down"),
        (507, "storage_full", "the controller's disk or the session's storage is full"),
    ]
}

const SCHEMAS: &str = include_str!("openapi_schemas.json");

/// `components`: the schemas, the error codes of `Error` filled in from `error_codes`, the
/// bearer scheme.
pub fn components() -> Value {
    let mut components: Value = serde_json::from_str(SCHEMAS).unwrap_or_default();
    let codes: Vec<&str> = error_codes().iter().map(|(_, c, _)| *c).collect();
    components["schemas"]["Error"]["properties"]["code"]["enum"] = json!(codes);
    components
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schemas_are_json_with_every_body() {
        let c = super::components();
        for name in ["CreateSession", "Session", "CreateSchedule", "Schedule", "Error"] {
            assert!(c["schemas"][name].is_object(), "{name} missing");
        }
        assert_eq!(c["schemas"]["Error"]["properties"]["code"]["enum"][0], "bad_request");
    }
}
