//! The executor seam: where a session's target tools run.
//!
//! The agent loop hands every tool the table marks `Runs::Target` to the session's
//! `Executor`, one call at a time, and gets an `Answer` (its JSON, a large member kept as text:
//! `answer.rs`) or an `ExecError` back. The first
//! implementation is the leased worker (`hub::WorkerExecutor`); `ssh.rs` runs shell tools on a
//! host over SSH with no worker there (`remote.rs` builds its command lines). An
//! executor's `run` is bounded by the timeout it is given and returns `ExecError::Stopped` as
//! soon as the session's stop is raised.

pub mod answer;
pub mod remote;
pub mod ssh;

pub use answer::Answer;

use serde_json::Value;
use std::time::Duration;

/// Why a target tool did not produce a result. Its `Display` is what the model is told.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The target ran it and reported a failure (its message, for the model).
    #[error("{0}")]
    Failed(String),
    /// The worker refused the call on purpose: its message for the model and the typed refusal
    /// (`{"refused": CODE, …fields}`) the controller reads instead of the words.
    #[error("{message}")]
    Refused { message: String, refusal: serde_json::Value },
    #[error("{action} timed out after {} s without a result from the worker", .after.as_secs())]
    Timeout { action: String, after: Duration },
    /// The target went away (a worker stopped polling, a connection dropped).
    #[error("{0}")]
    Disconnected(String),
    #[error("the session was stopped")]
    Stopped,
    /// A program the executor runs (`ssh`) could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn { program: &'static str, source: std::io::Error },
    /// A tool's argument was not in the encoding it named.
    #[error("`{field}` is not valid base64: {source}")]
    Encoding { field: &'static str, source: base64::DecodeError },
    /// A path the remote shell could not be handed safely (the model gave it: it is told why).
    #[error(transparent)]
    Quote(#[from] remote::QuoteError),
}

impl ExecError {
    /// The error with `f` applied to the words it carries (a timeout and a stop carry none of
    /// the target's); a refusal's typed fields stay as they are. A typed cause's words are the
    /// model's from here on: it becomes `Failed` with them, so `f` (a scrub) sees every word.
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> ExecError {
        match self {
            ExecError::Failed(m) => ExecError::Failed(f(m)),
            ExecError::Disconnected(m) => ExecError::Disconnected(f(m)),
            ExecError::Refused { message, refusal } => ExecError::Refused { message: f(message), refusal },
            typed @ (ExecError::Spawn { .. } | ExecError::Encoding { .. } | ExecError::Quote(_)) => {
                ExecError::Failed(f(typed.to_string()))
            }
            other @ (ExecError::Timeout { .. } | ExecError::Stopped) => other,
        }
    }
}

/// Runs target tools for one session.
pub trait Executor: Send + Sync {
    /// Who runs the tools, for the log ("worker pc-01 (wkr_…)").
    fn describe(&self) -> String;

    /// What the model should know about the target before it starts (its system, its shell).
    fn briefing(&self) -> Option<String> {
        None
    }

    /// Run `action` with `params`; at most `timeout`, or until the session is stopped.
    fn run(&self, action: &str, params: Value, timeout: Duration) -> Result<Answer, ExecError>;
}
