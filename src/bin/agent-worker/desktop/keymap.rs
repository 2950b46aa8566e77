//! Keys as X keysyms, and the keyboard map that turns them into keycodes.
//!
//! `parse_combo` reads `ctrl+l`, `Alt+F4`, `Return` (names and modifiers case-insensitive) into
//! keysyms; `char_keysyms` gives the keysyms that type a character (Latin-1 directly, anything
//! else as its Unicode keysym `0x01000000 + code point`). `Keymap` is the server's core map,
//! read at each use: it finds the keycode (and whether Shift is needed) for a keysym, and lends
//! keycodes that have no symbols to keysyms the map lacks. Invariant: every lent keycode is
//! recorded in `Lent` until `Lent::restore` gives it back its empty mapping.

use crate::error::WorkerError;
use std::time::{Duration, Instant};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, Keycode};
use x11rb::rust_connection::RustConnection;

pub type Keysym = u32;

pub const SHIFT_L: Keysym = 0xffe1;
const NO_SYMBOL: Keysym = 0;

/// Key names (lower-case) and their keysyms.
const NAMED: &[(&[&str], Keysym)] = &[
    (&["return", "enter", "kp_enter"], 0xff0d),
    (&["tab"], 0xff09),
    (&["escape", "esc"], 0xff1b),
    (&["backspace", "back_space"], 0xff08),
    (&["delete", "del"], 0xffff),
    (&["insert", "ins"], 0xff63),
    (&["home"], 0xff50),
    (&["end"], 0xff57),
    (&["page_up", "pageup", "prior", "pgup"], 0xff55),
    (&["page_down", "pagedown", "next", "pgdn"], 0xff56),
    (&["left", "arrowleft"], 0xff51),
    (&["up", "arrowup"], 0xff52),
    (&["right", "arrowright"], 0xff53),
    (&["down", "arrowdown"], 0xff54),
    (&["space"], 0x20),
    (&["plus"], 0x2b),
    (&["minus"], 0x2d),
    (&["comma"], 0x2c),
    (&["period"], 0x2e),
    (&["slash"], 0x2f),
    (&["backslash"], 0x5c),
    (&["equal"], 0x3d),
    (&["menu"], 0xff67),
    (&["print", "printscreen"], 0xff61),
    (&["pause"], 0xff13),
    (&["caps_lock", "capslock"], 0xffe5),
    (&["shift", "shift_l"], SHIFT_L),
    (&["control", "ctrl", "control_l"], 0xffe3),
    (&["alt", "alt_l"], 0xffe9),
    (&["super", "super_l", "win", "meta", "cmd"], 0xffeb),
];

/// Modifier names (lower-case) and the keysym pressed for them.
const MODIFIERS: &[(&[&str], Keysym)] = &[
    (&["ctrl", "control"], 0xffe3),
    (&["shift"], SHIFT_L),
    (&["alt"], 0xffe9),
    (&["super", "win", "windows", "meta", "cmd", "command", "logo"], 0xffeb),
    (&["altgr"], 0xfe03),
];

/// A parsed combination: modifiers to hold, the key, and the normalised text of it.
#[derive(Debug, PartialEq, Eq)]
pub struct Combo {
    pub modifiers: Vec<Keysym>,
    pub key: Keysym,
    pub text: String,
}

/// `ctrl+shift+t` → modifiers and key. A letter with a modifier other than Shift means its
/// key (`ctrl+L` is ctrl+l); alone, a character is typed as itself (`A` is Shift+a).
pub fn parse_combo(combo: &str) -> Result<Combo, WorkerError> {
    let combo = combo.trim();
    // The last part is the key; `+` alone or after a `+` (`ctrl++`) is the plus key itself.
    let (mods, key) = match combo {
        "+" => ("", "+"),
        _ => match combo.strip_suffix("++") {
            Some(mods) => (mods, "+"),
            None => combo.rsplit_once('+').unwrap_or(("", combo)),
        },
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(WorkerError::bad("empty key"));
    }
    let mut modifiers = Vec::new();
    let mut names = Vec::new();
    for m in mods.split('+').map(str::trim).filter(|m| !m.is_empty()) {
        let low = m.to_lowercase();
        let Some(&(n, sym)) = MODIFIERS.iter().find(|(n, _)| n.contains(&low.as_str())) else {
            return Err(WorkerError::bad(format!("unknown modifier `{m}` (use ctrl, shift, alt, super, altgr)")));
        };
        if !modifiers.contains(&sym) {
            modifiers.push(sym);
            names.push(n[0]);
        }
    }
    let key_sym = key_keysym(key, !modifiers.iter().all(|&m| m == SHIFT_L))?;
    names.push(key);
    Ok(Combo { modifiers, key: key_sym, text: names.join("+") })
}

fn key_keysym(key: &str, shortcut: bool) -> Result<Keysym, WorkerError> {
    let mut chars = key.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        let c = if shortcut { c.to_ascii_lowercase() } else { c };
        return Ok(char_keysyms(c)[0]);
    }
    let low = key.to_lowercase();
    if let Some(&(_, sym)) = NAMED.iter().find(|(n, _)| n.contains(&low.as_str())) {
        return Ok(sym);
    }
    if let Some(n) = low.strip_prefix('f').and_then(|n| n.parse::<u32>().ok()).filter(|n| (1..=35).contains(n)) {
        return Ok(0xffbe + n - 1);
    }
    Err(WorkerError::bad(format!(
        "unknown key `{key}`: use Return, Tab, Escape, BackSpace, Delete, Home, End, Page_Up, Page_Down, \
         Up, Down, Left, Right, F1…F35, space, or one character, with ctrl+, alt+, shift+, super+ before it"
    )))
}

/// The keysyms that type `c`, the one to map first. Newline is Return, tab is Tab.
pub fn char_keysyms(c: char) -> Vec<Keysym> {
    let cp = c as u32;
    match c {
        '\n' | '\r' => vec![0xff0d],
        '\t' => vec![0xff09],
        ' '..='~' | '\u{a0}'..='\u{ff}' => vec![cp],
        // The euro sign has a legacy keysym that keymaps use.
        '€' => vec![0x0100_0000 + cp, 0x20ac],
        _ => vec![0x0100_0000 + cp],
    }
}

/// The core keyboard map at one moment.
pub struct Keymap {
    min: Keycode,
    per: usize,
    syms: Vec<Keysym>,
}

impl Keymap {
    pub fn read(conn: &RustConnection) -> Result<Keymap, WorkerError> {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let reply = conn.get_keyboard_mapping(min, max - min + 1)?.reply()?;
        Ok(Keymap { min, per: reply.keysyms_per_keycode.max(1) as usize, syms: reply.keysyms })
    }

    fn rows(&self) -> impl Iterator<Item = (Keycode, &[Keysym])> {
        self.syms.chunks(self.per).enumerate().map(|(i, row)| (self.min.wrapping_add(i as u8), row))
    }

    /// The keycode for `sym` and whether Shift must be held (the first two columns only: the
    /// others need group or level-3 switching that cannot be relied on).
    pub fn find(&self, sym: Keysym) -> Option<(Keycode, bool)> {
        let col = |c: usize| self.rows().find(|(_, row)| row.get(c) == Some(&sym)).map(|(k, _)| k);
        col(0).map(|k| (k, false)).or_else(|| col(1).map(|k| (k, true)))
    }

    /// Keycodes with no symbol at all, highest first (the ones least likely on a real keyboard).
    fn spare(&self) -> Vec<Keycode> {
        let mut v: Vec<Keycode> =
            self.rows().filter(|(_, row)| row.iter().all(|&s| s == NO_SYMBOL)).map(|(k, _)| k).collect();
        v.reverse();
        v
    }
}

/// Keycodes lent to keysyms the map lacked, and when one was last pressed.
#[derive(Default)]
pub struct Lent {
    codes: Vec<Keycode>,
    pressed: Option<Instant>,
}

/// How long a lent keycode keeps its keysym after its last press: a client looks the keysym
/// up when it handles the event, possibly after our next request, so it must not change at once.
const SETTLE: Duration = Duration::from_millis(300);

impl Lent {
    /// A keycode for the first of `syms` the map has, else a spare one mapped to `syms[0]` now.
    pub fn keycode(
        &mut self,
        conn: &RustConnection,
        map: &mut Keymap,
        syms: &[Keysym],
    ) -> Result<(Keycode, bool), WorkerError> {
        if let Some(found) = syms.iter().find_map(|&s| map.find(s)) {
            return Ok(found);
        }
        let Some(&sym) = syms.first() else { return Err(WorkerError::bad("no key to press")) };
        let mut spare = map.spare();
        if spare.is_empty() && !self.codes.is_empty() {
            self.restore(conn, true)?;
            *map = Keymap::read(conn)?;
            spare = map.spare();
        }
        let Some(&code) = spare.first() else {
            return Err(WorkerError::Unavailable("the keyboard map has no free keycode to type this character".into()));
        };
        let row = vec![sym; map.per];
        conn.change_keyboard_mapping(1, code, map.per as u8, &row)?;
        let at = (code - map.min) as usize * map.per;
        map.syms[at..at + map.per].copy_from_slice(&row);
        self.codes.push(code);
        Ok((code, false))
    }

    pub fn pressed_now(&mut self) {
        self.pressed = Some(Instant::now());
    }

    /// Give the lent keycodes back their empty mapping once they have settled; with `wait`,
    /// sleep until then instead of leaving them for later.
    pub fn restore(&mut self, conn: &RustConnection, wait: bool) -> Result<(), WorkerError> {
        if self.codes.is_empty() {
            return Ok(());
        }
        let left = self.pressed.map_or(Duration::ZERO, |t| SETTLE.saturating_sub(t.elapsed()));
        if !left.is_zero() {
            if !wait {
                return Ok(());
            }
            std::thread::sleep(left);
        }
        let per = conn.get_keyboard_mapping(conn.setup().min_keycode, 1)?.reply()?.keysyms_per_keycode.max(1);
        let empty = vec![NO_SYMBOL; per as usize];
        for code in std::mem::take(&mut self.codes) {
            conn.change_keyboard_mapping(1, code, per, &empty)?;
        }
        conn.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn combo(s: &str) -> (Vec<Keysym>, Keysym, String) {
        let c = parse_combo(s).unwrap();
        (c.modifiers, c.key, c.text)
    }

    #[test]
    fn combinations_parse_case_insensitively() {
        assert_eq!(combo("ctrl+l"), (vec![0xffe3], 'l' as u32, "ctrl+l".into()));
        assert_eq!(combo("Ctrl+L"), (vec![0xffe3], 'l' as u32, "ctrl+L".into()));
        assert_eq!(combo("Alt+F4"), (vec![0xffe9], 0xffc1, "alt+F4".into()));
        assert_eq!(combo("Return").1, 0xff0d);
        assert_eq!(combo("ENTER").1, 0xff0d);
        assert_eq!(combo("control+shift+Tab"), (vec![0xffe3, SHIFT_L], 0xff09, "ctrl+shift+Tab".into()));
        assert_eq!(combo("ctrl++").1, '+' as u32);
        assert_eq!(combo("+"), (vec![], '+' as u32, "+".into()));
        assert!(parse_combo("ctrl+").unwrap_err().to_string().contains("empty key"));
        assert_eq!(combo("A").1, 'A' as u32, "alone, a capital is typed as one");
        assert_eq!(combo("super+e").0, vec![0xffeb]);
        assert!(parse_combo("hyper+x").unwrap_err().to_string().contains("unknown modifier `hyper`"));
        assert!(parse_combo("ctrl+Frobnicate").unwrap_err().to_string().contains("unknown key `Frobnicate`"));
    }

    #[test]
    fn characters_map_to_latin1_or_unicode_keysyms() {
        assert_eq!(char_keysyms('a'), vec![0x61]);
        assert_eq!(char_keysyms('é'), vec![0xe9]);
        assert_eq!(char_keysyms('€'), vec![0x0100_20ac, 0x20ac]);
        assert_eq!(char_keysyms('ж'), vec![0x0100_0436]);
        assert_eq!(char_keysyms('\n'), vec![0xff0d]);
    }

    #[test]
    fn the_map_finds_columns_and_spare_keycodes() {
        // keycode 8: a A; 9: nothing; 10: 1 exclam; 11: nothing.
        let map = Keymap { min: 8, per: 2, syms: vec![0x61, 0x41, 0, 0, 0x31, 0x21, 0, 0] };
        assert_eq!(map.find(0x61), Some((8, false)));
        assert_eq!(map.find(0x21), Some((10, true)));
        assert_eq!(map.find(0xe9), None);
        assert_eq!(map.spare(), vec![11, 9]);
    }
}
