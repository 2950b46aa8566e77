//! The Anthropic Messages adapter (`POST {api.base_url}/v1/messages`).
//!
//! Tools and system are marked for prompt caching; images go as base64 blocks; every
//! `stop_reason` maps onto the neutral one. Sending, retries and cancellation are the shared
//! transport's; this file only builds the body, words the API's errors and reads the reply.
//! The key is only ever put in the `x-api-key` header.

use super::transport::{Call, Transport};
use super::{Block, LlmError, Provider, Reply, Request, StopReason, TokenUsage};
use crate::util::secret::Secret;
use crate::wait::stop::StopSignal;
use serde_json::{Value, json};
use std::sync::Arc;

pub const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    transport: Transport,
    url: String,
    key: Secret,
    model: String,
    temperature: Option<f32>,
}

impl Anthropic {
    pub fn new(transport: Transport, base_url: &str, key: Secret, model: &str) -> Anthropic {
        Anthropic {
            transport,
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            key,
            model: model.to_string(),
            temperature: None,
        }
    }

    /// Sample at this temperature (unset: the provider's default).
    pub fn with_temperature(mut self, temperature: Option<f32>) -> Self {
        self.temperature = temperature;
        self
    }

    /// The JSON body for a request, as a value (public for tests of the wire shape).
    pub fn body(&self, request: &Request<'_>) -> Value {
        serde_json::from_slice(&self.body_bytes(request)).unwrap_or_default()
    }

    /// The JSON body written straight to bytes: a turn serializes the whole conversation and
    /// every tool schema, and a `Value` tree of them (built, written, freed) was most of a
    /// step's CPU. Tools and system are marked for prompt caching (one breakpoint each).
    pub fn body_bytes(&self, request: &Request<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(b"{\"model\":");
        put(&mut out, &self.model);
        out.extend_from_slice(format!(",\"max_tokens\":{}", request.max_tokens).as_bytes());
        if let Some(t) = self.temperature {
            out.extend_from_slice(format!(",\"temperature\":{t}").as_bytes());
        }
        out.extend_from_slice(b",\"system\":[{\"type\":\"text\",\"text\":");
        put(&mut out, request.system);
        out.extend_from_slice(b",\"cache_control\":{\"type\":\"ephemeral\"}}],\"messages\":[");
        for (i, m) in request.messages.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"{\"role\":" } else { b",{\"role\":" });
            put(&mut out, &m.role);
            out.extend_from_slice(b",\"content\":");
            put_blocks(&mut out, &m.content);
            out.push(b'}');
        }
        out.push(b']');
        for (i, t) in request.tools.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b",\"tools\":[{\"name\":" } else { b",{\"name\":" });
            put(&mut out, t.name);
            out.extend_from_slice(b",\"description\":");
            put(&mut out, t.description);
            out.extend_from_slice(b",\"input_schema\":");
            put(&mut out, &t.input_schema);
            if i + 1 == request.tools.len() {
                out.extend_from_slice(b",\"cache_control\":{\"type\":\"ephemeral\"}}]");
            } else {
                out.push(b'}');
            }
        }
        if request.require_tool && !request.tools.is_empty() {
            out.extend_from_slice(b",\"tool_choice\":{\"type\":\"any\"}");
        }
        out.push(b'}');
        out
    }
}

/// Append `value` as JSON (strings, roles and stored values never fail to serialize).
fn put<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

fn put_blocks(out: &mut Vec<u8>, blocks: &[Block]) {
    out.push(b'[');
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_block(out, b);
    }
    out.push(b']');
}

fn put_block(out: &mut Vec<u8>, b: &Block) {
    match b {
        Block::Text { text } => {
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
            put(out, text);
        }
        Block::Image { media_type, data } => {
            out.extend_from_slice(b"{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":");
            put(out, media_type);
            out.extend_from_slice(b",\"data\":");
            put(out, data);
            out.push(b'}');
        }
        Block::ToolUse { id, name, input, .. } => {
            out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
            put(out, id);
            out.extend_from_slice(b",\"name\":");
            put(out, name);
            out.extend_from_slice(b",\"input\":");
            put(out, input);
        }
        Block::ToolResult { tool_use_id, content, is_error } => {
            out.extend_from_slice(b"{\"type\":\"tool_result\",\"tool_use_id\":");
            put(out, tool_use_id);
            out.extend_from_slice(b",\"content\":");
            put_blocks(out, content);
            out.extend_from_slice(format!(",\"is_error\":{is_error}").as_bytes());
        }
    }
    out.push(b'}');
}

/// `error.message` of an API error body, else a short excerpt of the body.
pub fn api_message(status: u16, body: &str) -> String {
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

/// The reply body as neutral blocks (public for the fuzz tests, like `body`).
pub fn parse_reply(body: &str) -> Result<Reply, LlmError> {
    let v: Value = serde_json::from_str(body).map_err(LlmError::Unreadable)?;
    let mut content = Vec::new();
    let blocks = v["content"].as_array().ok_or_else(|| LlmError::gave_up("the API reply has no `content`"))?;
    for block in blocks {
        match block["type"].as_str() {
            // Empty text blocks cannot be sent back; drop them.
            Some("text") if block["text"].as_str().is_some_and(|t| !t.is_empty()) => {
                content.push(Block::text(block["text"].as_str().unwrap_or("")))
            }
            Some("tool_use") => content.push(Block::tool_use(
                block["id"].as_str().unwrap_or(""),
                block["name"].as_str().unwrap_or(""),
                block.get("input").cloned().unwrap_or_else(|| json!({})),
            )),
            _ => {} // thinking and server-tool blocks are not used by this agent
        }
    }
    let u = &v["usage"];
    let n = |k: &str| super::limits::tokens(&u[k]);
    Ok(Reply {
        content,
        stop_reason: stop_reason(v["stop_reason"].as_str().unwrap_or("end_turn")),
        usage: TokenUsage::reported(
            n("input_tokens"),
            n("output_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        ),
        loose_action: false,
        corrected: None,
    })
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" | "pause_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextFull,
        other => StopReason::Other(other.to_string()),
    }
}

impl Provider for Anthropic {
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError> {
        let body: Arc<[u8]> = self.body_bytes(request).into();
        let call = Call {
            url: &self.url,
            headers: vec![("x-api-key", self.key.expose().to_string()), ("anthropic-version", API_VERSION.into())],
            body,
            api_name: "Anthropic API",
            describe: &api_message,
            // A spend cap does not lift by retrying (the Messages API reference, errors).
            is_final: &|status, text| status == 429 && text.contains("enforced_spend_limit_reached"),
            retry_delay: &|_, _| None,
        };
        let text = self.transport.send(&call, stop)?;
        parse_reply(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_wire_shape_and_two_cache_breakpoints() {
        use super::super::{Message, ToolDef};
        let anthropic =
            Anthropic::new(Transport::new(std::time::Duration::from_secs(1), 0), "http://x", Secret::new("k"), "m");
        let tools = [
            ToolDef { name: "a", description: "first", input_schema: json!({"type": "object"}) },
            ToolDef { name: "b", description: "second \"quoted\"", input_schema: json!({"type": "object"}) },
        ];
        let messages = [
            Message::user(vec![
                Block::text("go\n"),
                Block::Image { media_type: "image/png".into(), data: "QUJD".into() },
            ]),
            Message::assistant(vec![Block::tool_use("t1", "a", json!({"x": [1, 2]}))]),
            Message::user(vec![Block::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![Block::text("ok")],
                is_error: true,
            }]),
        ];
        let request = Request {
            system: "sys",
            tools: &tools,
            unlisted: &[],
            require_tool: false,
            json_reply: crate::llm::JsonReply::Free,
            narrowed: None,
            messages: &messages,
            max_tokens: 7,
            loose_actions: false,
            correct_once: false,
        };
        let body = anthropic.body(&request);
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 7);
        assert_eq!(body["system"], json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]));
        assert_eq!(body["tools"][0], json!({"name": "a", "description": "first", "input_schema": {"type": "object"}}));
        assert_eq!(body["tools"][1]["description"], "second \"quoted\"");
        assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(body["messages"][0]["content"][0], json!({"type": "text", "text": "go\n"}));
        assert_eq!(
            body["messages"][0]["content"][1]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": "QUJD"})
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {"x": [1, 2]}}]})
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}], "is_error": true})
        );
        let no_tools = Request::plain("s", &messages[..1], 1);
        assert!(anthropic.body(&no_tools).get("tools").is_none());
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
