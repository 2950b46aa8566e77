//! A synchronous Chrome DevTools Protocol connection over one websocket.
//!
//! `call` sends one command and reads frames until its answer arrives; other events read on the
//! way are dropped, except JavaScript dialogs, which are answered at once (they would block the
//! page: `next_dialog` if the model set it, else `dialog_default`) and reported through
//! `take_dialogs`. Page-scoped commands carry the flat `sessionId`. Every read has
//! a deadline (the socket's read timeout), so a hung browser cannot hang the worker.

use agent_controller::protocol::DialogPolicy;
use serde_json::{Value, json};

use std::net::TcpStream;
use std::time::{Duration, Instant};
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

pub struct Cdp {
    socket: WebSocket<TcpStream>,
    next_id: u64,

    /// JavaScript dialogs answered since the last `take_dialogs`, with their text.
    dialogs: Vec<String>,
    /// How a confirm() or prompt() is answered when `next_dialog` is not set.
    pub dialog_default: DialogPolicy,
    /// The model's answer for the next confirm() or prompt(): accept, and prompt text.
    pub next_dialog: Option<(bool, Option<String>)>,
}

#[derive(Debug)]
pub enum CdpError {
    /// The connection is gone: the browser died or closed it.
    Closed(String),
    /// The browser answered with an error.
    Protocol(String),
    Timeout(String),
}

impl std::fmt::Display for CdpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CdpError::Closed(m) => write!(f, "the browser connection closed: {m}"),
            CdpError::Protocol(m) => f.write_str(m),
            CdpError::Timeout(m) => write!(f, "the browser did not answer in time ({m})"),
        }
    }
}

impl Cdp {
    /// Connect to `ws://127.0.0.1:PORT/devtools/browser/…` (no Origin header, as Chrome wants).
    pub fn connect(port: u16, path: &str) -> Result<Cdp, CdpError> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| CdpError::Closed(e.to_string()))?;
        stream.set_nodelay(true).ok();
        let config = WebSocketConfig::default().max_message_size(Some(512 << 20)).max_frame_size(Some(512 << 20));
        let url = format!("ws://127.0.0.1:{port}{path}");
        let (socket, _) = tungstenite::client::client_with_config(url.as_str(), stream, Some(config))
            .map_err(|e| CdpError::Closed(format!("websocket handshake failed: {e}")))?;
        Ok(Cdp { socket, next_id: 0, dialogs: Vec::new(), dialog_default: DialogPolicy::Dismiss, next_dialog: None })
    }

    fn read_frame(&mut self, deadline: Instant) -> Result<Value, CdpError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CdpError::Timeout("deadline passed".into()));
            }
            self.socket.get_mut().set_read_timeout(Some(left.max(Duration::from_millis(1)))).ok();
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    return serde_json::from_str(text.as_str())
                        .map_err(|e| CdpError::Protocol(format!("unreadable DevTools message: {e}")));
                }
                Ok(Message::Close(_)) => return Err(CdpError::Closed("closed by the browser".into())),
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    return Err(CdpError::Timeout("no message".into()));
                }
                Err(e) => return Err(CdpError::Closed(e.to_string())),
            }
        }
    }

    /// Send `method` (on `session` if given) and wait for its result.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.socket.send(Message::text(msg.to_string())).map_err(|e| CdpError::Closed(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        loop {
            let frame = self.read_frame(deadline).map_err(|e| match e {
                CdpError::Timeout(_) => CdpError::Timeout(format!("{method} took longer than {} s", timeout.as_secs())),
                other => other,
            })?;
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
        self.next_id += 1;
        let mut params = json!({"accept": accept});
        if let Some(t) = text {
            params["promptText"] = json!(t);
        }
        let mut answer = json!({"id": self.next_id, "method": "Page.handleJavaScriptDialog", "params": params});
        if let Some(s) = frame.get("sessionId") {
            answer["sessionId"] = s.clone();
        }
        self.socket.send(Message::text(answer.to_string())).map_err(|e| CdpError::Closed(e.to_string()))
    }

    pub fn take_dialogs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.dialogs)
    }
}
