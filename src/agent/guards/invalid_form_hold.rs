//! `invalid_form_hold` (both profiles, in the worker, a hold): a click on a submit whose form the
//! browser would not send (a required field empty, an e-mail that is not one) is not made; the
//! answer is the typed refusal `form_invalid` with each field and the browser's own message for
//! it (`validationMessage`), which a page shows only as a bubble no snapshot holds. It serves
//! every model: without it, the click answers "nothing changed" and says nothing of why. The
//! worker holds only for a command sent with `hold_invalid: true`, which this unit decides;
//! each refusal is its event (and what `form_values` fills from, in the small profile).
//!
//! Invariant: off, the click is made as asked, and the browser keeps the form as it would for
//! a person.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::refusal::Refusal;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::InvalidFormHold,
    modes: Modes::ALL,
    evidence: "moved from the worker's click, where it ran in every session and every profile (its \
     refusal is what form_values, three repeats 5 -> 1 on the own suite, fills from); not yet ablated \
     alone.",
};

impl Agent {
    /// A click's parameters: `hold_invalid`, always sent (false where the unit is off).
    pub(in crate::agent) fn invalid_form_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if tool == Tool::BrowserClick {
            params["hold_invalid"] = on.into();
        }
    }

    /// After a result: a click the worker held on an invalid form is this unit's event.
    pub(in crate::agent) fn invalid_form_held(&mut self, call: &Call, outcome: &mut ToolOutcome) {
        if outcome.refused() == Some(Refusal::FormInvalid) {
            let selector = call.input["selector"].as_str().unwrap_or("the submit");
            self.fire(Guard::InvalidFormHold, &format!("`{selector}` not clicked: its form would not be sent"));
        }
    }
}
