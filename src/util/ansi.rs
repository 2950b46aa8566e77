//! Output fit for a model and a log: terminal escape sequences removed, and the environment
//! that keeps commands from waiting on a pager or a terminal. Shared by the worker's shell and
//! the controller's SSH executor, so both give the model the same clean text.

/// Set on every command: no pager, no colours, no interactive front ends.
pub const NO_PAGER_ENV: [(&str, &str); 7] = [
    ("PAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    ("DEBIAN_FRONTEND", "noninteractive"),
];

/// Text from elsewhere (a model, an endpoint, a page) made safe to print on a terminal: escape
/// sequences removed, and every other control character but line breaks and tabs.
pub fn printable(s: &str) -> String {
    strip_ansi(s).chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect()
}

/// Remove terminal escape sequences (CSI, OSC, two-byte escapes) and stray carriage returns.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' || (n == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            if n == '\u{1b}' {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_has_no_control_characters_but_line_breaks_and_tabs() {
        let from_an_endpoint = "ok\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{8}x\ty\nz";
        assert_eq!(printable(from_an_endpoint), "ok31mx\ty\nz");
    }

    #[test]
    fn escapes_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m plain\r\n"), "red plain\n");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(strip_ansi("no escapes"), "no escapes");
    }
}
