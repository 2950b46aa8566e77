//! A scripted Anthropic Messages server on loopback: replays a script of responses in order,
//! records every request, and checks on each one that every `tool_use` of an assistant turn is
//! answered by a `tool_result` in the next user message. Also a recording HTTP receiver for
//! webhook and Telegram notifications.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::wire::Wire;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone)]
pub struct Step {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub delay: Duration,
}

impl Step {
    pub fn ok(body: Value) -> Step {
        Step { status: 200, headers: vec![], body, delay: Duration::ZERO }
    }
    pub fn error(status: u16, kind: &str, message: &str) -> Step {
        Step {
            status,
            headers: vec![],
            body: json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}),
            delay: Duration::ZERO,
        }
    }
    pub fn with_header(mut self, k: &str, v: &str) -> Step {
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn delayed(mut self, d: Duration) -> Step {
        self.delay = d;
        self
    }
}

/// A reply calling tools: `[(name, input)]`, with an optional leading text.
pub fn tools(text: Option<&str>, calls: &[(&str, Value)]) -> Step {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut content = Vec::new();
    if let Some(t) = text {
        content.push(json!({"type": "text", "text": t}));
    }
    for (name, input) in calls {
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        content.push(json!({"type": "tool_use", "id": format!("toolu_{n:04}"), "name": name, "input": input}));
    }
    Step::ok(message(content, "tool_use"))
}

pub fn tool(name: &str, input: Value) -> Step {
    tools(None, &[(name, input)])
}

pub fn text(t: &str) -> Step {
    Step::ok(message(vec![json!({"type": "text", "text": t})], "end_turn"))
}

fn message(content: Vec<Value>, stop_reason: &str) -> Value {
    json!({
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 50}
    })
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|a| a.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    }
    /// Image blocks anywhere in the messages.
    pub fn image_count(&self) -> usize {
        fn count(v: &Value) -> usize {
            match v {
                Value::Object(m) => {
                    usize::from(m.get("type") == Some(&json!("image"))) + m.values().map(count).sum::<usize>()
                }
                Value::Array(a) => a.iter().map(count).sum(),
                _ => 0,
            }
        }
        count(&self.body["messages"])
    }
    /// The tool_result blocks of the last user message.
    /// The tool results of the last message (the recital and any note after them left out).
    pub fn last_results(&self) -> Vec<Value> {
        let msgs = self.body["messages"].as_array().unwrap();
        let content = msgs.last().unwrap()["content"].as_array().cloned().unwrap_or_default();
        content.into_iter().filter(|b| b["type"] == "tool_result").collect()
    }

    /// The text of the last message's first tool result, taken out of the boundary markers
    /// (which must be there, with the nonce the first message names).
    pub fn last_result_data(&self) -> String {
        let text = self.last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
        self.inside_markers(&text)
    }

    /// `text` without the boundary's marker lines; panics unless it is wrapped in them, with
    /// this session's nonce (the one the line about the markers names).
    pub fn inside_markers(&self, text: &str) -> String {
        let request = self.body.to_string();
        let (first, rest) = text.split_once('\n').unwrap_or_else(|| panic!("not wrapped: {text}"));
        let opened = first
            .strip_prefix("<<")
            .and_then(|f| f.strip_suffix(">>"))
            .unwrap_or_else(|| panic!("not wrapped: {text}"));
        let nonce = opened.split_once(' ').map(|(_, n)| n).unwrap_or_else(|| panic!("no nonce: {first}"));
        let named = format!("<<{opened}>> marker lines");
        assert!(nonce.len() >= 14 && request.contains(&named), "the nonce {nonce} is not the one the session names");
        rest.strip_suffix(&format!("\n<</{opened}>>")).unwrap_or_else(|| panic!("not closed: {text}")).to_string()
    }
}

pub struct ScriptedLlm {
    pub url: String,
    /// The steps not yet answered; `push` adds to them while the server runs.
    script: Arc<Mutex<std::collections::VecDeque<Step>>>,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    pub violations: Arc<Mutex<Vec<String>>>,
    server: Arc<tiny_http::Server>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedLlm {
    pub fn start(script: Vec<Step>) -> ScriptedLlm {
        ScriptedLlm::start_wire(Wire::Anthropic, "", script)
    }

    /// A server speaking `wire`; requests must go to its path (with `model` for Gemini).
    pub fn start_wire(wire: Wire, model: &str, script: Vec<Step>) -> ScriptedLlm {
        ScriptedLlm::start_inner(wire, model, script, None, false)
    }

    /// Requests without tools (a summary, a validator) get `side` instead of the next step.
    pub fn start_full(wire: Wire, model: &str, script: Vec<Step>, side: Option<Step>) -> ScriptedLlm {
        ScriptedLlm::start_inner(wire, model, script, side, false)
    }

    /// A text-only model's server, as llama.cpp without a vision projector: any request with an
    /// image is answered 500 "image input is not supported", without using up a script step.
    pub fn start_text_only(wire: Wire, model: &str, script: Vec<Step>) -> ScriptedLlm {
        ScriptedLlm::start_inner(wire, model, script, None, true)
    }

    fn start_inner(wire: Wire, model: &str, script: Vec<Step>, side: Option<Step>, text_only: bool) -> ScriptedLlm {
        let path = wire.path(model);
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let violations = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(std::collections::VecDeque::from(script)));
        let (srv, reqs, viol) = (Arc::clone(&server), Arc::clone(&requests), Arc::clone(&violations));
        let queue = Arc::clone(&script);
        let handle = std::thread::spawn(move || {
            while let Ok(mut rq) = srv.recv() {
                let mut body = String::new();
                let _ = rq.as_reader().read_to_string(&mut body);
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let headers = rq.headers().iter().map(|h| (h.field.to_string(), h.value.to_string())).collect();
                if rq.url() != path {
                    viol.lock().unwrap().push(format!("request to {}", rq.url()));
                }
                wire.check(&body, &viol);
                let text = body.to_string();
                let has_image = ["\"image\"", "\"image_url\"", "\"inlineData\""].iter().any(|k| text.contains(k));
                let step = if text_only && has_image {
                    Some(Step::error(500, "api_error", "image input is not supported - hint: provide the mmproj"))
                } else {
                    match &side {
                        Some(side) if body.get("tools").is_none() => Some(side.clone()),
                        _ => script.lock().unwrap().pop_front(),
                    }
                };
                reqs.lock().unwrap().push(Recorded { headers, body });
                // Answer on its own thread so a slow step does not block the next request.
                std::thread::spawn(move || {
                    let step = step.unwrap_or_else(|| Step::error(400, "invalid_request_error", "script exhausted"));
                    std::thread::sleep(step.delay);
                    let mut resp =
                        tiny_http::Response::from_string(step.body.to_string()).with_status_code(step.status);
                    resp.add_header(tiny_http::Header::from_bytes("content-type", "application/json").unwrap());
                    for (k, v) in step.headers {
                        resp.add_header(tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).unwrap());
                    }
                    let _ = rq.respond(resp);
                });
            }
        });
        ScriptedLlm { url, script: queue, requests, violations, server, handle: Some(handle) }
    }

    /// More steps, for a model whose next move depends on what a tool answered before.
    pub fn push(&self, steps: Vec<Step>) {
        self.script.lock().unwrap().extend(steps);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn assert_well_formed(&self) {
        let v = self.violations.lock().unwrap();
        assert!(v.is_empty(), "malformed requests: {v:?}");
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Every tool_use id in an assistant message must appear as a tool_result in the next message.
pub fn check_pairs(body: &Value, violations: &Mutex<Vec<String>>) {
    let Some(msgs) = body["messages"].as_array() else {
        violations.lock().unwrap().push("no messages".into());
        return;
    };
    if msgs.first().map(|m| m["role"] != "user").unwrap_or(true) {
        violations.lock().unwrap().push("first message is not from the user".into());
    }
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 && m["role"] == msgs[i - 1]["role"] {
            violations.lock().unwrap().push(format!("two {} messages in a row at {i}", m["role"]));
        }
        if m["role"] != "assistant" {
            continue;
        }
        let uses: Vec<&str> = m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        if uses.is_empty() {
            continue;
        }
        let Some(next) = msgs.get(i + 1) else {
            violations.lock().unwrap().push(format!("tool_use at message {i} has no following message"));
            continue;
        };
        let results: Vec<&str> = next["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        for u in uses {
            if !results.contains(&u) {
                violations.lock().unwrap().push(format!("tool_use {u} has no tool_result"));
            }
        }
    }
}

/// Records every request (method, path, JSON body) and answers 200 `{"ok":true}`.
pub struct Receiver {
    pub url: String,
    pub hits: Arc<Mutex<Vec<(String, String, Value)>>>,
    server: Arc<tiny_http::Server>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let hits = Arc::new(Mutex::new(Vec::new()));
        let (srv, h) = (Arc::clone(&server), Arc::clone(&hits));
        let handle = std::thread::spawn(move || {
            while let Ok(mut rq) = srv.recv() {
                let mut body = String::new();
                let _ = rq.as_reader().read_to_string(&mut body);
                h.lock().unwrap().push((
                    rq.method().to_string(),
                    rq.url().to_string(),
                    serde_json::from_str(&body).unwrap_or(Value::Null),
                ));
                let _ = rq.respond(tiny_http::Response::from_string("{\"ok\":true}"));
            }
        });
        Receiver { url, hits, server, handle: Some(handle) }
    }
    pub fn hits(&self) -> Vec<(String, String, Value)> {
        self.hits.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A reply with no content at all (models do this after tool results sometimes).
pub fn empty() -> Step {
    Step::ok(message(vec![], "end_turn"))
}

/// A config tune for the `small` profile (the short catalog and every small-model guard).
pub fn small(config: &mut agent_controller::config::Config) {
    config.api.profile = "small".into();
}

/// The real daemon with the real agent, talking to a scripted model on loopback. `tune`
/// adjusts the config before start (limits, timeouts).
pub fn llm_daemon(
    dir: &std::path::Path,
    script: Vec<Step>,
    tune: impl FnOnce(&mut agent_controller::config::Config),
) -> (super::TestDaemon, ScriptedLlm) {
    let llm = ScriptedLlm::start(script);
    let mut config = super::test_config(dir);
    config.api.base_url = llm.url.clone();
    config.api.api_key = agent_controller::util::secret::Secret::new("sk-test-key-123");
    config.api.max_retries = 2;
    tune(&mut config);
    let agent = agent_controller::agent::llm_agent(&config);
    (super::TestDaemon::start(config, agent), llm)
}

/// The real daemon with the real agent on a scripted server speaking `wire` (as `api`).
pub fn wire_daemon(
    dir: &std::path::Path,
    wire: Wire,
    script: Vec<Step>,
    tune: impl FnOnce(&mut agent_controller::config::Config),
) -> (super::TestDaemon, ScriptedLlm) {
    let llm = ScriptedLlm::start_wire(wire, "test-model", script);
    let mut config = super::test_config(dir);
    config.api.provider = wire.provider().into();
    config.api.model = "test-model".into();
    config.api.base_url = llm.url.clone();
    config.api.api_key = agent_controller::util::secret::Secret::new(format!("sk-{}-key-123", wire.provider()));
    config.api.max_retries = 2;
    tune(&mut config);
    let agent = agent_controller::agent::llm_agent(&config);
    (super::TestDaemon::start(config, agent), llm)
}
