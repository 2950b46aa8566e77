//! A person takes over. Before each model call, a pause someone asked for (`POST /pause`)
//! holds the session; `request_takeover` holds it at the model's own request and notifies the
//! session's targets. While paused, each act the person sends runs on the worker as theirs
//! (`"by": "human"` in the log and the step log; in a dry run an acting one is described, not
//! done; what they type reaches the worker only: the model and the record get its length, and
//! it is held in the vault, scrubbed from all they see after); when they resume (or nobody comes within
//! `task.takeover_timeout_s`, or the seconds budget runs out first), the model is told what
//! they did, their note, and the page as it is now. Only time a person held the session is
//! left out of its seconds budget. No model call is made while paused; a stop ends the wait at
//! once.

use super::boundary::Boundary;
use super::dispatch::timeout_for;
use super::outcome::ToolOutcome;
use super::{Agent, Turn};
use crate::llm::{Block, joined_text};
use crate::protocol::takeover::{hide_typed, typed_pointers};
use crate::protocol::tools::{Runs, Tool};
use crate::protocol::{LogKind, SessionType};
use crate::session::{Act, AgentOutcome, PauseEvent};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Characters of an act's result the model is told (the page follows in full).
const ACT_EXCERPT: usize = 300;

impl Agent {
    /// Before a model call: pause when a person asked to. `Some` ends the session (a stop).
    pub(super) fn pause_if_asked(&mut self) -> Option<Turn> {
        if !self.runner.pause_pending() {
            return None;
        }
        match self.hold(None) {
            Some(told) => {
                self.push_user_text(told);
                None
            }
            None => Some(Turn::End(AgentOutcome::Stopped)),
        }
    }

    /// `request_takeover {reason}`: notify, pause, and answer with what the person did.
    pub(super) fn request_takeover(&mut self, input: &Value) -> ToolOutcome {
        let reason = one_line(input["reason"].as_str().unwrap_or(""), MAX_REASON_CHARS);
        self.notify_takeover(&reason);
        match self.hold(Some(&reason)) {
            Some(told) => ToolOutcome::blocks(vec![Block::text(told)]),
            None => ToolOutcome::stopped(),
        }
    }

    /// Wait paused, running each act of the person, until they resume, nobody comes in time,
    /// or a stop (`None`). What to tell the model.
    fn hold(&mut self, reason: Option<&str>) -> Option<String> {
        if !self.runner.enter_pause(reason) {
            return None;
        }
        let began = Instant::now();
        let deadline = began + Duration::from_secs(self.runner.config().takeover_timeout_s());
        // Time a person holds the session is theirs, not the budget's: a pause they asked for
        // from its start, one the model asked for from their first act (the web page's first
        // look is one). Until then it is the session's own time, which its budget ends.
        let mut held_since = reason.is_none().then_some(began);
        let mut acts = Vec::new();
        let ending = loop {
            let until = match (held_since, self.budget_left()) {
                (None, Some(left)) => Instant::now().checked_add(left).map_or(deadline, |end| deadline.min(end)),
                _ => deadline,
            };
            match self.runner.next_pause_event(until) {
                PauseEvent::Act(act) => {
                    held_since.get_or_insert_with(Instant::now);
                    let (line, result) = self.human_act(&act);
                    acts.push(line);
                    self.runner.act_done(act.id, result);
                }
                PauseEvent::Resumed(note) => break Ok(note),
                PauseEvent::TimedOut => break Err(began.elapsed()),
                PauseEvent::Stopped => return None,
            }
        };
        if let Some(since) = held_since {
            self.paused_for += since.elapsed();
        }
        self.runner.leave_pause();
        let (how, note) = match ending {
            Ok(note) => {
                self.runner.log(LogKind::System, "resumed by the person", note.as_ref().map(|n| json!({"note": n})));
                ("A person took over and has handed back to you.".to_string(), note)
            }
            Err(waited) => {
                let secs = (waited + Duration::from_millis(500)).as_secs();
                self.runner.log(LogKind::System, &format!("nobody took over within {secs} s; going on"), None);
                (format!("Nobody took over within {secs} s. Go on yourself, or finish and say what you needed."), None)
            }
        };
        Some(self.handback(&how, &acts, note.as_deref()))
    }

    /// What the model is told on resume: what the person did, their note, the page now; all of
    /// it scrubbed of the vault's secrets and what the person typed (a URL, a selector or a
    /// note can hold them too).
    fn handback(&mut self, how: &str, acts: &[String], note: Option<&str>) -> String {
        let mut told = how.to_string();
        if !acts.is_empty() {
            told.push_str("\nWhat they did:");
            for (i, line) in acts.iter().enumerate() {
                told.push_str(&format!("\n{}. {line}", i + 1));
            }
        }
        if let Some(note) = note {
            told.push_str(&format!("\nTheir note: {note}"));
        }
        let mut told = self.runner.scrub(&told);
        // The page comes scrubbed (`current_snapshot`).
        if let Some(page) = self.current_snapshot() {
            self.grounding.saw(&page);
            told.push_str(&format!("\nThe page now:\n{page}"));
        }
        told
    }

    /// Run one act of the person on the worker, logged as theirs. Its line for the model, and
    /// the answer for the person (`POST /act`).
    fn human_act(&mut self, act: &Act) -> (String, Value) {
        let name = act.tool.name();
        self.step += 1;
        // What the person typed goes to the worker; held in the vault before the act runs, so
        // its result, the page after it and every later look are scrubbed of it.
        let typed = typed_pointers(act.tool, &act.input);
        for text in typed.iter().filter_map(|p| act.input.pointer(p)?.as_str()) {
            self.runner.hold_typed(text);
        }
        let input = hide_typed(&act.input, &typed);
        let shown = super::context::excerpt(&input.to_string(), ACT_EXCERPT);
        self.runner.log(
            LogKind::Tool,
            &format!("by a person: {name} {shown}"),
            Some(json!({"tool": name, "input": input, "by": "human"})),
        );
        let started = Instant::now();
        // A dry run holds for the person too: an acting tool is described, not done.
        let outcome = if self.record.options.dry_run && act.tool.spec().acts {
            self.dry_run(act.tool, &act.input)
        } else {
            let task = &self.runner.config().task;
            let timeout = timeout_for(act.tool, &act.input, task.command_timeout_s, task.download_timeout_s);
            let mut params = self.target_params(act.tool, &act.input);
            // A person's own send needs no one's approval: the page's hold lets it through.
            if self.submit_hold(act.tool).is_some() {
                params["hold_submits"] = false.into();
            }
            // The fields their typing went into are painted over in every picture after.
            if !typed.is_empty() {
                params["mask_typed"] = true.into();
            }
            let result = self.runner.answer(name, params, timeout);
            self.target_outcome(name, result)
        };
        self.typed_args = typed;
        self.record_result(name, &input, &outcome, started, true);
        self.typed_args.clear();
        let text = joined_text(&outcome.content, "\n");
        let status = if outcome.is_error { "failed" } else { "done" };
        let line = format!("{name} {shown} → {status}: {}", self.result_line(&text));
        let mut answer = json!({
            "tool": name,
            "by": "human",
            "is_error": outcome.is_error,
            "dry_run": outcome.dry_run,
            "result": text,
            "screenshot": outcome.screenshot,
        });
        if outcome.stopped {
            // Not an answer: the act's request is told the session stopped under it.
            answer["stopped"] = true.into();
        }
        (line, answer)
    }

    /// The first line of an act's result for the model (not its opening marker), still between
    /// the markers when the result came between them.
    fn result_line(&self, text: &str) -> String {
        let inner = Boundary::inner(text);
        let first = super::context::excerpt(first_line(inner), ACT_EXCERPT);
        if inner.len() == text.len() { first } else { self.boundary.wrap(&first) }
    }

    /// The worker command's params for a tool call: the call's input and what the session
    /// adds (desktop screenshot settings, the snapshot's size).
    pub(super) fn target_params(&self, tool: Tool, input: &Value) -> Value {
        let mut params = input.clone();
        match tool.spec().runs {
            Runs::Target(SessionType::App) => params["screenshot"] = self.screenshot_settings(),
            Runs::Target(SessionType::Browser) => params["snapshot_chars"] = self.snapshot_chars().into(),
            _ => {}
        }
        params
    }

    /// Tell the session's notification targets a person is wanted, with the session's page.
    fn notify_takeover(&self, reason: &str) {
        let Some(targets) = self.runner.notifications() else { return };
        let id = self.runner.session_id().to_string();
        // The session's own link first: the reason is the model's words (a page may have put
        // them there), so it comes after, on one bounded line.
        let message = format!(
            "Open {} — session {id} asks a person to take over: {reason}",
            session_page(self.runner.config(), &id)
        );
        let notifier = Arc::clone(&self.notifier);
        let runner = self.runner.clone();
        let _ = std::thread::Builder::new().name(format!("takeover-{id}")).spawn(move || {
            for d in notifier.send(&targets, &message, &id, &[]) {
                let (kind, text) = match d.result {
                    Ok(()) => (LogKind::System, format!("takeover notification sent ({})", d.channel)),
                    Err(e) => (LogKind::Error, format!("takeover notification failed ({}): {e}", d.channel)),
                };
                runner.log(kind, &text, None);
            }
        });
    }
}

/// The longest `request_takeover` reason kept, shown and sent.
const MAX_REASON_CHARS: usize = 300;

/// `text` on one line (any run of whitespace, line breaks included, one space), cut to `max`
/// characters with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The web page of a session, as the daemon's API port serves it.
fn session_page(config: &crate::config::Config, id: &str) -> String {
    let scheme = if config.server.tls_cert.as_os_str().is_empty() { "http" } else { "https" };
    let host = match config.server.host.as_str() {
        "0.0.0.0" | "::" => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into()),
        h if h.contains(':') => format!("[{h}]"),
        h => h.to_string(),
    };
    format!("{scheme}://{host}:{}/#s/{id}", config.server.api_port)
}
