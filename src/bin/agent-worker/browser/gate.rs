//! The allow-list's gate: the proxy of every session context that has an allow-list.
//!
//! A context with `allowed_domains` gets this loopback address as its proxy, and the allowed
//! hosts as the proxy's bypass list (`<-loopback>` first, so a loopback host is not let
//! through silently). Chromium then sends straight to an allowed host, and everything else —
//! navigations, redirects, sub-resources, fetch/XHR, WebSockets, beacons, workers — to the
//! gate, which forwards nothing: it answers `403` with one line saying the host is not
//! allowed, and counts the host. Guarantees: no byte goes past the gate; it reads at most one
//! request head (8 KiB, 2 s) per connection, one connection at a time; the hosts it keeps are
//! bounded (`MAX_HOSTS`), the count is not.

use agent_controller::protocol::domains::host_of;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Distinct blocked hosts kept between two commands.
const MAX_HOSTS: usize = 20;
const HEAD_LIMIT: usize = 8 << 10;
const PATIENCE: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Blocked {
    count: u64,
    hosts: Vec<String>,
}

pub struct Gate {
    port: u16,
    blocked: Arc<Mutex<Blocked>>,
}

impl Gate {
    pub fn start() -> std::io::Result<Gate> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let blocked = Arc::new(Mutex::new(Blocked::default()));
        let counted = Arc::clone(&blocked);
        std::thread::Builder::new().name("allow-list gate".into()).spawn(move || {
            for conn in listener.incoming().flatten() {
                refuse(conn, &counted);
            }
        })?;
        Ok(Gate { port, blocked })
    }

    /// The proxy a context with an allow-list uses.
    pub fn proxy(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What was blocked since the last call (`None`: nothing), as a result's
    /// `blocked_requests`: the count and the hosts.
    pub fn take(&self) -> Option<Value> {
        let taken = std::mem::take(&mut *self.blocked.lock().unwrap_or_else(|e| e.into_inner()));
        (taken.count > 0).then(|| json!({"count": taken.count, "hosts": taken.hosts}))
    }
}

/// Read the request's first line, count its host, answer 403, close.
fn refuse(mut conn: TcpStream, blocked: &Mutex<Blocked>) {
    let _ = conn.set_read_timeout(Some(PATIENCE));
    let _ = conn.set_write_timeout(Some(PATIENCE));
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.contains(&b'\n') && head.len() < HEAD_LIMIT {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let host = requested_host(line.lines().next().unwrap_or("")).unwrap_or_else(|| "an unknown host".into());
    {
        let mut b = blocked.lock().unwrap_or_else(|e| e.into_inner());
        b.count += 1;
        if b.hosts.len() < MAX_HOSTS && !b.hosts.contains(&host) {
            b.hosts.push(host.clone());
        }
    }
    let body = format!("Blocked: {host} is not among this session's allowed domains.\n");
    let reply = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes());
}

/// The host a proxy request line names: `CONNECT host:443 HTTP/1.1` or `GET http://host/ …`.
fn requested_host(line: &str) -> Option<String> {
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    if method.eq_ignore_ascii_case("CONNECT") {
        return host_of(&format!("tunnel://{target}"));
    }
    host_of(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_a_proxy_request_line() {
        assert_eq!(requested_host("CONNECT evil.test:443 HTTP/1.1").as_deref(), Some("evil.test"));
        assert_eq!(requested_host("CONNECT [::2]:443 HTTP/1.1").as_deref(), Some("::2"));
        assert_eq!(requested_host("GET http://127.0.0.2:9/x?y HTTP/1.1").as_deref(), Some("127.0.0.2"));
        assert_eq!(requested_host("garbage"), None);
    }

    #[test]
    fn the_gate_answers_403_forwards_nothing_and_counts_hosts() {
        let gate = Gate::start().unwrap();
        for host in ["a.test", "b.test", "a.test"] {
            let mut c = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
            c.write_all(format!("GET http://{host}/x HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).unwrap();
            let mut answer = String::new();
            c.read_to_string(&mut answer).unwrap();
            assert!(answer.starts_with("HTTP/1.1 403") && answer.contains(host), "{answer}");
        }
        assert_eq!(gate.take(), Some(json!({"count": 3, "hosts": ["a.test", "b.test"]})));
        assert_eq!(gate.take(), None);
    }
}
