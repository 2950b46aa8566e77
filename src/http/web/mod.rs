//! The web page: one HTML file, six scripts, one style sheet and an icon, compiled into the
//! binary and served at `/` and `/web/…` on the API server, plus the cache validators the page
//! relies on for screenshots.
//!
//! Invariants: the page runs under a strict Content-Security-Policy (scripts and styles only
//! from this server, no inline code, no `eval`, Trusted Types required so no string can become
//! markup); these static files are the only thing the API serves without the token, and they
//! hold no data. Everything the page shows comes from the JSON routes, with the token the
//! person typed once per tab. Every response here carries an `ETag`; a matching
//! `If-None-Match` is answered 304 with no body.

use crate::config::Config;
use crate::error::ApiError;
use crate::http::{self, Body, Reply, header, header_value};
use serde_json::{Value, json};
use tiny_http::{Request, Response};

/// The page's policy: nothing but this origin, and blob: images (screenshots fetched with the
/// token and shown through an object URL).
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; \
connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; \
require-trusted-types-for 'script'";

/// (name under `/web/`, content type, contents); `index.html` is also `/`. The text files are
/// carried as `build.rs` trims them (no indentation, blank lines or whole-line `//` comments).
const ASSETS: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/index.html"))),
    ("dom.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/dom.js"))),
    ("app.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/app.js"))),
    ("list.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/list.js"))),
    ("takeover.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/takeover.js"))),
    ("handover.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/handover.js"))),
    ("recording.js", "text/javascript; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/recording.js"))),
    ("app.css", "text/css; charset=utf-8", include_str!(concat!(env!("OUT_DIR"), "/app.css"))),
    ("icon.svg", "image/svg+xml", include_str!("assets/icon.svg")),
];

/// The routes served without a token: the page and its files, which hold no data.
pub fn is_public(segments: &[&str]) -> bool {
    matches!(segments, [] | ["web", _])
}

/// `GET /` and `GET /web/NAME`.
pub fn asset(name: &str, request: &Request) -> Result<Reply, ApiError> {
    let (_, content_type, text) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::NotFound(format!("no file {name:?} in the web page")))?;
    let etag = format!("\"{}-{:016x}\"", env!("CARGO_PKG_VERSION"), fnv1a(text.as_bytes()));
    let headers = vec![
        header("Content-Type", content_type),
        header("Content-Security-Policy", CSP),
        header("X-Content-Type-Options", "nosniff"),
        header("X-Frame-Options", "DENY"),
        header("Referrer-Policy", "no-referrer"),
        header("Cache-Control", "no-cache"),
        header("ETag", &etag),
    ];
    if fresh(request, &etag) {
        return Ok(not_modified(headers));
    }
    let body = text.as_bytes();
    let response = Response::new(200.into(), headers, Box::new(body) as Body, Some(body.len()), None)
        .with_chunked_threshold(usize::MAX);
    Ok(Reply::Response(response))
}

/// The validator of a stored file: its size and modification time (files are written once,
/// then renamed into place, so these change whenever the bytes do).
pub fn file_etag(path: &std::path::Path, size: u64) -> String {
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("\"{size:x}-{modified:x}\"")
}

/// Whether the client already holds `etag` (`If-None-Match`, a list or `*`).
pub fn fresh(request: &Request, etag: &str) -> bool {
    header_value(request, "If-None-Match")
        .is_some_and(|v| v.split(',').map(|t| t.trim().trim_start_matches("W/")).any(|t| t == "*" || t == etag))
}

/// 304 with the validator headers and no body.
pub fn not_modified(headers: Vec<tiny_http::Header>) -> Reply {
    let response = Response::new(304.into(), headers, Box::new(std::io::empty()) as Body, Some(0), None);
    Reply::Response(response)
}

/// `GET /llms`: the model endpoints a session may ask for, `api` first (the create form's
/// provider list). Names, wire formats and models only; never a key or a URL.
pub fn llms(config: &Config) -> Reply {
    let list: Vec<Value> = config
        .llm_names()
        .into_iter()
        .filter_map(|name| config.endpoint(&name))
        .map(|e| json!({"name": e.name, "provider": e.wire.name(), "model": e.model, "default": e.name == crate::config::DEFAULT_LLM}))
        .collect();
    http::Reply::json(200, &list)
}

/// FNV-1a, for asset validators (not security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_code_and_the_assets_need_none() {
        assert!(!CSP.contains("unsafe"));
        let (_, _, html) = ASSETS[0];
        assert!(!html.contains("<script>") && !html.contains("style="), "no inline script or style");
        assert!(!html.contains("http://") && !html.contains("https://"), "nothing from elsewhere");
        for (name, _, text) in ASSETS {
            assert!(!text.contains("innerHTML") && !text.contains("eval("), "{name}");
        }
        assert!(is_public(&[]) && is_public(&["web", "app.js"]) && !is_public(&["sessions"]));
    }

    #[test]
    fn every_file_the_page_names_is_served_and_every_script_is_named() {
        let (_, _, html) = ASSETS[0];
        let named: Vec<&str> = html.split("\"/web/").skip(1).filter_map(|rest| rest.split('"').next()).collect();
        for name in &named {
            assert!(ASSETS.iter().any(|(n, _, _)| n == name), "{name} is named by index.html but not served");
        }
        for (name, _, _) in ASSETS.iter().filter(|(n, _, _)| n.ends_with(".js")) {
            assert!(named.contains(name), "{name} is served but index.html does not load it");
        }
    }
}
