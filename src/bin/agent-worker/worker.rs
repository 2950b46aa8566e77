//! The worker's loop: register, long-poll, run each command on its backend, post the result.
//!
//! One command at a time, in order. When the controller is away the worker retries with
//! jittered backoff and says so once; when the controller has forgotten it (a restart), it
//! registers again. A result is posted with a few retries, since it is the command's whole
//! point; a refusal (4xx) is not retried, except that a result too large to accept is replaced
//! by an error that tells the model to ask for less. Only a refused worker token ends the loop
//! with a failure; `{"action":"shutdown"}` ends it cleanly, stopping every backend.

use crate::backend::{self, Backend, Context, Uploader};
use crate::cli::Exit;
use crate::error::WorkerError;
use crate::link::{Backoff, Link, LinkError};
use crate::log;
use agent_controller::protocol::Command;

/// The controller's command that removes a kept browser profile.
const DELETE_PROFILE: &str = "delete_browser_profile";
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

pub struct Worker {
    link: Link,
    backends: Vec<Box<dyn Backend>>,
    backoff: Backoff,
    /// The controller's URL, for the log.
    controller: String,
}

/// Uploads for one command: the controller files them under its session.
struct Upload<'a> {
    link: &'a Link,
    session_id: &'a str,
    command_id: &'a str,
}

impl Uploader for Upload<'_> {
    fn upload(&self, filename: &str, path: &Path) -> Result<Value, WorkerError> {
        let r = self.link.upload(self.session_id, self.command_id, filename, path)?;
        Ok(serde_json::json!({"filename": r.stored_as, "size_kb": r.size_kb}))
    }

    fn fetch(&self, filename: &str, dest: &Path, max: u64) -> Result<u64, WorkerError> {
        self.link.fetch(filename, dest, max)
    }
}

impl Worker {
    pub fn new(link: Link, backends: Vec<Box<dyn Backend>>, controller: String) -> Worker {
        Worker { link, backends, backoff: Backoff::new(), controller }
    }

    /// Serve commands until the controller says to shut down.
    pub fn run(mut self) -> Result<(), Exit> {
        loop {
            if self.link.worker_id.is_none() && !self.register()? {
                continue;
            }
            let Some(cmd) = self.poll() else { continue };
            // A command has an id; without one, `wait` means nothing to do (and is not the
            // `wait` tool) and `shutdown` means stop.
            if cmd.get("id").is_some() {
                self.handle(cmd);
                continue;
            }
            match cmd["action"].as_str() {
                Some("wait") | None => continue,
                Some("shutdown") => {
                    log("info", "the controller asked this worker to shut down");
                    self.backends.iter_mut().for_each(|b| b.shutdown());
                    return Ok(());
                }
                Some(_) => self.handle(cmd),
            }
        }
    }

    /// Register; false when the controller could not be reached (after waiting a while).
    /// The backends' browser profiles, as the controller takes them (see `Backend::profiles`).
    fn profiles(&mut self, all: bool) -> Option<Value> {
        let (mut any, mut reports) = (false, Vec::new());
        for b in &mut self.backends {
            if let Some(list) = b.profiles(all) {
                any = true;
                reports.extend(list);
            }
        }
        any.then(|| serde_json::to_value(reports).unwrap_or_default())
    }

    fn register(&mut self) -> Result<bool, Exit> {
        let profiles = self.profiles(true);
        match self.link.register(profiles) {
            Ok(reg) => {
                self.reachable();
                for b in &mut self.backends {
                    b.configure(&reg.config);
                }
                log("info", &format!("registered as {}", reg.worker_id));
                Ok(true)
            }
            Err(LinkError::Refused(401, msg)) => {
                Err(Exit::failure(format!("the controller refused the worker token ({msg})")))
            }
            Err(LinkError::Untrusted(why)) => Err(Exit::failure(why)),
            Err(e) => {
                self.wait_after(&e);
                Ok(false)
            }
        }
    }

    /// One long poll: the controller's answer, or None to go round again.
    fn poll(&mut self) -> Option<Value> {
        match self.link.poll() {
            Ok(cmd) => {
                self.reachable();
                Some(cmd)
            }
            Err(LinkError::Unknown) => {
                log("info", "the controller does not know this worker (it restarted?); registering again");
                self.link.worker_id = None;
                None
            }
            Err(LinkError::Refused(403, msg)) => {
                log("warn", &format!("the controller refused this worker's identity ({msg}); registering again"));
                self.link.worker_id = None;
                None
            }
            Err(e) => {
                self.wait_after(&e);
                None
            }
        }
    }

    /// Run one command and post its result.
    fn handle(&mut self, cmd: Value) {
        let cmd: Command = match serde_json::from_value(cmd) {
            Ok(c) => c,
            Err(e) => {
                log("error", &format!("the controller sent a command this worker cannot read: {e}"));
                return;
            }
        };
        let started = Instant::now();
        let beat = crate::heartbeat::start(self.link.clone());
        let outcome = self.execute(&cmd, started);
        drop(beat);
        let verdict = if outcome.is_ok() { "ok" } else { "failed" };
        log("info", &format!("{} {}: {verdict} in {} ms", cmd.id, cmd.action, started.elapsed().as_millis()));
        let profiles = self.profiles(false);
        self.post(&cmd.id, outcome, profiles.as_ref());
    }

    fn execute(&mut self, cmd: &Command, started: Instant) -> Result<Value, WorkerError> {
        // A little before the controller gives up, so the result still arrives.
        let deadline = Some(cmd.timeout_s)
            .filter(|&t| t > 0)
            .and_then(|t| started.checked_add(Duration::from_secs(t).saturating_sub(Duration::from_secs(2))));
        let upload = Upload { link: &self.link, session_id: &cmd.session_id, command_id: &cmd.id };
        let ctx = Context {
            uploader: &upload,
            deadline,
            session_id: &cmd.session_id,
            allowed_domains: &cmd.allowed_domains,
            browser_profile: cmd.browser_profile.as_deref(),
        };
        if cmd.action == DELETE_PROFILE {
            let name = cmd.params["name"].as_str().unwrap_or_default();
            let browser = self.backends.iter_mut().find(|b| b.capability() == "browser");
            return browser.ok_or(WorkerError::NoCapability("browser"))?.delete_profile(name);
        }
        let (tool, backend) = backend::route(&mut self.backends, &cmd.action)?;
        backend.run(tool, &cmd.params, &ctx)
    }

    /// Post a result, retrying while the controller blips (not on 4xx: those will not change).
    fn post(&self, id: &str, outcome: Result<Value, WorkerError>, profiles: Option<&Value>) {
        let mut outcome = outcome;
        for attempt in 0..5 {
            match self.link.post_result(id, &outcome, profiles) {
                Ok(()) => break,
                Err(LinkError::Refused(413, _)) if outcome.is_ok() => outcome = Err(WorkerError::ResultTooLarge),
                Err(e @ (LinkError::Refused(..) | LinkError::Unknown)) => {
                    log("error", &format!("the result of {id} was refused: {e}"));
                    break;
                }
                Err(e) if attempt < 4 => {
                    log("warn", &format!("posting the result of {id} failed ({e}); retrying"));
                    std::thread::sleep(Duration::from_secs(1 << attempt));
                }
                Err(e) => log("error", &format!("the result of {id} is lost: {e}")),
            }
        }
    }

    /// A request got through: end an outage, saying so if there was one.
    fn reachable(&mut self) {
        if self.backoff.succeed() {
            log("info", "the controller is reachable again");
        }
    }

    fn wait_after(&mut self, e: &LinkError) {
        let (delay, first) = self.backoff.fail();
        if first {
            let controller = &self.controller;
            log(
                "warn",
                &format!("cannot reach the controller at {controller} ({e}); retrying with backoff up to 30 s"),
            );
        }
        std::thread::sleep(delay);
    }
}
