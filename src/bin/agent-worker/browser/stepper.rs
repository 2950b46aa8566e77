//! Sliders and spin buttons that are not native fields (ARIA's `slider` and `spinbutton`, on a
//! div or on a text field): a number is set as a person sets it, with the arrow keys, one step
//! at a time, reading the value after each.
//!
//! Guarantees: at most `MAX_KEYS` keys; the keys stop at the number asked, at the first value
//! past it (steps that do not divide the distance), or when a key no longer moves the widget
//! (a bound, or a widget without keys); the answer is the value it holds then, with `asked`
//! when that differs. The widget is focused by script, never clicked (a click on a track moves
//! it).

use super::Browser;
use super::util::js;
use crate::error::WorkerError;
use serde_json::{Value, json};

/// A person would give up long before: 200 keys cover a 0–100 slider twice.
const MAX_KEYS: usize = 200;

impl Browser {
    /// Move the focused widget at `selector` (a `role`) to the number `text` says.
    pub(super) fn step_to(&mut self, selector: &str, text: &str, role: &str) -> Result<Value, WorkerError> {
        let Some(target) = number(text) else {
            let shown: String = text.chars().take(40).collect();
            return Err(WorkerError::bad(format!(
                "`{selector}` is a {role}: it takes a number (7, -2.5), and `{shown}` is not one"
            )));
        };
        let mut value = self.step_value(selector)?;
        let mut keys = 0;
        while (value - target).abs() > f64::EPSILON && keys < MAX_KEYS {
            let was = value;
            self.key(if value < target { "ArrowUp" } else { "ArrowDown" })?;
            keys += 1;
            value = self.step_value(selector)?;
            let moved_past = (was < target) != (value < target) && (value - target).abs() > f64::EPSILON;
            if value == was || moved_past {
                break;
            }
        }
        self.settle()?;
        let mut out = json!({"set": shown_number(value), "kind": role, "keys": keys});
        if (value - target).abs() > f64::EPSILON {
            out["asked"] = shown_number(target);
        }
        Ok(out)
    }

    fn step_value(&mut self, selector: &str) -> Result<f64, WorkerError> {
        let step = self.eval(&format!("__ac.stepperAt({})", js(selector)))?;
        step["now"].as_f64().ok_or_else(|| WorkerError::Page(format!("`{selector}` no longer shows a number")))
    }
}

/// The number a model wrote: `7`, `-2.5`, `+3`, `1,234`.
fn number(text: &str) -> Option<f64> {
    let plain: String = text.trim().chars().filter(|c| *c != ',' && *c != '_' && !c.is_whitespace()).collect();
    plain.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A whole number without its `.0`, as the page shows it.
fn shown_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 1e15 { json!(n as i64) } else { json!(n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_read_as_written_and_anything_else_is_not_one() {
        assert_eq!(number(" 7 "), Some(7.0));
        assert_eq!(number("-2.5"), Some(-2.5));
        assert_eq!(number("+3"), Some(3.0));
        assert_eq!(number("1,234"), Some(1234.0));
        assert_eq!(number("seven"), None);
        assert_eq!(number("inf"), None);
        assert_eq!(shown_number(7.0), json!(7));
        assert_eq!(shown_number(-2.5), json!(-2.5));
    }
}
