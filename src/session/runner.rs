//! The agent seam: everything an agent loop may do to its session, and nothing more.
//!
//! A `SessionRunner` is handed to the agent on the session's thread once a worker is leased.
//! It can run a target tool on the session's `Executor` (one at a time), ask a person for a
//! confirmation, write the log, notes, report and conversation, store files and screenshots,
//! count turns and tokens, read the session's secrets, and see a stop request. Every wait it
//! offers ends early on a stop. Everything it writes is scrubbed of the vault's secrets.

use super::error::SessionError;
use super::{AskOutcome, ConfirmationOutcome, PauseEvent, Session, Verdict};
use crate::config::Config;
use crate::exec::{ExecError, Executor};
use crate::protocol::secrets::{Credentials, Notifications};
use crate::protocol::takeover::EndedBy;
use crate::protocol::{FileEntry, FileKind, LogEntry, LogKind, Note, SessionRecord, Usage};
use crate::wait::stop::StopSignal;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the agent's work ended; the session's final status follows from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOutcome {
    Finished { summary: String },
    Failed(String),
    Stopped,
}

/// The agent plugged into every session (the LLM loop, or a test acting as one).
pub type AgentFn = Arc<dyn Fn(SessionRunner) -> AgentOutcome + Send + Sync>;

#[derive(Clone)]
pub struct SessionRunner {
    session: Arc<Session>,
    executor: Arc<dyn Executor>,
    config: Arc<Config>,
}

impl SessionRunner {
    pub(crate) fn new(session: Arc<Session>, executor: Arc<dyn Executor>, config: Arc<Config>) -> Self {
        SessionRunner { session, executor, config }
    }

    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// The session itself, for the runner's methods kept in other files (`outputs.rs`).
    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// A snapshot of the session's record (mode, type, target, instruction, goal, options…).
    pub fn record(&self) -> SessionRecord {
        self.session.record()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The host the session's target tools run on (the leased worker's hostname).
    pub fn worker_hostname(&self) -> String {
        self.session.record().worker.unwrap_or_default()
    }

    /// Who runs the target tools ("worker pc-01 (wkr_…)").
    pub fn executor(&self) -> String {
        self.executor.describe()
    }

    /// What the model should know about the target first (an SSH host's system and shell).
    pub fn briefing(&self) -> Option<String> {
        let inputs = self.session.inputs_line();
        match (self.executor.briefing(), inputs) {
            (Some(b), Some(i)) => Some(format!("{b}\n\n{i}")),
            (b, i) => b.or(i),
        }
    }

    /// Run a target tool; wait at most `timeout` (or until a stop). An error's words are
    /// scrubbed, then cut to `agent.max_tool_output_chars` (a result that long is stored
    /// instead): whatever the model is shown of an error stays in its context.
    pub fn execute(&self, action: &str, params: Value, timeout: Duration) -> Result<Value, ExecError> {
        self.answer(action, params, timeout).map(crate::exec::Answer::into_tree)
    }

    /// `execute`, a large member of the result left as the text the target sent (for the
    /// model's view of a result, which needs no tree of it).
    pub fn answer(&self, action: &str, params: Value, timeout: Duration) -> Result<crate::exec::Answer, ExecError> {
        if self.stop_requested() {
            return Err(ExecError::Stopped);
        }
        let max = self.config.agent.max_tool_output_chars;
        // Scrubbed first: a cut through a secret would leave its start unmatched.
        self.executor
            .run(action, params, timeout)
            .map_err(|e| e.map_message(|m| crate::util::cut_chars(&self.scrub(&m), max)))
    }

    /// Ask a person (or approve at once under `auto_confirm`).
    pub fn request_confirmation(
        &self,
        action: &str,
        description: &str,
        details: Value,
        risk_level: &str,
    ) -> ConfirmationOutcome {
        self.session.request_confirmation(action, description, details, risk_level)
    }

    /// Ask a person to confirm; with the reason of a denial or the edit of an approval.
    pub fn confirm(&self, action: &str, description: &str, details: Value, risk_level: &str) -> Verdict {
        self.session.confirm(action, description, details, risk_level)
    }

    /// Ask a person a question (`ask_user`) and wait for the answer.
    pub fn ask_user(&self, question: &str) -> AskOutcome {
        self.session.ask(question)
    }

    /// The conversation so far (its journal folded) when the session goes on after a restart.
    pub fn resumed_conversation(&self) -> Option<Value> {
        self.session.resumed.then(|| self.session.conversation())
    }

    /// A person asked to take over: pause before the next model call.
    pub fn pause_pending(&self) -> bool {
        self.session.pause_pending()
    }

    /// Turn `paused` (`reason`: the model asked for it); false when the session has ended.
    pub fn enter_pause(&self, reason: Option<&str>) -> bool {
        self.session.enter_pause(reason)
    }

    /// While paused: the person's next act, their resume, a stop, or the deadline.
    pub fn next_pause_event(&self, deadline: Instant) -> PauseEvent {
        self.session.next_pause_event(deadline)
    }

    /// The result of a person's act, for the request waiting for it.
    pub fn act_done(&self, id: u64, result: Value) {
        self.session.act_done(id, result)
    }

    /// Back to `running` after a pause.
    pub fn leave_pause(&self) {
        self.session.leave_pause()
    }

    pub fn log(&self, kind: LogKind, text: &str, data: Option<Value>) -> u64 {
        self.session.log(kind, text, data)
    }

    /// Store bytes under `files/` (sanitized, never overwriting), within the session's limits.
    pub fn store_file(&self, name: &str, bytes: &[u8], kind: FileKind) -> Result<FileEntry, SessionError> {
        self.session.store_bytes(name, bytes, kind)
    }

    /// Store a PNG under `screenshots/` as `step_NNNN.png`.
    pub fn store_screenshot(&self, step: u32, png: &[u8]) -> Result<FileEntry, SessionError> {
        self.session.store_bytes(&format!("step_{step:04}.png"), png, FileKind::Screenshot)
    }

    /// Keep step `step`'s recording frame (a one-frame GIF the worker made).
    pub fn store_frame(&self, step: u64, gif: &[u8]) -> Result<(), SessionError> {
        self.session.store_frame(step, gif)
    }

    pub fn files(&self) -> Vec<FileEntry> {
        self.session.files()
    }

    /// Downloads and generated files: what a person wants to receive (no screenshots, nor
    /// the inputs they handed over).
    pub fn deliverable_files(&self) -> Vec<FileEntry> {
        self.session
            .files()
            .into_iter()
            .filter(|f| matches!(f.kind, FileKind::Download | FileKind::Generated))
            .collect()
    }

    pub fn notes(&self) -> Vec<Note> {
        self.session.notes()
    }

    /// Log entries whose text or data contains `query` (case-insensitive), newest last.
    pub fn search_log(&self, query: &str, max: usize) -> Vec<LogEntry> {
        self.session.search_log(query, max)
    }

    pub fn save_note(&self, title: Option<&str>, content: &str) {
        self.session.add_note(title, content)
    }

    pub fn write_report(&self, markdown: &str) {
        self.session.write_report(markdown)
    }

    /// Append a line to the conversation journal (`session/journal.rs` says the lines).
    pub fn journal(&self, entry: &impl serde::Serialize) {
        self.session.append_journal(entry)
    }

    /// The whole conversation as `conversation_log.json`, once, when the agent ends.
    pub fn write_conversation(&self, conversation: &Value) {
        self.session.write_conversation(conversation)
    }

    pub fn set_turn(&self, turn: u32) {
        self.session.update(|r| r.turn = turn)
    }

    /// Append a step (one tool call) to the step log; its index.
    pub fn add_step(&self, step: Value) -> u64 {
        self.session.add_step(step)
    }

    /// The profile the agent runs with, and why (shown in the record).
    pub fn set_profile(&self, choice: crate::protocol::guards::ProfileChoice) {
        self.session.update(|r| r.profile = Some(choice))
    }

    /// A guard fired (`protocol::guards`): counted in the record, which `/metrics` sums.
    pub fn count_guard(&self, name: &str) {
        self.session.update(|r| *r.guards_fired.entry(name.to_string()).or_default() += 1)
    }

    /// Count a step of a replayed session: run from the recording, or taken by the model.
    pub fn count_replay_step(&self, replayed: bool) {
        self.session.update(|r| {
            if let Some(replay) = r.replay.as_mut() {
                if replayed {
                    replay.replayed_steps += 1;
                } else {
                    replay.model_steps += 1;
                }
            }
        })
    }

    /// Record why the session ends when the model did not end it itself.
    pub fn mark_ended_by(&self, why: EndedBy) {
        self.session.update(|r| r.ended_by = Some(why))
    }

    /// Record where a replay stopped matching (the model takes over from there).
    pub fn mark_replay_diverged(&self, why: &str) {
        self.session.update(|r| {
            if let Some(replay) = r.replay.as_mut() {
                replay.diverged = Some(why.to_string());
            }
        })
    }

    /// Count a screenshot shown to the model (`sent`) or replaced by "unchanged" (not sent).
    pub fn count_image(&self, sent: bool, bytes: u64, width: u64, height: u64) {
        self.session.update(|r| {
            if sent {
                r.images.sent += 1;
                r.images.bytes = r.images.bytes.saturating_add(bytes);
                let tokens = width.saturating_mul(height) / 750;
                r.images.estimated_tokens = r.images.estimated_tokens.saturating_add(tokens);
            } else {
                r.images.skipped += 1;
            }
        })
    }

    /// Count a model call's tokens (in `usage`, the budget and so `/metrics`); the journal
    /// keeps the running totals for a crash. Every call a session makes comes here once.
    pub fn add_usage(&self, usage: &Usage) {
        let progress = self.session.count_usage(usage);
        self.session.append_journal(&progress);
    }

    /// The budget limit reached, if any (`paused`: time a person held the session, not counted).
    pub fn budget_reached(&self, paused: Duration) -> Option<crate::protocol::takeover::BudgetKind> {
        self.session.budget_reached(paused)
    }

    /// What is left of the seconds budget (`paused` left out as above); `None` without one.
    pub fn budget_time_left(&self, paused: Duration) -> Option<Duration> {
        self.session.budget_time_left(paused)
    }

    /// "Ended by its token budget: spent … of …", once a limit was reached.
    pub fn budget_line(&self) -> Option<String> {
        self.session.budget_line()
    }

    /// The login data from the vault. The password must only ever go into a worker command.
    pub fn credentials(&self) -> Option<Credentials> {
        self.session.vault().credentials.clone()
    }

    pub fn notifications(&self) -> Option<Notifications> {
        self.session.vault().notifications.clone()
    }

    /// Replace any vault secret inside `text` (for text that leaves through other paths).
    pub fn scrub(&self, text: &str) -> String {
        self.session.vault().scrub(text)
    }

    /// As `scrub`, borrowing `text` when no secret is in it.
    pub fn scrub_cow<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.session.vault().scrub_cow(text)
    }

    /// Hold what a person typed as a secret from now on: scrubbed from all the model and the
    /// record see. False when it is too short to scrub.
    pub fn hold_typed(&self, text: &str) -> bool {
        self.session.vault().hold_typed(text)
    }

    /// A scrubber that outlives the vault, for a write that lands after the session ends.
    pub fn scrubber(&self) -> impl Fn(&str) -> String + Send + use<> {
        self.session.vault().scrubber()
    }

    pub fn scrub_json(&self, value: &mut Value) {
        self.session.vault().scrub_json(value)
    }

    /// As `scrub_json`, on JSON kept as text. A replacement that would leave it no JSON (a
    /// secret across its syntax) makes the scrubbed text a JSON string instead.
    pub fn scrub_raw(&self, raw: &mut Box<serde_json::value::RawValue>) {
        let std::borrow::Cow::Owned(scrubbed) = self.scrub_cow(raw.get()) else { return };
        let still_json = serde_json::from_str::<serde::de::IgnoredAny>(&scrubbed).is_ok();
        let replaced = if still_json {
            serde_json::value::RawValue::from_string(scrubbed)
        } else {
            serde_json::value::to_raw_value(&scrubbed)
        };
        if let Ok(replaced) = replaced {
            *raw = replaced;
        }
    }

    pub fn stop_requested(&self) -> bool {
        self.session.stop_requested()
    }

    /// Whoever stopped the session wants the model's report on it.
    pub fn stop_report_wanted(&self) -> bool {
        self.session.stop_report_wanted()
    }

    /// The session's stop, for waits of the agent's own (an LLM call, a notification).
    pub fn stop_signal(&self) -> &StopSignal {
        self.session.stop_signal()
    }

    /// Sleep until stopped or `timeout`; true when stopped.
    pub fn wait_for_stop(&self, timeout: Duration) -> bool {
        self.session.stop_signal().wait(timeout)
    }
}

/// An agent that does nothing but hold the worker until the session is stopped (for tests and
/// for embedding the daemon without a model).
pub fn idle_agent(runner: SessionRunner) -> AgentOutcome {
    runner.log(
        LogKind::System,
        "no agent loop is built into this controller yet; the session holds its worker until it is stopped",
        None,
    );
    while !runner.wait_for_stop(Duration::from_secs(3600)) {}
    AgentOutcome::Stopped
}
