//! The desktop's pictures with their secrets painted over: screenshots (for the model, a
//! person taking over, the step images) and the recording's frames (`frames/`).
//!
//! What the accessibility tree marks as a password field (role "password text"), and the
//! widget that had the keyboard focus when a person typed (`mask_typed`, on their acts while
//! they hold the session) for as long as that widget lives, is painted over, in screen pixels,
//! on the grabbed screen before it is shrunk or encoded. Where there is no accessibility bus (no `atspi` feature, no bus on the display) nothing can be known: the
//! picture goes as it is, and a bus not found is not looked for again for half a minute, so
//! each screenshot does not pay for the search. Guarantees: masks come from a walk bounded in
//! time; the last click of the step before a frame is marked on it.

use super::Desktop;
use super::capture::{self, Rgb};
use super::tree::{Node, Scope};
use super::windows::Windows;
use crate::error::WorkerError;
use crate::frames::{self, Rect};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The longest the walk for password fields may take per picture.
const WALK_LIMIT: Duration = Duration::from_secs(3);
/// How long a bus that was not found is not looked for again.
const NO_BUS_WAIT: Duration = Duration::from_secs(30);
const PASSWORD_ROLE: &str = "password text";

impl Desktop {
    /// The secret fields' boxes on screen (screen pixels), as far as the tree tells.
    pub(super) fn secret_boxes(&mut self) -> Vec<Rect> {
        let mut out = Vec::new();
        for (_, node) in self.walk_windows() {
            secrets(&node, &self.typed_into, &mut out);
        }
        out
    }

    /// A person is about to type: the widget with the keyboard focus holds a secret from now on.
    pub(super) fn mark_focused_secret(&mut self) {
        let focused = self.walk_windows().iter().find_map(|(_, node)| focused(node));
        if let Some(id) = focused {
            self.typed_into.insert(id);
        }
    }

    /// Every window's widget tree, bounded in time; none where there is no bus.
    fn walk_windows(&mut self) -> Vec<(String, Node)> {
        if self.no_bus_since.is_some_and(|t| t.elapsed() < NO_BUS_WAIT) {
            return Vec::new();
        }
        let Some(x) = self.x.as_ref() else { return Vec::new() };
        let Ok(wins) = Windows::read(x) else { return Vec::new() };
        let scope = Scope { window: None, max_depth: 40, deadline: Instant::now() + WALK_LIMIT };
        match self.widgets.walk(x, &wins, &scope) {
            Ok(walk) => {
                self.no_bus_since = None;
                walk.windows
            }
            Err(_) => {
                self.no_bus_since = Some(Instant::now());
                Vec::new()
            }
        }
    }

    /// The screen, grabbed, with its password fields painted over.
    pub(super) fn masked_screen(&mut self) -> Result<Rgb, WorkerError> {
        let boxes = self.secret_boxes();
        let x = self.x.as_mut().ok_or_else(|| WorkerError::Unavailable("the display is not connected".into()))?;
        let mut full = capture::grab(x)?;
        frames::mask(&mut full, &boxes);
        Ok(full)
    }

    /// The screen as a recording frame: masked, shrunk to `frames::FRAME_WIDTH`, the last click
    /// marked, the caption below, as a one-frame GIF.
    pub(super) fn recording_frame(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let full = self.masked_screen()?;
        let mut img = capture::downscale(&full, frames::FRAME_WIDTH).unwrap_or(full);
        let sw = self.x()?.width.max(1) as f64;
        if let Some((cx, cy)) = self.last_click.take() {
            let k = img.width as f64 / sw;
            frames::mark(&mut img, cx as f64 * k, cy as f64 * k);
        }
        let img = frames::caption(&img, p["caption"].as_str().unwrap_or(""));
        let gif = frames::gif_frame(&img).map_err(WorkerError::Unavailable)?;
        Ok(json!({"frame_gif_base64": STANDARD.encode(&gif), "width": img.width, "height": img.height}))
    }
}

/// Every password field and widget a person typed into under `node`, with a place on screen.
fn secrets(node: &Node, typed_into: &BTreeSet<String>, out: &mut Vec<Rect>) {
    if node.role == PASSWORD_ROLE || typed_into.contains(&node.id) {
        if let Some((x, y, w, h)) = node.rect {
            out.push(Rect { x: x as f64 - 2.0, y: y as f64 - 2.0, w: w as f64 + 4.0, h: h as f64 + 4.0 });
        }
    }
    for kid in &node.children {
        secrets(kid, typed_into, out);
    }
}

/// The deepest widget under `node` that has the keyboard focus.
fn focused(node: &Node) -> Option<String> {
    node.children.iter().find_map(focused).or_else(|| node.states.contains(&"focused").then(|| node.id.clone()))
}
