//! Secrets and the per-session credential vault.
//!
//! `Secret` wraps a string that must never reach a file, a log line or an API response: it has
//! no `Serialize`, its `Debug` prints a placeholder, and its bytes are overwritten when dropped.
//! The vault holds a session's credentials and notification secrets in memory only; it is
//! emptied when the session ends. `Vault::scrub` is the last line of defence: every text the
//! session writes to disk passes through it, so a secret the model or a worker echoes back is
//! replaced before it lands.

use crate::util::secret::Secret;
use serde::Deserialize;

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
}

const REDACTED: &str = "[redacted]";

impl Vault {
    /// The secret strings worth hunting for in output. Very short values are skipped: replacing
    /// every "a" in a report would destroy it and protect nothing.
    fn secrets(&self) -> Vec<&str> {
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
        out.retain(|s| s.len() >= 4);
        // Longest first, so a URL is replaced whole before its query string is looked for.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.secrets() {
            if out.contains(secret) {
                out = out.replace(secret, REDACTED);
            }
        }
        out
    }

    /// Scrub every string inside a JSON value (worker results can hold thousands of strings:
    /// the secret list is built once, and nothing is walked when there are none).
    pub fn scrub_json(&self, value: &mut serde_json::Value) {
        let secrets = self.secrets();
        if !secrets.is_empty() {
            scrub_value(&secrets, value);
        }
    }

    pub fn clear(&mut self) {
        self.credentials = None;
        self.notifications = None;
    }
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
        };
        let out = vault.scrub("typed pa55word! then token=abcdef");
        assert_eq!(out, "typed [redacted] then [redacted]");
    }
}
