//! The requests a scripted model server received, rendered as one readable transcript. Each
//! request is compared with the last one of its conversation (the same system prompt; a side
//! request such as a summary starts its own): its settings, system prompt and tool list in
//! full the first time, then `same` or what changed (the tool list's hash either way), and the
//! messages new since, in the order the model reads them.
//!
//! Guarantees: every text the model receives is printed verbatim (`|`-prefixed lines), every
//! call with its arguments, every result with the call it answers; a message the controller
//! changed after it was sent shows as the lines that changed, one it dropped by its place. Left out on
//! purpose: tool-call ids (numbered `#1`, `#2` by first appearance: the script's are counters
//! shared by parallel tests) and Anthropic's `cache_control` marks (they move every turn and
//! the model never reads them). Anthropic and OpenAI-compatible bodies only.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write;

/// One tool as offered, whatever the wire: name, description, input schema.
#[derive(Clone, PartialEq)]
struct ToolEntry {
    name: String,
    description: String,
    schema: Value,
}

/// One block of a message in neutral form.
#[derive(Clone, PartialEq)]
enum Block {
    Text(String),
    Call { id: String, name: String, input: Value },
    Result { id: String, error: bool, content: Vec<Block> },
    Image { media: String, base64_len: usize },
}

#[derive(Clone, PartialEq)]
struct Message {
    role: String,
    blocks: Vec<Block>,
}

/// A request body read into the parts the transcript shows.
#[derive(Clone, PartialEq)]
struct Request {
    settings: Value,
    system: Vec<String>,
    tools: Vec<ToolEntry>,
    messages: Vec<Message>,
}

/// Renders requests one after another; each is compared with the last of its conversation.
#[derive(Default)]
pub struct Transcript {
    out: String,
    seen: Vec<Request>,
    count: usize,
    ids: HashMap<String, usize>,
    call_names: HashMap<String, String>,
}

impl Transcript {
    pub fn new(title: &str) -> Transcript {
        Transcript { out: format!("# {title}\n"), ..Transcript::default() }
    }

    /// Add one request body (Anthropic Messages or OpenAI chat completions).
    pub fn add(&mut self, body: &Value) {
        let request = read_request(body);
        self.count += 1;
        let _ = write!(self.out, "\n=== request {} ===\n", self.count);
        let base = self.seen.iter().rev().find(|p| p.system == request.system).cloned();
        if base.is_none() && !self.seen.is_empty() {
            self.out.push_str("(another conversation: a system prompt of its own)\n");
        }
        self.settings(base.as_ref(), &request);
        self.system(base.as_ref(), &request);
        self.tools(base.as_ref(), &request);
        self.messages(base.as_ref(), &request);
        self.seen.push(request);
    }

    /// A closing line (how the session ended) after the requests.
    pub fn finish(mut self, last: &str) -> String {
        let _ = write!(self.out, "\n=== end ===\n{last}\n");
        self.out
    }

    fn settings(&mut self, base: Option<&Request>, r: &Request) {
        match base {
            Some(p) if p.settings == r.settings => self.out.push_str("settings: same\n"),
            _ => {
                let _ = writeln!(self.out, "settings: {}", r.settings);
            }
        }
    }

    fn system(&mut self, base: Option<&Request>, r: &Request) {
        if base.is_some() {
            self.out.push_str("system: same\n");
            return;
        }
        for block in &r.system {
            self.out.push_str("--- system\n");
            verbatim(&mut self.out, "", block);
        }
    }

    fn tools(&mut self, base: Option<&Request>, r: &Request) {
        let hash = tools_hash(&r.tools);
        match base.map(|p| &p.tools) {
            _ if r.tools.is_empty() && base.is_none_or(|p| p.tools.is_empty()) => self.out.push_str("tools: none\n"),
            Some(b) if *b == r.tools => {
                let _ = writeln!(self.out, "tools: same ({} tools, hash {hash:016x})", r.tools.len());
            }
            Some(b) => self.changed_tools(b, &r.tools, hash),
            None => {
                let _ = writeln!(self.out, "--- tools ({} tools, hash {hash:016x})", r.tools.len());
                r.tools.iter().for_each(|t| tool_entry(&mut self.out, t));
            }
        }
    }

    fn changed_tools(&mut self, before: &[ToolEntry], now: &[ToolEntry], hash: u64) {
        let names: Vec<&str> = now.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(self.out, "--- tools changed ({} tools, hash {hash:016x}): {}", now.len(), names.join(", "));
        for gone in before.iter().filter(|b| !now.iter().any(|t| t.name == b.name)) {
            let _ = writeln!(self.out, "- {}", gone.name);
        }
        for t in now.iter().filter(|t| !before.contains(t)) {
            tool_entry(&mut self.out, t);
        }
    }

    /// The messages new since `base`; one the controller changed after it was sent as the
    /// lines that changed, those it dropped by their place.
    fn messages(&mut self, base: Option<&Request>, r: &Request) {
        let before = base.map(|p| p.messages.clone()).unwrap_or_default();
        let mut i = 0;
        while let (Some(old), Some(new)) = (before.get(i), r.messages.get(i)) {
            if old.role != new.role {
                break;
            }
            if old != new {
                let (old, new) = (self.message(old), self.message(new));
                let _ = writeln!(self.out, "--- [{}] {}, changed since the request before:", i + 1, r.messages[i].role);
                line_diff(&mut self.out, &old, &new);
            }
            i += 1;
        }
        for (n, m) in before.iter().enumerate().skip(i) {
            let _ = writeln!(self.out, "--- [{}] {} of the request before: dropped", n + 1, m.role);
        }
        for (n, m) in r.messages.iter().enumerate().skip(i) {
            let _ = writeln!(self.out, "--- [{}] {}", n + 1, m.role);
            let text = self.message(m);
            self.out.push_str(&text);
        }
    }

    fn message(&mut self, m: &Message) -> String {
        let mut text = String::new();
        for b in &m.blocks {
            self.block(&mut text, b, "  ");
        }
        text
    }

    fn block(&mut self, out: &mut String, b: &Block, indent: &str) {
        match b {
            Block::Text(t) => verbatim(out, indent, t),
            Block::Call { id, name, input } => {
                let n = self.id(id);
                self.call_names.insert(id.clone(), name.clone());
                let _ = writeln!(out, "{indent}call #{n} {name} {input}");
            }
            Block::Result { id, error, content } => {
                let n = self.id(id);
                let name = self.call_names.get(id).cloned().unwrap_or_else(|| "?".into());
                let error = if *error { " (error)" } else { "" };
                let _ = writeln!(out, "{indent}result #{n} {name}{error}");
                content.iter().for_each(|c| self.block(out, c, &format!("{indent}  ")));
            }
            Block::Image { media, base64_len } => {
                let _ = writeln!(out, "{indent}[image {media}, {base64_len} base64 characters]");
            }
        }
    }

    fn id(&mut self, id: &str) -> usize {
        let next = self.ids.len() + 1;
        *self.ids.entry(id.to_string()).or_insert(next)
    }
}

/// `text` line by line after `indent|`, so a text's own layout (and an empty line) shows.
fn verbatim(out: &mut String, indent: &str, text: &str) {
    for line in text.split('\n') {
        let sep = if line.is_empty() { "" } else { " " };
        let _ = writeln!(out, "{indent}|{sep}{line}");
    }
}

/// The lines of `new` that differ from `old`: the common head and tail counted, the rest as
/// `-` (gone) and `+` (new) lines.
fn line_diff(out: &mut String, old: &str, new: &str) {
    let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let most = old.len().min(new.len()) - head;
    let tail = old.iter().rev().zip(new.iter().rev()).take(most).take_while(|(a, b)| a == b).count();
    let same = |out: &mut String, n: usize| {
        if n > 0 {
            let _ = writeln!(out, "  ({n} lines as before)");
        }
    };
    same(out, head);
    old[head..old.len() - tail].iter().for_each(|l| {
        let _ = writeln!(out, "- {l}");
    });
    new[head..new.len() - tail].iter().for_each(|l| {
        let _ = writeln!(out, "+ {l}");
    });
    same(out, tail);
}

fn tool_entry(out: &mut String, t: &ToolEntry) {
    let _ = writeln!(out, "## {}", t.name);
    verbatim(out, "", &t.description);
    let _ = writeln!(out, "schema: {}", t.schema);
}

/// FNV-1a over the tool list as text: the same list, the same hash, on any Rust version.
fn tools_hash(tools: &[ToolEntry]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for t in tools {
        let text = format!("{}\n{}\n{}\n", t.name, t.description, t.schema);
        hash = text.bytes().fold(hash, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    }
    hash
}

fn read_request(body: &Value) -> Request {
    let mut settings = body.clone();
    if let Some(m) = settings.as_object_mut() {
        for key in ["system", "tools", "messages"] {
            m.remove(key);
        }
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let (system, messages) = if body.get("system").is_some() {
        (anthropic_system(&body["system"]), messages.iter().map(anthropic_message).collect())
    } else {
        openai_split(&messages)
    };
    Request { settings, system, tools: read_tools(&body["tools"]), messages }
}

fn anthropic_system(system: &Value) -> Vec<String> {
    match system {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks.iter().map(|b| b["text"].as_str().unwrap_or("").to_string()).collect(),
        _ => vec![],
    }
}

/// Tools as Anthropic (`input_schema`) or OpenAI (`function.parameters`) sends them.
fn read_tools(tools: &Value) -> Vec<ToolEntry> {
    let entry = |t: &Value| {
        let f = if t["type"] == "function" { &t["function"] } else { t };
        let schema = if f.get("parameters").is_some() { &f["parameters"] } else { &f["input_schema"] };
        ToolEntry {
            name: f["name"].as_str().unwrap_or("?").to_string(),
            description: f["description"].as_str().unwrap_or("").to_string(),
            schema: schema.clone(),
        }
    };
    tools.as_array().map(|a| a.iter().map(entry).collect()).unwrap_or_default()
}

fn anthropic_message(m: &Value) -> Message {
    let blocks = match &m["content"] {
        Value::String(s) => vec![Block::Text(s.clone())],
        Value::Array(a) => a.iter().map(anthropic_block).collect(),
        other => vec![Block::Text(other.to_string())],
    };
    Message { role: m["role"].as_str().unwrap_or("?").to_string(), blocks }
}

fn anthropic_block(b: &Value) -> Block {
    let text = |k: &str| b[k].as_str().unwrap_or("").to_string();
    match b["type"].as_str() {
        Some("text") => Block::Text(text("text")),
        Some("tool_use") => Block::Call { id: text("id"), name: text("name"), input: b["input"].clone() },
        Some("tool_result") => Block::Result {
            id: text("tool_use_id"),
            error: b["is_error"] == true,
            content: match &b["content"] {
                Value::String(s) => vec![Block::Text(s.clone())],
                Value::Array(a) => a.iter().map(anthropic_block).collect(),
                _ => vec![],
            },
        },
        Some("image") => Block::Image {
            media: b["source"]["media_type"].as_str().unwrap_or("?").to_string(),
            base64_len: b["source"]["data"].as_str().map_or(0, str::len),
        },
        _ => Block::Text(format!("(block) {}", without_cache_marks(b))),
    }
}

fn without_cache_marks(b: &Value) -> Value {
    let mut b = b.clone();
    if let Some(m) = b.as_object_mut() {
        m.remove("cache_control");
    }
    b
}

/// OpenAI keeps the system prompt as the first message(s) with role `system`.
fn openai_split(messages: &[Value]) -> (Vec<String>, Vec<Message>) {
    let leading = messages.iter().take_while(|m| m["role"] == "system").count();
    let system = messages[..leading].iter().map(|m| openai_text(&m["content"])).collect();
    (system, messages[leading..].iter().map(openai_message).collect())
}

fn openai_message(m: &Value) -> Message {
    let role = m["role"].as_str().unwrap_or("?").to_string();
    if role == "tool" {
        let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
        let result = Block::Result { id, error: false, content: openai_parts(&m["content"]) };
        return Message { role, blocks: vec![result] };
    }
    let mut blocks = openai_parts(&m["content"]);
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        let args = &c["function"]["arguments"];
        let input = args.as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_else(|| json!(args));
        let name = c["function"]["name"].as_str().unwrap_or("?").to_string();
        blocks.push(Block::Call { id: c["id"].as_str().unwrap_or("").to_string(), name, input });
    }
    Message { role, blocks }
}

fn openai_parts(content: &Value) -> Vec<Block> {
    match content {
        Value::Null => vec![],
        Value::String(s) => vec![Block::Text(s.clone())],
        Value::Array(parts) => parts.iter().map(openai_part).collect(),
        other => vec![Block::Text(other.to_string())],
    }
}

fn openai_part(p: &Value) -> Block {
    match p["type"].as_str() {
        Some("text") => Block::Text(p["text"].as_str().unwrap_or("").to_string()),
        Some("image_url") => {
            let url = p["image_url"]["url"].as_str().unwrap_or("");
            let (head, data) = url.split_once(',').unwrap_or(("", url));
            let media = head.trim_start_matches("data:").trim_end_matches(";base64").to_string();
            Block::Image { media, base64_len: data.len() }
        }
        _ => Block::Text(format!("(part) {p}")),
    }
}

fn openai_text(content: &Value) -> String {
    openai_parts(content)
        .into_iter()
        .map(|b| match b {
            Block::Text(t) => t,
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_transcript_shows_new_messages_once_and_a_rewritten_one_again() {
    let first = json!({"model": "m", "system": "be brief", "tools": [{"name": "t", "description": "d", "input_schema": {}}],
        "messages": [{"role": "user", "content": "hi"}]});
    let mut second = first.clone();
    second["messages"] = json!([{"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0042", "name": "t", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0042", "content": "ok", "is_error": true}]}]);
    let mut third = second.clone();
    third["messages"][0]["content"] = json!("hi (shortened)");
    let mut fourth = third.clone();
    fourth["messages"].as_array_mut().unwrap().truncate(2);
    let side = json!({"model": "m", "system": "summarize", "messages": [{"role": "user", "content": "all of it"}]});
    let back = fourth.clone();
    let mut t = Transcript::new("test");
    [first, second, third, fourth, side, back].iter().for_each(|b| t.add(b));
    let text = t.finish("finished");
    assert_eq!(text.lines().filter(|l| *l == "  | hi").count(), 1, "shown once: {text}");
    assert!(text.contains("call #1 t {\"a\":1}\n") && text.contains("result #1 t (error)\n"), "{text}");
    assert!(
        text.contains("--- [1] user, changed since the request before:\n-   | hi\n+   | hi (shortened)\n"),
        "{text}"
    );
    assert!(text.contains("--- [3] user of the request before: dropped\n"), "{text}");
    assert_eq!(text.matches("tools: same (1 tools, hash").count(), 4, "{text}");
    // A side request is its own conversation; the next request is compared with the main one's.
    let (_, side) = text.split_once("=== request 5 ===\n").unwrap();
    assert!(side.starts_with("(another conversation: a system prompt of its own)\n"), "{text}");
    assert!(side.contains("| summarize\ntools: none\n--- [1] user\n  | all of it\n"), "{text}");
    assert!(text.ends_with("=== request 6 ===\nsettings: same\nsystem: same\ntools: same (1 tools, hash 198593d1faf4964d)\n\n=== end ===\nfinished\n"), "{text}");
}
