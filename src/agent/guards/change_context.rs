//! `change_context` (small profile, in the worker, a hint): where an action changed its page
//! and a run of the changed lines starts with a text that names no element (a count after
//! "+", a message after a submit), the changes show the unchanged line above and below it,
//! marked, so that what the text belongs to reads with it (a small model that sees `text "3"`
//! alone does not know what it counts, and presses "+" again). The worker does so only for a
//! command sent with `change_context: true`, which this unit decides; its answer's `context`
//! (how many lines it added) is this unit's event, and goes no further.
//!
//! Invariant: off, an action's answer is the changed lines alone, as the page shows them.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit =
    Unit { guard: Guard::ChangeContext, modes: Modes::ALL, evidence: "not yet ablated." };

/// The tools whose answer is what they changed on the page.
fn acting(tool: Tool) -> bool {
    matches!(
        tool,
        Tool::BrowserClick
            | Tool::BrowserType
            | Tool::BrowserPressKey
            | Tool::BrowserSelectOption
            | Tool::BrowserFillForm
            | Tool::BrowserUploadFile
    )
}

impl Agent {
    /// An action's parameters: `change_context`, always sent (false where the unit is off).
    pub(in crate::agent) fn change_context_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if acting(tool) {
            params["change_context"] = on.into();
        }
    }

    /// After the answer: the lines it added are this unit's event; the count is not the model's.
    pub(in crate::agent) fn change_context_shown(&mut self, tool: Tool, _input: &Value, answer: &mut Value) {
        if !acting(tool) {
            return;
        }
        if let Some(added) = answer.as_object_mut().and_then(|m| m.remove("context")) {
            self.fire(Guard::ChangeContext, &format!("{added} unchanged lines show what changed text belongs to"));
        }
    }
}
