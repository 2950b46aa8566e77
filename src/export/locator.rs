//! The locator a person would write for the element a step acted on, as Playwright Python: from
//! the worker's description of it when the step ran (`locate.js`), the first way that named it
//! alone then — a field by its label, placeholder, role and name; anything else by its role and
//! accessible name, or its text; then a test id, an id, the CSS path last. Without a description
//! the step's own selector is read as the worker reads it (`text=`, `name=`, `:contains()`); a
//! bare ref names nothing outside the session, and is said so.

use super::values::py;
use serde_json::Value;

/// The roles Playwright's `get_by_role` takes that a description may carry.
const ROLES: &[&str] = &[
    "button",
    "link",
    "checkbox",
    "radio",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "option",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "heading",
    "img",
    "cell",
    "columnheader",
    "rowheader",
    "listitem",
    "treeitem",
    "row",
    "dialog",
    "navigation",
    "region",
];

/// Why no locator can be written for a step's element (the script's `fail(…)` says it).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoLocator {
    #[error("the step names no element")]
    NoElement,
    #[error("it named `{0}`, a ref of the session's page, and the worker did not describe the element")]
    PageRef(String),
    /// One field of a form (numbered from 1).
    #[error("field {number}: {cause}")]
    Field { number: usize, cause: Box<NoLocator> },
    /// One field of a login (`username`, `password`, `submit`…).
    #[error("the login's {field} field: {cause}")]
    LoginField { field: &'static str, cause: Box<NoLocator> },
}

/// `page.get_by_…(…)` for the element, or why none can be written.
pub(crate) fn locator(described: Option<&Value>, selector: Option<&str>) -> Result<String, NoLocator> {
    if let Some(found) = described.filter(|d| d.is_object()).and_then(from_description) {
        return Ok(found);
    }
    match selector {
        Some(s) => from_selector(s),
        None => Err(NoLocator::NoElement),
    }
}

/// `, exact=True` where only the whole text names it alone.
fn exact(how: &Value) -> &'static str {
    if how == "exact" { ", exact=True" } else { "" }
}

fn from_description(d: &Value) -> Option<String> {
    let text = |k: &str| d[k].as_str().filter(|t| !t.is_empty());
    let unique = &d["unique"];
    let alone = |k: &str| unique[k] == "loose" || unique[k] == "exact";
    let by_role = || {
        let role = text("role").filter(|r| ROLES.contains(r))?;
        let name = text("name").filter(|_| alone("role"))?;
        Some(format!("page.get_by_role({}, name={}{})", py(role), py(name), exact(&unique["role"])))
    };
    let by_label = || {
        Some(format!("page.get_by_label({}{})", py(text("label").filter(|_| alone("label"))?), exact(&unique["label"])))
    };
    let by_placeholder = || {
        let p = text("placeholder").filter(|_| alone("placeholder"))?;
        Some(format!("page.get_by_placeholder({}{})", py(p), exact(&unique["placeholder"])))
    };
    let by_text =
        || Some(format!("page.get_by_text({}{})", py(text("text").filter(|_| alone("text"))?), exact(&unique["text"])));
    let by_testid =
        || Some(format!("page.get_by_test_id({})", py(text("testid").filter(|_| unique["testid"] == true)?)));
    let by_id = || Some(format!("page.locator({})", py(&id_selector(text("id").filter(|_| unique["id"] == true)?))));
    let field = matches!(text("tag"), Some("input" | "select" | "textarea"));
    let found = if field {
        by_label().or_else(by_placeholder).or_else(by_role).or_else(by_testid).or_else(by_id)
    } else {
        by_role().or_else(by_text).or_else(by_testid).or_else(by_id)
    };
    let found = found.or_else(|| text("css").map(|css| format!("page.locator({})", py(css))))?;
    Some(match in_frames(d) {
        Some(scope) => found.replacen("page", &scope, 1),
        None => found,
    })
}

/// `page.frame_locator(…)` down to the frame the element is in, or None on the top page.
fn in_frames(d: &Value) -> Option<String> {
    let frames = d["frames"].as_array().filter(|f| !f.is_empty())?;
    let mut scope = "page".to_string();
    for f in frames.iter().filter_map(Value::as_str) {
        scope.push_str(&format!(".frame_locator({})", py(f)));
    }
    Some(scope)
}

/// `#id` where the id is a plain CSS name, else the attribute selector.
fn id_selector(id: &str) -> String {
    let plain = id.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain { format!("#{id}") } else { format!("[id={}]", py(id)) }
}

/// The step's own selector, read as the worker's helpers read it (`page.js`'s `findAll`).
fn from_selector(selector: &str) -> Result<String, NoLocator> {
    let s = selector.trim();
    let bare = s.trim_start_matches('[').trim_end_matches(']');
    let refish = bare.strip_prefix("ref=").unwrap_or(bare).trim();
    if refish.len() > 1 && refish.starts_with('e') && refish[1..].chars().all(|c| c.is_ascii_digit()) {
        return Err(NoLocator::PageRef(s.to_string()));
    }
    if let Some(t) = s.strip_prefix("text=") {
        return Ok(format!("page.get_by_text({}).first", py(t.trim_matches(|c| c == '"' || c == '\''))));
    }
    if let Some(name) = s.strip_prefix("name=").or_else(|| s.strip_prefix("ref=")) {
        let name = name.trim_matches(|c| c == '"' || c == '\'');
        let css = format!("[name={n}], [id={n}]", n = py(name));
        return Ok(format!("page.locator({}).first", py(&css)));
    }
    // `button=Go`: a tag and the text it shows.
    if let Some((tag, shown)) =
        s.split_once('=').filter(|(t, _)| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        return Ok(format!("page.locator({}).first", py(&format!("{tag}:has-text({})", py(shown.trim())))));
    }
    Ok(format!("page.locator({}).first", py(&s.replace(":contains(", ":has-text("))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_goes_by_its_label_and_a_button_by_its_role() {
        let field = json!({"tag": "input", "role": "textbox", "name": "Email", "label": "Email", "placeholder": "you@x",
            "unique": {"role": "loose", "label": "exact", "placeholder": "loose"}});
        assert_eq!(locator(Some(&field), Some("ref=e3")).as_deref(), Ok("page.get_by_label(\"Email\", exact=True)"));
        let button = json!({"tag": "input", "type": "submit", "role": "button", "name": "Send order", "unique": {"role": "loose"}});
        assert_eq!(locator(Some(&button), None).as_deref(), Ok("page.get_by_role(\"button\", name=\"Send order\")"));
        let shared = json!({"tag": "div", "text": "Buy", "id": "buy-2", "css": "#x > div", "unique": {"id": true}});
        assert_eq!(locator(Some(&shared), None).as_deref(), Ok("page.locator(\"#buy-2\")"));
        let nothing = json!({"tag": "div", "css": "body > div:nth-of-type(2)", "unique": {}});
        assert_eq!(locator(Some(&nothing), None).as_deref(), Ok("page.locator(\"body > div:nth-of-type(2)\")"));
    }

    #[test]
    fn an_element_in_a_frame_is_found_through_its_frames() {
        let field = json!({"tag": "input", "label": "Card holder", "frames": ["iframe[title=\"Payment\"]", "#inner"],
            "unique": {"label": "loose"}});
        assert_eq!(
            locator(Some(&field), None).as_deref(),
            Ok(
                "page.frame_locator(\"iframe[title=\\\"Payment\\\"]\").frame_locator(\"#inner\").get_by_label(\"Card holder\")"
            )
        );
        let top = json!({"tag": "input", "label": "Name", "frames": [], "unique": {"label": "loose"}});
        assert_eq!(locator(Some(&top), None).as_deref(), Ok("page.get_by_label(\"Name\")"));
    }

    #[test]
    fn a_selector_is_read_as_the_worker_reads_it() {
        assert!(locator(None, Some("ref=e12")).is_err(), "a ref names nothing outside the session");
        assert_eq!(locator(None, Some("text=Sign in")).as_deref(), Ok("page.get_by_text(\"Sign in\").first"));
        assert_eq!(locator(None, Some("#go")).as_deref(), Ok("page.locator(\"#go\").first"));
        assert_eq!(
            locator(None, Some("a:contains(\"Next\")")).as_deref(),
            Ok("page.locator(\"a:has-text(\\\"Next\\\")\").first")
        );
        assert_eq!(
            locator(None, Some("button=Go")).as_deref(),
            Ok("page.locator(\"button:has-text(\\\"Go\\\")\").first")
        );
    }
}
