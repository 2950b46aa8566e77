//! A request head read once, strictly, and written again for tiny_http.
//!
//! httparse reads the head, after checks of our own for what it lets through (bare LF line
//! ends, bytes beyond ASCII). Refused, as RFC 9112 lets a server refuse: obs-fold, white space
//! before a colon, names that are not tokens, bare CR or LF, NUL and other controls, duplicate
//! or conflicting framing headers, a transfer coding other than a lone `chunked`. tiny_http
//! then gets only the head written here (`Name: value` for each header accepted, the framing
//! in canonical form, `Connection: close` and the peer header last), never the client's lines,
//! so it can read nothing the front did not. Chunked bodies are written again the same way
//! (`chunk_size`): sizes only, no extensions, no trailers.

use super::PEER_HEADER;
use crate::http::Incoming;
use std::net::{IpAddr, SocketAddr};

/// Header lines accepted in one head.
const MAX_FIELDS: usize = 128;
/// Hex digits of a chunk size at most (16 fill a u64).
const MAX_CHUNK_DIGITS: usize = 16;

#[derive(Debug, PartialEq, Clone, Copy)]
pub(in crate::http) enum Framing {
    Length(u64),
    Chunked,
}

/// Why a head (or a chunk line) is refused: the client hears the status and the reason, and
/// the connection closes, since where the next request would start is unknown.
#[derive(Debug, PartialEq, Clone, Copy)]
pub(in crate::http) enum Refused {
    NotAscii,
    Control,
    BareCr,
    BareLf,
    ObsFold,
    FieldName,
    RequestLine,
    Version,
    Target,
    TooManyFields,
    DuplicateHost,
    BadLength,
    DuplicateLength,
    DuplicateCoding,
    CodingNotChunked,
    OtherCoding,
    CodingOnHttp10,
    LengthAndCoding,
    Expectation,
    TooLarge,
    BodyOnBodiless,
    ChunkSize,
}

impl Refused {
    pub(in crate::http) fn status(self) -> u16 {
        match self {
            Refused::Version => 505,
            Refused::TooManyFields => 431,
            Refused::OtherCoding => 501,
            Refused::Expectation => 417,
            Refused::TooLarge => 413,
            _ => 400,
        }
    }

    pub(in crate::http) fn why(self) -> &'static str {
        match self {
            Refused::NotAscii => "request head is not ASCII",
            Refused::Control => "control character (NUL…) in the request head",
            Refused::BareCr => "CR without LF in the request head",
            Refused::BareLf => "LF without CR in the request head",
            Refused::ObsFold => "header line folded (starts with white space)",
            Refused::FieldName => "header name not a token, or white space before its colon",
            Refused::RequestLine => "malformed request line",
            Refused::Version => "only HTTP/1.0 and HTTP/1.1 are served",
            Refused::Target => "request target is neither a path nor an http URL",
            Refused::TooManyFields => "more than 128 header lines",
            Refused::DuplicateHost => "more than one Host header",
            Refused::BadLength => "bad Content-Length",
            Refused::DuplicateLength => "more than one Content-Length header",
            Refused::DuplicateCoding => "more than one Transfer-Encoding header",
            Refused::CodingNotChunked => "Transfer-Encoding does not end in chunked",
            Refused::OtherCoding => "only the chunked transfer coding is accepted",
            Refused::CodingOnHttp10 => "Transfer-Encoding in an HTTP/1.0 request",
            Refused::LengthAndCoding => "both Content-Length and Transfer-Encoding",
            Refused::Expectation => "only Expect: 100-continue is understood",
            Refused::TooLarge => "request body far beyond any limit",
            Refused::BodyOnBodiless => "this method takes no body",
            Refused::ChunkSize => "bad chunk size line",
        }
    }
}

/// A head as the front read it; written for tiny_http by `inner`.
#[derive(Debug)]
pub(in crate::http) struct Head {
    pub method: String,
    /// Origin-form (or `*`): an absolute-form target is cut to its path, its authority made
    /// the Host.
    pub target: String,
    pub http10: bool,
    /// The headers passed on, in order: not Connection, Expect or the peer header; framing
    /// headers in canonical form.
    pub fields: Vec<(String, String)>,
    pub framing: Framing,
    /// The connection ends after this request (HTTP/1.0 or `Connection: close`).
    pub close: bool,
    pub expect_continue: bool,
    pub peer: SocketAddr,
}

impl Head {
    /// The head for tiny_http, blank line included.
    pub(in crate::http) fn inner(&self) -> Vec<u8> {
        let version = if self.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
        let mut out = format!("{} {} {version}\r\n", self.method, self.target);
        for (name, value) in &self.fields {
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
            out.push_str("\r\n");
        }
        out.push_str(&format!("Connection: close\r\n{PEER_HEADER}: {}\r\n\r\n", self.peer));
        out.into_bytes()
    }
}

impl Incoming for Head {
    fn method(&self) -> &str {
        &self.method
    }

    fn url(&self) -> &str {
        &self.target
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn peer(&self) -> Option<IpAddr> {
        Some(self.peer.ip())
    }
}

/// Read a head (`raw`: up to and including its blank line). `drain_cap` is the largest
/// declared body that may be taken at all.
pub(in crate::http) fn parse_head(raw: &[u8], peer: SocketAddr, drain_cap: u64) -> Result<Head, Refused> {
    check_bytes(raw)?;
    let mut slots = vec![httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut request = httparse::Request::new(&mut slots);
    match request.parse(raw) {
        Ok(httparse::Status::Complete(n)) if n == raw.len() => {}
        Ok(_) => return Err(Refused::RequestLine),
        Err(httparse::Error::HeaderName) => return Err(Refused::FieldName),
        Err(httparse::Error::Version) if names_a_version(raw) => return Err(Refused::Version),
        Err(httparse::Error::TooManyHeaders) => return Err(Refused::TooManyFields),
        Err(_) => return Err(Refused::RequestLine),
    }
    let (Some(method), Some(target), Some(minor)) = (request.method, request.path, request.version) else {
        return Err(Refused::RequestLine);
    };
    let http10 = minor == 0;
    let (target, authority) = origin_form(method, target)?;
    let mut head = Head {
        method: method.to_string(),
        target,
        http10,
        fields: Vec::with_capacity(request.headers.len() + 1),
        framing: Framing::Length(0),
        close: http10,
        expect_continue: false,
        peer,
    };
    let mut framing = FramingFields::default();
    for field in request.headers.iter() {
        // ASCII throughout (checked above), so never lossy.
        let value = std::str::from_utf8(field.value).map_err(|_| Refused::NotAscii)?;
        head.take_field(field.name, value, &mut framing)?;
    }
    if let Some(authority) = authority {
        head.fields.retain(|(n, _)| !n.eq_ignore_ascii_case("Host"));
        head.fields.push(("Host".into(), authority));
    }
    head.framing = framing.decide(http10)?;
    match head.framing {
        Framing::Length(n) if n > 0 => head.fields.push(("Content-Length".into(), n.to_string())),
        Framing::Chunked => head.fields.push(("Transfer-Encoding".into(), "chunked".into())),
        Framing::Length(_) => {}
    }
    check_body(&head, drain_cap)?;
    Ok(head)
}

/// What httparse lets through and RFC 9112 does not: non-ASCII, controls, a CR or LF alone,
/// and a folded line.
fn check_bytes(raw: &[u8]) -> Result<(), Refused> {
    for (i, &b) in raw.iter().enumerate() {
        match b {
            b'\r' if raw.get(i + 1) != Some(&b'\n') => return Err(Refused::BareCr),
            b'\n' if i == 0 || raw[i - 1] != b'\r' => return Err(Refused::BareLf),
            b'\n' if matches!(raw.get(i + 1), Some(b' ' | b'\t')) => return Err(Refused::ObsFold),
            b'\r' | b'\n' | b'\t' | b' '..=b'~' => {}
            0x80.. => return Err(Refused::NotAscii),
            _ => return Err(Refused::Control),
        }
    }
    Ok(())
}

/// Whether the request line is well formed but for its version (one httparse does not serve).
fn names_a_version(raw: &[u8]) -> bool {
    let line = raw.split(|&b| b == b'\r').next().unwrap_or(raw);
    let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    matches!(words.as_slice(), [method, target, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]]
        if !method.is_empty() && !target.is_empty() && major.is_ascii_digit() && minor.is_ascii_digit())
}

/// An absolute-form target as origin-form and its authority (which becomes the Host, RFC 9112
/// §3.2.2); a path as is; `*` for OPTIONS only.
fn origin_form(method: &str, target: &str) -> Result<(String, Option<String>), Refused> {
    if target.starts_with('/') || (target == "*" && method == "OPTIONS") {
        return Ok((target.to_string(), None));
    }
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &target[7..]
    } else if lower.starts_with("https://") {
        &target[8..]
    } else {
        return Err(Refused::Target);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() || authority.contains('@') || path.starts_with('#') {
        return Err(Refused::Target);
    }
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    Ok((path, Some(authority.to_string())))
}

/// The framing headers as they came, checked once all are read.
#[derive(Default)]
struct FramingFields {
    length: Option<u64>,
    lengths: usize,
    codings: Option<String>,
    coding_fields: usize,
}

impl FramingFields {
    fn decide(self, http10: bool) -> Result<Framing, Refused> {
        if self.lengths > 1 {
            return Err(Refused::DuplicateLength);
        }
        if self.coding_fields > 1 {
            return Err(Refused::DuplicateCoding);
        }
        let Some(codings) = self.codings else { return Ok(Framing::Length(self.length.unwrap_or(0))) };
        if self.length.is_some() {
            return Err(Refused::LengthAndCoding);
        }
        if http10 {
            return Err(Refused::CodingOnHttp10);
        }
        let list: Vec<&str> = codings.split(',').map(|c| c.trim_matches([' ', '\t'])).collect();
        if !list.last().is_some_and(|c| c.eq_ignore_ascii_case("chunked")) {
            return Err(Refused::CodingNotChunked);
        }
        match list.len() {
            1 => Ok(Framing::Chunked),
            _ if list.iter().filter(|c| c.eq_ignore_ascii_case("chunked")).count() > 1 => {
                Err(Refused::CodingNotChunked)
            }
            _ => Err(Refused::OtherCoding),
        }
    }
}

impl Head {
    /// One header line: kept, rewritten or dropped.
    fn take_field(&mut self, name: &str, value: &str, framing: &mut FramingFields) -> Result<(), Refused> {
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("Content-Length") {
            framing.lengths += 1;
            let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
            framing.length = Some(value.parse::<u64>().ok().filter(|_| digits).ok_or(Refused::BadLength)?);
        } else if is("Transfer-Encoding") {
            framing.coding_fields += 1;
            framing.codings = Some(value.to_string());
        } else if is("Connection") {
            self.close |= value.split(',').any(|t| t.trim_matches([' ', '\t']).eq_ignore_ascii_case("close"));
        } else if is("Expect") {
            if !value.eq_ignore_ascii_case("100-continue") || self.expect_continue {
                return Err(Refused::Expectation);
            }
            // HTTP/1.0 knows no 100 Continue: such a client just sends its body.
            self.expect_continue = !self.http10;
        } else if is(PEER_HEADER) {
            // The front's alone.
        } else {
            if is("Host") && self.header("Host").is_some() {
                return Err(Refused::DuplicateHost);
            }
            self.fields.push((name.to_string(), value.to_string()));
        }
        Ok(())
    }
}

/// A body the front will not take: declared beyond what tiny_http may drain
/// (`guard::safe_drain_bytes`), or more than a small one on a method that takes none.
fn check_body(head: &Head, drain_cap: u64) -> Result<(), Refused> {
    let bodiless = ["GET", "HEAD", "DELETE"].contains(&head.method.as_str());
    match head.framing {
        Framing::Length(n) if n > drain_cap => Err(Refused::TooLarge),
        Framing::Chunked if bodiless => Err(Refused::BodyOnBodiless),
        Framing::Length(n) if bodiless && n > 1024 => Err(Refused::BodyOnBodiless),
        _ => Ok(()),
    }
}

/// A chunk-size line (without its CRLF): its size. Hex digits only, at most 16, then nothing
/// or an extension (`;…` after optional white space) of visible characters, which is dropped.
pub(in crate::http) fn chunk_size(line: &[u8]) -> Result<u64, Refused> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > MAX_CHUNK_DIGITS {
        return Err(Refused::ChunkSize);
    }
    let rest = &line[digits..];
    let ext = rest.trim_ascii_start();
    let ext_ok = rest.is_empty()
        || (ext.first() == Some(&b';')
            && rest[..rest.len() - ext.len()].iter().all(|b| matches!(b, b' ' | b'\t'))
            && ext.iter().all(|b| matches!(b, b'\t' | b' '..=b'~')));
    if !ext_ok {
        return Err(Refused::ChunkSize);
    }
    // At most 16 hex digits: always a u64.
    let text = std::str::from_utf8(&line[..digits]).map_err(|_| Refused::ChunkSize)?;
    u64::from_str_radix(text, 16).map_err(|_| Refused::ChunkSize)
}
