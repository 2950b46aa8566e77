//! What a step-log entry keeps for a run exported as a script (`export/`): what the step acted
//! on (the worker's description of its element, or a login's fields), the model's own words
//! in the reply that made the call (what it meant), and who approved it. The step log is
//! scrubbed of the vault's secrets like everything the session writes; none of this holds a
//! typed value.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Role;
use serde_json::{Value, json};

/// The most of the model's words kept per step.
const THOUGHT_CHARS: usize = 300;

impl Agent {
    /// Add what an export needs to `step`; takes the approval noted for this call.
    pub(super) fn for_export(&mut self, step: &mut Value, outcome: &ToolOutcome, by_human: bool) {
        if let Some(Value::Object(acted)) = &outcome.acted_on {
            for (k, v) in acted {
                step[k] = v.clone();
            }
        }
        if let Some(approved) = self.approved.take() {
            step["approved"] = approved;
        }
        if by_human || self.replaying {
            return;
        }
        let reply = self.messages.last().filter(|m| m.role == Role::Assistant).map(|m| m.text()).unwrap_or_default();
        let thought: String =
            reply.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(THOUGHT_CHARS).collect();
        if !thought.is_empty() {
            step["thought"] = json!(thought);
        }
    }

    /// The approval a call had (`by`: `person`, `auto_confirm`, `validator`; `edited`: the
    /// command a person approved instead), kept for its step.
    pub(super) fn note_approval(&mut self, by: &str, edited: Option<&str>) {
        let mut approved = json!({"by": by});
        if let Some(e) = edited {
            approved["edited"] = json!(e);
        }
        self.approved = Some(approved);
    }
}
