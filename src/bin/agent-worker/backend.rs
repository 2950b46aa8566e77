//! The `Backend` trait: one kind of target the worker drives (a browser, a shell, later a
//! desktop app), and the routing of a command to the backend that runs it.
//!
//! A command's `action` is a tool name from the library's tool table. The table says where a
//! tool runs: tools the controller runs itself are refused here, and a target tool goes to the
//! backend whose capability matches the tool's session type. Adding a backend is one file that
//! implements `Backend`, plus one line where `main.rs` builds the list; nothing here changes.
//! A backend sees only the tool, its parameters and a `Context`; it never talks to the
//! controller itself, so the worker protocol stays in `worker.rs` and `link.rs`.

use crate::error::WorkerError;
use agent_controller::protocol::WorkerSettings;
use agent_controller::protocol::profiles::ProfileReport;
use agent_controller::protocol::tools::{Runs, Tool};
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

/// One kind of target, driven for the commands of its capability.
pub trait Backend {
    /// The capability this backend gives the worker ("browser", "shell", later "app"): the
    /// name it registers with, and `SessionType::capability()` of the tools it runs.
    fn capability(&self) -> &'static str;

    /// Take the controller's settings, sent at every (re-)registration. Most backends need none.
    fn configure(&mut self, _settings: &WorkerSettings) {}

    /// Run one tool of this backend's capability.
    fn run(&mut self, tool: Tool, params: &Value, ctx: &Context) -> Result<Value, WorkerError>;

    /// Stop whatever the backend started (the worker is exiting).
    fn shutdown(&mut self);

    /// The browser profiles it keeps: all of them (`all`, at registration), else only when
    /// they changed since the last report (a session ran in one). Most backends keep none.
    fn profiles(&mut self, _all: bool) -> Option<Vec<ProfileReport>> {
        None
    }

    /// Remove a kept browser profile (`DELETE /profiles/NAME` on the controller).
    fn delete_profile(&mut self, _name: &str) -> Result<Value, WorkerError> {
        Err(WorkerError::Unsupported { backend: self.capability(), tool: "delete_browser_profile" })
    }
}

/// What a tool needs from outside its backend.
pub struct Context<'a> {
    /// Hands a produced file (a download, a PDF) to the controller.
    pub uploader: &'a dyn Uploader,
    /// When the controller stops waiting for this command; work past it is wasted.
    pub deadline: Option<Instant>,
    /// The session the command belongs to (a browser numbers its refs per session).
    pub session_id: &'a str,
    /// The hosts the session's browser may reach; empty: any.
    pub allowed_domains: &'a [agent_controller::protocol::domains::DomainPattern],
    /// The browser profile the session runs in (kept between sessions); none: a fresh context.
    pub browser_profile: Option<&'a str>,
}

/// Uploads a finished file for the current command and says how the controller stored it;
/// fetches one of the session's files (an input, a download) for a page's file field.
pub trait Uploader {
    fn upload(&self, filename: &str, path: &Path) -> Result<Value, WorkerError>;

    /// The session's file `filename` written to `dest` (new), at most `max` bytes; its size.
    fn fetch(&self, filename: &str, dest: &Path, max: u64) -> Result<u64, WorkerError>;
}

/// The tool named by `action` and the backend that runs it, or why there is none.
pub fn route<'b>(
    backends: &'b mut [Box<dyn Backend>],
    action: &str,
) -> Result<(Tool, &'b mut dyn Backend), WorkerError> {
    let not_ours = || WorkerError::NotAWorkerTool(action.to_string());
    let tool = Tool::from_name(action).ok_or_else(not_ours)?;
    let Runs::Target(kind) = tool.spec().runs else { return Err(not_ours()) };
    let capability = kind.capability();
    match backends.iter_mut().find(|b| b.capability() == capability) {
        Some(backend) => Ok((tool, backend.as_mut())),
        None => Err(WorkerError::NoCapability(capability)),
    }
}

/// A required, non-empty string parameter.
pub fn required_str<'a>(p: &'a Value, name: &str) -> Result<&'a str, WorkerError> {
    p[name].as_str().filter(|s| !s.is_empty()).ok_or_else(|| WorkerError::bad(format!("missing `{name}`")))
}

/// A required string parameter that may be empty (text to type, content to write).
pub fn any_str<'a>(p: &'a Value, name: &str) -> Result<&'a str, WorkerError> {
    p[name].as_str().ok_or_else(|| WorkerError::bad(format!("missing `{name}`")))
}

/// A required array parameter.
pub fn array<'a>(p: &'a Value, name: &str) -> Result<&'a Vec<Value>, WorkerError> {
    p[name].as_array().ok_or_else(|| WorkerError::bad(format!("missing `{name}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(&'static str);

    impl Backend for Fake {
        fn capability(&self) -> &'static str {
            self.0
        }
        fn run(&mut self, tool: Tool, _: &Value, _: &Context) -> Result<Value, WorkerError> {
            Ok(Value::from(tool.name()))
        }
        fn shutdown(&mut self) {}
    }

    /// The capability the action goes to, or the error's words.
    fn routed(backends: &mut [Box<dyn Backend>], action: &str) -> String {
        route(backends, action).map_or_else(|e| e.to_string(), |(_, b)| b.capability().to_string())
    }

    #[test]
    fn commands_go_to_the_backend_of_their_capability() {
        let mut both: Vec<Box<dyn Backend>> = vec![Box::new(Fake("browser")), Box::new(Fake("shell"))];
        assert_eq!(routed(&mut both, "browser_navigate"), "browser");
        assert_eq!(routed(&mut both, "run_command"), "shell");
        assert_eq!(routed(&mut both, "save_note"), "this worker cannot run `save_note`");
        assert_eq!(routed(&mut both, "no_such_tool"), "this worker cannot run `no_such_tool`");
        assert_eq!(routed(&mut both, "click"), "this worker was started without the app capability");
        let mut shell: Vec<Box<dyn Backend>> = vec![Box::new(Fake("shell"))];
        assert_eq!(routed(&mut shell, "browser_navigate"), "this worker was started without the browser capability");
    }
}
