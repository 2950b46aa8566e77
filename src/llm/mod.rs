//! The provider-neutral LLM interface: messages of text, image, tool_use and tool_result
//! blocks, tool definitions, and a `Provider` that turns one request into one reply.
//!
//! The agent loop speaks only this model; one adapter per wire format (Anthropic first,
//! OpenAI-compatible and Gemini later) translates it. The serde shape of these types is the
//! one written to `conversation_log.json` (it happens to match Anthropic's block layout, which
//! is a faithful neutral record). A call can be abandoned: adapters poll `cancelled` and return
//! `LlmError::Cancelled` within ~50 ms of a stop.

pub mod anthropic;

use crate::protocol::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        media_type: String,
        /// Base64, no `data:` prefix.
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<Block>,
        #[serde(default)]
        is_error: bool,
    },
}

impl Block {
    pub fn text(s: impl Into<String>) -> Block {
        Block::Text { text: s.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user(content: Vec<Block>) -> Message {
        Message { role: Role::User, content }
    }

    pub fn assistant(content: Vec<Block>) -> Message {
        Message { role: Role::Assistant, content }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// One model call.
pub struct Request<'a> {
    pub system: &'a str,
    pub tools: &'a [ToolDef],
    pub messages: &'a [Message],
    pub max_tokens: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    PauseTurn,
    Refusal,
    ContextWindowExceeded,
    Other(String),
}

impl StopReason {
    pub fn parse(s: &str) -> StopReason {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
            other => StopReason::Other(other.to_string()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub content: Vec<Block>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmError {
    /// The API refused the request (400/401/403/404…): retrying cannot help. The API's message.
    Rejected(String),
    /// Retryable failures persisted past `api.max_retries`.
    GaveUp(String),
    /// The session was stopped while waiting.
    Cancelled,
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmError::Rejected(m) | LlmError::GaveUp(m) => f.write_str(m),
            LlmError::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// One wire format.
pub trait Provider: Send + Sync {
    fn complete(&self, request: &Request<'_>, cancelled: &dyn Fn() -> bool) -> Result<Reply, LlmError>;
}

/// Sleep `total`, waking early (returns true) when `cancelled()` turns true.
pub(crate) fn sleep_unless_cancelled(total: std::time::Duration, cancelled: &dyn Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + total;
    loop {
        if cancelled() {
            return true;
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep((deadline - now).min(std::time::Duration::from_millis(50)));
    }
}
