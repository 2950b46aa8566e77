//! The secret parts of a request: login data and notification targets, as given in
//! `POST /sessions` and in schedules. Deserialize-only: they hold `Secret`s, which have no
//! `Serialize`, so they can never be written back. The session's vault keeps them in memory
//! (`vault.rs`), and scrubs every form of them from what the session writes.

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
    /// The site the credentials belong to (`example.com`, `*.example.com`); else the host of
    /// `login_url`, else of the target. They are typed on no other host.
    #[serde(default)]
    pub domain: Option<String>,
    /// A TOTP secret (base32, or an `otpauth://totp/` URI): `perform_login` fills the one-time
    /// code the site asks for after the password (`util/totp.rs`).
    #[serde(default)]
    pub totp: Option<Secret>,
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
