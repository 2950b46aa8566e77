//! A headless Chromium for the web page tests, driven over the DevTools protocol with a small
//! synchronous client of our own (tungstenite). Unlike the worker's client it keeps every event,
//! so tests can check which requests the page made and what it logged.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::worker::CHROMIUM;
use base64::Engine;
use serde_json::{Value, json};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

const CALL: Duration = Duration::from_secs(30);

/// A Chromium process (its own process group, killed on drop) and one attached page.
pub struct Browser {
    child: Child,
    profile: super::TempDir,
    socket: WebSocket<TcpStream>,
    next_id: u64,
    /// The page's flat session id.
    pub session: String,
    /// Every event of the page session and of the browser itself, in order.
    pub events: Vec<Value>,
}

impl Browser {
    pub fn launch(width: u32, height: u32) -> Browser {
        use std::os::unix::process::CommandExt;
        let profile = super::TempDir::new("chromium");
        let mut cmd = Command::new(CHROMIUM);
        cmd.arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args([
                "--headless=new",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--force-color-profile=srgb",
            ])
            .arg(format!("--window-size={width},{height}"));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--no-sandbox");
        }
        let child = cmd
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let port_file = profile.path().join("DevToolsActivePort");
        let (port, path) = super::wait_until(Duration::from_secs(20), "Chromium's DevTools port", || {
            let text = std::fs::read_to_string(&port_file).ok()?;
            let mut lines = text.lines();
            Some((lines.next()?.trim().parse::<u16>().ok()?, lines.next()?.trim().to_string()))
        });
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (socket, _) = tungstenite::client::client(format!("ws://127.0.0.1:{port}{path}").as_str(), stream).unwrap();
        let mut b = Browser { child, profile, socket, next_id: 0, session: String::new(), events: Vec::new() };
        let target = b.call_on(None, "Target.createTarget", json!({"url": "about:blank"}))["targetId"].clone();
        let attached = b.call_on(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}));
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for method in ["Page.enable", "Network.enable", "Runtime.enable", "Log.enable"] {
            b.call(method, json!({}));
        }
        b.viewport(width, height, false);
        b
    }

    fn read(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        self.socket.get_mut().set_read_timeout(Some(left)).unwrap();
        match self.socket.read() {
            Ok(Message::Text(t)) => Some(serde_json::from_str(t.as_str()).unwrap()),
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
            {
                None
            }
            Err(e) => panic!("the browser connection failed: {e}"),
        }
    }

    /// One command on the browser (`None`) or a session; events read meanwhile are kept.
    pub fn call_on(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.socket.send(Message::text(msg.to_string())).unwrap();
        let deadline = Instant::now() + CALL;
        loop {
            assert!(Instant::now() < deadline, "{method}: no answer from the browser");
            let Some(frame) = self.read(deadline) else { continue };
            if frame["id"].as_u64() == Some(id) {
                assert!(frame.get("error").is_none(), "{method}: {}", frame["error"]);
                return frame["result"].clone();
            }
            self.keep(frame);
        }
    }

    fn keep(&mut self, frame: Value) {
        // The page's events, and the browser's own (downloads).
        let ours = frame["sessionId"].as_str().is_none_or(|s| s == self.session);
        if frame.get("method").is_some() && ours {
            self.events.push(frame);
        }
    }

    /// A command on the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.call_on(Some(&session), method, params)
    }

    /// Read events for `d`.
    pub fn pump(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline {
            if let Some(frame) = self.read(deadline) {
                self.keep(frame);
            }
        }
    }

    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for("document.readyState === 'complete'", Duration::from_secs(10));
    }

    /// The value of a JavaScript expression (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true, "awaitPromise": true}));
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Wait until `expression` is truthy.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.eval(&format!("Boolean({expression})")) == json!(true) {
                return;
            }
            if Instant::now() >= deadline {
                let page = self.eval("document.body.innerText.slice(0, 3000)");
                panic!("timed out waiting for {expression}\npage errors: {:?}\npage text: {page}", self.errors());
            }
            self.pump(Duration::from_millis(100));
        }
    }

    /// A real mouse click in the middle of the element `selector` (scrolled into view).
    pub fn click(&mut self, selector: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return null; e.scrollIntoView({{block: 'center'}});
               const r = e.getBoundingClientRect(); return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})()",
            sel = json!(selector)
        ));
        assert!(rect.is_object(), "nothing matches {selector}");
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": rect["x"], "y": rect["y"], "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Focus `selector` and type `text` into it as keyboard input would.
    pub fn type_into(&mut self, selector: &str, text: &str) {
        self.click(selector);
        self.call("Input.insertText", json!({"text": text}));
    }

    /// The whole page (not just the viewport) as a PNG file.
    pub fn screenshot(&mut self, path: &Path) {
        self.eval("window.scrollTo(0, 0)");
        let size = self.call("Page.getLayoutMetrics", json!({}))["cssContentSize"].clone();
        let clip = json!({"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1});
        let shot =
            self.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true, "clip": clip}));
        let bytes = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }

    pub fn png(&mut self) -> Vec<u8> {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap()
    }

    /// Downloads go into `dir`.
    pub fn allow_downloads(&mut self, dir: &Path) {
        self.call_on(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": dir.to_str().unwrap(), "eventsEnabled": true}),
        );
    }

    /// The URL of every request the page made, with its request headers.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| {
                (
                    e["params"]["request"]["url"].as_str().unwrap_or("").to_string(),
                    e["params"]["request"]["headers"].clone(),
                )
            })
            .collect()
    }

    /// (url, status) of every response.
    pub fn responses(&self) -> Vec<(String, u64)> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.responseReceived")
            .map(|e| {
                let r = &e["params"]["response"];
                (r["url"].as_str().unwrap_or("").to_string(), r["status"].as_u64().unwrap_or(0))
            })
            .collect()
    }

    /// Console errors, uncaught exceptions and browser-reported errors (CSP violations, failed
    /// loads) seen so far.
    pub fn errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.events {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.consoleAPICalled" if matches!(p["type"].as_str(), Some("error" | "assert")) => {
                    out.push(format!("console.{}: {}", p["type"], p["args"]))
                }
                "Runtime.exceptionThrown" => out.push(format!("exception: {}", p["exceptionDetails"])),
                "Log.entryAdded" if p["entry"]["level"] == "error" => out.push(format!("log: {}", p["entry"])),
                _ => {}
            }
        }
        out
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // SAFETY: the group is Chromium's own (process_group(0) at spawn).
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Where the docs screenshots go: `docs/` when `AC_UPDATE_DOCS=1` (to commit them), else a
/// scratch folder under the target directory.
pub fn docs_image(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("AC_UPDATE_DOCS").is_some() {
        root.join("docs").join(name)
    } else {
        std::env::temp_dir().join(format!("ac-docs-{}", std::process::id())).join(name)
    }
}
