//! The desktop backend (capability "app"): real X11 applications on `--display` or `$DISPLAY`,
//! driven over the X protocol with x11rb, input through XTEST.
//!
//! The parts: `x.rs` the connection and its facts, `capture.rs` screenshots (grab, shrink,
//! encode), `windows.rs` the window list (EWMH or the plain tree) and activation, `input.rs`
//! synthetic pointer and keyboard input, `keymap.rs` key names and keycodes, `tools.rs` one
//! handler per tool of the table, `widgets.rs` widgets as the tools show and click them,
//! `tree.rs` what a walk of them finds and their ids, and `atspi.rs` (cargo feature `atspi`)
//! the accessibility bus they come from.
//!
//! Invariants: coordinates the model gives are in the space of the last screenshot image (or,
//! before any, of the image the current settings would give) and are mapped back to screen
//! pixels here, rounded and clamped to the screen; a command may carry `"screenshot": {"width",
//! "quality"}`, which becomes the setting from then on; keycodes lent for typing are given
//! back once they have settled (at the start of a later command, or at shutdown); a lost
//! connection is reopened on the next command, whose result says so.

#[cfg(feature = "atspi")]
mod atspi;
pub(crate) mod capture;
mod input;
mod keymap;
mod masks;
mod tools;
mod tree;
mod widgets;
mod windows;
mod x;

use crate::backend::{Backend, Context};
use crate::error::WorkerError;
use agent_controller::protocol::tools::Tool;
use capture::ShotSettings;
use keymap::Lent;
use serde_json::{Value, json};
use x::{DisplayError, X};

pub struct Desktop {
    display: String,
    x: Option<X>,
    settings: ShotSettings,
    /// Screen pixels per image pixel (x, y) of the last screenshot.
    scale: Option<(f64, f64)>,
    lent: Lent,
    /// The accessibility bus, once used, and the widget ids given so far.
    widgets: widgets::Widgets,
    /// When the accessibility bus was last not found (`masks.rs` waits before looking again).
    no_bus_since: Option<std::time::Instant>,
    /// The widgets a person typed into (their ids): painted over like password fields (`masks.rs`).
    typed_into: std::collections::BTreeSet<String>,
    /// Where the current step clicked (screen pixels), for its recording frame.
    last_click: Option<(i32, i32)>,
}

/// The remark added when a command had to reconnect.
const REOPENED: &str = "the connection to the display had been lost and was reopened";

impl Desktop {
    /// The backend for `display` (else `$DISPLAY`), or why there can be none.
    pub fn open(display: Option<String>) -> Result<Desktop, DisplayError> {
        let display = display
            .or_else(|| std::env::var("DISPLAY").ok())
            .filter(|d| !d.trim().is_empty())
            .ok_or(DisplayError::NotSet)?;
        let x = X::open(&display)?;
        Ok(Desktop {
            display,
            x: Some(x),
            settings: ShotSettings::default(),
            scale: None,
            lent: Lent::default(),
            widgets: Default::default(),
            no_bus_since: None,
            typed_into: Default::default(),
            last_click: None,
        })
    }

    /// One line for the log: the display, its size and the window manager.
    pub fn describe(&self) -> String {
        let Some(x) = &self.x else { return format!("display {}", self.display) };
        let wm = match windows::Windows::read(x) {
            Ok(w) => w
                .manager
                .map_or("no EWMH window manager (plain window tree)".to_string(), |m| format!("window manager {m}")),
            Err(e) => format!("windows unreadable ({e})"),
        };
        format!("display {} ({}×{}), {wm}", self.display, x.width, x.height)
    }

    /// The connection, opened again if it was lost; says whether it was.
    fn ensure(&mut self) -> Result<bool, WorkerError> {
        if self.x.is_some() {
            return Ok(false);
        }
        let x = X::open(&self.display).map_err(|e| WorkerError::Unavailable(e.to_string()))?;
        self.x = Some(x);
        // A new server may have another size; the old scale means nothing there.
        self.scale = None;
        self.lent = Lent::default();
        Ok(true)
    }

    fn x(&self) -> Result<&X, WorkerError> {
        self.x.as_ref().ok_or_else(|| WorkerError::Unavailable(format!("display {} is not connected", self.display)))
    }

    /// The scale the model's coordinates are in: the last screenshot's, else what a screenshot
    /// at the current settings would have.
    fn scale(&self) -> Result<(f64, f64), WorkerError> {
        if let Some(s) = self.scale {
            return Ok(s);
        }
        let x = self.x()?;
        let (sw, sh) = (x.width as f64, x.height as f64);
        let tw = (self.settings.width as f64).min(sw).max(1.0);
        let th = (sh * tw / sw).round().max(1.0);
        Ok((sw / tw, sh / th))
    }

    /// An image point → the screen pixel it stands for (rounded, clamped to the screen).
    fn to_screen(&self, ix: f64, iy: f64) -> Result<(i32, i32), WorkerError> {
        let (sx, sy) = self.scale()?;
        let x = self.x()?;
        let clamp = |v: f64, max: u16| (v.round() as i64).clamp(0, max.saturating_sub(1) as i64) as i32;
        Ok((clamp(ix * sx, x.width), clamp(iy * sy, x.height)))
    }

    /// A screen pixel → the image point that shows it.
    fn to_image(&self, px: i32, py: i32) -> Result<(i64, i64), WorkerError> {
        let (sx, sy) = self.scale()?;
        Ok(((px as f64 / sx).round() as i64, (py as f64 / sy).round() as i64))
    }
}

impl Backend for Desktop {
    fn capability(&self) -> &'static str {
        "app"
    }

    fn run(&mut self, tool: Tool, params: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let reopened = self.ensure()?;
        // A frame marks the click of the step just before it, and only that one.
        if tool != Tool::RecordingFrame {
            self.last_click = None;
        }
        if let Some(s) = params.get("screenshot").filter(|s| s.is_object()) {
            self.settings = self.settings.with(s);
        }
        let restored = match &self.x {
            Some(x) => self.lent.restore(&x.conn, false),
            None => Ok(()),
        };
        let mut result = restored.and_then(|()| self.dispatch(tool, params, ctx));
        if let Err(WorkerError::WillRestart(_)) = &result {
            self.x = None;
            if let Err(WorkerError::WillRestart(e)) = result {
                result = Err(WorkerError::Noted(e, "it will be reopened on the next command".into()));
            }
        }
        match (result, reopened) {
            (Ok(mut v), true) => {
                if let Some(map) = v.as_object_mut() {
                    map.insert("note".into(), json!(REOPENED));
                }
                Ok(v)
            }
            (Err(e), true) => Err(e.noted(REOPENED)),
            (r, false) => r,
        }
    }

    fn shutdown(&mut self) {
        if let Some(x) = self.x.take() {
            let _ = self.lent.restore(&x.conn, true);
        }
    }
}
