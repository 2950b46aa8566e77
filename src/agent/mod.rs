//! The agent: the LLM tool-use loop each session runs on its own thread.
//!
//! Per turn: system prompt and tools for the session's mode × type (from the tool table), the
//! conversation (with only the newest `agent.keep_screenshots` images kept), one model call,
//! then each tool call in order — local tools in the controller, target tools on the
//! session's executor — and one user message with every result. Ends on finish_task /
//! finish_exploration, `max_turns`, a budget (after one wrap-up call), a stop, a second reply
//! without tools, or an error the API will not get past. Before each model call a pause a
//! person asked for holds the session (`takeover.rs`). The loop knows no wire format: it speaks
//! `llm::Provider`.
//! Invariant: every message is journaled as it is made, `conversation_log.json` is written whole
//! once at the end, and every tool call in it has its result, whatever ended the session.

mod acted;
mod approval;
mod boundary;
mod budget;
mod choices;
mod compaction;
mod context;
mod dispatch;
mod dry_run;
mod focus;
mod grounding;
mod guards;
mod history;
mod local;
mod login;
mod loops;
mod outcome;
pub mod outputs;
pub mod prompts;
mod recording;
mod replay;
mod report;
mod resume;
mod snapshot;
mod takeover;
mod vision;
mod wrapup;

use crate::config::{Config, DEFAULT_LLM, Endpoint, Wire};
use crate::llm::{self, Block, LlmError, Message, Provider, Reply, Request, Role, StopReason, TokenUsage, ToolDef};
use crate::notify::Notifier;
use crate::protocol::tools::Tool;
use crate::protocol::{LogKind, SessionRecord, Usage};
use crate::session::{AgentFn, AgentOutcome, SessionRunner};
use context::{last_text, trim_images};
use outcome::ToolOutcome;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Build the agent for every session from the config: each session's model endpoint (its
/// `llm` and `model`), and the notifier.
pub fn llm_agent(config: &Config) -> AgentFn {
    if let Err(missing) =
        config.endpoint(DEFAULT_LLM).ok_or_else(|| "api".to_string()).and_then(|e| llm::provider_for(&e, config))
    {
        log::warn!("{missing}; sessions on `api` will end with this error");
    }
    let notifier = Arc::new(
        Notifier::new(&config.notifications.telegram_base_url, Duration::from_secs(config.notifications.timeout_s))
            .allow_private(config.notifications.allow_private),
    );
    Arc::new(move |runner: SessionRunner| match session_provider(&runner) {
        Ok((p, endpoint)) => Agent::new(runner, p, Arc::clone(&notifier), &endpoint).run(),
        Err(missing) => {
            runner.log(LogKind::Error, &missing, None);
            AgentOutcome::Failed(missing)
        }
    })
}

/// The provider for the endpoint and model the session was created with.
fn session_provider(runner: &SessionRunner) -> Result<(Arc<dyn Provider>, Endpoint), String> {
    let choice = runner.record().llm.unwrap_or_default();
    let name = if choice.name.is_empty() { DEFAULT_LLM } else { choice.name.as_str() };
    let mut endpoint =
        runner.config().endpoint(name).ok_or_else(|| format!("the model endpoint `{name}` is no longer configured"))?;
    if !choice.model.is_empty() {
        endpoint.model = choice.model;
    }
    Ok((llm::provider_for(&endpoint, runner.config())?, endpoint))
}

pub struct Agent {
    runner: SessionRunner,
    provider: Arc<dyn Provider>,
    notifier: Arc<Notifier>,
    record: SessionRecord,
    system: String,
    /// The tools offered, and their definitions for the model (same order).
    offered: Vec<Tool>,
    tools: Vec<ToolDef>,
    /// Offered tools the model is not shown (they run when called by name): `focus::lists`.
    hidden: Vec<Tool>,
    messages: Vec<Message>,
    turn: u32,
    /// Tool calls so far (the step log's index).
    step: u64,
    /// The last desktop frame shown to the model: its hash and step.
    last_frame: Option<(u64, u64)>,
    nudged: bool,
    /// Once compacted: how many messages after the opening the summary replaces, and it.
    summary: Option<(usize, String)>,
    /// The endpoint's wire format (for its usual context window).
    wire: Wire,
    /// The context window `agent-controller probe` found, if it was asked.
    probed_window: Option<u64>,
    /// The endpoint's reply budget (`providers.<name>.max_tokens`, else `api.max_tokens`).
    max_tokens: u32,
    /// Repeated calls and cycles, noted and held back (`loops.rs`).
    loops: loops::LoopGuard,
    /// Whether the model reads images (`vision.rs`); `auto` may turn `Off` mid-session.
    vision: crate::config::Vision,
    /// What the server counted for the last request, to scale size estimates (`compaction.rs`).
    measured: compaction::Measured,
    /// The latest page snapshot seen, and whether the steps run now are replayed (`replay.rs`).
    last_page: Option<String>,
    /// JSON action mode on an endpoint that enforces a reply schema: each turn's tools go
    /// narrowed to the page (`choices.rs`).
    narrow_replies: bool,
    /// How much of the conversation is in the journal (`report.rs`).
    journaled: report::Journaled,
    replaying: bool,
    /// Where the step being recorded holds what a person typed (`protocol::takeover`): marked
    /// `typed` in the step log, so a replay asks for it again.
    typed_args: Vec<String>,
    /// The worker cannot make recording frames: not asked again (`recording.rs`).
    frames_off: bool,
    /// What the next turn offers, and what the model has already seen (`focus.rs`).
    focus: focus::FocusState,
    /// Every word the session has seen: an answer asked for at the end is saved when grounded.
    grounding: grounding::Grounding,
    /// The guards on for this session (`guards/`, the table in `protocol::guards`), and what
    /// their units keep.
    guards: guards::Guards,
    guard_state: guards::State,
    /// The model answers in JSON actions (the tool mode units run in).
    json_actions: bool,
    /// The markers around what the target shows (`boundary.rs`).
    boundary: boundary::Boundary,
    /// Time a person held the session (not counted against its seconds budget).
    paused_for: Duration,
    /// The budget's one wrap-up call was made (`budget.rs`).
    budget_wrapped: bool,
    /// Who approved the call being run, for its step-log entry (`acted.rs`).
    approved: Option<Value>,
}

/// The mode's prompt and the text-only note for a model without images: the same bytes for
/// every session of a kind, so a server's prefix cache serves them (the boundary's line, which
/// carries this session's nonce, is in the first message instead).
fn system_prompt(record: &SessionRecord, opened: bool, vision: crate::config::Vision) -> String {
    let system = prompts::system_prompt(record, opened);
    match vision {
        crate::config::Vision::Off => format!("{system}\n\n{}", vision::TEXT_ONLY),
        _ => system,
    }
}

/// What one turn decided.
enum Turn {
    Continue,
    End(AgentOutcome),
}

impl Agent {
    pub fn new(
        runner: SessionRunner,
        provider: Arc<dyn Provider>,
        notifier: Arc<Notifier>,
        endpoint: &Endpoint,
    ) -> Agent {
        let record = runner.record();
        // What `agent-controller probe` found settles `vision: auto` and the context window.
        let probed = llm::probe::cached(endpoint, runner.config());
        let vision = match (endpoint.vision, &probed) {
            (crate::config::Vision::Auto, Some(found)) if !found.vision => crate::config::Vision::Off,
            (v, _) => v,
        };
        let opened = focus::opens_target(&record);
        let found = crate::config::profile::Probed {
            context_tokens: probed.as_ref().and_then(|f| f.context_tokens),
            native_tools: probed.as_ref().map(|f| f.native_tools),
        };
        let config = runner.config();
        let choice =
            crate::config::profile::choose(endpoint, record.options.profile, found, config.agent.context_window_tokens);
        let guards = guards::Guards::new(&choice, config, &record);
        let json_actions = llm::tool_mode(endpoint, config) == crate::config::ToolMode::Json;
        // Native tool calls get the narrowed tools themselves (a schema the server may hold the
        // call's arguments to); JSON action mode a reply schema built from them.
        let narrow_replies = llm::reply_schema(endpoint, config);
        runner.set_profile(choice);
        let boundary = boundary::Boundary::new(record.session_type).off_when(config.agent.eval_no_boundary);
        let system = system_prompt(&record, opened, vision);
        let offered = Tool::offered(record.mode, record.session_type, record.has_credentials);
        let tools = offered.iter().copied().map(tool_def).collect();
        let hidden = guards::short_catalog::hidden(&guards, json_actions, &offered, &record, vision);
        let briefing = runner.briefing().map(|b| format!("\n\n{b}")).unwrap_or_default();
        let opening = format!("{}\n{}{briefing}", prompts::opening_message(&record, opened), boundary.prompt_line());
        let mut grounding = grounding::Grounding::default();
        grounding.saw(&opening);
        if record.session_type == crate::protocol::SessionType::App {
            grounding.saw_image(); // a desktop is read from screenshots
        }
        let opening = Message::user(vec![Block::text(opening)]);
        Agent {
            runner,
            provider,
            notifier,
            record,
            system,
            offered,
            tools,
            hidden,
            messages: vec![opening],
            turn: 0,
            step: 0,
            last_frame: None,
            nudged: false,
            summary: None,
            measured: compaction::Measured::default(),
            wire: endpoint.wire,
            probed_window: probed.and_then(|f| f.context_tokens),
            max_tokens: endpoint.max_tokens,
            loops: Default::default(),
            vision,
            last_page: None,
            narrow_replies,
            journaled: Default::default(),
            replaying: false,
            typed_args: Vec::new(),
            frames_off: false,
            focus: focus::FocusState::new(opened),
            grounding,
            guards,
            guard_state: guards::State::new(json_actions),
            json_actions,
            boundary,
            paused_for: Duration::ZERO,
            budget_wrapped: false,
            approved: None,
        }
    }

    pub fn run(mut self) -> AgentOutcome {
        let outcome = match self.replay() {
            Some(replayed) => replayed,
            None => {
                if !self.resume_from_journal() {
                    self.open_target();
                }
                self.walk_start();
                loop {
                    if let Turn::End(outcome) = self.turn() {
                        break outcome;
                    }
                }
            }
        };
        let outcome = match outcome {
            AgentOutcome::Finished { summary } => AgentOutcome::Finished { summary: self.with_budget_line(summary) },
            other => other,
        };
        self.journal_conversation();
        self.save_conversation();
        if outcome == AgentOutcome::Stopped {
            self.report_after_stop();
        }
        self.notify_end(&outcome);
        outcome
    }

    /// One model call and the tools it asked for.
    fn turn(&mut self) -> Turn {
        if self.runner.stop_requested() {
            return Turn::End(AgentOutcome::Stopped);
        }
        if let Some(end) = self.pause_if_asked() {
            return end;
        }
        let budget = match self.budget_turn() {
            Ok(wrap_up) => wrap_up,
            Err(end) => return end,
        };
        // Stuck: one constrained call that asks for the deliverable; stuck again, the end.
        let stuck = self.loops.stuck().map(str::to_string);
        if let Some(reason) = &stuck {
            if !self.walk_stuck() {
                return self.end_stuck(reason.clone());
            }
        }
        if self.turn >= self.record.max_turns {
            return self.end_at_limit();
        }
        self.turn += 1;
        self.runner.set_turn(self.turn);
        self.choose_focus(stuck.as_deref(), budget);
        self.journal_conversation();
        trim_images(&mut self.messages, self.runner.config().agent.keep_screenshots);
        let mut reply = match self.call_model_seeing() {
            Ok(r) => r,
            Err(LlmError::Cancelled) => return Turn::End(AgentOutcome::Stopped),
            Err(e) => {
                let msg = e.to_string();
                self.runner.log(LogKind::Error, &msg, None);
                self.write_report(&format!("The session ended with an error: {msg}"), None);
                return Turn::End(AgentOutcome::Failed(msg));
            }
        };
        self.walk_reply(&mut reply);
        for block in &reply.content {
            if let Block::Text { text } = block {
                if !text.trim().is_empty() {
                    self.runner.log(LogKind::Assistant, text, None);
                }
            }
        }
        // An empty assistant turn is invalid in the next request: keep it out.
        if !reply.content.is_empty() {
            self.messages.push(Message::assistant(reply.content.clone()));
            // Before the tools run: a kill during a long one keeps what the model asked for.
            self.journal_conversation();
        }
        let calls: Vec<(String, String, Value)> = reply
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input, .. } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect();
        // Asked for the deliverable after getting stuck, it answered in words: the end.
        if let Some(reason) = self.last_chance_unused(!calls.is_empty()) {
            return self.end_stuck(reason);
        }
        if calls.is_empty() { self.no_tool_calls(&reply) } else { self.run_calls(calls) }
    }

    /// One model call; a request the server refuses as too long for its context is compacted
    /// down to the last step and sent once more.
    fn call_model(&mut self) -> Result<Reply, LlmError> {
        self.compact_if_needed()?;
        match self.call_with_recital() {
            Err(LlmError::ContextExceeded(_)) if self.compact_after_overflow()? => self.call_with_recital(),
            other => other,
        }
    }

    /// What the units before a turn add to the view (the recital) closes it, never the
    /// journal: added to our last message (always ours before a call) for this call only, so the
    /// conversation is not copied each turn.
    fn call_with_recital(&mut self) -> Result<Reply, LlmError> {
        let closing = self.walk_view();
        let mut added = 0;
        if let Some(last) = self.messages.last_mut().filter(|m| m.role == Role::User) {
            added = closing.len();
            last.content.extend(closing.into_iter().map(Block::text));
        }
        let reply = self.send_view();
        if let Ok(r) = &reply {
            let estimated = self.estimate_request(&self.context());
            self.calibrate(r.usage, estimated);
        }
        if let Some(last) = self.messages.last_mut().filter(|_| added > 0) {
            last.content.truncate(last.content.len().saturating_sub(added));
        }
        reply
    }

    /// What the model last saw of the page: the latest snapshot, and the latest results (what
    /// changed after an action: new refs, a list that opened).
    fn page_in_view(&self, messages: &[Message]) -> String {
        let latest = messages.last().filter(|m| m.role == Role::User).map(Message::text).unwrap_or_default();
        let results: Vec<&str> = messages
            .last()
            .into_iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content),
                _ => None,
            })
            .flatten()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        format!("{}\n{latest}\n{}", self.last_page.as_deref().unwrap_or(""), results.join("\n"))
    }

    /// One model call over the current view, with this turn's tools.
    fn send_view(&self) -> Result<Reply, LlmError> {
        let messages = self.context();
        let (tools, unlisted) = self.turn_tools();
        let require_tool = self.required_call();
        let narrowed = self.narrow_replies.then(|| choices::narrowed(&tools, &self.page_in_view(&messages)));
        let listed = match &narrowed {
            Some(narrowed) if !self.json_actions => narrowed,
            _ => &tools,
        };
        let mut request = Request {
            system: &self.system,
            tools: listed,
            unlisted: &unlisted,
            require_tool,
            json_reply: crate::llm::JsonReply::Free,
            narrowed: narrowed.as_deref(),
            messages: &messages,
            max_tokens: self.max_tokens,
            loose_actions: self.loose_actions_asked(),
            correct_once: self.json_correction_asked(),
        };
        match self.complete(&request) {
            // A server that refuses to be made to call a tool is asked again without it.
            Err(LlmError::Rejected(m)) if require_tool => {
                self.runner.log(LogKind::System, &format!("the endpoint refused a required tool call: {m}"), None);
                request.require_tool = false;
                self.complete(&request)
            }
            other => other,
        }
    }

    /// One model call on the session's stop, its usage counted once (`usage`, the budget,
    /// `/metrics`). Every call the loop makes goes through here: turns, compaction, the
    /// validator, the last word, the answer in words (the report after a stop, on a thread of
    /// its own, counts its own).
    pub(super) fn complete(&self, request: &Request<'_>) -> Result<Reply, LlmError> {
        let reply = self.provider.complete(request, self.runner.stop_signal());
        if let Ok(r) = &reply {
            self.runner.add_usage(&record_usage(r.usage));
        }
        reply
    }

    /// A reply without tool calls gets one nudge; the second ends the session with its text.
    fn no_tool_calls(&mut self, reply: &Reply) -> Turn {
        if !self.nudged && reply.stop_reason != StopReason::Refusal {
            self.nudged = true;
            let nudge = Block::text(prompts::nudge(self.record.mode));
            match self.messages.last_mut() {
                // After an empty reply the last message is ours: add to it, keeping turns alternating.
                Some(last) if reply.content.is_empty() && last.role == Role::User => last.content.push(nudge),
                _ => self.messages.push(Message::user(vec![nudge])),
            }
            self.journal_conversation();
            return Turn::Continue;
        }
        let text = last_text(reply);
        let summary = if text.is_empty() { "The model ended without a summary.".to_string() } else { text };
        let summary = match self.walk_end() {
            Some(saved) => format!("{saved} {summary}"),
            None => summary,
        };
        self.write_report(&summary, None);
        Turn::End(AgentOutcome::Finished { summary })
    }

    /// A result block without the vault's secrets (a text that holds none is kept as it is).
    fn scrubbed(&self, block: Block) -> Block {
        match block {
            Block::Text { text } => match self.runner.scrub_cow(&text) {
                std::borrow::Cow::Borrowed(_) => Block::Text { text },
                cleaned => Block::text(cleaned.into_owned()),
            },
            other => other,
        }
    }

    /// Run each call in order (after a stop, the rest get a "not run" result), then answer
    /// them all in one message.
    fn run_calls(&mut self, calls: Vec<(String, String, Value)>) -> Turn {
        let mut results = Vec::with_capacity(calls.len());
        let mut finish = None;
        let mut stopped = false;
        for (id, name, input) in calls {
            let outcome = if stopped || self.runner.stop_requested() {
                ToolOutcome::stopped()
            } else if let Some(refused) = self.refused(&name) {
                refused
            } else {
                self.run_tool(&name, &input)
            };
            stopped |= outcome.stopped;
            if outcome.finish.is_some() {
                finish = outcome.finish.clone();
            }
            // Scrubbed here, once for every tool: what the model sees is what the record keeps.
            let content = outcome.content.into_iter().map(|b| self.scrubbed(b)).collect();
            results.push(Block::ToolResult { tool_use_id: id, content, is_error: outcome.is_error });
        }
        self.messages.push(Message::user(results));
        self.journal_conversation();
        if stopped {
            return Turn::End(AgentOutcome::Stopped);
        }
        match finish {
            Some((summary, report)) => {
                let summary = match self.walk_end() {
                    Some(saved) => format!("{summary} ({saved})"),
                    None => summary,
                };
                self.write_report(&summary, report.as_deref());
                Turn::End(AgentOutcome::Finished { summary })
            }
            None => Turn::Continue,
        }
    }
}

/// The session record keeps Anthropic-style names (its JSON shape is the API's).
/// A tool of the table as the model is shown it.
fn tool_def(t: Tool) -> ToolDef {
    let spec = t.spec();
    ToolDef { name: t.name(), description: spec.description, input_schema: spec.input_schema.to_value() }
}

fn record_usage(u: TokenUsage) -> Usage {
    Usage {
        input_tokens: u.input,
        output_tokens: u.output,
        cache_creation_input_tokens: u.cache_write,
        cache_read_input_tokens: u.cache_read,
    }
}
