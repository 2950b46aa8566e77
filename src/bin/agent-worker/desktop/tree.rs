//! What a widget walk produces and the ids it gives, apart from how the bus is read
//! (`atspi.rs`) and how the tools show it (`widgets.rs`): a `Walk` of `Node` trees per window,
//! its `Scope`, the `Ids` table (`w12` stays the same object for the worker's life, until the
//! table starts over when very large), a `Pressed` widget, and which X window a top-level
//! accessible stands for (`same`).
#![cfg_attr(not(feature = "atspi"), allow(dead_code))]

use super::windows::Win;
use std::collections::HashMap;
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
