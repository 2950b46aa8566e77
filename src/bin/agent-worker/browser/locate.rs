//! What an acting step names, described before it acts: the element a click, a typing, a
//! choice, a hover or a send names (`element`), or each field a fill names (`elements`), as
//! `locate.js` reads it (role and accessible name, label, placeholder, text, test id, id, CSS
//! path, and which of them name it alone). The controller keeps it in the step log, out of the
//! model's sight, so a run exported as a script can find the element without refs. It rides in
//! the result as `acted_on`, a key no tool's own answer uses.
//!
//! A description never holds a field's value, and one the page cannot give (no such element,
//! a page that does not answer) is left out: the step itself then says what went wrong.

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

    fn describe(&mut self, selector: &str) -> Option<Value> {
        self.eval(&format!("__acLocate.describe({})", js(selector))).ok().filter(Value::is_object)
    }
}
