//! How a session ended when neither the model nor a person ended it: the controller stopped
//! under it. `record.end` says so as a type; `record.error` keeps its words for readers.
//!
//! Invariant: a session may be resumed (`POST /resume`) exactly when it ended `error` with an
//! `Interrupted` end — or, written before this field existed, with an error that starts
//! "interrupted" (`SessionRecord::interrupted`).

use serde::{Deserialize, Serialize};

/// A session's end that was not its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum End {
    /// The controller stopped while the session ran; it may go on from its journal.
    Interrupted { by: Interruption },
}

/// What stopped the controller under a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interruption {
    /// Found active when the controller started again (it had been killed or had crashed).
    Restart,
    /// The controller shut down (a signal) while it ran.
    Shutdown,
}

impl Interruption {
    /// The words `record.error` keeps (what readers before `end` matched on).
    pub fn error_text(self) -> &'static str {
        match self {
            Interruption::Restart => "interrupted by controller restart",
            Interruption::Shutdown => "interrupted: the controller shut down",
        }
    }
}

impl super::SessionRecord {
    /// Whether the controller stopped under this session, so it may go on.
    pub fn interrupted(&self) -> bool {
        self.status == super::Status::Error
            && match self.end {
                Some(End::Interrupted { .. }) => true,
                // A record written before `end` existed: its error says so.
                None => self.error.as_deref().is_some_and(|e| e.starts_with("interrupted")),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_interruption_is_typed_on_the_wire() {
        let end = End::Interrupted { by: Interruption::Restart };
        assert_eq!(serde_json::to_value(end).unwrap(), json!({"kind": "interrupted", "by": "restart"}));
        let back: End = serde_json::from_value(json!({"kind": "interrupted", "by": "shutdown"})).unwrap();
        assert_eq!(back, End::Interrupted { by: Interruption::Shutdown });
        assert!(Interruption::Restart.error_text().starts_with("interrupted"), "old readers still match");
        assert!(Interruption::Shutdown.error_text().starts_with("interrupted"));
    }
}
