//! Page snapshots on the controller's side: how a worker result that carries one reads to the
//! model, and asking the worker for the page as it is now (for a loop note, after a login).
//!
//! A snapshot is text with one element per line; inside JSON its line breaks would be `\n`
//! escapes, which small models read badly. So the result's other fields stay JSON and the
//! snapshot follows them as plain lines.

use super::Agent;
use crate::protocol::SessionType;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};
use std::time::Duration;

/// Take the snapshot text out of a worker result, if it has one.
pub(super) fn take(data: &mut Value) -> Option<String> {
    match data.as_object_mut()?.remove("snapshot")? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A result's JSON followed by its snapshot's lines.
pub(super) fn render(data: &Value, page: Option<String>) -> String {
    let text = match data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match page {
        Some(page) => format!("{text}\n{page}"),
        None => text,
    }
}
impl Agent {
    /// The page as it is now (browser sessions), or `None` (other sessions, or no answer).
    pub(super) fn current_snapshot(&mut self) -> Option<String> {
        if self.record.session_type != SessionType::Browser {
            return None;
        }
        let params = json!({"snapshot_chars": self.runner.config().agent.snapshot_chars});
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        let mut data = self.runner.execute(Tool::BrowserSnapshot.name(), params, timeout).ok()?;
        self.runner.scrub_json(&mut data);
        let page = take(&mut data)?;
        Some(render(&data, Some(page)))
    }
}
