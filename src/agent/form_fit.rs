//! Form values (small profile): a submit the worker refused as `form_unset` gets the one
//! `browser_fill_form` call whose values the task's own words name (an option it names, its one
//! number, its one quoted text); the same submit clicked again right after is held once with
//! that call, and clicked a third time the controller makes the fill, then the click
//! (`form_values`). Values typed into a page that nothing the session saw holds are held once
//! (`unseen_typing`).
//!
//! Invariant: the controller fills only values the task's words name, and only after the model
//! was told the call twice and clicked to send anyway; it reads the worker's typed refusal,
//! never its words.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Block;
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

/// A refused submit and the fill the task's words give for it.
pub(super) struct PendingFill {
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
pub(super) fn fill_for(task: &str, refusal: &Value, page: &str) -> Option<(Value, String)> {
    let numbers: Vec<&str> = words(task).filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
    let mut quoted = quoted(task);
    let fields: Vec<_> = refusal["fields"]
        .as_array()?
        .iter()
        .filter_map(|field| {
            let r = field["ref"].as_str()?;
            let value = value_for(task, &numbers, &mut quoted, super::snapshot::line_of(page, r)?)?;
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
    /// A refused submit click: add the fill the task's words give, if any, and remember it.
    pub(super) fn point_at_form_values(&mut self, name: &str, input: &Value, outcome: &mut ToolOutcome) {
        if name != Tool::BrowserClick.name() || outcome.refused() != Some("form_unset") {
            return;
        }
        if !self.guard_on(Guard::FormValues) {
            return;
        }
        let (task, page) = (self.record.instruction.as_deref(), self.last_page.as_deref());
        let refusal = outcome.refusal.clone().unwrap_or_default();
        let found = task.zip(page).and_then(|(task, page)| fill_for(task, &refusal, page));
        if let (Some((fill, note)), Some(selector)) = (found, input["selector"].as_str()) {
            self.fire(Guard::FormValues, "the task's values for the fields nobody set named");
            outcome.content.push(Block::text(note.clone()));
            self.pending_fill = Some(PendingFill { selector: selector.to_string(), fill, note, held: false });
        }
    }

    /// The same submit clicked again right after its refusal named the fill: held back once;
    /// clicked again right after that, filled with the task's values and sent. Any other call
    /// in between drops the pending fill.
    pub(super) fn insisted_submit(&mut self, name: &str, input: &Value) -> Option<ToolOutcome> {
        let mut pending = self.pending_fill.take()?;
        let again = name == Tool::BrowserClick.name() && input["selector"].as_str() == Some(pending.selector.as_str());
        if !again {
            return None;
        }
        if pending.held {
            return Some(self.fill_then_send(&pending, input));
        }
        self.fire(Guard::FormValues, "the same submit clicked again: held once with the task's values");
        let held = ToolOutcome::error(format!(
            "Not clicked: the form still holds what the page put there, not what the task says, so it \
             would be sent wrong. {} (Clicking `{}` once more fills in these values and sends it.)",
            pending.note, pending.selector
        ));
        pending.held = true;
        self.pending_fill = Some(pending);
        Some(held)
    }

    /// Values typed into a page that nothing the session has seen holds (a small model asked a
    /// question fills the contact form with "John Doe" and sends it): held back once, like a
    /// guessed answer (`grounding.rs`); the same call again at once is made.
    pub(super) fn invented_values(&mut self, tool: Tool, input: &Value) -> Option<ToolOutcome> {
        let values: Vec<&str> = match tool {
            Tool::BrowserType => vec![input["text"].as_str()?],
            Tool::BrowserFillForm => input["fields"].as_array()?.iter().filter_map(|f| f["value"].as_str()).collect(),
            _ => return None,
        };
        // A replay types its parameters (`Max` for the recorded `Zoe`): the user's values.
        if self.replaying {
            return None;
        }
        let unseen: Vec<String> = values.iter().flat_map(|v| self.grounding.unseen(v)).collect();
        if unseen.is_empty() || !self.grounding.hold(&values.join("\n"), self.step) {
            return None;
        }
        let words = unseen.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ");
        self.fire(Guard::UnseenTyping, &format!("{} held back: {words} seen nowhere", tool.name()));
        let pages = self.grounding.unopened();
        let find =
            if pages.is_empty() { String::new() } else { format!(" (pages not opened yet: {})", pages.join(", ")) };
        Some(ToolOutcome::guess_held(format!(
            "Not typed: {words} is in nothing this session has seen (the task, the pages), so it may be made up. Type \
             only values the task gives; if the task does not ask you to send this form, leave it and find what it \
             asks for{find}. If the values are right, make the same call again now. {}",
            self.task_line()
        )))
    }

    /// The fill the task's words give, then the click that sends the form (not sent if the fill
    /// failed).
    fn fill_then_send(&mut self, pending: &PendingFill, click: &Value) -> ToolOutcome {
        self.fire(Guard::FormValues, "submit clicked a third time: filled with the task's values first");
        // A step of its own (logged, replayable); the click is the call being run.
        let filled = self.run_tool(Tool::BrowserFillForm.name(), &pending.fill);
        if filled.is_error {
            return filled;
        }
        let mut sent = self.dispatch_watched(Tool::BrowserClick.name(), click);
        sent.content.insert(
            0,
            Block::text(format!("The form was filled first with the task's values: {}.", pending.fill["fields"])),
        );
        sent
    }
}

/// The value the task names for the field a snapshot line shows: a select's option it names,
/// a number field's one number, an empty text field's one quoted text (`Search for "lamp"`;
/// taken by the first such field).
fn value_for(task: &str, numbers: &[&str], quoted: &mut Vec<&str>, line: &str) -> Option<String> {
    if let Some(select) = line.strip_prefix("select ") {
        let options = select.split_once(": ")?.1.split(" | ").map(|o| o.trim_end_matches(" (selected)"));
        let named: Vec<&str> = options.map(|o| o.split('=').next().unwrap_or(o)).filter(|o| names(task, o)).collect();
        return (named.len() == 1).then(|| named[0].to_string());
    }
    if line.starts_with("input number ") {
        return (numbers.len() == 1).then(|| numbers[0].to_string());
    }
    let text_field = ["input text ", "input search ", "textarea "].iter().any(|k| line.starts_with(k));
    (text_field && !line.contains(" value=") && quoted.len() == 1).then(|| quoted.remove(0).to_string())
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

    const PAGE: &str = "[e3] heading 1 \"Order form\"\n\
        [e4] select \"Item\" name=item: Choose… (selected) | Mug=mug | T-shirt=tshirt | Cap=cap\n\
        [e5] select \"Size\" name=size: S (selected) | M | L\n\
        [e6] input number \"Quantity\" name=quantity value=\"1\"\n\
        [e7] button \"Place order\"";
    fn refused(refs: &[&str], selector: &str) -> Value {
        let fields: Vec<Value> = refs.iter().map(|r| json!({"ref": r, "label": "x", "value": ""})).collect();
        json!({"refused": "form_unset", "selector": selector, "fields": fields})
    }

    #[test]
    fn the_task_s_words_fill_the_fields_it_names() {
        let form = refused(&["e4", "e5", "e6"], "ref=e7");
        let note = fill_for("Order 3 mugs in size M.", &form, PAGE).unwrap().1;
        assert_eq!(
            note,
            "The task's words give these values: browser_fill_form {\"fields\":[{\"selector\":\"ref=e4\",\
             \"value\":\"Mug\"},{\"selector\":\"ref=e5\",\"value\":\"M\"},{\"selector\":\"ref=e6\",\"value\":\"3\"}]}, \
             then click `ref=e7`."
        );
        let caps = fill_for("Order two caps, size L", &form, PAGE).unwrap().1;
        assert!(caps.contains("\"Cap\"") && caps.contains("\"L\"") && !caps.contains("ref=e6"), "{caps}");
    }

    #[test]
    fn a_quoted_text_fills_an_empty_search_field() {
        let page = "[e4] input search \"Search\" name=q\n[e5] button \"Search\"";
        let refused = refused(&["e4"], "ref=e5");
        let note = fill_for("Search the catalogue for \"lamp\" and save the first price.", &refused, page).unwrap().1;
        assert!(note.contains("{\"selector\":\"ref=e4\",\"value\":\"lamp\"}"), "{note}");
        assert_eq!(fill_for("Search the catalogue for lamps.", &refused, page), None, "nothing quoted");
    }

    #[test]
    fn nothing_named_gives_no_note() {
        assert_eq!(fill_for("Send the form as it is, a test", &refused(&["e4", "e5", "e6"], "ref=e7"), PAGE), None);
        let invalid = json!({"refused": "form_invalid", "fields": []});
        assert_eq!(fill_for("Order 3 mugs", &invalid, PAGE), None);
    }

    #[test]
    fn guard_form_values_fires_on_an_order_form_the_task_names() {
        let (fill, note) = fill_for("Order 2 caps in size S.", &refused(&["e4", "e5", "e6"], "ref=e7"), PAGE).unwrap();
        assert_eq!(fill["fields"].as_array().map(Vec::len), Some(3), "{fill}");
        assert!(note.ends_with("then click `ref=e7`."), "{note}");
    }

    #[test]
    fn guard_form_values_is_quiet_on_a_sign_in_form_and_a_search_already_typed() {
        let sign_in = "[e2] input email \"Email\" name=user value=\"bob@example.test\"\n\
                       [e3] input password \"Password\" name=pass\n[e4] button \"Sign in\"";
        let task = "Sign in and download the 2024 report.";
        assert_eq!(fill_for(task, &refused(&["e2"], "ref=e4"), sign_in), None, "the task's year is no email");
        let search = "[e4] input search \"Search\" name=q value=\"desk lamp\"\n[e5] button \"Go\"";
        let task = "Search the catalogue for \"lamp\" and save the first price.";
        assert_eq!(fill_for(task, &refused(&["e4"], "ref=e5"), search), None, "what the model typed stays");
    }
}
