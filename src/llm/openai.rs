//! The OpenAI-compatible Chat Completions adapter (`POST {base_url}/v1/chat/completions`):
//! OpenAI, Ollama, vLLM, llama.cpp, LM Studio.
//!
//! Out: the system prompt first; tools as `{"type":"function","function":{…}}`; an assistant
//! turn as text plus `tool_calls` with string `arguments`; each result as one `role: "tool"`
//! message with its `tool_call_id`; screenshots as `image_url` data URLs in a user message
//! after the tool messages (most servers refuse images in tool messages). In: what real
//! servers send — `content: null`, `arguments` as a string or an object, missing or repeated
//! call ids (replaced by our own), `finish_reason: "stop"` with calls. A call written as text is
//! the small profile's `text_call` unit, in every wire format, not this adapter's. The
//! key, when there is one, goes only into the `Authorization` header.

use super::limits::tokens;
use super::transport::{Call, Transport};
use super::{Block, JsonReply, LlmError, Message, Provider, Reply, Request, Role, StopReason, TokenUsage};
use crate::util::secret::Secret;
use crate::wait::stop::StopSignal;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

pub struct OpenAi {
    transport: Transport,
    url: String,
    key: Secret,
    model: String,
    temperature: Option<f32>,
}

impl OpenAi {
    /// `base_url` with or without `/v1` (`http://127.0.0.1:11434` and `…:11434/v1` both work).
    pub fn new(transport: Transport, base_url: &str, key: Secret, model: &str) -> OpenAi {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        OpenAi {
            transport,
            url: format!("{base}/v1/chat/completions"),
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

    /// The JSON body for a request (public for tests of the wire shape).
    pub fn body(&self, request: &Request<'_>) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        for m in request.messages {
            match m.role {
                Role::Assistant => messages.push(assistant_json(m)),
                Role::User => messages.extend(user_json(m)),
            }
        }
        let mut body =
            json!({"model": self.model, "messages": messages, "max_tokens": request.max_tokens, "stream": false});
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        match request.json_reply {
            JsonReply::Free => {}
            JsonReply::Object => body["response_format"] = json!({"type": "json_object"}),
            // The nested form llama.cpp, vLLM and OpenAI read alike.
            JsonReply::Schema(schema) => {
                body["response_format"] =
                    json!({"type": "json_schema", "json_schema": {"name": "action", "schema": schema}});
            }
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
                })
                .collect();
            body["tools"] = Value::Array(tools);
            if request.require_tool {
                body["tool_choice"] = json!("required");
            }
        }
        body
    }
}

fn assistant_json(m: &Message) -> Value {
    let text = m.text();
    let calls: Vec<Value> = m
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input, .. } => Some(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": input.to_string()},
            })),
            _ => None,
        })
        .collect();
    let mut out = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        out["tool_calls"] = Value::Array(calls);
    }
    out
}

fn data_url(media_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}})
}

/// One `tool` message per result, then one user message with the text and every image.
fn user_json(m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parts = Vec::new();
    for b in &m.content {
        match b {
            Block::ToolResult { tool_use_id, content, is_error } => {
                let mut text = super::joined_text(content, "\n");
                if *is_error {
                    text = format!("Error: {text}");
                }
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": text}));
                for inner in content {
                    if let Block::Image { media_type, data } = inner {
                        parts.push(data_url(media_type, data));
                    }
                }
            }
            Block::Text { text } => parts.push(json!({"type": "text", "text": text})),
            Block::Image { media_type, data } => parts.push(data_url(media_type, data)),
            Block::ToolUse { .. } => {}
        }
    }
    if !parts.is_empty() {
        if parts.iter().all(|p| p["type"] == "image_url") {
            parts.insert(0, json!({"type": "text", "text": "The screenshot from the tool result above:"}));
        }
        out.push(json!({"role": "user", "content": parts}));
    }
    out
}

/// `error.message` (object, string or flat), for the log and the session.
pub fn api_message(status: u16, body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let message = v["error"]["message"].as_str().or(v["error"].as_str()).or(v["message"].as_str());
    match message {
        Some(m) => format!("OpenAI-compatible API {status}: {m}"),
        None => {
            let excerpt: String = body.chars().take(300).collect();
            format!(
                "OpenAI-compatible API {status}: {}",
                if excerpt.is_empty() { "(empty body)".into() } else { excerpt }
            )
        }
    }
}

/// The tool calls of a reply, with ids that are present and unique.
fn tool_calls(message: &Value, turn_tag: &str) -> Vec<Block> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let f = &call["function"];
        let name = f["name"].as_str().or(call["name"].as_str()).unwrap_or("").to_string();
        let raw = if f.is_object() { &f["arguments"] } else { &call["arguments"] };
        let input = match raw {
            Value::String(s) if s.trim().is_empty() => json!({}),
            Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| json!({"_unparsed_arguments": s})),
            Value::Null => json!({}),
            other => other.clone(),
        };
        let given = call["id"].as_str().filter(|id| !id.is_empty() && seen.insert(id.to_string()));
        let id = given.map_or_else(|| made_id(&mut seen, format!("call_{turn_tag}_{i}")), str::to_string);
        out.push(Block::tool_use(id, name, input));
    }
    out
}

/// An id for a call that came without a usable one: `base`, made unique against the reply's
/// others (a server may send `call_1_1` itself).
fn made_id(seen: &mut HashSet<String>, base: String) -> String {
    let mut id = base;
    while !seen.insert(id.clone()) {
        id.push('_');
    }
    id
}

/// The reply body as neutral blocks (public for the fuzz tests, like `body`).
pub fn parse_reply(body: &str, request: &Request<'_>) -> Result<Reply, LlmError> {
    let v: Value = serde_json::from_str(body).map_err(LlmError::Unreadable)?;
    let choice = &v["choices"][0];
    if choice.is_null() {
        return Err(LlmError::BadReply("the API reply has no `choices`".into()));
    }
    let message = &choice["message"];
    let text = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    let turn_tag = format!("{}", request.messages.len());
    let mut content = tool_calls(message, &turn_tag);
    if !text.trim().is_empty() {
        content.insert(0, Block::text(text));
    }
    let has_calls = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop_reason = match choice["finish_reason"].as_str().unwrap_or("stop") {
        _ if has_calls => StopReason::ToolUse,
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    };
    let u = &v["usage"];
    let cached = tokens(&u["prompt_tokens_details"]["cached_tokens"]);
    let usage = TokenUsage::reported(
        tokens(&u["prompt_tokens"]).saturating_sub(cached),
        tokens(&u["completion_tokens"]),
        cached,
        0,
    );
    Ok(Reply { content, stop_reason, usage, loose_action: false, corrected: None })
}

impl Provider for OpenAi {
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError> {
        let body: Arc<[u8]> = serde_json::to_vec(&self.body(request)).map_err(LlmError::Encoding)?.into();
        let mut headers = Vec::new();
        if !self.key.is_empty() {
            headers.push(("authorization", format!("Bearer {}", self.key.expose())));
        }
        let call = Call {
            url: &self.url,
            headers,
            body,
            api_name: "OpenAI-compatible API",
            describe: &api_message,
            is_final: &|status, text| status == 429 && text.contains("insufficient_quota"),
            retry_delay: &|_, _| None,
        };
        let text = self.transport.send(&call, stop)?;
        parse_reply(&text, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolDef;

    fn request<'a>(messages: &'a [Message], tools: &'a [ToolDef]) -> Request<'a> {
        Request {
            system: "sys",
            tools,
            unlisted: &[],
            require_tool: false,
            json_reply: crate::llm::JsonReply::Free,
            narrowed: None,
            messages,
            max_tokens: 100,
            loose_actions: false,
            correct_once: false,
        }
    }

    fn call_ids(reply: &Reply) -> Vec<String> {
        reply
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn quirks_of_real_servers_are_tolerated() {
        let tools = [ToolDef {
            name: "browser_navigate",
            description: "",
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
        }];
        let msgs = [Message::user(vec![Block::text("go")])];
        let req = request(&msgs, &tools);
        let reply = |message: Value, finish: &str| {
            json!({"choices": [{"message": message, "finish_reason": finish}], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).to_string()
        };
        // Object arguments, no ids, duplicate ids, finish_reason stop.
        let body = reply(
            json!({"content": null, "tool_calls": [
                {"function": {"name": "browser_navigate", "arguments": {"url": "https://a/"}}},
                {"id": "x", "function": {"name": "browser_navigate", "arguments": "{\"url\":\"https://b/\"}"}},
                {"id": "x", "function": {"name": "browser_navigate", "arguments": ""}}]}),
            "stop",
        );
        let r = parse_reply(&body, &req).unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        let ids = call_ids(&r);
        assert_eq!(ids.len(), 3);
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3, "{ids:?}");
        assert!(matches!(&r.content[0], Block::ToolUse { input, .. } if input["url"] == "https://a/"));
        // A call written as text stays text: reading it is the text_call unit's.
        let body = reply(
            json!({"content": "<tool_call>{\"name\": \"browser_navigate\", \"arguments\": {\"url\": \"https://c/\"}}</tool_call>"}),
            "stop",
        );
        let r = parse_reply(&body, &req).unwrap();
        assert_eq!(r.stop_reason, StopReason::EndTurn);
        assert!(r.content.iter().all(|b| matches!(b, Block::Text { .. })), "{:?}", r.content);
        // No choices at all.
        assert!(matches!(parse_reply("{}", &req), Err(LlmError::BadReply(_))));
    }

    #[test]
    fn made_ids_never_repeat_a_given_one() {
        let msgs = [Message::user(vec![Block::text("go")])];
        let tools = [ToolDef { name: "t", description: "", input_schema: json!({"type": "object"}) }];
        let body = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "call_1_1", "function": {"name": "t", "arguments": "{}"}},
            {"function": {"name": "t", "arguments": "{}"}}]}}]});
        let ids = call_ids(&parse_reply(&body.to_string(), &request(&msgs, &tools)).unwrap());
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1], "{ids:?}");
    }

    #[test]
    fn temperature_and_a_required_call_reach_the_body_only_when_asked() {
        let transport = || crate::llm::transport::Transport::new(std::time::Duration::from_secs(1), 0);
        let tools = [ToolDef { name: "t", description: "", input_schema: json!({"type": "object"}) }];
        let msgs = [Message::user(vec![Block::text("go")])];
        let plain = OpenAi::new(transport(), "http://x", Secret::default(), "m").body(&request(&msgs, &tools));
        assert!(plain.get("temperature").is_none() && plain.get("tool_choice").is_none(), "{plain}");
        assert!(plain.get("response_format").is_none(), "{plain}");
        let json_only = Request { json_reply: JsonReply::Object, ..request(&msgs, &[]) };
        let body = OpenAi::new(transport(), "http://x", Secret::default(), "m").body(&json_only);
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let req = Request { require_tool: true, ..request(&msgs, &tools) };
        let body = OpenAi::new(transport(), "http://x", Secret::default(), "m").with_temperature(Some(0.0)).body(&req);
        assert_eq!((body["temperature"].clone(), body["tool_choice"].clone()), (json!(0.0), json!("required")));
    }
}
