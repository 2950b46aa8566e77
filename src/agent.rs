//! The agent: the LLM tool-use loop each session runs on its own thread.
//!
//! Per turn: system prompt and tools for the session's mode × type, the conversation (with only
//! the newest `agent.keep_screenshots` images kept), one model call, then each `tool_use` in
//! order — local tools here, the rest on the worker through the `SessionRunner` — and one user
//! message with every `tool_result`. Ends on finish_task / finish_exploration, `max_turns`, a
//! stop, a second reply without tools, or an error the API will not get past.
//! Invariant: `conversation_log.json` is rewritten after every turn and at the end, and every
//! `tool_use` in it has its `tool_result`, whatever ended the session.

use crate::b64;
use crate::config::Config;
use crate::hub::CommandError;
use crate::llm::anthropic::Anthropic;
use crate::llm::{Block, LlmError, Message, Provider, Reply, Request, Role, StopReason, ToolDef};
use crate::notify::Notifier;
use crate::prompts;
use crate::protocol::{FileKind, LogKind, Mode, SessionRecord};
use crate::runner::{AgentOutcome, SessionRunner};
use crate::sessions::{AgentFn, ConfirmationOutcome};
use crate::tools;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Characters of a tool result shown in the log.
const LOG_EXCERPT: usize = 300;
/// Characters of an oversized tool output shown to the model.
const PREVIEW_CHARS: usize = 2000;
/// The Messages API's per-image limit, measured on the base64 text.
const MAX_IMAGE_BASE64: usize = 5_000_000;

/// Build the agent for every session from the config: the LLM adapter and the notifier.
pub fn llm_agent(config: &Config) -> AgentFn {
    let provider: Option<Arc<dyn Provider>> = match config.api.provider.as_str() {
        "anthropic" if !config.api.api_key.is_empty() => Some(Arc::new(Anthropic::new(
            &config.api.base_url,
            config.api.api_key.clone(),
            &config.api.model,
            Duration::from_secs(config.api.timeout_s),
            config.api.max_retries,
        ))),
        _ => None,
    };
    let missing = match config.api.provider.as_str() {
        "anthropic" => {
            "no Anthropic API key: set ANTHROPIC_API_KEY (or api.api_key) and restart the controller".to_string()
        }
        other => format!("api.provider {other:?} is not supported yet; use anthropic"),
    };
    if provider.is_none() {
        log::warn!("{missing}; sessions will end with this error");
    }
    let notifier = Arc::new(Notifier::new(
        &config.notifications.telegram_base_url,
        Duration::from_secs(config.notifications.timeout_s),
    ));
    Arc::new(move |runner: SessionRunner| match &provider {
        Some(p) => Agent::new(runner, Arc::clone(p), Arc::clone(&notifier)).run(),
        None => {
            runner.log(LogKind::Error, &missing, None);
            AgentOutcome::Failed(missing.clone())
        }
    })
}

/// What one tool call produced.
struct ToolOutcome {
    content: Vec<Block>,
    is_error: bool,
    /// Set by finish_task / finish_exploration: (summary, report).
    finish: Option<(String, Option<String>)>,
    /// The session was stopped during the call.
    stopped: bool,
}

impl ToolOutcome {
    fn ok(value: Value) -> ToolOutcome {
        ToolOutcome { content: vec![Block::text(value.to_string())], is_error: false, finish: None, stopped: false }
    }

    fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome { content: vec![Block::text(message.into())], is_error: true, finish: None, stopped: false }
    }

    fn stopped() -> ToolOutcome {
        ToolOutcome { stopped: true, ..ToolOutcome::error("not run: the session was stopped") }
    }
}

pub struct Agent {
    runner: SessionRunner,
    provider: Arc<dyn Provider>,
    notifier: Arc<Notifier>,
    record: SessionRecord,
    system: String,
    tools: Vec<ToolDef>,
    messages: Vec<Message>,
    turn: u32,
    /// Last error of each distinct call (name + input), to notice verbatim repeats.
    failed_calls: std::collections::HashMap<String, String>,
}

impl Agent {
    pub fn new(runner: SessionRunner, provider: Arc<dyn Provider>, notifier: Arc<Notifier>) -> Agent {
        let record = runner.record();
        let system = prompts::system_prompt(&record);
        let tools = tools::toolset(record.mode, record.session_type, record.has_credentials);
        let opening = Message::user(vec![Block::text(prompts::opening_message(&record))]);
        Agent {
            runner,
            provider,
            notifier,
            record,
            system,
            tools,
            messages: vec![opening],
            turn: 0,
            failed_calls: Default::default(),
        }
    }

    pub fn run(mut self) -> AgentOutcome {
        let outcome = self.run_loop();
        self.save_conversation();
        self.notify_end(&outcome);
        outcome
    }

    fn run_loop(&mut self) -> AgentOutcome {
        let (keep_screenshots, max_tokens) =
            (self.runner.config().agent.keep_screenshots, self.runner.config().api.max_tokens);
        let mut nudged = false;
        loop {
            if self.runner.stop_requested() {
                return AgentOutcome::Stopped;
            }
            if self.turn >= self.record.max_turns {
                let summary = format!("Stopped after reaching the limit of {} turns.", self.record.max_turns);
                self.runner.log(LogKind::System, &summary, None);
                self.write_report(&summary, None);
                return AgentOutcome::Finished { summary };
            }
            self.turn += 1;
            self.runner.set_turn(self.turn);
            trim_images(&mut self.messages, keep_screenshots);

            let reply = match self.call_model(max_tokens) {
                Ok(r) => r,
                Err(LlmError::Cancelled) => return AgentOutcome::Stopped,
                Err(e) => {
                    let msg = e.to_string();
                    self.runner.log(LogKind::Error, &msg, None);
                    self.write_report(&format!("The session ended with an error: {msg}"), None);
                    return AgentOutcome::Failed(msg);
                }
            };
            self.runner.add_usage(&reply.usage);
            for block in &reply.content {
                if let Block::Text { text } = block {
                    if !text.trim().is_empty() {
                        self.runner.log(LogKind::Assistant, text, None);
                    }
                }
            }
            // An empty assistant turn is invalid in the next request: keep it out.
            let empty = reply.content.is_empty();
            if !empty {
                self.messages.push(Message::assistant(reply.content.clone()));
            }
            let calls: Vec<(String, String, Value)> = reply
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                    _ => None,
                })
                .collect();

            if calls.is_empty() {
                let last_text = last_text(&reply);
                if !nudged && reply.stop_reason != StopReason::Refusal {
                    nudged = true;
                    let nudge = Block::text(prompts::nudge(self.record.mode));
                    match self.messages.last_mut() {
                        // After an empty reply the last message is ours: add to it, keeping turns alternating.
                        Some(last) if empty && last.role == Role::User => last.content.push(nudge),
                        _ => self.messages.push(Message::user(vec![nudge])),
                    }
                    self.save_conversation();
                    continue;
                }
                let summary =
                    if last_text.is_empty() { "The model ended without a summary.".to_string() } else { last_text };
                self.write_report(&summary, None);
                return AgentOutcome::Finished { summary };
            }

            let mut results = Vec::with_capacity(calls.len());
            let mut finish = None;
            let mut stopped = false;
            for (id, name, input) in calls {
                let outcome = if stopped || self.runner.stop_requested() {
                    ToolOutcome::stopped()
                } else {
                    self.run_tool(&name, &input)
                };
                stopped |= outcome.stopped;
                if outcome.finish.is_some() {
                    finish = outcome.finish.clone();
                }
                results.push(Block::ToolResult {
                    tool_use_id: id,
                    content: outcome.content,
                    is_error: outcome.is_error,
                });
            }
            self.messages.push(Message::user(results));
            self.save_conversation();
            if stopped {
                return AgentOutcome::Stopped;
            }
            if let Some((summary, report)) = finish {
                self.write_report(&summary, report.as_deref());
                return AgentOutcome::Finished { summary };
            }
        }
    }

    fn call_model(&self, max_tokens: u32) -> Result<Reply, LlmError> {
        let request = Request { system: &self.system, tools: &self.tools, messages: &self.messages, max_tokens };
        let runner = &self.runner;
        self.provider.complete(&request, &|| runner.stop_requested())
    }

    // ----- tools -------------------------------------------------------------------------------

    fn run_tool(&mut self, name: &str, input: &Value) -> ToolOutcome {
        self.runner.log(
            LogKind::Tool,
            &format!("{name} {}", excerpt(&input.to_string(), LOG_EXCERPT)),
            Some(json!({"tool": name, "input": input})),
        );
        let mut outcome = self.dispatch(name, input);
        // Weak models repeat a failing call verbatim; say so, so the next turn changes course.
        let key = format!("{name} {input}");
        if outcome.is_error && !outcome.stopped {
            let text = first_text(&outcome.content);
            if self.failed_calls.get(&key) == Some(&text) {
                outcome.content.push(Block::text(
                    "This exact call already failed the same way. Repeating it will not help: look at the page or output \
                     first (e.g. browser_get_dom, browser_screenshot) and try something different.",
                ));
            }
            self.failed_calls.insert(key, text);
        } else {
            self.failed_calls.remove(&key);
        }
        let text: String = outcome
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ");
        let images = outcome.content.iter().filter(|b| matches!(b, Block::Image { .. })).count();
        let shown = if images > 0 {
            format!("{} [+{images} image]", excerpt(&text, LOG_EXCERPT))
        } else {
            excerpt(&text, LOG_EXCERPT)
        };
        self.runner.log(
            if outcome.is_error { LogKind::Error } else { LogKind::Result },
            &format!("{name}: {shown}"),
            Some(json!({"tool": name, "is_error": outcome.is_error})),
        );
        outcome
    }

    fn dispatch(&mut self, name: &str, input: &Value) -> ToolOutcome {
        let Some(def) = self.tools.iter().find(|t| t.name == name) else {
            let known = self.tools.iter().map(|t| t.name).collect::<Vec<_>>().join(", ");
            return ToolOutcome::error(format!("unknown tool `{name}` for this session; available tools: {known}"));
        };
        if let Err(e) = tools::validate(&def.input_schema, input) {
            return ToolOutcome::error(format!("invalid arguments for {name}: {e}"));
        }
        match name {
            "save_note" => {
                let content = input["content"].as_str().unwrap_or("");
                self.runner.save_note(input["title"].as_str(), content);
                ToolOutcome::ok(json!({"saved": true}))
            }
            "finish_task" | "finish_exploration" => {
                let summary = input["summary"].as_str().unwrap_or("").to_string();
                let report = input["report_markdown"].as_str().map(str::to_string);
                ToolOutcome { finish: Some((summary, report)), ..ToolOutcome::ok(json!({"finished": true})) }
            }
            "request_confirmation" => self.confirm(input),
            "save_file" => self.save_file(input),
            "send_notification" => self.send_notification(input),
            "perform_login" => self.perform_login(),
            "search_history" => {
                let max = input["max_results"].as_u64().unwrap_or(20).clamp(1, 100) as usize;
                let hits = self.runner.search_log(input["query"].as_str().unwrap_or(""), max);
                ToolOutcome::ok(json!({"matches": hits}))
            }
            _ => self.worker_tool(name, input),
        }
    }

    fn confirm(&self, input: &Value) -> ToolOutcome {
        let outcome = self.runner.request_confirmation(
            input["action"].as_str().unwrap_or(""),
            input["description"].as_str().unwrap_or(""),
            input.get("details").cloned().unwrap_or_else(|| json!([])),
            input["risk_level"].as_str().unwrap_or("medium"),
        );
        match outcome {
            ConfirmationOutcome::Approved => ToolOutcome::ok(json!({"approved": true})),
            ConfirmationOutcome::AutoApproved => ToolOutcome::ok(json!({"approved": true, "auto": true})),
            ConfirmationOutcome::Denied => ToolOutcome::ok(json!({"approved": false})),
            ConfirmationOutcome::TimedOut => ToolOutcome::ok(json!({"approved": false, "reason": "timeout"})),
            ConfirmationOutcome::Stopped => ToolOutcome::stopped(),
        }
    }

    fn save_file(&self, input: &Value) -> ToolOutcome {
        let content = input["content"].as_str().unwrap_or("");
        let bytes = match input["encoding"].as_str() {
            Some("base64") => match b64::decode(content) {
                Ok(b) => b,
                Err(e) => return ToolOutcome::error(format!("content is not valid base64: {e}")),
            },
            _ => content.as_bytes().to_vec(),
        };
        match self.runner.store_file(input["filename"].as_str().unwrap_or("file"), &bytes, FileKind::Generated) {
            Ok(entry) => ToolOutcome::ok(json!({"saved": entry.filename, "size_kb": entry.size_kb})),
            Err(e) => ToolOutcome::error(format!("could not save the file: {}", e.message())),
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
        let deliveries = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(d) => break d,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) if !self.runner.stop_requested() => continue,
                Err(_) => return ToolOutcome::stopped(),
            }
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

    /// Drive the login form on the worker with the vault's credentials. The password goes
    /// into one worker command and nowhere else.
    fn perform_login(&mut self) -> ToolOutcome {
        let Some(creds) = self.runner.credentials() else {
            return ToolOutcome::error("no credentials are stored for this session");
        };
        const FORM: &str = "form:has(input[type=password])";
        let login_url = creds.login_url.clone().unwrap_or_else(|| self.record.target.clone());
        let user_sel = creds
            .username_selector
            .clone()
            .unwrap_or_else(|| format!("{FORM} input:is([type=email],[type=text],:not([type]))"));
        let pass_sel = creds.password_selector.clone().unwrap_or_else(|| "input[type=password]".to_string());
        let submit_sel = creds
            .submit_selector
            .clone()
            .unwrap_or_else(|| format!("{FORM} :is(button[type=submit],input[type=submit],button:not([type]))"));
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        let steps = [
            ("browser_navigate", json!({"url": login_url})),
            ("browser_type", json!({"selector": user_sel, "text": creds.username})),
            ("browser_type", json!({"selector": pass_sel, "text": creds.password.expose()})),
            ("browser_click", json!({"selector": submit_sel})),
        ];
        for (i, (action, params)) in steps.into_iter().enumerate() {
            let what = ["open the login page", "type the username", "type the password", "submit the form"][i];
            if let Err(e) = self.runner.worker_command(action, params, timeout) {
                return match e {
                    CommandError::Stopped => ToolOutcome::stopped(),
                    e => ToolOutcome::error(format!("login failed at \"{what}\": {e}")),
                };
            }
        }
        let mut content = vec![Block::text(format!(
            "Submitted the login form at {login_url} as {}. Check the screenshot to see whether the login worked.",
            creds.username
        ))];
        if let Ok(shot) = self.runner.worker_command("browser_screenshot", json!({}), timeout) {
            content.extend(self.image_blocks(&shot));
        }
        ToolOutcome { content, is_error: false, finish: None, stopped: false }
    }

    fn worker_tool(&mut self, name: &str, input: &Value) -> ToolOutcome {
        let timeout = tools::timeout_for(name, input, self.runner.config());
        match self.runner.worker_command(name, input.clone(), timeout) {
            // A page can echo a typed secret back (a wrong field, an error page): scrub what
            // goes into the model's context just like what goes to disk.
            Ok(mut data) => {
                self.runner.scrub_json(&mut data);
                self.result_blocks(name, data)
            }
            Err(CommandError::Stopped) => ToolOutcome::stopped(),
            Err(e) => ToolOutcome::error(self.runner.scrub(&e.to_string())),
        }
    }

    /// A worker result for the model: screenshots become stored PNGs plus an image block; long
    /// text is stored as a file and previewed.
    fn result_blocks(&mut self, name: &str, mut data: Value) -> ToolOutcome {
        let images = self.image_blocks(&data);
        if let Some(map) = data.as_object_mut() {
            if map.remove("image_base64").is_some() {
                map.insert("image".into(), json!("attached"));
            }
        }
        let text = match &data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let max = self.runner.config().agent.max_tool_output_chars;
        let text = if text.chars().count() > max {
            let stored = self.runner.store_file(
                &format!("tool_output_{:04}_{name}.txt", self.turn),
                text.as_bytes(),
                FileKind::Generated,
            );
            let preview: String = text.chars().take(PREVIEW_CHARS).collect();
            match stored {
                Ok(f) => format!(
                    "{preview}\n… [output truncated: {} characters in all; the full output is saved as file {}]",
                    text.chars().count(),
                    f.filename
                ),
                Err(_) => format!("{preview}\n… [output truncated: {} characters in all]", text.chars().count()),
            }
        } else {
            text
        };
        let mut content = vec![Block::text(text)];
        content.extend(images);
        ToolOutcome { content, is_error: false, finish: None, stopped: false }
    }

    /// Store `image_base64` from a worker result under screenshots/ and return it as an image.
    fn image_blocks(&self, data: &Value) -> Vec<Block> {
        let Some(encoded) = data["image_base64"].as_str() else { return Vec::new() };
        let media_type = data["media_type"].as_str().unwrap_or("image/png").to_string();
        match b64::decode(encoded) {
            Ok(bytes) => {
                let stored = self.runner.store_screenshot(self.turn, &bytes);
                if let Err(e) = &stored {
                    log::warn!("{}: screenshot not stored: {}", self.runner.session_id(), e.message());
                }
                // The API refuses images over 5 MB (of base64) and would end the session.
                if encoded.len() > MAX_IMAGE_BASE64 {
                    let name = stored.map(|f| f.filename).unwrap_or_default();
                    return vec![Block::text(format!(
                        "(the screenshot is too large to show: {} MB; saved as {name}. Take a viewport screenshot instead.)",
                        bytes.len() / (1024 * 1024)
                    ))];
                }
                vec![Block::Image { media_type, data: encoded.to_string() }]
            }
            Err(e) => vec![Block::text(format!("(the screenshot could not be decoded: {e})"))],
        }
    }

    // ----- endings ------------------------------------------------------------------------------

    fn save_conversation(&self) {
        let messages: Vec<Message> = self.messages.iter().map(without_image_data).collect();
        self.runner.write_conversation(&json!({
            "session_id": self.runner.session_id(),
            "system": self.system,
            "tools": self.tools.iter().map(|t| t.name).collect::<Vec<_>>(),
            "messages": messages,
        }));
    }

    fn write_report(&self, summary: &str, report: Option<&str>) {
        if let Some(r) = report.filter(|r| !r.trim().is_empty()) {
            self.runner.write_report(r);
            return;
        }
        let r = &self.record;
        let kind = match r.mode {
            Mode::Task => "Task",
            Mode::Explore => "Exploration",
        };
        let mut md = format!("# {kind} report — {}\n\n- **Target:** {}\n", r.session_id, r.target);
        match r.mode {
            Mode::Task => md.push_str(&format!("- **Task:** {}\n", r.instruction.as_deref().unwrap_or(""))),
            Mode::Explore => {
                md.push_str(&format!("- **Goal:** {}\n", r.goal.as_deref().unwrap_or("understand the target")))
            }
        }
        md.push_str(&format!("- **Turns:** {}\n\n## Outcome\n\n{summary}\n", self.turn));
        let notes = self.runner.notes();
        if !notes.is_empty() {
            md.push_str("\n## Notes\n\n");
            for n in notes {
                match n.title {
                    Some(t) => md.push_str(&format!("- **{t}:** {}\n", n.content)),
                    None => md.push_str(&format!("- {}\n", n.content)),
                }
            }
        }
        let files = self.runner.deliverable_files();
        if !files.is_empty() {
            md.push_str("\n## Files\n\n");
            for f in files {
                md.push_str(&format!("- {} ({} KB)\n", f.filename, f.size_kb));
            }
        }
        self.runner.write_report(&md);
    }

    /// One notification when the session ends, sent off-thread so a stop is not delayed.
    fn notify_end(&self, outcome: &AgentOutcome) {
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

fn first_text(blocks: &[Block]) -> String {
    blocks
        .iter()
        .find_map(|b| match b {
            Block::Text { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn last_text(reply: &Reply) -> String {
    reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.trim()),
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Keep only the newest `keep` images in the context; older ones become a short stub.
pub fn trim_images(messages: &mut [Message], keep: usize) {
    let mut seen = 0;
    for message in messages.iter_mut().rev() {
        if message.role != Role::User {
            continue;
        }
        for block in message.content.iter_mut().rev() {
            let inner: &mut Vec<Block> = match block {
                Block::ToolResult { content, .. } => content,
                _ => continue,
            };
            for b in inner.iter_mut().rev() {
                if matches!(b, Block::Image { .. }) {
                    seen += 1;
                    if seen > keep {
                        *b = Block::text("[an earlier screenshot was removed from the context to save space]");
                    }
                }
            }
        }
    }
}

/// The conversation as stored on disk: images are in screenshots/, not inlined.
fn without_image_data(m: &Message) -> Message {
    fn strip(b: &Block) -> Block {
        match b {
            Block::Image { media_type, .. } => Block::text(format!("[image {media_type}, stored under screenshots/]")),
            Block::ToolResult { tool_use_id, content, is_error } => Block::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: content.iter().map(strip).collect(),
                is_error: *is_error,
            },
            other => other.clone(),
        }
    }
    Message { role: m.role, content: m.content.iter().map(strip).collect() }
}
