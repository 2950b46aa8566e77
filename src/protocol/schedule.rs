//! Scheduled sessions on the wire: `POST /schedules` (and `schedules:` in config.yaml, the same
//! shape), and the mark a schedule's sessions carry.
//!
//! The body is strict like every API request. `session` and `notify` stay JSON here: they are
//! checked as a `POST /sessions` body and as notification targets when the schedule is made,
//! and kept as given (their secrets included) so each run can be created from them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `POST /schedules`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    pub name: String,
    /// A duration: `30s`, `15m`, `1h`, `1d`.
    #[serde(default)]
    pub every: Option<String>,
    /// A five-field cron expression, in `tz` (the host's time zone when absent).
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub tz: Option<String>,
    /// A `POST /sessions` body: each run is a new session from it.
    #[serde(default)]
    pub session: Option<Value>,
    /// A finished session: each run replays it with `params`.
    #[serde(default)]
    pub replay_of: Option<String>,
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// One run at start for the runs missed while the daemon was down.
    #[serde(default)]
    pub catch_up: bool,
    /// Where a run that ends `error` or a replay that diverged is reported (the `notifications`
    /// shape of `POST /sessions`); the session's own when absent.
    #[serde(default)]
    pub notify: Option<Value>,
}

/// On a session a schedule made: which schedule, which run of it (1, 2, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleMark {
    pub name: String,
    pub run: u64,
}
