//! The response heads the daemon writes itself, in one place: the front's refusals (sent before
//! tiny_http sees the request) and streamed bodies (`http::stream`). Every other answer's head
//! is tiny_http's.
//!
//! Why streams do not go through `tiny_http::Response`: it drops a `Connection` header, it
//! reads an HTTP/1.0 body of unknown length wholly into memory, and its chunked encoder ends
//! the body with the last chunk even when the body failed half way, so a zip cut short would
//! look complete. A stream's head says `Connection: close` instead; the relay reads that back
//! (`says_close`) and closes the client's connection after the answer.
//! Invariant: every head written here has a `Date` and `Connection: close`.

/// A response head: status line, `Date`, the given headers, `Connection: close`, blank line.
pub(crate) fn closing(status: u16, headers: &[(&str, &str)]) -> String {
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let mut head = format!("HTTP/1.1 {status} {reason}\r\nDate: {date}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    head
}

/// Whether the response head at the start of `first` (the first bytes read of an answer) has
/// `Connection: close`; a head not wholly in them counts as not.
pub(crate) fn says_close(first: &[u8]) -> bool {
    let Some(end) = first.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    first[..end].split(|&b| b == b'\n').any(|line| {
        let line = line.trim_ascii();
        line.len() > 11
            && line[..11].eq_ignore_ascii_case(b"connection:")
            && line[11..].trim_ascii().eq_ignore_ascii_case(b"close")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_head_reads_back_as_closing() {
        let head = closing(413, &[("Content-Type", "application/json"), ("Content-Length", "2")]);
        assert!(head.starts_with("HTTP/1.1 413 Payload Too Large\r\nDate: "), "{head}");
        assert!(head.ends_with("Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"));
        assert!(says_close(head.as_bytes()));
        assert!(says_close(b"HTTP/1.1 200 OK\r\nconnection:  CLOSE \r\n\r\n"));
        assert!(!says_close(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!says_close(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"), "a head not wholly read");
        assert!(!says_close(b"HTTP/1.1 200 OK\r\nX-Connection: close\r\n\r\n"));
    }
}
