//! What `GET /sessions` lists of each session: its summary, made from its record.

use super::{Mode, SessionRecord, SessionType, Status, schedule};
use serde::Serialize;

/// One entry of the session list.
#[derive(Debug, Serialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub status: Status,
    pub mode: Mode,
    #[serde(rename = "type")]
    pub session_type: SessionType,
    pub target: String,
    pub created_at: String,
    pub turn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<schedule::ScheduleMark>,
}

impl From<&SessionRecord> for SessionSummary {
    fn from(r: &SessionRecord) -> Self {
        SessionSummary {
            session_id: r.session_id.clone(),
            status: r.status,
            mode: r.mode,
            session_type: r.session_type,
            target: r.target.clone(),
            created_at: r.created_at.clone(),
            turn: r.turn,
            schedule: r.schedule.clone(),
        }
    }
}
