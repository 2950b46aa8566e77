//! The Anthropic Messages adapter (`POST {api.base_url}/v1/messages`).
//!
//! Tools and system are marked for prompt caching; images go as base64 blocks; every
//! `stop_reason` is understood. Retries follow the official SDK: 408/409/429/≥500 (incl. 529)
//! and connection errors, `x-should-retry` wins, `retry-after(-ms)` honoured up to 60 s,
//! otherwise 0.5 s doubling to 8 s with up to 25 % jitter, at most `api.max_retries` retries.
//! Other statuses fail at once with the API's own message. Each HTTP call runs on a helper
//! thread so a stop never waits for the network; the key is only ever put in a header.

use super::{Block, LlmError, Provider, Reply, Request, StopReason, sleep_unless_cancelled};
use crate::protocol::Usage;
use crate::vault::Secret;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub const API_VERSION: &str = "2023-06-01";
const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

pub struct Anthropic {
    agent: ureq::Agent,
    url: String,
    key: Secret,
    model: String,
    max_retries: u32,
}

/// What one HTTP attempt produced.
enum Attempt {
    Done(u16, Vec<(String, String)>, String),
    /// Connection error or timeout (no HTTP status).
    Network(String),
}

impl Anthropic {
    pub fn new(base_url: &str, key: Secret, model: &str, timeout: Duration, max_retries: u32) -> Anthropic {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(Duration::from_secs(10).min(timeout)))
            .build()
            .into();
        Anthropic {
            agent,
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            key,
            model: model.to_string(),
            max_retries,
        }
    }

    /// The JSON body for a request (public for tests of the wire shape).
    pub fn body(&self, request: &Request<'_>) -> Value {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        // One breakpoint on the last tool caches all tools; one on the system caches it too.
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content.iter().map(block_json).collect::<Vec<_>>()}))
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }

    fn attempt(&self, body: &Arc<[u8]>, retry_count: u32, cancelled: &dyn Fn() -> bool) -> Result<Attempt, LlmError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let agent = self.agent.clone();
        let url = self.url.clone();
        let key = self.key.expose().to_string();
        // Shared, not copied: with screenshots a request body is megabytes.
        let body = Arc::clone(body);
        std::thread::Builder::new()
            .name("llm-call".into())
            .spawn(move || {
                let result = agent
                    .post(&url)
                    .header("x-api-key", &key)
                    .header("anthropic-version", API_VERSION)
                    .header("content-type", "application/json")
                    .header("x-stainless-retry-count", retry_count.to_string())
                    .send(&body[..]);
                let attempt = match result {
                    Ok(mut resp) => {
                        let status = resp.status().as_u16();
                        let headers = resp
                            .headers()
                            .iter()
                            .filter(|(k, _)| {
                                matches!(k.as_str(), "retry-after" | "retry-after-ms" | "x-should-retry" | "request-id")
                            })
                            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                            .collect();
                        match resp.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_string() {
                            Ok(text) => Attempt::Done(status, headers, text),
                            Err(e) => Attempt::Network(format!("reading the response failed: {}", describe(&e))),
                        }
                    }
                    Err(e) => Attempt::Network(describe(&e)),
                };
                let _ = tx.send(attempt);
            })
            .map_err(|e| LlmError::GaveUp(format!("cannot start the LLM call: {e}")))?;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(a) => return Ok(a),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if cancelled() {
                        // The helper finishes on its own (bounded by the global timeout).
                        return Err(LlmError::Cancelled);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Ok(Attempt::Network("the LLM call ended without a result".into()));
                }
            }
        }
    }
}

/// An error description without the URL (ureq's messages can carry it; ours never need it).
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "the request timed out (api.timeout_s)".into(),
        ureq::Error::Io(io) => format!("connection error: {}", io.kind()),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::BodyExceedsLimit(n) => format!("response larger than {n} bytes"),
        _ => "HTTP client error".into(),
    }
}

fn block_json(b: &Block) -> Value {
    match b {
        Block::Text { text } => json!({"type": "text", "text": text}),
        Block::Image { media_type, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        Block::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        Block::ToolResult { tool_use_id, content, is_error } => json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content.iter().map(block_json).collect::<Vec<_>>(),
            "is_error": is_error,
        }),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Whether to retry, per the SDK: `x-should-retry` first, then the status.
fn should_retry(status: u16, headers: &[(String, String)]) -> bool {
    match header(headers, "x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The server's requested delay, when it is sane (0 < d ≤ 60 s).
fn retry_after(headers: &[(String, String)]) -> Option<Duration> {
    let ms = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()).map(|ms| ms / 1000.0);
    let secs = ms.or_else(|| header(headers, "retry-after").and_then(|v| v.trim().parse::<f64>().ok()))?;
    (secs > 0.0 && secs <= 60.0).then(|| Duration::from_secs_f64(secs))
}

/// 0.5 s · 2^n, capped at 8 s, minus up to 25 % jitter.
pub fn backoff(retries_done: u32) -> Duration {
    let base = (0.5 * 2f64.powi(retries_done.min(10) as i32)).min(8.0);
    Duration::from_secs_f64(base * (1.0 - 0.25 * (crate::clock::random_u64() % 10_000) as f64 / 10_000.0))
}

/// `error.message` of an API error body, else a short excerpt of the body.
fn api_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let kind = parsed.as_ref().and_then(|v| v["error"]["type"].as_str()).unwrap_or("error");
    match parsed.as_ref().and_then(|v| v["error"]["message"].as_str()) {
        Some(msg) => format!("Anthropic API {status} {kind}: {msg}"),
        None => {
            let excerpt: String = body.chars().take(300).collect();
            format!("Anthropic API {status}: {}", if excerpt.is_empty() { "(empty body)".into() } else { excerpt })
        }
    }
}

fn parse_reply(body: &str) -> Result<Reply, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("unreadable reply from the API: {e}"))?;
    let mut content = Vec::new();
    for block in v["content"].as_array().ok_or("the API reply has no `content`")? {
        match block["type"].as_str() {
            // Empty text blocks cannot be sent back; drop them.
            Some("text") if block["text"].as_str().is_some_and(|t| !t.is_empty()) => {
                content.push(Block::text(block["text"].as_str().unwrap_or("")))
            }
            Some("tool_use") => content.push(Block::ToolUse {
                id: block["id"].as_str().unwrap_or("").to_string(),
                name: block["name"].as_str().unwrap_or("").to_string(),
                input: block.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {} // thinking and server-tool blocks are not used by this agent
        }
    }
    let u = &v["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Ok(Reply {
        content,
        stop_reason: StopReason::parse(v["stop_reason"].as_str().unwrap_or("end_turn")),
        usage: Usage {
            input_tokens: n("input_tokens"),
            output_tokens: n("output_tokens"),
            cache_creation_input_tokens: n("cache_creation_input_tokens"),
            cache_read_input_tokens: n("cache_read_input_tokens"),
        },
    })
}

impl Provider for Anthropic {
    fn complete(&self, request: &Request<'_>, cancelled: &dyn Fn() -> bool) -> Result<Reply, LlmError> {
        let body: Arc<[u8]> =
            serde_json::to_vec(&self.body(request)).map_err(|e| LlmError::GaveUp(e.to_string()))?.into();
        let mut retries = 0;
        loop {
            let (delay, failure) = match self.attempt(&body, retries, cancelled)? {
                Attempt::Done(200, _, text) => return parse_reply(&text).map_err(LlmError::GaveUp),
                Attempt::Done(status, headers, text) => {
                    let message = api_message(status, &text);
                    // A spend cap does not lift by retrying (protocols.md §1.10).
                    let capped = status == 429 && text.contains("enforced_spend_limit_reached");
                    if capped || !should_retry(status, &headers) {
                        return Err(LlmError::Rejected(message));
                    }
                    (retry_after(&headers).unwrap_or_else(|| backoff(retries)), message)
                }
                Attempt::Network(message) => (backoff(retries), format!("Anthropic API unreachable: {message}")),
            };
            if retries >= self.max_retries {
                return Err(LlmError::GaveUp(format!("{failure} (gave up after {} retries)", retries)));
            }
            log::warn!("LLM call failed ({failure}); retry {} in {:.1} s", retries + 1, delay.as_secs_f64());
            if sleep_unless_cancelled(delay, cancelled) {
                return Err(LlmError::Cancelled);
            }
            retries += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules_follow_the_sdk() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(should_retry(s, &[]), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!should_retry(s, &[]), "{s}");
        }
        assert!(!should_retry(529, &[("x-should-retry".into(), "false".into())]));
        assert!(should_retry(400, &[("x-should-retry".into(), "true".into())]));
        assert_eq!(retry_after(&[("retry-after".into(), "2".into())]), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&[("retry-after-ms".into(), "1500".into())]), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(&[("retry-after".into(), "600".into())]), None);
        assert!(backoff(0) <= Duration::from_millis(500) && backoff(0) >= Duration::from_millis(375));
        assert!(backoff(10) <= Duration::from_secs(8) && backoff(10) >= Duration::from_secs(6));
    }

    #[test]
    fn api_messages_are_quoted() {
        let m = api_message(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert_eq!(m, "Anthropic API 401 authentication_error: invalid x-api-key");
    }
}
