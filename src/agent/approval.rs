//! Approval modes, enforced in the controller whatever the model says: before a command runs
//! or a form is sent (`run_command`, `write_file`, `browser_submit_form`; and every other browser
//! action that would send a form — a click on a submit button, Enter in a field, a key on a
//! submit button, the controller's own login — which the worker asks about before it acts, with
//! a hold on sends the page's script makes), and before a download
//! over `files.approve_downloads_over_mb` is fetched (the worker reports its size first and keeps
//! nothing), the session's mode
//! decides — `auto` runs it, `validator` asks
//! a separate short model call for APPROVE or REJECT with a reason, `human` asks a person
//! through the confirmation flow (approve, deny with a reason, or approve an edited command).
//! A rejection reaches the model as the tool's result, with the reason.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::exec::{Answer, ExecError};
use crate::llm::{Block, Message, Request};
use crate::protocol::tools::{Runs, Tool};
use crate::protocol::{Approval, Mode, SessionType};
use crate::session::ConfirmationOutcome;
use serde_json::{Value, json};

const VALIDATOR_PROMPT: &str = "You check one action an automation agent wants to take (a command \
on a host, a file it writes, a web form it submits), before it happens. Answer with exactly one line: APPROVE, or REJECT REASON: <why, in one sentence>. \
Reject what the task does not need: deleting or overwriting data, changing system settings, \
installing or removing software, reading or sending secrets, disabling security. In an \
exploration (observe only), reject anything that changes the host at all.";

/// A target command run through the approval of what it would send or fetch.
pub(super) enum Gated {
    /// It ran (again, once approved): its result.
    Ran(Result<Answer, ExecError>),
    /// Not run, or its held send refused: this is the tool's result.
    Refused(ToolOutcome),
}

/// What the approval decided.
pub(super) enum Gate {
    /// Run it with these arguments (an edited command replaces the model's), and say so.
    Run { input: Value, note: Option<String> },
    /// Do not run it: this is the tool's result.
    Refused(ToolOutcome),
}

impl Agent {
    /// Check a command against the session's approval mode before it runs.
    pub(super) fn approve(&mut self, tool: Tool, input: &Value) -> Gate {
        if !matches!(tool, Tool::RunCommand | Tool::WriteFile | Tool::BrowserSubmitForm) {
            return Gate::Run { input: input.clone(), note: None };
        }
        self.by_mode(tool, input)
    }

    /// What the session's approval mode says of `tool` with `input`.
    fn by_mode(&mut self, tool: Tool, input: &Value) -> Gate {
        match self.record.approval() {
            Approval::Auto => Gate::Run { input: input.clone(), note: None },
            Approval::Validator => self.validate_command(tool, input),
            Approval::Human => self.ask_a_person(tool, input),
        }
    }

    fn what(tool: Tool, input: &Value) -> String {
        match tool {
            Tool::WriteFile => format!("write the file {}", input["path"].as_str().unwrap_or("")),
            Tool::BrowserDownload => format!(
                "download {} ({})",
                input["url"].as_str().unwrap_or(""),
                input["size"].as_str().unwrap_or("size unknown")
            ),
            Tool::BrowserSubmitForm if input["form"].is_object() => format!(
                "submit the form to {} ({} {})",
                input["form"]["action"].as_str().unwrap_or("the page"),
                input["via"].as_str().unwrap_or("an action"),
                input["selector"].as_str().or(input["key"].as_str()).unwrap_or("")
            ),
            Tool::BrowserSubmitForm => {
                let form = input["selector"].as_str().or(input["submit_selector"].as_str());
                format!("submit the form {}", form.unwrap_or("on the page"))
            }
            _ => input["command"].as_str().unwrap_or("").to_string(),
        }
    }

    fn validate_command(&mut self, tool: Tool, input: &Value) -> Gate {
        let r = &self.record;
        let purpose = match r.mode {
            Mode::Task => format!("Task: {}", r.instruction.as_deref().unwrap_or("")),
            Mode::Explore => {
                let goal = r.goal.as_deref().unwrap_or("understand the host");
                format!(
                    "Exploration (observe only; REJECT anything that writes, deletes, installs, starts or stops anything): {goal}"
                )
            }
        };
        // A send the controller held carries the page's form (its address, its fields): data.
        let question = format!(
            "{purpose}\nHost: {}\nTool: {}\n{}\nArguments:\n{}\nThe agent's reason: {}",
            r.target,
            tool.name(),
            self.boundary.prompt_line(),
            self.boundary.wrap(&input.to_string()),
            self.last_reason()
        );
        let messages = [Message::user(vec![Block::text(question)])];
        let request = Request::plain(VALIDATOR_PROMPT, &messages, 200);
        let verdict = match self.complete(&request) {
            Ok(reply) => Message::assistant(reply.content).text(),
            Err(e) => {
                return Gate::Refused(ToolOutcome::error(format!("not run: the validator could not be asked ({e})")));
            }
        };
        let line = verdict.trim();
        self.runner.log(
            crate::protocol::LogKind::Confirmation,
            &format!("Validator on `{}`: {line}", Self::what(tool, input)),
            None,
        );
        if line.to_ascii_uppercase().starts_with("APPROVE") {
            self.note_approval("validator", None);
            return Gate::Run { input: input.clone(), note: None };
        }
        let reason = line.split_once("REASON:").map_or(line, |(_, r)| r).trim();
        Gate::Refused(ToolOutcome::error(format!("not run: the validator rejected it: {reason}")))
    }

    fn ask_a_person(&mut self, tool: Tool, input: &Value) -> Gate {
        let mut details = json!({"tool": tool.name(), "reason": self.last_reason()});
        match tool {
            Tool::RunCommand => {
                details["command"] = input["command"].clone();
                details["cwd"] = input.get("cwd").cloned().unwrap_or(Value::Null);
            }
            Tool::WriteFile => {
                details["path"] = input["path"].clone();
                details["size_chars"] = json!(input["content"].as_str().map_or(0, |c| c.chars().count()));
            }
            _ => details["arguments"] = input.clone(),
        }
        let v = self.runner.confirm(tool.name(), &Self::what(tool, input), details, "medium");
        if matches!(v.outcome, ConfirmationOutcome::Approved | ConfirmationOutcome::AutoApproved) {
            let by = if v.outcome == ConfirmationOutcome::Approved { "person" } else { "auto_confirm" };
            self.note_approval(by, v.edited.as_deref().filter(|_| tool == Tool::RunCommand));
        }
        match v.outcome {
            // Only a command can be edited; an edit of anything else is ignored.
            ConfirmationOutcome::Approved | ConfirmationOutcome::AutoApproved => match v.edited {
                Some(edited) if tool == Tool::RunCommand => {
                    let mut input = input.clone();
                    input["command"] = json!(edited);
                    // It runs as typed; the model reads it without a secret the person put in.
                    let note = format!("The user approved an edited command instead: {}", self.runner.scrub(&edited));
                    Gate::Run { input, note: Some(note) }
                }
                _ => Gate::Run { input: input.clone(), note: None },
            },
            ConfirmationOutcome::Denied => {
                let why = v.reason.map_or_else(|| "no reason given".to_string(), |r| format!("reason: {r}"));
                Gate::Refused(ToolOutcome::error(format!("not run: the user denied it ({why})")))
            }
            ConfirmationOutcome::TimedOut => {
                Gate::Refused(ToolOutcome::error("not run: nobody approved it in time (treated as denied)"))
            }
            ConfirmationOutcome::Stopped => Gate::Refused(ToolOutcome::stopped()),
        }
    }

    /// The approval threshold sent with a download (`files.approve_downloads_over_mb`): only
    /// under `validator` or `human`, where a download the model asks for is not taken on trust.
    pub(super) fn download_needs_approval_over(&self, tool: Tool) -> Option<u64> {
        let over_mb = self.runner.config().files.approve_downloads_over_mb;
        let gated = matches!(tool, Tool::BrowserDownload | Tool::BrowserDownloadBatch);
        (gated && over_mb > 0 && self.record.approval() != Approval::Auto).then(|| over_mb.saturating_mul(1024 * 1024))
    }

    /// The worker found a download over the threshold and kept nothing: ask before fetching it.
    pub(super) fn approve_download(&mut self, input: &Value, asked: &Value) -> Gate {
        let size = match (asked["bytes"].as_u64(), asked["more_than_bytes"].as_u64()) {
            (Some(b), _) => format!("{:.1} MB", b as f64 / 1e6),
            (None, Some(b)) => format!("more than {:.1} MB (size not announced)", b as f64 / 1e6),
            _ => "an unknown size".to_string(),
        };
        let mut details = input.clone();
        details["size"] = json!(size);
        self.by_mode(Tool::BrowserDownload, &details)
    }

    /// `hold_submits` for `tool`'s command: `None` where sends need no approval (`auto`), else
    /// on for every browser action but an approved send (`browser_submit_form` was asked about
    /// before it runs), which carries `false` so the page's hold lets it through.
    pub(super) fn submit_hold(&self, tool: Tool) -> Option<bool> {
        let browser = tool.spec().runs == Runs::Target(SessionType::Browser);
        (browser && self.record.approval() != Approval::Auto).then_some(tool != Tool::BrowserSubmitForm)
    }

    /// Run a target command whose result may ask first (`needs_approval`: a download over the
    /// threshold, a form the action would send) or report a send the page's script made and the
    /// hold stopped (`submit_held`). Asked by the session's mode; approved, it runs again
    /// without asking (or the held form is sent); refused, the refusal is the outcome.
    pub(super) fn execute_gated(
        &mut self,
        tool: Tool,
        input: &Value,
        params: Value,
        timeout: std::time::Duration,
    ) -> Gated {
        // Kept only for a command that may come back asking.
        let again = (params.get("ask_over_bytes").is_some() || params["hold_submits"] == true).then(|| params.clone());
        let result = self.runner.answer(tool.name(), params, timeout);
        let asked = result.as_ref().ok().and_then(|data| data.tree.get("needs_approval")).cloned();
        if let (Some(asked), Some(mut params)) = (asked, again) {
            let gate = match asked.get("submit") {
                Some(form) => self.approve_send(tool, input, form),
                None => self.approve_download(input, &asked),
            };
            if let Gate::Refused(outcome) = gate {
                return Gated::Refused(outcome);
            }
            params.as_object_mut().map(|p| p.remove("ask_over_bytes"));
            if asked.get("submit").is_some() {
                params["hold_submits"] = false.into();
            }
            return Gated::Ran(self.runner.answer(tool.name(), params, timeout));
        }
        let held = result.as_ref().ok().and_then(|data| data.tree.get("submit_held")).cloned();
        match held {
            Some(form) => self.held_send(tool, input, form, result, timeout),
            None => Gated::Ran(result),
        }
    }

    /// The page's script sent a form on an action that was no send (the hold stopped it):
    /// asked about; approved, that very form is sent; refused, the action's result says so.
    fn held_send(
        &mut self,
        tool: Tool,
        input: &Value,
        form: Value,
        result: Result<Answer, ExecError>,
        timeout: std::time::Duration,
    ) -> Gated {
        match self.approve_send(tool, input, &form) {
            Gate::Run { .. } => {
                let params = json!({"held": true, "hold_submits": false, "snapshot_chars": self.snapshot_chars()});
                Gated::Ran(self.runner.answer(Tool::BrowserSubmitForm.name(), params, timeout))
            }
            Gate::Refused(refusal) => {
                let mut outcome = self.target_outcome(tool.name(), result);
                let why = super::context::first_text(&refusal.content);
                outcome
                    .content
                    .push(Block::text(format!("The page tried to send a form on this action; it was held: {why}")));
                Gated::Refused(outcome)
            }
        }
    }

    /// A form `tool` would send (or the page sent on it), asked about as `browser_submit_form`.
    fn approve_send(&mut self, tool: Tool, input: &Value, form: &Value) -> Gate {
        let mut details = json!({"via": tool.name(), "form": form});
        for key in ["selector", "key"] {
            if let Some(v) = input.get(key) {
                details[key] = v.clone();
            }
        }
        self.by_mode(Tool::BrowserSubmitForm, &details)
    }

    /// The model's own words in its latest reply, shown to whoever approves.
    fn last_reason(&self) -> String {
        let text = self.messages.last().map(Message::text).unwrap_or_default();
        let text = text.trim();
        if text.is_empty() { "(none given)".into() } else { text.chars().take(500).collect() }
    }
}
