//! The session layer's error: what went wrong with a session or a request about one, in the
//! layer's own terms. Its `Display` is the message a person or the model reads; which HTTP
//! status it becomes is decided by the HTTP layer alone (`http::session_error`).

use std::io;

/// Why a session operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What was asked is not valid (a field, a name, an option, a parameter).
    #[error("{0}")]
    Invalid(String),
    /// No such session, file, question or step.
    #[error("{0}")]
    NotFound(String),
    /// The session's state does not allow it now (finished, paused, already answered).
    #[error("{0}")]
    Conflict(String),
    /// One file is over the per-file limit.
    #[error("{0}")]
    TooLarge(String),
    /// The session's room is used up (its file count or its storage).
    #[error("{0}")]
    NoRoom(String),
    /// The controller cannot take it now (shutting down, at capacity, a hand-over act late).
    #[error("{0}")]
    Unavailable(String),
    /// Something failed inside the controller.
    #[error("{0}")]
    Internal(String),
    /// Reading or writing the session's folder failed.
    #[error("{}", io_words(None, .0))]
    Io(#[from] io::Error),
    /// The session's folder or its first record could not be created.
    #[error("{}", io_words(Some("cannot create the session folder"), .0))]
    CreateFolder(#[source] io::Error),
    /// An upload's body broke off before its end.
    #[error("upload interrupted: {0}")]
    Interrupted(#[source] io::Error),
}

impl SessionError {
    pub fn no_session(id: &str) -> SessionError {
        SessionError::NotFound(format!("no session {id:?}"))
    }

    /// Whether it failed because the controller's disk (or its quota) is full.
    pub fn disk_full(&self) -> bool {
        match self {
            SessionError::Io(e) | SessionError::CreateFolder(e) => super::disk::is_full(e),
            _ => false,
        }
    }
}

/// An I/O failure's message: a full disk is named as such, whatever was being done.
fn io_words(doing: Option<&str>, e: &io::Error) -> String {
    match (super::disk::is_full(e), doing) {
        (true, Some(doing)) => format!("the controller's disk is full: {doing}: {e}"),
        (true, None) => format!("the controller's disk is full: {e}"),
        (false, Some(doing)) => format!("{doing}: {e}"),
        (false, None) => format!("I/O error: {e}"),
    }
}
