//! Replay: re-running a finished session's worker steps without the model.
//!
//! Before each step the page is checked: an element named by `ref=` must still be the one it
//! was when the step was recorded (its snapshot line, values aside), and one named by a CSS or
//! text selector must exist (waited for a few seconds, for pages that render late). A step that
//! diverges or fails hands over to the model: the opening message gets what was replayed, the
//! step that did not go through and why, and the page as it is now; the session then goes on as
//! any other. Every replayed step is in the step log with `replayed: true`. What a person typed
//! (given again as a `typed_N` parameter) is shown to the model as its length only. A replay that runs
//! through ends `finished` without a single model call.

use super::Agent;
use super::context::excerpt;
use super::snapshot::line::identity;
use super::snapshot::{line_of, ref_in};
use crate::exec::ExecError;
use crate::llm::Block;
use crate::protocol::LogKind;
use crate::protocol::replay::{ReplayInfo, ReplayStep};
use crate::protocol::takeover::hide_typed;
use crate::protocol::tools::Tool;
use crate::protocol::{SessionType, tools::Runs};
use crate::session::AgentOutcome;
use serde_json::{Value, json};
use std::fmt;
use std::time::Duration;

/// How long a replayed step's selector may take to appear.
const SELECTOR_WAIT_S: u64 = 5;

/// Why a recorded step does not fit the page (or desktop) as it is now; the model is told.
#[derive(Debug)]
enum Diverged {
    /// The step names a tool the table does not know.
    UnknownTool(String),
    /// No snapshot of the page could be taken.
    Unreadable,
    /// The element of this ref is not on the page any more.
    RefGone(String),
    /// The ref names another element now (the ref, what it was, what it is).
    RefChanged { r: String, was: String, now: String },
    /// The windows could not be listed.
    NoWindows(ExecError),
    /// No open window has the session's title (the title, the open windows' titles).
    WindowClosed { title: String, open: Vec<String> },
    /// Nothing matched the selector in time (the selector, the worker's answer).
    SelectorMissing { selector: String, error: ExecError },
}

impl fmt::Display for Diverged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diverged::UnknownTool(tool) => write!(f, "unknown tool {tool}"),
            Diverged::Unreadable => f.write_str("the page could not be read"),
            Diverged::RefGone(r) => write!(f, "ref={r} is not on the page any more"),
            Diverged::RefChanged { r, was, now } => write!(f, "ref={r} was {was} when recorded and is now {now}"),
            Diverged::NoWindows(e) => e.fmt(f),
            Diverged::WindowClosed { title, open } => {
                write!(f, "no window titled {title:?} is open any more (open: {})", open.join(", "))
            }
            Diverged::SelectorMissing { selector, error } => write!(f, "`{selector}` is not on the page ({error})"),
        }
    }
}

/// The selectors a step's arguments name.
fn selectors(args: &Value) -> Vec<&str> {
    let mut out: Vec<&str> = ["selector", "submit_selector"].iter().filter_map(|k| args[*k].as_str()).collect();
    if let Some(fields) = args["fields"].as_array() {
        out.extend(fields.iter().filter_map(|f| f["selector"].as_str()));
    }
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

impl Agent {
    /// Run the recorded steps. `Some` when the session ends here (all replayed, or stopped);
    /// `None` after handing over to the model.
    pub(super) fn replay(&mut self) -> Option<AgentOutcome> {
        let info = self.record.replay.clone()?;
        let total = info.steps.len();
        self.runner.log(LogKind::System, &format!("replaying {total} steps of session {}", info.source), None);
        for (i, step) in info.steps.iter().enumerate() {
            if self.runner.stop_requested() {
                return Some(AgentOutcome::Stopped);
            }
            if let Err(why) = self.check_step(step) {
                self.hand_over(&info, i, &why.to_string());
                return None;
            }
            self.replaying = true;
            self.typed_args = step.typed.clone();
            let outcome = self.run_tool(&step.tool, &step.args);
            self.typed_args.clear();
            self.replaying = false;
            if outcome.stopped {
                return Some(AgentOutcome::Stopped);
            }
            if outcome.is_error {
                self.hand_over(&info, i, &super::context::first_text(&outcome.content));
                return None;
            }
        }
        let summary = format!("Replayed all {total} steps of session {} without the model.", info.source);
        self.runner.log(LogKind::System, &summary, None);
        self.write_report(&summary, None);
        Some(AgentOutcome::Finished { summary })
    }

    /// Whether the page still matches what the step acts on.
    fn check_step(&mut self, step: &ReplayStep) -> Result<(), Diverged> {
        let Some(tool) = Tool::from_name(&step.tool) else { return Err(Diverged::UnknownTool(step.tool.clone())) };
        if tool.spec().runs == Runs::Target(SessionType::App) {
            return self.check_window();
        }
        if tool.spec().runs != Runs::Target(SessionType::Browser) {
            return Ok(());
        }
        for selector in selectors(&step.args) {
            match ref_in(selector) {
                Some(r) => self.check_ref(r, step.target.as_deref())?,
                None => self.check_selector(selector)?,
            }
        }
        Ok(())
    }

    fn check_ref(&mut self, r: &str, recorded: Option<&str>) -> Result<(), Diverged> {
        let page = self.current_snapshot().ok_or(Diverged::Unreadable)?;
        let now = line_of(&page, r).ok_or_else(|| Diverged::RefGone(r.to_string()))?;
        match recorded {
            Some(was) if identity(was) != identity(now) => Err(Diverged::RefChanged {
                r: r.to_string(),
                was: identity(was).to_string(),
                now: identity(now).to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// A desktop step needs the session's window (its target is a title) to be open still.
    fn check_window(&mut self) -> Result<(), Diverged> {
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        let list = self.runner.execute(Tool::ListElements.name(), json!({}), timeout).map_err(Diverged::NoWindows)?;
        let wanted = self.record.target.to_lowercase();
        let open = list["elements"].as_array().into_iter().flatten().filter_map(|w| w["title"].as_str());
        let titles: Vec<String> = open.map(str::to_string).collect();
        if titles.iter().any(|t| t.to_lowercase().contains(&wanted)) {
            return Ok(());
        }
        Err(Diverged::WindowClosed { title: self.record.target.clone(), open: titles })
    }

    fn check_selector(&mut self, selector: &str) -> Result<(), Diverged> {
        let params = json!({"selector": selector, "timeout_s": SELECTOR_WAIT_S});
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s.max(SELECTOR_WAIT_S + 15));
        match self.runner.execute(Tool::BrowserWaitFor.name(), params, timeout) {
            Ok(_) => Ok(()),
            Err(error) => Err(Diverged::SelectorMissing { selector: selector.to_string(), error }),
        }
    }

    /// The replay stops at step `at`: tell the model what was done, what went wrong, and the page.
    fn hand_over(&mut self, info: &ReplayInfo, at: usize, why: &str) {
        let step = &info.steps[at];
        let line = format!("replay stopped at step {} of {} ({}): {why}", at + 1, info.steps.len(), step.tool);
        self.runner.log(LogKind::System, &format!("{line}; the model takes over"), None);
        self.runner.mark_replay_diverged(&self.runner.scrub(&line));
        let done: Vec<String> = info.steps[..at]
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {} {}", i + 1, s.tool, excerpt(&hide_typed(&s.args, &s.typed).to_string(), 200)))
            .collect();
        let mut text = format!(
            "This session replays the steps of session {}. {} of {} steps went through:\n{}\n\
             Step {} could not be replayed: {} {}\nWhy:\n{}\n\
             Carry on with the task from here; do not redo the steps that went through.",
            info.source,
            at,
            info.steps.len(),
            if done.is_empty() { "(none)".to_string() } else { done.join("\n") },
            at + 1,
            step.tool,
            excerpt(&hide_typed(&step.args, &step.typed).to_string(), 300),
            // What the page or the worker said (a ref's line, a window's title, an error).
            self.boundary.wrap(why),
        );
        if let Some(page) = self.current_snapshot() {
            text.push_str(&format!("\n\nThe page now:\n{page}"));
        }
        if let Some(first) = self.messages.first_mut() {
            first.content.push(Block::text(text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_known_by_kind_and_label_not_value() {
        assert_eq!(identity("input text \"Search\" name=q value=\"socks\""), "input text \"Search\" name=q");
        assert_eq!(identity("link \"Next\" → https://a.test/2"), "link \"Next\"");
        assert_eq!(identity("input checkbox \"Gift\" name=g (checked)"), "input checkbox \"Gift\" name=g");
        let args = json!({"selector": "ref=e3", "fields": [{"selector": "#a"}, {"selector": ""}]});
        assert_eq!(selectors(&args), ["ref=e3", "#a"]);
    }
}
