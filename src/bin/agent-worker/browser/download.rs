//! Files from the browser: downloads with the page's cookies, and the page printed as a PDF.
//!
//! A download is fetched by the worker, not by Chromium (whose own downloads are denied): with
//! the browser's cookies for each URL, its user agent and the page as referer, following
//! redirects by hand so that every hop gets its own cookies. The body streams to a private
//! temporary file, which is uploaded to the controller and then removed, whatever happened.
//! Nothing runs past the command's deadline: a fetch is cut off there, and a batch starts no
//! new download once it has passed (the rest are reported as not started).

use super::Browser;
use super::launch::CALL;
use super::util::{content_warning, with};
use crate::backend::{Context, array, required_str};
use crate::cdp::CdpError;
use crate::error::WorkerError;
use crate::scratch;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Response = ureq::http::Response<ureq::Body>;

/// How long `save_as_pdf` waits for its `wait_for_selector` before printing anyway.
const PDF_WAIT: Duration = Duration::from_secs(10);

/// The first bytes of a saved download, to tell what it really is.
fn read_head(path: &Path) -> Vec<u8> {
    let mut head = vec![0u8; 1024];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    head.truncate(n);
    head
}

impl Browser {
    /// The browser's cookies for `url`, as `name=value` pairs.
    fn cookies_for(&mut self, url: &str) -> Result<Vec<String>, WorkerError> {
        let cookies = self.page_call("Network.getCookies", json!({"urls": [url]}))?;
        Ok(cookies["cookies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{}={}", c["name"].as_str().unwrap_or(""), c["value"].as_str().unwrap_or("")))
            .collect())
    }

    fn user_agent(&mut self) -> Result<String, WorkerError> {
        let version = self.r()?.cdp.call(None, "Browser.getVersion", json!({}), CALL)?;
        Ok(version["userAgent"].as_str().unwrap_or("agent-worker").to_string())
    }

    /// Fetch `url` with the page's cookies, stream it to disk, upload it. Over `ask_over` bytes
    /// (the controller's approval threshold) nothing is kept: the answer asks for approval.
    pub(super) fn download(
        &mut self,
        url: &str,
        filename: Option<&str>,
        ask_over: Option<u64>,
        ctx: &Context,
    ) -> Result<Value, WorkerError> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(WorkerError::bad(format!("`{url}` is not an http(s) URL")));
        }
        let mut resp = self.fetch(url, ctx.deadline)?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(WorkerError::Download(format!("download of {url} failed: HTTP {status}")));
        }
        let name = file_name(filename, &resp, url);
        let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let declared: Option<u64> =
            resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
        if let (Some(limit), Some(bytes)) = (ask_over, declared) {
            if bytes > limit {
                return Ok(json!({"needs_approval": {"url": url, "bytes": bytes}}));
            }
        }
        let Some((path, written)) = save_body(&mut resp, &self.opts.download_dir, url, ask_over)? else {
            return Ok(json!({"needs_approval": {"url": url, "more_than_bytes": ask_over}}));
        };
        let head = read_head(&path);
        let uploaded = ctx.uploader.upload(&name, &path);
        let _ = std::fs::remove_file(&path);
        let mut out = with(with(uploaded?, "url", json!(url)), "bytes", json!(written));
        out = with(out, "content_type", json!(content_type));
        if let Some(w) = content_warning(&name, &content_type, &head) {
            out = with(out, "warning", json!(w));
        }
        Ok(out)
    }

    /// GET `url` as the page would, following up to 10 redirects; the last answer, any status.
    fn fetch(&mut self, url: &str, deadline: Option<Instant>) -> Result<Response, WorkerError> {
        let mut cookies = self.cookies_for(url)?;
        let ua = self.user_agent()?;
        let referer = self.eval("location.href").ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let agent = http_agent(deadline);
        // Redirects by hand: ureq drops Cookie on a redirect, and each hop needs its own cookies.
        let mut current = url.to_string();
        let mut hops = 0;
        loop {
            self.check_url(&current)?;
            let mut req = agent.get(&current).header("User-Agent", &ua);
            if !cookies.is_empty() {
                req = req.header("Cookie", cookies.join("; "));
            }
            if referer.starts_with("http") {
                req = req.header("Referer", &referer);
            }
            let resp = req.call().map_err(|e| WorkerError::Download(format!("download of {url} failed: {e}")))?;
            let status = resp.status().as_u16();
            let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_string);
            match (status, location) {
                (301 | 302 | 303 | 307 | 308, Some(loc)) if hops < 10 => {
                    hops += 1;
                    current = join_url(&current, &loc);
                    cookies = self.cookies_for(&current)?;
                }
                _ => return Ok(resp),
            }
        }
    }

    /// Download each of `urls` in turn; the ones that failed are listed, not fatal.
    pub(super) fn download_batch(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let urls = array(p, "urls")?;
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        for u in urls {
            let Some(url) = u["url"].as_str() else {
                failed.push(json!({"entry": u, "error": "missing `url`"}));
                continue;
            };
            if ctx.deadline.is_some_and(|d| Instant::now() >= d) {
                failed.push(json!({"url": url, "error": "not started: the command's time ran out (download the rest in another call)"}));
                continue;
            }
            match self.download(url, u["filename"].as_str(), p["ask_over_bytes"].as_u64(), ctx) {
                Ok(v) if v.get("needs_approval").is_some() => failed.push(json!({
                    "url": url,
                    "error": "larger than what may be downloaded without approval: download it alone with browser_download, which asks",
                })),
                Ok(v) => done.push(v),
                Err(e) => failed.push(json!({"url": url, "error": e.to_string()})),
            }
        }
        if done.is_empty() && !failed.is_empty() {
            return Err(WorkerError::Download(format!("no file could be downloaded: {}", Value::Array(failed))));
        }
        Ok(json!({"downloaded": done, "failed": failed}))
    }

    /// `bytes` uploaded as the session's file `name`, through a scratch file that is removed after.
    pub(super) fn save_bytes(&self, name: &str, ext: &str, bytes: &[u8], ctx: &Context) -> Result<Value, WorkerError> {
        let write_err = |e| WorkerError::io("cannot write the file", e);
        let (path, mut file) = scratch::temp_file(&self.opts.download_dir, ext).map_err(write_err)?;
        let written = file.write_all(bytes).map_err(write_err);
        drop(file);
        let uploaded = written.and_then(|()| ctx.uploader.upload(name, &path));
        let _ = std::fs::remove_file(&path);
        Ok(with(uploaded?, "bytes", json!(bytes.len())))
    }

    /// Print the page to PDF (after `wait_for_selector`, if given) and upload it as `filename`.
    /// A wait that times out does not stop the printing: the page is printed as it is, and
    /// the result says so.
    pub(super) fn save_as_pdf(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let filename = required_str(p, "filename")?;
        let mut warning = None;
        if let Some(s) = p["wait_for_selector"].as_str().filter(|s| !s.is_empty()) {
            if let Err(e) = self.wait_for(Some(s), None, PDF_WAIT) {
                warning = Some(format!("{e}; the page was printed as it was"));
            }
        }
        let pdf = self.page_call_long(
            "Page.printToPDF",
            json!({"printBackground": true, "preferCSSPageSize": true}),
            Duration::from_secs(120),
        )?;
        let bytes = STANDARD.decode(pdf["data"].as_str().unwrap_or_default()).map_err(|e| {
            WorkerError::Browser(CdpError::Protocol(format!("Page.printToPDF: unreadable PDF data: {e}")))
        })?;
        let name = if filename.to_ascii_lowercase().ends_with(".pdf") {
            filename.to_string()
        } else {
            format!("{filename}.pdf")
        };
        let out = self.save_bytes(&name, "pdf", &bytes, ctx)?;
        Ok(match warning {
            Some(w) => with(out, "warning", json!(w)),
            None => out,
        })
    }
}

/// An HTTP client that runs no longer than the controller will wait for this command.
fn http_agent(deadline: Option<Instant>) -> ureq::Agent {
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now())).unwrap_or(Duration::from_secs(3600));
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(Duration::from_secs(20)))
        .timeout_global(Some(left.max(Duration::from_secs(1))))
        .build()
        .into()
}

/// The name to store a download under: the one asked for, the server's, or the URL's last part.
fn file_name(asked: Option<&str>, resp: &Response, url: &str) -> String {
    let from_header =
        resp.headers().get("content-disposition").and_then(|v| v.to_str().ok()).and_then(disposition_filename);
    asked
        .filter(|f| !f.trim().is_empty())
        .map(str::to_string)
        .or(from_header)
        .or_else(|| {
            url.split(['?', '#'])
                .next()
                .and_then(|u| u.rsplit('/').next())
                .filter(|s| !s.is_empty())
                .map(percent_decode)
        })
        .unwrap_or_else(|| "download".into())
}

/// Stream the body to a new private file in `dir`; the file is removed again on any failure.
/// Stream the body to a private temporary file; `None` (and nothing kept) once it passes `cap`.
fn save_body(
    resp: &mut Response,
    dir: &Path,
    url: &str,
    cap: Option<u64>,
) -> Result<Option<(PathBuf, u64)>, WorkerError> {
    let (path, mut file) =
        scratch::temp_file(dir, "dl").map_err(|e| WorkerError::io("cannot write the download", e))?;
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(Some((path, total))),
            Ok(n) => n,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(WorkerError::Download(format!("download of {url} broke off: {e}")));
            }
        };
        if let Err(e) = file.write_all(&buf[..n]) {
            let _ = std::fs::remove_file(&path);
            return Err(WorkerError::io("cannot write the download", e));
        }
        total += n as u64;
        if cap.is_some_and(|cap| total > cap) {
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        }
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Resolve a redirect target against the URL it came from.
fn join_url(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let host = rest.split('/').next().unwrap_or("");
    if let Some(abs) = location.strip_prefix("//") {
        return format!("{scheme}://{abs}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{host}{location}");
    }
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or(host);
    format!("{scheme}://{dir}/{location}")
}

/// The file name of a `Content-Disposition` header (`filename*=` wins over `filename=`).
fn disposition_filename(v: &str) -> Option<String> {
    if let Some(i) = v.find("filename*=") {
        let rest = v[i + 10..].split(';').next()?.trim();
        let enc = rest.split("''").nth(1).unwrap_or(rest);
        return Some(percent_decode(enc.trim_matches('"')));
    }
    let i = v.find("filename=")?;
    Some(v[i + 9..].split(';').next()?.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_resolve_against_their_origin() {
        assert_eq!(join_url("http://a.test/x/y?q", "/z"), "http://a.test/z");
        assert_eq!(join_url("https://a.test/x/y", "z.pdf"), "https://a.test/x/z.pdf");
        assert_eq!(join_url("https://a.test/x", "//b.test/f"), "https://b.test/f");
        assert_eq!(join_url("http://a.test/", "https://c.test/"), "https://c.test/");
    }

    #[test]
    fn disposition_names() {
        assert_eq!(disposition_filename("attachment; filename=\"r.pdf\""), Some("r.pdf".into()));
        assert_eq!(disposition_filename("attachment; filename*=UTF-8''na%C3%AFve.pdf"), Some("naïve.pdf".into()));
        assert_eq!(disposition_filename("inline"), None);
    }
}
