//! The recording's frames: after each acting step of a browser or desktop session (the
//! model's or a person's), the worker is asked for the page or screen as one frame with the
//! step's caption (`3 click "Send"`), which the session keeps (`session/recording.rs`).
//!
//! Guarantees: a caption says the step's number and what it did from its arguments and the
//! element line the page showed, never typed text, and is scrubbed of the vault's secrets
//! before it goes to the worker; a frame that fails is logged and the step goes on (a worker
//! that cannot make frames is not asked again); nothing is asked for when the session's
//! `recording` is off, in a dry run, or after a stop.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::protocol::tools::{Runs, Tool};
use crate::protocol::{LogKind, SessionType};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use std::time::Duration;

/// The longest a frame may take.
const FRAME_TIMEOUT: Duration = Duration::from_secs(20);
/// The most characters of one argument a caption shows.
const SHOWN: usize = 60;

/// What an acting step was: its tool, arguments, the page's line for its element, its actor.
pub(super) struct Step<'a> {
    pub number: u64,
    pub name: &'a str,
    pub args: &'a Value,
    pub target: Option<&'a str>,
    pub by_human: bool,
}

impl Agent {
    /// Ask the worker for step `step`'s frame and keep it, when the step is one to record.
    pub(super) fn record_frame(&mut self, step: &Step, outcome: &ToolOutcome) {
        let Some(tool) = Tool::from_name(step.name) else { return };
        let recorded = tool.spec().acts
            && (tool == Tool::PerformLogin
                || matches!(tool.spec().runs, Runs::Target(SessionType::Browser | SessionType::App)));
        if !recorded
            || self.record.options.recording == Some(false)
            || self.frames_off
            || outcome.dry_run
            || outcome.stopped
        {
            return;
        }
        let frame_tool = match self.record.session_type {
            SessionType::Browser => Tool::BrowserRecordingFrame,
            SessionType::App => Tool::RecordingFrame,
            SessionType::Shell => return,
        };
        let caption = self.runner.scrub(&caption(tool, step));
        let made = self.runner.execute(frame_tool.name(), serde_json::json!({"caption": caption}), FRAME_TIMEOUT);
        let stored = match made {
            Ok(v) => match v["frame_gif_base64"].as_str().map(|b| STANDARD.decode(b)) {
                Some(Ok(gif)) => self.runner.store_frame(step.number, &gif).map_err(|e| e.to_string()),
                Some(Err(_)) => Err("the worker's frame is not base64".to_string()),
                // A worker that answers without one (an older one, a stand-in): nothing to keep.
                None => Ok(()),
            },
            Err(e) => {
                // A worker without the tool will not have it on the next step either.
                self.frames_off = e.to_string().contains("not a worker tool");
                Err(self.runner.scrub(&e.to_string()))
            }
        };
        if let Err(why) = stored {
            self.runner.log(LogKind::System, &format!("step {}: no recording frame: {why}", step.number), None);
        }
    }
}

/// `3 click "Send"`: the step's number, its verb, and what it acted on.
fn caption(tool: Tool, step: &Step) -> String {
    let arg = |k: &str| step.args[k].as_str().map(cut).unwrap_or_default();
    let element = || {
        let named =
            step.target.and_then(quoted).or_else(|| step.args["element"].as_str().map(|e| format!("\"{}\"", cut(e))));
        let at = step.args["x"].as_i64().zip(step.args["y"].as_i64()).map(|(x, y)| format!("at {x},{y}"));
        named.or(at).unwrap_or_else(|| arg("selector"))
    };
    let verb = step.name.strip_prefix("browser_").unwrap_or(step.name).replace('_', " ");
    let what = match tool {
        Tool::BrowserNavigate | Tool::BrowserDownload => arg("url"),
        Tool::BrowserType => format!("into {}", element()),
        Tool::BrowserPressKey | Tool::PressKey => arg("key"),
        Tool::BrowserFillForm => format!("{} fields", step.args["fields"].as_array().map_or(0, Vec::len)),
        Tool::TypeText => format!("{} characters", step.args["text"].as_str().map_or(0, |t| t.chars().count())),
        Tool::BrowserScroll | Tool::Scroll => arg("direction"),
        Tool::SwitchWindow => arg("title"),
        Tool::PerformLogin | Tool::BrowserBack | Tool::BrowserForward | Tool::BrowserSubmitForm => String::new(),
        _ => element(),
    };
    let who = if step.by_human { "person: " } else { "" };
    let verb = if tool == Tool::PerformLogin { "sign in".to_string() } else { verb };
    format!("{} {who}{verb} {what}", step.number).trim_end().to_string()
}

/// The first quoted name in a snapshot's element line (`button "Send"` → `"Send"`).
fn quoted(line: &str) -> Option<String> {
    let start = line.find('"')? + 1;
    let len = line[start..].find('"')?;
    Some(format!("\"{}\"", cut(&line[start..start + len])))
}

fn cut(s: &str) -> String {
    if s.chars().count() <= SHOWN { s.to_string() } else { format!("{}...", s.chars().take(SHOWN).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step<'a>(name: &'a str, args: &'a Value, target: Option<&'a str>) -> Step<'a> {
        Step { number: 3, name, args, target, by_human: false }
    }

    #[test]
    fn captions_say_the_step_and_what_it_did_never_the_text() {
        let click = json!({"selector": "ref=e5"});
        assert_eq!(
            caption(Tool::BrowserClick, &step("browser_click", &click, Some("button \"Send\""))),
            "3 click \"Send\""
        );
        assert_eq!(caption(Tool::BrowserClick, &step("browser_click", &click, None)), "3 click ref=e5");
        let typed = json!({"selector": "#email", "text": "hunter2"});
        let c = caption(Tool::BrowserType, &step("browser_type", &typed, Some("textbox \"Email\"")));
        assert_eq!(c, "3 type into \"Email\"");
        let text = json!({"text": "hunter2"});
        assert_eq!(caption(Tool::TypeText, &step("type_text", &text, None)), "3 type text 7 characters");
        let nav = json!({"url": "http://site/login"});
        assert_eq!(
            caption(Tool::BrowserNavigate, &step("browser_navigate", &nav, None)),
            "3 navigate http://site/login"
        );
        assert_eq!(caption(Tool::PerformLogin, &step("perform_login", &json!({}), None)), "3 sign in");
        let at = json!({"x": 10, "y": 20});
        let person = Step { by_human: true, ..step("browser_click", &at, None) };
        assert_eq!(caption(Tool::BrowserClick, &person), "3 person: click at 10,20");
        let long = json!({"url": "x".repeat(200)});
        assert!(caption(Tool::BrowserNavigate, &step("browser_navigate", &long, None)).ends_with("..."));
    }
}
