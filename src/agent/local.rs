//! The tools that run in the controller: notes, finishing, confirmations, files,
//! notifications, the login from the vault, and searching the session's log.
//!
//! `perform_login` (in `login.rs`) is the one local tool that drives the target.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Block;
use crate::protocol::FileKind;
use crate::protocol::tools::Tool;
use crate::session::{AskOutcome, ConfirmationOutcome};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

impl Agent {
    /// The handler of each controller tool of the table.
    pub(super) fn local_tool(&mut self, tool: Tool, input: &Value) -> ToolOutcome {
        match tool {
            Tool::SaveNote => {
                let content = input["content"].as_str().unwrap_or("");
                self.runner.save_note(input["title"].as_str(), content);
                ToolOutcome::ok(json!({"saved": true}))
            }
            Tool::FinishTask | Tool::FinishExploration => {
                let summary = input["summary"].as_str().unwrap_or("").to_string();
                let report = input["report_markdown"].as_str().map(str::to_string);
                ToolOutcome { finish: Some((summary, report)), ..ToolOutcome::ok(json!({"finished": true})) }
            }
            Tool::RequestConfirmation => self.confirm(input),
            Tool::AskUser => match self.runner.ask_user(input["question"].as_str().unwrap_or("")) {
                AskOutcome::Answered(text) => ToolOutcome::ok(json!({"answer": text})),
                AskOutcome::TimedOut => ToolOutcome::ok(json!({"answered": false,
                    "note": "nobody answered in time; decide yourself, or finish and say what you needed"})),
                AskOutcome::Stopped => ToolOutcome::stopped(),
            },
            Tool::SaveFile => self.save_file(input),
            Tool::Wait => {
                let ms = input["ms"].as_u64().unwrap_or(0).min(10_000);
                if self.runner.wait_for_stop(Duration::from_millis(ms)) {
                    return ToolOutcome::stopped();
                }
                ToolOutcome::ok(json!({"waited_ms": ms}))
            }
            Tool::SendNotification => self.send_notification(input),
            Tool::PerformLogin => self.perform_login(),
            Tool::RequestTakeover => self.request_takeover(input),
            Tool::SearchHistory => {
                let max = input["max_results"].as_u64().unwrap_or(20) as usize;
                // Lines of earlier results: the target's words, so data between the markers.
                let found = self.search_history(input["query"].as_str().unwrap_or(""), max);
                ToolOutcome::blocks(vec![Block::text(self.boundary.wrap(&found.to_string()))])
            }
            Tool::ToolOutputsList
            | Tool::ToolOutputsStats
            | Tool::ToolOutputsExtract
            | Tool::ToolOutputsCount
            | Tool::ToolOutputsSample => self.output_tool(tool, input),
            other => ToolOutcome::error(format!("{} has no handler in the controller", other.name())),
        }
    }

    fn confirm(&self, input: &Value) -> ToolOutcome {
        let verdict = self.runner.confirm(
            input["action"].as_str().unwrap_or(""),
            input["description"].as_str().unwrap_or(""),
            input.get("details").cloned().unwrap_or_else(|| json!([])),
            input["risk_level"].as_str().unwrap_or("medium"),
        );
        match verdict.outcome {
            ConfirmationOutcome::Approved => ToolOutcome::ok(json!({"approved": true})),
            ConfirmationOutcome::AutoApproved => ToolOutcome::ok(json!({"approved": true, "auto": true})),
            ConfirmationOutcome::Denied => match verdict.reason {
                Some(reason) => ToolOutcome::ok(json!({"approved": false, "reason": reason})),
                None => ToolOutcome::ok(json!({"approved": false})),
            },
            ConfirmationOutcome::TimedOut => ToolOutcome::ok(json!({"approved": false, "reason": "timeout"})),
            ConfirmationOutcome::Stopped => ToolOutcome::stopped(),
        }
    }

    fn save_file(&mut self, input: &Value) -> ToolOutcome {
        let content = input["content"].as_str().unwrap_or("");
        let bytes = match input["encoding"].as_str() {
            Some("base64") => match STANDARD.decode(content) {
                Ok(b) => b,
                Err(e) => return ToolOutcome::error(format!("content is not valid base64: {e}")),
            },
            _ => content.as_bytes().to_vec(),
        };
        match self.runner.store_file(input["filename"].as_str().unwrap_or("file"), &bytes, FileKind::Generated) {
            Ok(entry) if entry.duplicate => ToolOutcome::ok(json!({
                "saved": entry.filename, "size_kb": entry.size_kb,
                "note": format!("the same content was already saved as {}: not stored again", entry.filename),
            })),
            Ok(entry) => ToolOutcome::ok(json!({"saved": entry.filename, "size_kb": entry.size_kb})),
            Err(e) => ToolOutcome::error(format!("could not save the file: {e}")),
        }
    }

    fn send_notification(&self, input: &Value) -> ToolOutcome {
        let Some(targets) = self.runner.notifications() else {
            return ToolOutcome::error("no notification channel was configured for this session");
        };
        let files: Vec<String> = if input["include_files"].as_bool().unwrap_or(false) {
            self.runner.deliverable_files().into_iter().map(|f| f.filename).collect()
        } else {
            Vec::new()
        };
        let message = input["message"].as_str().unwrap_or("").to_string();
        // Delivery may take tens of seconds (timeouts, retries): off this thread, so a stop
        // still ends the session at once.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let notifier = Arc::clone(&self.notifier);
        let id = self.runner.session_id().to_string();
        std::thread::spawn(move || {
            let _ = tx.send(notifier.send(&targets, &message, &id, &files));
        });
        let stopped = self.runner.stop_signal().receiver();
        let deliveries = crossbeam_channel::select! {
            recv(rx) -> d => match d {
                Ok(d) => d,
                Err(_) => return ToolOutcome::error("the notification thread ended without a result"),
            },
            recv(stopped) -> _ => return ToolOutcome::stopped(),
        };
        let report: Vec<Value> = deliveries
            .iter()
            .map(|d| match &d.result {
                Ok(()) => json!({"channel": d.channel, "sent": true}),
                Err(e) => json!({"channel": d.channel, "sent": false, "error": e}),
            })
            .collect();
        if deliveries.iter().all(|d| d.result.is_err()) {
            ToolOutcome::error(json!({"delivered": report}).to_string())
        } else {
            ToolOutcome::ok(json!({"delivered": report}))
        }
    }
}
