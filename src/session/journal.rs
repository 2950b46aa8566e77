//! The conversation as an append-only journal, `conversation.jsonl`: one line per event,
//! appended (scrubbed) as it happens, so a killed daemon loses at most the line being written
//! and a turn costs one short append instead of rewriting the whole conversation.
//!
//! Lines (each a one-key object): `start` {session_id, system, tools}; `message` (one message,
//! images already replaced by their description); `amend` (more blocks for the last message);
//! `compacted` {replaced_messages, summary}; `progress` {turn, usage}, which also lets a session
//! cut off by a crash show how far it got. `conversation()` folds the lines back into the
//! seed's `conversation_log.json` shape. The journal lock orders appends.

use super::{Session, lock};
use crate::protocol::Usage;
use crate::store;
use serde::Serialize;
use serde_json::{Value, json};

impl Session {
    /// Append one journal line (secrets scrubbed). Serialized straight to text unless there
    /// is a secret to hunt for: a Value tree per message was a large part of a step's time.
    pub fn append_journal(&self, entry: &impl Serialize) {
        let line = {
            let vault = self.vault();
            if vault.has_secrets() {
                serde_json::to_value(entry).map(|mut v| {
                    vault.scrub_json(&mut v);
                    v.to_string()
                })
            } else {
                serde_json::to_string(entry)
            }
        };
        let _order = lock(&self.journal);
        let written =
            line.map_err(std::io::Error::other).and_then(|l| self.dir.append_line(store::CONVERSATION_JSONL, &l));
        if let Err(e) = written {
            self.write_failed(store::CONVERSATION_JSONL, &e);
        }
    }

    /// The conversation in the seed's shape: folded from the journal, or the whole file an
    /// older controller wrote.
    pub fn conversation(&self) -> Value {
        let journal = self.dir.read_text(store::CONVERSATION_JSONL).ok().flatten();
        match journal {
            // An ended session's calls that a kill left open are closed, as a stop closes them.
            Some(text) if !self.status().is_active() => {
                let mut folded = fold(&self.id, &text);
                close_open_calls(&mut folded["messages"]);
                folded
            }
            Some(text) => fold(&self.id, &text),
            None => self
                .dir
                .read_text(store::CONVERSATION_JSON)
                .ok()
                .flatten()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_else(|| fold(&self.id, "")),
        }
    }

    /// A session cut off by a crash: its turn and usage from the journal, its file count from
    /// the folder (session.json had them only as of the last status change).
    pub(super) fn recover_progress(&self) {
        let progress = self.journaled_progress();
        let files = self.dir.scan_files().map(|index| index.file_count());
        let mut state = self.lock();
        if let Some((turn, usage)) = progress.filter(|(turn, _)| *turn >= state.record.turn) {
            state.record.turn = turn;
            state.record.usage = usage;
        }
        if let Ok(files) = files {
            state.record.files = files;
        }
    }

    /// The last `progress` line of the journal: (turn, usage).
    fn journaled_progress(&self) -> Option<(u32, Usage)> {
        let text = self.dir.read_text(store::CONVERSATION_JSONL).ok().flatten()?;
        text.lines().rev().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find_map(|v| {
            let p = v.get("progress")?;
            let turn = u32::try_from(p.get("turn")?.as_u64()?).ok()?;
            Some((turn, serde_json::from_value(p.get("usage")?.clone()).ok()?))
        })
    }
}

/// Fold journal lines into `{session_id, system, tools, messages, compacted}`. A torn or
/// unknown line is skipped.
fn fold(session_id: &str, text: &str) -> Value {
    let mut out = json!({"session_id": session_id, "system": "", "tools": [], "messages": [], "compacted": null});
    let mut messages: Vec<Value> = Vec::new();
    for line in text.lines() {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else { continue };
        let Some((kind, value)) = entry.into_iter().next() else { continue };
        match kind.as_str() {
            "start" => {
                out["system"] = value.get("system").cloned().unwrap_or_default();
                out["tools"] = value.get("tools").cloned().unwrap_or_default();
            }
            "message" => messages.push(value),
            "amend" => {
                let last = messages.last_mut().and_then(|m| m.get_mut("content")).and_then(Value::as_array_mut);
                if let (Some(content), Value::Array(more)) = (last, value) {
                    content.extend(more);
                }
            }
            "compacted" => out["compacted"] = value,
            _ => {}
        }
    }
    out["messages"] = Value::Array(messages);
    out
}

/// What a call left open by a kill or a restart is answered with.
pub const INTERRUPTED: &str = "interrupted: the controller stopped before this call's result came back";

/// Give every `tool_use` without a `tool_result` in the message after it one that says it was
/// interrupted (added to that message when it is the user's, else as a new user message).
pub fn close_open_calls(messages: &mut Value) {
    let Some(list) = messages.as_array_mut() else { return };
    let mut i = 0;
    while i < list.len() {
        let open: Vec<String> = calls_of(&list[i]);
        if open.is_empty() {
            i += 1;
            continue;
        }
        let answered = list.get(i + 1).filter(|m| m["role"] == "user").map(results_of).unwrap_or_default();
        let missing: Vec<Value> = open
            .iter()
            .filter(|id| !answered.contains(id))
            .map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": INTERRUPTED}], "is_error": true}))
            .collect();
        if !missing.is_empty() {
            match list.get_mut(i + 1).filter(|m| m["role"] == "user").and_then(|m| m["content"].as_array_mut()) {
                // Results come first in a user message: the model's wire formats expect them there.
                Some(content) => content.splice(0..0, missing).for_each(drop),
                None => list.insert(i + 1, json!({"role": "user", "content": missing})),
            }
        }
        i += 1;
    }
}

fn calls_of(message: &Value) -> Vec<String> {
    if message["role"] != "assistant" {
        return Vec::new();
    }
    let blocks = message["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    blocks.iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str().map(str::to_string)).collect()
}

fn results_of(message: &Value) -> Vec<String> {
    let blocks = message["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_lines_and_skips_a_torn_one() {
        let text = concat!(
            r#"{"start":{"session_id":"s","system":"sys","tools":["a"]}}"#,
            "\n",
            r#"{"message":{"role":"user","content":[{"type":"text","text":"go"}]}}"#,
            "\n",
            r#"{"amend":[{"type":"text","text":"more"}]}"#,
            "\n",
            r#"{"progress":{"turn":1,"usage":{}}}"#,
            "\n",
            r#"{"compacted":{"replaced_messages":2,"summary":"x"}}"#,
            "\n",
            r#"{"message":{"role":"assis"#,
        );
        let v = fold("s", text);
        assert_eq!(v["system"], "sys");
        assert_eq!(v["tools"], json!(["a"]));
        assert_eq!(v["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["messages"][0]["content"][1]["text"], "more");
        assert_eq!(v["compacted"]["replaced_messages"], 2);
    }

    #[test]
    fn calls_a_kill_left_open_are_closed() {
        let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "ask_user", "input": {}});
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": [], "is_error": false});
        let mut messages = json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [call("a"), call("b")]},
            {"role": "user", "content": [result("a")]},
            {"role": "assistant", "content": [call("c")]},
        ]);
        close_open_calls(&mut messages);
        let list = messages.as_array().unwrap();
        assert_eq!(list.len(), 5);
        assert_eq!(list[2]["content"][0]["tool_use_id"], "b");
        assert_eq!(list[2]["content"][0]["is_error"], true);
        assert_eq!(list[2]["content"][1]["tool_use_id"], "a");
        assert_eq!(list[4]["content"][0]["tool_use_id"], "c");
        assert_eq!(list[4]["content"][0]["content"][0]["text"], INTERRUPTED);
    }
}
