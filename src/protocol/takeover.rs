//! A person taking over a session, and what a session may spend.
//!
//! `POST /sessions/:id/act {tool, input}` and `/resume {note?}` (strict, like every API
//! request); where a person's typing sits in a tool's arguments; the budget asked for in
//! `POST /sessions` (`options.budget`, defaults in `agent.budget`); what the record shows of
//! both while the session runs and after it ends.

use super::tools::Tool;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `POST /sessions/:id/act`: one worker tool, run as the person while the session is paused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActRequest {
    pub tool: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Where a person's typing sits in a tool's arguments, as JSON pointers (`/text`,
/// `/fields/0/value`): text typed into a page or a window, a prompt's answer, and on a shell
/// the command run and a file's content. It may be a password or a code sent to them: it goes
/// to the worker, the model and the record get its length only (`hide_typed`).
pub fn typed_pointers(tool: Tool, input: &Value) -> Vec<String> {
    let key = match tool {
        Tool::BrowserType | Tool::TypeText | Tool::BrowserAnswerDialog => "text",
        Tool::RunCommand => "command",
        Tool::WriteFile => "content",
        Tool::BrowserFillForm => {
            let fields = input["fields"].as_array().into_iter().flatten().enumerate();
            return fields.filter(|(_, f)| f["value"].is_string()).map(|(i, _)| format!("/fields/{i}/value")).collect();
        }
        _ => return Vec::new(),
    };
    if input[key].is_string() { vec![format!("/{key}")] } else { Vec::new() }
}

/// `input` with the text at each pointer replaced by its length.
pub fn hide_typed(input: &Value, pointers: &[String]) -> Value {
    let mut shown = input.clone();
    for pointer in pointers {
        if let Some(v) = shown.pointer_mut(pointer) {
            let count = v.as_str().map_or(0, |t| t.chars().count());
            *v = json!(format!("[{count} characters typed by the person]"));
        }
    }
    shown
}

/// `POST /sessions/:id/resume`: what the person wants the model to know.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    #[serde(default)]
    pub note: Option<String>,
}

/// Limits on a session: any may be left out. Tokens count input + output + cache writes, and
/// cache reads at a tenth (what they cost beside fresh input); `usd` needs the endpoint's price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u64>,
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        self.tokens.is_none() && self.usd.is_none() && self.seconds.is_none()
    }

    /// Each limit the request sets, else the default's.
    pub fn or(self, default: Budget) -> Budget {
        Budget {
            tokens: self.tokens.or(default.tokens),
            usd: self.usd.or(default.usd),
            seconds: self.seconds.or(default.seconds),
        }
    }

    /// The first limit that is not a positive number, named.
    pub fn invalid(&self) -> Option<String> {
        if self.tokens == Some(0) {
            return Some("budget.tokens must be at least 1".into());
        }
        if self.seconds == Some(0) {
            return Some("budget.seconds must be at least 1".into());
        }
        match self.usd {
            Some(usd) if !(usd.is_finite() && usd > 0.0) => Some(format!("budget.usd must be above 0 (got {usd})")),
            _ => None,
        }
    }
}

/// Which limit a session reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    Tokens,
    Usd,
    Seconds,
}

impl BudgetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKind::Tokens => "tokens",
            BudgetKind::Usd => "usd",
            BudgetKind::Seconds => "seconds",
        }
    }

    /// The limit in words: "the token budget".
    pub fn noun(self) -> &'static str {
        match self {
            BudgetKind::Tokens => "token",
            BudgetKind::Usd => "dollar",
            BudgetKind::Seconds => "time",
        }
    }
}

/// What a session has spent against its budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub tokens: u64,
    /// Only with a price for the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    /// Wall time since the session was created, waits for a worker included, time a person
    /// held it (`POST /pause`, or from their first act in a pause the model asked for) not.
    pub seconds: u64,
}

/// The record's `budget`: the limits, what was spent, and the limit reached, if one was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetState {
    pub limit: Budget,
    pub spent: Spent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceeded: Option<BudgetKind>,
}

/// Why a session ended, when the model did not end it itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndedBy {
    /// A limit of `options.budget` was reached.
    Budget,
    /// The loop guard ended it: the model kept repeating calls (status `error`, "stuck: …", unless
    /// the answer was still had in words).
    Loop,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_must_be_positive() {
        assert_eq!(
            Budget { tokens: Some(0), ..Default::default() }.invalid().as_deref(),
            Some("budget.tokens must be at least 1")
        );
        assert!(Budget { usd: Some(-1.0), ..Default::default() }.invalid().is_some());
        assert!(Budget { usd: Some(0.0), ..Default::default() }.invalid().is_some());
        assert_eq!(Budget { tokens: Some(5), usd: Some(0.5), seconds: Some(9) }.invalid(), None);
        assert!(serde_json::from_str::<Budget>(r#"{"tokens": -5}"#).is_err());
        assert!(serde_json::from_str::<Budget>(r#"{"token": 5}"#).is_err());
    }

    #[test]
    fn what_a_person_types_is_shown_as_its_length() {
        let hidden = |tool, input: &Value| hide_typed(input, &typed_pointers(tool, input));
        let shown = hidden(Tool::BrowserType, &json!({"selector": "#code", "text": "424242"}));
        assert_eq!(shown, json!({"selector": "#code", "text": "[6 characters typed by the person]"}));
        let form = json!({"fields": [{"selector": "#a", "value": "secret"}]});
        assert_eq!(hidden(Tool::BrowserFillForm, &form)["fields"][0]["value"], "[6 characters typed by the person]");
        let command = hidden(Tool::RunCommand, &json!({"command": "export T=1", "timeout_s": 5}));
        assert_eq!(command, json!({"command": "[10 characters typed by the person]", "timeout_s": 5}));
        assert_eq!(typed_pointers(Tool::WriteFile, &json!({"path": "/a", "content": "x"})), ["/content"]);
        let click = json!({"x": 1, "y": 2});
        assert_eq!(hidden(Tool::BrowserClick, &click), click);
        assert!(typed_pointers(Tool::BrowserNavigate, &json!({"url": "https://x.test/"})).is_empty());
    }

    #[test]
    fn a_request_overrides_each_default() {
        let asked = Budget { tokens: Some(10), ..Default::default() };
        let default = Budget { tokens: Some(99), seconds: Some(60), usd: None };
        assert_eq!(asked.or(default), Budget { tokens: Some(10), seconds: Some(60), usd: None });
    }
}
