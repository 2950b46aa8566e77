//! A person taking over a session, and what a session may spend.
//!
//! `POST /sessions/:id/act {tool, input}` and `/resume {note?}` (strict, like every API
//! request); the budget asked for in `POST /sessions` (`options.budget`, defaults in
//! `agent.budget`); what the record shows of both while the session runs and after it ends.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// Why a session ended, when it was not the model's own finish or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndedBy {
    Budget,
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
    fn a_request_overrides_each_default() {
        let asked = Budget { tokens: Some(10), ..Default::default() };
        let default = Budget { tokens: Some(99), seconds: Some(60), usd: None };
        assert_eq!(asked.or(default), Budget { tokens: Some(10), seconds: Some(60), usd: None });
    }
}
