//! HTTPS for both servers: the certificate and key, loaded once at start into a rustls
//! configuration (the copy ureq already brings, with ring). The relay (`relay.rs`) terminates
//! TLS on each connection with it; tiny_http behind sees plain HTTP on its private socket.
//!
//! Why not tiny_http's own `ssl-rustls`: it pins rustls 0.20, whose blocking stream loops for
//! ever on a `close_notify` during the handshake (RUSTSEC-2024-0336, never fixed on 0.20), and
//! it would put a second rustls and ring into the binary.
//!
//! `Client` is a connection as the relay sees it, plain or TLS: with TLS, reads decrypt (and
//! drive the handshake, so the relay's head deadline bounds waiting for the client's handshake
//! bytes; our handshake replies are bounded by the write timeout) and writes encrypt.
//! A bad file is an error naming its config key. Key material is never logged.

use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The server side of TLS, built once from `server.tls_cert` and `server.tls_key`.
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// Why the certificate or the key cannot be used; each names its config key and file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("config key `{key}`: cannot read {}: {source}", .path.display())]
    Read { key: &'static str, path: PathBuf, source: io::Error },
    #[error("config key `server.tls_cert`: {} is not PEM certificates: {source}", .path.display())]
    NotPem { path: PathBuf, source: rustls::pki_types::pem::Error },
    #[error("config key `server.tls_cert`: no certificate in {}", .0.display())]
    NoCertificate(PathBuf),
    #[error(
        "config key `server.tls_key`: no usable private key in {} ({source}; PKCS#8, PKCS#1 or SEC1 PEM, unencrypted)",
        .path.display()
    )]
    NoKey { path: PathBuf, source: rustls::pki_types::pem::Error },
    #[error("TLS: {0}")]
    Protocols(#[source] rustls::Error),
    #[error("config key `server.tls_key`: does not go with server.tls_cert ({0})")]
    KeyMismatch(#[source] rustls::Error),
}

/// Read the PEM certificate chain and private key. Errors name the config key and the file.
pub fn load(cert_path: &Path, key_path: &Path) -> Result<TlsConfig, TlsError> {
    let read = |key: &'static str, path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read { key, path: path.to_path_buf(), source })
    };
    let cert_pem = read("server.tls_cert", cert_path)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::NotPem { path: cert_path.to_path_buf(), source })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(cert_path.to_path_buf()));
    }
    let key_pem = Zeroed(read("server.tls_key", key_path)?);
    let key = PrivateKeyDer::from_pem_slice(&key_pem.0)
        .map_err(|source| TlsError::NoKey { path: key_path.to_path_buf(), source })?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Protocols)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map(Arc::new)
        .map_err(TlsError::KeyMismatch)
}

/// The key file's bytes, wiped when dropped.
struct Zeroed(Vec<u8>);

impl Drop for Zeroed {
    fn drop(&mut self) {
        self.0.iter_mut().for_each(|b| {
            // SAFETY: a valid, aligned, exclusively borrowed byte; volatile so the wipe stays.
            unsafe { std::ptr::write_volatile(b, 0) }
        });
    }
}

/// A client connection as the relay reads and writes it: plain TCP, or TLS over it.
pub(super) enum Client<'a> {
    Plain(&'a TcpStream),
    Tls(Box<TlsClient<'a>>),
}

/// A rustls server connection and the socket it speaks over.
pub(super) struct TlsClient<'a> {
    conn: ServerConnection,
    socket: &'a TcpStream,
}

impl<'a> Client<'a> {
    pub fn new(socket: &'a TcpStream, tls: Option<&TlsConfig>) -> io::Result<Client<'a>> {
        let Some(config) = tls else { return Ok(Client::Plain(socket)) };
        let conn = ServerConnection::new(Arc::clone(config)).map_err(io::Error::other)?;
        Ok(Client::Tls(Box::new(TlsClient { conn, socket })))
    }

    /// The TCP socket underneath (for timeouts).
    pub fn socket(&self) -> &'a TcpStream {
        match self {
            Client::Plain(s) => s,
            Client::Tls(t) => t.socket,
        }
    }

    /// The socket, where the client's bytes are the request's own (plain TCP): splice(2) may
    /// move them.
    pub fn splice_fd(&self) -> Option<RawFd> {
        self.plain().map(AsRawFd::as_raw_fd)
    }

    /// The socket, where what is written to it is what the client reads (plain TCP).
    pub fn plain(&self) -> Option<&'a TcpStream> {
        match self {
            Client::Plain(s) => Some(s),
            Client::Tls(_) => None,
        }
    }

    /// Read what the client sent into `buf`: `Some(0)` at its end, `None` when only TLS
    /// records (the handshake, a ticket) came, so the caller may check its deadline and call
    /// again. Each call blocks in at most one read of the socket.
    pub fn read_some(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self {
            Client::Plain(s) => s.read(buf).map(Some),
            Client::Tls(t) => t.read_some(buf),
        }
    }

    /// Send all of `data`, within about the socket's write timeout as a whole (see `overdue`).
    pub fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        let started = Instant::now();
        match self {
            Client::Plain(s) => write_within(s, data, started),
            Client::Tls(t) => t.write_all(data, started),
        }
    }

    /// The end of the connection from our side: TLS says close_notify first.
    pub fn close(&mut self) {
        if let Client::Tls(t) = self {
            t.conn.send_close_notify();
            let _ = t.flush(Instant::now());
        }
        let _ = self.socket().shutdown(Shutdown::Write);
    }
}

impl TlsClient<'_> {
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.conn.reader().read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            // The socket ended without close_notify: an end all the same (a request cut
            // short is refused by its framing).
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(Some(0)),
            Err(e) => return Err(e),
        }
        let mut socket = self.socket;
        self.conn.read_tls(&mut socket)?;
        let processed = self.conn.process_new_packets();
        // Handshake replies and alerts go out even when processing failed.
        let flushed = self.flush(Instant::now());
        processed.map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
        flushed?;
        Ok(None)
    }

    /// Encrypt `plain` and send it, in pieces when rustls's buffer is full.
    fn write_all(&mut self, mut plain: &[u8], started: Instant) -> io::Result<()> {
        while !plain.is_empty() {
            let k = self.conn.writer().write(plain)?;
            plain = &plain[k..];
            if k == 0 && !self.conn.wants_write() {
                return Err(ErrorKind::WriteZero.into());
            }
            self.flush(started)?;
        }
        Ok(())
    }

    /// Send whatever rustls has queued (handshake, alerts, records).
    fn flush(&mut self, started: Instant) -> io::Result<()> {
        let mut socket = self.socket;
        while self.conn.wants_write() {
            self.conn.write_tls(&mut socket)?;
            if self.conn.wants_write() && overdue(self.socket, started) {
                return Err(ErrorKind::TimedOut.into());
            }
        }
        Ok(())
    }
}

/// Write all of `data` to `socket`, within about its write timeout as a whole.
fn write_within(mut socket: &TcpStream, mut data: &[u8], started: Instant) -> io::Result<()> {
    while !data.is_empty() {
        match socket.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if !data.is_empty() && overdue(socket, started) {
            return Err(ErrorKind::TimedOut.into());
        }
    }
    Ok(())
}

/// Whether a write begun at `started` has taken the socket's write timeout, asked only after a
/// partial write. That timeout bounds each blocked write; a client reading just enough to keep
/// every one of them under it would otherwise hold its connection, and the handler feeding it,
/// for as long as it liked. So a write takes at most about twice the timeout in all.
fn overdue(socket: &TcpStream, started: Instant) -> bool {
    socket.write_timeout().ok().flatten().is_some_and(|limit| started.elapsed() >= limit)
}
