//! `agent-controller mcp`: an MCP server on stdio that drives the REST API, for Claude Code and
//! other MCP clients.
//!
//! JSON-RPC 2.0, one message per line, read and written as typed shapes (`mcp/rpc.rs`). Only
//! protocol messages go to stdout (one writer thread owns it, fed by a bounded queue, so a
//! client that stops reading holds the server back instead of its memory growing); logs go to
//! stderr. Speaks the handshake versions 2024-11-05 … 2025-11-25 and answers any unknown
//! request (e.g. the 2026 `server/discover`) with -32601 at once, even before `initialize`.
//! The tools are one table (`mcp/tools.rs`: schema, annotations, handler); tool calls run on
//! their own threads, so `ping` and `notifications/cancelled` are handled while one waits; no
//! call blocks longer than ~60 s: confirmations are answered by polling tools, not by holding
//! a call open. The daemon is reached through `Rest` (the REST client), so the dispatch is
//! tested here without a process.

mod handlers;
mod rpc;
mod tools;

use super::client::{ApiClient, ClientError, path_segment};
use crossbeam_channel::{Receiver, Sender};
use rpc::ToolResult;
use rpc::{CallParams, CancelledParams, Id, Incoming, InitializeParams, Request, Response};
use serde::Serialize;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use tools::McpTool;

pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The names of the tools the server offers, in `tools/list`'s order (the documents' names are
/// checked against them).
pub fn tool_names() -> Vec<&'static str> {
    tools::TOOLS.iter().map(|t| t.name).collect()
}
/// Answers waiting for the writer; beyond this a sender waits for the client to read.
const OUT_QUEUE: usize = 64;

/// What the tools need of the daemon: its REST API (`ApiClient`, or a fake in the tests).
pub trait Rest: Send + Sync {
    fn base(&self) -> &str;
    fn get(&self, path: &str) -> Result<Value, ClientError>;
    fn post(&self, path: &str, body: &Value) -> Result<Value, ClientError>;
    fn delete(&self, path: &str) -> Result<Value, ClientError>;
    /// A file's bytes (at most `limit`) and its content type.
    fn get_bytes(&self, path: &str, limit: u64) -> Result<(Vec<u8>, String), ClientError>;
    /// A file streamed to `dest`; its size.
    fn download(&self, path: &str, dest: &Path) -> Result<u64, ClientError>;
    /// A local file's bytes `PUT` to `path` (a session's input).
    fn put_file(&self, _path: &str, _file: &Path) -> Result<Value, ClientError> {
        Err(ClientError::Other("this client cannot send files".into()))
    }
}

impl Rest for ApiClient {
    fn base(&self) -> &str {
        &self.base
    }

    fn put_file(&self, path: &str, file: &Path) -> Result<Value, ClientError> {
        ApiClient::put_file(self, path, file)
    }

    fn get(&self, path: &str) -> Result<Value, ClientError> {
        ApiClient::get(self, path)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        ApiClient::post(self, path, body)
    }

    fn delete(&self, path: &str) -> Result<Value, ClientError> {
        ApiClient::delete(self, path)
    }

    fn get_bytes(&self, path: &str, limit: u64) -> Result<(Vec<u8>, String), ClientError> {
        ApiClient::get_bytes(self, path, limit)
    }

    fn download(&self, path: &str, dest: &Path) -> Result<u64, ClientError> {
        ApiClient::download(self, path, dest)
    }
}

/// One tool call as its handler sees it.
pub struct Call<'a> {
    pub rest: &'a dyn Rest,
    /// Where `get_file` saves files it does not return inline.
    pub files_dir: &'a Path,
    /// Checked against the tool's schema.
    pub args: &'a Value,
    /// Raised by `notifications/cancelled` for this call.
    pub cancelled: &'a AtomicBool,
}

impl Call<'_> {
    /// The `session_id` argument as one URL path segment.
    pub fn session(&self) -> String {
        self.args["session_id"].as_str().map(path_segment).unwrap_or_default()
    }
}

struct Server {
    rest: Arc<dyn Rest>,
    files_dir: PathBuf,
    out: Sender<Response>,
    /// The tool calls in flight: their request's id and the flag a cancellation raises.
    running: Mutex<Vec<(Id, Arc<AtomicBool>)>>,
}

/// Serve until stdin closes. Returns the exit code.
pub fn serve(client: ApiClient, files_dir: PathBuf) -> u8 {
    let (tx, rx) = crossbeam_channel::bounded(OUT_QUEUE);
    let writer = std::thread::spawn(move || write_lines(&rx, &mut std::io::stdout()));
    let server = Arc::new(Server { rest: Arc::new(client), files_dir, out: tx, running: Mutex::new(Vec::new()) });
    eprintln!("agent-controller mcp: serving on stdio for the controller at {}", server.rest.base());
    server.read_lines(std::io::stdin().lock());
    drop(server);
    let _ = writer.join();
    0
}

/// The writer: each answer one line, until every sender is gone or the client stops reading.
fn write_lines(rx: &Receiver<Response>, out: &mut dyn Write) {
    for msg in rx {
        if writeln!(out, "{}", msg.line()).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

impl Server {
    /// Read lines until the input ends, then let running calls end (bounded by their own
    /// limits).
    fn read_lines(self: &Arc<Self>, mut input: impl BufRead) {
        let mut calls: Vec<JoinHandle<()>> = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if !matches!(input.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                break;
            }
            // Not UTF-8 is a parse error for that line (answered), not the end of the input.
            let line = String::from_utf8_lossy(&buf);
            if line.trim().is_empty() {
                continue;
            }
            calls.extend(self.handle_line(&line));
            calls.retain(|h| !h.is_finished());
        }
        for h in calls {
            let _ = h.join();
        }
    }

    fn send(&self, response: Response) {
        let _ = self.out.send(response);
    }

    fn running(&self) -> MutexGuard<'_, Vec<(Id, Arc<AtomicBool>)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One line: answered here, or by the thread returned (a tool call).
    fn handle_line(self: &Arc<Self>, line: &str) -> Option<JoinHandle<()>> {
        match rpc::parse(line) {
            Incoming::Invalid(error) => self.send(error),
            Incoming::Stray => {}
            Incoming::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Ok(p) = serde_json::from_value::<CancelledParams>(params)
                {
                    self.cancel(&p.request_id);
                }
            }
            Incoming::Request(req) => return self.request(req),
        }
        None
    }

    fn request(self: &Arc<Self>, req: Request) -> Option<JoinHandle<()>> {
        let answer = match req.method.as_str() {
            "initialize" => req.params::<InitializeParams>().map(|p| Response::result(req.id.clone(), &initialize(&p))),
            "ping" => Ok(Response::result(req.id.clone(), &serde_json::json!({}))),
            "tools/list" => Ok(Response::result(req.id.clone(), &tools::list())),
            "tools/call" => match req.params::<CallParams>() {
                Ok(p) => return self.call_tool(req.id, p),
                Err(e) => Err(e),
            },
            other => {
                Err(Response::error(Some(req.id.clone()), rpc::METHOD_NOT_FOUND, format!("method not found: {other}")))
            }
        };
        self.send(answer.unwrap_or_else(|e| e));
        None
    }

    /// `notifications/cancelled`: a running call is told, and its request gets no answer.
    fn cancel(&self, id: &Id) {
        for (running, flag) in self.running().iter() {
            if running == id {
                flag.store(true, Ordering::Release);
            }
        }
    }

    /// `tools/call`, on a thread of its own so a long call never blocks the reader.
    fn call_tool(self: &Arc<Self>, id: Id, p: CallParams) -> Option<JoinHandle<()>> {
        let Some(tool) = tools::find(&p.name) else {
            let why = format!("unknown tool {:?}", p.name);
            self.send(Response::error(Some(id), rpc::INVALID_PARAMS, why));
            return None;
        };
        let flag = Arc::new(AtomicBool::new(false));
        self.running().push((id.clone(), Arc::clone(&flag)));
        let server = Arc::clone(self);
        let answer_id = id.clone();
        let spawned = std::thread::Builder::new().name("mcp-call".into()).spawn(move || {
            let result = server.run(tool, &p.arguments, &flag);
            server.running().retain(|(_, f)| !Arc::ptr_eq(f, &flag));
            if !flag.load(Ordering::Acquire) {
                server.send(Response::result(answer_id, &result));
            }
        });
        match spawned {
            Ok(handle) => Some(handle),
            Err(e) => {
                self.running().retain(|(running, _)| *running != id);
                self.send(Response::error(Some(id), rpc::INTERNAL_ERROR, format!("cannot start the call: {e}")));
                None
            }
        }
    }

    /// A tool's handler on arguments its schema accepts; every failure is a tool error the
    /// model can read.
    fn run(&self, tool: &McpTool, args: &Value, cancelled: &AtomicBool) -> ToolResult {
        if let Err(e) = crate::util::schema::validate(&tool.schema(), args) {
            return ToolResult::error(format!("invalid arguments: {e}"));
        }
        let call = Call { rest: self.rest.as_ref(), files_dir: &self.files_dir, args, cancelled };
        (tool.run)(&call).unwrap_or_else(|e| ToolResult::error(e.to_string()))
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: &'static str,
    capabilities: Capabilities,
    server_info: ServerInfo,
    instructions: &'static str,
}

#[derive(Debug, Serialize)]
struct Capabilities {
    tools: ToolsCapability,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolsCapability {
    list_changed: bool,
}

#[derive(Debug, Serialize)]
struct ServerInfo {
    name: &'static str,
    title: &'static str,
    version: &'static str,
}

/// The version the client asked for if we speak it, else our newest.
fn initialize(params: &InitializeParams) -> InitializeResult {
    let asked = params.protocol_version.as_deref().unwrap_or("");
    InitializeResult {
        protocol_version: VERSIONS.iter().copied().find(|v| *v == asked).unwrap_or(VERSIONS[0]),
        capabilities: Capabilities { tools: ToolsCapability { list_changed: false } },
        server_info: ServerInfo {
            name: "agent-controller",
            title: "agent-controller",
            version: env!("CARGO_PKG_VERSION"),
        },
        instructions: "Drives remote browser, desktop and shell automation through an agent-controller. \
            Start with create_session, then call wait_for_session repeatedly: it returns on a status change, \
            a pending confirmation (answer it with respond_confirmation) or the end. Read results with \
            get_report, list_files and get_file.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    pub(super) type Answer = Box<dyn Fn(&str, &str, &Value) -> Result<Value, ClientError> + Send + Sync>;

    /// The daemon as the tools see it: every request recorded, answered by `answer`.
    pub(super) struct Fake {
        pub(super) seen: Mutex<Vec<(String, String, Value)>>,
        answer: Answer,
    }

    impl Fake {
        fn ask(&self, method: &str, path: &str, body: &Value) -> Result<Value, ClientError> {
            self.seen.lock().unwrap().push((method.into(), path.into(), body.clone()));
            (self.answer)(method, path, body)
        }
    }

    impl Rest for Fake {
        fn base(&self) -> &str {
            "http://fake"
        }
        fn get(&self, path: &str) -> Result<Value, ClientError> {
            self.ask("GET", path, &Value::Null)
        }
        fn post(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
            self.ask("POST", path, body)
        }
        fn delete(&self, path: &str) -> Result<Value, ClientError> {
            self.ask("DELETE", path, &Value::Null)
        }
        fn get_bytes(&self, path: &str, _limit: u64) -> Result<(Vec<u8>, String), ClientError> {
            self.ask("GET", path, &Value::Null).map(|v| (v.to_string().into_bytes(), "text/plain".into()))
        }
        fn download(&self, path: &str, _dest: &Path) -> Result<u64, ClientError> {
            self.ask("GET", path, &Value::Null).map(|_| 0)
        }
    }

    /// A daemon with one running session `s1`.
    pub(super) fn daemon(method: &str, path: &str, _body: &Value) -> Result<Value, ClientError> {
        match (method, path) {
            ("GET", "/sessions/s1") => Ok(json!({"session_id": "s1", "status": "running", "turn": 2})),
            ("GET", p) if p.starts_with("/sessions/s1/log") => {
                std::thread::sleep(Duration::from_millis(5));
                Ok(json!({"entries": [], "next": 3}))
            }
            ("GET", "/sessions/nope") => {
                Err(ClientError::Api { status: 404, code: "not_found".into(), message: "no session nope".into() })
            }
            _ => Ok(json!({"session_id": "s2", "status": "waiting"})),
        }
    }

    pub(super) fn server_with(answer: Answer) -> (Arc<Server>, Arc<Fake>, Receiver<Response>) {
        let fake = Arc::new(Fake { seen: Mutex::new(Vec::new()), answer });
        let (tx, rx) = crossbeam_channel::bounded(OUT_QUEUE);
        let server = Arc::new(Server {
            rest: Arc::clone(&fake) as Arc<dyn Rest>,
            files_dir: std::env::temp_dir(),
            out: tx,
            running: Mutex::new(Vec::new()),
        });
        (server, fake, rx)
    }

    pub(super) fn server() -> (Arc<Server>, Arc<Fake>, Receiver<Response>) {
        server_with(Box::new(daemon))
    }

    /// The answers to one line, the tool call's included.
    pub(super) fn ask(server: &Arc<Server>, rx: &Receiver<Response>, line: Value) -> Vec<Value> {
        if let Some(call) = server.handle_line(&line.to_string()) {
            call.join().unwrap();
        }
        rx.try_iter().map(|r| serde_json::to_value(&r).unwrap()).collect()
    }

    pub(super) fn one(server: &Arc<Server>, rx: &Receiver<Response>, line: Value) -> Value {
        let mut answers = ask(server, rx, line.clone());
        assert_eq!(answers.len(), 1, "{line}: {answers:?}");
        answers.remove(0)
    }

    pub(super) fn call(name: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    }

    pub(super) fn text(answer: &Value) -> &str {
        answer["result"]["content"][0]["text"].as_str().unwrap()
    }

    #[test]
    fn initialize_speaks_the_clients_version_or_our_newest() {
        let (server, _, rx) = server();
        for v in VERSIONS {
            let r = one(
                &server,
                &rx,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            );
            assert_eq!(r["result"]["protocolVersion"], v);
            assert_eq!(r["result"]["serverInfo"]["name"], "agent-controller");
            assert_eq!(r["result"]["capabilities"], json!({"tools": {"listChanged": false}}));
        }
        let r = one(
            &server,
            &rx,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2030-01-01"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], VERSIONS[0]);
        let r = one(&server, &rx, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}));
        assert_eq!(r["result"]["protocolVersion"], VERSIONS[0], "no params: our newest");
    }

    #[test]
    fn tools_list_shows_each_table_entry_once() {
        let (server, _, rx) = server();
        let r =
            one(&server, &rx, json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list", "params": {"_meta": {}}}));
        assert_eq!(r["id"], "l");
        let listed: Vec<&str> =
            r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        let table: Vec<&str> = tools::TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(listed, table);
        for t in r["result"]["tools"].as_array().unwrap() {
            assert_eq!(t["inputSchema"]["type"], "object", "{t}");
            assert!(t["inputSchema"]["properties"].is_object(), "{t}");
            assert!(t["annotations"]["readOnlyHint"].is_boolean(), "{t}");
        }
    }

    #[test]
    fn unknown_methods_and_bad_params_are_errors() {
        let (server, fake, rx) = server();
        let r = one(&server, &rx, json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover"}));
        assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!("d"), json!(-32601)));
        let r = one(
            &server,
            &rx,
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 5}}),
        );
        assert_eq!(r["error"]["code"], -32602);
        let r =
            one(&server, &rx, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}));
        assert_eq!(r["error"]["code"], -32602, "no tool named");
        let r = one(&server, &rx, call("no_such_tool", json!({})));
        assert_eq!(r["error"]["code"], -32602);
        assert!(r["error"]["message"].as_str().unwrap().contains("no_such_tool"));
        // Arguments the schema refuses are the tool's error, and the daemon never hears them.
        let r = one(&server, &rx, call("get_session", json!({})));
        assert_eq!(r["result"]["isError"], true);
        assert!(text(&r).contains("session_id"), "{r}");
        let r = one(&server, &rx, call("get_session", json!({"session_id": "s1", "extra": 1})));
        assert_eq!(r["result"]["isError"], true, "unknown arguments are refused");
        assert!(fake.seen.lock().unwrap().is_empty());
        let r = one(&server, &rx, json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
        assert_eq!(r["result"], json!({}));
    }

    #[test]
    fn notifications_and_strays_get_no_answer_and_garbage_gets_one() {
        let (server, _, rx) = server();
        assert!(ask(&server, &rx, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_empty());
        assert!(ask(&server, &rx, json!({"jsonrpc": "2.0", "id": 7, "result": {}})).is_empty());
        assert!(server.handle_line("{not json").is_none());
        let r: Vec<Value> = rx.try_iter().map(|r| serde_json::to_value(&r).unwrap()).collect();
        assert_eq!((r.len(), r[0]["error"]["code"].clone(), r[0]["id"].clone()), (1, json!(-32700), Value::Null));
    }

    #[test]
    fn a_call_reaches_its_handlers_route() {
        let cases = [
            ("get_session", json!({"session_id": "s1"}), "GET", "/sessions/s1"),
            ("list_sessions", json!({}), "GET", "/sessions"),
            ("get_log", json!({"session_id": "s1", "after": 4}), "GET", "/sessions/s1/log?after=4"),
            ("get_report", json!({"session_id": "s1"}), "GET", "/sessions/s1/report"),
            ("get_notes", json!({"session_id": "s1"}), "GET", "/sessions/s1/notes"),
            ("list_files", json!({"session_id": "s1"}), "GET", "/sessions/s1/files"),
            ("list_workers", json!({}), "GET", "/workers"),
            ("list_schedules", json!({}), "GET", "/schedules"),
            ("stop_session", json!({"session_id": "a/b"}), "DELETE", "/sessions/a%2Fb"),
            ("pause_session", json!({"session_id": "s1"}), "POST", "/sessions/s1/pause"),
            ("act", json!({"session_id": "s1", "tool": "browser_snapshot"}), "POST", "/sessions/s1/act"),
            ("resume_session", json!({"session_id": "s1"}), "POST", "/sessions/s1/resume"),
            ("run_schedule", json!({"name": "daily"}), "POST", "/schedules/daily/run"),
            ("answer_question", json!({"session_id": "s1", "text": "42"}), "POST", "/sessions/s1/answer"),
            ("replay_session", json!({"session_id": "s1"}), "POST", "/sessions/s1/replay"),
            ("create_session", json!({"mode": "task", "target": "https://x.test"}), "POST", "/sessions"),
            (
                "respond_confirmation",
                json!({"session_id": "s1", "approved": true, "confirmation_id": "c1"}),
                "POST",
                "/sessions/s1/confirmation",
            ),
        ];
        for (tool, args, method, path) in cases {
            let (server, fake, rx) = server();
            let r = one(&server, &rx, call(tool, args));
            assert_eq!((r["id"].clone(), r["result"]["isError"].clone()), (json!(9), json!(false)), "{tool}: {r}");
            let seen = fake.seen.lock().unwrap();
            assert_eq!((seen[0].0.as_str(), seen[0].1.as_str()), (method, path), "{tool}");
        }
    }

    #[test]
    fn bodies_and_daemon_errors() {
        let (server, fake, rx) = server();
        let r = one(
            &server,
            &rx,
            call("create_session", json!({"mode": "task", "target": "t", "max_turns": 3, "goal": null})),
        );
        assert!(text(&r).starts_with("Created session s2 (waiting)"), "{r}");
        let body = fake.seen.lock().unwrap()[0].2.clone();
        assert_eq!(body, json!({"mode": "task", "target": "t", "options": {"max_turns": 3}}));
        let r = one(
            &server,
            &rx,
            call(
                "respond_confirmation",
                json!({"session_id": "s1", "approved": false, "confirmation_id": "c1", "reason": "no"}),
            ),
        );
        assert_eq!(text(&r), "Denied c1");
        let body = fake.seen.lock().unwrap()[1].2.clone();
        assert_eq!(body, json!({"confirmation_id": "c1", "approved": false, "reason": "no"}));
        let r = one(&server, &rx, call("get_session", json!({"session_id": "nope"})));
        assert_eq!(r["result"]["isError"], true);
        assert_eq!(text(&r), "no session nope (HTTP 404)");
    }

    #[test]
    fn a_cancelled_call_ends_early_and_gets_no_answer() {
        let (server, _, rx) = server();
        let wait = call("wait_for_session", json!({"session_id": "s1", "timeout_s": 30}));
        let started = std::time::Instant::now();
        let handle = server.handle_line(&wait.to_string()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
        assert!(server.handle_line(&cancel.to_string()).is_none());
        handle.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(rx.try_recv().is_err(), "no answer to a cancelled request");
        assert!(server.running().is_empty());
        // A cancellation for a request not running changes nothing for a later one.
        server.handle_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}).to_string(),
        );
        let r = one(&server, &rx, call("get_session", json!({"session_id": "s1"})));
        assert_eq!(r["result"]["isError"], false);
    }

    #[test]
    fn a_wait_ends_on_a_pending_confirmation() {
        let (server, _, rx) = server_with(Box::new(|method, path, body| match path {
            "/sessions/s1" => Ok(json!({"session_id": "s1", "status": "confirming", "turn": 1, "max_turns": 5,
                "files": 0, "confirmation_pending": {"id": "c1", "description": "download"}})),
            _ => daemon(method, path, body),
        }));
        let r = one(&server, &rx, call("wait_for_session", json!({"session_id": "s1"})));
        let t = text(&r);
        assert!(t.starts_with("confirming: confirmation pending"), "{t}");
        assert!(t.contains("turn 1/5, 0 file(s)"), "{t}");
    }

    #[test]
    fn the_writer_writes_one_line_per_answer() {
        let (tx, rx) = crossbeam_channel::bounded(OUT_QUEUE);
        tx.send(Response::result(Id::Number(1.into()), &json!({"a": "x\ny"}))).unwrap();
        tx.send(Response::error(None, rpc::PARSE_ERROR, "bad".into())).unwrap();
        drop(tx);
        let mut out = Vec::new();
        write_lines(&rx, &mut out);
        let lines: Vec<Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            lines,
            [
                json!({"jsonrpc": "2.0", "id": 1, "result": {"a": "x\ny"}}),
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
            ]
        );
    }
}
