//! The browser tools: one handler per `Tool`, each a few page primitives.
//!
//! `dispatch` is the whole list: every browser tool of the library's tool table has an arm,
//! and a tool of another capability is refused. Parameters are checked before the page is
//! touched, in the order the model wrote them into the schema, so a bad call changes nothing.
//! What comes back is what the model reads: capped (outlines, text, link lists), never
//! echoing typed text (it may be a password); an action on the page answers with what it
//! changed there (`changes.rs`).

use super::util::{js, js_or_null, to_csv, with};
use super::{Browser, SecretSite};
use crate::backend::{Context, any_str, array, required_str};
use crate::error::WorkerError;
use agent_controller::protocol::tools::Tool;
use serde_json::{Value, json};
use std::time::Duration;

const DOM_CHARS: usize = 12_000;
const TEXT_CHARS: usize = 20_000;
const LINKS: usize = 500;

impl Browser {
    pub(super) fn dispatch(&mut self, tool: Tool, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        self.loose_selectors = p["loose_selectors"] == true;
        // Described before it acts: a click may take the element away (`locate.rs`).
        let targets = self.describe_targets(tool, p);
        let result = self.run_tool(tool, p, ctx);
        let result = match (self.explain_miss(tool, p, result), targets) {
            (Ok(done), Some((key, described))) if done.is_object() => {
                let described = self.with_effects(key, described, p, &done);
                Ok(with(done, "acted_on", json!({key: described})))
            }
            (other, _) => other,
        };
        match result {
            Ok(done) if self.loose_selectors && done.is_object() => Ok(self.with_loose_reads(done)),
            // A failed command's loose reads are not the next one's.
            Err(e) if self.loose_selectors => {
                let _ = self.eval("__ac.looseRead()");
                Err(e)
            }
            other => other,
        }
    }

    /// `done` with the selectors read in another spelling than asked (`read_as`), for the
    /// controller's log; a page that went away took its list with it.
    fn with_loose_reads(&mut self, done: Value) -> Value {
        match self.eval("__ac.looseRead()") {
            Ok(Value::Array(read)) if !read.is_empty() => with(done, "read_as", Value::Array(read)),
            _ => done,
        }
    }

    fn run_tool(&mut self, tool: Tool, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        match tool {
            // The snapshot says URL, title and status; the scroll position would only be noise.
            Tool::BrowserNavigate => {
                self.navigate(required_str(p, "url")?)?;
                self.then_snapshot(json!({}), p)
            }
            Tool::BrowserSnapshot => self.snapshot(p),
            Tool::BrowserScreenshot => self.screenshot(p["full_page"].as_bool().unwrap_or(false)),
            Tool::BrowserGetDom => self.get_dom(p),
            Tool::BrowserGetText => self.get_text(p),
            Tool::BrowserClick => self.click_tool(p),
            Tool::BrowserType => self.type_into(p),
            Tool::BrowserPressKey => self.press_key(p),
            Tool::BrowserScroll => self.scroll(p),
            Tool::BrowserHover => self.hover(p),
            // A select, a date, number, range or colour field (`setSpecial` in page.js), or a
            // slider or spin button of ARIA (focused there, stepped here).
            Tool::BrowserSelectOption => {
                let (selector, value) = (required_str(p, "selector")?, any_str(p, "value")?);
                let before = self.before_action(p);
                let sets_value = p["select_sets_value"] == true;
                let mut chosen =
                    self.eval(&format!("__ac.selectOption({}, {}, {sets_value})", js(selector), js(value)))?;
                if let Some(role) = chosen["stepper"].as_str().map(str::to_string) {
                    chosen = self.step_to(selector, value, &role)?;
                }
                self.with_changes(chosen, before, p, &[])
            }
            Tool::BrowserWaitFor => {
                let timeout = Duration::from_secs(p["timeout_s"].as_u64().unwrap_or(30).clamp(1, 600));
                self.wait_for(p["selector"].as_str(), p["text"].as_str(), timeout)
            }
            Tool::BrowserBack => {
                self.history(-1)?;
                self.then_snapshot(json!({}), p)
            }
            Tool::BrowserForward => {
                self.history(1)?;
                self.then_snapshot(json!({}), p)
            }
            Tool::BrowserGetPageInfo => {
                let info = self.eval("__ac.info()")?;
                Ok(with(info, "tabs", self.tabs()?))
            }
            Tool::BrowserSwitchTab => self.switch_tab(p),
            Tool::BrowserDownload => {
                self.download(required_str(p, "url")?, p["filename"].as_str(), p["ask_over_bytes"].as_u64(), ctx)
            }
            Tool::BrowserDownloadBatch => self.download_batch(p, ctx),
            Tool::BrowserScrapeLinks => self.scrape_links(p),
            Tool::BrowserScrapeTable => self.scrape_table(p, ctx),
            Tool::BrowserScrapeText => {
                let selectors = array(p, "selectors")?;
                self.eval(&format!("__ac.texts({})", Value::Array(selectors.clone())))
            }
            Tool::BrowserFillForm => self.fill_form(p),
            Tool::BrowserUploadFile => self.upload_file(p, ctx),
            Tool::BrowserSubmitForm => {
                let done = if p["held"] == true { self.send_held()? } else { self.submit_form(p)? };
                self.then_snapshot(done, p)
            }
            Tool::BrowserSaveAsPdf => self.save_as_pdf(p, ctx),
            Tool::BrowserRecordingFrame => self.recording_frame(p),
            Tool::BrowserAnswerDialog => {
                let accept = p["accept"]
                    .as_bool()
                    .ok_or_else(|| WorkerError::BadParams("`accept` must be true or false".into()))?;
                let text = p["text"].as_str().map(str::to_string);
                self.r()?.cdp.next_dialog = Some((accept, text));
                let how = if accept { "accepted" } else { "dismissed" };
                Ok(json!({"next_dialog": how, "note": format!("the page's next confirm() or prompt() will be {how}")}))
            }
            other => Err(WorkerError::Unsupported { backend: "browser", tool: other.name() }),
        }
    }

    /// A click by selector, or (a person's click on the screenshot, `POST /act`) at a point.
    fn click_tool(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let at_point = p.get("selector").is_none() && p["x"].is_number();
        let selector = if at_point { None } else { Some(required_str(p, "selector")?) };
        if let Some(sel) = selector.filter(|_| holds_submits(p)) {
            if let Some(asked) = self.would_send(&format!("__acSubmits.byClick(__ac.find({}))", js(sel)))? {
                return Ok(asked);
            }
        }
        let before = self.before_action(p);
        let clicked = match selector {
            Some(selector) => self.click(selector, p)?,
            None => self.click_at(p)?,
        };
        self.with_changes(clicked, before, p, &[])
    }

    fn fill_form(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let fields = array(p, "fields")?;
        let before = self.before_action(p);
        let by_label = p["radio_by_label"] == true;
        let done = self.eval(&format!("__ac.fill({}, {by_label})", Value::Array(fields.clone())))?;
        let selectors: Vec<&str> = fields.iter().filter_map(|f| f["selector"].as_str()).collect();
        self.mask_typed(p, &selectors)?;
        let mut held = Vec::new();
        let done: Vec<Value> =
            done.as_array().cloned().unwrap_or_default().into_iter().map(|f| unechoed(p, f, &mut held)).collect();
        let typed: Vec<&str> =
            fields.iter().filter_map(|f| f["value"].as_str()).chain(held.iter().map(String::as_str)).collect();
        self.with_changes(json!({"filled": done}), before, p, &typed)
    }

    fn get_dom(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let root = p["selector"].as_str().filter(|s| !s.is_empty());
        let outline = self.eval(&format!("__ac.outline({}, {DOM_CHARS})", root.map_or_else(|| "null".into(), js)))?;
        Ok(json!({"outline": outline}))
    }

    fn get_text(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let root = p["selector"].as_str().filter(|s| !s.is_empty());
        let text = self.eval(&format!("__ac.text({})", root.map_or_else(|| "null".into(), js)))?;
        let text = text.as_str().unwrap_or_default();
        let cut: String = text.chars().take(TEXT_CHARS).collect();
        Ok(json!({"text": cut, "truncated": text.chars().count() > TEXT_CHARS}))
    }

    fn type_into(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let selector = required_str(p, "selector")?;
        let text = any_str(p, "text")?;
        if let Some(site) = self.secret_site.clone() {
            return self.place_secret(selector, text, &site, p);
        }
        let clear = p["clear"].as_bool().unwrap_or(true);
        // Enter (asked for, or a new line in the text) in a field of a form may send it.
        let enters = p["press_enter"] == true || text.contains('\n');
        if enters && holds_submits(p) {
            if let Some(asked) = self.would_send(&format!("__acSubmits.byEnter(__ac.find({}))", js(selector)))? {
                return Ok(asked);
            }
        }
        let before = self.before_action(p);
        let focused = self.eval(&format!("__ac.focusForTyping({}, {clear})", js(selector)))?;
        // A read-only field takes no keys. Where the controller asks (`readonly_click`), it is
        // clicked, as a person would, and the answer shows what that opened (a calendar).
        if focused["readOnly"] == true {
            if p["readonly_click"] != true {
                return Err(WorkerError::Page(format!(
                    "`{selector}` is read-only: it takes no typing. Click it (browser_click) and choose its value from what opens"
                )));
            }
            // The click's answer says the field is read-only: it is this redirect's own account.
            let clicked = with(self.click(selector, &json!({"advice": true}))?, "typed", json!(0));
            return self.with_changes(with(clicked, "clicked_read_only", json!(true)), before, p, &[]);
        }
        // A date, time, number, range or colour field takes the value the text means (never a
        // password: those are typed key by key).
        let mut held = Vec::new();
        let done = if focused["special"].is_string() {
            let set = self.eval(&format!("__ac.setSpecial({}, {})", js(selector), js(text)))?;
            with(unechoed(p, set, &mut held), "into", json!(selector))
        } else if let Some(role) = focused["stepper"].as_str() {
            with(self.step_to(selector, text, role)?, "into", json!(selector))
        } else {
            self.type_text(text)?;
            // Never echo the text: it may be a password.
            json!({"typed": text.chars().count(), "into": selector})
        };
        self.mask_typed(p, &[selector])?;
        if p["press_enter"].as_bool().unwrap_or(false) {
            self.key("Enter")?;
            self.settle()?;
        }
        let typed: Vec<&str> = std::iter::once(text).chain(held.iter().map(String::as_str)).collect();
        self.with_changes(done, before, p, &typed)
    }

    /// A credential set into the field without key events, in one script that checks the
    /// field's document and the top page are on the credentials' site first: no focus to
    /// steal, no key to catch in another frame, no navigation between the check and the write.
    fn place_secret(&mut self, selector: &str, text: &str, site: &SecretSite, p: &Value) -> Result<Value, WorkerError> {
        let before = self.before_action(p);
        let origin = site.origin.as_deref().map_or_else(|| "null".into(), js);
        let placed = self.eval(&format!(
            "__ac.placeSecret({}, {}, {}, {origin}, {})",
            js(selector),
            js(text),
            js(&site.host),
            site.sends_to
        ))?;
        if placed["refused"].is_string() {
            return Err(WorkerError::refused(placed));
        }
        self.with_changes(json!({"typed": text.chars().count(), "into": selector}), before, p, &[text])
    }

    /// A person's typing (`mask_typed`, set by the controller on their acts) makes the fields it
    /// went into secret: painted over in every picture from now on (`masks.js`).
    fn mask_typed(&mut self, p: &Value, selectors: &[&str]) -> Result<(), WorkerError> {
        if p["mask_typed"] == true {
            self.eval(&format!("window.__acMasks.markTyped({})", json!(selectors)))?;
        }
        Ok(())
    }

    /// A form the action would send, asked about before anything is done: the answer the
    /// controller turns into an approval (`needs_approval.submit`), or `None` to go on.
    fn would_send(&mut self, check: &str) -> Result<Option<Value>, WorkerError> {
        let form = self.eval(check)?;
        Ok(form.is_object().then(|| json!({"needs_approval": {"submit": form}})))
    }

    /// The send the hold stopped, approved by the controller: sent as the page asked for it.
    fn send_held(&mut self) -> Result<Value, WorkerError> {
        let sent = self.eval("__acSubmits.sendHeld()")?;
        std::thread::sleep(Duration::from_millis(150));
        self.settle()?;
        Ok(with(self.eval("__ac.info()")?, "action", json!({"sent_held": sent})))
    }

    fn press_key(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let key = required_str(p, "key")?;
        if holds_submits(p) {
            let name = super::keys::key_name(key)?;
            if let Some(asked) = self.would_send(&format!("__acSubmits.byKey({})", js(&name)))? {
                return Ok(asked);
            }
        }
        let before = self.before_action(p);
        self.key(key)?;
        self.settle()?;
        self.with_changes(json!({"pressed": key}), before, p, &[])
    }

    /// Scroll an element into view, or the page by `amount` pixels (default: most of a screen).
    fn scroll(&mut self, p: &Value) -> Result<Value, WorkerError> {
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

    fn hover(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let c = self.eval(&format!("__ac.center(__ac.find({}))", js(required_str(p, "selector")?)))?;
        self.mouse("mouseMoved", &c, 0)?;
        Ok(json!({"hovered": c["tag"], "text": c["text"]}))
    }

    fn scrape_links(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let links = self.eval(&format!(
            "__ac.links({}, {}, {})",
            js_or_null(p, "selector"),
            js_or_null(p, "pattern"),
            js_or_null(p, "attribute")
        ))?;
        let all = links.as_array().cloned().unwrap_or_default();
        let count = all.len();
        Ok(
            json!({"count": count, "links": all.into_iter().take(LINKS).collect::<Vec<_>>(), "truncated": count > LINKS}),
        )
    }

    /// A table as CSV, or as one object per row keyed by the header row (`format: json`); with a
    /// `filename`, saved as that file (CSV) instead: a small model copying the rows into
    /// save_file loses some on the way.
    fn scrape_table(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        // Without a selector, the page's first table (small models leave it out).
        let selector = p["selector"].as_str().filter(|s| !s.trim().is_empty()).unwrap_or("table");
        let rows = self.eval(&format!("__ac.table({})", js(selector)))?;
        let rows: Vec<Vec<String>> =
            serde_json::from_value(rows).map_err(|e| WorkerError::Page(format!("unreadable table: {e}")))?;
        let columns = rows.first().map(Vec::len).unwrap_or(0);
        if let Some(filename) = p["filename"].as_str().filter(|f| !f.trim().is_empty()) {
            let name = if filename.contains('.') { filename.to_string() } else { format!("{filename}.csv") };
            let saved = self.save_bytes(&name, "csv", to_csv(&rows).as_bytes(), ctx)?;
            return Ok(with(with(saved, "rows", json!(rows.len())), "columns", json!(columns)));
        }
        if p["format"].as_str() != Some("json") {
            let mut out = json!({"rows": rows.len(), "columns": columns, "csv": to_csv(&rows)});
            if p["advice"] == true {
                out["to_save"] = "to keep it as a file, call browser_scrape_table again with a filename".into();
            }
            return Ok(out);
        }
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
    }

    fn submit_form(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let form = js_or_null(p, "selector");
        let button = js_or_null(p, "submit_selector");
        let what = self.eval(&format!("__ac.submit({form}, {button})"))?;
        std::thread::sleep(Duration::from_millis(150));
        self.settle()?;
        let info = self.eval("__ac.info()")?;
        Ok(with(info, "action", what))
    }
}

/// The session's sends wait for approval (`hold_submits`, set by the controller where the
/// approval mode is not `auto`; an approved command carries `false`).
fn holds_submits(p: &Value) -> bool {
    p["hold_submits"] == true
}

/// A person's typing (`mask_typed`) is never echoed, not even as the value a date or number
/// field made of it: `set` (and `asked`) leave the answer and join `held`, which the page's
/// changes then show as typed.
fn unechoed(p: &Value, mut done: Value, held: &mut Vec<String>) -> Value {
    if p["mask_typed"] != true {
        return done;
    }
    if let Some(answer) = done.as_object_mut() {
        for key in ["set", "asked"] {
            if let Some(Value::String(v)) = answer.remove(key) {
                held.push(v);
            }
        }
    }
    done
}
