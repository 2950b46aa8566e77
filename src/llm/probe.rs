//! `agent-controller probe`: what an endpoint's model can do, found by asking it — does it call
//! a tool natively, does it follow JSON action mode, does the server keep a reply to a JSON
//! schema (asked for a word no model would write unasked), does it read an image, how long is its
//! context (llama.cpp's `/props`, or the OpenAI-compatible `/v1/models` of vLLM, LM Studio and
//! the like). The answers are kept per endpoint in `<output.dir>/probes.json` (with the base URL
//! and model they hold for), where `tool_mode: auto`, `vision: auto`, the context window and
//! `config check` read them.

use super::{Block, Message, Request, ToolDef};
use crate::config::{Config, Endpoint, ToolMode};
use crate::wait::stop::StopSignal;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The cache file in the output directory.
pub const PROBES_FILE: &str = "probes.json";

/// A 16×16 red PNG: does the model read images (and say so)?
const RED_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mO4IyJCEmIY1TCqYfhqAAACcQQQFd0BdQAAAABJRU5ErkJggg==";

/// What a probe found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub native_tools: bool,
    pub json_mode: bool,
    /// The server enforces a reply schema (`response_format: json_schema`).
    pub reply_schema: bool,
    pub vision: bool,
    pub context_tokens: Option<u64>,
    /// What went wrong on the way, per question, in words.
    pub notes: Vec<String>,
}

impl Found {
    pub fn to_json(&self, endpoint: &Endpoint) -> Value {
        json!({
            "base_url": endpoint.base_url, "model": endpoint.model,
            "native_tools": self.native_tools, "json_mode": self.json_mode, "reply_schema": self.reply_schema,
            "vision": self.vision,
            "context_tokens": self.context_tokens, "notes": self.notes,
            "probed_at": crate::util::clock::now_rfc3339(),
        })
    }

    fn from_json(v: &Value) -> Found {
        Found {
            native_tools: v["native_tools"].as_bool().unwrap_or(false),
            json_mode: v["json_mode"].as_bool().unwrap_or(false),
            reply_schema: v["reply_schema"].as_bool().unwrap_or(false),
            vision: v["vision"].as_bool().unwrap_or(false),
            context_tokens: v["context_tokens"].as_u64(),
            notes: Vec::new(),
        }
    }

    /// The tool mode `auto` stands for: native when the model calls tools, JSON when only that works.
    pub fn tool_mode(&self) -> ToolMode {
        if !self.native_tools && self.json_mode { ToolMode::Json } else { ToolMode::Native }
    }
}

fn weather_tool() -> ToolDef {
    ToolDef {
        name: "get_weather",
        description: "The current weather in a city.",
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

/// Ask the endpoint each question; nothing is cached here (`save` does that).
pub fn probe(endpoint: &Endpoint, config: &Config) -> Found {
    let mut found = Found::default();
    let stop = StopSignal::default();
    let tools = [weather_tool()];
    let ask = [Message::user(vec![Block::text("What is the weather in Paris? Call get_weather to find out.")])];
    let request = Request {
        system: "You answer by calling tools.",
        tools: &tools,
        unlisted: &[],
        require_tool: false,
        json_reply: crate::llm::JsonReply::Free,
        narrowed: None,
        messages: &ask,
        max_tokens: 200,
        // Read as the small profile's sessions read it (`loose_actions`).
        loose_actions: true,
        correct_once: true,
    };
    for mode in [ToolMode::Native, ToolMode::Json] {
        let provider = super::provider_for(&Endpoint { tool_mode: mode, ..endpoint.clone() }, config);
        let called =
            provider.map_err(|e| e.to_string()).and_then(|p| p.complete(&request, &stop).map_err(|e| e.to_string()));
        let ok = match &called {
            Ok(reply) => reply.content.iter().any(|b| {
                matches!(b, Block::ToolUse { name, input, .. } if name == "get_weather" && input["city"].as_str().is_some_and(|c| !c.is_empty()))
            }),
            Err(e) => {
                found.notes.push(format!("{}: {e}", if mode == ToolMode::Native { "native tools" } else { "JSON mode" }));
                false
            }
        };
        if mode == ToolMode::Native {
            found.native_tools = ok;
        } else {
            found.json_mode = ok;
        }
    }
    found.reply_schema = keeps_to_schema(endpoint, config, &mut found.notes);
    found.vision = sees_red(endpoint, config, &mut found.notes);
    found.context_tokens = context_tokens(endpoint);
    found
}

/// The one word this schema allows, which no model gives when asked for the capital of France.
const SCHEMA_WORD: &str = "quillwort-7";

/// Does the server keep a reply to a schema? Asked for France's capital under a schema that
/// allows only `SCHEMA_WORD`: a server that enforces it answers that word, one that ignores
/// it (or refuses it) answers Paris or errs. Only the OpenAI-compatible format sends one.
fn keeps_to_schema(endpoint: &Endpoint, config: &Config, notes: &mut Vec<String>) -> bool {
    if endpoint.wire != crate::config::Wire::OpenAi {
        return false;
    }
    let Ok(provider) = super::provider_for(&Endpoint { tool_mode: ToolMode::Native, ..endpoint.clone() }, config)
    else {
        return false;
    };
    let schema = json!({"type": "object", "properties": {"city": {"enum": [SCHEMA_WORD]}}, "required": ["city"]});
    let ask = [Message::user(vec![Block::text("What is the capital of France? Answer as JSON: {\"city\": \"…\"}")])];
    let request =
        Request { json_reply: super::JsonReply::Schema(&schema), ..Request::plain("You answer in JSON.", &ask, 30) };
    match provider.complete(&request, &StopSignal::default()) {
        Ok(reply) => super::joined_text(&reply.content, " ").contains(SCHEMA_WORD),
        Err(e) => {
            notes.push(format!("reply schema: {e}"));
            false
        }
    }
}

fn sees_red(endpoint: &Endpoint, config: &Config, notes: &mut Vec<String>) -> bool {
    let Ok(provider) = super::provider_for(&Endpoint { tool_mode: ToolMode::Native, ..endpoint.clone() }, config)
    else {
        return false;
    };
    let image = Block::Image { media_type: "image/png".into(), data: RED_PNG.into() };
    let ask = [Message::user(vec![image, Block::text("What colour is this picture? Answer with one word.")])];
    let request = Request::plain("You describe pictures.", &ask, 20);
    match provider.complete(&request, &StopSignal::default()) {
        Ok(reply) => super::joined_text(&reply.content, " ").to_lowercase().contains("red"),
        Err(e) => {
            notes.push(format!("images: {e}"));
            false
        }
    }
}

/// The context length the server reports: llama.cpp's `/props`, else `/v1/models` (vLLM's
/// `max_model_len`, LM Studio's and others' `context_length`).
fn context_tokens(endpoint: &Endpoint) -> Option<u64> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build(),
    );
    let base = endpoint.base_url.trim_end_matches('/').trim_end_matches("/v1");
    let get = |path: &str| -> Option<Value> {
        let mut r = agent.get(&format!("{base}{path}")).call().ok()?;
        r.body_mut().read_json::<Value>().ok()
    };
    if let Some(props) = get("/props") {
        let n = props["default_generation_settings"]["n_ctx"].as_u64().or(props["n_ctx"].as_u64());
        if n.is_some() {
            return n;
        }
    }
    let models = get("/v1/models")?;
    let list = models["data"].as_array()?;
    let entry = list.iter().find(|m| m["id"] == endpoint.model.as_str()).or(list.first())?;
    ["max_model_len", "context_length", "context_window", "max_context_length"]
        .iter()
        .find_map(|k| entry[*k].as_u64())
        .or(entry["meta"]["n_ctx_train"].as_u64())
}

fn cache_path(config: &Config) -> PathBuf {
    config.output.dir.join(PROBES_FILE)
}

/// Every cached probe, by endpoint name (an unreadable file is an empty cache).
pub fn cached_all(config: &Config) -> serde_json::Map<String, Value> {
    std::fs::read(cache_path(config))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// The cached probe of this endpoint, if it was made against the same base URL and model.
pub fn cached(endpoint: &Endpoint, config: &Config) -> Option<Found> {
    let all = cached_all(config);
    let v = all.get(&endpoint.name)?;
    (v["base_url"] == endpoint.base_url.as_str() && v["model"] == endpoint.model.as_str()).then(|| Found::from_json(v))
}

/// Keep what a probe found for this endpoint (written whole, then renamed).
pub fn save(endpoint: &Endpoint, config: &Config, found: &Found) -> std::io::Result<()> {
    let mut all = cached_all(config);
    all.insert(endpoint.name.clone(), found.to_json(endpoint));
    std::fs::create_dir_all(&config.output.dir)?;
    let path = cache_path(config);
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&Value::Object(all)).unwrap_or_default())?;
    std::fs::rename(tmp, path)
}
