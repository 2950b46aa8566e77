//! The tools that run in the controller: notes, finishing, confirmations, files,
//! notifications, the login from the vault, and searching the session's log.
//!
//! `perform_login` is the one local tool that drives the target: it puts the vault's password
//! into exactly one worker command and tells the model only who it logged in as.

use super::Agent;
use super::approval::Gated;
use super::outcome::ToolOutcome;
use crate::exec::ExecError;
use crate::llm::Block;
use crate::protocol::FileKind;
use crate::protocol::domains::{DomainPattern, Origin, host_of, origin_of};
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
        let Some(site) = credential_site(creds.domain.as_deref(), &login_url) else {
            return ToolOutcome::error(format!("not typed: the login URL {login_url} names no host"));
        };
        // Without a wider `domain`, the login URL's origin: its scheme and port too.
        let origin = creds.domain.is_none().then(|| origin_of(&login_url)).flatten();
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        // `only_on`: the worker sets a value only into a field of a page on the credentials'
        // site, checked in the same script (no key events); the send waits as any other does.
        let typed = |selector: &str, text: &str| {
            let mut params = json!({"selector": selector, "text": text, "only_on": site});
            if let Some(origin) = &origin {
                params["only_on_origin"] = origin.to_string().into();
            }
            params
        };
        let steps = [
            (Tool::BrowserNavigate, json!({"url": login_url})),
            (Tool::BrowserType, typed(&user_sel, &creds.username)),
            (Tool::BrowserType, typed(&pass_sel, creds.password.expose())),
            // As is: the login form's other fields are the page's business.
            (Tool::BrowserClick, json!({"selector": submit_sel})),
        ];
        let mut after = Value::Null;
        for (i, (tool, mut params)) in steps.into_iter().enumerate() {
            let what = ["open the login page", "type the username", "type the password", "submit the form"][i];
            if let Some(hold) = self.submit_hold(tool) {
                params["hold_submits"] = hold.into();
            }
            let asked = json!({"selector": params["selector"]});
            let result = match self.execute_gated(tool, &asked, params, timeout) {
                Gated::Ran(result) => result,
                Gated::Refused(refused) => return refused,
            };
            match result {
                Ok(v) if i == 0 && !landed_on(&v, &site, origin.as_ref()) => {
                    let url = v["url"].as_str().unwrap_or_default();
                    let at = origin_of(url).map_or_else(|| host_of(url).unwrap_or_default(), |o| o.to_string());
                    let bound = origin.as_ref().map_or_else(|| site.clone(), ToString::to_string);
                    self.runner.log(
                        crate::protocol::LogKind::System,
                        &format!("perform_login: the login page is on {at}, not {bound}: nothing typed"),
                        None,
                    );
                    return ToolOutcome::error(format!(
                        "not typed: the login page {login_url} led to {at:?}, and these credentials are for {bound} only. Nothing was typed; tell the user."
                    ));
                }
                Ok(v) => after = v,
                Err(ExecError::Stopped) => return ToolOutcome::stopped(),
                // The worker's words may quote the page (and a page may echo what was typed).
                Err(e) => {
                    let why = self.boundary.wrap(&self.runner.scrub(&e.to_string()));
                    return ToolOutcome::error(format!("login failed at \"{what}\": {why}"));
                }
            }
        }
        // Text, not a screenshot: every model can read it. The page may echo what was typed.
        self.runner.scrub_json(&mut after);
        // The page after it is the latest page (a click on its file link is then a download).
        // A login that stays on its page answers with what changed there (an error line).
        let page = self.take_page(&mut after).or_else(|| super::snapshot::take_changes(&mut after)).unwrap_or_default();
        ToolOutcome::blocks(vec![Block::text(format!(
            "Submitted the login form at {login_url} as {}. Read the page after it to see whether the login worked:\n{}",
            creds.username,
            self.boundary.wrap(&page)
        ))])
    }
}

/// The site credentials are typed on: the request's `domain`, else the login URL's host.
fn credential_site(domain: Option<&str>, login_url: &str) -> Option<String> {
    match domain {
        Some(d) => DomainPattern::parse(d).ok().map(|p| p.to_string()),
        None => host_of(login_url).and_then(|h| DomainPattern::parse(&h).ok()).map(|p| p.to_string()),
    }
}

/// Whether a navigation's result is on `site` and, when bound to one, `origin` (one without a
/// URL is left to the worker's own check, in the script that sets each value).
fn landed_on(result: &Value, site: &str, origin: Option<&Origin>) -> bool {
    let Some(url) = result["url"].as_str() else { return true };
    let on_site = host_of(url).is_some_and(|host| DomainPattern::parse(site).is_ok_and(|p| p.allows(&host)));
    on_site && origin.is_none_or(|o| o.holds(url))
}
