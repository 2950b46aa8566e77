//! The guards every request passes in the handler pool before any route: an absurd declared
//! length (413, connection abandoned), a browser page on a tokenless server (403), a streamed
//! body on GET/HEAD/DELETE (400).

use super::{Incoming, error_response, header, may_stall, send_off_pool};
use crate::error::ApiError;
use std::io::Write;
use tiny_http::{Method, Request, Response};

/// A server without a token trusts whoever can connect, and on loopback that includes every web
/// page a browser on the host opens (the worker's own Chromium too). Such a server refuses what
/// only a browser sends: a request from another site (`Origin` not this server) and, on a
/// loopback bind, a `Host` that is a DNS name (DNS rebinding: a page's own name pointed at
/// 127.0.0.1). A server with a token needs none of this: a page cannot attach the token.
#[derive(Clone, Copy)]
pub struct BrowserGuard {
    /// Checks are on (the server has no token).
    pub open: bool,
    /// Bound to loopback, where the only names are IP literals and `localhost`. (A tokenless
    /// non-loopback bind, `--insecure`, may be reached by any name its network gives it.)
    pub loopback: bool,
}

impl BrowserGuard {
    pub(super) fn check(&self, request: Request) -> Option<Request> {
        let Some(why) = self.refusal(&request) else { return Some(request) };
        send_off_pool(request, error_response(&why));
        None
    }

    /// Why `request` is refused, if it is (logged).
    pub(super) fn refusal(&self, request: &(impl Incoming + ?Sized)) -> Option<ApiError> {
        if !self.open {
            return None;
        }
        let refused = self.why(request.header("Host"), request.header("Origin"))?;
        log::warn!("{} {}: {refused}", request.method(), request.url().escape_debug());
        Some(refused)
    }

    /// Why a request with these `Host` and `Origin` headers is refused, if it is.
    fn why(&self, host: Option<&str>, origin: Option<&str>) -> Option<ApiError> {
        let host = host.unwrap_or("");
        let why = if self.loopback && !host.is_empty() && !loopback_name(host) {
            format!("Host {host:?} is not an address of this server (DNS rebinding?)")
        } else {
            match origin {
                Some(origin) if origin.strip_prefix("http://") != Some(host) => {
                    format!("cross-site request from {origin:?} refused")
                }
                _ => return None,
            }
        };
        Some(ApiError::Forbidden(format!("{why}; set a token to accept requests from browsers")))
    }
}

/// A `Host` a loopback server can honestly be called by: an IP literal (rebinding needs a name)
/// or `localhost`, with or without a port.
fn loopback_name(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => return v6.split(']').next().is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.parse::<std::net::Ipv4Addr>().is_ok() || name.eq_ignore_ascii_case("localhost")
}

/// tiny_http 0.12 drains an unread request body when the request is dropped, allocating the
/// whole *declared* remainder at once (upstream issue #252, fix in PR #290, unreleased). A
/// zeroed allocation is mapped lazily, so that is harmless while the kernel agrees to map it;
/// beyond RAM + swap it refuses and the process aborts. So a request declaring more than
/// `safe_drain_bytes()` is answered 413 here and its connection deliberately abandoned (never
/// dropped), which costs what an idle connection costs. Honest large bodies never get here:
/// they are refused by the route's own limit and drained normally.
pub fn refuse_oversized(request: Request) -> Option<Request> {
    let cap = safe_drain_bytes();
    match request.body_length() {
        Some(n) if n > cap => {
            log::warn!(
                "{} {} declares a {n}-byte body (more than can be drained safely); answered 413 and abandoned",
                request.method(),
                request.url().escape_debug()
            );
            let err = ApiError::TooLarge(format!("request body of {n} bytes is far beyond any limit"));
            let body = err.body();
            let head = Response::empty(413).with_header(header("Content-Type", "application/json"));
            // `upgrade` writes the head and hands over the socket without touching the body
            // reader; the error body follows by hand.
            let mut stream = request.upgrade("none", head);
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            std::mem::forget(stream);
            None
        }
        _ => Some(request),
    }
}

/// Half of RAM + swap (the kernel's heuristic overcommit limit), at least 256 MiB.
pub fn safe_drain_bytes() -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        // SAFETY: sysinfo fills the zeroed struct we own.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        let total = if unsafe { libc::sysinfo(&mut info) } == 0 {
            (info.totalram as u128 + info.totalswap as u128) * u128::from(info.mem_unit.max(1))
        } else {
            1 << 30
        };
        usize::try_from(total / 2).unwrap_or(usize::MAX / 4).max(256 << 20)
    })
}

/// GET, HEAD and DELETE take no body; one big enough to be streamed is refused before any
/// route, off the pool (see `send_off_pool`).
pub(super) fn refuse_body_on_bodiless(request: Request) -> Option<Request> {
    if !matches!(request.method(), Method::Get | Method::Head | Method::Delete) || !may_stall(&request) {
        return Some(request);
    }
    let err = ApiError::BadRequest(format!("{} requests take no body", request.method()));
    send_off_pool(request, error_response(&err));
    None
}
