//! Secrets and the per-session credential vault.
//!
//! `Secret` wraps a string that must never reach a file, a log line or an API response: it has
//! no `Serialize`, its `Debug` prints a placeholder, and its bytes are overwritten when dropped.
//! The vault holds a session's credentials and notification secrets in memory only; it is
//! emptied when the session ends. `Vault::scrub` is the last line of defence: every text the
//! session writes to disk passes through it, so a secret the model or a worker echoes back is
//! replaced before it lands. Each secret is also hunted in the forms it travels in: URL- and
//! form-encoded (`+` for a space), base64 (standard and URL-safe) and JSON-escaped.
//! Secrets under `MIN_SECRET_CHARS` are refused at session create: they cannot be scrubbed.

use crate::util::secret::Secret;
use base64::Engine;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

/// The shortest secret a session accepts (shorter ones would be scrubbed from every word).
pub const MIN_SECRET_CHARS: usize = 4;

/// RFC 3986's unreserved characters stay as they are.
const URL_KEEP: &AsciiSet = crate::util::URL_UNRESERVED;
/// JavaScript's `encodeURIComponent` keeps a few more.
const URI_COMPONENT_KEEP: &AsciiSet = &URL_KEEP.remove(b'!').remove(b'*').remove(b'\'').remove(b'(').remove(b')');
/// `application/x-www-form-urlencoded` (WHATWG): `*-._` kept, the space becomes `+`.
const FORM_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'*').remove(b'-').remove(b'.').remove(b'_').remove(b' ');

/// Login data for a session, as given in `POST /sessions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub username: String,
    pub password: Secret,
    #[serde(default)]
    pub login_url: Option<String>,
    #[serde(default)]
    pub username_selector: Option<String>,
    #[serde(default)]
    pub password_selector: Option<String>,
    #[serde(default)]
    pub submit_selector: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramTarget {
    pub bot_token: Secret,
    pub chat_id: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookTarget {
    /// The whole URL is secret: query strings routinely carry tokens.
    pub url: Secret,
    #[serde(default)]
    pub method: Option<String>,
}

/// Where a session sends its notifications.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notifications {
    #[serde(default)]
    pub telegram: Option<TelegramTarget>,
    #[serde(default)]
    pub webhook: Option<WebhookTarget>,
}

/// Everything secret a session holds. Memory only.
#[derive(Debug, Default)]
pub struct Vault {
    pub credentials: Option<Credentials>,
    pub notifications: Option<Notifications>,
    /// The secrets in every form they are hunted in, built once: every log line is scrubbed.
    forms: std::sync::OnceLock<Vec<String>>,
}

const REDACTED: &str = "[redacted]";

impl Vault {
    pub fn new(credentials: Option<Credentials>, notifications: Option<Notifications>) -> Vault {
        Vault { credentials, notifications, forms: Default::default() }
    }

    fn secrets(&self) -> &[String] {
        self.forms.get_or_init(|| self.build_secrets())
    }

    /// The secret strings worth hunting for in output. Very short values are skipped: replacing
    /// every "a" in a report would destroy it and protect nothing.
    fn build_secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.credentials {
            out.push(c.password.expose());
        }
        if let Some(n) = &self.notifications {
            if let Some(t) = &n.telegram {
                out.push(t.bot_token.expose());
            }
            if let Some(w) = &n.webhook {
                out.push(w.url.expose());
                if let Some((_, query)) = w.url.expose().split_once('?') {
                    out.push(query);
                }
            }
        }
        out.retain(|s| s.len() >= MIN_SECRET_CHARS);
        let mut all: Vec<String> = out.into_iter().flat_map(encodings).collect();
        // Longest first, so a URL is replaced whole before its query string is looked for.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all.dedup();
        all
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.secrets() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// Scrub every string inside a JSON value (worker results can hold thousands of strings:
    /// the secret list is built once, and nothing is walked when there are none).
    pub fn scrub_json(&self, value: &mut serde_json::Value) {
        let secrets = self.secrets();
        if !secrets.is_empty() {
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            scrub_value(&secrets, value);
        }
    }

    /// A scrubber holding its own copy of the secrets, for text that is written after the
    /// session ends and its vault is cleared (the report after a stop).
    pub fn scrubber(&self) -> impl Fn(&str) -> String + Send + use<> {
        let secrets = self.secrets().to_vec();
        move |text: &str| secrets.iter().fold(text.to_string(), |out, secret| out.replace(secret.as_str(), REDACTED))
    }

    pub fn clear(&mut self) {
        self.credentials = None;
        self.notifications = None;
        self.forms = Default::default();
    }
}

/// A secret and the forms it is written in on the way to a log: as is, URL-encoded (upper and
/// lower case hex), form-encoded, base64 and JSON-escaped.
fn encodings(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string()];
    for set in [URL_KEEP, URI_COMPONENT_KEEP] {
        let encoded = utf8_percent_encode(secret, set).to_string();
        forms.push(lower_hex_escapes(&encoded));
        forms.push(encoded);
    }
    let form = utf8_percent_encode(secret, FORM_KEEP).to_string().replace(' ', "+");
    forms.push(lower_hex_escapes(&form));
    forms.push(form);
    for engine in [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE] {
        let b64 = engine.encode(secret.as_bytes());
        forms.push(b64.trim_end_matches('=').to_string());
        forms.push(b64);
    }
    if let Ok(json) = serde_json::to_string(secret) {
        forms.push(json.trim_matches('"').to_string());
    }
    forms
}

/// `%2F` → `%2f`: some encoders write lower-case hex.
fn lower_hex_escapes(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut hex_left = 0;
    for c in encoded.chars() {
        if hex_left > 0 {
            out.push(c.to_ascii_lowercase());
            hex_left -= 1;
        } else {
            hex_left = if c == '%' { 2 } else { 0 };
            out.push(c);
        }
    }
    out
}

fn scrub_value(secrets: &[&str], value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) if secrets.iter().any(|x| s.contains(x)) => {
            for secret in secrets {
                *s = s.replace(secret, REDACTED);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(secrets, v)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub_value(secrets, v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hunter2-long");
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn scrub_replaces_password_and_webhook_query() {
        let vault = Vault {
            credentials: Some(Credentials {
                username: "bob".into(),
                password: Secret::new("pa55word!"),
                login_url: None,
                username_selector: None,
                password_selector: None,
                submit_selector: None,
            }),
            notifications: Some(Notifications {
                telegram: None,
                webhook: Some(WebhookTarget { url: Secret::new("https://hooks.example/x?token=abcdef"), method: None }),
            }),
            ..Default::default()
        };
        let out = vault.scrub("typed pa55word! then token=abcdef");
        assert_eq!(out, "typed [redacted] then [redacted]");
    }

    fn with_password(p: &str) -> Vault {
        Vault {
            credentials: Some(Credentials {
                username: "bob".into(),
                password: Secret::new(p),
                login_url: None,
                username_selector: None,
                password_selector: None,
                submit_selector: None,
            }),
            notifications: None,
            ..Default::default()
        }
    }

    #[test]
    fn scrub_catches_encoded_forms() {
        let vault = with_password("Hunter2 S3cret!pw/\"\u{e9}");
        for leaked in [
            "Hunter2+S3cret%21pw%2F%22%C3%A9",   // form-encoded
            "Hunter2%20S3cret%21pw%2F%22%C3%A9", // URL-encoded
            "Hunter2%20S3cret!pw%2F%22%C3%A9",   // encodeURIComponent
            "Hunter2%20S3cret%21pw%2f%22%c3%a9", // lower-case hex
            "SHVudGVyMiBTM2NyZXQhcHcvIsOp",      // base64
            "Hunter2 S3cret!pw/\\\"\u{e9}",      // JSON-escaped
        ] {
            let out = vault.scrub(&format!("password={leaked}&x=1"));
            assert_eq!(out, "password=[redacted]&x=1", "{leaked}");
        }
        let mut cleared = with_password("Hunter2 S3cret!pw");
        let scrub = cleared.scrubber();
        cleared.clear();
        assert_eq!(scrub("p=Hunter2%20S3cret%21pw"), "p=[redacted]", "the scrubber outlives the vault");
        let mut v = serde_json::json!({"body": "u=bob&p=Hunter2+S3cret%21pw%2F%22%C3%A9"});
        vault.scrub_json(&mut v);
        assert_eq!(v["body"], "u=bob&p=[redacted]");
    }
}
