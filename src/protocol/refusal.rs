//! The codes of a worker's typed refusal (`{"refused": CODE, …, "message": …}` in a failed
//! result's `data`): one name per reason the worker's page helpers (`page.js`) or its browser
//! backend decline a call on purpose, so both sides read a code, never the words.
//!
//! Invariant: on the wire a code is exactly its snake_case string, as before this type; a code
//! this build does not know (a newer worker's) is kept as `Other` with its text, never an
//! error, and is no code the controller acts on.

use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal),* $(,)?) => {
        /// Why the worker declined a call.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum Refusal {
            $($(#[$doc])* $variant,)*
            /// A code this build does not know, as it came.
            Other(String),
        }

        impl Refusal {
            /// Every code this build knows.
            pub const KNOWN: &'static [Refusal] = &[$(Refusal::$variant),*];

            /// The code as it goes on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Refusal::$variant => $name,)*
                    Refusal::Other(code) => code,
                }
            }
        }

        impl From<&str> for Refusal {
            fn from(code: &str) -> Refusal {
                match code {
                    $($name => Refusal::$variant,)*
                    other => Refusal::Other(other.to_string()),
                }
            }
        }
    };
}

codes! {
    /// A click on a select: it chooses no option (the options are named).
    SelectClick = "select_click",
    /// A submit of a form whose required or invalid fields the page would refuse.
    FormInvalid = "form_invalid",
    /// The first submit of a form whose selects or prefilled fields nobody set (`form_defaults`,
    /// only where the controller asked with `confirm_defaults`).
    FormUnset = "form_unset",
    /// A click whose point another element covers (a list opened over it).
    Covered = "covered",
    /// A credential not typed: the page is not on the credentials' site.
    CredentialSite = "credential_site",
    /// A navigation to a host outside the session's allowed domains.
    DomainBlocked = "domain_blocked",
}

impl From<String> for Refusal {
    fn from(code: String) -> Refusal {
        Refusal::from(code.as_str())
    }
}

impl From<Refusal> for String {
    fn from(code: Refusal) -> String {
        code.as_str().to_string()
    }
}

impl Refusal {
    /// The code of a refusal's JSON (`{"refused": CODE, …}`), if it has one.
    pub fn of(detail: &serde_json::Value) -> Option<Refusal> {
        detail["refused"].as_str().map(Refusal::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_are_their_strings_on_the_wire_and_unknown_ones_are_kept() {
        for code in Refusal::KNOWN {
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, json!(code.as_str()));
            assert_eq!(serde_json::from_value::<Refusal>(wire).unwrap(), *code);
        }
        assert_eq!(Refusal::of(&json!({"refused": "form_unset", "fields": []})), Some(Refusal::FormUnset));
        let newer = Refusal::of(&json!({"refused": "captcha"})).unwrap();
        assert_eq!(newer, Refusal::Other("captcha".into()));
        assert_eq!(serde_json::to_value(&newer).unwrap(), json!("captcha"), "sent on as it came");
        assert_eq!(Refusal::of(&json!({"refused": 3})), None, "no code");
    }

    /// Every code the page helpers send is one this type names.
    #[test]
    fn every_code_page_js_sends_is_named_here() {
        let page = include_str!("../bin/agent-worker/page.js");
        let sent: Vec<&str> = page.split("refused: \"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
        assert!(sent.len() >= 5, "{sent:?}");
        for code in sent {
            assert!(!matches!(Refusal::from(code), Refusal::Other(_)), "page.js sends {code}, unnamed here");
        }
    }
}
