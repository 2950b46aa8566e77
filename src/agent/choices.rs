//! The turn's tools narrowed to what the page the model last saw offers, for JSON action mode's
//! reply schema (`llm/reply_schema.rs`) where the endpoint enforces one: the model picks an
//! element instead of writing one. A click or hover names one of the page's refs; a field to
//! type into, one of its fields; a form fill, one of its fields, boxes or selects; a select's
//! value, one of the options that select lists.
//!
//! Guarantees: a tool is narrowed only where the page gives it a choice (else it goes as it
//! is); nothing reads the task's words; the snapshot's line grammar is `snapshot/line.rs`'s.
//! Not a guard: nothing is repaired or redirected; the server keeps the reply to the choices.

use super::snapshot::{Element, elements};
use crate::llm::ToolDef;
use serde_json::{Value, json};

/// `tools` with their element arguments narrowed to the elements of `page`.
pub(super) fn narrowed(tools: &[ToolDef], page: &str) -> Vec<ToolDef> {
    let found = elements(page);
    tools.iter().map(|t| narrow(t, &found)).collect()
}

fn narrow(tool: &ToolDef, page: &[Element<'_>]) -> ToolDef {
    let refs = |keep: fn(&Element<'_>) -> bool| -> Vec<String> {
        let mut out: Vec<String> = page.iter().filter(|e| keep(e)).map(|e| format!("ref={}", e.id)).collect();
        out.dedup();
        out
    };
    let mut schema = tool.input_schema.clone();
    match tool.name {
        "browser_click" | "browser_hover" => one_of(&mut schema["properties"]["selector"], refs(|_| true)),
        "browser_type" => one_of(&mut schema["properties"]["selector"], refs(|e| e.takes_text())),
        "browser_fill_form" => {
            let fields = refs(|e| e.takes_text() || e.is_box() || e.kind == "select");
            one_of(&mut schema["properties"]["fields"]["items"]["properties"]["selector"], fields);
        }
        "browser_select_option" => schema = by_select(&schema, page).unwrap_or(schema),
        _ => {}
    }
    ToolDef { name: tool.name, description: tool.description, input_schema: schema }
}

/// The argument `at` as one of `choices` (its description kept); left as it is without any.
fn one_of(at: &mut Value, choices: Vec<String>) {
    if choices.is_empty() || !at.is_object() {
        return;
    }
    at["enum"] = json!(choices);
    if let Some(obj) = at.as_object_mut() {
        obj.remove("type");
    }
}

/// A select's choice as one branch per select of the page: its ref, and one of its options
/// (a select whose list the snapshot cut short, or that takes several, takes any text).
fn by_select(schema: &Value, page: &[Element<'_>]) -> Option<Value> {
    let branches: Vec<Value> = page
        .iter()
        .filter(|e| e.kind == "select")
        .map(|e| {
            let value = match e.options() {
                Some(options) if !options.is_empty() => json!({"enum": options}),
                _ => json!({"type": "string"}),
            };
            json!({"type": "object", "properties": {"selector": {"const": format!("ref={}", e.id)}, "value": value},
                "required": ["selector", "value"], "additionalProperties": false})
        })
        .collect();
    if branches.is_empty() {
        return None;
    }
    let mut narrowed = json!({"anyOf": branches});
    if let Some(d) = schema.get("description") {
        narrowed["description"] = d.clone();
    }
    Some(narrowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tools::Tool;

    fn def(tool: Tool) -> ToolDef {
        let spec = tool.spec();
        ToolDef { name: tool.name(), description: spec.description, input_schema: spec.input_schema.to_value() }
    }

    const PAGE: &str = "Page: \"Order\" — http://h/order\n[e1] heading 1 \"Order\"\n\
        [e2] input text \"Name\" name=name\n  [e3] select \"Size\" name=size: S | M (selected) | Mug=mug\n\
        [e4] input checkbox \"Gift\" (not checked)\n[e5] button \"Send\"\ntext \"Total 3\"";

    #[test]
    fn each_element_argument_is_one_of_the_page_s_elements_of_its_kind() {
        let tools = [Tool::BrowserClick, Tool::BrowserType, Tool::BrowserFillForm, Tool::BrowserSelectOption];
        let tools: Vec<ToolDef> = tools.into_iter().map(def).collect();
        let n = narrowed(&tools, PAGE);
        let click = &n[0].input_schema["properties"]["selector"]["enum"];
        assert_eq!(click, &json!(["ref=e1", "ref=e2", "ref=e3", "ref=e4", "ref=e5"]));
        assert_eq!(n[1].input_schema["properties"]["selector"]["enum"], json!(["ref=e2"]), "only a text field");
        let fill = &n[2].input_schema["properties"]["fields"]["items"]["properties"]["selector"]["enum"];
        assert_eq!(fill, &json!(["ref=e2", "ref=e3", "ref=e4"]));
        let select = &n[3].input_schema["anyOf"][0]["properties"];
        assert_eq!(select["selector"], json!({"const": "ref=e3"}));
        assert_eq!(select["value"]["enum"], json!(["S", "M", "Mug=mug"]), "the options as the worker takes them");
    }

    #[test]
    fn a_page_without_elements_leaves_the_tools_as_they_are() {
        let tools = vec![def(Tool::BrowserClick), def(Tool::BrowserSelectOption)];
        let n = narrowed(&tools, "Page: \"Empty\" — http://h/\ntext \"Nothing here\"");
        assert_eq!(n[0].input_schema, tools[0].input_schema);
        assert_eq!(n[1].input_schema, tools[1].input_schema);
    }
}
