//! Synthetic input through the XTEST extension: pointer moves, clicks, drags, wheel clicks, key
//! combinations and typed text. Coordinates here are screen pixels (the caller maps them).
//!
//! Invariants: every press has its release, modifiers included, even when a later step fails
//! (best effort then); each action ends with a round trip, so the server has handled all of it
//! before the result is sent; typed text is never logged or returned.

use super::keymap::{self, Combo, Keymap, Lent, SHIFT_L};
use super::x::X;
use crate::error::WorkerError;
use std::time::{Duration, Instant};
use x11rb::protocol::xproto::{
    BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, KEY_PRESS_EVENT, KEY_RELEASE_EVENT, Keycode, MOTION_NOTIFY_EVENT,
};
use x11rb::protocol::xtest::ConnectionExt as _;

pub const LEFT: u8 = 1;
pub const RIGHT: u8 = 3;

fn fake(x: &X, kind: u8, detail: u8, px: i16, py: i16) -> Result<(), WorkerError> {
    x.conn.xtest_fake_input(kind, detail, x11rb::CURRENT_TIME, x.root, px, py, 0)?;
    Ok(())
}

fn screen_i16(v: i32) -> i16 {
    v.clamp(i16::MIN as i32, i16::MAX as i32) as i16
}

pub fn move_to(x: &X, px: i32, py: i32) -> Result<(), WorkerError> {
    fake(x, MOTION_NOTIFY_EVENT, 0, screen_i16(px), screen_i16(py))?;
    x.sync()
}

/// Move to the point, then `count` clicks of `button`.
pub fn click(x: &X, px: i32, py: i32, button: u8, count: u32) -> Result<(), WorkerError> {
    move_to(x, px, py)?;
    for i in 0..count {
        if i > 0 {
            // Well inside any double-click interval, yet two distinct clicks.
            std::thread::sleep(Duration::from_millis(40));
        }
        fake(x, BUTTON_PRESS_EVENT, button, 0, 0)?;
        fake(x, BUTTON_RELEASE_EVENT, button, 0, 0)?;
        x.sync()?;
    }
    Ok(())
}

/// Press the left button at `from`, move in steps to `to`, release there.
pub fn drag(x: &X, from: (i32, i32), to: (i32, i32)) -> Result<(), WorkerError> {
    move_to(x, from.0, from.1)?;
    fake(x, BUTTON_PRESS_EVENT, LEFT, 0, 0)?;
    x.sync()?;
    let moved = (|| {
        // Applications start a drag only after they have seen the press and some motion.
        std::thread::sleep(Duration::from_millis(30));
        const STEPS: i32 = 12;
        for i in 1..=STEPS {
            let px = from.0 + (to.0 - from.0) * i / STEPS;
            let py = from.1 + (to.1 - from.1) * i / STEPS;
            move_to(x, px, py)?;
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok::<_, WorkerError>(())
    })();
    fake(x, BUTTON_RELEASE_EVENT, LEFT, 0, 0)?;
    x.sync()?;
    moved
}

/// `amount` wheel clicks: button 4 up, 5 down, 6 left, 7 right.
pub fn wheel(x: &X, button: u8, amount: u32) -> Result<(), WorkerError> {
    for _ in 0..amount {
        fake(x, BUTTON_PRESS_EVENT, button, 0, 0)?;
        fake(x, BUTTON_RELEASE_EVENT, button, 0, 0)?;
    }
    x.sync()
}

fn key(x: &X, code: Keycode, press: bool) -> Result<(), WorkerError> {
    fake(x, if press { KEY_PRESS_EVENT } else { KEY_RELEASE_EVENT }, code, 0, 0)
}

/// Hold the modifiers, press and release the key, release the modifiers (last first).
pub fn press_combo(x: &X, lent: &mut Lent, combo: &Combo) -> Result<(), WorkerError> {
    let mut map = Keymap::read(&x.conn)?;
    let mut held = Vec::new();
    for &m in &combo.modifiers {
        held.push(lent.keycode(&x.conn, &mut map, &[m])?.0);
    }
    let (code, shift) = lent.keycode(&x.conn, &mut map, &[combo.key])?;
    if shift && !combo.modifiers.contains(&SHIFT_L) {
        held.push(lent.keycode(&x.conn, &mut map, &[SHIFT_L])?.0);
    }
    let mut pressed = 0;
    let mut outcome = Ok(());
    for &m in &held {
        outcome = key(x, m, true);
        if outcome.is_err() {
            break;
        }
        pressed += 1;
    }
    if outcome.is_ok() {
        outcome = key(x, code, true).and_then(|()| key(x, code, false));
    }
    for &m in held[..pressed].iter().rev() {
        let _ = key(x, m, false);
    }
    lent.pressed_now();
    outcome?;
    x.sync()
}

/// Type `text` key by key; returns how many characters were typed before `deadline` (all of
/// them unless time ran out).
pub fn type_text(x: &X, lent: &mut Lent, text: &str, deadline: Option<Instant>) -> Result<usize, WorkerError> {
    let mut map = Keymap::read(&x.conn)?;
    let (shift, _) = lent.keycode(&x.conn, &mut map, &[SHIFT_L])?;
    let mut typed = 0;
    for c in text.chars() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if c.is_control() && !matches!(c, '\n' | '\t') {
            typed += 1;
            continue;
        }
        let (code, need_shift) = lent.keycode(&x.conn, &mut map, &keymap::char_keysyms(c))?;
        if need_shift {
            key(x, shift, true)?;
        }
        let pressed = key(x, code, true).and_then(|()| key(x, code, false));
        if need_shift {
            key(x, shift, false)?;
        }
        pressed?;
        lent.pressed_now();
        typed += 1;
        // A round trip now and then keeps the request queue short.
        if typed % 32 == 0 {
            x.sync()?;
        }
    }
    x.sync()?;
    Ok(typed)
}
