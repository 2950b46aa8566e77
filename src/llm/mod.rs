//! The provider-neutral LLM interface and the factory that picks a wire format.
//!
//! The agent loop speaks only this model: messages of text, image, tool_use and tool_result
//! blocks, tool definitions, a reply with a neutral `StopReason` and `TokenUsage`. One adapter
//! per wire format translates it (`anthropic.rs`, `openai.rs`, `gemini.rs`); all of them send
//! through the shared `transport.rs` (retries, `retry-after`, timeouts, cancellation). For
//! models without tool calling, `json_mode.rs` wraps any adapter: tools are listed in the
//! prompt and each reply is one flat JSON action (`actions.rs`), turned back into a tool call. The serde shape of these
//! types is the one written to `conversation_log.json`. Nothing here knows about sessions or
//! the loop: a call gets the session's `StopSignal` and returns `LlmError::Cancelled` at once
//! when it is raised.

pub mod actions;
pub mod anthropic;
mod callers;
pub mod gemini;
mod json_mode;
mod limits;
pub mod openai;
pub mod probe;
pub mod reply_schema;
pub mod transport;

pub use limits::{MAX_CALL_TOKENS, MAX_ERROR_CHARS, bounded_message};

use crate::config::{Config, Endpoint, ToolMode, Wire};
use crate::wait::stop::StopSignal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
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
        /// An opaque token the provider wants back unchanged with this call (Gemini's
        /// `thoughtSignature`); never shown to anyone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
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

    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Block {
        Block::ToolUse { id: id.into(), name: name.into(), input, signature: None }
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
    /// Tools the model is not shown but may call by name (JSON action mode accepts them too).
    pub unlisted: &'a [ToolDef],
    /// The reply must call one of `tools` (Anthropic `tool_choice: any`, OpenAI `required`,
    /// Gemini `ANY`; JSON action mode asks every reply for an action anyway), never a named one:
    /// the session's last chance.
    pub require_tool: bool,
    /// What the reply must be (JSON action mode): one JSON object, or one that follows a schema.
    pub json_reply: JsonReply<'a>,
    /// `tools` with their arguments narrowed to what the page offers (refs, a select's options):
    /// what JSON action mode's reply schema is built from where the endpoint enforces one. The
    /// prompt always shows `tools`, so its prefix stays the same turn after turn.
    pub narrowed: Option<&'a [ToolDef]>,
    pub messages: &'a [Message],
    pub max_tokens: u32,
    /// JSON action mode reads a reply in another shape than asked (aliases, nesting, a missing
    /// `action`): the small profile's `loose_actions` unit.
    pub loose_actions: bool,
    /// JSON action mode answers a reply it cannot read once with the exact error, and asks
    /// again, before passing it on as words: the `json_correction` unit.
    pub correct_once: bool,
}

/// A reply kept to JSON by the server: OpenAI-compatible `response_format` (`json_object`, or
/// `json_schema` with the schema), Gemini's JSON MIME type; the Anthropic format has neither.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum JsonReply<'a> {
    /// Free text (native tool calls, reports).
    #[default]
    Free,
    /// One JSON object.
    Object,
    /// One JSON object valid against this schema (falls back to `Object` where not sent).
    Schema(&'a Value),
}

impl<'a> Request<'a> {
    /// A request without tools: a report, a summary, a validator's verdict.
    pub fn plain(system: &'a str, messages: &'a [Message], max_tokens: u32) -> Request<'a> {
        Request {
            system,
            tools: &[],
            unlisted: &[],
            require_tool: false,
            json_reply: JsonReply::Free,
            narrowed: None,
            messages,
            max_tokens,
            loose_actions: false,
            correct_once: false,
        }
    }

    /// Every tool a reply may call: those listed, then the unlisted ones.
    pub fn known_tools(&self) -> Vec<ToolDef> {
        self.tools.iter().chain(self.unlisted).cloned().collect()
    }
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
    /// Its action was read in another shape than asked (`Request::loose_actions`).
    pub loose_action: bool,
    /// The first reply could not be read as an action, and this error was answered
    /// (`Request::correct_once`); this reply is the one that came after it.
    pub corrected: Option<String>,
}

/// Why a model call gave no reply. Its `Display` is what the session's record and the model's
/// next turn say; the typed cause, where there is one, is its `source`.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The API refused the request (400/401/403/404…): retrying cannot help. The API's message.
    #[error("{0}")]
    Rejected(String),
    /// The API said the request is longer than the model's context: compacting can help.
    #[error("{0}")]
    ContextExceeded(String),
    /// The API said the model takes no images: the request without them can go.
    #[error("{0}")]
    ImagesUnsupported(String),
    /// Retryable failures persisted past `api.max_retries`: the last one's words, and its
    /// network cause when it had no HTTP status.
    #[error("{failure}")]
    GaveUp {
        failure: String,
        #[source]
        cause: Option<transport::NetworkError>,
    },
    /// The API's reply is not the JSON its wire format promises.
    #[error("unreadable reply from the API: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// The request could not be written as JSON.
    #[error(transparent)]
    Encoding(serde_json::Error),
    /// No thread could be started for the call.
    #[error("cannot start the LLM call: {0}")]
    Start(#[source] std::io::Error),
    /// The model's reply could not be used (not an action, twice; an answer with no content).
    #[error("{0}")]
    BadReply(String),
    /// The session was stopped while waiting.
    #[error("cancelled")]
    Cancelled,
}

impl LlmError {
    /// A failure with no typed cause that retrying did not mend (a reply without its content).
    pub fn gave_up(failure: impl Into<String>) -> LlmError {
        LlmError::GaveUp { failure: failure.into(), cause: None }
    }
}

/// Whether an API's error says the request is longer than the model's context (llama.cpp's
/// "exceeds the available context size", OpenAI's "maximum context length", Anthropic's
/// "prompt is too long"…): compacting can help, sending it again as it is cannot.
fn context_exceeded(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["context size", "context length", "context window", "prompt is too long", "too many tokens", "input is too long"]
        .iter()
        .any(|w| m.contains(w))
}

/// Whether an API's error says the model cannot take images (llama.cpp's "image input is not
/// supported", OpenAI's "image_url is only supported by certain models", "not a multimodal
/// model"…): retrying the same request cannot help, dropping its images can.
fn images_unsupported(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let about_images = ["image", "vision", "multimodal", "multi-modal"].iter().any(|w| m.contains(w));
    let refused =
        ["not supported", "unsupported", "does not support", "doesn't support", "only supported", "not a multimodal"]
            .iter()
            .any(|w| m.contains(w));
    about_images && refused
}

/// One wire format.
pub trait Provider: Send + Sync {
    fn complete(&self, request: &Request<'_>, stop: &StopSignal) -> Result<Reply, LlmError>;
}

impl Message {
    /// The text blocks of a message, joined.
    pub fn text(&self) -> String {
        joined_text(&self.content, "\n")
    }
}

/// The text blocks among `blocks` (not inside tool results), joined with `sep`.
pub fn joined_text(blocks: &[Block], sep: &str) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    parts.join(sep)
}

/// The provider for one endpoint, or why there is none (a missing key): sessions on it then
/// end with that message.
pub fn provider_for(endpoint: &Endpoint, config: &Config) -> Result<Arc<dyn Provider>, String> {
    if endpoint.wire.needs_key() && endpoint.api_key.is_empty() {
        let vars = endpoint.wire.key_vars().join(" or ");
        let at = if endpoint.name == crate::config::DEFAULT_LLM {
            "api.api_key".into()
        } else {
            format!("providers.{}.api_key", endpoint.name)
        };
        return Err(format!(
            "no {} API key for `{}`: set {vars} (or {at}) and restart the controller",
            endpoint.wire.name(),
            endpoint.name
        ));
    }
    let transport = transport::Transport::new(Duration::from_secs(config.api.timeout_s), config.api.max_retries);
    let (url, key, model, t) = (&endpoint.base_url, endpoint.api_key.clone(), &endpoint.model, endpoint.temperature);
    let native: Arc<dyn Provider> = match endpoint.wire {
        Wire::Anthropic => Arc::new(anthropic::Anthropic::new(transport, url, key, model).with_temperature(t)),
        Wire::OpenAi => Arc::new(openai::OpenAi::new(transport, url, key, model).with_temperature(t)),
        Wire::Gemini => Arc::new(gemini::Gemini::new(transport, url, key, model).with_temperature(t)),
    };
    Ok(match tool_mode(endpoint, config) {
        ToolMode::Json => Arc::new(json_mode::JsonActions::new(native, reply_schema(endpoint, config))),
        ToolMode::Native | ToolMode::Auto => native,
    })
}

/// Whether JSON action mode keeps replies to a schema on `endpoint`: as configured, `auto`
/// settled by what `probe` found (not until it was probed).
pub fn reply_schema(endpoint: &Endpoint, config: &Config) -> bool {
    match endpoint.reply_schema {
        crate::config::Vision::Auto => probe::cached(endpoint, config).is_some_and(|found| found.reply_schema),
        setting => setting == crate::config::Vision::On,
    }
}

/// How tools reach the model on `endpoint`: `auto` settled by what `probe` found (native until
/// it was probed).
pub fn tool_mode(endpoint: &Endpoint, config: &Config) -> ToolMode {
    match endpoint.tool_mode {
        ToolMode::Auto => probe::cached(endpoint, config).map_or(ToolMode::Native, |found| found.tool_mode()),
        mode => mode,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn context_overflow_is_recognized_in_each_servers_words() {
        for m in [
            "request (9379 tokens) exceeds the available context size (8192 tokens), try increasing it",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "prompt is too long: 210000 tokens > 200000 maximum",
        ] {
            assert!(super::context_exceeded(m), "{m}");
        }
        assert!(!super::context_exceeded("invalid x-api-key"));
    }
}
