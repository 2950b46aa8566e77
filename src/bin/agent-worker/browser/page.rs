//! Page primitives the browser tools are built from: DevTools calls on the attached page,
//! script evaluation with the `page.js` helpers (in an isolated world of their own, out of the
//! page's reach), waiting for loads, navigation, screenshots, the mouse, and tabs.
//!
//! Every call has a deadline, so a hung page cannot hang the worker. A script exception comes
//! back as `WorkerError::Page` with the helper's own message (written for the model, e.g.
//! "no element matches `#buy` … did you mean `#prices`?"); DevTools failures stay
//! `WorkerError::Browser`, so `Browser::recover` can tell a lost connection from a page error.

use super::Browser;
use super::launch::{self, CALL};
use super::util::{js, png_size};
use crate::cdp::CdpError;
use crate::error::WorkerError;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The secret fields' masks, the special inputs' forms, the page helpers (which use them), the
/// locators of exported runs and the snapshot (which build on them), then the hold on form sends
/// (`hold_submits`).
const PAGE_JS: &str = concat!(
    include_str!("../masks.js"),
    "\n",
    include_str!("../inputs.js"),
    "\n",
    include_str!("../page.js"),
    "\n",
    include_str!("../locate.js"),
    "\n",
    include_str!("../snapshot.js"),
    "\n",
    include_str!("../submits.js")
);
pub const NAVIGATION: Duration = Duration::from_secs(30);
/// What a script run in a world without our mark throws.
const STALE: &str = "agent-worker: not the helpers' world";

impl Browser {
    pub(super) fn page_call(&mut self, method: &str, params: Value) -> Result<Value, WorkerError> {
        self.page_call_long(method, params, CALL)
    }

    pub(super) fn page_call_long(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, WorkerError> {
        let r = self.r()?;
        let session = r.session.clone();
        Ok(r.cdp.call(Some(&session), method, params, timeout)?)
    }

    /// Evaluate `expr` with the helpers loaded; JS exceptions become the error message.
    pub(super) fn eval(&mut self, expr: &str) -> Result<Value, WorkerError> {
        let out = self.evaluate_isolated(&self.with_mode(expr), true)?;
        if let Some(ex) = out.get("exceptionDetails") {
            return Err(thrown(ex));
        }
        Ok(out["result"]["value"].clone())
    }

    /// `expr` after telling the helpers this command's selector mode (a page loaded during the
    /// command gets helpers of its own).
    fn with_mode(&self, expr: &str) -> String {
        format!("(window.__ac && __ac.looseFor({}), ({expr}))", self.loose_selectors)
    }

    /// The element `expr` evaluates to, as a remote object id for a DevTools call (`None` when it
    /// is null); JS exceptions become the error message, as in `eval`.
    pub(super) fn eval_element(&mut self, expr: &str) -> Result<Option<String>, WorkerError> {
        let out = self.evaluate_isolated(&self.with_mode(expr), false)?;
        if let Some(ex) = out.get("exceptionDetails") {
            return Err(thrown(ex));
        }
        Ok(out["result"]["objectId"].as_str().map(str::to_string))
    }

    /// The attached page's isolated world for the helpers, made (helpers loaded once, then
    /// marked) if needed. The page's own scripts share its DOM but none of its globals: they can
    /// neither replace `__ac`, `JSON` or a prototype the helpers use, nor see what the helpers do.
    fn world(&mut self) -> Result<u64, WorkerError> {
        let r = self.r()?;
        if let Some(id) = r.world {
            return Ok(id);
        }
        let session = r.session.clone();
        let tree = r.cdp.call(Some(&session), "Page.getFrameTree", json!({}), CALL)?;
        let frame = tree["frameTree"]["frame"]["id"].clone();
        let params = json!({"frameId": frame, "worldName": "agent-worker"});
        let made = r.cdp.call(Some(&session), "Page.createIsolatedWorld", params, CALL)?;
        let id = made["executionContextId"]
            .as_u64()
            .ok_or_else(|| WorkerError::Browser(CdpError::Protocol("the browser gave no isolated world".into())))?;
        // The helpers (25 KB) once per world, not with every call; the mark after them, so a
        // marked world always has them.
        let loaded =
            r.cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": PAGE_JS, "contextId": id}), CALL)?;
        if let Some(ex) = loaded.get("exceptionDetails") {
            return Err(WorkerError::Page(format!("the page helpers did not load: {}", ex["text"])));
        }
        let mark = format!("Object.defineProperty(globalThis, '__acWorld', {{value: {}}})", js(&r.world_mark));
        r.cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": mark, "contextId": id}), CALL)?;
        r.world = Some(id);
        Ok(id)
    }

    /// `Runtime.evaluate` in the helpers' world. A world goes with its document, and the
    /// browser may give its id to another world later: a world that is gone or does not
    /// carry our mark is made anew, once.
    fn evaluate_isolated(&mut self, expression: &str, by_value: bool) -> Result<Value, WorkerError> {
        let mut retried = false;
        loop {
            let id = self.world()?;
            let mark = js(&self.r()?.world_mark);
            let guarded = format!("if (globalThis.__acWorld !== {mark}) throw new Error({STALE:?});\n{expression}");
            let params =
                json!({"expression": guarded, "contextId": id, "returnByValue": by_value, "awaitPromise": true});
            let out = self.page_call("Runtime.evaluate", params);
            let stale = match &out {
                Err(WorkerError::Browser(CdpError::Protocol(m))) => m.contains("context"),
                Ok(v) => v["exceptionDetails"]["exception"]["description"].as_str().is_some_and(|d| d.contains(STALE)),
                Err(_) => false,
            };
            if !stale || retried {
                return out;
            }
            self.r()?.world = None;
            retried = true;
        }
    }

    pub(super) fn wait_ready(&mut self, timeout: Duration) -> Result<(), WorkerError> {
        let deadline = Instant::now() + timeout;
        loop {
            // Errors are expected while a navigation swaps the document.
            if let Ok(v) = self.evaluate_isolated("document.readyState", true) {
                if v["result"]["value"] == "complete" {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(WorkerError::Timeout(format!(
                    "the page did not finish loading within {} s",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// After an action that may navigate: give it a moment, then wait for the load (bounded).
    pub(super) fn settle(&mut self) -> Result<(), WorkerError> {
        std::thread::sleep(Duration::from_millis(100));
        self.wait_ready(Duration::from_secs(15))
    }

    pub(super) fn navigate(&mut self, url: &str) -> Result<Value, WorkerError> {
        let lower = url.to_ascii_lowercase();
        // No file:// — a page of the worker's own disk would leak through get_text or a PDF.
        if !(lower.starts_with("http://") || lower.starts_with("https://") || lower == "about:blank") {
            return Err(WorkerError::bad(format!("`{url}` is not an absolute http(s) URL")));
        }
        let nav = self.page_call("Page.navigate", json!({"url": url}))?;
        if let Some(err) = nav["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(WorkerError::Page(format!("navigation to {url} failed: {err}")));
        }
        std::thread::sleep(Duration::from_millis(30));
        self.wait_ready(NAVIGATION)
            .map_err(|_| WorkerError::Timeout(format!("navigation timed out after {} s", NAVIGATION.as_secs())))?;
        self.eval("__ac.info()")
    }

    /// Go `step` entries through the tab's history (-1 back, 1 forward) and wait for the load.
    pub(super) fn history(&mut self, step: i64) -> Result<Value, WorkerError> {
        let history = self.page_call("Page.getNavigationHistory", json!({}))?;
        let index = history["currentIndex"].as_i64().unwrap_or(0) + step;
        let entry =
            history["entries"].as_array().and_then(|e| usize::try_from(index).ok().and_then(|i| e.get(i)).cloned());
        let Some(entry) = entry else {
            let whither = if step < 0 { "back to" } else { "forward to" };
            return Err(WorkerError::Page(format!("there is no page to go {whither}")));
        };
        self.page_call("Page.navigateToHistoryEntry", json!({"entryId": entry["id"]}))?;
        std::thread::sleep(Duration::from_millis(100));
        self.wait_ready(NAVIGATION)?;
        self.eval("__ac.info()")
    }

    pub(super) fn screenshot(&mut self, full_page: bool) -> Result<Value, WorkerError> {
        let metrics = self.page_call("Page.getLayoutMetrics", json!({}))?;
        let (params, w, h) = if full_page {
            let size = &metrics["cssContentSize"];
            let (w, h) = (
                size["width"].as_f64().unwrap_or(1280.0).min(4000.0),
                size["height"].as_f64().unwrap_or(720.0).min(8000.0),
            );
            let clip = json!({"x": 0, "y": 0, "width": w, "height": h, "scale": 1});
            (json!({"format": "png", "captureBeyondViewport": true, "clip": clip}), w, h)
        } else {
            let vp = &metrics["cssVisualViewport"];
            (
                json!({"format": "png"}),
                vp["clientWidth"].as_f64().unwrap_or(0.0),
                vp["clientHeight"].as_f64().unwrap_or(0.0),
            )
        };
        // Secret fields painted over before the picture leaves the worker (`masks.rs`).
        let data = self.masked_screenshot(params, w, full_page)?;
        let data = data.as_str();
        // The image's own size (IHDR), which the viewport metrics only approximate.
        let (w, h) = png_size(data).unwrap_or((w.round() as u32, h.round() as u32));
        Ok(json!({"image_base64": data, "media_type": "image/png", "width": w, "height": h}))
    }

    pub(super) fn mouse(&mut self, kind: &str, at: &Value, clicks: u32) -> Result<(), WorkerError> {
        let (x, y) = (at["x"].as_f64().unwrap_or(0.0), at["y"].as_f64().unwrap_or(0.0));
        let mut params = json!({"type": kind, "x": x, "y": y});
        if kind != "mouseMoved" {
            params["button"] = json!("left");
            params["clickCount"] = json!(clicks);
        }
        self.page_call("Input.dispatchMouseEvent", params).map(|_| ())
    }

    /// A click, aimed first (`aim` in page.js), with the checks and words the controller's guards
    /// ask for (`hold_invalid`, `confirm_defaults`, `advice`); a refusal comes back typed (`WorkerError::Refused`).
    pub(super) fn click(&mut self, selector: &str, p: &Value) -> Result<Value, WorkerError> {
        let confirm = p["confirm_defaults"].as_bool().unwrap_or(false);
        let hold = p["hold_invalid"] == true;
        let c = self.eval(&format!("__ac.aim({}, {confirm}, {hold})", js(selector)))?;
        if c["refused"].is_string() {
            return Err(WorkerError::refused(c));
        }
        self.mouse("mouseMoved", &c, 0)?;
        self.mouse("mousePressed", &c, 1)?;
        self.mouse("mouseReleased", &c, 1)?;
        self.last_click = c["x"].as_f64().zip(c["y"].as_f64());
        self.settle()?;
        let info = self.eval("__ac.info()")?;
        let mut done = json!({"clicked": c["tag"], "text": c["text"], "url": info["url"], "title": info["title"]});
        // What to do with the field clicked, where the controller asks (`tool_advice`).
        if let Some(next) = c["next"].as_str().filter(|_| p["advice"] == true) {
            done["next"] = next.into();
        }
        Ok(done)
    }

    /// A click at a point of a viewport screenshot (a person clicking on the picture): its
    /// pixels are device pixels, the page's are CSS pixels.
    pub(super) fn click_at(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let ratio = self.eval("window.devicePixelRatio")?.as_f64().filter(|r| *r > 0.0).unwrap_or(1.0);
        let (x, y) = (p["x"].as_f64().unwrap_or(0.0) / ratio, p["y"].as_f64().unwrap_or(0.0) / ratio);
        let hit = self.eval(&format!(
            "(() => {{ const e = document.elementFromPoint({x}, {y}); \
             return e ? {{tag: e.tagName.toLowerCase(), text: (e.innerText || e.value || '').trim().slice(0, 80)}} : null; }})()"
        ))?;
        let at = json!({"x": x, "y": y});
        self.mouse("mouseMoved", &at, 0)?;
        self.mouse("mousePressed", &at, 1)?;
        self.mouse("mouseReleased", &at, 1)?;
        self.last_click = Some((x, y));
        self.settle()?;
        let info = self.eval("__ac.info()")?;
        Ok(json!({"clicked": hit["tag"], "text": hit["text"], "at": at, "url": info["url"], "title": info["title"]}))
    }

    /// Poll until `selector` matches or `text` is on the page, up to `timeout`.
    pub(super) fn wait_for(
        &mut self,
        selector: Option<&str>,
        text: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, WorkerError> {
        let check = match (selector.filter(|s| !s.is_empty()), text.filter(|s| !s.is_empty())) {
            (Some(s), _) => format!(
                "(() => {{ try {{ const e = __ac.find({}); return !!e; }} catch (x) {{ return false; }} }})()",
                js(s)
            ),
            (None, Some(t)) => format!("document.body && document.body.innerText.includes({})", js(t)),
            (None, None) => return Err(WorkerError::bad("give `selector` or `text` to wait for")),
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Value::Bool(true)) = self.eval(&check) {
                let waited = timeout - deadline.saturating_duration_since(Instant::now());
                return Ok(json!({"found": selector.or(text), "after_ms": waited.as_millis() as u64}));
            }
            if Instant::now() > deadline {
                let what =
                    selector.map(|s| format!("`{s}`")).or(text.map(|t| format!("the text {t:?}"))).unwrap_or_default();
                return Err(WorkerError::Timeout(format!("waited {} s: {what} did not appear", timeout.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(super) fn tabs(&mut self) -> Result<Value, WorkerError> {
        let r = self.r()?;
        let current = r.target.clone();
        let tabs = launch::pages(r)?
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "url": t["url"], "title": t["title"], "active": t["targetId"] == current.as_str()}))
            .collect();
        Ok(Value::Array(tabs))
    }

    pub(super) fn switch_tab(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let (width, height) = (self.opts.width, self.opts.height);
        let r = self.r()?;
        let pages = launch::pages(r)?;
        let chosen = if let Some(i) = p["index"].as_u64() {
            pages.get(i as usize).cloned()
        } else if let Some(part) = p["url_contains"].as_str() {
            pages.iter().find(|t| t["url"].as_str().unwrap_or("").contains(part)).cloned()
        } else {
            return Err(WorkerError::bad("give `index` or `url_contains`"));
        };
        let Some(t) = chosen else {
            let open: Vec<&str> = pages.iter().map(|t| t["url"].as_str().unwrap_or("")).collect();
            return Err(WorkerError::bad(format!("no such tab; open tabs: {}", open.join(", "))));
        };
        let id = t["targetId"].as_str().unwrap_or_default().to_string();
        r.cdp.call(None, "Target.activateTarget", json!({"targetId": id}), CALL)?;
        launch::attach(r, &id, width, height)?;
        self.eval("__ac.info()")
    }
}

/// What a helper threw: its first line, typed by the class it threw (`NoMatch`, page.js).
fn thrown(ex: &Value) -> WorkerError {
    let text = ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("script error");
    let first = text.lines().next().unwrap_or(text).trim_start_matches("Error: ").to_string();
    match ex["exception"]["className"].as_str() {
        Some("NoMatch") => WorkerError::NoMatch(first),
        _ => WorkerError::Page(first),
    }
}
