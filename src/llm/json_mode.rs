//! JSON action mode: any provider, driven without its tool calling.
//!
//! The session's tools are listed in the system prompt and the model answers with one flat JSON
//! action (`actions.rs`). The conversation goes out as plain text: an earlier call as the JSON
//! it came from, its result as a user message ("Result of browser_navigate: …", screenshots
//! beside it). A reply that is not a valid action is answered once, quoting the exact error,
//! where the session's `json_correction` unit asks (`Request::correct_once`); a bad reply after
//! it, or without it, is passed on as the model's words, as a native model's text is (the
//! session nudges once, then ends with them). Nothing is ever synthesized: no default
//! step, no context-free "think".
//! A call with no tools at all (a validator, a summary, the report asked for at the end) is
//! passed through as plain text.

use super::actions::{self, Action, Unusable};
use super::{Block, JsonReply, LlmError, Message, Provider, Reply, Request, Role, StopReason, TokenUsage, ToolDef};
use crate::wait::stop::StopSignal;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct JsonActions {
    inner: Arc<dyn Provider>,
    /// The endpoint enforces a reply schema (`reply_schema`, or the probe found it does): each
    /// reply is kept to the actions this turn offers, refs and options included.
    constrained: AtomicBool,
    /// The server refused a reply constrained to JSON (`Request::json_reply`): not asked again.
    json_refused: AtomicBool,
}

impl JsonActions {
    pub fn new(inner: Arc<dyn Provider>, constrained: bool) -> JsonActions {
        JsonActions { inner, constrained: AtomicBool::new(constrained), json_refused: AtomicBool::new(false) }
    }

    /// One plain call whose reply the server is asked to keep to one JSON object (a small model
    /// then cannot answer in prose or half an object), or to `schema`; a server that refuses
    /// the schema is asked for a plain object from then on, one that refuses that, for text.
    fn complete_json(
        &self,
        request: &Request<'_>,
        schema: Option<&Value>,
        stop: &StopSignal,
    ) -> Result<Reply, LlmError> {
        if let Some(schema) = schema.filter(|_| self.constrained.load(Ordering::Relaxed)) {
            match self.inner.complete(&Request { json_reply: JsonReply::Schema(schema), ..*request }, stop) {
                Err(LlmError::Rejected(m)) => {
                    log::info!("the endpoint refused a reply schema ({m}); asking for a plain JSON object");
                    self.constrained.store(false, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        if self.json_refused.load(Ordering::Relaxed) {
            return self.inner.complete(request, stop);
        }
        match self.inner.complete(&Request { json_reply: JsonReply::Object, ..*request }, stop) {
            Err(LlmError::Rejected(m)) => {
                log::info!("the endpoint refused a JSON-only reply ({m}); asking without");
                self.json_refused.store(true, Ordering::Relaxed);
                self.inner.complete(request, stop)
            }
            other => other,
        }
    }
}

/// The shapes a reply takes: as the prompt has always shown them, or (`constrained`) in the
/// order and names the reply schema holds them (`reply_schema.rs`).
const SHAPES: &str = "{\"action\": \"next_step\", \"thinking\": {\"observation\": \"…\", \"plan\": \"…\"}, \"tool\": \"<tool name>\", \"args\": {…}}\n\
     {\"action\": \"complete\", \"thinking\": {…}, \"message\": \"<summary of what was done and found>\"}\n\
     {\"action\": \"ask_user\", \"thinking\": {…}, \"question\": \"<what you need to know>\"}\n";
const CONSTRAINED_SHAPES: &str = "{\"action\": \"next_step\", \"thinking\": {\"observation\": \"…\", \"plan\": \"…\"}, \"tool\": \"<tool name>\", \"tool_args\": {…}}\n\
     {\"action\": \"complete\", \"message\": \"<summary of what was done and found>\", \"thinking\": {…}}\n\
     {\"action\": \"ask_user\", \"question\": \"<what you need to know>\", \"thinking\": {…}}\n";

/// The part of the system prompt that replaces tool calling.
fn instructions(tools: &[ToolDef], constrained: bool) -> String {
    let mut out = String::from(
        "## How to answer\n\
         You cannot call tools directly. Answer every message with exactly one JSON object and nothing else:\n",
    );
    out.push_str(if constrained { CONSTRAINED_SHAPES } else { SHAPES });
    out.push_str(
        "Use `thinking` to reason; there is no separate think step. One tool per reply; its result comes back in \
         the next message. `complete` ends the session.\n\n## Tools\n",
    );
    for t in tools {
        out.push_str(&format!("- {}: {} args: {}\n", t.name, t.description, shape(&t.input_schema)));
    }
    out
}

/// A schema as a short signature, `{selector: string, clear?: boolean}`: a small model shown
/// the JSON Schema itself copies it into `args`.
fn shape(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join("|");
    }
    match schema["type"].as_str() {
        Some("array") => format!("[{}]", shape(&schema["items"])),
        Some("object") | None if schema["properties"].is_object() => {
            let required: Vec<&str> =
                schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let props = schema["properties"].as_object().into_iter().flatten();
            // The required ones first (in their order), then the optional ones.
            let (mut first, rest): (Vec<_>, Vec<_>) = props.partition(|(name, _)| required.contains(&name.as_str()));
            first.sort_by_key(|(name, _)| required.iter().position(|r| r == name));
            let field = |(name, s): (&String, &Value), mark: &str| format!("{name}{mark}: {}", shape(s));
            let fields: Vec<String> =
                first.into_iter().map(|f| field(f, "")).chain(rest.into_iter().map(|f| field(f, "?"))).collect();
            format!("{{{}}}", fields.join(", "))
        }
        Some(t) => t.to_string(),
        None => "any".to_string(),
    }
}

/// The conversation as plain text turns (tool calls as their JSON, results as user text).
fn as_text(messages: &[Message]) -> Vec<Message> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let mut content = Vec::new();
        // An earlier reply is sent back as the call it became, not twice.
        let is_call = m.content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        for b in &m.content {
            match b {
                Block::Text { .. } if is_call => {}
                Block::ToolUse { id, name, input, .. } => {
                    names.insert(id.clone(), name.clone());
                    let call = json!({"action": "next_step", "tool": name, "args": input});
                    content.push(Block::text(call.to_string()));
                }
                Block::ToolResult { tool_use_id, content: inner, is_error } => {
                    let name = names.get(tool_use_id).map_or("the tool", String::as_str);
                    let text: Vec<&str> = inner
                        .iter()
                        .filter_map(|b| match b {
                            Block::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let label = if *is_error { "Error from" } else { "Result of" };
                    content.push(Block::text(format!("{label} {name}: {}", text.join("\n"))));
                    content.extend(inner.iter().filter(|b| matches!(b, Block::Image { .. })).cloned());
                }
                other => content.push(other.clone()),
            }
        }
        out.push(Message { role: m.role, content });
    }
    out
}

/// The reply's action read exactly as asked (`constrained`: in the reply schema's names), else
/// (where the request allows) in another shape; whether it was read loosely.
fn read_action(text: &str, request: &Request<'_>, constrained: bool) -> Result<(Action, bool), Unusable> {
    let tools = request.known_tools();
    let args_key = if constrained { "tool_args" } else { "args" };
    match actions::read_exact(text, &tools, args_key) {
        Ok(action) => Ok((action, false)),
        Err(_) if request.loose_actions => actions::read(text, &tools).map(|a| (a, true)),
        Err(e) => Err(e),
    }
}

/// The tool call an action stands for, in the session's own tools.
fn to_call(action: Action, tools: &[ToolDef]) -> Result<(String, Value), Unusable> {
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    match action {
        Action::Tool { tool, args } => Ok((tool, args)),
        Action::Complete { message } => ["finish_task", "finish_exploration"]
            .into_iter()
            .find(|n| has(n))
            .map(|n| (n.to_string(), json!({"summary": message})))
            .ok_or(Unusable::CannotComplete),
        Action::AskUser { question } if has("ask_user") => Ok(("ask_user".into(), json!({"question": question}))),
        Action::AskUser { .. } => Err(Unusable::NobodyToAsk),
    }
}

impl Provider for JsonActions {
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError> {
        // No tools (a report written at the end): plain text in, plain text out.
        if request.tools.is_empty() {
            let messages = as_text(request.messages);
            return self.inner.complete(&Request { messages: &messages, ..*request }, stop);
        }
        let constrained = self.constrained.load(Ordering::Relaxed);
        let system = format!("{}\n\n{}", request.system, instructions(request.tools, constrained));
        // Built from the tools as narrowed to the page where the session narrowed them.
        let schema = constrained.then(|| super::reply_schema::for_actions(request.narrowed.unwrap_or(request.tools)));
        let mut messages = as_text(request.messages);
        let mut usage = TokenUsage::default();
        let mut last_error = String::new();
        let mut corrected = None;
        let mut said = String::new();
        let attempts = if request.correct_once { 2 } else { 1 };
        for attempt in 0..attempts {
            let plain = Request::plain(&system, &messages, request.max_tokens);
            let reply = self.complete_json(&plain, schema.as_ref(), stop)?;
            usage = usage.plus(reply.usage);
            let text = super::joined_text(&reply.content, "\n");
            match read_action(&text, request, constrained)
                .and_then(|(a, loose)| Ok((to_call(a, request.tools)?, loose)))
            {
                Ok(((name, args), loose_action)) => {
                    let id = format!("json_{}_{attempt}", request.messages.len());
                    let mut content = vec![Block::tool_use(id, name, args)];
                    if !text.trim().is_empty() {
                        content.insert(0, Block::text(text));
                    }
                    return Ok(Reply { content, stop_reason: StopReason::ToolUse, usage, loose_action, corrected });
                }
                Err(e) => last_error = e.to_string(),
            }
            if attempt + 1 == attempts {
                said = text;
                break;
            }
            corrected = Some(last_error.clone());
            let quoted = format!(
                "Your reply could not be used: {last_error}. Answer again with exactly one JSON object as described."
            );
            let echoed = if text.trim().is_empty() { "(an empty reply)".to_string() } else { text };
            messages.push(Message { role: Role::Assistant, content: vec![Block::text(echoed)] });
            messages.push(Message::user(vec![Block::text(quoted)]));
        }
        // Not an action (after the correction, where asked): the reply counts as words, as a
        // native model's text does (the session nudges once, then ends with them) rather than
        // ending the session here.
        log::info!("the model's reply was not a valid action ({attempts} tries): {last_error}");
        let content = if said.trim().is_empty() { Vec::new() } else { vec![Block::text(said)] };
        Ok(Reply { content, stop_reason: StopReason::EndTurn, usage, loose_action: false, corrected })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn schemas_are_shown_as_short_signatures() {
        let schema = json!({"type": "object", "properties": {
            "selector": {"type": "string"}, "clear": {"type": "boolean"},
            "format": {"type": "string", "enum": ["csv", "json"]},
            "fields": {"type": "array", "items": {"type": "object",
                "properties": {"selector": {"type": "string"}, "value": {"type": "string"}}, "required": ["selector"]}}},
            "required": ["selector"]});
        assert_eq!(
            super::shape(&schema),
            r#"{selector: string, clear?: boolean, fields?: [{selector: string, value?: string}], format?: "csv"|"json"}"#
        );
    }
}
