//! What the agent writes besides the log: the step log (`steps.jsonl`, one line per tool call,
//! appended as each ends), notes (`notes.json`), the report (`report.md`) and the conversation
//! (`conversation_log.json`), each scrubbed of the vault's secrets first; JSON files are
//! replaced atomically. The notes and steps locks order their writes; nothing here takes `state`.

use super::{Session, lock};
use crate::protocol::Note;
use crate::store;
use crate::util::clock;
use serde_json::Value;
use std::sync::MutexGuard;

impl Session {
    fn note_list(&self) -> MutexGuard<'_, Option<Vec<Note>>> {
        let mut notes = lock(&self.notes);
        if notes.is_none() {
            let stored = self.dir.read_text(store::NOTES_JSON).ok().flatten();
            *notes = Some(stored.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default());
        }
        notes
    }

    pub fn notes(&self) -> Vec<Note> {
        self.note_list().clone().unwrap_or_default()
    }

    pub fn add_note(&self, title: Option<&str>, content: &str) {
        let (title, content) = {
            let vault = self.vault();
            (title.map(|t| vault.scrub(t)), vault.scrub(content))
        };
        let mut notes = self.note_list();
        let list = notes.get_or_insert_with(Vec::new);
        list.push(Note { title, content, ts: clock::now_rfc3339() });
        let written = self.dir.write_json(store::NOTES_JSON, list);
        drop(notes);
        if let Err(e) = written {
            self.write_failed("notes.json", &e);
        }
    }

    /// Append one step (a tool call) to `steps.jsonl`, secrets masked; its index.
    pub fn add_step(&self, mut step: Value) -> u64 {
        self.vault().scrub_json(&mut step);
        let mut count = lock(&self.steps);
        let index = *count.get_or_insert_with(|| self.read_steps().len() as u64) + 1;
        step["step"] = index.into();
        match self.dir.append_line(store::STEPS_JSONL, &step.to_string()) {
            Ok(_) => *count = Some(index),
            Err(e) => {
                drop(count);
                self.write_failed("steps.jsonl", &e);
            }
        }
        index
    }

    /// Every step so far (a torn last line is skipped).
    pub fn read_steps(&self) -> Vec<Value> {
        let text = self.dir.read_text(store::STEPS_JSONL).ok().flatten().unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    pub fn report(&self) -> String {
        self.dir.read_text(store::REPORT_MD).ok().flatten().unwrap_or_default()
    }

    pub fn write_report(&self, markdown: &str) {
        let text = self.vault().scrub(markdown);
        if let Err(e) = self.dir.write_text(store::REPORT_MD, &text) {
            self.write_failed("report.md", &e);
        }
    }

    pub fn write_conversation(&self, conversation: &Value) {
        let mut value = conversation.clone();
        self.vault().scrub_json(&mut value);
        if let Err(e) = self.dir.write_json(store::CONVERSATION_JSON, &value) {
            self.write_failed("conversation_log.json", &e);
        }
    }
}
