//! The one rule for file names that come from anywhere (the model, a worker, a URL, the API).
//!
//! A sanitized name is a single path component: no separators (nor their lookalikes), no `..`,
//! no NUL or control characters, no bidirectional controls (a right-to-left override makes
//! `exe.pdf` of `fdp.exe`) or zero-width characters, no leading dot, at most 150 bytes, never a Windows-reserved device name and never
//! a name the file routes use themselves (`zip`). The daemon applies it before storing; the
//! console and the MCP server apply it before writing a download to the local disk.

/// Names the file routes give a meaning (`GET /sessions/:id/files/zip`).
const ROUTE_NAMES: [&str; 1] = ["zip"];
pub const MAX_NAME_BYTES: usize = 150;

/// `("report", ".pdf")`; a leading dot is not an extension.
pub fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    }
}

/// Make any name from outside (model, worker, URL) safe as a single file name: no separators,
/// no `..`, no control characters, no leading dots, bounded length, no Windows-reserved or
/// route names. Never empty.
pub fn sanitize_filename(raw: &str) -> String {
    // Keep only the last path component, whichever separator the sender used.
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let mut name: String = base
        .chars()
        .filter(|c| !invisible(*c))
        .map(|c| {
            if c.is_control() || matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*') || slash_like(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    name = trim_ends(&name).to_string();
    if name.is_empty() {
        name = "file".to_string();
    }
    if name.len() > MAX_NAME_BYTES {
        let (stem, ext) = split_ext(&name);
        let ext = if ext.len() <= 16 { ext } else { "" };
        let mut cut = MAX_NAME_BYTES - ext.len();
        while !stem.is_char_boundary(cut.min(stem.len())) {
            cut -= 1;
        }
        // The cut may end on a space or a dot, which the first pass would have trimmed.
        name = format!("{}{ext}", trim_ends(&stem[..cut.min(stem.len())]));
    }
    // Windows reserves the device names before any dot: `con.txt`, `con.tar.gz`.
    let stem_upper = name.split('.').next().unwrap_or("").to_ascii_uppercase();
    let reserved = matches!(stem_upper.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem_upper.len() == 4
            && (stem_upper.starts_with("COM") || stem_upper.starts_with("LPT"))
            && stem_upper.as_bytes()[3].is_ascii_digit());
    if reserved || ROUTE_NAMES.contains(&name.as_str()) {
        name = format!("_{name}");
    }
    name
}

/// Without leading or trailing spaces and dots (a leading dot hides a file; Windows drops
/// trailing ones), so that sanitizing again changes nothing.
fn trim_ends(name: &str) -> &str {
    name.trim_matches(|c: char| c.is_whitespace() || c == '.')
}

/// Bidirectional controls and zero-width characters: they change how a name reads, not what
/// it is.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
}

/// Characters drawn like a path separator.
fn slash_like(c: char) -> bool {
    matches!(c, '\u{2044}' | '\u{2215}' | '\u{29F8}' | '\u{29F9}' | '\u{FF0F}' | '\u{FF3C}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_examples() {
        assert_eq!(sanitize_filename("../x"), "x");
        assert_eq!(sanitize_filename("/etc/passwd"), "passwd");
        assert_eq!(sanitize_filename("a\\b"), "b");
        assert_eq!(sanitize_filename("a\0b.txt"), "a_b.txt");
        assert_eq!(sanitize_filename(".hidden"), "hidden");
        assert_eq!(sanitize_filename(".."), "file");
        assert_eq!(sanitize_filename(""), "file");
        assert_eq!(sanitize_filename("CON"), "_CON");
        assert_eq!(sanitize_filename("com1.txt"), "_com1.txt");
        assert_eq!(sanitize_filename("zip"), "_zip");
        assert_eq!(sanitize_filename("report.pdf"), "report.pdf");
        let long = format!("{}.pdf", "a".repeat(300));
        let s = sanitize_filename(&long);
        assert!(s.len() <= MAX_NAME_BYTES && s.ends_with(".pdf"), "{s}");
        assert_eq!(sanitize_filename("invoice\u{202E}fdp.exe"), "invoicefdp.exe");
        assert_eq!(sanitize_filename("a\u{2066}b\u{2069}\u{200B}c.txt"), "abc.txt");
        assert_eq!(sanitize_filename("etc\u{2215}passwd"), "etc_passwd");
        let multi = "é".repeat(200);
        assert!(sanitize_filename(&multi).len() <= MAX_NAME_BYTES);
        // Found by tests/fuzz: a cut that ends on a space, and spaces behind leading dots.
        let cut_at_space = format!("{} {}", "a".repeat(149), "b".repeat(20));
        assert_eq!(sanitize_filename(&cut_at_space), "a".repeat(149));
        assert_eq!(sanitize_filename(". .x"), "x");
        assert_eq!(sanitize_filename("CON.CON.txt"), "_CON.CON.txt");
    }
}
