//! The eval site's HTTP server: std's `TcpListener` on loopback, a thread per connection and one
//! request per connection (`Connection: close`), the head read by httparse. Not tiny_http: its
//! connection pool can leave the newest of a burst of keep-alive connections unread while the
//! older ones sit idle, and a page that posts synchronously (the MiniWoB++ hook) then waits
//! forever. Heads are capped at 64 KiB, bodies at 1 MiB, and a silent client at 30 s.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 1 << 20;
const MAX_FIELDS: usize = 64;

/// One request as the site's routes see it.
pub struct Request {
    pub method: String,
    /// The path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What the site answers.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A route's answer is a response.
pub type Answer = Response;

impl Answer {
    pub(in crate::eval) fn html(status: u16, html: String) -> Answer {
        Answer { status, headers: vec![("Content-Type", "text/html; charset=utf-8".into())], body: html.into_bytes() }
    }

    pub(in crate::eval) fn bytes(kind: &str, body: Vec<u8>) -> Answer {
        Answer { status: 200, headers: vec![("Content-Type", kind.to_string())], body }
    }

    pub(in crate::eval) fn text(status: u16, text: &str) -> Answer {
        let kind = "text/plain; charset=utf-8".to_string();
        Answer { status, headers: vec![("Content-Type", kind)], body: text.as_bytes().to_vec() }
    }

    pub(in crate::eval) fn redirect(to: &str) -> Answer {
        Answer { status: 303, headers: vec![("Location", to.to_string())], body: Vec::new() }
    }
}

/// One field of a URL-encoded form or query (`+` is a space).
pub fn form_value(encoded: &str, key: &str) -> String {
    encoded
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
        .unwrap_or_default()
}

type Handler = dyn Fn(Request) -> Response + Send + Sync;

/// A server on a free loopback port until dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve on loopback `port` (0: any free one).
    pub fn start(port: u16, handler: impl Fn(Request) -> Response + Send + Sync + 'static) -> std::io::Result<Server> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("eval-site".into()).spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Acquire) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                let _ =
                    std::thread::Builder::new().name("eval-site-conn".into()).spawn(move || serve(stream, &*handler));
            }
        })?;
        Ok(Server { addr, stop, thread: Some(thread) })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut stream: TcpStream, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let response = match read_request(&mut stream) {
        Some(request) => handler(request),
        None => Response { status: 400, headers: Vec::new(), body: b"bad request".to_vec() },
    };
    let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason(response.status));
    for (k, v) in &response.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", response.body.len()));
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&response.body));
    let _ = stream.flush();
}

/// The request on the stream, or None when it is not one (or too big, or too slow).
fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_len = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut parsed = httparse::Request::new(&mut slots);
    if !parsed.parse(&buf[..head_len]).ok()?.is_complete() {
        return None;
    }
    let headers: Vec<(String, String)> =
        parsed.headers.iter().map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned())).collect();
    let mut request = Request {
        method: parsed.method?.to_string(),
        target: parsed.path?.to_string(),
        headers,
        body: buf[head_len..].to_vec(),
    };
    let length: usize = request.header("Content-Length").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let length = length.min(MAX_BODY);
    while request.body.len() < length {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        request.body.extend_from_slice(&chunk[..n]);
    }
    request.body.truncate(length);
    Some(request)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Status",
    }
}
