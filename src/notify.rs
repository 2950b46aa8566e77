//! Notifications sent by the controller (it has the network and the secrets): Telegram
//! `sendMessage` and a webhook POST/PUT of `{message, session_id, files}`.
//!
//! 10 s per attempt, up to 3 attempts on connection errors, 429 and 5xx. Error texts never
//! contain the bot token or the webhook URL: they name the channel and the status only.

use crate::vault::Notifications;
use serde_json::json;
use std::time::Duration;

const ATTEMPTS: u32 = 3;

/// What happened per channel, for the model and the log (no secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub channel: &'static str,
    pub result: Result<(), String>,
}

pub struct Notifier {
    agent: ureq::Agent,
    telegram_base: String,
}

impl Notifier {
    pub fn new(telegram_base: &str, timeout: Duration) -> Notifier {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into();
        Notifier { agent, telegram_base: telegram_base.trim_end_matches('/').to_string() }
    }

    pub fn send(&self, targets: &Notifications, message: &str, session_id: &str, files: &[String]) -> Vec<Delivery> {
        let mut out = Vec::new();
        if let Some(t) = &targets.telegram {
            let url = format!("{}/bot{}/sendMessage", self.telegram_base, t.bot_token.expose());
            let body = json!({"chat_id": t.chat_id, "text": telegram_text(message, files)});
            out.push(Delivery { channel: "telegram", result: self.deliver(|| self.agent.post(&url).send_json(&body)) });
        }
        if let Some(w) = &targets.webhook {
            let body = json!({"message": message, "session_id": session_id, "files": files});
            let put = w.method.as_deref().is_some_and(|m| m.eq_ignore_ascii_case("PUT"));
            let url = w.url.expose();
            let result = if put {
                self.deliver(|| self.agent.put(url).send_json(&body))
            } else {
                self.deliver(|| self.agent.post(url).send_json(&body))
            };
            out.push(Delivery { channel: "webhook", result });
        }
        out
    }

    fn deliver(&self, call: impl Fn() -> Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<(), String> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(500 * (1 << attempt)));
            }
            match call() {
                Ok(resp) if resp.status().is_success() => return Ok(()),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    last = format!("HTTP {status}");
                    if !(status == 429 || status >= 500) {
                        return Err(last);
                    }
                }
                Err(ureq::Error::Timeout(_)) => last = "timed out".into(),
                Err(ureq::Error::Io(e)) => last = format!("connection error ({})", e.kind()),
                Err(_) => last = "could not connect".into(),
            }
        }
        Err(format!("{last} after {ATTEMPTS} attempts"))
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
