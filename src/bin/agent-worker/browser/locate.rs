//! What an acting step names, described before it acts: the element a click, a typing, a
//! choice, a hover or a send names (`element`), or each field a fill names (`elements`), as
//! `locate.js` reads it (role and accessible name, label, placeholder, text, test id, id, CSS
//! path, and which of them name it alone). The controller keeps it in the step log, out of the
//! model's sight, so a run exported as a script can find the element without refs. It rides in
//! the result as `acted_on`, a key no tool's own answer uses.
//!
//! A description never reads a field's value, and one the page cannot give (no such element,
//! a page that does not answer) is left out: the step itself then says what went wrong. After
//! the act it gains what the act set from the step's own words (`with_effects`): the value a
//! date, number, range or select now holds as the field writes it (`set`), and for a radio named
//! by another radio's label, the radio that was checked.

use super::Browser;
use super::util::js;
use agent_controller::protocol::tools::Tool;
use serde_json::Value;

impl Browser {
    /// The key and the description of what `tool` with `p` names; `None` where it names nothing.
    pub(super) fn describe_targets(&mut self, tool: Tool, p: &Value) -> Option<(&'static str, Value)> {
        let one = |b: &mut Browser, key: &str| p[key].as_str().and_then(|s| b.describe(s));
        match tool {
            Tool::BrowserClick | Tool::BrowserType | Tool::BrowserSelectOption | Tool::BrowserHover => {
                one(self, "selector").map(|d| ("element", d))
            }
            Tool::BrowserSubmitForm => {
                one(self, "submit_selector").or_else(|| one(self, "selector")).map(|d| ("element", d))
            }
            Tool::BrowserFillForm => {
                let fields = p["fields"].as_array()?;
                let described: Vec<Value> = fields
                    .iter()
                    .map(|f| f["selector"].as_str().and_then(|s| self.describe(s)).unwrap_or(Value::Null))
                    .collect();
                Some(("elements", Value::Array(described)))
            }
            _ => None,
        }
    }

    /// `described` (from `describe_targets`) with what the act `done` with `p` set: a script
    /// sets `2024-03-05`, not the model's "March 5, 2024", and checks the radio that was checked.
    pub(super) fn with_effects(&mut self, key: &str, mut described: Value, p: &Value, done: &Value) -> Value {
        let set = |d: &Value| d.get("set").or_else(|| d.get("selected")).cloned();
        if key == "element" {
            if let Some(v) = set(done) {
                described["set"] = v;
            }
            return described;
        }
        let filled = done["filled"].as_array().cloned().unwrap_or_default();
        for (i, f) in filled.iter().enumerate() {
            let asked = p["fields"][i]["selector"].as_str();
            let chosen = f["selector"].as_str().filter(|s| f["checked"].is_boolean() && Some(*s) != asked);
            let other = chosen.and_then(|s| self.describe(s));
            let Some(d) = described.get_mut(i) else { break };
            if let Some(other) = other {
                *d = other;
            } else if let Some(v) = set(f).filter(|_| d.is_object()) {
                d["set"] = v;
            }
        }
        described
    }

    fn describe(&mut self, selector: &str) -> Option<Value> {
        self.eval(&format!("__acLocate.describe({})", js(selector))).ok().filter(Value::is_object)
    }
}
