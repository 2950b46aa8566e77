//! The browser backend: one Chromium, driven over the DevTools protocol.
//!
//! Chromium starts on first use with a fresh profile, `--remote-debugging-port=0` (the port is
//! read from `DevToolsActivePort`) and the flags that keep it off the network. Every browser
//! tool of DESIGN §6 is here; page-side work runs in `page.js`. If Chromium dies, the next
//! command starts a new one and its result says so. Downloads fetch with the page's cookies
//! and user agent, stream to disk, and are uploaded to the controller.

use crate::cdp::{Cdp, CdpError};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

const PAGE_JS: &str = include_str!("page.js");
const CALL: Duration = Duration::from_secs(30);
const NAVIGATION: Duration = Duration::from_secs(30);
const DOM_CHARS: usize = 12_000;
const TEXT_CHARS: usize = 20_000;

/// Process group and profile of the running Chromium, for the signal handler's cleanup.
pub static BROWSER_PGID: AtomicI32 = AtomicI32::new(0);
pub static PROFILE: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// A Chromium being started: killed (whole group) and its profile removed unless handed over.
struct Launching {
    child: Option<Child>,
    profile: PathBuf,
}

impl Drop for Launching {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: our own child's process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            BROWSER_PGID.store(0, Ordering::Release);
            *PROFILE.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let _ = std::fs::remove_dir_all(&self.profile);
        }
    }
}

/// A new directory only we can use, with an unguessable name (exclusive create, mode 0700).
pub fn private_dir(prefix: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    for _ in 0..16 {
        let dir = std::env::temp_dir().join(format!("{prefix}{:016x}", agent_controller::clock::random_u64()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary directory name"))
}

/// A new file in `dir` that did not exist before (never follows a planted symlink).
fn temp_file(dir: &Path, tag: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        let path = dir.join(format!(".{tag}-{:016x}", agent_controller::clock::random_u64()));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

pub struct Options {
    pub path: PathBuf,
    pub headless: bool,
    pub width: u32,
    pub height: u32,
    pub download_dir: PathBuf,
}

/// What a tool needs from outside the browser: uploading a finished file.
pub trait Uploader {
    fn upload(&self, filename: &str, path: &Path) -> Result<Value, String>;
}

struct Running {
    child: Child,
    profile: PathBuf,
    cdp: Cdp,
    session: String,
    target: String,
}

pub struct Browser {
    pub opts: Options,
    /// When the controller stops waiting for the current command.
    deadline: Option<Instant>,
    running: Option<Running>,
    started_once: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signals to our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        BROWSER_PGID.store(0, Ordering::Release);
        *PROFILE.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn cdp_err(e: CdpError) -> String {
    e.to_string()
}

impl Browser {
    pub fn new(opts: Options) -> Browser {
        Browser { opts, running: None, started_once: false, deadline: None }
    }

    pub fn shutdown(&mut self) {
        self.running = None;
    }

    fn launch(&self) -> Result<Running, String> {
        let profile = private_dir(&format!("agent-worker-profile-{}-", std::process::id()))
            .map_err(|e| format!("cannot create a browser profile: {e}"))?;
        let mut cmd = Command::new(&self.opts.path);
        cmd.arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.display()))
            .args([
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
                "--metrics-recording-only",
                "--password-store=basic",
                "--use-mock-keychain",
                "--disable-gpu",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--window-size={},{}", self.opts.width, self.opts.height));
        if self.opts.headless {
            cmd.arg("--headless=new");
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--no-sandbox");
        }
        cmd.arg("about:blank").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(format!("cannot start the browser {}: {e}", self.opts.path.display()));
            }
        };
        BROWSER_PGID.store(child.id() as i32, Ordering::Release);
        *PROFILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(profile.clone());
        // From here on the guard kills the process group and removes the profile on any failure.
        let mut guard = Launching { child: Some(child), profile: profile.clone() };
        let port_file = profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(20);
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) =
                    (lines.next().and_then(|p| p.trim().parse::<u16>().ok()), lines.next())
                {
                    break (port, path.trim().to_string());
                }
            }
            if let Some(Ok(Some(status))) = guard.child.as_mut().map(Child::try_wait) {
                let hint = if std::env::var_os("DISPLAY").is_none() && !self.opts.headless {
                    " (headed, but there is no DISPLAY: pass --headless)"
                } else {
                    ""
                };
                return Err(format!("the browser exited at start ({status}){hint}"));
            }
            if Instant::now() > deadline {
                return Err("the browser did not open its DevTools port within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        let mut cdp = Cdp::connect(port, &path).map_err(|e| format!("cannot connect to the browser: {e}"))?;
        // Downloads go through browser_download (with cookies, uploaded to the controller);
        // nothing is saved behind the worker's back.
        cdp.call(None, "Browser.setDownloadBehavior", json!({"behavior": "deny"}), CALL).map_err(cdp_err)?;
        let child = guard.child.take().ok_or("internal: the browser process is gone")?;
        let mut running = Running { child, profile, cdp, session: String::new(), target: String::new() };
        reattach(&mut running, self.opts.width, self.opts.height)?;
        Ok(running)
    }

    /// The running browser, started (or restarted) if needed; the note says when it was.
    fn ensure(&mut self) -> Result<Option<&'static str>, String> {
        let dead = match self.running.as_mut() {
            Some(r) => !matches!(r.child.try_wait(), Ok(None)),
            None => true,
        };
        if !dead {
            return Ok(None);
        }
        let restarted = self.running.is_some() || self.started_once;
        self.running = None;
        self.running = Some(self.launch()?);
        self.started_once = true;
        Ok(restarted.then_some("the browser had stopped and was restarted; earlier pages and logins are gone"))
    }

    fn r(&mut self) -> Result<&mut Running, String> {
        self.running.as_mut().ok_or_else(|| "the browser is not running".to_string())
    }

    /// Run one command; `deadline` is when the controller stops waiting for it.
    pub fn execute(
        &mut self,
        action: &str,
        p: &Value,
        up: &dyn Uploader,
        deadline: Option<Instant>,
    ) -> Result<Value, String> {
        self.deadline = deadline;
        let note = self.ensure()?;
        let mut result = self.dispatch(action, p, up);
        if let Err(e) = &result {
            // A dead connection or a browser that stopped answering: start afresh next time.
            if e.starts_with("the browser connection closed") || e.starts_with("the browser did not answer") {
                self.running = None;
                return Err(format!("{e}; it will be restarted on the next command"));
            }
            // The page closed its own tab: attach to another one.
            if e.contains("No session with given id")
                || e.contains("No target with given id")
                || e.contains("Target closed")
            {
                let (w, h) = (self.opts.width, self.opts.height);
                if let Some(r) = self.running.as_mut() {
                    if reattach(r, w, h).is_err() {
                        self.running = None;
                    }
                }
                result = Err(format!("{e} (the tab was closed; now on another tab: navigate again)"));
            }
        }
        let dialogs = self.running.as_mut().map(|r| r.cdp.take_dialogs()).unwrap_or_default();
        let result = match (result, dialogs.is_empty()) {
            (Ok(v), false) => {
                Ok(with(v, "dialogs", json!(format!("the page showed {} and it was accepted", dialogs.join(", ")))))
            }
            (Err(e), false) => Err(format!("{e} (the page showed {}, accepted)", dialogs.join(", "))),
            (r, true) => r,
        };
        match (result, note) {
            (Ok(v), Some(n)) => Ok(with(v, "note", json!(n))),
            (Err(e), Some(n)) => Err(format!("{e} ({n})")),
            (r, None) => r,
        }
    }

    fn dispatch(&mut self, action: &str, p: &Value, up: &dyn Uploader) -> Result<Value, String> {
        let sel = |name: &str| p[name].as_str().filter(|s| !s.is_empty()).ok_or_else(|| format!("missing `{name}`"));
        match action {
            "browser_navigate" => {
                let url = sel("url")?;
                self.navigate(url)
            }
            "browser_screenshot" => self.screenshot(p["full_page"].as_bool().unwrap_or(false)),
            "browser_get_dom" => {
                let root = p["selector"].as_str().filter(|s| !s.is_empty());
                let outline =
                    self.eval(&format!("__ac.outline({}, {DOM_CHARS})", root.map_or_else(|| "null".into(), js)))?;
                Ok(json!({"outline": outline}))
            }
            "browser_get_text" => {
                let root = p["selector"].as_str().filter(|s| !s.is_empty());
                let text = self.eval(&format!("__ac.text({})", root.map_or_else(|| "null".into(), js)))?;
                let text = text.as_str().unwrap_or_default();
                let cut: String = text.chars().take(TEXT_CHARS).collect();
                Ok(json!({"text": cut, "truncated": text.chars().count() > TEXT_CHARS}))
            }
            "browser_click" => self.click(sel("selector")?),
            "browser_type" => {
                let selector = sel("selector")?;
                let text = p["text"].as_str().ok_or("missing `text`")?;
                let clear = p["clear"].as_bool().unwrap_or(true);
                self.eval(&format!("__ac.focusForTyping({}, {clear})", js(selector)))?;
                self.page_call("Input.insertText", json!({"text": text}))?;
                if p["press_enter"].as_bool().unwrap_or(false) {
                    self.key("Enter")?;
                    self.settle()?;
                }
                // Never echo the text: it may be a password.
                Ok(json!({"typed": text.chars().count(), "into": selector}))
            }
            "browser_press_key" => {
                let key = sel("key")?;
                self.key(key)?;
                self.settle()?;
                Ok(json!({"pressed": key}))
            }
            "browser_scroll" => {
                if let Some(s) = p["selector"].as_str().filter(|s| !s.is_empty()) {
                    self.eval(&format!("(__ac.find({}).scrollIntoView({{block: 'center'}}), true)", js(s)))?;
                } else {
                    let amount = p["amount"].as_i64().unwrap_or(0);
                    let (dx, dy) = match p["direction"].as_str().unwrap_or("down") {
                        "up" => (0, -1),
                        "left" => (-1, 0),
                        "right" => (1, 0),
                        _ => (0, 1),
                    };
                    self.eval(&format!(
                        "(() => {{ const a = {amount} || Math.round(innerHeight * 0.8); scrollBy({dx} * a, {dy} * a); return true; }})()"
                    ))?;
                }
                self.eval("__ac.info()")
            }
            "browser_hover" => {
                let c = self.eval(&format!("__ac.center(__ac.find({}))", js(sel("selector")?)))?;
                self.mouse("mouseMoved", &c, 0)?;
                Ok(json!({"hovered": c["tag"], "text": c["text"]}))
            }
            "browser_select_option" => {
                let value = p["value"].as_str().ok_or("missing `value`")?;
                self.eval(&format!("__ac.selectOption({}, {})", js(sel("selector")?), js(value)))
            }
            "browser_wait_for" => {
                let timeout = Duration::from_secs(p["timeout_s"].as_u64().unwrap_or(30).clamp(1, 600));
                self.wait_for(p["selector"].as_str(), p["text"].as_str(), timeout)
            }
            "browser_back" | "browser_forward" => {
                let step = if action == "browser_back" { -1 } else { 1 };
                let history = self.page_call("Page.getNavigationHistory", json!({}))?;
                let index = history["currentIndex"].as_i64().unwrap_or(0) + step;
                let entry = history["entries"]
                    .as_array()
                    .and_then(|e| usize::try_from(index).ok().and_then(|i| e.get(i)).cloned());
                let Some(entry) = entry else {
                    return Err(format!("there is no page to go {}", if step < 0 { "back to" } else { "forward to" }));
                };
                self.page_call("Page.navigateToHistoryEntry", json!({"entryId": entry["id"]}))?;
                std::thread::sleep(Duration::from_millis(100));
                self.wait_ready(NAVIGATION)?;
                self.eval("__ac.info()")
            }
            "browser_get_page_info" => {
                let info = self.eval("__ac.info()")?;
                Ok(with(info, "tabs", self.tabs()?))
            }
            "browser_switch_tab" => self.switch_tab(p),
            "browser_download" => {
                let url = sel("url")?;
                self.download(url, p["filename"].as_str(), up)
            }
            "browser_download_batch" => {
                let urls = p["urls"].as_array().ok_or("missing `urls`")?;
                let (mut done, mut failed) = (Vec::new(), Vec::new());
                for u in urls {
                    let Some(url) = u["url"].as_str() else {
                        failed.push(json!({"entry": u, "error": "missing `url`"}));
                        continue;
                    };
                    if self.deadline.is_some_and(|d| Instant::now() >= d) {
                        failed.push(json!({"url": url, "error": "not started: the command's time ran out (download the rest in another call)"}));
                        continue;
                    }
                    match self.download(url, u["filename"].as_str(), up) {
                        Ok(v) => done.push(v),
                        Err(e) => failed.push(json!({"url": url, "error": e})),
                    }
                }
                if done.is_empty() && !failed.is_empty() {
                    return Err(format!("no file could be downloaded: {}", Value::Array(failed)));
                }
                Ok(json!({"downloaded": done, "failed": failed}))
            }
            "browser_scrape_links" => {
                let links = self.eval(&format!(
                    "__ac.links({}, {}, {})",
                    p["selector"].as_str().map_or_else(|| "null".into(), js),
                    p["pattern"].as_str().map_or_else(|| "null".into(), js),
                    p["attribute"].as_str().map_or_else(|| "null".into(), js)
                ))?;
                let all = links.as_array().cloned().unwrap_or_default();
                let count = all.len();
                Ok(
                    json!({"count": count, "links": all.into_iter().take(500).collect::<Vec<_>>(), "truncated": count > 500}),
                )
            }
            "browser_scrape_table" => {
                let rows = self.eval(&format!("__ac.table({})", js(sel("selector")?)))?;
                let rows: Vec<Vec<String>> =
                    serde_json::from_value(rows).map_err(|e| format!("unreadable table: {e}"))?;
                let columns = rows.first().map(Vec::len).unwrap_or(0);
                if p["format"].as_str() == Some("json") {
                    let header = rows.first().cloned().unwrap_or_default();
                    let data: Vec<Value> = rows
                        .iter()
                        .skip(1)
                        .map(|r| {
                            let obj: serde_json::Map<String, Value> = header
                                .iter()
                                .enumerate()
                                .map(|(i, h)| (h.clone(), json!(r.get(i).cloned().unwrap_or_default())))
                                .collect();
                            Value::Object(obj)
                        })
                        .collect();
                    Ok(json!({"rows": rows.len(), "columns": columns, "data": data}))
                } else {
                    Ok(json!({"rows": rows.len(), "columns": columns, "csv": to_csv(&rows)}))
                }
            }
            "browser_scrape_text" => {
                let selectors = p["selectors"].as_array().ok_or("missing `selectors`")?;
                self.eval(&format!("__ac.texts({})", Value::Array(selectors.clone())))
            }
            "browser_fill_form" => {
                let fields = p["fields"].as_array().ok_or("missing `fields`")?;
                let done = self.eval(&format!("__ac.fill({})", Value::Array(fields.clone())))?;
                Ok(json!({"filled": done}))
            }
            "browser_submit_form" => {
                let form = p["selector"].as_str().map_or_else(|| "null".into(), js);
                let button = p["submit_selector"].as_str().map_or_else(|| "null".into(), js);
                let what = self.eval(&format!("__ac.submit({form}, {button})"))?;
                std::thread::sleep(Duration::from_millis(150));
                self.settle()?;
                let info = self.eval("__ac.info()")?;
                Ok(with(info, "action", what))
            }
            "browser_save_as_pdf" => {
                let filename = sel("filename")?;
                if let Some(s) = p["wait_for_selector"].as_str().filter(|s| !s.is_empty()) {
                    self.wait_for(Some(s), None, NAVIGATION)?;
                }
                let pdf = self.page_call_long(
                    "Page.printToPDF",
                    json!({"printBackground": true, "preferCSSPageSize": true}),
                    Duration::from_secs(120),
                )?;
                let bytes = agent_controller::b64::decode(pdf["data"].as_str().unwrap_or_default())?;
                let name = if filename.to_ascii_lowercase().ends_with(".pdf") {
                    filename.to_string()
                } else {
                    format!("{filename}.pdf")
                };
                let (path, mut file) =
                    temp_file(&self.opts.download_dir, "pdf").map_err(|e| format!("cannot write the PDF: {e}"))?;
                file.write_all(&bytes).map_err(|e| format!("cannot write the PDF: {e}"))?;
                drop(file);
                let uploaded = up.upload(&name, &path);
                let _ = std::fs::remove_file(&path);
                Ok(with(uploaded?, "bytes", json!(bytes.len())))
            }
            other => Err(format!("this worker's browser cannot do `{other}`")),
        }
    }

    // ----- page primitives -------------------------------------------------------------------

    fn page_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.page_call_long(method, params, CALL)
    }

    fn page_call_long(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        let r = self.r()?;
        let session = r.session.clone();
        r.cdp.call(Some(&session), method, params, timeout).map_err(cdp_err)
    }

    /// Evaluate `expr` with the helpers loaded; JS exceptions become the error message.
    fn eval(&mut self, expr: &str) -> Result<Value, String> {
        let expression = format!("{PAGE_JS}\n;({expr})");
        let out = self.page_call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(ex) = out.get("exceptionDetails") {
            let text = ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("script error");
            let first = text.lines().next().unwrap_or(text);
            return Err(first.trim_start_matches("Error: ").to_string());
        }
        Ok(out["result"]["value"].clone())
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            // Errors are expected while a navigation swaps the document.
            if let Ok(v) =
                self.page_call("Runtime.evaluate", json!({"expression": "document.readyState", "returnByValue": true}))
            {
                if v["result"]["value"] == "complete" {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(format!("the page did not finish loading within {} s", timeout.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// After an action that may navigate: give it a moment, then wait for the load (bounded).
    fn settle(&mut self) -> Result<(), String> {
        std::thread::sleep(Duration::from_millis(100));
        self.wait_ready(Duration::from_secs(15))
    }

    fn navigate(&mut self, url: &str) -> Result<Value, String> {
        let lower = url.to_ascii_lowercase();
        // No file:// — a page of the worker's own disk would leak through get_text or a PDF.
        if !(lower.starts_with("http://") || lower.starts_with("https://") || lower == "about:blank") {
            return Err(format!("`{url}` is not an absolute http(s) URL"));
        }
        let nav = self.page_call("Page.navigate", json!({"url": url}))?;
        if let Some(err) = nav["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(format!("navigation to {url} failed: {err}"));
        }
        std::thread::sleep(Duration::from_millis(30));
        self.wait_ready(NAVIGATION).map_err(|_| format!("navigation timed out after {} s", NAVIGATION.as_secs()))?;
        let info = self.eval("__ac.info()")?;
        Ok(with(info, "page", self.eval("__ac.glance()")?))
    }

    fn screenshot(&mut self, full_page: bool) -> Result<Value, String> {
        let metrics = self.page_call("Page.getLayoutMetrics", json!({}))?;
        let (params, w, h) = if full_page {
            let size = &metrics["cssContentSize"];
            let (w, h) = (
                size["width"].as_f64().unwrap_or(1280.0).min(4000.0),
                size["height"].as_f64().unwrap_or(720.0).min(8000.0),
            );
            (
                json!({"format": "png", "captureBeyondViewport": true, "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}}),
                w,
                h,
            )
        } else {
            let vp = &metrics["cssVisualViewport"];
            (
                json!({"format": "png"}),
                vp["clientWidth"].as_f64().unwrap_or(0.0),
                vp["clientHeight"].as_f64().unwrap_or(0.0),
            )
        };
        let shot = self.page_call("Page.captureScreenshot", params)?;
        let data = shot["data"].as_str().unwrap_or_default();
        // The image's own size (IHDR), which the viewport metrics only approximate.
        let (w, h) = png_size(data).unwrap_or((w.round() as u32, h.round() as u32));
        Ok(json!({"image_base64": data, "media_type": "image/png", "width": w, "height": h}))
    }

    fn mouse(&mut self, kind: &str, at: &Value, clicks: u32) -> Result<(), String> {
        let (x, y) = (at["x"].as_f64().unwrap_or(0.0), at["y"].as_f64().unwrap_or(0.0));
        let mut params = json!({"type": kind, "x": x, "y": y});
        if kind != "mouseMoved" {
            params["button"] = json!("left");
            params["clickCount"] = json!(clicks);
        }
        self.page_call("Input.dispatchMouseEvent", params).map(|_| ())
    }

    fn click(&mut self, selector: &str) -> Result<Value, String> {
        let c = self.eval(&format!("__ac.center(__ac.find({}))", js(selector)))?;
        self.mouse("mouseMoved", &c, 0)?;
        self.mouse("mousePressed", &c, 1)?;
        self.mouse("mouseReleased", &c, 1)?;
        self.settle()?;
        let info = self.eval("__ac.info()")?;
        Ok(json!({"clicked": c["tag"], "text": c["text"], "url": info["url"], "title": info["title"]}))
    }

    fn key(&mut self, combo: &str) -> Result<(), String> {
        let parts: Vec<&str> = combo.split('+').map(str::trim).filter(|s| !s.is_empty()).collect();
        let Some((key, mods)) = parts.split_last() else { return Err("empty key".into()) };
        let mut modifiers = 0;
        for m in mods {
            modifiers |= match m.to_ascii_lowercase().as_str() {
                "alt" => 1,
                "control" | "ctrl" => 2,
                "meta" | "cmd" | "command" => 4,
                "shift" => 8,
                other => return Err(format!("unknown modifier `{other}`")),
            };
        }
        let (key_name, code, vk, text): (String, String, u32, Option<String>) = match *key {
            "Enter" | "Return" => ("Enter".into(), "Enter".into(), 13, Some("\r".into())),
            "Tab" => ("Tab".into(), "Tab".into(), 9, None),
            "Escape" | "Esc" => ("Escape".into(), "Escape".into(), 27, None),
            "Backspace" => ("Backspace".into(), "Backspace".into(), 8, None),
            "Delete" => ("Delete".into(), "Delete".into(), 46, None),
            "ArrowUp" | "Up" => ("ArrowUp".into(), "ArrowUp".into(), 38, None),
            "ArrowDown" | "Down" => ("ArrowDown".into(), "ArrowDown".into(), 40, None),
            "ArrowLeft" | "Left" => ("ArrowLeft".into(), "ArrowLeft".into(), 37, None),
            "ArrowRight" | "Right" => ("ArrowRight".into(), "ArrowRight".into(), 39, None),
            "Home" => ("Home".into(), "Home".into(), 36, None),
            "End" => ("End".into(), "End".into(), 35, None),
            "PageUp" => ("PageUp".into(), "PageUp".into(), 33, None),
            "PageDown" => ("PageDown".into(), "PageDown".into(), 34, None),
            "Space" | " " => (" ".into(), "Space".into(), 32, Some(" ".into())),
            k if k.chars().count() == 1 => {
                let c = k.chars().next().unwrap_or(' ');
                let upper = c.to_ascii_uppercase();
                let code = if c.is_ascii_digit() { format!("Digit{c}") } else { format!("Key{upper}") };
                (k.to_string(), code, upper as u32, Some(k.to_string()))
            }
            other => return Err(format!("unknown key `{other}`")),
        };
        let typed = text.filter(|_| modifiers & (1 | 2 | 4) == 0);
        let mut down = json!({"type": if typed.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key_name, "code": code,
            "windowsVirtualKeyCode": vk, "modifiers": modifiers});
        if let Some(t) = &typed {
            down["text"] = json!(t);
        }
        self.page_call("Input.dispatchKeyEvent", down)?;
        self.page_call("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": key_name, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}))?;
        Ok(())
    }

    fn wait_for(&mut self, selector: Option<&str>, text: Option<&str>, timeout: Duration) -> Result<Value, String> {
        let check = match (selector.filter(|s| !s.is_empty()), text.filter(|s| !s.is_empty())) {
            (Some(s), _) => format!(
                "(() => {{ try {{ const e = __ac.find({}); return !!e; }} catch (x) {{ return false; }} }})()",
                js(s)
            ),
            (None, Some(t)) => format!("document.body && document.body.innerText.includes({})", js(t)),
            (None, None) => return Err("give `selector` or `text` to wait for".into()),
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Value::Bool(true)) = self.eval(&check) {
                return Ok(
                    json!({"found": selector.or(text), "after_ms": (timeout - deadline.saturating_duration_since(Instant::now())).as_millis() as u64}),
                );
            }
            if Instant::now() > deadline {
                let what =
                    selector.map(|s| format!("`{s}`")).or(text.map(|t| format!("the text {t:?}"))).unwrap_or_default();
                return Err(format!("waited {} s: {what} did not appear", timeout.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn tabs(&mut self) -> Result<Value, String> {
        let r = self.r()?;
        let current = r.target.clone();
        let targets = r.cdp.call(None, "Target.getTargets", json!({}), CALL).map_err(cdp_err)?;
        let pages: Vec<Value> = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "page")
            .enumerate()
            .map(|(i, t)| json!({"index": i, "url": t["url"], "title": t["title"], "active": t["targetId"] == current.as_str()}))
            .collect();
        Ok(Value::Array(pages))
    }

    fn switch_tab(&mut self, p: &Value) -> Result<Value, String> {
        let (width, height) = (self.opts.width, self.opts.height);
        let r = self.r()?;
        let targets = r.cdp.call(None, "Target.getTargets", json!({}), CALL).map_err(cdp_err)?;
        let pages: Vec<Value> =
            targets["targetInfos"].as_array().into_iter().flatten().filter(|t| t["type"] == "page").cloned().collect();
        let chosen = if let Some(i) = p["index"].as_u64() {
            pages.get(i as usize).cloned()
        } else if let Some(part) = p["url_contains"].as_str() {
            pages.iter().find(|t| t["url"].as_str().unwrap_or("").contains(part)).cloned()
        } else {
            return Err("give `index` or `url_contains`".into());
        };
        let Some(t) = chosen else {
            return Err(format!(
                "no such tab; open tabs: {}",
                pages.iter().map(|t| t["url"].as_str().unwrap_or("")).collect::<Vec<_>>().join(", ")
            ));
        };
        let id = t["targetId"].as_str().unwrap_or_default().to_string();
        r.cdp.call(None, "Target.activateTarget", json!({"targetId": id}), CALL).map_err(cdp_err)?;
        attach(r, &id, width, height)?;
        self.eval("__ac.info()")
    }

    /// The browser's cookies for `url`, as `name=value` pairs.
    fn cookies_for(&mut self, url: &str) -> Result<Vec<String>, String> {
        let cookies = self.page_call("Network.getCookies", json!({"urls": [url]}))?;
        Ok(cookies["cookies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{}={}", c["name"].as_str().unwrap_or(""), c["value"].as_str().unwrap_or("")))
            .collect())
    }

    /// Fetch `url` with the page's cookies, stream it to disk, upload it.
    fn download(&mut self, url: &str, filename: Option<&str>, up: &dyn Uploader) -> Result<Value, String> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("`{url}` is not an http(s) URL"));
        }
        let cookie_header = self.cookies_for(url)?;
        let ua = {
            let r = self.r()?;
            r.cdp.call(None, "Browser.getVersion", json!({}), CALL).map_err(cdp_err)?["userAgent"]
                .as_str()
                .unwrap_or("agent-worker")
                .to_string()
        };
        let referer = self.eval("location.href").ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(20)))
            // No longer than the controller will wait for this command.
            .timeout_global(Some(
                self.deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(Duration::from_secs(3600))
                    .max(Duration::from_secs(1)),
            ))
            .build()
            .into();
        // Redirects by hand: ureq drops Cookie on a redirect, and each hop needs its own cookies.
        let mut current = url.to_string();
        let mut cookie_header = cookie_header;
        let mut hops = 0;
        let mut resp = loop {
            let mut req = agent.get(&current).header("User-Agent", &ua);
            if !cookie_header.is_empty() {
                req = req.header("Cookie", cookie_header.join("; "));
            }
            if referer.starts_with("http") {
                req = req.header("Referer", &referer);
            }
            let resp = req.call().map_err(|e| format!("download of {url} failed: {e}"))?;
            let status = resp.status().as_u16();
            let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_string);
            match (status, location) {
                (301 | 302 | 303 | 307 | 308, Some(loc)) if hops < 10 => {
                    hops += 1;
                    current = join_url(&current, &loc);
                    cookie_header = self.cookies_for(&current)?;
                }
                _ => break resp,
            }
        };
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(format!("download of {url} failed: HTTP {status}"));
        }
        let from_header =
            resp.headers().get("content-disposition").and_then(|v| v.to_str().ok()).and_then(disposition_filename);
        let name = filename
            .filter(|f| !f.trim().is_empty())
            .map(str::to_string)
            .or(from_header)
            .or_else(|| {
                url.split(['?', '#'])
                    .next()
                    .and_then(|u| u.rsplit('/').next())
                    .filter(|s| !s.is_empty())
                    .map(agent_controller::http::percent_decode)
            })
            .unwrap_or_else(|| "download".into());
        let (path, mut file) =
            temp_file(&self.opts.download_dir, "dl").map_err(|e| format!("cannot write the download: {e}"))?;
        let written = {
            let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
            let mut buf = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        let _ = std::fs::remove_file(&path);
                        return Err(format!("download of {url} broke off: {e}"));
                    }
                };
                if let Err(e) = file.write_all(&buf[..n]) {
                    let _ = std::fs::remove_file(&path);
                    return Err(format!("cannot write the download: {e}"));
                }
                total += n as u64;
            }
            total
        };
        let uploaded = up.upload(&name, &path);
        let _ = std::fs::remove_file(&path);
        Ok(with(with(uploaded?, "url", json!(url)), "bytes", json!(written)))
    }
}

/// Attach to the first page target that is still there (or a new one).
fn reattach(r: &mut Running, width: u32, height: u32) -> Result<(), String> {
    let targets = r.cdp.call(None, "Target.getTargets", json!({}), CALL).map_err(cdp_err)?;
    let target = targets["targetInfos"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str().map(str::to_string));
    let target = match target {
        Some(t) => t,
        None => {
            r.cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), CALL).map_err(cdp_err)?["targetId"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
    };
    attach(r, &target, width, height)
}

fn attach(r: &mut Running, target: &str, width: u32, height: u32) -> Result<(), String> {
    let attached = r
        .cdp
        .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), CALL)
        .map_err(cdp_err)?;
    let session = attached["sessionId"].as_str().ok_or("the browser gave no session id")?.to_string();
    for (method, params) in [
        ("Page.enable", json!({})),
        ("Network.enable", json!({})),
        (
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        ),
    ] {
        r.cdp.call(Some(&session), method, params, CALL).map_err(cdp_err)?;
    }

    r.session = session;
    r.target = target.to_string();
    Ok(())
}

/// Resolve a redirect target against the URL it came from.
fn join_url(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let host = rest.split('/').next().unwrap_or("");
    if let Some(abs) = location.strip_prefix("//") {
        return format!("{scheme}://{abs}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{host}{location}");
    }
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or(host);
    format!("{scheme}://{dir}/{location}")
}

/// `value` with `key` set; a page-supplied value that is not an object is wrapped, never
/// indexed (serde_json's IndexMut panics on non-objects).
fn with(value: Value, key: &str, extra: Value) -> Value {
    let mut map = match value {
        Value::Object(m) => m,
        other => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }
    };
    map.insert(key.to_string(), extra);
    Value::Object(map)
}

fn disposition_filename(v: &str) -> Option<String> {
    if let Some(i) = v.find("filename*=") {
        let rest = v[i + 10..].split(';').next()?.trim();
        let enc = rest.split("''").nth(1).unwrap_or(rest);
        return Some(agent_controller::http::percent_decode(enc.trim_matches('"')));
    }
    let i = v.find("filename=")?;
    Some(v[i + 9..].split(';').next()?.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty())
}

/// Width and height from a base64 PNG's IHDR chunk (bytes 16..24).
fn png_size(b64: &str) -> Option<(u32, u32)> {
    let head = agent_controller::b64::decode(b64.get(..44)?).ok()?;
    let be = |i: usize| Some(u32::from_be_bytes(head.get(i..i + 4)?.try_into().ok()?));
    head.starts_with(b"\x89PNG").then_some(())?;
    Some((be(16)?, be(20)?))
}

fn to_csv(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> =
            row.iter()
                .map(|c| {
                    if c.contains([',', '"', '\n', '\r']) {
                        format!("\"{}\"", c.replace('"', "\"\""))
                    } else {
                        c.clone()
                    }
                })
                .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}
