//! The JSON schemas of `/openapi.json`: every request and response body of the API server,
//! written from the wire types in `protocol/` (and checked against real responses by
//! `tests/openapi.rs`).
//!
//! Requests are closed (`additionalProperties: false`, as the server denies unknown fields);
//! responses list what is always there and stay open, so a field added later is not a lie.

use serde_json::{Value, json};

/// (status, code, what it means) of every error the API answers.
pub fn error_codes() -> &'static [(u16, &'static str, &'static str)] {
    &[
        (400, "bad_request", "the request is malformed (body, query or a value)"),
        (401, "unauthorized", "missing or invalid bearer token"),
        (403, "forbidden", "refused: a browser page on a server without a token"),
        (404, "not_found", "no such session, file or route"),
        (405, "method_not_allowed", "the route does not take this method"),
        (409, "conflict", "not now: no pending confirmation, a wrong confirmation id, an ended session"),
        (413, "too_large", "the body is over the limit (1 MiB of JSON)"),
        (500, "internal", "the controller failed"),
        (503, "unavailable", "the controller is shutting down"),
        (507, "storage_full", "the controller's disk or the session's storage is full"),
    ]
}

fn string() -> Value {
    json!({"type": "string"})
}

fn maybe(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn closed(properties: Value, required: &[&str]) -> Value {
    let mut v = object(properties, required);
    v["additionalProperties"] = json!(false);
    v
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub fn components() -> Value {
    let mut schemas = serde_json::Map::new();
    for part in [basics(), requests(), sessions(), records(), others()] {
        if let Value::Object(map) = part {
            schemas.extend(map);
        }
    }
    json!({
        "schemas": schemas,
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
            "description": "server.api_token (or AGENT_CONTROLLER_TOKEN); off when empty"}},
    })
}

fn basics() -> Value {
    let codes: Vec<&str> = error_codes().iter().map(|(_, c, _)| *c).collect();
    json!({
        "Error": closed(json!({"error": string(), "code": {"type": "string", "enum": codes}}), &["error", "code"]),
        "Ok": object(json!({"ok": {"const": true}}), &["ok"]),
        "OpenApi": object(json!({"openapi": string(), "paths": {"type": "object"}}), &["openapi", "paths"]),
        "Status": {"type": "string", "enum": ["waiting", "running", "confirming", "finished", "error", "stopped"]},
        "Mode": {"type": "string", "enum": ["explore", "task"]},
        "SessionType": {"type": "string", "enum": ["browser", "app", "shell"]},
        "Health": object(json!({
            "status": {"const": "ok"}, "version": string(),
            "sessions": {"type": "object", "additionalProperties": count(), "description": "sessions by status"},
            "workers": {"description": "connected workers", "type": "integer", "minimum": 0},
            "auth": {"type": "boolean", "description": "whether the API wants a bearer token"},
        }), &["status", "version", "sessions", "workers"]),
        "Llm": object(json!({
            "name": string(), "provider": {"type": "string", "enum": ["anthropic", "openai", "gemini"]},
            "model": string(), "default": {"type": "boolean"},
        }), &["name", "provider", "model", "default"]),
    })
}

fn requests() -> Value {
    let secret = json!({"type": "string", "description": "kept in memory only, never written or shown"});
    json!({
        "CreateSession": closed(json!({
            "mode": reference("Mode"),
            "target": {"type": "string", "description": "a URL (browser), a window title (app) or a host (shell)"},
            "type": reference("SessionType"),
            "instruction": {"type": "string", "description": "what to do (task mode: required)"},
            "goal": {"type": "string", "description": "what to find out (explore mode)"},
            "credentials": closed(json!({
                "username": string(), "password": secret, "login_url": string(),
                "username_selector": string(), "password_selector": string(), "submit_selector": string(),
            }), &["username", "password"]),
            "notifications": closed(json!({
                "telegram": closed(json!({"bot_token": secret, "chat_id": string()}), &["bot_token", "chat_id"]),
                "webhook": closed(json!({"url": secret, "method": {"type": "string", "enum": ["POST", "PUT"]}}), &["url"]),
            }), &[]),
            "worker": {"type": "string", "description": "a worker id or hostname to use"},
            "llm": {"type": "string", "description": "a model endpoint by name (GET /llms); `api` when absent"},
            "model": {"type": "string", "description": "another model on that endpoint"},
            "options": closed(json!({
                "max_turns": {"type": "integer", "minimum": 1},
                "auto_confirm": {"type": "boolean"},
                "dry_run": {"type": "boolean"},
                "lease_timeout_s": count(),
                "screenshot_width": {"type": "integer", "minimum": 320, "maximum": 3840},
                "screenshot_quality": {"type": "integer", "minimum": 10, "maximum": 95},
                "approval": reference("Approval"),
            }), &[]),
        }), &["mode", "target"]),
        "Approval": {"type": "string", "enum": ["auto", "validator", "human"],
            "description": "who approves run_command / write_file: nobody, a validator model call, or a person"},
        "ConfirmationAnswer": closed(json!({"confirmation_id": string(), "approved": {"type": "boolean"},
            "reason": {"type": "string", "description": "why it is denied (the agent is told)"},
            "edited_command": {"type": "string", "description": "approve this command instead (with approved: true)"}}),
            &["confirmation_id", "approved"]),
        "Answer": closed(json!({"text": string(), "question_id": string()}), &["text"]),
        "Replay": closed(json!({
            "params": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "fills {{name}} in the recorded steps, or replaces a recorded value `name`"},
            "instruction": {"type": "string", "description": "for the model, if the replay hands over to it"},
        }), &[]),
    })
}

fn sessions() -> Value {
    json!({
        "SessionSummary": object(json!({
            "session_id": string(), "status": reference("Status"), "mode": reference("Mode"),
            "type": reference("SessionType"), "target": string(), "created_at": string(), "turn": count(),
            "schedule": reference("ScheduleMark"),
        }), &["session_id", "status", "mode", "type", "target", "created_at", "turn"]),
        "Session": object(json!({
            "session_id": string(), "status": reference("Status"), "mode": reference("Mode"),
            "type": reference("SessionType"), "target": string(),
            "instruction": maybe(string()), "goal": maybe(string()),
            "options": object(json!({
                "max_turns": count(), "auto_confirm": {"type": "boolean"}, "dry_run": {"type": "boolean"},
                "lease_timeout_s": count(), "screenshot_width": count(), "screenshot_quality": count(),
                "approval": reference("Approval"),
            }), &["max_turns", "auto_confirm"]),
            "has_credentials": {"type": "boolean"},
            "notifications": object(json!({"telegram": {"type": "boolean"}, "webhook": {"type": "boolean"}}), &[]),
            "requested_worker": maybe(string()),
            "worker": maybe(string()),
            "llm": maybe(object(json!({"name": string(), "provider": string(), "model": string()}), &["name", "provider", "model"])),
            "turn": count(), "max_turns": count(), "created_at": string(), "finished_at": maybe(string()),
            "confirmation_pending": maybe(reference("Confirmation")),
            "question_pending": object(json!({"question_id": string(), "question": string()}), &["question_id", "question"]),
            "replay": object(json!({"source": string(), "params": {"type": "array", "items": string()},
                "diverged": {"type": "string", "description": "where the replay stopped matching; the model took over"}}), &["source"]),
            "schedule": reference("ScheduleMark"),
            "files": count(),
            "usage": object(json!({
                "input_tokens": count(), "output_tokens": count(),
                "cache_creation_input_tokens": count(), "cache_read_input_tokens": count(),
            }), &["input_tokens", "output_tokens"]),
            "images": object(json!({"sent": count(), "skipped": count(), "bytes": count(), "estimated_tokens": count()}),
                &["sent", "skipped"]),
            "waiting_for": {"type": "string", "description": "while waiting: for which worker, and why none is free"},
            "error": maybe(string()), "summary": maybe(string()),
        }), &["session_id", "status", "mode", "type", "target", "options", "turn", "max_turns", "created_at", "files", "usage"]),
        "Confirmation": object(json!({
            "confirmation_id": string(), "action": string(), "description": string(),
            "details": {"description": "what the agent gave: a list, an object or a text"},
            "risk_level": string(),
        }), &["confirmation_id", "action", "description", "risk_level"]),
        "ConfirmationState": {"oneOf": [
            object(json!({"pending": {"const": false}}), &["pending"]),
            {"allOf": [reference("Confirmation"), object(json!({"pending": {"const": true}}), &["pending"])]},
        ]},
        "Stopped": object(json!({"stopped": {"const": true}, "status": reference("Status")}), &["stopped", "status"]),
    })
}

fn records() -> Value {
    json!({
        "LogEntry": object(json!({
            "seq": count(), "ts": string(),
            "type": {"type": "string", "enum": ["system", "assistant", "tool", "result", "confirmation", "error"]},
            "text": string(), "data": {"description": "structured detail, when there is some"},
        }), &["seq", "ts", "type", "text"]),
        "LogPage": object(json!({
            "entries": {"type": "array", "items": reference("LogEntry")},
            "next": {"type": "integer", "minimum": 0, "description": "pass as `after` to get what follows"},
        }), &["entries", "next"]),
        "Note": object(json!({"title": string(), "content": string(), "ts": string()}), &["content", "ts"]),
        "Report": object(json!({"report": {"type": "string", "description": "markdown; empty until written"}}), &["report"]),
        "Step": object(json!({
            "step": count(), "turn": count(), "tool": string(),
            "args": {"type": "object", "description": "the call's arguments, secrets masked"},
            "observation": string(), "screenshot": maybe(string()), "duration_ms": count(),
            "dry_run": {"type": "boolean"}, "is_error": {"type": "boolean"}, "ts": string(),
        }), &["step", "tool"]),
        "Conversation": object(json!({
            "session_id": string(), "system": string(),
            "tools": {"type": "array", "items": string()},
            "messages": {"type": "array", "items": {"type": "object", "description": "role and content blocks; images described, not included"}},
            "compacted": {"description": "null, or the summary that replaces the first `replaced_messages` in the model's view"},
        }), &["session_id", "system", "tools", "messages"]),
        "File": object(json!({
            "filename": string(), "size_kb": count(),
            "type": {"type": "string", "enum": ["download", "generated", "screenshot"]},
        }), &["filename", "size_kb", "type"]),
    })
}

fn others() -> Value {
    let when = "the next or last run, RFC 3339 UTC";
    json!({
        "ScheduleMark": object(json!({"name": string(), "run": count()}), &["name", "run"]),
        "CreateSchedule": closed(json!({
            "name": {"type": "string", "description": "1 to 64 letters, digits, '-', '_', '.' (a file name)"},
            "every": {"type": "string", "description": "30s, 15m, 1h, 1d"},
            "cron": {"type": "string", "description": "five fields: minute hour day-of-month month day-of-week"},
            "tz": {"type": "string", "description": "for cron: an IANA zone (the host's when absent)"},
            "session": {"type": "object", "description": "a POST /sessions body: each run is a new session"},
            "replay_of": {"type": "string", "description": "a finished session: each run replays it"},
            "params": {"type": "object", "additionalProperties": {"type": "string"}},
            "catch_up": {"type": "boolean", "description": "one run at start for runs missed while down"},
            "notify": {"type": "object", "description": "where an error or a diverged replay is reported"},
        }), &["name"]),
        "Schedule": object(json!({
            "name": string(), "from": {"type": "string", "enum": ["api", "config"]},
            "every": string(), "cron": string(), "tz": string(), "session": {"type": "object"},
            "replay_of": string(), "catch_up": {"type": "boolean"}, "created_at": string(),
            "runs": count(), "skipped": count(), "running": {"type": "boolean"},
            "next_run": {"anyOf": [{"type": "string", "description": when}, {"type": "null"}]},
            "last_run": maybe(object(json!({
                "run": count(), "session_id": maybe(string()), "status": string(),
                "at": {"type": "string", "description": when}, "error": maybe(string()),
            }), &["run", "session_id", "status", "at"])),
        }), &["name", "from", "catch_up", "runs", "skipped", "running", "next_run", "last_run"]),
        "Deleted": object(json!({"deleted": {"const": true}}), &["deleted"]),
        "Worker": object(json!({
            "worker_id": string(), "hostname": string(),
            "capabilities": {"type": "array", "items": string()},
            "connected": {"type": "boolean"}, "last_seen": string(), "session_id": maybe(string()),
        }), &["worker_id", "hostname", "capabilities", "connected", "last_seen", "session_id"]),
    })
}
