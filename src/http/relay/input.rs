//! The client's side of a relayed connection: its bytes read ahead into a buffer, each read
//! bounded by a per-read timeout and the current deadline, moved on by splice(2) where the
//! connection is plain TCP.

use super::{BODY_BUFFER, HOLD, MAX_HEAD, SMALL_BUFFER, Stop, TLS_BODY_BUFFER, find};
use crate::http::splice::Pipe;
use crate::http::tls::Client;
use std::io::{self, ErrorKind};
use std::time::{Duration, Instant};

/// The client's bytes, read ahead into a buffer, each read bounded by `per_read` and the
/// current `deadline`.
pub(super) struct Input<'a> {
    pub(super) client: Client<'a>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    pub(super) deadline: Option<Instant>,
    pub(super) per_read: Duration,
    timeout_set: Option<Duration>,
    /// The last `fill` failed for time.
    pub(super) timed_out: bool,
    /// For splice(2), made at the first large transfer; `no_splice` once it proved unusable.
    pipe: Option<Pipe>,
    no_splice: bool,
}

impl<'a> Input<'a> {
    pub(super) fn new(client: Client<'a>, per_read: Duration) -> Input<'a> {
        Input {
            client,
            buf: vec![0; SMALL_BUFFER],
            start: 0,
            end: 0,
            deadline: None,
            per_read,
            timeout_set: None,
            timed_out: false,
            pipe: None,
            no_splice: false,
        }
    }

    pub(super) fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
    }

    fn grow(&mut self, size: usize) {
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
    }

    /// A large body's buffer: large only where splice(2) does not carry the body.
    pub(super) fn grow_for_body(&mut self) {
        match self.client {
            // Only the held part is read here; splice(2) moves the rest.
            Client::Plain(_) if !self.no_splice => self.grow(HOLD),
            Client::Plain(_) => self.grow(BODY_BUFFER),
            Client::Tls(_) => self.grow(TLS_BODY_BUFFER),
        }
    }

    /// While an answer is awaited (a parked poll may take minutes): no read buffer, unless it
    /// holds the client's next request already.
    pub(super) fn release(&mut self) {
        if self.start == self.end {
            (self.buf, self.start, self.end) = (Vec::new(), 0, 0);
        }
    }

    /// Between requests: back to a small buffer and no pipe, so a connection that once
    /// carried a large head or body does not keep its memory while it idles.
    pub(super) fn settle(&mut self) {
        self.pipe = None;
        let left = self.end - self.start;
        if self.buf.len() > SMALL_BUFFER && left <= SMALL_BUFFER {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, left);
            self.buf.truncate(SMALL_BUFFER);
            self.buf.shrink_to_fit();
        }
    }

    /// Read more (growing a full buffer up to `MAX_HEAD`); 0 at the end of the stream,
    /// `TimedOut` past the deadline.
    pub(super) fn fill(&mut self) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            self.grow((self.buf.len() * 2).clamp(SMALL_BUFFER, MAX_HEAD));
        }
        loop {
            let wait = match self.deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(self.per_read),
                None => self.per_read,
            };
            self.timed_out = wait.is_zero();
            if self.timed_out {
                return Err(ErrorKind::TimedOut.into());
            }
            self.set_timeout(wait)?;
            match self.client.read_some(&mut self.buf[self.end..]) {
                Ok(Some(n)) => {
                    self.end += n;
                    return Ok(n);
                }
                // TLS records without request bytes (a handshake): the deadline again.
                Ok(None) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    self.timed_out = true;
                    return Err(ErrorKind::TimedOut.into());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The socket's receive timeout, rounded up to whole milliseconds so nearby deadlines
    /// share one setsockopt.
    fn set_timeout(&mut self, wait: Duration) -> io::Result<()> {
        let wait = Duration::from_millis(wait.as_millis().max(1).try_into().unwrap_or(u64::MAX));
        if self.timeout_set != Some(wait) {
            self.client.socket().set_read_timeout(Some(wait))?;
            self.timeout_set = Some(wait);
        }
        Ok(())
    }

    fn pipe(&mut self) -> Option<&mut Pipe> {
        if self.pipe.is_none() && !self.no_splice {
            self.pipe = Pipe::new().ok();
            self.no_splice = self.pipe.is_none();
        }
        self.pipe.as_mut()
    }

    /// Move up to `max` body bytes from the client straight to `to` (each read bounded by
    /// `per_read`); `None` where splice(2) cannot be used.
    pub(super) fn splice_to(&mut self, to: std::os::fd::RawFd, max: u64) -> Result<Option<usize>, Stop> {
        let Some(from) = self.client.splice_fd() else { return Ok(None) };
        self.set_timeout(self.per_read)?;
        let Some(pipe) = self.pipe() else { return Ok(None) };
        match pipe.transfer(from, to, usize::try_from(max).unwrap_or(usize::MAX)) {
            Ok(0) => Err(Stop::Quiet),
            Ok(n) => Ok(Some(n)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                self.no_splice = true;
                Ok(None)
            }
            Err(_) => Err(Stop::Quiet),
        }
    }

    /// One CRLF-terminated line of at most `cap` bytes, CRLF included, however its bytes came.
    pub(super) fn line(&mut self, cap: usize) -> Result<Vec<u8>, Stop> {
        let mut searched = 0;
        loop {
            if let Some(at) = find(self.available(), searched, b"\r\n") {
                if at + 2 > cap {
                    return Err(Stop::Answer(400, "chunked body line too long"));
                }
                let line = self.available()[..at + 2].to_vec();
                self.consume(at + 2);
                return Ok(line);
            }
            if self.available().len() > cap {
                return Err(Stop::Answer(400, "chunked body line too long"));
            }
            searched = self.available().len();
            if self.fill()? == 0 {
                return Err(Stop::Quiet);
            }
        }
    }
}
