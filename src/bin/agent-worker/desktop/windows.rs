//! Windows: listing them, finding one by title, the active one, and bringing one to the front.
//!
//! With an EWMH window manager (one that names itself through `_NET_SUPPORTING_WM_CHECK`),
//! the windows are its `_NET_CLIENT_LIST`, titled by `_NET_WM_NAME` (UTF-8) or `WM_NAME`, and
//! the active one is `_NET_ACTIVE_WINDOW`. Without one, they are the viewable children of the
//! root window that carry a `WM_NAME` (or whose child does), and the active one is the window
//! with the input focus. Lists are top-most first. A window that closes while it is being read
//! is left out, never an error.

use super::x::X;
use crate::error::WorkerError;
use std::time::{Duration, Instant};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConfigureWindowAux, ConnectionExt as _, EventMask, InputFocus, MapState, StackMode,
    Window,
};

/// One top-level window, its geometry in screen pixels.
#[derive(Debug, Clone)]
pub struct Win {
    pub id: Window,
    pub title: String,
    pub class: String,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub visible: bool,
    pub active: bool,
}

impl Win {
    pub fn contains(&self, px: i32, py: i32) -> bool {
        px >= self.x && py >= self.y && px < self.x + self.width as i32 && py < self.y + self.height as i32
    }

    pub fn centre(&self) -> (i32, i32) {
        (self.x + self.width as i32 / 2, self.y + self.height as i32 / 2)
    }
}

/// The windows, top-most first, and where the list came from.
pub struct Windows {
    pub list: Vec<Win>,
    /// The EWMH window manager's name, or None for the plain window tree.
    pub manager: Option<String>,
}

impl Windows {
    pub fn read(x: &X) -> Result<Windows, WorkerError> {
        match manager(x)? {
            Some(name) => {
                let mut ids = x.list(x.root, x.atoms.net_client_list_stacking)?;
                if ids.is_empty() {
                    ids = x.list(x.root, x.atoms.net_client_list)?;
                }
                ids.reverse();
                let active = x.list(x.root, x.atoms.net_active_window)?.first().copied().unwrap_or(0);
                Ok(Windows { list: describe(x, &ids, active)?, manager: Some(name) })
            }
            None => {
                let ids = plain_tree(x)?;
                let focus = x.conn.get_input_focus()?.reply()?.focus;
                let active = ids.iter().copied().find(|&id| is_ancestor(x, id, focus).unwrap_or(false)).unwrap_or(0);
                Ok(Windows { list: describe(x, &ids, active)?, manager: None })
            }
        }
    }

    pub fn active(&self) -> Option<&Win> {
        self.list.iter().find(|w| w.active)
    }

    /// The top-most visible window at a screen point.
    pub fn at(&self, px: i32, py: i32) -> Option<&Win> {
        self.list.iter().find(|w| w.visible && w.contains(px, py))
    }

    /// The window whose title is `wanted` (case-insensitive), else the top-most whose title
    /// contains it; the error lists the titles there are.
    pub fn find(&self, wanted: &str) -> Result<&Win, WorkerError> {
        let low = wanted.to_lowercase();
        let exact = self.list.iter().find(|w| w.title.to_lowercase() == low);
        let by_part = || self.list.iter().find(|w| w.title.to_lowercase().contains(&low));
        exact.or_else(by_part).ok_or_else(|| {
            let titles: Vec<String> = self.list.iter().take(20).map(|w| format!("{:?}", w.title)).collect();
            let there = if titles.is_empty() {
                "there are no windows".to_string()
            } else {
                format!("windows: {}", titles.join(", "))
            };
            WorkerError::bad(format!("no window title contains {wanted:?}; {there}"))
        })
    }
}

/// The EWMH window manager's name, if one runs.
fn manager(x: &X) -> Result<Option<String>, WorkerError> {
    let check = x.atoms.net_supporting_wm_check;
    let Some(&wm) = x.list(x.root, check)?.first() else { return Ok(None) };
    // A stale property (the manager died) points at a window that is gone or does not agree.
    match x.list(wm, check) {
        Ok(v) if v.first() == Some(&wm) => {}
        _ => return Ok(None),
    }
    let name = x.text(wm, x.atoms.net_wm_name).ok().flatten().unwrap_or_else(|| "a window manager".into());
    Ok(Some(name))
}

/// Viewable children of the root with a name (or whose child has one), top-most first.
fn plain_tree(x: &X) -> Result<Vec<Window>, WorkerError> {
    let children = x.conn.query_tree(x.root)?.reply()?.children;
    let mut out = Vec::new();
    for &child in children.iter().rev() {
        let Ok(attrs) = x.conn.get_window_attributes(child)?.reply() else { continue };
        if attrs.map_state != MapState::VIEWABLE {
            continue;
        }
        if x.text(child, AtomEnum::WM_NAME).ok().flatten().is_some() {
            out.push(child);
        } else if let Ok(tree) = x.conn.query_tree(child)?.reply() {
            // A frame drawn by a window manager that does not speak EWMH: its named child.
            if let Some(&named) = tree.children.iter().find(|&&c| x.text(c, AtomEnum::WM_NAME).ok().flatten().is_some())
            {
                out.push(named);
            }
        }
    }
    Ok(out)
}

/// Whether `w` is `inner` or one of its ancestors.
fn is_ancestor(x: &X, w: Window, inner: Window) -> Result<bool, WorkerError> {
    let mut cur = inner;
    for _ in 0..16 {
        if cur == w {
            return Ok(true);
        }
        if cur == x.root || cur == 0 || cur == 1 {
            return Ok(false);
        }
        cur = x.conn.query_tree(cur)?.reply()?.parent;
    }
    Ok(false)
}

/// Title, class and geometry of each window, asked for all at once; closed ones are dropped.
fn describe(x: &X, ids: &[Window], active: Window) -> Result<Vec<Win>, WorkerError> {
    let c = &x.conn;
    let mut cookies = Vec::with_capacity(ids.len());
    for &id in ids {
        cookies.push((
            id,
            c.get_property(false, id, x.atoms.net_wm_name, AtomEnum::ANY, 0, 1024)?,
            c.get_property(false, id, AtomEnum::WM_NAME, AtomEnum::ANY, 0, 1024)?,
            c.get_property(false, id, AtomEnum::WM_CLASS, AtomEnum::ANY, 0, 256)?,
            c.get_geometry(id)?,
            c.translate_coordinates(id, x.root, 0, 0)?,
            c.get_window_attributes(id)?,
        ));
    }
    let mut out = Vec::with_capacity(ids.len());
    for (id, net_name, name, class, geometry, origin, attrs) in cookies {
        let text = |r: Result<x11rb::protocol::xproto::GetPropertyReply, _>| {
            r.ok()
                .filter(|p| p.format == 8 && !p.value.is_empty())
                .map(|p| super::x::decode_text(&p.value, p.type_ == x.atoms.utf8_string))
        };
        let (net_name, name, class) = (text(net_name.reply()), text(name.reply()), text(class.reply()));
        let (Ok(g), Ok(o), Ok(a)) = (geometry.reply(), origin.reply(), attrs.reply()) else { continue };
        out.push(Win {
            id,
            title: net_name.or(name).unwrap_or_default(),
            // WM_CLASS is "instance\0Class": the class is what names the program.
            class: class.map(|c| c.rsplit('\0').next().unwrap_or_default().to_string()).unwrap_or_default(),
            x: o.dst_x as i32,
            y: o.dst_y as i32,
            width: g.width as u32,
            height: g.height as u32,
            visible: a.map_state == MapState::VIEWABLE,
            active: id == active,
        });
    }
    Ok(out)
}

/// Bring `win` to the front with the input focus. Returns how, and whether it is confirmed.
pub fn activate(x: &X, win: &Win, ewmh: bool) -> Result<(&'static str, bool), WorkerError> {
    if ewmh {
        let current = x.list(x.root, x.atoms.net_active_window)?.first().copied().unwrap_or(0);
        // Source 2 (a pager: the user's own request), no timestamp, the currently active window.
        let event = ClientMessageEvent::new(32, win.id, x.atoms.net_active_window, [2, 0, current, 0, 0]);
        let mask = EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY;
        x.conn.send_event(false, x.root, mask, event)?;
        x.conn.flush()?;
        let is_active = || Ok::<_, WorkerError>(x.list(x.root, x.atoms.net_active_window)?.first() == Some(&win.id));
        if poll(Duration::from_secs(1), is_active)? {
            return Ok(("_NET_ACTIVE_WINDOW", true));
        }
    }
    x.conn.map_window(win.id)?;
    x.conn.configure_window(top_level(x, win.id)?, &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE))?;
    x.conn.set_input_focus(InputFocus::PARENT, win.id, x11rb::CURRENT_TIME)?;
    x.sync()?;
    let focused = || {
        let focus = x.conn.get_input_focus()?.reply()?.focus;
        is_ancestor(x, win.id, focus)
    };
    Ok(("raise and focus", poll(Duration::from_millis(500), focused)?))
}

/// The child of the root that holds `w` (its window manager frame, or `w` itself).
fn top_level(x: &X, w: Window) -> Result<Window, WorkerError> {
    let mut cur = w;
    for _ in 0..16 {
        let parent = x.conn.query_tree(cur)?.reply()?.parent;
        if parent == x.root || parent == 0 {
            return Ok(cur);
        }
        cur = parent;
    }
    Ok(cur)
}

/// Check `f` every 10 ms until it is true or `limit` passes.
fn poll(limit: Duration, mut f: impl FnMut() -> Result<bool, WorkerError>) -> Result<bool, WorkerError> {
    let deadline = Instant::now() + limit;
    loop {
        if f()? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
