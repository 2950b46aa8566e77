//! Small pure helpers of the browser tools: quoting for scripts, adding fields to a result,
//! reading a PNG's size, writing CSV.
//!
//! None of them touches the browser, so none can fail in a way the model must hear about;
//! they never panic on what a page supplies (a page decides the values they get).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// `s` as a JavaScript string literal.
pub fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// An optional string parameter as a JavaScript literal, or `null`.
pub fn js_or_null(p: &Value, name: &str) -> String {
    p[name].as_str().map_or_else(|| "null".into(), js)
}

/// `value` with `key` set; a page-supplied value that is not an object is wrapped, never
/// indexed (serde_json's IndexMut panics on non-objects).
pub fn with(value: Value, key: &str, extra: Value) -> Value {
    let mut map = match value {
        Value::Object(m) => m,
        other => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }
    };
    map.insert(key.to_string(), extra);
    Value::Object(map)
}

/// Width and height from a base64 PNG's IHDR chunk (bytes 16..24).
pub fn png_size(b64: &str) -> Option<(u32, u32)> {
    // 44 characters are 33 bytes: the signature and the whole IHDR header.
    let head = STANDARD.decode(b64.get(..44)?).ok()?;
    let be = |i: usize| Some(u32::from_be_bytes(head.get(i..i + 4)?.try_into().ok()?));
    head.starts_with(b"\x89PNG").then_some(())?;
    Some((be(16)?, be(20)?))
}

/// What the first bytes of a file say it is, when they say it clearly.
fn sniff(head: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(&head[..head.len().min(512)]).trim_start().to_ascii_lowercase();
    if head.starts_with(b"%PDF") {
        Some("pdf")
    } else if head.starts_with(b"PK\x03\x04") {
        Some("zip")
    } else if head.starts_with(b"\x89PNG") {
        Some("png")
    } else if head.starts_with(b"\xFF\xD8\xFF") {
        Some("jpeg")
    } else if text.starts_with("<!doctype html") || text.starts_with("<html") || text.contains("<body") {
        Some("html")
    } else {
        None
    }
}

/// A warning when a download's bytes do not match its name: an HTML page saved as `.csv` (a
/// login or error page, usually), or a `.pdf` that is no PDF.
pub fn content_warning(name: &str, content_type: &str, head: &[u8]) -> Option<String> {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let found = sniff(head);
    let expected = match ext.as_str() {
        "pdf" => Some("pdf"),
        "zip" | "xlsx" | "docx" | "pptx" | "odt" | "ods" | "epub" | "jar" => Some("zip"),
        "png" => Some("png"),
        "jpg" | "jpeg" => Some("jpeg"),
        _ => None,
    };
    let is_html_name = ["html", "htm", "xhtml", "php", "asp", "aspx", "jsp", ""].contains(&ext.as_str());
    let shown = if content_type.is_empty() { String::new() } else { format!(" (Content-Type: {content_type})") };
    if found == Some("html") && !is_html_name {
        return Some(format!(
            "the server sent an HTML page{shown}, not a .{ext} file: probably an error, login or download page. \
             Open the URL with browser_navigate to see what it says; for a table on a page use browser_scrape_table"
        ));
    }
    match (expected, found) {
        (Some(want), got) if got != Some(want) => Some(format!(
            "the file is named .{ext} but its bytes are {}{shown}",
            got.map_or("not a .".to_string() + &ext + " file", |g| format!("a {g} file"))
        )),
        _ => None,
    }
}

/// Rows as CSV: cells with a comma, quote or line break are quoted, quotes doubled.
pub fn to_csv(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> =
            row.iter()
                .map(|c| {
                    if c.contains([',', '"', '\n', '\r']) {
                        format!("\"{}\"", c.replace('"', "\"\""))
                    } else {
                        c.clone()
                    }
                })
                .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_size_reads_the_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&1280u32.to_be_bytes());
        png.extend_from_slice(&720u32.to_be_bytes());
        png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(png_size(&STANDARD.encode(&png)), Some((1280, 720)));
        assert_eq!(png_size("not base64"), None);
    }

    #[test]
    fn downloads_that_are_not_what_their_name_says_are_named() {
        let page = b"<!DOCTYPE html><html><body>Log in</body></html>";
        let w = content_warning("pricing.csv", "text/html", page).unwrap_or_default();
        assert!(w.contains("HTML page (Content-Type: text/html), not a .csv file"), "{w}");
        assert!(content_warning("page.html", "text/html", page).is_none());
        assert!(content_warning("a.pdf", "application/pdf", b"%PDF-1.4 ...").is_none());
        let w = content_warning("a.pdf", "", b"plain words").unwrap_or_default();
        assert!(w.contains("not a .pdf file"), "{w}");
        assert!(content_warning("data.csv", "text/csv", b"a,b\n1,2\n").is_none());
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let rows = vec![vec!["Plan".to_string(), "Price".into()], vec!["Pro, \"yearly\"".into(), "99".into()]];
        assert_eq!(to_csv(&rows), "Plan,Price\n\"Pro, \"\"yearly\"\"\",99\n");
    }
}
