//! The browser backend: one Chromium, driven over the DevTools protocol.
//!
//! Chromium starts on first use with a fresh profile (`launch.rs`), and each session works in
//! a browser context of its own. If it dies or hangs (its process stops answering), the next
//! command kills it, starts a new one and its result says so; if its connection is lost or
//! stops answering mid-command, that command fails saying the browser will be restarted, and
//! the next one starts it afresh. If the page closes its own tab, the browser attaches to another
//! one. JavaScript dialogs are answered at once (`browser.dialogs`, or the model's
//! `browser_answer_dialog`) and reported with the command's result.
//! Every browser tool of the tool table is handled in `tools.rs`, on top of the page primitives of
//! `page.rs` (page-side work runs in `page.js`), keyboard input in `keys.rs`, and downloads
//! and PDFs in `download.rs`, which hand the files to the controller through the `Context`.
//! Invariant: `running` is either `None` or a browser; while a command runs, it is attached to
//! one page target of the command's session's context.

mod changes;
mod download;
mod gate;
mod keys;
mod launch;
mod locate;
mod masks;
mod page;
mod profiles;
mod snapshot;
mod stepper;
mod tools;
mod upload;
mod util;

use crate::backend::{Backend, Context};
use crate::cdp::CdpError;
use crate::error::WorkerError;
use agent_controller::protocol::domains::{DomainPattern, allowed, host_of};
use agent_controller::protocol::refusal::Refusal;
use agent_controller::protocol::tools::Tool;
use agent_controller::protocol::{DialogPolicy, WorkerSettings};
use launch::Running;
use serde_json::{Value, json};
use std::path::PathBuf;
use util::with;

/// How to start Chromium; the controller's settings update it at each registration.
pub struct Options {
    pub path: PathBuf,
    pub headless: bool,
    pub width: u32,
    pub height: u32,
    /// Where downloads and PDFs wait until they are uploaded.
    pub download_dir: PathBuf,
    /// Where named browser profiles are kept (`profiles.rs`).
    pub profile_dir: PathBuf,
}

pub struct Browser {
    opts: Options,
    /// `--headless` (true) or `--headed` (false) given on the command line: it beats the controller.
    forced_headless: Option<bool>,
    running: Option<Running>,
    started_once: bool,
    /// Refs below this number were given on earlier pages of this session (see `snapshot.rs`).
    ref_floor: u64,
    /// The session the refs are numbered for: a new session starts again at e1, so that a
    /// replay finds the refs it recorded.
    ref_session: String,
    /// The next snapshot forgets the refs the page gave before (a new session began).
    refs_reset: bool,
    /// Elements seen on this session's pages (their key) and the ref each had.
    ref_keys: serde_json::Map<String, Value>,
    /// How confirm() and prompt() are answered unless the model said otherwise.
    dialogs: DialogPolicy,
    /// The allow-list's gate, started for the first session with a list (`gate.rs`).
    gate: Option<gate::Gate>,
    /// The hosts the current command's session may reach (empty: any).
    allowed: Vec<DomainPattern>,
    /// The current command reads small models' other selector spellings (`loose_selectors`,
    /// the controller's unit; see page.js).
    loose_selectors: bool,
    /// The current command types a credential (`only_on`): the page's host as the browser
    /// spells it, checked against the credentials' site, and the origin they are bound to.
    secret_site: Option<SecretSite>,
    /// The session whose files were fetched for its pages, and their private folder.
    upload_files: Option<(String, PathBuf)>,
    /// The named profiles kept between sessions.
    profiles: profiles::Profiles,
    /// Where the current step clicked (CSS pixels of the viewport), for its recording frame.
    last_click: Option<(f64, f64)>,
}

/// Where a credential may land: the checked host, and the login URL's origin when the
/// credentials name no wider `domain`.
#[derive(Clone)]
pub(super) struct SecretSite {
    pub host: String,
    pub origin: Option<String>,
    /// Where the field's form may send, for page.js: `{host, wildcard}` of the credentials' site.
    pub sends_to: Value,
}

/// The remark added when a command had to start a new browser.
const RESTARTED: &str = "the browser had stopped and was restarted; earlier pages and logins are gone";

impl Browser {
    pub fn new(opts: Options, forced_headless: Option<bool>) -> Browser {
        let profiles = profiles::Profiles::new(opts.profile_dir.clone());
        Browser {
            profiles,
            opts,
            forced_headless,
            running: None,
            started_once: false,
            ref_floor: 0,
            ref_session: String::new(),
            refs_reset: false,
            ref_keys: serde_json::Map::new(),
            dialogs: DialogPolicy::Dismiss,
            gate: None,
            allowed: Vec::new(),
            loose_selectors: false,
            secret_site: None,
            upload_files: None,
            last_click: None,
        }
    }

    /// Start the browser once and stop it again: the worker offers "browser" only if it starts.
    pub fn probe(&self) -> Result<(), WorkerError> {
        // Nothing of a probe is worth a clean exit: killed at once, not after SIGTERM's wait.
        launch::launch(&self.opts, None).map(|mut probed| probed.mark_hung())
    }

    /// The running browser, started (or restarted) if needed; says whether it was restarted.
    /// A browser that died, or whose process no longer answers (hung: stopped, wedged), is
    /// killed and replaced; one in another profile than the session's (a kept one, or none) is
    /// closed and the right one started, which is no restart.
    fn ensure(&mut self, profile: Option<&str>) -> Result<bool, WorkerError> {
        let kept = match profile {
            Some(name) => {
                Some(launch::Kept { name: name.to_string(), dir: self.profiles.dir(name)?, proxy: self.gated()? })
            }
            None => None,
        };
        let key = kept.as_ref().map(launch::Kept::key);
        let healthy = match self.running.as_mut() {
            Some(r) => {
                let alive = r.is_alive();
                if alive && !r.answers() {
                    crate::log("warn", "browser: it stopped answering; killing it and starting a new one");
                    r.mark_hung();
                    false
                } else {
                    alive
                }
            }
            None => false,
        };
        let fits = self.running.as_ref().is_some_and(|r| r.kept == key);
        if healthy && fits {
            return Ok(false);
        }
        let restarted = !healthy && (self.running.is_some() || self.started_once);
        // The old browser (if any) is taken down before the new one starts.
        self.running = None;
        self.running = Some(launch::launch(&self.opts, kept.as_ref())?);
        self.started_once = true;
        Ok(restarted)
    }

    /// Work in `session_id`'s own browser context: a session never sees another's cookies,
    /// storage, cache or tabs. The previous session's context goes when the next one begins.
    fn enter_session(&mut self, session_id: &str) -> Result<(), WorkerError> {
        let size = (self.opts.width, self.opts.height);
        let r = self.r()?;
        if (r.context.is_some() || r.kept.is_some()) && r.context_session == session_id {
            return Ok(());
        }
        if r.kept.is_some() {
            launch::enter_kept(r, session_id, size)?;
            crate::log("info", &format!("browser: session {session_id} in its kept profile"));
            return Ok(());
        }
        let proxy = self.gated()?;
        let started = std::time::Instant::now();
        launch::enter_context(self.r()?, session_id, size, proxy)?;
        let ms = started.elapsed().as_millis();
        crate::log("info", &format!("browser: a fresh browser context for session {session_id} in {ms} ms"));
        Ok(())
    }

    /// With an allow-list: the gate as the context's proxy, and the allowed hosts (only they)
    /// bypassing it.
    fn gated(&mut self) -> Result<Option<(String, String)>, WorkerError> {
        if self.allowed.is_empty() {
            return Ok(None);
        }
        if self.gate.is_none() {
            self.gate = Some(gate::Gate::start().map_err(|e| WorkerError::io("starting the allow-list's gate", e))?);
        }
        let server = self.gate.as_ref().map(gate::Gate::proxy).unwrap_or_default();
        let hosts: Vec<String> = self.allowed.iter().map(DomainPattern::bypass_rules).collect();
        Ok(Some((server, format!("<-loopback>;{}", hosts.join(";")))))
    }

    /// A URL the session may not open: refused before anything is sent.
    fn check_url(&self, url: &str) -> Result<(), WorkerError> {
        match host_of(url) {
            Some(host) if !allowed(&self.allowed, &host) => Err(self.blocked(&host)),
            _ => Ok(()),
        }
    }

    /// `only_on` (a credential's site, `perform_login`): the page must be on it now, or
    /// nothing is typed. The host as the browser spells it is what the field's document is
    /// checked against again, in the same script that sets the value (`placeSecret`).
    fn check_site(&mut self, site: &Value, origin: Option<&str>) -> Result<SecretSite, WorkerError> {
        let pattern = DomainPattern::parse(site.as_str().unwrap_or("")).map_err(|e| WorkerError::bad(e.to_string()))?;
        let here = self.eval("({href: location.href, hostname: location.hostname})")?;
        let host = host_of(here["href"].as_str().unwrap_or("")).unwrap_or_default();
        if pattern.allows(&host) {
            let host = here["hostname"].as_str().unwrap_or_default().to_string();
            let sends_to = match pattern.wildcard_domain() {
                Some(domain) => json!({"host": domain, "wildcard": true}),
                None => json!({"host": pattern.to_string(), "wildcard": false}),
            };
            return Ok(SecretSite { host, origin: origin.map(str::to_string), sends_to });
        }
        Err(WorkerError::refused(json!({
            "refused": Refusal::CredentialSite.as_str(),
            "host": host,
            "site": pattern.to_string(),
            "message": format!("not typed: the page is on {host:?}, and these credentials are for {pattern} only"),
        })))
    }

    fn blocked(&self, host: &str) -> WorkerError {
        let list: Vec<String> = self.allowed.iter().map(ToString::to_string).collect();
        WorkerError::refused(json!({
            "refused": Refusal::DomainBlocked.as_str(),
            "host": host,
            "allowed_domains": list,
            "message": format!("blocked: {host} is not among this session's allowed domains ({})", list.join(", ")),
        }))
    }

    /// What the gate blocked during the command, on its result; a navigation that ended on a
    /// blocked host (a redirect) is the refusal itself.
    fn report_blocked(&mut self, tool: Tool, result: Result<Value, WorkerError>) -> Result<Value, WorkerError> {
        let Some(blocked) = self.gate.as_ref().and_then(gate::Gate::take) else { return result };
        let landed =
            result.as_ref().ok().and_then(|v| host_of(v["url"].as_str()?)).filter(|h| !allowed(&self.allowed, h));
        let first = blocked["hosts"][0].as_str().unwrap_or("another host").to_string();
        match (tool, result) {
            // The navigation itself failed (an https host refused at the gate).
            (Tool::BrowserNavigate, Err(WorkerError::Page(_))) => Err(self.blocked(&first)),
            (Tool::BrowserNavigate, Ok(_)) if landed.is_some() => Err(self.blocked(&landed.unwrap_or(first))),
            (_, Ok(v)) => Ok(with(v, "blocked_requests", blocked)),
            (_, Err(e)) => Err(e.noted(format!("blocked requests to {}", blocked["hosts"]))),
        }
    }

    fn r(&mut self) -> Result<&mut Running, WorkerError> {
        self.running.as_mut().ok_or_else(|| WorkerError::Unavailable("the browser is not running".into()))
    }

    /// A failed command: drop a browser whose connection is lost, move off a closed tab.
    fn recover(&mut self, e: WorkerError) -> WorkerError {
        match &e {
            WorkerError::Browser(CdpError::Closed(_) | CdpError::Timeout(_) | CdpError::Hung(_)) => {
                if let Some(r) = self.running.as_mut() {
                    r.mark_hung();
                }
                self.running = None;
                WorkerError::WillRestart(Box::new(e))
            }
            WorkerError::Browser(CdpError::Protocol(m)) if tab_is_gone(m) => {
                let (w, h) = (self.opts.width, self.opts.height);
                if let Some(r) = self.running.as_mut() {
                    if launch::reattach(r, w, h).is_err() {
                        self.running = None;
                    }
                }
                e.noted("the tab was closed; now on another tab: navigate again")
            }
            _ => e,
        }
    }

    /// Report the dialogs the page showed during the command, and how each was answered.
    fn report_dialogs(&mut self, result: Result<Value, WorkerError>) -> Result<Value, WorkerError> {
        let dialogs = self.running.as_mut().map(|r| r.cdp.take_dialogs()).unwrap_or_default();
        if dialogs.is_empty() {
            return result;
        }
        let shown = dialogs.join(", ");
        match result {
            Ok(v) => Ok(with(v, "dialogs", json!(format!("the page showed {shown}")))),
            Err(e) => Err(e.noted(format!("the page showed {shown}"))),
        }
    }
}

impl Browser {
    /// A send the hold stopped during the command (the page's script sent the form on a click
    /// that was no submit button): on the result, for the controller to ask about.
    fn report_held_submit(&mut self, result: Result<Value, WorkerError>) -> Result<Value, WorkerError> {
        let Ok(v) = result else { return result };
        match self.eval("__acSubmits.takeHeld()") {
            Ok(held) if held.is_object() => Ok(with(v, "submit_held", held)),
            _ => Ok(v),
        }
    }
}

/// DevTools errors that mean the attached tab is gone (the page closed it).
fn tab_is_gone(message: &str) -> bool {
    ["No session with given id", "No target with given id", "Target closed"].iter().any(|m| message.contains(m))
}

impl Backend for Browser {
    fn capability(&self) -> &'static str {
        "browser"
    }

    /// The viewport, and headed or not; they apply from the next browser start.
    fn configure(&mut self, settings: &WorkerSettings) {
        let has_display = std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
        self.opts.headless = match self.forced_headless {
            Some(forced) => forced,
            // A headed browser needs a display; without one, headless is the only option.
            None => !has_display || settings.browser.headless,
        };
        self.opts.width = settings.browser.viewport_width;
        self.opts.height = settings.browser.viewport_height;
        self.dialogs = settings.browser.dialogs;
    }

    fn run(&mut self, tool: Tool, params: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        self.allowed = ctx.allowed_domains.to_vec();
        // A frame marks the click of the step just before it, and only that one.
        if tool != Tool::BrowserRecordingFrame {
            self.last_click = None;
        }
        if tool == Tool::BrowserNavigate {
            self.check_url(params["url"].as_str().unwrap_or(""))?;
        }
        let restarted = self.ensure(ctx.browser_profile)?;
        if let Err(e) = self.enter_session(ctx.session_id) {
            return Err(self.recover(e));
        }
        let new_session = self.ref_session != ctx.session_id;
        if let Some(name) = ctx.browser_profile {
            self.profiles.used(name, new_session);
        }
        if new_session {
            self.forget_upload_files();
            self.ref_session = ctx.session_id.to_string();
            self.ref_floor = 0;
            self.refs_reset = true;
        }
        self.secret_site = None;
        if let Some(site) = params.get("only_on") {
            self.secret_site = Some(self.check_site(site, params["only_on_origin"].as_str())?);
        }
        let hold = params["hold_submits"].as_bool();
        if let Some(on) = hold {
            self.eval(&format!("__acSubmits.arm({on})"))?;
        }
        let policy = self.dialogs;
        let cdp = &mut self.r()?.cdp;
        cdp.dialog_default = policy;
        if new_session {
            cdp.next_dialog = None; // another session's answer is not this one's
        }
        let result = match self.dispatch(tool, params, ctx) {
            Err(e) => match self.recover(e) {
                // The browser is gone: nothing more to report from it.
                e @ WorkerError::WillRestart(_) => return Err(e),
                e => Err(e),
            },
            ok => ok,
        };
        let result = self.report_blocked(tool, result);
        let result = self.report_dialogs(result);
        let result = if hold == Some(true) { self.report_held_submit(result) } else { result };
        match (result, restarted) {
            (Ok(v), true) => Ok(with(v, "note", json!(RESTARTED))),
            (Err(e), true) => Err(e.noted(RESTARTED)),
            (r, false) => r,
        }
    }

    fn shutdown(&mut self) {
        self.running = None;
        self.forget_upload_files();
    }

    fn profiles(&mut self, all: bool) -> Option<Vec<agent_controller::protocol::profiles::ProfileReport>> {
        self.profiles.report(all)
    }

    /// A kept profile removed: the browser using it (no session does: the controller checks)
    /// is closed first, so nothing writes into the folder as it goes.
    fn delete_profile(&mut self, name: &str) -> Result<Value, WorkerError> {
        let prefix = format!("{name}|");
        if self.running.as_ref().is_some_and(|r| r.kept.as_ref().is_some_and(|k| k.starts_with(&prefix))) {
            self.running = None;
        }
        let existed = self.profiles.delete(name)?;
        crate::log("info", &format!("browser: profile {name} deleted"));
        Ok(json!({"deleted": name, "existed": existed}))
    }
}
