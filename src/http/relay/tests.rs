//! The relay's framing table: each case is sent over TCP to a real front with a real tiny_http
//! behind it, and both sides are asserted: what the front decided (the refusal the client
//! hears, or the requests it passed on) and what tiny_http then read (method, target, every
//! header, the body), which must be what the front's own reading (`parse_head`) says.

use super::head::{Refused, parse_head};
use crate::http::conns::Limits;
use crate::http::front::Front;
use crate::util::secret::Secret;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What a case must come to.
enum Want {
    /// The client hears this refusal and tiny_http reads nothing.
    Refused(Refused),
    /// Refused while the body came (status, reason), tiny_http reading nothing.
    BodyRefused(u16, &'static str),
    /// tiny_http reads these requests (method, target, body), and the client gets as many
    /// answers.
    Served(&'static [(&'static str, &'static str, &'static str)]),
}

use Want::{BodyRefused, Refused as No, Served};

const P: &str = "X-Agent-Controller-Peer";

#[rustfmt::skip]
const CASES: &[(&str, &str, Want)] = &[
    // The review's attacks: an indented header line is a fold, and refused.
    ("indented Content-Length pins a thread", "POST /sessions HTTP/1.1\r\nHost: a\r\n Content-Length: 5000\r\n\r\n", No(Refused::ObsFold)),
    ("indented Connection smuggles a request", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 41\r\n Connection: keep-alive\r\n\r\nGET /sessions HTTP/1.1\r\nX-Agent-Controller-Peer: 1.2.3.4:5\r\n\r\n", No(Refused::ObsFold)),
    ("indented peer header forges /register", "POST /register HTTP/1.1\r\nHost: a\r\n X-Agent-Controller-Peer: 10.9.9.9:1\r\nContent-Length: 2\r\n\r\n{}", No(Refused::ObsFold)),
    ("fold right after the request line", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", No(Refused::ObsFold)),
    ("fold by a tab", "POST / HTTP/1.1\r\nHost: a\r\n\tContent-Length: 5\r\n\r\nhello", No(Refused::ObsFold)),
    ("fold continuing a value", "GET / HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n", No(Refused::ObsFold)),
    // Names and bytes.
    ("space before the colon", "POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello", No(Refused::FieldName)),
    ("tab before the colon", "POST / HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n", No(Refused::FieldName)),
    ("name not a token", "GET / HTTP/1.1\r\nX(y): 1\r\n\r\n", No(Refused::FieldName)),
    ("empty name", "GET / HTTP/1.1\r\n: x\r\n\r\n", No(Refused::FieldName)),
    ("line without a colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", No(Refused::FieldName)),
    ("NUL in a value", "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n", No(Refused::Control)),
    ("DEL in a value", "GET / HTTP/1.1\r\nX-A: a\x7fb\r\n\r\n", No(Refused::Control)),
    ("vertical tab before chunked", "POST / HTTP/1.1\r\nTransfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n", No(Refused::Control)),
    ("bare CR in a value", "GET / HTTP/1.1\r\nX-A: a\rContent-Length: 5\r\n\r\n", No(Refused::BareCr)),
    ("bare LF ends a line", "POST / HTTP/1.1\r\nX-A: a\nContent-Length: 5\r\n\r\nhello", No(Refused::BareLf)),
    ("bare LF before the colon", "POST / HTTP/1.1\r\nTransfer-Encoding\n: chunked\r\n\r\n0\r\n\r\n", No(Refused::BareLf)),
    ("not ASCII", "GET / HTTP/1.1\r\nX-A: caf\u{e9}\r\n\r\n", No(Refused::NotAscii)),
    // The request line.
    ("two spaces in the request line", "GET /  HTTP/1.1\r\n\r\n", No(Refused::RequestLine)),
    ("space before the method", " GET / HTTP/1.1\r\n\r\n", No(Refused::RequestLine)),
    ("a word after the version", "GET / HTTP/1.1 x\r\n\r\n", No(Refused::RequestLine)),
    ("HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", No(Refused::Version)),
    ("lower-case method passed as is", "get /health HTTP/1.1\r\n\r\n", Served(&[("get", "/health", "")])),
    // Content-Length.
    ("two equal lengths", "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", No(Refused::DuplicateLength)),
    ("two lengths", "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello", No(Refused::DuplicateLength)),
    ("a length list", "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\nhello", No(Refused::BadLength)),
    ("a signed length", "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", No(Refused::BadLength)),
    ("a negative length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", No(Refused::BadLength)),
    ("a hex length", "POST / HTTP/1.1\r\nContent-Length: 0x5\r\n\r\nhello", No(Refused::BadLength)),
    ("an overflowing length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", No(Refused::BadLength)),
    ("a length beyond any limit", "POST / HTTP/1.1\r\nContent-Length: 999999999999999\r\n\r\n", No(Refused::TooLarge)),
    ("a body on GET", "GET / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n", No(Refused::BodyOnBodiless)),
    ("leading zeros and white space", "POST /x HTTP/1.1\r\nContent-Length:\t 005 \r\n\r\nhello", Served(&[("POST", "/x", "hello")])),
    // Transfer-Encoding.
    ("length then coding", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", No(Refused::LengthAndCoding)),
    ("coding then length", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", No(Refused::LengthAndCoding)),
    ("coding not ending in chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", No(Refused::CodingNotChunked)),
    ("xchunked", "POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", No(Refused::CodingNotChunked)),
    ("chunked twice", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", No(Refused::CodingNotChunked)),
    ("gzip then chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", No(Refused::OtherCoding)),
    ("two coding headers", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n", No(Refused::DuplicateCoding)),
    ("a coding on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", No(Refused::CodingOnHttp10)),
    ("a chunked GET", "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", No(Refused::BodyOnBodiless)),
    ("Chunked in capitals after a tab", "POST /c HTTP/1.1\r\nTransfer-Encoding:\tChunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Served(&[("POST", "/c", "hello")])),
    // Chunk lines, extensions and trailers.
    ("an extension dropped", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n0;last\r\n\r\n", Served(&[("POST", "/c", "hello")])),
    ("a quoted extension after white space", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5 ;a=\"x;y\"\r\nhello\r\n0\r\n\r\n", Served(&[("POST", "/c", "hello")])),
    ("trailers dropped", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nContent-Length: 99\r\nX-Agent-Controller-Peer: 1.2.3.4:5\r\n\r\n", Served(&[("POST", "/c", "hi")])),
    ("a 0x chunk size", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("a signed chunk size", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("space before a chunk size", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("17 hex digits", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("bare LF in a chunk line", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\n\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("NUL in an extension", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;a\0\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "bad chunk size line")),
    ("chunk data past its size", "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", BodyRefused(400, "chunk data longer than its size")),
    // Pipelining and persistence.
    ("two requests in one write", "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n", Served(&[("GET", "/a", ""), ("GET", "/b", "")])),
    ("a body, then a request", "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\n\r\n", Served(&[("POST", "/a", "hello"), ("GET", "/b", "")])),
    ("a chunked body, then a request", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /b HTTP/1.1\r\n\r\n", Served(&[("POST", "/a", "hello"), ("GET", "/b", "")])),
    ("a close ends the connection", "GET /a HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\nGET /b HTTP/1.1\r\n\r\n", Served(&[("GET", "/a", "")])),
    ("HTTP/1.0 keep-alive is not kept", "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n", Served(&[("GET", "/a", "")])),
    ("HTTP/1.0 with a body", "POST /a HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", Served(&[("POST", "/a", "hi")])),
    ("a zero length, then what looks like a body", "POST /a HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET /b HTTP/1.1\r\n\r\n", Served(&[("POST", "/a", ""), ("GET", "/b", "")])),
    // Peer and Host.
    ("a forged peer header dropped", "GET /a HTTP/1.1\r\nx-agent-controller-peer: 10.9.9.9:1\r\n\r\n", Served(&[("GET", "/a", "")])),
    ("two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", No(Refused::DuplicateHost)),
    // Targets.
    ("absolute-form to origin-form", "GET http://127.0.0.1:5900/health?x=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n", Served(&[("GET", "/health?x=1", "")])),
    ("absolute-form without a path", "GET HTTPS://a?y HTTP/1.1\r\n\r\n", Served(&[("GET", "/?y", "")])),
    ("absolute-form with user info", "GET http://u@a/ HTTP/1.1\r\n\r\n", No(Refused::Target)),
    ("another scheme", "GET ftp://a/ HTTP/1.1\r\n\r\n", No(Refused::Target)),
    ("authority-form", "CONNECT a:443 HTTP/1.1\r\n\r\n", No(Refused::Target)),
    ("asterisk-form on OPTIONS", "OPTIONS * HTTP/1.1\r\n\r\n", Served(&[("OPTIONS", "*", "")])),
    ("asterisk-form on GET", "GET * HTTP/1.1\r\n\r\n", No(Refused::Target)),
    // Expect.
    ("100-continue on a body", "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", Served(&[("POST", "/e", "hi")])),
    ("an unknown expectation", "POST /e HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\nhi", No(Refused::Expectation)),
    ("two expectations", "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", No(Refused::Expectation)),
    ("100-continue without a body", "GET /e HTTP/1.1\r\nExpect: 100-continue\r\n\r\n", Served(&[("GET", "/e", "")])),
];

/// A real front (`front.rs`, `relay.rs`) with tiny_http behind it, answering every request 200.
struct Rig {
    front: Front,
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
}

/// One request as tiny_http read it.
#[derive(Debug)]
struct Seen {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Rig {
    fn new(token: &str) -> Rig {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let second = Duration::from_secs(2);
        let limits = Limits { max_connections: 16, header_timeout: second, read_timeout: second, idle_timeout: second };
        let (front, inner) = Front::start(listener, "table", limits, None, Secret::new(token)).unwrap();
        let server = Arc::new(tiny_http::Server::from_listener(inner, None).unwrap());
        Rig { front, addr, server }
    }

    /// Send `raw`, end the sending side, and read the answer to its end; what tiny_http read.
    fn exchange(&self, raw: &[u8]) -> (String, Vec<Seen>, SocketAddr) {
        let done = Arc::new(AtomicBool::new(false));
        let (server, stop) = (Arc::clone(&self.server), Arc::clone(&done));
        let collector = std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(Ordering::Acquire) {
                let Ok(Some(mut rq)) = server.recv_timeout(Duration::from_millis(20)) else { continue };
                let mut body = Vec::new();
                rq.as_reader().read_to_end(&mut body).unwrap();
                let headers = rq.headers().iter().map(|h| (h.field.to_string(), h.value.to_string())).collect();
                seen.push(Seen { method: rq.method().to_string(), url: rq.url().to_string(), headers, body });
                rq.respond(tiny_http::Response::from_string("ok")).unwrap();
            }
            seen
        });
        let mut client = TcpStream::connect(self.addr).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let local = client.local_addr().unwrap();
        client.write_all(raw).unwrap();
        let _ = client.shutdown(Shutdown::Write);
        let mut answer = Vec::new();
        let _ = client.read_to_end(&mut answer);
        done.store(true, Ordering::Release);
        (String::from_utf8_lossy(&answer).into_owned(), collector.join().unwrap(), local)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.front.stop();
    }
}

/// The first request's headers as tiny_http read them are the front's reading written out:
/// its fields, then `Connection: close` and the one peer header, the client's address.
fn check_same_reading(name: &str, raw: &[u8], first: &Seen, peer: SocketAddr) {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = parse_head(&raw[..end], peer, u64::MAX).unwrap();
    let mut want: Vec<(String, String)> = head.fields.clone();
    want.push(("Connection".into(), "close".into()));
    want.push((P.into(), peer.to_string()));
    assert_eq!(first.headers, want, "{name}: tiny_http read other headers than the front");
    assert_eq!(first.url, head.target, "{name}");
    assert_eq!(first.method, head.method, "{name}");
}

fn run(rig: &Rig, name: &str, raw: &[u8], want: &Want) {
    let (answer, seen, peer) = rig.exchange(raw);
    let status = |code: u16, why: &str| {
        assert!(answer.starts_with(&format!("HTTP/1.1 {code} ")), "{name}: {answer:?}");
        assert!(answer.contains(why), "{name}: {answer:?} does not say {why:?}");
        assert!(seen.is_empty(), "{name}: tiny_http read {seen:?}");
    };
    match want {
        Want::Refused(refused) => {
            let end = raw.windows(4).position(|w| w == b"\r\n\r\n").map_or(raw.len(), |e| e + 4);
            assert_eq!(parse_head(&raw[..end], peer, 1 << 40).err(), Some(*refused), "{name}");
            status(refused.status(), refused.why());
        }
        Want::BodyRefused(code, why) => status(*code, why),
        Want::Served(requests) => {
            let got: Vec<(&str, &str, &[u8])> =
                seen.iter().map(|s| (s.method.as_str(), s.url.as_str(), s.body.as_slice())).collect();
            let want: Vec<(&str, &str, &[u8])> = requests.iter().map(|(m, u, b)| (*m, *u, b.as_bytes())).collect();
            assert_eq!(got, want, "{name}: {answer:?}");
            let answers = answer.matches("HTTP/1.1 200 ").count() + answer.matches("HTTP/1.0 200 ").count();
            assert_eq!(answers, requests.len(), "{name}: {answer:?}");
            check_same_reading(name, raw, &seen[0], peer);
        }
    }
}

#[test]
fn the_framing_table() {
    assert!(CASES.len() >= 40);
    let rig = Rig::new("");
    for (name, raw, want) in CASES {
        run(&rig, name, raw.as_bytes(), want);
    }
}

#[test]
fn large_and_generated_heads() {
    let rig = Rig::new("");
    let many: String = (0..200).map(|i| format!("X-{i}: {i}\r\n")).collect();
    run(&rig, "200 header lines", format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes(), &No(Refused::TooManyFields));
    // A chunk-size line of 5 000 bytes arriving in one read is as long as one that trickles.
    let pad = "a".repeat(5000);
    let long = format!("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;{pad}\r\nhello\r\n0\r\n\r\n");
    run(&rig, "a 5000-byte chunk line", long.as_bytes(), &BodyRefused(400, "chunked body line too long"));
    let trailers: String = (0..40).map(|i| format!("X-{i}: {}\r\n", "t".repeat(2000))).collect();
    let flood = format!("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n{trailers}\r\n");
    run(&rig, "80 KB of trailers", flood.as_bytes(), &BodyRefused(431, "trailers larger than 64 KiB"));
}

#[test]
fn a_continue_only_for_the_token() {
    let rig = Rig::new("s3cret-token-for-the-table");
    let raw = "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    let (answer, seen, _) = rig.exchange(raw.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 401 ") && !answer.contains("100 Continue"), "{answer:?}");
    assert!(answer.contains("WWW-Authenticate: Bearer") && seen.is_empty(), "{answer:?}");
    let raw = "POST /e HTTP/1.1\r\nAuthorization: Bearer s3cret-token-for-the-table\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
    let (answer, seen, _) = rig.exchange(raw.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), "{answer:?}");
    assert_eq!(seen.len(), 1);
}

#[test]
fn the_head_written_again_reads_the_same() {
    let peer: SocketAddr = "192.0.2.1:7".parse().unwrap();
    for (name, raw, want) in CASES {
        if let Want::Served(_) = want {
            let raw = raw.as_bytes();
            let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let head = parse_head(&raw[..end], peer, u64::MAX).unwrap();
            let again = parse_head(&head.inner(), peer, u64::MAX).unwrap();
            assert_eq!((again.fields, again.framing, again.target), (head.fields, head.framing, head.target), "{name}");
        }
    }
}
