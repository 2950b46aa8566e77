//! API errors: one enum, one mapping to an HTTP status and a `{error, code}` body.
//!
//! Handlers return `Result<_, ApiError>`; `http::finish` renders it (via `http::error_response`). Every error has a
//! human-readable message and a stable slug, so clients can branch on `code`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    BadRequest(String),
    Unauthorized,
    Forbidden(String),
    NotFound(String),
    MethodNotAllowed(String),
    Conflict(String),
    TooLarge(String),
    StorageFull(String),
    Unavailable(String),
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden(_) => 403,
            ApiError::NotFound(_) => 404,
            ApiError::MethodNotAllowed(_) => 405,
            ApiError::Conflict(_) => 409,
            ApiError::TooLarge(_) => 413,
            ApiError::StorageFull(_) => 507,
            ApiError::Unavailable(_) => 503,
            ApiError::Internal(_) => 500,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::TooLarge(_) => "too_large",
            ApiError::StorageFull(_) => "storage_full",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            ApiError::Unauthorized => "missing or invalid bearer token",
            ApiError::BadRequest(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::MethodNotAllowed(m)
            | ApiError::Conflict(m)
            | ApiError::TooLarge(m)
            | ApiError::StorageFull(m)
            | ApiError::Unavailable(m)
            | ApiError::Internal(m) => m,
        }
    }

    pub fn body(&self) -> String {
        serde_json::json!({"error": self.message(), "code": self.code()}).to_string()
    }

    pub fn no_session(id: &str) -> ApiError {
        ApiError::NotFound(format!("no session {id:?}"))
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status(), self.code(), self.message())
    }
}

impl std::error::Error for ApiError {}

impl From<std::io::Error> for ApiError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                ApiError::StorageFull(format!("the controller's disk is full: {e}"))
            }
            _ => ApiError::Internal(format!("I/O error: {e}")),
        }
    }
}
