//! Replay on the wire: `POST /sessions/:id/replay` and what a replayed session's record says.
//!
//! A replay is a new session that re-runs the worker steps of a finished one from its
//! `steps.jsonl`, without the model, and hands over to the model where the page no longer
//! matches. The steps to run ride in the record in memory only (`serde(skip)`): session.json and
//! the API show the source and the parameter names, never the values (a value may be secret).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `POST /sessions/:id/replay`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// `{name: value}`: fills `{{name}}` in the recorded arguments; a name that is no
    /// placeholder is a recorded value to replace (`{"socks": "shoes"}`).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// A new instruction (for the model, if the replay hands over to it).
    #[serde(default)]
    pub instruction: Option<String>,
    /// The worker to run on instead of the one the steps were recorded on (by hostname or id).
    #[serde(default)]
    pub worker: Option<String>,
}

/// What a replayed session records about its replay.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReplayInfo {
    /// The session whose steps are replayed.
    pub source: String,
    /// The names of the parameters given.
    pub params: Vec<String>,
    /// Steps run from the recording, and steps the model took after a hand-over (shown once
    /// there are some).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_steps: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_steps: u64,
    /// Where the replay stopped matching and handed over to the model, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
    /// The steps to replay (memory only).
    #[serde(skip)]
    pub steps: Vec<ReplayStep>,
}

/// One recorded worker step, parameters filled in.
#[derive(Debug, Clone, Default)]
pub struct ReplayStep {
    pub tool: String,
    pub args: Value,
    /// The snapshot line of the element a `ref=` selector named when it was recorded.
    pub target: Option<String>,
    /// Where `args` hold what a person typed (JSON pointers), filled from `typed_N` parameters.
    pub typed: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
