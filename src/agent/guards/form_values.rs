//! `form_values` (small profile, after a result; before a call, as a step): a submit the worker
//! refused as `form_unset` gets the one `browser_fill_form` call whose values the task's own
//! words name (an option it names, its one number, its one quoted text); the same submit
//! clicked again right after is held once with that call, and clicked a third time the
//! controller makes the fill (a step of its own, through the pipeline once more), then the click.
//!
//! Invariant: the controller fills only values the task's words name, and only after the model
//! was told the call twice and clicked to send anyway; it reads the worker's typed refusal,
//! never its words.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit, Verdict};
use crate::llm::Block;
use crate::protocol::guards::Guard;
use crate::protocol::refusal::Refusal;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::FormValues,
    modes: Modes::ALL,
    evidence: "own 14, three repeats: 5 → 1. MiniWoB, three repeats: 3 → 3. Stays.",
};

/// A refused submit and the fill the task's words give for it.
pub(in crate::agent) struct PendingFill {
    /// The submit's selector, as the model wrote it.
    selector: String,
    /// `browser_fill_form`'s arguments.
    fill: Value,
    /// The note that says both calls.
    note: String,
    /// The click after the refusal was held back already.
    held: bool,
}

/// The `browser_fill_form` arguments that set the refused fields the task names, and the note
/// that tells the model to make that call and then click; `None` when the task names none.
/// Each field is read as the worker typed it (`kind`, `value`, a select's `options`).
fn fill_for(task: &str, refusal: &Value) -> Option<(Value, String)> {
    let numbers: Vec<&str> = words(task).filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
    // "type it and press "Submit"": the submit's own name is not a value for its fields.
    let button = refusal["text"].as_str().unwrap_or_default().trim().to_lowercase();
    let mut quoted: Vec<&str> = quoted(task).into_iter().filter(|q| q.trim().to_lowercase() != button).collect();
    let fields: Vec<_> = refusal["fields"]
        .as_array()?
        .iter()
        .filter_map(|field| {
            let r = field["ref"].as_str()?;
            let value = value_for(task, &numbers, &mut quoted, field)?;
            Some(json!({"selector": format!("ref={r}"), "value": value}))
        })
        .collect();
    if fields.is_empty() {
        return None;
    }
    let fill = json!({ "fields": fields });
    let send = refusal["selector"].as_str().map(|s| format!(", then click `{s}`")).unwrap_or_default();
    let note = format!("The task's words give these values: browser_fill_form {fill}{send}.");
    Some((fill, note))
}

impl Agent {
    /// After a result: a refused submit click gets the fill the task's words give, if any, and
    /// it is remembered.
    pub(in crate::agent) fn point_at_form_values(&mut self, call: &Call, outcome: &mut ToolOutcome) {
        if call.name != Tool::BrowserClick.name() || outcome.refused() != Some(Refusal::FormUnset) {
            return;
        }
        let refusal = outcome.refusal.clone().unwrap_or_default();
        let found = self.record.instruction.as_deref().and_then(|task| fill_for(task, &refusal));
        if let (Some((fill, note)), Some(selector)) = (found, call.input["selector"].as_str()) {
            self.fire(Guard::FormValues, "the task's values for the fields nobody set named");
            outcome.content.push(Block::text(note.clone()));
            let pending = PendingFill { selector: selector.to_string(), fill, note, held: false };
            self.guard_state.pending_fill = Some(pending);
        }
    }

    /// Before a call, as a step: the same submit clicked again right after its refusal named
    /// the fill is held back once; clicked again right after that, filled with the task's
    /// values and sent. Any other call in between drops the pending fill.
    pub(in crate::agent) fn insisted_submit(&mut self, call: &mut Call) -> Verdict {
        let Some(mut pending) = self.guard_state.pending_fill.take() else { return Verdict::Go };
        let again = call.name == Tool::BrowserClick.name()
            && call.input["selector"].as_str() == Some(pending.selector.as_str());
        if !again {
            return Verdict::Go;
        }
        if pending.held {
            return self.fill_then_send(&pending, call);
        }
        self.fire(Guard::FormValues, "the same submit clicked again: held once with the task's values");
        let held = ToolOutcome::error(format!(
            "Not clicked: the form still holds what the page put there, not what the task says, so it \
             would be sent wrong. {} (Clicking `{}` once more fills in these values and sends it.)",
            pending.note, pending.selector
        ));
        pending.held = true;
        self.guard_state.pending_fill = Some(pending);
        Verdict::Held(held)
    }

    /// The fill the task's words give (a step of its own: logged, replayable), then the click
    /// goes on along the path, said to have been filled first (not sent if the fill failed).
    fn fill_then_send(&mut self, pending: &PendingFill, click: &mut Call) -> Verdict {
        self.fire(Guard::FormValues, "submit clicked a third time: filled with the task's values first");
        let filled = self.run_call(Call::new(Tool::BrowserFillForm.name(), &pending.fill, click.depth + 1));
        if filled.is_error {
            return Verdict::Held(filled);
        }
        click.first = Some(format!("The form was filled first with the task's values: {}.", pending.fill["fields"]));
        Verdict::Go
    }
}

/// The value the task names for a refused field, by its kind: a select's option it names (one
/// that takes several: each it names, as the worker takes them, "Ola, Missie"), a number
/// field's one number, an empty text field's one quoted text (`Search for "lamp"`; taken by
/// the first such field).
fn value_for(task: &str, numbers: &[&str], quoted: &mut Vec<&str>, field: &Value) -> Option<String> {
    let named = || -> Option<Vec<&str>> {
        let options = field["options"].as_array()?.iter().filter_map(Value::as_str);
        Some(options.filter(|o| names(task, o)).collect())
    };
    match field["kind"].as_str()? {
        "select" => named().filter(|n| n.len() == 1).map(|n| n[0].to_string()),
        "select-multiple" => named().filter(|n| !n.is_empty()).map(|n| n.join(", ")),
        "number" => (numbers.len() == 1).then(|| numbers[0].to_string()),
        "text" => (field["value"] == "" && quoted.len() == 1).then(|| quoted.remove(0).to_string()),
        _ => None,
    }
}

/// The texts a task quotes ("lamp", “lamp”).
fn quoted(task: &str) -> Vec<&str> {
    task.split(['"', '“', '”']).skip(1).step_by(2).filter(|q| !q.trim().is_empty()).collect()
}

/// Whether the task names an option: as one of its words (a plural too; a one-letter option
/// only as written, so "a" is not option "A"), or a several-word option as a phrase.
fn names(task: &str, option: &str) -> bool {
    let option = option.trim();
    if option.is_empty() || option.ends_with('…') {
        return false;
    }
    if option.contains(' ') {
        return task.to_lowercase().contains(&option.to_lowercase());
    }
    let lower = option.to_lowercase();
    words(task).any(|w| match option.chars().count() {
        1 => w == option,
        _ => {
            let w = w.to_lowercase();
            w == lower || w.strip_suffix('s').is_some_and(|s| s == lower || s.strip_suffix('e') == Some(&lower))
        }
    })
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused field as the worker types it.
    fn field(r: &str, kind: &str, value: &str) -> Value {
        json!({"ref": r, "label": "x", "kind": kind, "value": value})
    }

    fn select(r: &str, value: &str, options: &[&str]) -> Value {
        json!({"ref": r, "label": "x", "kind": "select", "value": value, "options": options})
    }

    fn refused(fields: Vec<Value>, selector: &str) -> Value {
        json!({"refused": "form_unset", "selector": selector, "fields": fields})
    }

    /// The order form: item and size selects at what the page chose, a quantity of 1.
    fn order() -> Value {
        let item = select("e4", "Choose…", &["Choose…", "Mug", "T-shirt", "Cap"]);
        refused(vec![item, select("e5", "S", &["S", "M", "L"]), field("e6", "number", "1")], "ref=e7")
    }

    #[test]
    fn the_task_s_words_fill_the_fields_it_names() {
        let note = fill_for("Order 3 mugs in size M.", &order()).unwrap().1;
        assert_eq!(
            note,
            "The task's words give these values: browser_fill_form {\"fields\":[{\"selector\":\"ref=e4\",\
             \"value\":\"Mug\"},{\"selector\":\"ref=e5\",\"value\":\"M\"},{\"selector\":\"ref=e6\",\"value\":\"3\"}]}, \
             then click `ref=e7`."
        );
        let caps = fill_for("Order two caps, size L", &order()).unwrap().1;
        assert!(caps.contains("\"Cap\"") && caps.contains("\"L\"") && !caps.contains("ref=e6"), "{caps}");
    }

    #[test]
    fn a_quoted_text_fills_an_empty_search_field() {
        let refused = refused(vec![field("e4", "text", "")], "ref=e5");
        let note = fill_for("Search the catalogue for \"lamp\" and save the first price.", &refused).unwrap().1;
        assert!(note.contains("{\"selector\":\"ref=e4\",\"value\":\"lamp\"}"), "{note}");
        assert_eq!(fill_for("Search the catalogue for lamps.", &refused), None, "nothing quoted");
        let mut named = refused.clone();
        named["text"] = json!("Submit");
        let task = "Find the 2nd word in the paragraph, type it into the textbox and press \"Submit\".";
        assert_eq!(fill_for(task, &named), None, "the button's own name is not a value");
    }

    #[test]
    fn a_select_that_takes_several_gets_every_option_the_task_names() {
        let list = json!({"ref": "e1", "label": "x", "kind": "select-multiple", "value": "",
            "options": ["Ola", "Lorene", "Missie", "Giacinta"]});
        let (fill, _) = fill_for(
            "Select Ola, Missie from the scroll list and click Submit.",
            &refused(vec![list.clone()], "ref=e2"),
        )
        .unwrap();
        assert_eq!(fill, json!({"fields": [{"selector": "ref=e1", "value": "Ola, Missie"}]}));
        // A select that takes one is left alone when the task names two of its options.
        let one = select("e1", "", &["Ola", "Lorene", "Missie"]);
        assert_eq!(fill_for("Select Ola, Missie and click Submit.", &refused(vec![one], "ref=e2")), None);
        assert_eq!(fill_for("Select nobody and click Submit.", &refused(vec![list], "ref=e2")), None);
    }

    #[test]
    fn nothing_named_gives_no_note() {
        assert_eq!(fill_for("Send the form as it is, a test", &order()), None);
        let invalid = json!({"refused": "form_invalid", "fields": []});
        assert_eq!(fill_for("Order 3 mugs", &invalid), None);
        let untyped = refused(vec![json!({"ref": "e6", "label": "Quantity", "value": "1"})], "ref=e7");
        assert_eq!(fill_for("Order 3 mugs", &untyped), None, "a field of no known kind is left alone");
    }

    #[test]
    fn guard_form_values_fires_on_an_order_form_the_task_names() {
        let (fill, note) = fill_for("Order 2 caps in size S.", &order()).unwrap();
        assert_eq!(fill["fields"].as_array().map(Vec::len), Some(3), "{fill}");
        assert!(note.ends_with("then click `ref=e7`."), "{note}");
    }

    #[test]
    fn guard_form_values_is_quiet_on_a_sign_in_form_and_a_search_already_typed() {
        let sign_in = refused(vec![field("e2", "email", "bob@example.test"), field("e3", "password", "")], "ref=e4");
        assert_eq!(fill_for("Sign in and download the 2024 report.", &sign_in), None, "the year is no email");
        let typed = refused(vec![field("e4", "text", "desk lamp")], "ref=e5");
        let task = "Search the catalogue for \"lamp\" and save the first price.";
        assert_eq!(fill_for(task, &typed), None, "what the model typed stays");
    }
}
