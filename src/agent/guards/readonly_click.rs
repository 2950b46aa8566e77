//! `readonly_click` (small profile, in the worker, a redirect): `browser_type` into a read-only
//! field (a date picker's box, a combo box that opens a list) clicks it instead, as a person
//! clicks such a box to open what chooses its value, and the answer shows what opened. The
//! worker clicks only for a command sent with `readonly_click: true`, which this unit decides,
//! and says so in the answer (`clicked_read_only`), which becomes this unit's log event and is
//! taken off the answer; the click's own answer and the page's changes stay.
//!
//! Invariant: off, typing into a read-only field is refused with the field named and what
//! takes its value (a click), and nothing is clicked.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ReadonlyClick,
    modes: Modes::ALL,
    evidence: "moved from the worker's typing, where it ran in every session and every profile; \
     not yet ablated.",
};

/// Whether the worker's answer says it clicked a read-only field it was asked to type into.
fn clicked(answer: &Value) -> bool {
    answer["clicked_read_only"] == true
}

impl Agent {
    /// A typing's parameters: `readonly_click`, always sent (false where the unit is off).
    pub(in crate::agent) fn readonly_click_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if tool == Tool::BrowserType {
            params["readonly_click"] = on.into();
        }
    }

    /// After the answer: a click made instead of the typing is this unit's, and leaves the answer.
    pub(in crate::agent) fn readonly_clicked(&mut self, tool: Tool, input: &Value, answer: &mut Value) {
        if tool != Tool::BrowserType || !clicked(answer) {
            return;
        }
        let field = input["selector"].as_str().unwrap_or("the field");
        self.fire(Guard::ReadonlyClick, &format!("`{field}` is read-only: clicked instead of typed into"));
        if let Some(fields) = answer.as_object_mut() {
            fields.remove("clicked_read_only");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_readonly_click_reads_the_workers_flag_and_nothing_else() {
        assert!(clicked(&json!({"clicked": "input", "typed": 0, "clicked_read_only": true})));
        assert!(!clicked(&json!({"clicked": "input", "typed": 0})), "a click alone is no redirect");
        assert!(!clicked(&json!({"clicked_read_only": "yes"})));
    }
}
