//! The guard every request passes in the handler pool before any route: a browser page on a
//! tokenless server (403). (An absurd declared length and a body on GET/HEAD/DELETE are refused
//! by the front, `relay/head.rs`, before tiny_http reads the head.) And the drain limit the front
//! applies.

use super::{Incoming, error_response, send_off_pool};
use crate::error::ApiError;
use tiny_http::Request;

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
/// whole *declared* remainder at once (upstream issue #252, fix in PR #290, unreleased); beyond
/// RAM + swap the kernel refuses and the process aborts. So the front (`relay/head.rs`) refuses
/// a request declaring more than this before tiny_http sees it (413). Honest large bodies never
/// get near it: they are refused by the route's own limit and drained normally.
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
