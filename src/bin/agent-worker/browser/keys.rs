//! Keyboard input: a key or combination such as `Enter`, `Control+A` or `Shift+Tab`, sent to
//! the page as DevTools key events.
//!
//! Parsing is separate from sending so it can be checked without a browser. A key that types
//! a character sends it as text, unless Alt, Control or Meta is held (then it is a shortcut,
//! not typing). Unknown keys and modifiers are refused by name, never guessed.

use super::Browser;
use crate::error::WorkerError;
use serde_json::json;

/// One key press as DevTools wants it.
#[derive(Debug)]
struct KeyPress {
    key: String,
    code: String,
    /// The Windows virtual key code, which Chromium uses for shortcuts.
    vk: u32,
    /// The character typed, if any.
    text: Option<String>,
    /// DevTools' bit mask: Alt 1, Control 2, Meta 4, Shift 8.
    modifiers: u32,
}

/// A named key: the names accepted for it, and DevTools' key, code, virtual key and text.
struct Named {
    names: &'static [&'static str],
    key: &'static str,
    code: &'static str,
    vk: u32,
    text: Option<&'static str>,
}

const fn named(
    names: &'static [&'static str],
    key: &'static str,
    code: &'static str,
    vk: u32,
    text: Option<&'static str>,
) -> Named {
    Named { names, key, code, vk, text }
}

const NAMED: &[Named] = &[
    named(&["Enter", "Return"], "Enter", "Enter", 13, Some("\r")),
    named(&["Tab"], "Tab", "Tab", 9, None),
    named(&["Escape", "Esc"], "Escape", "Escape", 27, None),
    named(&["Backspace"], "Backspace", "Backspace", 8, None),
    named(&["Delete"], "Delete", "Delete", 46, None),
    named(&["ArrowUp", "Up"], "ArrowUp", "ArrowUp", 38, None),
    named(&["ArrowDown", "Down"], "ArrowDown", "ArrowDown", 40, None),
    named(&["ArrowLeft", "Left"], "ArrowLeft", "ArrowLeft", 37, None),
    named(&["ArrowRight", "Right"], "ArrowRight", "ArrowRight", 39, None),
    named(&["Home"], "Home", "Home", 36, None),
    named(&["End"], "End", "End", 35, None),
    named(&["PageUp"], "PageUp", "PageUp", 33, None),
    named(&["PageDown"], "PageDown", "PageDown", 34, None),
    named(&["Space", " "], " ", "Space", 32, Some(" ")),
];

fn modifier_bit(name: &str) -> Result<u32, WorkerError> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "alt" => 1,
        "control" | "ctrl" => 2,
        "meta" | "cmd" | "command" => 4,
        "shift" => 8,
        other => return Err(WorkerError::bad(format!("unknown modifier `{other}`"))),
    })
}

/// `Control+Shift+K` → the key press it means.
fn parse(combo: &str) -> Result<KeyPress, WorkerError> {
    let parts: Vec<&str> = combo.split('+').map(str::trim).filter(|s| !s.is_empty()).collect();
    let Some((key, mods)) = parts.split_last() else { return Err(WorkerError::bad("empty key")) };
    let mut modifiers = 0;
    for m in mods {
        modifiers |= modifier_bit(m)?;
    }
    let (key, code, vk, text) = if let Some(n) = NAMED.iter().find(|n| n.names.contains(key)) {
        (n.key.to_string(), n.code.to_string(), n.vk, n.text.map(str::to_string))
    } else if key.chars().count() == 1 {
        let c = key.chars().next().unwrap_or(' ');
        let upper = c.to_ascii_uppercase();
        let code = if c.is_ascii_digit() { format!("Digit{c}") } else { format!("Key{upper}") };
        (key.to_string(), code, upper as u32, Some(key.to_string()))
    } else {
        return Err(WorkerError::bad(format!("unknown key `{key}`")));
    };
    // With Alt, Control or Meta held the key is a shortcut: it types nothing.
    let text = text.filter(|_| modifiers & (1 | 2 | 4) == 0);
    Ok(KeyPress { key, code, vk, text, modifiers })
}

/// Characters typed key by key; a longer text goes in at once but for its last character.
const KEYED_CHARS: usize = 300;

/// The key press that types `c` (a new line is Enter).
fn typing(c: char) -> KeyPress {
    if c == '\n' {
        return KeyPress { key: "Enter".into(), code: "Enter".into(), vk: 13, text: Some("\r".into()), modifiers: 0 };
    }
    let upper = c.to_ascii_uppercase();
    let (code, vk) = match c {
        'a'..='z' | 'A'..='Z' => (format!("Key{upper}"), upper as u32),
        '0'..='9' => (format!("Digit{c}"), c as u32),
        ' ' => ("Space".into(), 32),
        _ => (String::new(), 0),
    };
    KeyPress { key: c.to_string(), code, vk, text: Some(c.to_string()), modifiers: 0 }
}

/// The DevTools key name `combo` presses (`Return` → `Enter`, `Space` → `" "`).
pub(super) fn key_name(combo: &str) -> Result<String, WorkerError> {
    parse(combo).map(|k| k.key)
}

impl Browser {
    /// Type `text` into the focused element as a person does, with a key down and up for each
    /// character: pages that react to keys (suggestions on keyup, a terminal on keydown) see
    /// them. A text longer than `KEYED_CHARS` goes in at once, its last character keyed.
    pub(super) fn type_text(&mut self, text: &str) -> Result<(), WorkerError> {
        // A Windows line end is one Enter, not two.
        let text = &text.replace("\r\n", "\n");
        let count = text.chars().count();
        let keyed_from = if count > KEYED_CHARS { count - 1 } else { 0 };
        let split = text.char_indices().nth(keyed_from).map_or(text.len(), |(i, _)| i);
        if split > 0 {
            self.page_call("Input.insertText", json!({"text": &text[..split]}))?;
        }
        for c in text[split..].chars() {
            self.send(&typing(c))?;
        }
        Ok(())
    }

    /// Press and release `combo` on the page.
    pub(super) fn key(&mut self, combo: &str) -> Result<(), WorkerError> {
        self.send(&parse(combo)?)
    }

    fn send(&mut self, k: &KeyPress) -> Result<(), WorkerError> {
        let mut down = json!({"type": if k.text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": k.key,
            "code": k.code, "windowsVirtualKeyCode": k.vk, "modifiers": k.modifiers});
        if let Some(t) = &k.text {
            down["text"] = json!(t);
        }
        self.page_call("Input.dispatchKeyEvent", down)?;
        let up = json!({"type": "keyUp", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk,
            "modifiers": k.modifiers});
        self.page_call("Input.dispatchKeyEvent", up)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_character_has_its_key() {
        let a = typing('a');
        assert_eq!((a.key.as_str(), a.code.as_str(), a.vk, a.text.as_deref()), ("a", "KeyA", 65, Some("a")));
        let nine = typing('9');
        assert_eq!((nine.code.as_str(), nine.vk), ("Digit9", 57));
        let e = typing('é');
        assert_eq!((e.key.as_str(), e.code.as_str(), e.vk, e.text.as_deref()), ("é", "", 0, Some("é")));
        assert_eq!(typing('\n').text.as_deref(), Some("\r"), "a new line is Enter");
    }

    #[test]
    fn combinations_parse() {
        let enter = parse("Return").unwrap();
        assert_eq!((enter.key.as_str(), enter.vk, enter.text.as_deref()), ("Enter", 13, Some("\r")));
        let select_all = parse("Control+a").unwrap();
        assert_eq!((select_all.code.as_str(), select_all.modifiers, select_all.text), ("KeyA", 2, None));
        let shifted = parse("Shift+1").unwrap();
        assert_eq!((shifted.code.as_str(), shifted.text.as_deref()), ("Digit1", Some("1")));
        assert_eq!(parse("Hyper+x").unwrap_err().to_string(), "unknown modifier `hyper`");
        assert_eq!(parse("F13").unwrap_err().to_string(), "unknown key `F13`");
        assert_eq!(parse(" + ").unwrap_err().to_string(), "empty key");
    }
}
