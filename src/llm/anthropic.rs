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
}

impl Anthropic {
    pub fn new(transport: Transport, base_url: &str, key: Secret, model: &str) -> Anthropic {
        Anthropic {
            transport,
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            key,
            model: model.to_string(),
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
}

fn block_json(b: &Block) -> Value {
    match b {
        Block::Text { text } => json!({"type": "text", "text": text}),
        Block::Image { media_type, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        Block::ToolUse { id, name, input, .. } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        Block::ToolResult { tool_use_id, content, is_error } => json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content.iter().map(block_json).collect::<Vec<_>>(),
            "is_error": is_error,
        }),
    }
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
pub fn parse_reply(body: &str) -> Result<Reply, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("unreadable reply from the API: {e}"))?;
    let mut content = Vec::new();
    for block in v["content"].as_array().ok_or("the API reply has no `content`")? {
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
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Ok(Reply {
        content,
        stop_reason: stop_reason(v["stop_reason"].as_str().unwrap_or("end_turn")),
        usage: TokenUsage {
            input: n("input_tokens"),
            output: n("output_tokens"),
            cache_write: n("cache_creation_input_tokens"),
            cache_read: n("cache_read_input_tokens"),
        },
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
        let body: Arc<[u8]> =
            serde_json::to_vec(&self.body(request)).map_err(|e| LlmError::GaveUp(e.to_string()))?.into();
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
        parse_reply(&text).map_err(LlmError::GaveUp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_messages_are_quoted() {
        let m = api_message(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert_eq!(m, "Anthropic API 401 authentication_error: invalid x-api-key");
    }
}
