//! How a session's work is written up: the conversation (journaled as it grows, written whole
//! at the end), the report at the end (the model's own, or one built from the notes and files),
//! and one notification when the session ends (sent off the session thread, so a stop is never
//! delayed by it).

use super::Agent;
use super::context::without_image_data;
use crate::llm::Message;
use crate::protocol::{LogKind, Mode};
use crate::session::AgentOutcome;
use serde_json::json;
use std::sync::Arc;

/// A `message` line of the journal, serialized without a copy of the message.
#[derive(serde::Serialize)]
struct MessageLine<'a> {
    message: &'a Message,
}

/// How much of the conversation the journal already holds.
#[derive(Default)]
pub(super) struct Journaled {
    started: bool,
    messages: usize,
    /// Blocks of the last journaled message (a nudge may be added to it).
    last_blocks: usize,
    summary: Option<usize>,
}

impl Journaled {
    /// What a resumed session's journal already holds: these messages, and their compaction.
    pub(super) fn resumed(messages: &[Message], summary: Option<usize>) -> Journaled {
        let last_blocks = messages.last().map_or(0, |m| m.content.len());
        Journaled { started: true, messages: messages.len(), last_blocks, summary }
    }
}

impl Agent {
    /// Append what the journal lacks: the start, more blocks of its last message, new messages,
    /// a new compaction. O(what changed), never the whole conversation.
    pub(super) fn journal_conversation(&mut self) {
        if !self.journaled.started {
            let tools = self.listed_names();
            let start = json!({"session_id": self.runner.session_id(), "system": self.system, "tools": tools});
            self.runner.journal(&json!({ "start": start }));
            self.journaled.started = true;
        }
        let done = self.journaled.messages;
        if let Some(last) = done.checked_sub(1).and_then(|i| self.messages.get(i)) {
            if last.content.len() > self.journaled.last_blocks {
                let more = Message { role: last.role, content: last.content[self.journaled.last_blocks..].to_vec() };
                self.runner.journal(&json!({ "amend": without_image_data(&more).content }));
            }
        }
        for message in self.messages.iter().skip(done) {
            self.runner.journal(&MessageLine { message: &without_image_data(message) });
        }
        self.journaled.messages = self.messages.len();
        self.journaled.last_blocks = self.messages.last().map_or(0, |m| m.content.len());
        let replaced = self.summary.as_ref().map(|(n, _)| *n);
        if replaced != self.journaled.summary {
            if let Some((n, text)) = &self.summary {
                self.runner.journal(&json!({"compacted": {"replaced_messages": n, "summary": text}}));
            }
            self.journaled.summary = replaced;
        }
    }

    /// The whole conversation as `conversation_log.json` (the seed's file), once at the end.
    pub(super) fn save_conversation(&self) {
        let messages: Vec<_> = self.messages.iter().map(without_image_data).collect();
        self.runner.write_conversation(&json!({
            "session_id": self.runner.session_id(),
            "system": self.system,
            "tools": self.listed_names(),
            "messages": messages,
            // The model's working context replaces the first `replaced_messages` after the
            // opening with this summary; `messages` above is the whole record.
            "compacted": self.summary.as_ref().map(|(n, text)| json!({"replaced_messages": n, "summary": text})),
        }));
    }

    pub(super) fn write_report(&self, summary: &str, report: Option<&str>) {
        let summary = &self.with_budget_line(summary.to_string());
        match report.filter(|r| !r.trim().is_empty()) {
            Some(r) => self.runner.write_report(&self.with_budget_line(r.to_string())),
            None => {
                let (head, tail) = self.report_frame();
                self.runner.write_report(&format!("{head}{summary}\n{tail}"));
            }
        }
    }

    /// The built report around its outcome: the heading and facts before it, the notes and
    /// files after it.
    pub(super) fn report_frame(&self) -> (String, String) {
        let r = &self.record;
        let kind = match r.mode {
            Mode::Task => "Task",
            Mode::Explore => "Exploration",
        };
        let mut head = format!("# {kind} report — {}\n\n- **Target:** {}\n", r.session_id, r.target);
        match r.mode {
            Mode::Task => head.push_str(&format!("- **Task:** {}\n", r.instruction.as_deref().unwrap_or(""))),
            Mode::Explore => {
                head.push_str(&format!("- **Goal:** {}\n", r.goal.as_deref().unwrap_or("understand the target")))
            }
        }
        head.push_str(&format!("- **Turns:** {}\n\n## Outcome\n\n", self.turn));
        let mut tail = String::new();
        let notes = self.runner.notes();
        if !notes.is_empty() {
            tail.push_str("\n## Notes\n\n");
            for n in notes {
                match n.title {
                    Some(t) => tail.push_str(&format!("- **{t}:** {}\n", n.content)),
                    None => tail.push_str(&format!("- {}\n", n.content)),
                }
            }
        }
        let files = self.runner.deliverable_files();
        if !files.is_empty() {
            tail.push_str("\n## Files\n\n");
            for f in files {
                tail.push_str(&format!("- {} ({} KB)\n", f.filename, f.size_kb));
            }
        }
        (head, tail)
    }

    /// One notification when the session ends, sent off-thread so a stop is not delayed.
    pub(super) fn notify_end(&self, outcome: &AgentOutcome) {
        let Some(targets) = self.runner.notifications() else { return };
        let id = self.runner.session_id().to_string();
        let message = match outcome {
            AgentOutcome::Finished { summary } => format!("Session {id} finished: {summary}"),
            AgentOutcome::Failed(e) => format!("Session {id} ended with an error: {e}"),
            AgentOutcome::Stopped => format!("Session {id} was stopped."),
        };
        let files: Vec<String> = self.runner.deliverable_files().into_iter().map(|f| f.filename).collect();
        let notifier = Arc::clone(&self.notifier);
        let runner = self.runner.clone();
        let _ = std::thread::Builder::new().name(format!("notify-{id}")).spawn(move || {
            for d in notifier.send(&targets, &message, &id, &files) {
                match d.result {
                    Ok(()) => runner.log(LogKind::System, &format!("end notification sent ({})", d.channel), None),
                    Err(e) => {
                        runner.log(LogKind::Error, &format!("end notification failed ({}): {e}", d.channel), None)
                    }
                };
            }
        });
    }
}
