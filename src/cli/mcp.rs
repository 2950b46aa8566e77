//! `agent-controller mcp`: an MCP server on stdio that drives the REST API, for Claude Code and
//! other MCP clients.
//!
//! JSON-RPC 2.0, one message per line. Only protocol messages go to stdout (one writer thread
//! owns it); logs go to stderr. Speaks the handshake versions 2024-11-05 … 2025-11-25 and
//! answers any unknown request (e.g. the 2026 `server/discover`) with -32601 at once, even
//! before `initialize`. Tool calls run on their own threads, so `ping` and
//! `notifications/cancelled` are handled while one waits; no call blocks longer than ~60 s:
//! confirmations are answered by polling tools, not by holding a call open.

use super::client::{ApiClient, ClientError, path_segment};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const WAIT_MAX: Duration = Duration::from_secs(50);
const INLINE_MAX: u64 = 20 * 1024 * 1024;

struct Shared {
    client: ApiClient,
    files_dir: PathBuf,
    out: crossbeam_channel::Sender<Value>,
    cancelled: Mutex<HashSet<String>>,
    running: Mutex<Vec<(String, Arc<AtomicBool>)>>,
}

fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Serve until stdin closes. Returns the exit code.
pub fn serve(client: ApiClient, files_dir: PathBuf) -> u8 {
    let (tx, rx) = crossbeam_channel::unbounded::<Value>();
    let writer = std::thread::spawn(move || {
        let stdout = std::io::stdout();
        for msg in rx {
            let mut lock = stdout.lock();
            // Compact JSON never contains a raw newline.
            if writeln!(lock, "{msg}").and_then(|_| lock.flush()).is_err() {
                break;
            }
        }
    });
    let shared = Arc::new(Shared {
        client,
        files_dir,
        out: tx,
        cancelled: Mutex::new(HashSet::new()),
        running: Mutex::new(Vec::new()),
    });
    eprintln!("agent-controller mcp: serving on stdio for the controller at {}", shared.client.base);
    let mut stdin = std::io::stdin().lock();
    let mut calls = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if !matches!(stdin.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            break;
        }
        // Not UTF-8 is a parse error for that line (answered), not the end of the input.
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(handle) = handle_line(&shared, &line) {
            calls.push(handle);
        }
        calls.retain(|h: &std::thread::JoinHandle<()>| !h.is_finished());
    }
    // stdin closed: let running calls end (bounded by their own limits), then stop writing.
    for h in calls {
        let _ = h.join();
    }
    drop(shared);
    let _ = writer.join();
    0
}

fn handle_line(shared: &Arc<Shared>, line: &str) -> Option<std::thread::JoinHandle<()>> {
    let send = |v: Value| {
        let _ = shared.out.send(v);
    };
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            send(error(&Value::Null, -32700, &format!("parse error: {e}")));
            return None;
        }
    };
    if msg.is_array() {
        send(error(&Value::Null, -32600, "batches are not supported; send one message per line"));
        return None;
    }
    let id = msg.get("id").cloned();
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        // A response to a request we never sent, or garbage.
        if id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
            return None;
        }
        // JSON-RPC ids are strings or numbers; any other is answered as unknown (null).
        let id = id.filter(|i| i.is_string() || i.is_number()).unwrap_or(Value::Null);
        send(error(&id, -32600, "invalid request: no method"));
        return None;
    };
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    let Some(id) = id.filter(|i| i.is_string() || i.is_number()) else {
        // Notifications: nothing is answered.
        if method == "notifications/cancelled" {
            cancel(shared, params["requestId"].to_string());
        }
        return None;
    };
    match method {
        "initialize" => {
            send(response(&id, initialize(&params)));
            None
        }
        "ping" => {
            send(response(&id, json!({})));
            None
        }
        "tools/list" => {
            send(response(&id, json!({"tools": tool_list()})));
            None
        }
        "tools/call" => call_tool(shared, id, &params),
        other => {
            send(error(&id, -32601, &format!("method not found: {other}")));
            None
        }
    }
}

/// `notifications/cancelled`: the request gets no answer, and a running call is told.
fn cancel(shared: &Shared, key: String) {
    shared.cancelled.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone());
    for (k, flag) in shared.running.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        if *k == key {
            flag.store(true, Ordering::Release);
        }
    }
}

fn initialize(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or("");
    let version = if VERSIONS.contains(&asked) { asked } else { VERSIONS[0] };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "agent-controller", "title": "agent-controller", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Drives remote browser, desktop and shell automation through an agent-controller. \
            Start with create_session, then call wait_for_session repeatedly: it returns on a status change, \
            a pending confirmation (answer it with respond_confirmation) or the end. Read results with \
            get_report, list_files and get_file."
    })
}

/// `tools/call`, on a thread of its own so a long call never blocks the reader.
fn call_tool(shared: &Arc<Shared>, id: Value, params: &Value) -> Option<std::thread::JoinHandle<()>> {
    let name = params["name"].as_str().unwrap_or("").to_string();
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let Some(def) = tool_list().into_iter().find(|t| t["name"] == name.as_str()) else {
        let _ = shared.out.send(error(&id, -32602, &format!("unknown tool {name:?}")));
        return None;
    };
    let shared = Arc::clone(shared);
    let key = id.to_string();
    let flag = Arc::new(AtomicBool::new(false));
    shared.running.lock().unwrap_or_else(|p| p.into_inner()).push((key.clone(), Arc::clone(&flag)));
    Some(std::thread::spawn(move || {
        let result = match crate::util::schema::validate(&def["inputSchema"], &args) {
            Err(e) => tool_error(&format!("invalid arguments: {e}")),
            Ok(()) => call(&shared, &name, &args, &flag),
        };
        shared.running.lock().unwrap_or_else(|p| p.into_inner()).retain(|(k, _)| *k != key);
        // A cancelled request gets no response.
        if !shared.cancelled.lock().unwrap_or_else(|p| p.into_inner()).remove(&key) {
            let _ = shared.out.send(response(&id, result));
        }
    }))
}

/// An input schema; `props` is JSON text (a literal: far less code than `json!` builds, and
/// a unit test parses every one).
fn obj(props: &str, required: &[&str]) -> Value {
    let props: Value = serde_json::from_str(props).unwrap_or_default();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn tool(
    name: &str,
    title: &str,
    description: &str,
    schema: Value,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
) -> Value {
    json!({"name": name, "title": title, "description": description, "inputSchema": schema,
        "annotations": {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive,
                        "idempotentHint": idempotent, "openWorldHint": !read_only}})
}

fn sid() -> Value {
    obj(r#"{"session_id": {"type": "string"}}"#, &["session_id"])
}

pub fn tool_list() -> Vec<Value> {
    vec![
        tool(
            "create_session",
            "Create a session",
            "Start an automation session on a worker: mode `task` (do something: download, scrape, fill forms, run commands) \
             or `explore` (observe and report). target is a URL (browser), a window title (desktop app) or a host (type shell).",
            obj(
                r#"{"mode": {"type": "string", "enum": ["task", "explore"]}, "target": {"type": "string"},
                       "type": {"type": "string", "enum": ["browser", "app", "shell"]}, "instruction": {"type": "string"},
                       "goal": {"type": "string"}, "worker": {"type": "string"}, "max_turns": {"type": "integer"},
                       "auto_confirm": {"type": "boolean"}}"#,
                &["mode", "target"],
            ),
            false,
            false,
            false,
        ),
        tool("list_sessions", "List sessions", "All sessions, newest first.", obj(r#"{}"#, &[]), true, false, true),
        tool(
            "get_session",
            "Get a session",
            "Status, turn, files, usage, pending confirmation, summary or error.",
            sid(),
            true,
            false,
            true,
        ),
        tool(
            "get_log",
            "Read a session's log",
            "Log entries after `after` (0 = from the start); returns `next` to continue.",
            obj(r#"{"session_id": {"type": "string"}, "after": {"type": "integer"}}"#, &["session_id"]),
            true,
            false,
            true,
        ),
        tool("get_report", "Read the report", "The session's report (markdown).", sid(), true, false, true),
        tool("get_notes", "Read the notes", "Notes the agent saved.", sid(), true, false, true),
        tool(
            "list_files",
            "List files",
            "Downloaded, generated and screenshot files of a session.",
            sid(),
            true,
            false,
            true,
        ),
        tool(
            "get_file",
            "Get a file",
            "A session file: text inline, images as images, anything else saved to a local folder (the path is returned).",
            obj(r#"{"session_id": {"type": "string"}, "filename": {"type": "string"}}"#, &["session_id", "filename"]),
            false,
            false,
            true,
        ),
        tool(
            "respond_confirmation",
            "Answer a confirmation",
            "Approve or deny the action the session is waiting on (see wait_for_session / get_session). A denial may \
             say why (the session's model is told); a command may be approved in an edited form.",
            obj(
                r#"{"session_id": {"type": "string"}, "approved": {"type": "boolean"}, "confirmation_id": {"type": "string"},
                       "reason": {"type": "string"}, "edited_command": {"type": "string"}}"#,
                &["session_id", "approved"],
            ),
            false,
            true,
            false,
        ),
        tool(
            "answer_question",
            "Answer a question",
            "Answer the question the session's agent asked a person (see wait_for_session / get_session).",
            obj(r#"{"session_id": {"type": "string"}, "text": {"type": "string"}}"#, &["session_id", "text"]),
            false,
            false,
            false,
        ),
        tool(
            "replay_session",
            "Replay a session",
            "Re-run a finished session's steps without the model, as a new session (params fill {{name}} in the \
             recorded steps or replace a recorded value); where the page changed, the model takes over. Follow it \
             with wait_for_session.",
            obj(
                r#"{"session_id": {"type": "string"}, "params": {"type": "object", "additionalProperties": {"type": "string"}},
                       "instruction": {"type": "string"}}"#,
                &["session_id"],
            ),
            false,
            false,
            false,
        ),
        tool("stop_session", "Stop a session", "Stop a running session.", sid(), false, true, true),
        tool(
            "list_schedules",
            "List schedules",
            "Scheduled sessions: each with its definition, runs, last run (session, status, when) and next run.",
            obj(r#"{}"#, &[]),
            true,
            false,
            true,
        ),
        tool(
            "run_schedule",
            "Run a schedule now",
            "Start a run of a schedule now (refused while its previous run goes on). Follow it with wait_for_session.",
            obj(r#"{"name": {"type": "string"}}"#, &["name"]),
            false,
            false,
            false,
        ),
        tool(
            "list_workers",
            "List workers",
            "Workers, their capabilities and which session each serves.",
            obj(r#"{}"#, &[]),
            true,
            false,
            true,
        ),
        tool(
            "wait_for_session",
            "Wait for a session",
            "Wait (at most ~50 s) until the session changes status, asks for a confirmation, or ends; returns its state and new log lines. Call again to keep waiting.",
            obj(r#"{"session_id": {"type": "string"}, "timeout_s": {"type": "integer"}}"#, &["session_id"]),
            true,
            false,
            true,
        ),
    ]
}

fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn tool_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn call(shared: &Shared, name: &str, args: &Value, cancelled: &AtomicBool) -> Value {
    let c = &shared.client;
    let id = args["session_id"].as_str().map(path_segment).unwrap_or_default();
    let result: Result<Value, ClientError> = match name {
        "create_session" => {
            let mut body = json!({"mode": args["mode"], "target": args["target"]});
            for key in ["type", "instruction", "goal", "worker"] {
                if let Some(v) = args.get(key).filter(|v| !v.is_null()) {
                    body[key] = v.clone();
                }
            }
            let mut options = json!({});
            if let Some(n) = args["max_turns"].as_u64() {
                options["max_turns"] = json!(n);
            }
            if let Some(b) = args["auto_confirm"].as_bool() {
                options["auto_confirm"] = json!(b);
            }
            body["options"] = options;
            c.post("/sessions", &body).map(|s| {
                text_result(format!(
                    "Created session {} ({}). Call wait_for_session to follow it.\n{}",
                    s["session_id"].as_str().unwrap_or(""),
                    s["status"].as_str().unwrap_or(""),
                    pretty(&s)
                ))
            })
        }
        "list_sessions" => c.get("/sessions").map(|v| text_result(pretty(&v))),
        "get_session" => c.get(&format!("/sessions/{id}")).map(|v| text_result(pretty(&v))),
        "get_log" => c
            .get(&format!("/sessions/{id}/log?after={}", args["after"].as_u64().unwrap_or(0)))
            .map(|v| text_result(format_log(&v))),
        "get_report" => c.get(&format!("/sessions/{id}/report")).map(|v| {
            let r = v["report"].as_str().unwrap_or("");
            text_result(if r.is_empty() { "(no report yet)".into() } else { r.to_string() })
        }),
        "get_notes" => c.get(&format!("/sessions/{id}/notes")).map(|v| text_result(pretty(&v))),
        "list_files" => c.get(&format!("/sessions/{id}/files")).map(|v| text_result(pretty(&v))),
        "list_workers" => c.get("/workers").map(|v| text_result(pretty(&v))),
        "list_schedules" => c.get("/schedules").map(|v| text_result(pretty(&v))),
        "run_schedule" => {
            let name = args["name"].as_str().map(path_segment).unwrap_or_default();
            c.post(&format!("/schedules/{name}/run"), &json!({})).map(|s| {
                let new = s["session_id"].as_str().unwrap_or("");
                text_result(format!("Run of {name} started as session {new}. Call wait_for_session to follow it."))
            })
        }
        "stop_session" => c.delete(&format!("/sessions/{id}")).map(|v| text_result(pretty(&v))),
        "respond_confirmation" => respond(c, &id, args),
        "replay_session" => c
            .post(
                &format!("/sessions/{id}/replay"),
                &json!({"params": args.get("params").cloned().unwrap_or_else(|| json!({})), "instruction": args["instruction"]}),
            )
            .map(|s| {
                let new = s["session_id"].as_str().unwrap_or("");
                text_result(format!("Replaying {id} as session {new}. Call wait_for_session to follow it."))
            }),
        "answer_question" => c
            .post(&format!("/sessions/{id}/answer"), &json!({"text": args["text"]}))
            .map(|_| text_result(format!("Answered the question of {id}"))),
        "get_file" => get_file(shared, &id, args["filename"].as_str().unwrap_or("")),
        "wait_for_session" => wait(c, &id, args, cancelled),
        other => Ok(tool_error(&format!("unknown tool {other}"))),
    };
    result.unwrap_or_else(|e| tool_error(&e.to_string()))
}

fn format_log(page: &Value) -> String {
    let mut out = String::new();
    for e in page["entries"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{} {} [{}] {}\n",
            e["seq"],
            e["ts"].as_str().and_then(|t| t.get(11..19)).unwrap_or(""),
            e["type"].as_str().unwrap_or(""),
            e["text"].as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!("next: {}", page["next"]));
    out
}

fn respond(c: &ApiClient, id: &str, args: &Value) -> Result<Value, ClientError> {
    let cid = match args["confirmation_id"].as_str() {
        Some(cid) => cid.to_string(),
        None => {
            let pending = c.get(&format!("/sessions/{id}/confirmation"))?;
            if pending["pending"] != true {
                return Ok(tool_error(&format!("session {id} is not waiting for a confirmation")));
            }
            pending["confirmation_id"].as_str().unwrap_or("").to_string()
        }
    };
    let approved = args["approved"].as_bool().unwrap_or(false);
    let mut answer = json!({"confirmation_id": cid, "approved": approved});
    for key in ["reason", "edited_command"] {
        if let Some(v) = args[key].as_str() {
            answer[key] = json!(v);
        }
    }
    c.post(&format!("/sessions/{id}/confirmation"), &answer)?;
    Ok(text_result(format!("{} {cid}", if approved { "Approved" } else { "Denied" })))
}

fn get_file(shared: &Shared, id: &str, filename: &str) -> Result<Value, ClientError> {
    let path = format!("/sessions/{id}/files/{}", path_segment(filename));
    let files = shared.client.get(&format!("/sessions/{id}/files"))?;
    let size_kb = files
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["filename"] == filename)
        .and_then(|f| f["size_kb"].as_u64())
        .ok_or_else(|| ClientError::Other(format!("session {id} has no file {filename:?} (list_files shows them)")))?;
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let textual =
        matches!(ext.as_str(), "txt" | "csv" | "md" | "json" | "log" | "html" | "htm" | "xml" | "tsv" | "yaml" | "yml");
    let image = matches!(ext.as_str(), "png" | "jpg" | "jpeg" | "gif" | "webp");
    if (textual || image) && size_kb * 1024 <= INLINE_MAX {
        let (bytes, ct) = shared.client.get_bytes(&path, INLINE_MAX)?;
        if image {
            let mime = if ct.starts_with("image/") {
                ct
            } else {
                format!("image/{}", if ext == "jpg" { "jpeg" } else { &ext })
            };
            return Ok(json!({"content": [
                {"type": "text", "text": format!("{filename} ({size_kb} KB)")},
                {"type": "image", "data": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes), "mimeType": mime}], "isError": false}));
        }
        return Ok(text_result(String::from_utf8_lossy(&bytes).into_owned()));
    }
    let dir = shared.files_dir.join(crate::util::filename::sanitize_filename(id));
    // Inside our own 0700 folder nobody else can plant anything, so only that one is checked.
    private_dir(&shared.files_dir)
        .and_then(|()| std::fs::create_dir_all(&dir))
        .map_err(|e| ClientError::Other(format!("cannot use {}: {e}", dir.display())))?;
    let dest = dir.join(crate::util::filename::sanitize_filename(filename));
    let size = shared.client.download(&path, &dest)?;
    Ok(text_result(format!("Saved {filename} ({} KB) to {}", size.div_ceil(1024), dest.display())))
}

/// Create `dir` (0700) if needed and make sure it is a real folder of ours: the default lives
/// in the shared /tmp, where another user could have put a folder or a symlink first.
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != me {
        return Err(std::io::Error::other("not a folder owned by this user"));
    }
    Ok(())
}

/// Return on a status change, a new pending confirmation, the end, or after the timeout.
fn wait(c: &ApiClient, id: &str, args: &Value, cancelled: &AtomicBool) -> Result<Value, ClientError> {
    let limit = Duration::from_secs(args["timeout_s"].as_u64().unwrap_or(50)).min(WAIT_MAX);
    let deadline = Instant::now() + limit;
    let start = c.get(&format!("/sessions/{id}"))?;
    let first_status = start["status"].clone();
    let mut current = Some(start);
    let log = c.get(&format!("/sessions/{id}/log"))?;
    let mut after = log["next"].as_u64().unwrap_or(0).saturating_sub(5);
    let mut lines = String::new();
    let (state, why) = loop {
        let s = match current.take() {
            Some(s) => s,
            None => c.get(&format!("/sessions/{id}"))?,
        };
        let active = super::client::is_active(&s);
        let why = if !active {
            Some("ended")
        } else if !s["confirmation_pending"].is_null() {
            Some("confirmation pending: answer with respond_confirmation")
        } else if s["question_pending"].is_object() {
            Some("question pending: answer with answer_question")
        } else if s["status"] != first_status {
            Some("status changed")
        } else if Instant::now() >= deadline {
            Some("still running; call wait_for_session again")
        } else if cancelled.load(Ordering::Acquire) {
            Some("cancelled")
        } else {
            None
        };
        if let Some(w) = why {
            break (s, w);
        }
        let left = deadline.saturating_duration_since(Instant::now()).as_secs().clamp(1, 5);
        let page = c.get(&format!("/sessions/{id}/log?after={after}&wait={left}"))?;
        for e in page["entries"].as_array().into_iter().flatten() {
            lines.push_str(&format!("[{}] {}\n", e["type"].as_str().unwrap_or(""), e["text"].as_str().unwrap_or("")));
        }
        after = page["next"].as_u64().unwrap_or(after);
    };
    let mut text = format!("{}: {why}\n", state["status"].as_str().unwrap_or(""));
    if let Some(conf) = state["confirmation_pending"].as_object() {
        text.push_str(&format!("confirmation: {}\n", pretty(&Value::Object(conf.clone()))));
    }
    if let Some(q) = state["question_pending"]["question"].as_str() {
        text.push_str(&format!("question: {q}\n"));
    }
    for key in ["summary", "error"] {
        if let Some(v) = state[key].as_str() {
            text.push_str(&format!("{key}: {v}\n"));
        }
    }
    text.push_str(&format!("turn {}/{}, {} file(s)\n", state["turn"], state["max_turns"], state["files"]));
    if !lines.is_empty() {
        text.push_str("recent log:\n");
        text.push_str(&lines);
    }
    Ok(text_result(text))
}
