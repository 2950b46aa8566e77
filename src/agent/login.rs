//! `perform_login`: the vault's credentials typed into the login form on the worker, then,
//! where the site asks for one and the credentials hold a TOTP secret, the one-time code.
//!
//! Guarantees: a credential goes only into a field of a page on the credentials' site (the
//! login URL's origin, or the hosts of `credentials.domain`) whose form sends there, set by the
//! worker without key events in the script that checks it (`only_on`); unless the credentials
//! name the fields, only into a sign-in form (`FORM`); the password and the codes go into one
//! worker command each and are held in the vault, so no result, log line or record shows them;
//! every send (the form, the code) waits for approval as any other send does; a code the site
//! refuses is tried once more with the next period's. The model learns who it logged in as and
//! the page after it, between the markers, scrubbed.

use super::Agent;
use super::approval::Gated;
use super::outcome::ToolOutcome;
use crate::exec::ExecError;
use crate::llm::Block;
use crate::protocol::LogKind;
use crate::protocol::domains::{DomainPattern, Origin, host_of, origin_of};
use crate::protocol::tools::Tool;
use crate::util::totp::Totp;
use serde_json::{Value, json};
use std::time::Duration;

/// A sign-in form (`protocol::worker`): where the fields are unless the credentials name them.
const FORM: &str = crate::protocol::worker::SIGN_IN_FORM;
/// The field a site asks a one-time code in: as marked for autofill, else by its name or id.
const CODE_FIELD: &str = "input:is([autocomplete=one-time-code],[name*=otp i],[id*=otp i],[name*=totp i],\
    [name*=code i],[id*=code i],[name*=mfa i],[name*=2fa i])";
/// How long the page after the password may take to show the code field.
const CODE_WAIT_S: u64 = 3;

/// Where a credential may go: the site pattern the worker checks, and the origin bound to.
struct Binding {
    site: String,
    origin: Option<Origin>,
}

impl Binding {
    /// `browser_type` params that set `text` into `selector` only on the credentials' site.
    fn typed(&self, selector: &str, text: &str) -> Value {
        let mut params = json!({"selector": selector, "text": text, "only_on": self.site});
        if let Some(origin) = &self.origin {
            params["only_on_origin"] = origin.to_string().into();
        }
        params
    }
}

impl Agent {
    /// Drive the login form on the worker with the vault's credentials.
    pub(super) fn perform_login(&mut self) -> ToolOutcome {
        let Some(creds) = self.runner.credentials() else {
            return ToolOutcome::error("no credentials are stored for this session");
        };
        let login_url = creds.login_url.clone().unwrap_or_else(|| self.record.target.clone());
        let user_sel = creds
            .username_selector
            .clone()
            .unwrap_or_else(|| format!("{FORM} input:is([type=email],[type=text],:not([type]))"));
        let pass_sel = creds.password_selector.clone().unwrap_or_else(|| format!("{FORM} input[type=password]"));
        let submit_sel = creds.submit_selector.clone().unwrap_or_else(|| send_button(FORM));
        let Some(site) = credential_site(creds.domain.as_deref(), &login_url) else {
            return ToolOutcome::error(format!("not typed: the login URL {login_url} names no host"));
        };
        // Without a wider `domain`, the login URL's origin: its scheme and port too.
        let bound = Binding { site, origin: creds.domain.is_none().then(|| origin_of(&login_url)).flatten() };
        let opened = match self.login_step(Tool::BrowserNavigate, json!({"url": login_url}), "open the login page") {
            Ok(v) => v,
            Err(outcome) => return *outcome,
        };
        if !landed_on(&opened, &bound) {
            return self.elsewhere(&login_url, &opened, &bound);
        }
        if creds.password_selector.is_none() && !self.sign_in_form_shown() {
            return ToolOutcome::error(
                "not typed: this page has no sign-in form (a form with a password field and no list, long text \
                 or new password in it). Nothing was typed; if the task needs a sign-in, open its page first.",
            );
        }
        let steps = [
            (Tool::BrowserType, bound.typed(&user_sel, &creds.username), "type the username"),
            (Tool::BrowserType, bound.typed(&pass_sel, creds.password.expose()), "type the password"),
            // As is: the login form's other fields are the page's business.
            (Tool::BrowserClick, json!({"selector": submit_sel}), "submit the form"),
        ];
        let mut after = Value::Null;
        // What each field was, for the step log (an exported script fills them from its
        // environment): never a value.
        let mut described = Vec::new();
        for (tool, params, what) in steps {
            match self.login_step(tool, params, what) {
                Ok(mut v) => {
                    described.push(ToolOutcome::take_acted_on(&mut v).map_or(Value::Null, |a| a["element"].clone()));
                    after = v;
                }
                Err(outcome) => return *outcome,
            }
        }
        let field = |i: usize| described.get(i).cloned().unwrap_or_default();
        let mut login = json!({"url": login_url, "username": field(0), "password": field(1), "submit": field(2)});
        let totp = creds.totp.as_ref().and_then(|t| Totp::parse(t.expose()).ok());
        if let Some(totp) = totp {
            match self.one_time_code(&totp, &bound, &after["url"]) {
                Ok(Some(v)) => {
                    after = v;
                    login["code"] =
                        json!({"field": CODE_FIELD, "send": send_button(&format!("form:has({CODE_FIELD})"))});
                }
                Ok(None) => {}
                Err(outcome) => return *outcome,
            }
        }
        let done = self.logged_in(&login_url, &creds.username, after);
        ToolOutcome { acted_on: Some(json!({"login": login})), ..done }
    }

    /// One command of the login, gated as any send is; its result, or the outcome that ends it.
    fn login_step(&mut self, tool: Tool, mut params: Value, what: &str) -> Result<Value, Box<ToolOutcome>> {
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        if let Some(hold) = self.submit_hold(tool) {
            params["hold_submits"] = hold.into();
        }
        let asked = json!({"selector": params["selector"]});
        match self.execute_gated(tool, &asked, params, timeout) {
            Gated::Refused(refused) => Err(Box::new(refused)),
            Gated::Ran(Ok(answer)) => Ok(answer.into_tree()),
            Gated::Ran(Err(ExecError::Stopped)) => Err(Box::new(ToolOutcome::stopped())),
            // The worker's words may quote the page (and a page may echo what was typed).
            Gated::Ran(Err(e)) => {
                let why = self.boundary.wrap(&self.runner.scrub(&e.to_string()));
                Err(Box::new(ToolOutcome::error(format!("login failed at \"{what}\":\n{why}"))))
            }
        }
    }

    /// The code the site asks for after the password, if it asks (a code field shows within a
    /// few seconds): typed and sent; refused (the page still asks on the same address), the
    /// next period's once more. `None` where no code was asked.
    fn one_time_code(
        &mut self,
        totp: &Totp,
        bound: &Binding,
        asked_on: &Value,
    ) -> Result<Option<Value>, Box<ToolOutcome>> {
        let timeout = Duration::from_secs(CODE_WAIT_S + 5);
        let wait = json!({"selector": CODE_FIELD, "timeout_s": CODE_WAIT_S});
        if self.runner.execute(Tool::BrowserWaitFor.name(), wait, timeout).is_err() {
            return Ok(None);
        }
        let mut sent = Value::Null;
        for code in totp.codes_now() {
            // Held before it is typed, so every later look is scrubbed of it.
            self.runner.hold_typed(&code);
            self.login_step(Tool::BrowserType, bound.typed(CODE_FIELD, &code), "type the one-time code")?;
            let send = json!({"selector": send_button(&format!("form:has({CODE_FIELD})"))});
            sent = self.login_step(Tool::BrowserClick, send, "send the one-time code")?;
            let still_asked = sent["url"] == *asked_on && self.code_still_asked();
            if !still_asked {
                break;
            }
            self.runner.log(
                LogKind::System,
                "perform_login: the one-time code was refused; the next one is tried",
                None,
            );
        }
        Ok(Some(sent))
    }

    /// Whether the page shows a sign-in form within a few seconds.
    fn sign_in_form_shown(&mut self) -> bool {
        let wait = json!({"selector": FORM, "timeout_s": CODE_WAIT_S});
        self.runner.execute(Tool::BrowserWaitFor.name(), wait, Duration::from_secs(CODE_WAIT_S + 5)).is_ok()
    }

    /// Whether the page still shows a one-time code field (the code was refused).
    fn code_still_asked(&mut self) -> bool {
        let wait = json!({"selector": CODE_FIELD, "timeout_s": 1});
        self.runner.execute(Tool::BrowserWaitFor.name(), wait, Duration::from_secs(6)).is_ok()
    }

    /// The login page led off the credentials' site: nothing typed, and said so.
    fn elsewhere(&mut self, login_url: &str, opened: &Value, bound: &Binding) -> ToolOutcome {
        let url = opened["url"].as_str().unwrap_or_default();
        let at = origin_of(url).map_or_else(|| host_of(url).unwrap_or_default(), |o| o.to_string());
        let on = bound.origin.as_ref().map_or_else(|| bound.site.clone(), ToString::to_string);
        self.runner.log(
            LogKind::System,
            &format!("perform_login: the login page is on {at}, not {on}: nothing typed"),
            None,
        );
        // Where the page led is the page's choice: data.
        ToolOutcome::error(format!(
            "not typed: the login page {login_url} led to the address below, and these credentials are for {on} only. \
             Nothing was typed; tell the user.\n{}",
            self.boundary.wrap(&at)
        ))
    }

    /// What the model is told: who it logged in as and the page after it (text, which every
    /// model reads; the page may echo what was typed, so it is scrubbed).
    fn logged_in(&mut self, login_url: &str, username: &str, mut after: Value) -> ToolOutcome {
        self.runner.scrub_json(&mut after);
        // The page after it is the latest page (a click on its file link is then a download).
        // A login that stays on its page answers with what changed there (an error line).
        let page = self.take_page(&mut after).or_else(|| super::snapshot::take_changes(&mut after)).unwrap_or_default();
        ToolOutcome::blocks(vec![Block::text(format!(
            "Submitted the login form at {login_url} as {username}. Read the page after it to see whether the login worked:\n{}",
            self.boundary.wrap(&page)
        ))])
    }
}

/// A form's send button, `form` a selector of the form.
fn send_button(form: &str) -> String {
    format!("{form} :is(button[type=submit],input[type=submit],button:not([type]))")
}

/// The site credentials are typed on: the request's `domain`, else the login URL's host.
fn credential_site(domain: Option<&str>, login_url: &str) -> Option<String> {
    match domain {
        Some(d) => DomainPattern::parse(d).ok().map(|p| p.to_string()),
        None => host_of(login_url).and_then(|h| DomainPattern::parse(&h).ok()).map(|p| p.to_string()),
    }
}

/// Whether a navigation's result is on the site and, when bound to one, the origin (one without
/// a URL is left to the worker's own check, in the script that sets each value).
fn landed_on(result: &Value, bound: &Binding) -> bool {
    let Some(url) = result["url"].as_str() else { return true };
    let on_site = host_of(url).is_some_and(|host| DomainPattern::parse(&bound.site).is_ok_and(|p| p.allows(&host)));
    on_site && bound.origin.as_ref().is_none_or(|o| o.holds(url))
}
