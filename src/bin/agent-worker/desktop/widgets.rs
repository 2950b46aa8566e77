//! Widgets as the desktop tools show them: what a walk of the accessibility bus found (the
//! walk is `atspi.rs`, what it finds and the ids are `tree.rs`), the ids (`w1`, `w2`, …) that
//! `click {element}` takes, the widgets' JSON for `get_ui_tree` (a tree, grouping containers
//! lifted) and `list_elements` (a flat list), and clicking a widget by id.
//!
//! Geometry is given in screenshot image pixels like every other coordinate, with the screen's
//! beside it. An id remembers its window's title for the click's result.
//!
//! Without the `atspi` feature there is no bus: `walk` and `press` say so, and the rest waits.
#![cfg_attr(not(feature = "atspi"), allow(dead_code))]

use super::Desktop;
use super::tree::{Ids, Node, Obj, Pressed, Scope, Walk};
use super::windows::Windows;
use super::x::X;
use crate::error::WorkerError;
use serde_json::{Value, json};
use std::fmt;

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

impl std::error::Error for WidgetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            #[cfg(feature = "atspi")]
            WidgetError::NoBus(e) | WidgetError::BusFailed(e) | WidgetError::Gone(e) => Some(e),
            _ => None,
        }
    }
}

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
        let walked = super::atspi::walk(&bus, x, &mut self.ids, wins, scope).map_err(WidgetError::BusFailed);
        // When the bus itself failed (not one application), it is connected again next time.
        if walked.is_ok() {
            self.bus = Some(bus);
        }
        walked
    }

    /// Press the widget `obj` (see `atspi::press`).
    pub fn press(&mut self, x: &X, obj: &Obj, use_action: bool) -> Result<Pressed, WidgetError> {
        let bus = self.take_bus(x)?;
        let pressed = super::atspi::press(&bus, obj, use_action).map_err(|e| match e {
            super::atspi::PressError::Gone(e) => WidgetError::Gone(e),
            super::atspi::PressError::OffScreen(what) => WidgetError::OffScreen(what),
        });
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
