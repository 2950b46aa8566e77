//! The other two wire formats for the scripted model server: OpenAI-compatible chat
//! completions and Gemini `generateContent`. Replies are built the way those servers send
//! them, and every recorded request is checked the way those servers check it (each call
//! answered by a result that names it).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::llm::Step;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

static N: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
    Gemini,
}

impl Wire {
    pub fn provider(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
            Wire::Gemini => "gemini",
        }
    }

    /// The path the adapter must post to (`model` for Gemini's URL).
    pub fn path(self, model: &str) -> String {
        match self {
            Wire::Anthropic => "/v1/messages".into(),
            Wire::OpenAi => "/v1/chat/completions".into(),
            Wire::Gemini => format!("/v1beta/models/{model}:generateContent"),
        }
    }

    pub fn tool(self, name: &str, input: Value) -> Step {
        match self {
            Wire::Anthropic => super::llm::tool(name, input),
            Wire::OpenAi => openai_tools(None, &[(name, input)]),
            Wire::Gemini => gemini_tools(&[(name, input)]),
        }
    }

    pub fn text(self, t: &str) -> Step {
        match self {
            Wire::Anthropic => super::llm::text(t),
            Wire::OpenAi => openai_text(t),
            Wire::Gemini => gemini_text(t),
        }
    }

    pub fn check(self, body: &Value, violations: &Mutex<Vec<String>>) {
        match self {
            Wire::Anthropic => super::llm::check_pairs(body, violations),
            Wire::OpenAi => check_openai(body, violations),
            Wire::Gemini => check_gemini(body, violations),
        }
    }
}

fn openai_usage() -> Value {
    json!({"prompt_tokens": 150, "completion_tokens": 20, "total_tokens": 170, "prompt_tokens_details": {"cached_tokens": 50}})
}

/// A chat completion calling tools, as OpenAI sends it (string arguments, `content: null`).
pub fn openai_tools(text: Option<&str>, calls: &[(&str, Value)]) -> Step {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, input)| {
            let n = N.fetch_add(1, Ordering::Relaxed);
            json!({"id": format!("call_{n:04}"), "type": "function", "function": {"name": name, "arguments": input.to_string()}})
        })
        .collect();
    openai_message(json!({"role": "assistant", "content": text, "tool_calls": calls}), "tool_calls")
}

pub fn openai_text(t: &str) -> Step {
    openai_message(json!({"role": "assistant", "content": t}), "stop")
}

pub fn openai_message(message: Value, finish: &str) -> Step {
    Step::ok(json!({"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}], "usage": openai_usage()}))
}

/// A Gemini reply calling tools; each call carries a `thoughtSignature` the next request must echo.
pub fn gemini_tools(calls: &[(&str, Value)]) -> Step {
    let parts: Vec<Value> = calls
        .iter()
        .map(|(name, args)| {
            let n = N.fetch_add(1, Ordering::Relaxed);
            json!({"functionCall": {"name": name, "args": args}, "thoughtSignature": format!("sig-{n:04}")})
        })
        .collect();
    gemini_parts(parts)
}

pub fn gemini_text(t: &str) -> Step {
    gemini_parts(vec![json!({"text": t})])
}

pub fn gemini_parts(parts: Vec<Value>) -> Step {
    Step::ok(json!({
        "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": parts}}],
        "usageMetadata": {"promptTokenCount": 150, "candidatesTokenCount": 20, "totalTokenCount": 170, "cachedContentTokenCount": 50},
        "modelVersion": "gemini-test"
    }))
}

/// System first; every assistant `tool_calls` id answered by a `tool` message right after it.
fn check_openai(body: &Value, violations: &Mutex<Vec<String>>) {
    let mut v = violations.lock().unwrap();
    let Some(msgs) = body["messages"].as_array() else {
        v.push("no messages".into());
        return;
    };
    if msgs.first().map(|m| m["role"] != "system").unwrap_or(true) {
        v.push("the first message is not the system prompt".into());
    }
    for (i, m) in msgs.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else { continue };
        let answers: Vec<&str> = msgs[i + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        for c in calls {
            let id = c["id"].as_str().unwrap_or("");
            if !answers.contains(&id) {
                v.push(format!("tool call {id} at message {i} has no tool message right after it"));
            }
            if !c["function"]["arguments"].is_string() {
                v.push(format!("arguments of {id} are not a string"));
            }
        }
    }
}

/// `user`/`model` turns alternate; each `functionCall` is answered by a `functionResponse` of
/// the same name in the next turn.
fn check_gemini(body: &Value, violations: &Mutex<Vec<String>>) {
    let mut v = violations.lock().unwrap();
    let Some(contents) = body["contents"].as_array() else {
        v.push("no contents".into());
        return;
    };
    for (i, c) in contents.iter().enumerate() {
        if i > 0 && c["role"] == contents[i - 1]["role"] {
            v.push(format!("two {} turns in a row at {i}", c["role"]));
        }
        let calls: Vec<&str> =
            c["parts"].as_array().into_iter().flatten().filter_map(|p| p["functionCall"]["name"].as_str()).collect();
        let answered: Vec<&str> = contents
            .get(i + 1)
            .and_then(|n| n["parts"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|p| p["functionResponse"]["name"].as_str())
            .collect();
        for name in calls {
            if !answered.contains(&name) {
                v.push(format!("functionCall {name} at turn {i} has no functionResponse"));
            }
        }
    }
}
