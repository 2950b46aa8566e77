//! A schedule's definition, checked: its name (a safe file name: it names the file that keeps
//! it), when it runs, what each run is (a new session from a `POST /sessions` body, or a replay
//! of a finished session with parameters), catch-up, and where problems are reported. Also the
//! seam's error type and the definition as the API shows it (secrets left out).

use super::timing::When;
use crate::protocol::CreateSessionRequest;
use crate::protocol::replay::ReplayRequest;
use crate::protocol::schedule::ScheduleRequest;
use crate::protocol::secrets::Notifications;
use crate::protocol::strict;
use crate::session::SessionError;
use crate::session::SessionManager;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Everything that can go wrong with a schedule (the HTTP layer gives each its status).
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A field is wrong, with the reason.
    #[error("{0}")]
    Invalid(String),
    /// The name is taken.
    #[error("{0}")]
    Exists(String),
    #[error("{0}")]
    NotFound(String),
    /// Defined in config.yaml: not changed through the API.
    #[error("{0}")]
    ReadOnly(String),
    /// A run is still going (refused for "run now"; a due run is skipped).
    #[error("{0}")]
    Busy(String),
    /// As many schedules as `server.max_schedules` allows exist.
    #[error("{0}")]
    Full(String),
    /// Creating the run's session failed (the session's own error, as it is).
    #[error(transparent)]
    Session(SessionError),
    /// The schedule could not be written (or removed).
    #[error("{what}: {source}")]
    Disk { what: String, source: std::io::Error },
}

/// What each run is.
pub enum Task {
    /// A new session from this `POST /sessions` body.
    Session(Value),
    /// A replay of this finished session with these parameters.
    Replay { source: String, params: BTreeMap<String, String> },
}

/// A checked definition.
pub struct Spec {
    pub name: String,
    pub when: When,
    pub task: Task,
    pub catch_up: bool,
    /// The schedule's own targets for problems; else the session body's.
    pub notify: Option<Notifications>,
    /// The definition as given, kept on disk (secrets included) and shown redacted.
    pub raw: Value,
}

/// Check a definition. `deep` also checks the session body as `POST /sessions` would (a named
/// worker must be registered) and that the replayed session exists and can be replayed: true
/// through the API, false when loading at start (workers register later; retention may have
/// removed a replayed session, which each run then reports).
pub fn check(raw: Value, sessions: &SessionManager, deep: bool, min_gap_s: u64) -> Result<Spec, ScheduleError> {
    let invalid = ScheduleError::Invalid;
    let req: ScheduleRequest = strict::from_value(&raw).map_err(|e| invalid(format!("schedule: {e}")))?;
    check_name(&req.name)?;
    let when = When::parse(req.every.as_deref(), req.cron.as_deref(), req.tz.as_deref())
        .map_err(|e| invalid(e.to_string()))?;
    let min_gap_ms = i64::try_from(min_gap_s.saturating_mul(1000)).unwrap_or(i64::MAX);
    if when.shortest_gap_ms(crate::util::clock::unix_ms()).is_some_and(|gap| gap < min_gap_ms) {
        let key = if req.every.is_some() { "every" } else { "cron" };
        return Err(invalid(format!(
            "`{key}` runs more often than once every {min_gap_s} s, the least server.schedule_min_interval_s allows"
        )));
    }
    let task = match (req.session, req.replay_of) {
        (Some(_), Some(_)) => return Err(invalid("give either `session` or `replay_of`, not both".into())),
        (None, None) => {
            return Err(invalid(
                "a schedule needs `session` (a POST /sessions body) or `replay_of` (a session id)".into(),
            ));
        }
        (Some(body), None) if req.params.is_empty() => {
            check_session(&body, sessions, deep)?;
            Task::Session(body)
        }
        (Some(_), None) => return Err(invalid("`params` are for `replay_of` schedules".into())),
        (None, Some(source)) => {
            if deep {
                let replay = ReplayRequest { params: req.params.clone(), instruction: None, worker: None };
                sessions.prepare_replay(&source, replay).map_err(|e| invalid(format!("`replay_of`: {e}")))?;
            }
            Task::Replay { source, params: req.params }
        }
    };
    let notify = match req.notify {
        None => None,
        Some(v) => {
            let targets: Notifications = strict::from_value(&v).map_err(|e| invalid(format!("`notify`: {e}")))?;
            crate::session::check_secrets(None, Some(&targets)).map_err(|e| invalid(format!("`notify`: {e}")))?;
            Some(targets)
        }
    };
    Ok(Spec { name: req.name, when, task, catch_up: req.catch_up, notify, raw })
}

/// 1 to 64 letters, digits, `-`, `_` or `.`, not starting with a dot or a dash: a file name on
/// any system and a URL path segment as it is.
fn check_name(name: &str) -> Result<(), ScheduleError> {
    let ok = (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && crate::util::filename::sanitize_filename(name) == name;
    if ok {
        return Ok(());
    }
    Err(ScheduleError::Invalid(format!(
        "`name` must be 1 to 64 letters, digits, '-', '_' or '.', not starting with '.' or '-' (it names a file), got {:?}",
        name.chars().take(80).collect::<String>()
    )))
}

/// The session body must be one `POST /sessions` accepts.
fn check_session(body: &Value, sessions: &SessionManager, deep: bool) -> Result<(), ScheduleError> {
    let req: CreateSessionRequest =
        strict::from_value(body).map_err(|e| ScheduleError::Invalid(format!("`session`: {e}")))?;
    // Nobody is there to hand a scheduled run its files: it would wait for them in vain.
    if req.inputs.as_ref().is_some_and(|i| !i.is_empty()) {
        return Err(ScheduleError::Invalid("`session.inputs`: a scheduled run is handed no files".into()));
    }
    if deep {
        sessions.validate(req).map_err(|e| ScheduleError::Invalid(format!("`session`: {e}")))?;
    }
    Ok(())
}

impl Spec {
    /// The session body's own notification targets, when it has any.
    pub fn session_notifications(&self) -> Option<Notifications> {
        let Task::Session(body) = &self.task else { return None };
        serde_json::from_value(body.get("notifications")?.clone()).ok()
    }

    /// The definition without its secrets: credentials and notification targets say only
    /// that they are there.
    pub fn shown(&self) -> Value {
        let mut v = self.raw.clone();
        if let Some(session) = v.get_mut("session").and_then(Value::as_object_mut) {
            if session.contains_key("credentials") {
                session.insert("credentials".into(), json!("[redacted]"));
            }
            if let Some(n) = session.get_mut("notifications") {
                *n = targets_summary(n);
            }
        }
        if let Some(n) = v.get_mut("notify") {
            *n = targets_summary(n);
        }
        v
    }
}

fn targets_summary(targets: &Value) -> Value {
    json!({"telegram": !targets["telegram"].is_null(), "webhook": !targets["webhook"].is_null()})
}
