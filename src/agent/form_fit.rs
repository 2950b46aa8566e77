//! Values a task gives for a form's fields nobody set. The worker refuses a submit click once
//! when selects or prefilled fields were left as the page put them ("not sent yet: …"); the
//! task's own words often hold their values ("Order 3 mugs in size M": Item → Mug, Size → M,
//! Quantity → 3), but a small model told "if the task gives values, set them first" clicks
//! again and sends the form as it is. So the refusal gets the one `browser_fill_form` call that
//! sets the fields whose values the task's words name: a select's option named by a word of the
//! task (a plural too), a number field's value when the task holds one number, an empty text
//! field's when it quotes one text. A click on the same submit right after (nothing set in
//! between) is held back once with that call: it would send the form as the page filled it.

use super::Agent;
use super::dispatch::ToolOutcome;
use crate::llm::Block;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

/// The refusal's lead-in, as the worker writes it (`page.js`, `aim`).
const REFUSAL: &str = "not sent yet: these fields still hold what the page put there: ";

/// The call that sets the refused fields the task names, and the click that sends the form,
/// as a note for the model; `None` when the task names none of them.
pub(super) fn fill_note(task: &str, refusal: &str, page: &str) -> Option<String> {
    let listed = refusal.split_once(REFUSAL)?.1.split(". If the task").next()?;
    let numbers: Vec<&str> = words(task).filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
    let mut quoted = quoted(task);
    let fields: Vec<_> = listed
        .split("; ")
        .filter_map(|field| {
            let r = field.strip_prefix('[')?.split_once(']')?.0;
            let value = value_for(task, &numbers, &mut quoted, super::snapshot::line_of(page, r)?)?;
            Some(json!({"selector": format!("ref={r}"), "value": value}))
        })
        .collect();
    if fields.is_empty() {
        return None;
    }
    let send = refusal.rsplit('`').nth(1).map(|s| format!(", then click `{s}`")).unwrap_or_default();
    Some(format!("The task's words give these values: browser_fill_form {}{send}.", json!({ "fields": fields })))
}

impl Agent {
    /// A refused submit click: add the fill the task's words give, if any, and remember it.
    pub(super) fn point_at_form_values(&mut self, name: &str, input: &Value, outcome: &mut ToolOutcome) {
        if !outcome.is_error || name != Tool::BrowserClick.name() {
            return;
        }
        let (task, page) = (self.record.instruction.as_deref(), self.last_page.as_deref());
        let refusal = super::context::first_text(&outcome.content);
        if let Some(note) = task.zip(page).and_then(|(task, page)| fill_note(task, &refusal, page)) {
            outcome.content.push(Block::text(note.clone()));
            self.pending_fill = input["selector"].as_str().map(|s| (s.to_string(), note));
        }
    }

    /// The same submit clicked again right after its refusal named the fill: held back once.
    pub(super) fn held_submit(&mut self, name: &str, input: &Value) -> Option<ToolOutcome> {
        let (selector, note) = self.pending_fill.take()?;
        let again = name == Tool::BrowserClick.name() && input["selector"].as_str() == Some(selector.as_str());
        again.then(|| {
            ToolOutcome::error(format!(
                "Not clicked: the form still holds what the page put there, not what the task says, so it \
                 would be sent wrong. {note} (Clicking `{selector}` once more sends it as it is.)"
            ))
        })
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
    const REFUSED: &str = "not sent yet: these fields still hold what the page put there: [e4] \"Item\": \
        \"Choose…\"; [e5] \"Size\": \"S\"; [e6] \"Quantity\": \"1\". If the task gives values for them, set them \
        first (browser_select_option, browser_fill_form); to send the form as it is, click `ref=e7` again";

    #[test]
    fn the_task_s_words_fill_the_fields_it_names() {
        let note = fill_note("Order 3 mugs in size M.", REFUSED, PAGE).unwrap();
        assert_eq!(
            note,
            "The task's words give these values: browser_fill_form {\"fields\":[{\"selector\":\"ref=e4\",\
             \"value\":\"Mug\"},{\"selector\":\"ref=e5\",\"value\":\"M\"},{\"selector\":\"ref=e6\",\"value\":\"3\"}]}, \
             then click `ref=e7`."
        );
        let caps = fill_note("Order two caps, size L", REFUSED, PAGE).unwrap();
        assert!(caps.contains("\"Cap\"") && caps.contains("\"L\"") && !caps.contains("ref=e6"), "{caps}");
    }

    #[test]
    fn a_quoted_text_fills_an_empty_search_field() {
        let page = "[e4] input search \"Search\" name=q\n[e5] button \"Search\"";
        let refused = "not sent yet: these fields still hold what the page put there: [e4] \"Search\": empty. If the \
            task gives values for them, set them first; to send the form as it is, click `ref=e5` again";
        let note = fill_note("Search the catalogue for \"lamp\" and save the first price.", refused, page).unwrap();
        assert!(note.contains("{\"selector\":\"ref=e4\",\"value\":\"lamp\"}"), "{note}");
        assert_eq!(fill_note("Search the catalogue for lamps.", refused, page), None, "nothing quoted");
    }

    #[test]
    fn nothing_named_gives_no_note() {
        assert_eq!(fill_note("Send the form as it is, a test", REFUSED, PAGE), None);
        assert_eq!(fill_note("Order 3 mugs", "the form was not sent: [e4] \"Item\": required", PAGE), None);
    }
}
