//! Secrets and the per-session credential vault.
//!
//! `Secret` wraps a string that must never reach a file, a log line or an API response: it has
//! no `Serialize`, its `Debug` prints a placeholder, and its bytes are overwritten when dropped.
//! The vault holds a session's credentials and notification secrets (their wire shapes are
//! `protocol::secrets`), and what a person typed (while taking over, `hold_typed`; given again
//! to a replay, `with_typed`), in memory only; it is emptied when the session ends. `Vault::scrub` is the last line of defence: every text the
//! session writes to disk passes through it, so a secret the model or a worker echoes back is
//! replaced before it lands. Each secret is also hunted in the forms it travels in: URL- and
//! form-encoded (`+` for a space) once or twice, hex, base64 (standard and URL-safe, alone or
//! inside a longer encoded text, and the Basic-auth pair `user:password`), base32, HTML
//! entities and JSON-escaped; what a person typed also as a page reformats it, with spaces,
//! dashes or dots between its letters and digits (`reformatted.rs`).
//! Secrets under `MIN_SECRET_CHARS` are refused at session create: they cannot be scrubbed.

use crate::protocol::secrets::{Credentials, Notifications};
use base64::Engine;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::borrow::Cow;

mod reformatted;

/// The shortest secret a session accepts (shorter ones would be scrubbed from every word).
pub const MIN_SECRET_CHARS: usize = 4;

/// RFC 3986's unreserved characters stay as they are.
const URL_KEEP: &AsciiSet = crate::util::URL_UNRESERVED;
/// JavaScript's `encodeURIComponent` keeps a few more.
const URI_COMPONENT_KEEP: &AsciiSet = &URL_KEEP.remove(b'!').remove(b'*').remove(b'\'').remove(b'(').remove(b')');
/// `application/x-www-form-urlencoded` (WHATWG): `*-._` kept, the space becomes `+`.
const FORM_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'*').remove(b'-').remove(b'.').remove(b'_').remove(b' ');

/// Everything secret a session holds. Memory only.
#[derive(Debug, Default)]
pub struct Vault {
    pub credentials: Option<Credentials>,
    pub notifications: Option<Notifications>,
    /// What a person typed while taking over, or gave a replay (`typed_N`): the worker only.
    typed: Vec<crate::util::secret::Secret>,
    /// The secrets in every form they are hunted in, built once (again after `hold_typed`):
    /// every log line is scrubbed.
    forms: std::sync::OnceLock<Hunted>,
}

const REDACTED: &str = "[redacted]";

/// What the scrubber hunts: every form of every secret (longest first), and the typed values
/// a page may write back reformatted.
#[derive(Clone, Default)]
struct Hunted {
    forms: Vec<String>,
    reformatted: Vec<reformatted::Spaced>,
}

impl std::fmt::Debug for Hunted {
    /// Counts only: the forms are the secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hunted({} forms, {} reformatted)", self.forms.len(), self.reformatted.len())
    }
}

impl Hunted {
    fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.forms {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED).into();
            }
        }
        for value in &self.reformatted {
            if let Some(replaced) = value.replace_in(&out, REDACTED) {
                out = replaced.into();
            }
        }
        out
    }
}

impl Vault {
    pub fn new(credentials: Option<Credentials>, notifications: Option<Notifications>) -> Vault {
        Vault { credentials, notifications, typed: Vec::new(), forms: Default::default() }
    }

    /// The vault also holding `typed`, texts a person typed (a replay's `typed_N` parameters).
    pub fn with_typed(mut self, typed: Vec<crate::util::secret::Secret>) -> Vault {
        self.typed = typed;
        self.forms = Default::default();
        self
    }

    /// Hold `text`, typed by a person, as a secret from now on. False when it is too short to
    /// scrub (under `MIN_SECRET_CHARS`: it would match inside ordinary words).
    pub fn hold_typed(&mut self, text: &str) -> bool {
        if text.len() < MIN_SECRET_CHARS {
            return false;
        }
        if !self.typed.iter().any(|t| t.expose() == text) {
            self.typed.push(crate::util::secret::Secret::new(text));
            self.forms = Default::default();
        }
        true
    }

    /// Whether anything would be scrubbed (most sessions hold no credentials).
    pub fn has_secrets(&self) -> bool {
        !self.secrets().is_empty()
    }

    fn secrets(&self) -> &[String] {
        &self.hunted().forms
    }

    fn hunted(&self) -> &Hunted {
        self.forms.get_or_init(|| Hunted {
            forms: self.build_secrets(),
            reformatted: self.typed.iter().filter_map(|t| reformatted::Spaced::of(t.expose())).collect(),
        })
    }

    /// The secret strings worth hunting for in output. Very short values are skipped: replacing
    /// every "a" in a report would destroy it and protect nothing.
    fn build_secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(c) = &self.credentials {
            out.push(c.password.expose().to_string());
            // As HTTP Basic auth carries it (base64 of the pair, among the forms below).
            out.push(format!("{}:{}", c.username, c.password.expose()));
            out.extend(c.totp.as_ref().map(|t| t.expose().to_string()));
        }
        if let Some(n) = &self.notifications {
            if let Some(t) = &n.telegram {
                out.push(t.bot_token.expose().to_string());
            }
            if let Some(w) = &n.webhook {
                out.push(w.url.expose().to_string());
                if let Some((_, query)) = w.url.expose().split_once('?') {
                    out.push(query.to_string());
                }
            }
        }
        out.extend(self.typed.iter().map(|t| t.expose().to_string()));
        out.retain(|s| s.len() >= MIN_SECRET_CHARS);
        let mut all: Vec<String> = out.iter().flat_map(|s| encodings(s)).collect();
        // Longest first, so a URL is replaced whole before its query string is looked for.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all.dedup();
        all
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn scrub(&self, text: &str) -> String {
        self.scrub_cow(text).into_owned()
    }

    /// As `scrub`, borrowing `text` when no secret is in it (a stored output can be 32 MiB).
    pub fn scrub_cow<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.hunted().scrub(text)
    }

    /// Scrub every string inside a JSON value (worker results can hold thousands of strings:
    /// the secret list is built once, and nothing is walked when there are none).
    pub fn scrub_json(&self, value: &mut serde_json::Value) {
        let hunted = self.hunted();
        if !hunted.forms.is_empty() {
            scrub_value(hunted, value);
        }
    }

    /// A scrubber holding its own copy of the secrets, for text that is written after the
    /// session ends and its vault is cleared (the report after a stop).
    pub fn scrubber(&self) -> impl Fn(&str) -> String + Send + use<> {
        let hunted = self.hunted().clone();
        move |text: &str| hunted.scrub(text).into_owned()
    }

    pub fn clear(&mut self) {
        self.credentials = None;
        self.notifications = None;
        self.typed.clear();
        self.forms = Default::default();
    }
}

/// A secret and the forms it is written in on the way to a log or a page: as is, URL-encoded
/// once or twice (upper and lower case hex), form-encoded, hex, base64 (also inside a longer
/// base64 text, at each of its three alignments), base32, HTML entities and JSON-escaped.
fn encodings(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string()];
    let form = utf8_percent_encode(secret, FORM_KEEP).to_string().replace(' ', "+");
    let once = [URL_KEEP, URI_COMPONENT_KEEP].map(|set| utf8_percent_encode(secret, set).to_string());
    for encoded in once.into_iter().chain([form]) {
        for single in [lower_hex_escapes(&encoded), encoded] {
            forms.push(utf8_percent_encode(&single, URL_KEEP).to_string());
            forms.push(single);
        }
    }
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    forms.extend([hex.to_ascii_uppercase(), hex]);
    for engine in [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE] {
        let b64 = engine.encode(secret.as_bytes());
        forms.push(b64.trim_end_matches('=').to_string());
        forms.push(b64);
        forms.extend(base64_cores(secret.as_bytes(), engine));
    }
    let b32 = base32(secret.as_bytes());
    for b32 in [b32.trim_end_matches('=').to_string(), b32.clone()] {
        forms.extend([b32.to_ascii_lowercase(), b32]);
    }
    forms.extend(html_forms(secret));
    if let Ok(json) = serde_json::to_string(secret) {
        forms.push(json.trim_matches('"').to_string());
    }
    forms.retain(|f| f.len() >= MIN_SECRET_CHARS);
    forms
}

/// The base64 characters that depend on the secret's bytes alone, when it sits 0, 1 or 2 bytes
/// past a 3-byte boundary of a longer encoded text (`Basic dXNlcjpw…`, a token in a JWT): each
/// alignment encodes it differently. Shorter than 6 characters, such a run would match at random.
fn base64_cores(secret: &[u8], engine: &base64::engine::GeneralPurpose) -> Vec<String> {
    (0..3)
        .filter_map(|shift| {
            let shifted: Vec<u8> = std::iter::repeat_n(0, shift).chain(secret.iter().copied()).collect();
            let text = engine.encode(&shifted);
            // Character i holds bits 6i..6i+6; keep those wholly inside the secret's.
            let (start, end) = ((8 * shift).div_ceil(6), 8 * shifted.len() / 6);
            text.get(start..end).filter(|core| core.len() >= 6).map(str::to_string)
        })
        .collect()
}

/// RFC 4648 base32, padded.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut out, mut acc, mut bits) = (String::new(), 0u32, 0u32);
    for &b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((acc >> bits) & 31) as usize]));
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((acc << (5 - bits)) & 31) as usize]));
    }
    while out.len() % 8 != 0 {
        out.push('=');
    }
    out
}

/// As a page writes it: its markup characters escaped (each way an apostrophe is), or every
/// character a decimal or hexadecimal reference.
fn html_forms(secret: &str) -> Vec<String> {
    let escaped = |apostrophe: &str| {
        secret
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', apostrophe)
    };
    let mut forms: Vec<String> = ["&#39;", "&#x27;", "&apos;"].iter().map(|a| escaped(a)).collect();
    forms.push(secret.chars().map(|c| format!("&#{};", u32::from(c))).collect());
    let hex: String = secret.chars().map(|c| format!("&#x{:x};", u32::from(c))).collect();
    forms.extend([hex.to_ascii_uppercase().replace("&#X", "&#x"), hex]);
    forms.retain(|f| f != secret);
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

fn scrub_value(hunted: &Hunted, value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            let scrubbed = match hunted.scrub(s) {
                Cow::Owned(scrubbed) => Some(scrubbed),
                Cow::Borrowed(_) => None,
            };
            if let Some(scrubbed) = scrubbed {
                *s = scrubbed;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(hunted, v)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub_value(hunted, v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::secrets::WebhookTarget;
    use crate::util::secret::Secret;

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
                domain: None,
                totp: None,
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
                domain: None,
                totp: None,
            }),
            notifications: None,
            ..Default::default()
        }
    }

    #[test]
    fn scrub_catches_the_forms_a_page_or_a_header_writes() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let vault = with_password("Vault-PW&<'9");
        let pw = "Vault-PW&<'9";
        let hex: String = pw.bytes().map(|b| format!("{b:02x}")).collect();
        let mut leaks = vec![
            hex.clone(),
            hex.to_uppercase(),
            format!("Basic {}", STANDARD.encode(format!("bob:{pw}"))),
            base32(pw.as_bytes()),
            base32(pw.as_bytes()).trim_end_matches('=').to_lowercase(),
            "Vault-PW&amp;&lt;&#39;9".into(),
            "Vault-PW&amp;&lt;&apos;9".into(),
            pw.chars().map(|c| format!("&#{};", c as u32)).collect(),
            pw.chars().map(|c| format!("&#x{:X};", c as u32)).collect(),
            "Vault-PW%2526%253C%25279".into(),
            "Vault-PW%2526%253c%25279".into(),
        ];
        // Inside a longer base64 text, after a prefix of each length.
        for prefix in ["", "a", "ab", "abc", "token="] {
            leaks.push(STANDARD.encode(format!("{prefix}{pw}&more")));
            leaks.push(URL_SAFE_NO_PAD.encode(format!("{prefix}{pw}")));
        }
        for leaked in leaks {
            let out = vault.scrub(&format!("seen: {leaked} end"));
            assert!(out.contains("[redacted]") && !out.contains(&leaked), "{leaked}: {out}");
        }
        // Words near the secret are not taken for it.
        assert_eq!(vault.scrub("Vault-PW and 9"), "Vault-PW and 9");
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

    #[test]
    fn what_a_person_typed_is_scrubbed_once_held() {
        let mut vault = Vault::default();
        assert_eq!(vault.scrub("value=\"493817\""), "value=\"493817\"");
        assert!(vault.scrub("x").len() == 1 && !vault.has_secrets(), "built before the code came");
        assert!(vault.hold_typed("493817"));
        assert!(!vault.hold_typed("42"), "too short to scrub");
        for leaked in ["493817", "NDkzODE3", "343933383137"] {
            assert!(!vault.scrub(&format!("code={leaked}")).contains(leaked), "{leaked}");
        }
        assert_eq!(vault.scrub("value=\"42\""), "value=\"42\"");
        // As the page writes it back, in every path the scrubber takes.
        assert!(vault.hold_typed("4111111111111111"));
        assert_eq!(vault.scrub("card 4111 1111 1111 1111, code 4-9-3-8-1-7"), "card [redacted], code [redacted]");
        let mut v = serde_json::json!({"snapshot": ["textbox value=\"4111 1111 1111 1111\""]});
        vault.scrub_json(&mut v);
        assert_eq!(v["snapshot"][0], "textbox value=\"[redacted]\"");
        assert_eq!(vault.scrubber()("4938.17"), "[redacted]");
        assert!(!format!("{vault:?}").contains("493817"), "Debug shows no secret");
        vault.clear();
        assert_eq!(vault.scrub("493817"), "493817", "emptied with the rest");
    }
}
