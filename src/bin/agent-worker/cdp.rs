//! A synchronous Chrome DevTools Protocol connection over `--remote-debugging-pipe`.
//!
//! Chromium reads commands on its fd 3 and writes answers and events on its fd 4, each message
//! one JSON text ending in a NUL byte; no port is opened, so no other local process can reach
//! the browser. `call` sends one command and reads messages until its answer arrives; other
//! events read on the way are dropped, except JavaScript dialogs, which are answered at once
//! (they would block the page: `next_dialog` if the model set it, else `dialog_default`) and
//! reported through `take_dialogs`. Page-scoped commands carry the flat `sessionId`.
//! Every read and write has a deadline, and once the browser has answered at all, a call that
//! hears nothing for `QUIET` asks the browser process itself (`Browser.getVersion`, answered
//! even while a page is busy) whether it is there: no answer within `HUNG` means a hung
//! browser, whatever the call's own timeout.

use agent_controller::protocol::DialogPolicy;
use serde_json::{Value, json};

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How long the browser process may take to answer a liveness check.
pub const HUNG: Duration = Duration::from_secs(4);
/// Silence during a call after which the browser is asked whether it is still there.
const QUIET: Duration = Duration::from_secs(2);
/// The largest message accepted (a full-page screenshot or a PDF is tens of MiB).
const MAX_MESSAGE: usize = 512 << 20;

pub struct Cdp {
    /// The browser's fd 3 (commands in) and fd 4 (answers and events out).
    to_browser: File,
    from_browser: File,
    /// Bytes read but not yet split into messages; `scanned` of them hold no NUL.
    buf: Vec<u8>,
    scanned: usize,
    next_id: u64,
    /// `QUIET` and `HUNG` (tests shorten them).
    quiet: Duration,
    hung: Duration,
    /// The browser has answered once: before that it is starting, which only the first call's
    /// own deadline bounds (a cold start on a loaded machine is slow, not hung).
    started: bool,

    /// JavaScript dialogs answered since the last `take_dialogs`, with their text.
    dialogs: Vec<String>,
    /// How a confirm() or prompt() is answered when `next_dialog` is not set.
    pub dialog_default: DialogPolicy,
    /// The model's answer for the next confirm() or prompt(): accept, and prompt text.
    pub next_dialog: Option<(bool, Option<String>)>,
    /// The last file chooser the page opened while choosers are intercepted (its params).
    pub file_chooser: Option<Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    /// The connection is gone: the browser died or closed it.
    #[error("the browser connection closed: {0}")]
    Closed(String),
    /// The browser answered with an error.
    #[error("{0}")]
    Protocol(String),
    #[error("the browser did not answer in time ({0})")]
    Timeout(String),
    /// The browser process itself stopped answering: it is hung and must be killed.
    #[error("the browser stopped answering ({0})")]
    Hung(String),
}

/// Wait until `fd` is ready for `events` or `deadline` passes; false on timeout.
fn wait_fd(fd: i32, events: libc::c_short, deadline: Instant) -> Result<bool, CdpError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
        let mut pfd = libc::pollfd { fd, events, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n > 0 {
            return Ok(true);
        }
        if n == 0 {
            return Ok(false);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != ErrorKind::Interrupted {
            return Err(CdpError::Closed(err.to_string()));
        }
    }
}

impl Cdp {
    /// A connection over the parent's ends of the two pipes (`to_browser` non-blocking).
    pub fn over_pipes(to_browser: File, from_browser: File) -> Cdp {
        Cdp {
            to_browser,
            from_browser,
            buf: Vec::new(),
            scanned: 0,
            next_id: 0,
            quiet: QUIET,
            hung: HUNG,
            started: false,
            dialogs: Vec::new(),
            dialog_default: DialogPolicy::Dismiss,
            next_dialog: None,
            file_chooser: None,
        }
    }

    /// Write one message and its NUL; a browser that does not take it within `HUNG` is hung.
    fn send(&mut self, msg: &Value) -> Result<(), CdpError> {
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        let deadline = Instant::now() + self.hung;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            match self.to_browser.write(rest) {
                Ok(0) => return Err(CdpError::Closed("the DevTools pipe takes no more".into())),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !wait_fd(self.to_browser.as_raw_fd(), libc::POLLOUT, deadline)? {
                        let waited = self.hung.as_secs();
                        return Err(CdpError::Hung(format!("it took no command for {waited} s")));
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(CdpError::Closed(e.to_string())),
            }
        }
        Ok(())
    }

    /// The next whole message, or `Ok(None)` if none arrived by `deadline`.
    fn read_message(&mut self, deadline: Instant) -> Result<Option<Value>, CdpError> {
        loop {
            if let Some(end) = self.buf[self.scanned..].iter().position(|&b| b == 0).map(|i| i + self.scanned) {
                let parsed = serde_json::from_slice(&self.buf[..end]);
                self.buf.drain(..=end);
                self.scanned = 0;
                return parsed.map(Some).map_err(|e| CdpError::Protocol(format!("unreadable DevTools message: {e}")));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > MAX_MESSAGE {
                return Err(CdpError::Closed("a DevTools message over 512 MiB".into()));
            }
            if !wait_fd(self.from_browser.as_raw_fd(), libc::POLLIN, deadline)? {
                return Ok(None);
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.from_browser.read(&mut chunk) {
                Ok(0) => return Err(CdpError::Closed("the browser closed its DevTools pipe".into())),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
                Err(e) => return Err(CdpError::Closed(e.to_string())),
            }
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Send `method` (on `session` if given) and wait for its result.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let id = self.next_id();
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.send(&msg)?;
        let deadline = Instant::now() + timeout;
        // The liveness check in flight: its id and when it must be answered by.
        let mut ping: Option<(u64, Instant)> = None;
        let mut heard = Instant::now();
        loop {
            let wake = match ping {
                Some((_, by)) => by.min(deadline),
                None => (heard + self.quiet).min(deadline),
            };
            let Some(frame) = self.read_message(wake)? else {
                let now = Instant::now();
                if now >= deadline {
                    return Err(CdpError::Timeout(format!("{method} took longer than {} s", timeout.as_secs())));
                }
                match ping {
                    Some((_, by)) if now >= by => {
                        let silent = (self.quiet + self.hung).as_secs();
                        return Err(CdpError::Hung(format!("no answer to {method}, nor to a check, for {silent} s")));
                    }
                    Some(_) => {}
                    None if !self.started => heard = now,
                    None => {
                        let ping_id = self.next_id();
                        self.send(&json!({"id": ping_id, "method": "Browser.getVersion", "params": {}}))?;
                        ping = Some((ping_id, now + self.hung));
                    }
                }
                continue;
            };
            heard = Instant::now();
            self.started = true;
            if ping.is_some_and(|(p, _)| frame["id"].as_u64() == Some(p)) {
                ping = None;
                continue;
            }
            if frame["id"].as_u64() == Some(id) {
                if let Some(err) = frame.get("error") {
                    return Err(CdpError::Protocol(format!(
                        "{method}: {}",
                        err["message"].as_str().unwrap_or("unknown DevTools error")
                    )));
                }
                return Ok(frame["result"].clone());
            }
            if frame["method"] == "Page.javascriptDialogOpening" {
                self.answer_dialog(&frame)?;
            } else if frame["method"] == "Page.fileChooserOpened" {
                self.file_chooser = Some(frame["params"].clone());
            }
        }
    }

    /// An open dialog blocks every script and input until answered: answer it at once and
    /// keep what it said for the command's result.
    fn answer_dialog(&mut self, frame: &Value) -> Result<(), CdpError> {
        let kind = frame["params"]["type"].as_str().unwrap_or("dialog");
        let (accept, text) = match kind {
            "confirm" | "prompt" => {
                self.next_dialog.take().unwrap_or((self.dialog_default == DialogPolicy::Accept, None))
            }
            _ => (true, None),
        };
        let message = frame["params"]["message"].as_str().unwrap_or("");
        self.dialogs.push(format!("{kind} \"{message}\" ({})", if accept { "accepted" } else { "dismissed" }));
        let mut params = json!({"accept": accept});
        if let Some(t) = text {
            params["promptText"] = json!(t);
        }
        let mut answer = json!({"id": self.next_id(), "method": "Page.handleJavaScriptDialog", "params": params});
        if let Some(s) = frame.get("sessionId") {
            answer["sessionId"] = s.clone();
        }
        self.send(&answer)
    }

    pub fn take_dialogs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.dialogs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A connection to a fake browser that answers each command as `answer` says (None: never),
    /// and counts the liveness checks it was sent.
    fn fake(answer: fn(&Value) -> Option<Value>) -> (Cdp, Arc<AtomicUsize>) {
        let (mut commands, to_browser) = std::io::pipe().unwrap();
        let (from_browser, mut answers) = std::io::pipe().unwrap();
        let pings = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&pings);
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = commands.read(&mut chunk) {
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let msg: Value = serde_json::from_slice(&buf[..end]).unwrap_or_default();
                    buf.drain(..=end);
                    if msg["method"] == "Browser.getVersion" {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    if let Some(result) = answer(&msg) {
                        let mut out = json!({"id": msg["id"], "result": result}).to_string().into_bytes();
                        out.push(0);
                        let _ = answers.write_all(&out);
                    }
                }
            }
        });
        let mut cdp = Cdp::over_pipes(
            File::from(std::os::fd::OwnedFd::from(to_browser)),
            File::from(std::os::fd::OwnedFd::from(from_browser)),
        );
        cdp.quiet = Duration::from_millis(50);
        cdp.hung = Duration::from_millis(100);
        cdp.started = true;
        (cdp, pings)
    }

    /// Until its first answer the browser is starting: silence then is no hang.
    #[test]
    fn a_starting_browser_gets_the_whole_deadline() {
        let (mut cdp, pings) = fake(|_| None);
        cdp.started = false;
        let out = cdp.call(None, "Browser.setDownloadBehavior", json!({}), Duration::from_millis(300));
        assert!(matches!(out, Err(CdpError::Timeout(_))), "{out:?}");
        assert_eq!(pings.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn answers_come_back_by_id() {
        let (mut cdp, _) = fake(|m| Some(json!({"echo": m["method"]})));
        let out = cdp.call(None, "Target.getTargets", json!({}), Duration::from_secs(5));
        assert_eq!(out.ok(), Some(json!({"echo": "Target.getTargets"})));
    }

    /// A browser that answers nothing, not even a check, is hung long before the call's own
    /// deadline.
    #[test]
    fn a_silent_browser_is_found_hung_within_quiet_plus_hung() {
        let (mut cdp, pings) = fake(|_| None);
        let t = Instant::now();
        let out = cdp.call(Some("S"), "Page.navigate", json!({}), Duration::from_secs(30));
        assert!(matches!(out, Err(CdpError::Hung(_))), "{out:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(pings.load(Ordering::SeqCst), 1);
    }

    /// A browser that answers its checks is alive: a slow page is a timeout, not a hang.
    #[test]
    fn a_busy_page_in_a_live_browser_times_out_without_being_called_hung() {
        let (mut cdp, pings) = fake(|m| (m["method"] == "Browser.getVersion").then(|| json!({})));
        let out = cdp.call(Some("S"), "Runtime.evaluate", json!({}), Duration::from_millis(400));
        assert!(matches!(out, Err(CdpError::Timeout(_))), "{out:?}");
        assert!(pings.load(Ordering::SeqCst) >= 2, "it kept checking");
    }
}
