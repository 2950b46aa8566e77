//! `WorkerError`: why a command failed, as a type the worker can act on.
//!
//! Each variant is one kind of failure, so callers decide by matching (the browser restarts on
//! a lost connection, reattaches on a closed tab) instead of reading message text. What the
//! controller and the model see is `to_string()`: every message is written for the model, says
//! what went wrong and, where it can, what to try instead. The texts are part of the worker's
//! behaviour (tests and prompts match on them), so change them only on purpose.

use crate::cdp::CdpError;
use serde_json::Value;
use std::fmt;

#[derive(Debug)]
pub enum WorkerError {
    /// A missing or invalid argument: the model can fix its call.
    BadParams(String),
    /// The browser's DevTools connection failed: closed, no answer, or an error reply.
    Browser(CdpError),
    /// The page said no: a script error from the page helpers, a failed navigation.
    Page(String),
    /// A selector or ref the page helpers found nothing for (their `NoMatch`): the words say
    /// which, and what is near.
    NoMatch(String),
    /// Something waited for did not happen in time (an element, a page load).
    Timeout(String),
    /// A local file or process operation failed; `doing` says which, `source` why.
    Io { doing: String, source: std::io::Error },
    /// Fetching a file from the web failed.
    Download(String),
    /// Handing a produced file to the controller failed.
    Upload(String),
    /// The program a backend drives could not be started or is not running.
    Unavailable(String),
    /// The action is no tool a worker runs (unknown, or one the controller runs itself).
    NotAWorkerTool(String),
    /// The tool belongs to a capability this worker was not started with.
    NoCapability(&'static str),
    /// The backend for the tool's capability has no handler for it.
    Unsupported { backend: &'static str, tool: &'static str },
    /// The controller refused the result as too large.
    ResultTooLarge,
    /// The page helpers refused the call on purpose: the words for the model, and the typed
    /// refusal (`{"refused": CODE, …}`, a `protocol::refusal::Refusal` code) the controller
    /// reads instead of the words.
    Refused { message: String, detail: Value },
    /// An error with a remark in parentheses (a restart, a dialog, a closed tab).
    Noted(Box<WorkerError>, String),
    /// The browser connection was lost: the next command starts a new browser.
    WillRestart(Box<WorkerError>),
}

impl WorkerError {
    pub fn bad(msg: impl Into<String>) -> WorkerError {
        WorkerError::BadParams(msg.into())
    }

    pub fn io(doing: impl Into<String>, source: std::io::Error) -> WorkerError {
        WorkerError::Io { doing: doing.into(), source }
    }

    /// A typed refusal from the page helpers: `message` is taken out for the words.
    pub fn refused(mut detail: Value) -> WorkerError {
        let message = detail.as_object_mut().and_then(|d| d.remove("message"));
        let message = message.as_ref().and_then(Value::as_str).unwrap_or("refused").to_string();
        WorkerError::Refused { message, detail }
    }

    /// The typed refusal this error carries, if any.
    pub fn refusal(&self) -> Option<&Value> {
        match self {
            WorkerError::Refused { detail, .. } => Some(detail),
            WorkerError::Noted(e, _) | WorkerError::WillRestart(e) => e.refusal(),
            _ => None,
        }
    }

    /// This error with `note` added in parentheses.
    pub fn noted(self, note: impl Into<String>) -> WorkerError {
        WorkerError::Noted(Box::new(self), note.into())
    }
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WorkerError::*;
        match self {
            BadParams(m) | Page(m) | NoMatch(m) | Timeout(m) | Download(m) | Upload(m) | Unavailable(m) => {
                f.write_str(m)
            }
            Refused { message, .. } => f.write_str(message),
            Browser(e) => e.fmt(f),
            Io { doing, source } => write!(f, "{doing}: {source}"),
            NotAWorkerTool(action) => write!(f, "this worker cannot run `{action}`"),
            NoCapability(cap) => write!(f, "this worker was started without the {cap} capability"),
            Unsupported { backend, tool } => write!(f, "this worker's {backend} cannot do `{tool}`"),
            ResultTooLarge => {
                f.write_str("the result was too large to send to the controller; ask for less (a selector, fewer rows)")
            }
            Noted(e, note) => write!(f, "{e} ({note})"),
            WillRestart(e) => write!(f, "{e}; it will be restarted on the next command"),
        }
    }
}

impl std::error::Error for WorkerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkerError::Io { source, .. } => Some(source),
            // The failure a note or a restart is added to.
            WorkerError::Noted(e, _) | WorkerError::WillRestart(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<CdpError> for WorkerError {
    fn from(e: CdpError) -> WorkerError {
        WorkerError::Browser(e)
    }
}
