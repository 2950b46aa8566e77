//! What the guards and the token check read of a request, whether tiny_http parsed it or the
//! front's relay did (`relay/head.rs`), and the client's address as the relay passed it on.

use super::body::header_value;
use super::relay;
use std::net::IpAddr;
use tiny_http::Request;

/// What the guards and the token check read of a request: from tiny_http, or from the head
/// the front read (`relay/head.rs`, for the token before a `100 Continue`).
pub trait Incoming {
    fn method(&self) -> &str;
    fn url(&self) -> &str;
    fn header(&self, name: &str) -> Option<&str>;
    /// The client's address (see `peer_ip`).
    fn peer(&self) -> Option<IpAddr>;
}

impl Incoming for Request {
    fn method(&self) -> &str {
        Request::method(self).as_str()
    }

    fn url(&self) -> &str {
        Request::url(self)
    }

    fn header(&self, name: &str) -> Option<&str> {
        header_value(self, name)
    }

    fn peer(&self) -> Option<IpAddr> {
        peer_ip(self)
    }
}

/// The client's IP address, as the front acceptor passed it on (tiny_http itself sees only
/// its private Unix socket). The relay drops any such header a client sends and writes its own
/// last, so the last one is taken.
pub fn peer_ip(request: &Request) -> Option<std::net::IpAddr> {
    let field = request.headers().iter().rev().find(|h| h.field.equiv(relay::PEER_HEADER))?;
    field.value.as_str().parse::<std::net::SocketAddr>().ok().map(|a| a.ip())
}
