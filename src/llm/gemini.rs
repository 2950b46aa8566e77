//! The Gemini adapter (`POST {base_url}/v1beta/models/{model}:generateContent`).
//!
//! Out: `systemInstruction`; `contents` with `user`/`model` roles; tools as
//! `functionDeclarations` whose schemas are cut down to the subset Gemini accepts (upper-case
//! types; no `additionalProperties`, `$schema`, `oneOf`…); a call as `functionCall` with the
//! `thoughtSignature` it came with, sent back unchanged; each result as a `functionResponse`
//! with the call's name (and id); screenshots as `inlineData`. In: the parts of the first
//! candidate (thought parts skipped), `usageMetadata` as usage, a blocked prompt or an empty
//! candidate as a clear error. `RESOURCE_EXHAUSTED` is retried after its `retryDelay`. The key
//! goes only into the `x-goog-api-key` header, never into the URL.

use super::limits::tokens;
use super::transport::{Call, Transport};
use super::{Block, LlmError, Message, Provider, Reply, Request, Role, StopReason, TokenUsage};
use crate::util::secret::Secret;
use crate::wait::stop::StopSignal;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub struct Gemini {
    transport: Transport,
    url: String,
    key: Secret,
    temperature: Option<f32>,
}

impl Gemini {
    pub fn new(transport: Transport, base_url: &str, key: Secret, model: &str) -> Gemini {
        let base = base_url.trim_end_matches('/');
        let model = model.trim_start_matches("models/");
        Gemini { transport, url: format!("{base}/v1beta/models/{model}:generateContent"), key, temperature: None }
    }

    /// Sample at this temperature (unset: the provider's default).
    pub fn with_temperature(mut self, temperature: Option<f32>) -> Self {
        self.temperature = temperature;
        self
    }

    /// The JSON body for a request (public for tests of the wire shape).
    pub fn body(&self, request: &Request<'_>) -> Value {
        let mut names: HashMap<&str, &str> = HashMap::new();
        let contents: Vec<Value> = request.messages.iter().map(|m| content_json(m, &mut names)).collect();
        let mut body = json!({
            "systemInstruction": {"parts": [{"text": request.system}]},
            "contents": contents,
            "generationConfig": {"maxOutputTokens": request.max_tokens},
        });
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parameters": gemini_schema(&t.input_schema)}))
                .collect();
            body["tools"] = json!([{"functionDeclarations": declarations}]);
            if request.require_tool {
                body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY"}});
            }
        }
        if let Some(t) = self.temperature {
            body["generationConfig"]["temperature"] = json!(t);
        }
        if request.json_reply != super::JsonReply::Free {
            body["generationConfig"]["responseMimeType"] = json!("application/json");
        }
        body
    }
}

/// A JSON Schema cut down to Gemini's `Schema` object.
pub fn gemini_schema(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else { return schema.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "type" => {
                out.insert(key.clone(), json!(value.as_str().unwrap_or("string").to_ascii_uppercase()));
            }
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, sub)| (name.clone(), gemini_schema(sub)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(key.clone(), gemini_schema(value));
            }
            "required" if value.as_array().is_some_and(|r| !r.is_empty()) => {
                out.insert(key.clone(), value.clone());
            }
            "description" | "enum" | "format" | "nullable" | "minimum" | "maximum" | "minItems" | "maxItems" => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// One message as a `Content`; remembers call names so results can name their call.
fn content_json<'a>(m: &'a Message, names: &mut HashMap<&'a str, &'a str>) -> Value {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for b in &m.content {
        match b {
            Block::Text { text } => parts.push(json!({"text": text})),
            Block::Image { media_type, data } => images.push(inline(media_type, data)),
            Block::ToolUse { id, name, input, signature } => {
                names.insert(id, name);
                let mut call = json!({"name": name, "args": input});
                if !id.starts_with("gemini_") {
                    call["id"] = json!(id);
                }
                let mut part = json!({"functionCall": call});
                if let Some(s) = signature {
                    part["thoughtSignature"] = json!(s);
                }
                parts.push(part);
            }
            Block::ToolResult { tool_use_id, content, is_error } => {
                let name = names.get(tool_use_id.as_str()).copied().unwrap_or("tool");
                let text = super::joined_text(content, "\n");
                let result = if *is_error { json!({"error": text}) } else { json!({"result": text}) };
                let mut response = json!({"name": name, "response": result});
                if !tool_use_id.starts_with("gemini_") {
                    response["id"] = json!(tool_use_id);
                }
                parts.push(json!({"functionResponse": response}));
                for inner in content {
                    if let Block::Image { media_type, data } = inner {
                        images.push(inline(media_type, data));
                    }
                }
            }
        }
    }
    parts.extend(images);
    let role = if m.role == Role::Assistant { "model" } else { "user" };
    json!({"role": role, "parts": parts})
}

fn inline(media_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": media_type, "data": data}})
}

pub fn api_message(status: u16, body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    match v["error"]["message"].as_str() {
        Some(m) => format!("Gemini API {status} {}: {m}", v["error"]["status"].as_str().unwrap_or("error")),
        None => {
            let excerpt: String = body.chars().take(300).collect();
            format!("Gemini API {status}: {}", if excerpt.is_empty() { "(empty body)".into() } else { excerpt })
        }
    }
}

/// `RetryInfo.retryDelay` ("17s", "0.5s") from an error body, when sane (≤ 60 s).
pub fn retry_delay(_status: u16, body: &str) -> Option<Duration> {
    let v: Value = serde_json::from_str(body).ok()?;
    let details = v["error"]["details"].as_array()?;
    let delay = details.iter().find_map(|d| d["retryDelay"].as_str())?;
    let secs: f64 = delay.trim().trim_end_matches('s').parse().ok()?;
    (secs > 0.0 && secs <= 60.0).then(|| Duration::from_secs_f64(secs))
}

/// The reply body as neutral blocks (public for the fuzz tests, like `body`).
pub fn parse_reply(body: &str, turn: usize) -> Result<Reply, LlmError> {
    let v: Value = serde_json::from_str(body).map_err(LlmError::Unreadable)?;
    let Some(candidate) = v["candidates"].get(0) else {
        let why = v["promptFeedback"]["blockReason"].as_str().unwrap_or("no candidates in the reply");
        return Err(LlmError::Rejected(format!("Gemini returned no answer: {}", super::bounded_message(why))));
    };
    let mut content = Vec::new();
    for (i, part) in candidate["content"]["parts"].as_array().into_iter().flatten().enumerate() {
        if part["thought"] == true {
            continue;
        }
        if let Some(t) = part["text"].as_str().filter(|t| !t.is_empty()) {
            content.push(Block::text(t));
        } else if let Some(call) = part.get("functionCall") {
            let id = call["id"].as_str().map_or_else(|| format!("gemini_{turn}_{i}"), str::to_string);
            let name = call["name"].as_str().unwrap_or("");
            let signature = part["thoughtSignature"].as_str().map(str::to_string);
            let input = call.get("args").cloned().unwrap_or_else(|| json!({}));
            content.push(Block::ToolUse { id, name: name.to_string(), input, signature });
        }
    }
    let has_calls = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop_reason = match candidate["finishReason"].as_str().unwrap_or("STOP") {
        _ if has_calls => StopReason::ToolUse,
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    };
    let u = &v["usageMetadata"];
    let cached = tokens(&u["cachedContentTokenCount"]);
    let usage = TokenUsage::reported(
        tokens(&u["promptTokenCount"]).saturating_sub(cached),
        tokens(&u["candidatesTokenCount"]).saturating_add(tokens(&u["thoughtsTokenCount"])),
        cached,
        0,
    );
    Ok(Reply { content, stop_reason, usage, loose_action: false, corrected: None })
}

impl Provider for Gemini {
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError> {
        let body: Arc<[u8]> = serde_json::to_vec(&self.body(request)).map_err(LlmError::Encoding)?.into();
        let call = Call {
            url: &self.url,
            headers: vec![("x-goog-api-key", self.key.expose().to_string())],
            body,
            api_name: "Gemini API",
            describe: &api_message,
            is_final: &|_, _| false,
            retry_delay: &retry_delay,
        };
        let text = self.transport.send(&call, stop)?;
        parse_reply(&text, request.messages.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_cut_to_what_gemini_accepts() {
        let schema = json!({"type": "object", "additionalProperties": false, "$schema": "x",
            "properties": {"urls": {"type": "array", "items": {"type": "object", "oneOf": [],
                "properties": {"url": {"type": "string", "description": "d"}}, "required": ["url"]}},
                "mode": {"type": "string", "enum": ["a", "b"]}},
            "required": []});
        let g = gemini_schema(&schema);
        assert_eq!(g["type"], "OBJECT");
        assert!(g.get("additionalProperties").is_none() && g.get("$schema").is_none() && g.get("required").is_none());
        assert_eq!(g["properties"]["urls"]["items"]["properties"]["url"]["type"], "STRING");
        assert!(g["properties"]["urls"]["items"].get("oneOf").is_none());
        assert_eq!(g["properties"]["mode"]["enum"], json!(["a", "b"]));
    }

    #[test]
    fn retry_delay_and_blocked_prompts() {
        let body = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}"#;
        assert_eq!(retry_delay(429, body), Some(Duration::from_secs(2)));
        assert_eq!(api_message(429, body), "Gemini API 429 RESOURCE_EXHAUSTED: quota");
        let blocked = r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#;
        assert!(matches!(parse_reply(blocked, 1), Err(LlmError::Rejected(m)) if m.contains("SAFETY")));
    }
}
