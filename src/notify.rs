//! Notifications sent by the controller (it has the network and the secrets): Telegram
//! `sendMessage` and a webhook POST/PUT of `{message, session_id, files}`.
//!
//! 10 s per attempt, up to 3 attempts on connection errors, 429 and 5xx. Error texts never
//! contain the bot token or the webhook URL: they name the channel and the status class only
//! (`HTTP 4xx`, "could not deliver"), so the session log is no port scanner. A webhook whose
//! host resolves to a private, loopback, link-local or otherwise internal address (any of its
//! addresses) is refused unless `notifications.allow_private`; redirects are not followed. The
//! webhook's connection resolves through `PublicOnly`, so a name that answered public for the
//! check cannot answer private for the connect (DNS rebinding).

use crate::protocol::secrets::Notifications;
use serde_json::json;
use std::fmt;
use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

const ATTEMPTS: u32 = 3;

/// What happened per channel, for the model and the log (no secrets): a failure is a
/// `NotifyError`'s words, which the notify tool's JSON answer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub channel: &'static str,
    pub result: Result<(), String>,
}

/// Why a notification did not arrive. The words name neither the token nor the URL, and say
/// no more of a failed connection than that it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotifyError {
    /// The webhook's host is internal (or does not resolve) and `allow_private` is off.
    Private,
    /// The server answered with a status of this class (4 for 4xx) that retrying cannot mend.
    Status(u16),
    /// Every attempt failed: the last answer's status class, or None when none came.
    GaveUp(Option<u16>),
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotifyError::Private => f.write_str(
                "refused: the webhook's host is a private, loopback or link-local address (or does not resolve); \
                 notifications.allow_private allows it",
            ),
            NotifyError::Status(class) => write!(f, "HTTP {class}xx"),
            NotifyError::GaveUp(Some(class)) => write!(f, "HTTP {class}xx after {ATTEMPTS} attempts"),
            NotifyError::GaveUp(None) => write!(f, "could not deliver after {ATTEMPTS} attempts"),
        }
    }
}

impl std::error::Error for NotifyError {}

pub struct Notifier {
    agent: ureq::Agent,
    /// The webhook's agent: connects only to public addresses unless `allow_private`.
    webhook_agent: ureq::Agent,
    telegram_base: String,
    allow_private: bool,
}

impl Notifier {
    pub fn new(telegram_base: &str, timeout: Duration) -> Notifier {
        let config = || {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(timeout))
                .max_redirects(0)
                .build()
        };
        let agent: ureq::Agent = config().into();
        let webhook_agent = ureq::Agent::with_parts(config(), DefaultConnector::default(), PublicOnly::default());
        let telegram_base = telegram_base.trim_end_matches('/').to_string();
        Notifier { agent, webhook_agent, telegram_base, allow_private: false }
    }

    /// Let webhooks reach private, loopback and link-local addresses.
    pub fn allow_private(mut self, allow: bool) -> Notifier {
        self.allow_private = allow;
        if allow {
            self.webhook_agent = self.agent.clone();
        }
        self
    }

    pub fn send(&self, targets: &Notifications, message: &str, session_id: &str, files: &[String]) -> Vec<Delivery> {
        let mut out = Vec::new();
        if let Some(t) = &targets.telegram {
            let url = format!("{}/bot{}/sendMessage", self.telegram_base, t.bot_token.expose());
            let body = json!({"chat_id": t.chat_id, "text": telegram_text(message, files)});
            let result = self.deliver(|| self.agent.post(&url).send_json(&body));
            out.push(Delivery { channel: "telegram", result: result.map_err(|e| e.to_string()) });
        }
        if let Some(w) = &targets.webhook {
            let body = json!({"message": message, "session_id": session_id, "files": files});
            let put = w.method.as_deref().is_some_and(|m| m.eq_ignore_ascii_case("PUT"));
            let url = w.url.expose();
            let result = if !self.allow_private && !public_destination(url) {
                Err(NotifyError::Private)
            } else if put {
                self.deliver(|| self.webhook_agent.put(url).send_json(&body))
            } else {
                self.deliver(|| self.webhook_agent.post(url).send_json(&body))
            };
            out.push(Delivery { channel: "webhook", result: result.map_err(|e| e.to_string()) });
        }
        out
    }

    fn deliver(
        &self,
        call: impl Fn() -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(), NotifyError> {
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(500 * (1 << attempt)));
            }
            match call() {
                Ok(resp) if resp.status().is_success() => return Ok(()),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    if !(status == 429 || status >= 500) {
                        return Err(NotifyError::Status(status / 100));
                    }
                    last = Some(status / 100);
                }
                // One word for every way of not getting an answer: which one it was would tell
                // a probing model whether a port is open.
                Err(_) => last = None,
            }
        }
        Err(NotifyError::GaveUp(last))
    }
}

/// ureq's own lookup, refused unless every address is public: the connection uses exactly
/// the addresses that were checked.
#[derive(Debug, Default)]
struct PublicOnly(DefaultResolver);

impl Resolver for PublicOnly {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.0.resolve(uri, config, timeout)?;
        if addrs.iter().all(|a| is_public(a.ip())) { Ok(addrs) } else { Err(ureq::Error::HostNotFound) }
    }
}

/// Whether every address `url`'s host resolves to is public (false when it does not resolve).
fn public_destination(url: &str) -> bool {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else { return false };
    let Some(host) = uri.host() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
    let Ok(addrs) = (host, port).to_socket_addrs() else { return false };
    let addrs: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
    !addrs.is_empty() && addrs.iter().all(|ip| is_public(*ip))
}

/// Not loopback, private, link-local, shared (CGNAT), unspecified, multicast or reserved.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8))
        }
    }
}

fn telegram_text(message: &str, files: &[String]) -> String {
    let mut text = message.to_string();
    if !files.is_empty() {
        text.push_str("\n\nFiles: ");
        text.push_str(&files.join(", "));
    }
    // Telegram's limit is 4096 characters.
    text.chars().take(4000).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::"] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        assert!(is_public("1.1.1.1".parse().unwrap()));
        assert!(is_public("2606:4700::1111".parse().unwrap()));
        assert!(!public_destination("http://127.0.0.1:8080/x"));
        assert!(!public_destination("http://[::1]/x"));
        assert!(!public_destination("http://localhost/x"));
        assert!(public_destination("https://1.1.1.1/hook"));
    }

    /// The check before sending is not the only guard: the webhook's own connection refuses a
    /// private address (as a name rebound after the check would give), while a listener there
    /// would have answered.
    #[test]
    fn the_webhook_connection_itself_refuses_private_addresses() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let _ = conn.read(&mut [0u8; 4096]);
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        let strict = Notifier::new("http://unused.invalid", Duration::from_secs(2));
        assert!(matches!(strict.webhook_agent.post(&url).send_json(json!({})), Err(ureq::Error::HostNotFound)));
        let open = Notifier::new("http://unused.invalid", Duration::from_secs(2)).allow_private(true);
        assert!(open.webhook_agent.post(&url).send_json(json!({})).unwrap().status().is_success());
    }
}
