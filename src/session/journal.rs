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
use serde_json::{Value, json};

impl Session {
    /// Append one journal line (secrets scrubbed).
    pub fn append_journal(&self, mut entry: Value) {
        self.vault().scrub_json(&mut entry);
        let _order = lock(&self.journal);
        if let Err(e) = self.dir.append_line(store::CONVERSATION_JSONL, &entry.to_string()) {
            self.write_failed(store::CONVERSATION_JSONL, &e);
        }
    }

    /// The conversation in the seed's shape: folded from the journal, or the whole file an
    /// older controller wrote.
    pub fn conversation(&self) -> Value {
        let journal = self.dir.read_text(store::CONVERSATION_JSONL).ok().flatten();
        match journal {
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
}
