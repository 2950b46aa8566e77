//! `search_history`: the session's full record searched, not just what is left in the model's
//! context — every model turn and tool result of the conversation (compaction never removes
//! anything from it) and the session's log (confirmations, uploads, errors). Up to 50 matches,
//! each with two lines of context on either side. Searches themselves (calls, answers, their log
//! lines) are left out: each would hold the one before, and grow.

use super::Agent;
use crate::llm::{Block, Message, Role};
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

const MAX_MATCHES: usize = 50;
const CONTEXT_LINES: usize = 2;
const SEARCH: &str = Tool::SearchHistory.name();

impl Agent {
    pub(super) fn search_history(&self, query: &str, max: usize) -> Value {
        let needle = query.to_lowercase();
        let max = max.clamp(1, MAX_MATCHES);
        let mut matches = Vec::new();
        let searches: Vec<&str> = self
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolUse { id, name, .. } if name == SEARCH => Some(id.as_str()),
                _ => None,
            })
            .collect();
        for (i, m) in self.messages.iter().enumerate() {
            for (source, text) in texts(m, &searches) {
                matches.extend(
                    hits(&text, &needle).into_iter().map(|lines| json!({"message": i, "from": source, "lines": lines})),
                );
            }
        }
        for e in self.runner.search_log(query, max).into_iter().filter(|e| !e.text.starts_with(SEARCH)) {
            matches.push(json!({"from": "log", "seq": e.seq, "ts": e.ts, "lines": e.text}));
        }
        let skip = matches.len().saturating_sub(max);
        json!({"matches": matches.split_off(skip)})
    }
}

/// The searchable texts of a message, each with where it came from.
fn texts(m: &Message, searches: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in &m.content {
        match b {
            Block::ToolResult { tool_use_id, .. } if searches.contains(&tool_use_id.as_str()) => {}
            Block::ToolUse { name, .. } if name == SEARCH => {}
            Block::Text { text } if m.role == Role::Assistant => out.push(("the agent".into(), text.clone())),
            Block::Text { text } => out.push(("the task".into(), text.clone())),
            Block::ToolUse { name, input, .. } => out.push((format!("call {name}"), input.to_string())),
            Block::ToolResult { content, .. } => {
                out.push(("a tool result".into(), crate::llm::joined_text(content, "\n")))
            }
            Block::Image { .. } => {}
        }
    }
    out
}

/// Each line containing `needle`, with its neighbours. Tool results are often one JSON line
/// with `\n` escapes inside: those are split too.
fn hits(text: &str, needle: &str) -> Vec<String> {
    let text = text.replace("\\n", "\n");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.to_lowercase().contains(needle) {
            let from = i.saturating_sub(CONTEXT_LINES);
            let to = (i + CONTEXT_LINES + 1).min(lines.len());
            let shown: Vec<String> = lines[from..to].iter().map(|l| l.chars().take(300).collect()).collect();
            out.push(shown.join("\n"));
        }
    }
    out
}
