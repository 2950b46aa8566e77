//! Which HTTP status the layers' own errors become: the one place a `SessionError` or a
//! `ScheduleError` is given a status and a `{error, code}` body. The message is the error's
//! own `Display`, unchanged.

use crate::error::ApiError;
use crate::schedule::ScheduleError;
use crate::session::SessionError;

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        status_of(&e)
    }
}

impl From<ScheduleError> for ApiError {
    fn from(e: ScheduleError) -> ApiError {
        match e {
            ScheduleError::Invalid(m) => ApiError::BadRequest(m),
            ScheduleError::Exists(m) | ScheduleError::ReadOnly(m) | ScheduleError::Busy(m) | ScheduleError::Full(m) => {
                ApiError::Conflict(m)
            }
            ScheduleError::NotFound(m) => ApiError::NotFound(m),
            ScheduleError::Session(e) => ApiError::from(e),
            disk @ ScheduleError::Disk { .. } => ApiError::Internal(disk.to_string()),
        }
    }
}

/// A run's failed start as the schedule keeps it: as `POST /sessions` would have answered.
pub fn session_failure(e: &SessionError) -> String {
    status_of(e).to_string()
}

/// An act's error as its parked request is answered: the status and the `{error, code}` body.
pub fn act_error(e: &SessionError) -> (u16, Vec<u8>) {
    let answer = status_of(e);
    (answer.status(), answer.body().into_bytes())
}

fn status_of(e: &SessionError) -> ApiError {
    let message = e.to_string();
    match e {
        SessionError::Invalid(_) | SessionError::Interrupted(_) => ApiError::BadRequest(message),
        SessionError::NotFound(_) => ApiError::NotFound(message),
        SessionError::Conflict(_) => ApiError::Conflict(message),
        SessionError::TooLarge(_) => ApiError::TooLarge(message),
        SessionError::NoRoom(_) => ApiError::StorageFull(message),
        SessionError::Unavailable(_) => ApiError::Unavailable(message),
        io @ (SessionError::Io(_) | SessionError::CreateFolder(_)) if io.disk_full() => ApiError::StorageFull(message),
        SessionError::Internal(_) | SessionError::Io(_) | SessionError::CreateFolder(_) => ApiError::Internal(message),
    }
}
