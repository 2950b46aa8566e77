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
    fn csv_quotes_what_needs_it() {
        let rows = vec![vec!["Plan".to_string(), "Price".into()], vec!["Pro, \"yearly\"".into(), "99".into()]];
        assert_eq!(to_csv(&rows), "Plan,Price\n\"Pro, \"\"yearly\"\"\",99\n");
    }
}
