//! The text of a caught panic, for the places that contain one (a session's agent, a route).

/// The message of a panic's payload (`panic!` with a literal or a formatted message).
pub fn message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}
