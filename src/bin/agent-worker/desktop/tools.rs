//! The desktop tools: one handler per `Tool` of the app sets, each a few steps of `capture`,
//! `windows` and `input`.
//!
//! `dispatch` is the whole list; a tool of another capability is refused. Parameters are
//! checked before anything moves. Acting tools say what they did, in the model's (image)
//! coordinates and in screen pixels, and which window is there; typed text is never echoed.
//! Window geometry is given in image pixels too, with the screen's beside it.

use super::Desktop;
use super::capture;
use super::input;
use super::keymap;
use super::tree::{Scope, Walk};
use super::widgets::WidgetError;
use super::windows::{Win, Windows, activate};
use crate::backend::{Context, any_str, required_str};
use crate::error::WorkerError;
use agent_controller::protocol::tools::Tool;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The longest a widget walk may take (the command's own deadline may come sooner).
const WALK_LIMIT: Duration = Duration::from_secs(8);
/// How deep `get_ui_tree` looks unless told (`list_elements` looks as deep as it may).
const TREE_DEPTH: u64 = 15;
const MAX_DEPTH: u64 = 40;
const COORDINATES: &str = "x, y, width, height are in screenshot image pixels (what click takes); screen: real pixels";
const SCROLL_CAP: u64 = 50;

impl Desktop {
    pub(super) fn dispatch(&mut self, tool: Tool, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        match tool {
            Tool::Screenshot => self.screenshot(),
            Tool::GetUiTree => self.ui_tree(p, ctx),
            Tool::ListElements => self.list_elements(p, ctx),
            Tool::Click => self.click(p, input::LEFT, 1, "clicked"),
            Tool::RightClick => self.click(p, input::RIGHT, 1, "right_clicked"),
            Tool::DoubleClick => self.click(p, input::LEFT, 2, "double_clicked"),
            Tool::TypeText => {
                if p["mask_typed"] == true {
                    self.mark_focused_secret();
                }
                self.type_text(any_str(p, "text")?, ctx)
            }
            Tool::PressKey => self.press_key(required_str(p, "key")?),
            Tool::Scroll => self.scroll(p),
            Tool::SwitchWindow => self.switch_window(required_str(p, "title")?),
            Tool::GetWindowInfo => self.window_info(),
            Tool::Move => {
                let (ix, iy) = point(p, "x", "y")?.ok_or_else(|| WorkerError::bad("give `x` and `y`"))?;
                let (px, py) = self.to_screen(ix, iy)?;
                input::move_to(self.x()?, px, py)?;
                self.acted("moved", (px, py), self.window_at((px, py))?)
            }
            Tool::Drag => self.drag(p),
            Tool::RecordingFrame => self.recording_frame(p),
            other => Err(WorkerError::Unsupported { backend: "desktop", tool: other.name() }),
        }
    }

    fn screenshot(&mut self) -> Result<Value, WorkerError> {
        let settings = self.settings;
        // Secret fields painted over before the picture is shrunk or encoded (`masks.rs`).
        let boxes = self.secret_boxes();
        let x = self.x.as_mut().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        let shot = capture::shot(x, settings, |full| crate::frames::mask(full, &boxes))?;
        self.scale = Some((shot.scale, shot.scale_y));
        let active = Windows::read(self.x()?)?.active().map(|w| w.title.clone());
        let round = |v: f64| (v * 10.0).round() / 10.0;
        Ok(json!({
            "image_base64": STANDARD.encode(&shot.jpeg),
            "media_type": "image/jpeg",
            "width": shot.width,
            "height": shot.height,
            "scale": (shot.scale * 10_000.0).round() / 10_000.0,
            "screen_width": shot.screen_width,
            "screen_height": shot.screen_height,
            "full_png_base64": STANDARD.encode(&shot.png),
            "active_window": active,
            "timing_ms": {"capture": round(shot.timings[0]), "scale": round(shot.timings[1]),
                          "jpeg": round(shot.timings[2]), "png": round(shot.timings[3])},
        }))
    }

    /// A window as the model sees it.
    fn window_json(&self, w: &Win) -> Result<Value, WorkerError> {
        let (ix, iy) = self.to_image(w.x, w.y)?;
        let (ix2, iy2) = self.to_image(w.x + w.width as i32, w.y + w.height as i32)?;
        Ok(json!({
            "id": format!("0x{:x}", w.id), "title": w.title, "class": w.class,
            "x": ix, "y": iy, "width": ix2 - ix, "height": iy2 - iy,
            "screen": [w.x, w.y, w.width, w.height], "active": w.active, "visible": w.visible,
        }))
    }

    fn windows_json(&self, wins: &Windows) -> Result<Vec<Value>, WorkerError> {
        wins.list.iter().map(|w| self.window_json(w)).collect()
    }

    /// The widgets of the windows in scope, or why there are none ("not available (…)").
    fn walk(&mut self, p: &Value, ctx: &Context, depth: u64) -> Result<Result<Walk, WidgetError>, WorkerError> {
        let mut deadline = Instant::now() + WALK_LIMIT;
        if let Some(d) = ctx.deadline {
            deadline = deadline.min(d.checked_sub(Duration::from_millis(500)).unwrap_or(d));
        }
        let window = p["window"].as_str().map(str::trim).filter(|s| !s.is_empty());
        let scope = Scope { window, max_depth: depth as usize, deadline };
        let x = self.x.as_ref().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        let wins = Windows::read(x)?;
        Ok(self.widgets.walk(x, &wins, &scope))
    }

    fn ui_tree(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let depth = p["max_depth"].as_u64().unwrap_or(TREE_DEPTH).clamp(1, MAX_DEPTH);
        let walked = self.walk(p, ctx, depth)?;
        let x = self.x()?;
        let wins = Windows::read(x)?;
        let mut v = json!({
            "screen": {"width": x.width, "height": x.height},
            "scale": self.scale()?.0,
            "window_manager": wins.manager,
            "active_window": wins.active().map(|w| w.title.clone()),
            "windows": self.windows_json(&wins)?,
            "coordinates": COORDINATES,
        });
        v["widgets"] = match walked {
            Ok(walk) => {
                let mut trees = Vec::new();
                for (title, node) in &walk.windows {
                    for mut t in self.tree_json(node, true)? {
                        t["window"] = json!(title);
                        trees.push(t);
                    }
                }
                v["widgets_from"] = json!(format!("AT-SPI, found through {}", walk.found_via));
                put_notes(&mut v, &walk, trees.is_empty());
                json!(trees)
            }
            Err(why) => json!(why.to_string()),
        };
        Ok(v)
    }

    fn list_elements(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let wanted = p["control_type"].as_str().map(str::trim).filter(|s| !s.is_empty());
        let only_windows = wanted.is_some_and(|k| k.eq_ignore_ascii_case("window"));
        let mut elements = Vec::new();
        if wanted.is_none() || only_windows {
            let wins = Windows::read(self.x()?)?;
            let title = p["window"].as_str().map(|t| t.trim().to_lowercase()).unwrap_or_default();
            for w in wins.list.iter().filter(|w| w.title.to_lowercase().contains(&title)) {
                let mut e = self.window_json(w)?;
                e["type"] = json!("window");
                elements.push(e);
            }
        }
        let mut v = json!({"coordinates": COORDINATES});
        if !only_windows {
            match self.walk(p, ctx, MAX_DEPTH)? {
                Ok(walk) => {
                    let (widgets, cut) = self.listed(&walk, wanted)?;
                    v["widgets"] = json!(format!(
                        "{} from AT-SPI: click takes an id (w…) as `element`{}",
                        widgets.len(),
                        if cut { "; more were left out, ask for a control_type or a window" } else { "" }
                    ));
                    put_notes(&mut v, &walk, widgets.is_empty());
                    elements.extend(widgets);
                }
                Err(why) => v["widgets"] = json!(why.to_string()),
            }
        }
        v["elements"] = json!(elements);
        Ok(v)
    }

    /// The title of the top-most window at a screen point (read before acting: a click may close it).
    fn window_at(&self, (px, py): (i32, i32)) -> Result<Option<String>, WorkerError> {
        Ok(Windows::read(self.x()?)?.at(px, py).map(|w| w.title.clone()))
    }

    /// What an acting tool did at a screen point: image and screen coordinates, the window there.
    pub(super) fn acted(&self, verb: &str, (px, py): (i32, i32), window: Option<String>) -> Result<Value, WorkerError> {
        let (ix, iy) = self.to_image(px, py)?;
        Ok(json!({verb: [ix, iy], "screen": [px, py], "window": window}))
    }

    /// The screen point a click aims at: `{x, y}` (image) or `{element}` (a window's centre).
    fn target(&self, p: &Value) -> Result<((i32, i32), Option<String>), WorkerError> {
        if let Some(name) = p["element"].as_str().filter(|s| !s.trim().is_empty()) {
            let wins = Windows::read(self.x()?)?;
            let looks_like_id = name.trim().strip_prefix('w').is_some_and(|n| n.parse::<u32>().is_ok());
            let w = wins.find(name.trim()).map_err(|e| {
                if looks_like_id {
                    WorkerError::bad(format!(
                        "{e}; and {} is no widget id this worker gave (list_elements)",
                        name.trim()
                    ))
                } else {
                    e
                }
            })?;
            return Ok((w.centre(), Some(w.title.clone())));
        }
        let (ix, iy) = point(p, "x", "y")?.ok_or_else(|| {
            WorkerError::bad(
                "give `x` and `y` (image pixels of the last screenshot) or `element` (a widget id from \
                 list_elements, or part of a window title)",
            )
        })?;
        Ok((self.to_screen(ix, iy)?, None))
    }

    fn click(&mut self, p: &Value, button: u8, count: u32, verb: &str) -> Result<Value, WorkerError> {
        if let Some(id) = p["element"].as_str().map(str::trim).filter(|e| self.widgets.ids.lookup(e).is_some()) {
            return self.click_widget(id, button, count, verb);
        }
        let (at, element) = self.target(p)?;
        let window = self.window_at(at)?;
        input::click(self.x()?, at.0, at.1, button, count)?;
        self.last_click = Some(at);
        let mut v = self.acted(verb, at, window)?;
        if let (Some(title), Some(map)) = (element, v.as_object_mut()) {
            map.insert("element".into(), json!(format!("the centre of the window {title:?}")));
        }
        Ok(v)
    }

    fn drag(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let need = || WorkerError::bad("give `from_x`, `from_y`, `to_x` and `to_y` (image pixels)");
        let from = point(p, "from_x", "from_y")?.ok_or_else(need)?;
        let to = point(p, "to_x", "to_y")?.ok_or_else(need)?;
        let (from, to) = (self.to_screen(from.0, from.1)?, self.to_screen(to.0, to.1)?);
        let window = self.window_at(from)?;
        input::drag(self.x()?, from, to)?;
        let (f, t) = (self.to_image(from.0, from.1)?, self.to_image(to.0, to.1)?);
        Ok(json!({"dragged": {"from": [f.0, f.1], "to": [t.0, t.1]},
                  "screen": {"from": [from.0, from.1], "to": [to.0, to.1]}, "window": window}))
    }

    fn scroll(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let direction = required_str(p, "direction")?.to_ascii_lowercase();
        let button = match direction.as_str() {
            "up" => 4,
            "down" => 5,
            "left" => 6,
            "right" => 7,
            other => {
                return Err(WorkerError::bad(format!("`direction` must be up, down, left or right, not `{other}`")));
            }
        };
        let amount = p["amount"].as_u64().unwrap_or(3).clamp(1, SCROLL_CAP);
        let at = match point(p, "x", "y")? {
            Some((ix, iy)) => {
                let at = self.to_screen(ix, iy)?;
                input::move_to(self.x()?, at.0, at.1)?;
                at
            }
            None => {
                let ptr =
                    x11rb::protocol::xproto::ConnectionExt::query_pointer(&self.x()?.conn, self.x()?.root)?.reply()?;
                (ptr.root_x as i32, ptr.root_y as i32)
            }
        };
        let window = self.window_at(at)?;
        input::wheel(self.x()?, button, amount as u32)?;
        let mut v = self.acted("at", at, window)?;
        if let Some(map) = v.as_object_mut() {
            map.insert("scrolled".into(), json!(direction));
            map.insert("amount".into(), json!(amount));
        }
        Ok(v)
    }

    fn type_text(&mut self, text: &str, ctx: &Context) -> Result<Value, WorkerError> {
        let x = self.x.as_ref().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        let total = text.chars().count();
        let typed = input::type_text(x, &mut self.lent, text, ctx.deadline)?;
        let window = Windows::read(x)?.active().map(|w| w.title.clone());
        let mut v = json!({"typed": typed, "window": window});
        if typed < total {
            v["note"] = json!(format!("time ran out after {typed} of {total} characters"));
        }
        Ok(v)
    }

    fn press_key(&mut self, key: &str) -> Result<Value, WorkerError> {
        let combo = keymap::parse_combo(key)?;
        let x = self.x.as_ref().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        input::press_combo(x, &mut self.lent, &combo)?;
        let window = Windows::read(x)?.active().map(|w| w.title.clone());
        Ok(json!({"pressed": combo.text, "window": window}))
    }

    fn switch_window(&mut self, title: &str) -> Result<Value, WorkerError> {
        let x = self.x()?;
        let wins = Windows::read(x)?;
        let win = wins.find(title.trim())?;
        let (method, confirmed) = activate(x, win, wins.manager.is_some())?;
        let mut v =
            json!({"switched_to": win.title, "id": format!("0x{:x}", win.id), "method": method, "active": confirmed});
        if !confirmed {
            v["note"] = json!(
                "the window was raised and focused, but it did not report itself active; take a screenshot to check"
            );
        }
        Ok(v)
    }

    fn window_info(&mut self) -> Result<Value, WorkerError> {
        let x = self.x()?;
        let wins = Windows::read(x)?;
        let active = wins.active().map(|w| self.window_json(w)).transpose()?;
        Ok(json!({
            "active_window": active,
            "windows": wins.list.len(),
            "screen": {"width": x.width, "height": x.height},
            "scale": self.scale()?.0,
            "coordinates": COORDINATES,
        }))
    }
}

/// The walk's notes, and a hint when it found no widgets at all.
fn put_notes(v: &mut Value, walk: &Walk, none: bool) {
    let mut notes = walk.notes.clone();
    if none {
        notes.push(
            "no widgets: no application on the accessibility bus shows a window here (GTK and Qt programs \
             register when accessibility is on)"
                .into(),
        );
    }
    if !notes.is_empty() {
        v["widget_notes"] = json!(notes);
    }
}

/// Two numbers `xk`, `yk` as a point; None when both are absent, an error when half there.
fn point(p: &Value, xk: &str, yk: &str) -> Result<Option<(f64, f64)>, WorkerError> {
    match (p.get(xk).filter(|v| !v.is_null()), p.get(yk).filter(|v| !v.is_null())) {
        (None, None) => Ok(None),
        (Some(x), Some(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => Ok(Some((x, y))),
            _ => Err(WorkerError::bad(format!("`{xk}` and `{yk}` must be numbers"))),
        },
        _ => Err(WorkerError::bad(format!("give both `{xk}` and `{yk}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_both_or_neither() {
        assert_eq!(point(&json!({"x": 3, "y": 4.5}), "x", "y").unwrap(), Some((3.0, 4.5)));
        assert_eq!(point(&json!({}), "x", "y").unwrap(), None);
        assert!(point(&json!({"x": 3}), "x", "y").unwrap_err().to_string().contains("both"));
        assert!(point(&json!({"x": "3", "y": 1}), "x", "y").unwrap_err().to_string().contains("numbers"));
    }
}
