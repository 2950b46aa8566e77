//! `GET /openapi.json`: the API server's routes as an OpenAPI 3.1 document, with request and
//! response schemas and the error shape.
//!
//! The table `OPERATIONS` is written by hand next to the router it describes; it cannot
//! drift unnoticed: `tests/openapi.rs` reads the router's match arms in `api.rs` and fails
//! when a route is missing here (or described here but not routed), validates the document
//! with a standard validator, and checks real responses against the schemas. The schemas
//! themselves are JSON text read by `openapi_schemas.rs`.

use super::openapi_schemas::{components, error_codes};
use serde_json::{Map, Value, json};

/// One operation: method, path (OpenAPI template), summary, its parameters, request body
/// schema, success status and response, and the error statuses it may answer.
struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    tag: &'static str,
    query: &'static [(&'static str, &'static str)],
    body: Option<&'static str>,
    ok: (u16, Response),
    errors: &'static [u16],
}

/// What a success looks like.
enum Response {
    /// JSON matching a component schema.
    Json(&'static str),
    /// A JSON array of a component schema.
    List(&'static str),
    /// Bytes of this media type.
    Bytes(&'static str),
}

const SESSION_ERRORS: &[u16] = &[401, 404];
/// The body of an operation that takes raw bytes, not JSON.
const RAW: &str = "(bytes)";

const fn op(
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    ok: (u16, Response),
    errors: &'static [u16],
    summary: &'static str,
) -> Op {
    Op { method, path, summary, tag, query: &[], body: None, ok, errors }
}

impl Op {
    const fn body(mut self, schema: &'static str) -> Op {
        self.body = Some(schema);
        self
    }

    const fn query(mut self, query: &'static [(&'static str, &'static str)]) -> Op {
        self.query = query;
        self
    }
}

use Response::{Bytes, Json, List};

/// Every route of `api.rs`, in its order.
const OPERATIONS: &[Op] = &[
    op("get", "/health", "meta", (200, Json("Health")), &[], "Liveness, counts, and whether the API wants a token"),
    op("get", "/", "page", (200, Bytes("text/html")), &[], "The web page"),
    op("get", "/web/{name}", "page", (200, Bytes("*/*")), &[404], "A file of the web page (script, style, icon)"),
    op("get", "/llms", "meta", (200, List("Llm")), &[401], "The model endpoints a session may ask for"),
    op("get", "/openapi.json", "meta", (200, Json("OpenApi")), &[401], "This document"),
    op("get", "/metrics", "meta", (200, Bytes("text/plain")), &[401], "Prometheus metrics (text format 0.0.4)"),
    op("get", "/workers", "workers", (200, List("Worker")), &[401], "Workers and their leases"),
    op("post", "/sessions", "sessions", (201, Json("Session")), &[400, 401, 413, 503, 507], "Create a session")
        .body("CreateSession"),
    op("get", "/sessions", "sessions", (200, List("SessionSummary")), &[401], "Sessions, newest first")
        .query(&[("schedule", "Only the runs of this schedule")]),
    op("get", "/sessions/{id}", "sessions", (200, Json("Session")), SESSION_ERRORS, "One session"),
    op(
        "delete",
        "/sessions/{id}",
        "sessions",
        (200, Json("Stopped")),
        &[400, 401, 404, 409],
        "Stop a session, or delete an ended one",
    )
    .query(&[
        ("purge", "true: delete the ended session and its folder (409 while it runs); answers {purged: true}"),
        ("report", "false: no model call writes a report on the stop (the report says only that it was stopped)"),
    ]),
    op("get", "/sessions/{id}/log", "sessions", (200, Json("LogPage")), &[400, 401, 404], "The session's log").query(
        &[
            ("after", "Entries after this sequence number (default 0)"),
            ("wait", "Long-poll up to this many seconds for a new entry (at most 60)"),
        ],
    ),
    op("get", "/sessions/{id}/report", "sessions", (200, Json("Report")), SESSION_ERRORS, "The report (markdown)"),
    op("get", "/sessions/{id}/notes", "sessions", (200, List("Note")), SESSION_ERRORS, "The notes"),
    op(
        "get",
        "/sessions/{id}/steps",
        "sessions",
        (200, List("Step")),
        SESSION_ERRORS,
        "The step log, one per tool call",
    ),
    op(
        "get",
        "/sessions/{id}/export",
        "sessions",
        (200, Bytes("text/x-python")),
        &[400, 401, 404],
        "The run as a script to keep: a browser session's acting steps as Playwright (Python), a shell session's commands as sh; secrets come from environment variables it names",
    )
    .query(&[("format", "playwright or sh (default: the session's own)")]),
    op(
        "get",
        "/sessions/{id}/conversation",
        "sessions",
        (200, Json("Conversation")),
        SESSION_ERRORS,
        "The conversation with the model so far (conversation_log.json's shape), from the journal",
    ),
    op("get", "/sessions/{id}/files", "files", (200, List("File")), SESSION_ERRORS, "The session's files"),
    op(
        "get",
        "/sessions/{id}/files/zip",
        "files",
        (200, Bytes("application/zip")),
        SESSION_ERRORS,
        "All files, zipped",
    ),
    op("get", "/sessions/{id}/files/{name}", "files", (200, Bytes("*/*")), SESSION_ERRORS, "One file (ETag, 304)"),
    op(
        "put",
        "/sessions/{id}/inputs/{name}",
        "files",
        (201, Json("File")),
        &[400, 401, 404, 409, 413, 507],
        "Hand the session an input file (the raw body; 200 when it replaces one of that name). The name is one \
         file (letters, digits, '.', '_', '-', spaces; no leading dot), never a path; 409 once the session ended \
         or when it produced a file of that name",
    )
    .body(RAW),
    op(
        "get",
        "/sessions/{id}/recording",
        "files",
        (200, Bytes("image/gif")),
        SESSION_ERRORS,
        "The recording: an animated GIF, a frame per acting step, secret fields painted over (404: not recorded)",
    ),
    op(
        "get",
        "/sessions/{id}/confirmation",
        "confirmations",
        (200, Json("ConfirmationState")),
        SESSION_ERRORS,
        "The pending confirmation",
    ),
    op(
        "post",
        "/sessions/{id}/confirmation",
        "confirmations",
        (200, Json("Ok")),
        &[400, 401, 404, 409],
        "Approve it (perhaps edited) or deny it (perhaps with a reason)",
    )
    .body("ConfirmationAnswer"),
    op(
        "post",
        "/sessions/{id}/answer",
        "confirmations",
        (200, Json("Ok")),
        &[400, 401, 404, 409],
        "Answer the question the agent asked a person (ask_user)",
    )
    .body("Answer"),
    op(
        "post",
        "/sessions/{id}/pause",
        "takeover",
        (202, Json("PauseAnswer")),
        &[400, 401, 404, 409],
        "Pause after the step in flight (status `paused`); a stop still ends it",
    ),
    op(
        "post",
        "/sessions/{id}/act",
        "takeover",
        (200, Json("ActResult")),
        &[400, 401, 404, 409, 503],
        "While paused: run one worker tool of the session as the person (400 for other tools or bad input). \
         The request waits for the result parked, holding no handler thread; 409 when a stop or the end of \
         the pause comes first, 503 when the tool has not answered within the longer of the command and \
         download timeouts plus 30 s",
    )
    .body("Act"),
    op(
        "post",
        "/sessions/{id}/resume",
        "takeover",
        (202, Json("Resumed")),
        &[400, 401, 404, 409],
        "Hand back to the model, which is told what the person did and their note",
    )
    .body("Resume"),
    op(
        "post",
        "/sessions/{id}/replay",
        "sessions",
        (201, Json("Session")),
        &[400, 401, 404, 409, 503],
        "Re-run a finished session's steps without the model (it takes over where the page changed)",
    )
    .body("Replay"),
    op(
        "get",
        "/profiles",
        "workers",
        (200, List("Profile")),
        &[401],
        "The browser profiles workers keep, and who uses each",
    ),
    op(
        "delete",
        "/profiles/{name}",
        "workers",
        (200, Json("Deleted")),
        &[401, 404, 409, 503],
        "Delete a browser profile: its worker removes the folder (409 while a session runs in it, 503 while \
         its worker is away)",
    ),
    op("post", "/schedules", "schedules", (201, Json("Schedule")), &[400, 401, 409, 413], "Create a schedule")
        .body("CreateSchedule"),
    op("get", "/schedules", "schedules", (200, List("Schedule")), &[401], "Schedules with their last and next run"),
    op("get", "/schedules/{name}", "schedules", (200, Json("Schedule")), &[401, 404], "One schedule"),
    op(
        "delete",
        "/schedules/{name}",
        "schedules",
        (200, Json("Deleted")),
        &[401, 404, 409],
        "Delete a schedule (409 for one from config.yaml); a run going on goes on",
    ),
    op(
        "post",
        "/schedules/{name}/run",
        "schedules",
        (201, Json("Session")),
        &[401, 404, 409, 503, 507],
        "Run it now (409 while its previous run goes on)",
    ),
];

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for op in OPERATIONS {
        let item = paths.entry(op.path).or_insert_with(|| json!({}));
        item[op.method] = operation(op);
    }
    let tags: Vec<Value> = ["sessions", "schedules", "files", "confirmations", "takeover", "workers", "meta", "page"]
        .iter()
        .map(|t| json!({"name": t}))
        .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agent-controller API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "REST API of the agent-controller daemon: sessions of an LLM agent driving a worker, \
    their logs, files, confirmations, and the workers. Errors are `{error, code}` with the matching status. \
    With `server.api_token` set, every route but `/health` and the web page's files needs `Authorization: Bearer <token>`.",
            "license": {"name": "MIT", "identifier": "MIT"}
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "tags": tags,
        "paths": paths,
        "components": components(),
    })
}

fn operation(op: &Op) -> Value {
    let mut params: Vec<Value> = path_params(op.path)
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    params.extend(op.query.iter().map(|(name, description)| {
        let schema = if matches!(*name, "after" | "wait") {
            json!({"type": "integer", "minimum": 0})
        } else {
            json!({"type": "string"})
        };
        json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema})
    }));
    let mut responses = Map::new();
    let content = match &op.ok.1 {
        Response::Json(schema) => json!({"application/json": {"schema": reference(schema)}}),
        Response::List(schema) => {
            json!({"application/json": {"schema": {"type": "array", "items": reference(schema)}}})
        }
        Response::Bytes(media) => json!({*media: {"schema": {"type": "string", "contentMediaType": media}}}),
    };
    responses.insert(op.ok.0.to_string(), json!({"description": "success", "content": content}));
    if op.path.contains("/files/{name}") {
        responses.insert("304".into(), json!({"description": "not modified (If-None-Match matched the ETag)"}));
    }
    for status in op.errors.iter().chain(&[405, 500]) {
        responses.insert(status.to_string(), error_response(*status));
    }
    let operation_id = format!("{}{}", op.method, op.path.replace(['/', '{', '}', '.'], "_"));
    let mut value = json!({
        "summary": op.summary,
        "operationId": operation_id.trim_end_matches('_'),
        "tags": [op.tag],
        "parameters": params,
        "responses": responses,
    });
    match op.body {
        Some(RAW) => {
            let bytes = json!({"type": "string", "contentMediaType": "application/octet-stream"});
            value["requestBody"] =
                json!({"required": true, "content": {"application/octet-stream": {"schema": bytes}}});
        }
        Some(body) => {
            value["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": reference(body)}}});
        }
        None => {}
    }
    if !op.errors.contains(&401) {
        value["security"] = json!([]);
    }
    value
}

fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

fn reference(schema: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{schema}")})
}

fn error_response(status: u16) -> Value {
    let (code, description) =
        error_codes().iter().find(|(s, _, _)| *s == status).map_or(("internal", "error"), |(_, c, d)| (*c, *d));
    json!({
        "description": description,
        "content": {"application/json": {
            "schema": reference("Error"),
            "example": {"error": description, "code": code}
        }}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_unique_and_names_its_parameters() {
        let doc = document();
        let mut ids = std::collections::BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                assert!(ids.insert(op["operationId"].as_str().unwrap().to_string()), "{method} {path}");
                let named = op["parameters"].as_array().unwrap().iter().filter(|p| p["in"] == "path").count();
                assert_eq!(named, path_params(path).count(), "{method} {path}");
            }
        }
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let text = doc.to_string();
        for (i, _) in text.match_indices("#/components/schemas/") {
            let name: String = text[i + 21..].chars().take_while(|c| c.is_alphanumeric()).collect();
            assert!(schemas.contains_key(&name), "{name} is referenced but not defined");
        }
    }
}
