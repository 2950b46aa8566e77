//! Widgets as the desktop tools show them: what a walk of the accessibility bus found (the
//! walk is `atspi.rs`), the ids (`w1`, `w2`, …) that `click {element}` takes, the widgets'
//! JSON for `get_ui_tree` (a tree, grouping containers lifted) and `list_elements` (a flat
//! list), and clicking a widget by id.
//!
//! Geometry is given in screenshot image pixels like every other coordinate, with the screen's
//! beside it. An id stays the same object for the worker's life (the table starts over only
//! when very large) and remembers its window's title for the click's result.
//!
//! Without the `atspi` feature there is no bus: `walk` and `press` say so, and the rest waits.
#![cfg_attr(not(feature = "atspi"), allow(dead_code))]

use super::Desktop;
use super::windows::{Win, Windows};
use super::x::X;
use crate::error::WorkerError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::time::Instant;

/// Ids kept before the table starts over.
const MAX_IDS: usize = 100_000;

/// One widget with what the model needs to know of it; `rect` in screen pixels.
pub struct Node {
    pub id: String,
    pub role: String,
    pub name: String,
    pub states: Vec<&'static str>,
    pub rect: Option<(i32, i32, i32, i32)>,
    pub actions: Vec<String>,
    pub interactive: bool,
    pub children: Vec<Node>,
}

/// A walk's result: one tree per window, and what it left out or could not read.
pub struct Walk {
    pub windows: Vec<(String, Node)>,
    pub visited: usize,
    pub notes: Vec<String>,
    pub found_via: &'static str,
}

/// What the walk was asked for.
pub struct Scope<'a> {
    pub window: Option<&'a str>,
    pub max_depth: usize,
    pub deadline: Instant,
}

/// An accessible object: the bus name of its application and its object path.
pub type Obj = (String, String);

/// The ids given so far: `w<n>` is `objs[n - 1]`, with the title of its window.
#[derive(Default)]
pub struct Ids {
    by_obj: HashMap<Obj, usize>,
    objs: Vec<(Obj, String)>,
}

impl Ids {
    pub fn id_of(&mut self, obj: &Obj, window: &str) -> String {
        if self.objs.len() >= MAX_IDS {
            self.by_obj.clear();
            self.objs.clear();
        }
        let n = match self.by_obj.get(obj) {
            Some(&n) => n,
            None => {
                self.objs.push((obj.clone(), String::new()));
                self.by_obj.insert(obj.clone(), self.objs.len());
                self.objs.len()
            }
        };
        if let Some(slot) = self.objs.get_mut(n - 1) {
            slot.1 = window.to_string();
        }
        format!("w{n}")
    }

    /// The object behind an id like `w12` and its window's title, if this worker gave the id.
    pub fn lookup(&self, id: &str) -> Option<&(Obj, String)> {
        let n: usize = id.strip_prefix('w')?.parse().ok()?;
        self.objs.get(n.checked_sub(1)?)
    }
}

/// Why there are no widgets to show, or the one asked for cannot be pressed. A walk's error
/// goes into the tool's answer as it is ("not available (…)"), a press's is the tool's error.
#[derive(Debug)]
pub enum WidgetError {
    /// This worker was built without the `atspi` feature (so it gives no widget ids either).
    #[cfg(not(feature = "atspi"))]
    NotBuilt,
    /// No accessibility bus could be found or connected to.
    #[cfg(feature = "atspi")]
    NoBus(super::atspi::BusError),
    /// The bus itself stopped answering during a walk (it is connected again next time).
    #[cfg(feature = "atspi")]
    BusFailed(super::atspi::BusError),
    /// The widget to press is gone or does not answer.
    #[cfg(feature = "atspi")]
    Gone(super::atspi::BusError),
    /// The widget to press (its role and name) has no place on screen.
    OffScreen(String),
}

impl fmt::Display for WidgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(not(feature = "atspi"))]
            WidgetError::NotBuilt => f.write_str("not available (this worker was built without the `atspi` feature)"),
            #[cfg(feature = "atspi")]
            WidgetError::NoBus(e) => write!(f, "not available (no accessibility bus: {e})"),
            #[cfg(feature = "atspi")]
            WidgetError::BusFailed(e) => write!(f, "not available (the accessibility bus did not answer: {e})"),
            #[cfg(feature = "atspi")]
            WidgetError::Gone(e) => write!(f, "the widget is gone or does not answer ({e}); list the elements again"),
            WidgetError::OffScreen(what) => write!(f, "{what} is not on screen, so it cannot be clicked"),
        }
    }
}

impl std::error::Error for WidgetError {}

/// The accessibility bus (connected on first use, and again after it failed) and the ids.
#[derive(Default)]
pub struct Widgets {
    #[cfg(feature = "atspi")]
    bus: Option<super::atspi::Bus>,
    pub ids: Ids,
}

#[cfg(feature = "atspi")]
impl Widgets {
    /// The bus, taken out: connected now when it was not (or had failed).
    fn take_bus(&mut self, x: &X) -> Result<super::atspi::Bus, WidgetError> {
        match self.bus.take() {
            Some(bus) => Ok(bus),
            None => super::atspi::Bus::open(x).map_err(WidgetError::NoBus),
        }
    }

    /// Walk the widgets of the visible windows; Err says why they are "not available (…)".
    pub fn walk(&mut self, x: &X, wins: &Windows, scope: &Scope) -> Result<Walk, WidgetError> {
        let bus = self.take_bus(x)?;
        let walked = super::atspi::walk(&bus, x, &mut self.ids, wins, scope);
        // When the bus itself failed (not one application), it is connected again next time.
        if walked.is_ok() {
            self.bus = Some(bus);
        }
        walked
    }

    /// Press the widget `obj` (see `atspi::press`).
    pub fn press(&mut self, x: &X, obj: &Obj, use_action: bool) -> Result<Pressed, WidgetError> {
        let bus = self.take_bus(x)?;
        let pressed = super::atspi::press(&bus, obj, use_action);
        self.bus = Some(bus);
        pressed
    }
}

#[cfg(not(feature = "atspi"))]
impl Widgets {
    pub fn walk(&mut self, _: &X, _: &Windows, _: &Scope) -> Result<Walk, WidgetError> {
        Err(WidgetError::NotBuilt)
    }

    /// Never reached: without a walk there are no ids to press.
    pub fn press(&mut self, _: &X, _: &Obj, _: bool) -> Result<Pressed, WidgetError> {
        Err(WidgetError::NotBuilt)
    }
}

/// How a widget was (or is to be) pressed.
pub struct Pressed {
    /// Its role and name, for the result.
    pub what: String,
    /// The action that was done, or None: the pointer must click at `centre`.
    pub action: Option<String>,
    pub centre: Option<(i32, i32)>,
}

pub fn centre(r: (i32, i32, i32, i32)) -> (i32, i32) {
    (r.0 + r.2 / 2, r.1 + r.3 / 2)
}

/// Whether the top-level accessible named `name` at `rect` is the X window `w`.
pub fn same(w: &Win, name: &str, rect: Option<(i32, i32, i32, i32)>) -> bool {
    if !name.is_empty() && name == w.title {
        return true;
    }
    let Some((x, y, width, height)) = rect.filter(|r| r.2 > 0 && r.3 > 0) else { return false };
    let (ww, wh) = (w.width as i64, w.height as i64);
    let ix = ((x + width).min(w.x + ww as i32) - x.max(w.x)).max(0) as i64;
    let iy = ((y + height).min(w.y + wh as i32) - y.max(w.y)).max(0) as i64;
    // Mostly the same area: the overlap is at least 80% of each.
    let (a, b) = (width as i64 * height as i64, ww * wh);
    ix * iy * 5 >= a.max(b) * 4
}

/// Containers that only group others: left out of the tree when unnamed, their children lifted.
const GROUPING: [&str; 3] = ["filler", "panel", "section"];
/// At most this many widgets in one `list_elements` answer.
const MAX_LISTED: usize = 300;

impl Desktop {
    /// A screen rectangle as image-space fields (x, y, width, height) added to `v`.
    fn put_rect(&self, v: &mut Value, (x, y, w, h): (i32, i32, i32, i32)) -> Result<(), WorkerError> {
        let (ix, iy) = self.to_image(x, y)?;
        let (ix2, iy2) = self.to_image(x + w, y + h)?;
        for (k, n) in [("x", ix), ("y", iy), ("width", ix2 - ix), ("height", iy2 - iy)] {
            v[k] = json!(n);
        }
        Ok(())
    }

    /// A widget and what is below it, as `get_ui_tree` gives them (grouping containers lifted).
    pub(super) fn tree_json(&self, n: &Node, top: bool) -> Result<Vec<Value>, WorkerError> {
        let mut children = Vec::new();
        for c in &n.children {
            children.extend(self.tree_json(c, false)?);
        }
        if !top && n.name.is_empty() && n.actions.is_empty() && GROUPING.contains(&n.role.as_str()) {
            return Ok(children);
        }
        let mut v = self.widget_json(n)?;
        if !children.is_empty() {
            v["children"] = json!(children);
        }
        Ok(vec![v])
    }

    /// One widget without its children: id, role, name, geometry, states, actions.
    fn widget_json(&self, n: &Node) -> Result<Value, WorkerError> {
        let mut v = json!({"id": n.id, "role": n.role});
        if !n.name.is_empty() {
            v["name"] = json!(n.name);
        }
        if let Some(r) = n.rect {
            self.put_rect(&mut v, r)?;
        }
        if !n.states.is_empty() {
            v["states"] = json!(n.states);
        }
        if !n.actions.is_empty() {
            v["actions"] = json!(n.actions);
        }
        Ok(v)
    }

    /// The widgets `list_elements` gives: the interactive ones, or those whose role contains
    /// `kind` ("button" finds push and toggle buttons), each with its window's title.
    pub(super) fn listed(&self, walk: &Walk, kind: Option<&str>) -> Result<(Vec<Value>, bool), WorkerError> {
        let kind = kind.map(str::to_lowercase);
        let mut out = Vec::new();
        let mut stack: Vec<(&str, &Node)> = walk.windows.iter().rev().map(|(t, n)| (t.as_str(), n)).collect();
        while let Some((title, n)) = stack.pop() {
            let wanted = match &kind {
                Some(k) => n.role.to_lowercase().contains(k.as_str()),
                None => n.interactive && n.rect.is_some(),
            };
            if wanted {
                if out.len() == MAX_LISTED {
                    return Ok((out, true));
                }
                let mut v = self.widget_json(n)?;
                v["type"] = v["role"].take();
                if let (Some(map), Some(r)) = (v.as_object_mut(), n.rect) {
                    map.remove("role");
                    map.insert("screen".into(), json!([r.0, r.1, r.2, r.3]));
                    map.insert("window".into(), json!(title));
                }
                out.push(v);
            }
            stack.extend(n.children.iter().rev().map(|c| (title, c)));
        }
        Ok((out, false))
    }
}

impl Desktop {
    /// Click widget `id` (a known id standing for `obj` in `window`): its accessible click
    /// action for a plain left click when it has one, else the pointer at its centre.
    pub(super) fn click_widget(&mut self, id: &str, button: u8, count: u32, verb: &str) -> Result<Value, WorkerError> {
        let Some((obj, window)) = self.widgets.ids.lookup(id).cloned() else {
            return Err(WorkerError::bad(format!("no element {id}; list_elements gives the ids")));
        };
        let x = self.x.as_ref().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        let use_action = button == super::input::LEFT && count == 1;
        let pressed = self.widgets.press(x, &obj, use_action).map_err(|e| WorkerError::bad(e.to_string()))?;
        let clamp = |v: i32, max: u16| v.clamp(0, max.saturating_sub(1) as i32);
        let at = pressed.centre.map(|(cx, cy)| (clamp(cx, x.width), clamp(cy, x.height)));
        let method = match (&pressed.action, at) {
            (Some(action), _) => format!("its accessible action {action:?}"),
            (None, Some(at)) => {
                super::input::click(x, at.0, at.1, button, count)?;
                "the pointer at its centre".to_string()
            }
            (None, None) => return Err(WorkerError::bad(format!("{} has no place on screen to click", pressed.what))),
        };
        let mut v = match at {
            Some(at) => self.acted(verb, at, Some(window))?,
            None => json!({verb: Value::Null, "window": window}),
        };
        v["element"] = json!(format!("{id}: {}", pressed.what));
        v["method"] = json!(method);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(x: i32, y: i32, width: u32, height: u32) -> Win {
        Win {
            id: 1,
            title: "Question".into(),
            class: "Zenity".into(),
            x,
            y,
            width,
            height,
            visible: true,
            active: true,
        }
    }

    #[test]
    fn a_top_level_is_its_window_by_title_or_by_area() {
        let w = win(546, 340, 188, 120);
        assert!(same(&w, "Question", None));
        assert!(same(&w, "", Some((546, 340, 188, 120))));
        assert!(same(&w, "other", Some((550, 345, 180, 112))), "a little inside still counts");
        assert!(!same(&w, "other", Some((0, 0, 1280, 800))), "the whole screen is not this window");
        assert!(!same(&w, "", Some((546, 340, 0, 0))));
    }

    #[test]
    fn ids_are_stable_and_looked_up() {
        let mut w = Ids::default();
        let a = (":1.0".to_string(), "/org/a11y/atspi/accessible/8".to_string());
        let b = (":1.0".to_string(), "/org/a11y/atspi/accessible/9".to_string());
        let ids = (w.id_of(&a, "Question"), w.id_of(&b, "Question"), w.id_of(&a, "Renamed"));
        assert_eq!(ids, ("w1".into(), "w2".into(), "w1".into()));
        assert_eq!(w.lookup("w2"), Some(&(b, "Question".to_string())));
        assert_eq!(w.lookup("w1").map(|e| e.1.as_str()), Some("Renamed"), "the window seen last");
        assert_eq!(w.lookup("w0"), None);
        assert_eq!(w.lookup("w3"), None);
        assert_eq!(w.lookup("Question"), None);
    }
}
