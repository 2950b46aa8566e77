//! `form_defaults` (small profile, in the worker): the first submit of a form (or of a button
//! among fields, with no form) whose selects or prefilled fields nobody set is refused once a
//! session, naming them; with no form, a `type=button` button only among empty, untouched text
//! fields (pages that send by script say nothing of it in the markup). The worker's page
//! helpers act (`page.js`); the controller decides: a click is sent with `confirm_defaults` true
//! only while this unit is on and that submit was not held before, and reads the worker's typed
//! refusal (`form_unset`), never its words.
//!
//! Invariant: the worker holds a submit only where the controller asked it to, once per submit.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::refusal::Refusal;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::FormDefaults,
    modes: Modes::ALL,
    evidence: "own 14, three repeats: 5 → 1 (order-form, search). MiniWoB, three repeats: 9 → 3 \
               (form-sequence-3, read-table-2, use-spinner sent the form unfilled). Stays. Its \
               `type=button` case on multi-layouts (the only dev page with such a button; no own-suite \
               page has one), six paired seeds: JSON 0/6 → 2/6, OpenAI native 2/6 → 2/6. MiniWoB's 9 multi-step pages, JSON, three \
               repeats paired (f178551): 5 → 0 in the 8 runs it fired in; Anthropic native (16f7a63): 3 → 0 in 4.",
};

/// Whether a click on `selector` asks the worker to hold a submit whose fields nobody set.
fn asks_hold(on: bool, selector: Option<&str>, held: &std::collections::HashSet<String>) -> bool {
    on && !selector.is_some_and(|s| held.contains(s))
}

impl Agent {
    /// A click's parameters: `confirm_defaults`, always sent (false where the unit is off).
    pub(in crate::agent) fn form_defaults_params(&self, on: bool, tool: Tool, input: &Value, params: &mut Value) {
        if tool == Tool::BrowserClick {
            let selector = input["selector"].as_str();
            params["confirm_defaults"] = asks_hold(on, selector, &self.guard_state.held_submits).into();
        }
    }

    /// After a result: a submit the worker held is remembered, and not held again.
    pub(in crate::agent) fn form_defaults_held(&mut self, call: &Call, outcome: &mut ToolOutcome) {
        if outcome.refused() == Some(Refusal::FormUnset) {
            self.fire(Guard::FormDefaults, "a submit refused once: fields nobody set named");
            self.guard_state.held_submits.extend(call.input["selector"].as_str().map(str::to_string));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_form_defaults_asks_once_per_submit_and_is_quiet_where_off() {
        let mut held = std::collections::HashSet::new();
        assert!(asks_hold(true, Some("ref=e7"), &held), "the first click on a submit");
        held.insert("ref=e7".to_string());
        assert!(!asks_hold(true, Some("ref=e7"), &held), "held once: not again");
        assert!(asks_hold(true, Some("ref=e9"), &held), "another submit");
        assert!(!asks_hold(false, Some("ref=e9"), &held), "off: the worker is told not to");
    }
}
