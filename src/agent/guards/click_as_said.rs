//! `click_as_said` (small profile, before a call, as made): a click on a ref whose element the
//! reply's words (JSON mode: its plan) do not name, while they quote exactly one other link or
//! button (not a text just typed), clicks that one, said so in a note after the result (small
//! models write "click the 'About us' link" and give the ref of the line next to it).
//!
//! Invariant: only a `ref=` click is aimed elsewhere, only at a link or button of the page the
//! model last saw, and the step log records the click that was made.

use super::super::Agent;
use super::super::snapshot::{line, line_of, ref_in};
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ClickAsSaid,
    modes: Modes::ALL,
    evidence: "own 14, this agent, JSON: 1 → 0 (head-office); it never fired in the native runs. MiniWoB: \
               once in the last three formats' runs (read-table-2, JSON, failed); not in the targeted repeats. \
               Stays.",
};

/// Whether `said` (lowercased) quotes `name`: `'about us'`, `"about us\"` (inside JSON), `` `about us` ``.
fn quotes(said: &str, name: &str) -> bool {
    let name = name.to_lowercase();
    ['\'', '"', '`', '“'].iter().any(|q| {
        said.match_indices(&format!("{q}{name}")).any(|(i, m)| {
            let next = said[i + m.len()..].chars().next();
            matches!(next, Some('\'' | '"' | '`' | '”' | '\\'))
        })
    })
}

/// The ref of the link or button a model's words name, when the ref it clicked is another
/// element its words do not name at all: small models write "click the 'About us' link" and
/// give the ref of the line next to it. Only the plan is read when the words have one (JSON
/// mode's `thinking.plan`), and only one element may be named. A name that is also a text the
/// model typed (`typed`: a search term that happens to be a link's name) names nothing.
fn meant_ref(page: &str, r: &str, said: &str, typed: &[String]) -> Option<String> {
    let said = said.to_lowercase();
    let said = said.split_once("\"plan\"").map_or(said.as_str(), |(_, plan)| plan);
    let clicked = line::find(page, r)?.name()?;
    if clicked.trim().is_empty() || said.contains(&clicked.to_lowercase()) {
        return None;
    }
    let named: Vec<(&str, &str)> = line::lines(page)
        .filter(|l| matches!(l.kind(), ("link" | "button", _)))
        .filter_map(|l| Some((l.tag?, l.name()?)))
        .filter(|(_, name)| name.chars().count() >= 3 && quotes(said, name))
        .filter(|(_, name)| !typed.iter().any(|t| t.trim().eq_ignore_ascii_case(name)))
        .collect();
    let first = named.first()?;
    named.iter().all(|(_, name)| name == &first.1).then(|| first.0.to_string())
}

impl Agent {
    /// Before a call: a click aimed at the element the words name.
    pub(in crate::agent) fn click_as_said(&mut self, call: &mut Call) -> Verdict {
        if let Some((meant, note)) = self.meant_click(&call.name, &call.input) {
            self.fire(Guard::ClickAsSaid, &note);
            call.input = meant;
            call.redirected.push(note);
        }
        Verdict::Go
    }

    /// The texts typed into pages in the last two replies (browser_type's text, each
    /// browser_fill_form value).
    fn recently_typed(&self) -> Vec<String> {
        let replies = self.messages.iter().rev().filter(|m| m.role == crate::llm::Role::Assistant).take(2);
        let calls = replies.flat_map(|m| m.content.iter()).filter_map(|b| match b {
            crate::llm::Block::ToolUse { name, input, .. } => Some((name.as_str(), input)),
            _ => None,
        });
        let mut typed = Vec::new();
        for (name, input) in calls {
            if name == Tool::BrowserType.name() {
                typed.extend(input["text"].as_str().map(str::to_string));
            } else if name == Tool::BrowserFillForm.name() {
                let fields = input["fields"].as_array().into_iter().flatten();
                typed.extend(fields.filter_map(|f| f["value"].as_str().map(str::to_string)));
            }
        }
        typed
    }

    /// A click on a ref other than the element the reply's words name (`meant_ref`): the
    /// input with the named ref, and a note saying so.
    fn meant_click(&self, name: &str, input: &Value) -> Option<(Value, String)> {
        if name != Tool::BrowserClick.name() {
            return None;
        }
        let r = ref_in(input["selector"].as_str()?)?;
        let said = self.messages.last().filter(|m| m.role == crate::llm::Role::Assistant)?;
        let said = crate::llm::joined_text(&said.content, "\n");
        let page = self.last_page.as_deref()?;
        let meant = meant_ref(page, r, &said, &self.recently_typed())?;
        let line = |r: &str| line_of(page, r).unwrap_or_default().to_string();
        // The two lines are the page's words.
        let lines = self.boundary.wrap(&format!("ref={r}: {}\nref={meant}: {}", line(r), line(&meant)));
        let note = format!(
            "Your words do not name `ref={r}`; they name `ref={meant}`: that was clicked. The two lines:\n{lines}"
        );
        let mut fixed = input.clone();
        fixed["selector"] = json!(format!("ref={meant}"));
        Some((fixed, note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "[e1] heading 1 \"Acme Tools\"\n[e5] link \"About us\" → http://h/about.html\n\
                        [e6] link \"Contact\" → http://h/contact.html\n[e7] button \"Go\"";

    #[test]
    fn the_element_the_words_name_is_the_one_meant() {
        let json_reply =
            r#"{"thinking": {"observation": "a 'Contact' link", "plan": "Click on the \"About us\" link"}}"#;
        assert_eq!(meant_ref(HOME, "e6", json_reply, &[]).as_deref(), Some("e5"), "the plan names About us");
        assert_eq!(meant_ref(HOME, "e6", "I will click 'about us'.", &[]).as_deref(), Some("e5"));
        assert_eq!(meant_ref(HOME, "e6", "Open the contact page, not 'About us'", &[]), None, "Contact is named too");
        assert_eq!(meant_ref(HOME, "e6", "", &[]), None, "no words");
        assert_eq!(
            meant_ref(HOME, "e6", "click 'About us' or 'Go'", &[]).as_deref(),
            Some("e5"),
            "'Go' is too short to count"
        );
        assert_eq!(meant_ref(HOME, "e6", "about us", &[]), None, "a name not quoted is no naming");
        assert_eq!(meant_ref(HOME, "e6", "'About usability'", &[]), None, "a quoted name ends with its quote");
        assert_eq!(meant_ref(HOME, "e9", "'About us'", &[]), None, "a ref not on the page");
    }

    /// A search form and its results: what `click_as_said` was not written for.
    const SEARCH: &str = "[e2] input search \"Search\" name=q value=\"lamp\"\n[e3] button \"Go\"\n\
                          [e4] link \"Lamps\" → http://h/c/lamps\n[e5] link \"Lamp shades\" → http://h/c/shades";

    #[test]
    fn guard_click_as_said_fires_when_the_words_quote_another_link() {
        let said = "The \"About us\" link should have the address. Clicking it.";
        assert_eq!(meant_ref(HOME, "e7", said, &[]).as_deref(), Some("e5"), "Go clicked, About us meant");
    }

    #[test]
    fn guard_click_as_said_is_quiet_on_a_search_form() {
        // The button it clicks is named, or only the search term is quoted: the click stands.
        assert_eq!(meant_ref(SEARCH, "e3", "I typed 'lamp' into the search box; now I click Go.", &[]), None);
        assert_eq!(meant_ref(SEARCH, "e3", "Searching for 'lamp'.", &[]), None, "a term is no link's name");
        assert_eq!(meant_ref(SEARCH, "e4", "Open the 'Lamps' category.", &[]), None, "the ref it names");
        assert_eq!(meant_ref(SEARCH, "e2", "Type into the search field.", &[]), None, "a field, not a link");
        // The term typed is also a link's name: still the search's button.
        let typed = ["Lamps".to_string()];
        assert_eq!(meant_ref(SEARCH, "e3", "Searching for 'lamps' now.", &typed), None, "a term typed");
        assert_eq!(
            meant_ref(SEARCH, "e3", "Searching for 'lamps' now.", &[]).as_deref(),
            Some("e4"),
            "untyped: a name"
        );
    }
}
