//! The provider-neutral LLM interface and the factory that picks a wire format.
//!
//! The agent loop speaks only this model: messages of text, image, tool_use and tool_result
//! blocks, tool definitions, a reply with a neutral `StopReason` and `TokenUsage`. One adapter
//! per wire format translates it (`anthropic.rs` today); all of them send through the shared
//! `transport.rs` (retries, `retry-after`, timeouts, cancellation). The serde shape of these
//! types is the one written to `conversation_log.json`. Nothing here knows about sessions or
//! the loop: a call gets the session's `StopSignal` and returns `LlmError::Cancelled` at once
//! when it is raised.

pub mod anthropic;
pub mod transport;

use crate::config::Config;
use crate::wait::stop::StopSignal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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

/// Why the model stopped, in terms every wire format maps onto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A natural end of the turn (or a stop sequence).
    EndTurn,
    /// It wants tools run.
    ToolUse,
    /// The output limit cut it off.
    MaxTokens,
    /// It declined (safety).
    Refusal,
    /// The context window is full.
    ContextFull,
    Other(String),
}

/// Tokens of one call (or summed over many), in neutral names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
    /// Input read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input written to the provider's prompt cache.
    pub cache_write: u64,
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub content: Vec<Block>,
    pub stop_reason: StopReason,
    pub usage: TokenUsage,
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
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError>;
}

/// The provider `api.provider` names, or why there is none (a missing key, a wire format not
/// built yet): sessions then end with that message.
pub fn from_config(config: &Config) -> Result<Arc<dyn Provider>, String> {
    let api = &config.api;
    let transport = transport::Transport::new(Duration::from_secs(api.timeout_s), api.max_retries);
    match api.provider.as_str() {
        "anthropic" if api.api_key.is_empty() => {
            Err("no Anthropic API key: set ANTHROPIC_API_KEY (or api.api_key) and restart the controller".into())
        }
        "anthropic" => {
            Ok(Arc::new(anthropic::Anthropic::new(transport, &api.base_url, api.api_key.clone(), &api.model)))
        }
        other => Err(format!("api.provider {other:?} is not supported yet; use anthropic")),
    }
}
