//! Streamed bodies (a file, a zip) written by us onto the connection: the head from
//! `heads.rs` (tiny_http cannot write a stream's: it drops `Connection`, holds an HTTP/1.0
//! body of unknown length in memory, and ends a chunked body that failed half way as if it
//! were whole), then the body with its length, in chunks we frame, or up to the close.

use super::heads;
use tiny_http::{Header, Request};

/// A 200 whose body is written by `write` onto the socket, in large writes, chunked by us
/// unless its length is known: no pipe, no second thread between the writer and the client.
pub struct Stream {
    pub headers: Vec<Header>,
    /// Sent as Content-Length; `write` must then write exactly this many bytes.
    pub length: Option<u64>,
    pub write: WriteBody,
}

/// Writes a streamed body onto the connection.
pub type WriteBody = Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send>;

/// HTTP/1.1 chunked framing: each write one chunk (the buffer in front makes them large).
struct Chunked<W: std::io::Write>(W);

impl<W: std::io::Write> std::io::Write for Chunked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !buf.is_empty() {
            write!(self.0, "{:x}\r\n", buf.len())?;
            self.0.write_all(buf)?;
            self.0.write_all(b"\r\n")?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Write the head, then the body: with its length, else in chunks and the last chunk
/// (HTTP/1.1), else up to the close (HTTP/1.0, which knows no chunks). The head says
/// `Connection: close`, and the front's relay then closes the client's connection after the
/// answer: a stream cut short (a zip that failed, a file that shrank) ends in a closed
/// connection the client notices, never a short body on a connection still open.
pub(super) fn stream(request: Request, body: Stream) {
    use std::io::Write;
    let head_only = *request.method() == tiny_http::Method::Head;
    let chunks = body.length.is_none() && *request.http_version() != tiny_http::HTTPVersion(1, 0);
    let url = request.url().escape_debug().to_string();
    let length = body.length.map(|n| n.to_string());
    let mut headers: Vec<(&str, &str)> = match (&length, chunks) {
        (Some(n), _) => vec![("Content-Length", n.as_str())],
        (None, true) => vec![("Transfer-Encoding", "chunked")],
        (None, false) => Vec::new(),
    };
    headers.extend(body.headers.iter().map(|h| (h.field.as_str().as_str(), h.value.as_str())));
    let head = heads::closing(200, &headers);
    let mut raw = request.into_writer();
    let written = raw.write_all(head.as_bytes()).and_then(|()| {
        if head_only {
            return Ok(());
        }
        if !chunks {
            let mut out = std::io::BufWriter::with_capacity(256 * 1024, &mut raw);
            (body.write)(&mut out)?;
            return out.flush();
        }
        let mut chunked = std::io::BufWriter::with_capacity(256 * 1024, Chunked(&mut raw));
        (body.write)(&mut chunked)?;
        chunked.flush()?;
        drop(chunked);
        raw.write_all(b"0\r\n\r\n")
    });
    if let Err(e) = written.and_then(|()| raw.flush()) {
        log::debug!("GET {url}: the stream ended early: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn each_write_is_one_chunk_and_empty_writes_none() {
        let mut framed = Vec::new();
        let mut chunked = Chunked(&mut framed);
        chunked.write_all(b"hello").unwrap();
        assert_eq!(chunked.write(b"").unwrap(), 0);
        chunked.write_all(&[b'x'; 26]).unwrap();
        chunked.flush().unwrap();
        assert_eq!(framed, [&b"5\r\nhello\r\n1a\r\n"[..], &[b'x'; 26], b"\r\n"].concat());
    }
}
