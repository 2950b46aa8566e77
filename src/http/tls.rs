//! HTTPS for both servers: rustls (the copy ureq already brings, with ring) in front of
//! tiny_http, which keeps serving plain HTTP on a private loopback listener.
//!
//! Why not tiny_http's own `ssl-rustls`: it pins rustls 0.20, whose blocking stream loops for
//! ever on a `close_notify` during the handshake (RUSTSEC-2024-0336, never fixed on 0.20), and
//! it would put a second rustls and ring into the binary.
//!
//! Each accepted connection gets a thread that reads the client's TLS bytes (the handshake
//! under a 10 s receive timeout), and, once the handshake is done, a loopback connection to
//! tiny_http and a second thread for the answers. Every write to the client happens under the
//! connection's lock; reads from either socket happen outside it. The loopback connection's
//! address is mapped to the client's, so `peer_ip` still names the real client.
//! The certificate and key are read once at start; a bad file is an error naming its key.
//! Key material is never logged.

use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The server side of TLS, built once from `server.tls_cert` and `server.tls_key`.
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// The longest a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Loopback address of a tiny_http connection → the TLS client it carries.
static PEERS: Mutex<Option<HashMap<SocketAddr, SocketAddr>>> = Mutex::new(None);

fn peers() -> MutexGuard<'static, Option<HashMap<SocketAddr, SocketAddr>>> {
    PEERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The client's IP: through the map for a request that came over TLS.
pub fn peer_ip(request: &tiny_http::Request) -> Option<std::net::IpAddr> {
    let addr = *request.remote_addr()?;
    Some(peers().as_ref().and_then(|m| m.get(&addr)).copied().unwrap_or(addr).ip())
}

/// Read the PEM certificate chain and private key. Errors name the config key and the file.
pub fn load(cert_path: &Path, key_path: &Path) -> Result<TlsConfig, String> {
    let read = |key: &str, path: &Path| {
        std::fs::read(path).map_err(|e| format!("config key `{key}`: cannot read {}: {e}", path.display()))
    };
    let cert_pem = read("server.tls_cert", cert_path)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("config key `server.tls_cert`: {} is not PEM certificates: {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!("config key `server.tls_cert`: no certificate in {}", cert_path.display()));
    }
    let key_pem = Zeroed(read("server.tls_key", key_path)?);
    let key = PrivateKeyDer::from_pem_slice(&key_pem.0).map_err(|e| {
        format!(
            "config key `server.tls_key`: no usable private key in {} ({e}; PKCS#8, PKCS#1 or SEC1 PEM, unencrypted)",
            key_path.display()
        )
    })?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map(Arc::new)
        .map_err(|e| format!("config key `server.tls_key`: does not go with server.tls_cert ({e})"))
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

/// Accept TLS clients on `public` and carry each to `inner` (tiny_http's loopback listener)
/// until the listener is shut down (`shut_listener`).
pub fn spawn_front(name: &str, public: TcpListener, inner: SocketAddr, config: TlsConfig) -> std::io::Result<()> {
    let conn_name = format!("{name}-tls");
    std::thread::Builder::new().name(format!("{name}-accept")).spawn(move || {
        loop {
            match public.accept() {
                Ok((client, peer)) => {
                    let config = Arc::clone(&config);
                    let spawned = std::thread::Builder::new()
                        .name(conn_name.clone())
                        .stack_size(256 * 1024)
                        .spawn(move || carry(client, peer, inner, config));
                    if let Err(e) = spawned {
                        log::warn!("cannot start a TLS connection thread: {e}");
                    }
                }
                // Shut down (EINVAL): the server is stopping.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return,
                Err(e) => {
                    log::warn!("TLS accept failed: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    })?;
    Ok(())
}

/// Make a blocked `accept` on `listener` return (Linux answers it EINVAL), ending the front.
pub fn shut_listener(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd belongs to a live listener; shutdown only changes its state.
    unsafe {
        libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR);
    }
}

/// One client connection, from its first byte to the close of both sides.
fn carry(client: TcpStream, peer: SocketAddr, inner: SocketAddr, config: TlsConfig) {
    let Ok(conn) = ServerConnection::new(config) else { return };
    let Ok(writer) = client.try_clone() else { return };
    let tls = Arc::new(Mutex::new(Tls { conn, client: writer }));
    let _ = client.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    // Records go out as tiny_http writes them; with Nagle, a response's second record waits
    // for the client's delayed ACK (40 ms).
    let _ = client.set_nodelay(true);
    let mut link: Option<(TcpStream, std::thread::JoinHandle<()>)> = None;
    let outcome = pump_in(&client, &tls, |plain| {
        if link.is_none() {
            let _ = client.set_read_timeout(None);
            link = Some(open_inner(inner, peer, &tls)?);
        }
        match &mut link {
            Some((stream, _)) => stream.write_all(plain),
            None => Ok(()),
        }
    });
    match &link {
        // The client finished cleanly: tiny_http sees the end of the requests, answers what it
        // has, and closes; the answering thread then closes the client.
        Some((stream, _)) if outcome.is_ok() => {
            let _ = stream.shutdown(Shutdown::Write);
        }
        Some((stream, _)) => {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = client.shutdown(Shutdown::Both);
        }
        None => {
            let _ = client.shutdown(Shutdown::Both);
        }
    }
    if let Some((stream, answers)) = link {
        let _ = answers.join();
        if let Ok(local) = stream.local_addr()
            && let Some(map) = peers().as_mut()
        {
            map.remove(&local);
        }
    }
}

/// A rustls connection and the client socket it writes to; both used under one lock.
struct Tls {
    conn: ServerConnection,
    client: TcpStream,
}

impl Tls {
    /// Send whatever rustls has queued (handshake, alerts, records).
    fn flush(&mut self) -> std::io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.client)?;
        }
        Ok(())
    }
}

fn lock(tls: &Mutex<Tls>) -> MutexGuard<'_, Tls> {
    tls.lock().unwrap_or_else(|p| p.into_inner())
}

/// Read the client's TLS bytes until it closes, handing each run of plaintext to `deliver`
/// once the handshake is done. Ok at a clean end (EOF or close_notify), Err otherwise.
fn pump_in(
    client: &TcpStream,
    tls: &Mutex<Tls>,
    mut deliver: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut raw = vec![0u8; 16 * 1024];
    let mut plain = Vec::with_capacity(16 * 1024);
    loop {
        let n = (&*client).read(&mut raw)?;
        let (closed, handshaking) = {
            let mut t = lock(tls);
            let closed = absorb(&mut t, &raw[..n], &mut plain);
            // Alerts and handshake replies go out even when absorbing failed.
            let flushed = t.flush();
            let closed = closed?;
            flushed?;
            (closed || n == 0, t.conn.is_handshaking())
        };
        if !handshaking && !plain.is_empty() {
            deliver(&plain)?;
            plain.clear();
        }
        if closed {
            return if handshaking { Err(std::io::ErrorKind::UnexpectedEof.into()) } else { Ok(()) };
        }
    }
}

/// Feed `bytes` to rustls and move the plaintext it yields into `plain`; true once the
/// client has said close_notify (or `bytes` is the end of the stream).
fn absorb(t: &mut Tls, mut bytes: &[u8], plain: &mut Vec<u8>) -> std::io::Result<bool> {
    let eof = bytes.is_empty();
    loop {
        if !bytes.is_empty() || eof {
            t.conn.read_tls(&mut bytes)?;
        }
        let state = t.conn.process_new_packets().map_err(std::io::Error::other)?;
        let mut chunk = [0u8; 8192];
        let closed = loop {
            match t.conn.reader().read(&mut chunk) {
                Ok(0) => break true,
                Ok(k) => plain.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break state.peer_has_closed(),
                Err(e) if eof && e.kind() == std::io::ErrorKind::UnexpectedEof => break true,
                Err(e) => return Err(e),
            }
        };
        if closed || bytes.is_empty() {
            return Ok(closed);
        }
    }
}

/// Connect to tiny_http, note whom the connection carries, and start the thread that
/// encrypts tiny_http's answers for the client.
fn open_inner(
    inner: SocketAddr,
    peer: SocketAddr,
    tls: &Arc<Mutex<Tls>>,
) -> std::io::Result<(TcpStream, std::thread::JoinHandle<()>)> {
    let stream = TcpStream::connect(inner)?;
    let _ = stream.set_nodelay(true);
    let local = stream.local_addr()?;
    let answers = stream.try_clone()?;
    let tls = Arc::clone(tls);
    let handle = std::thread::Builder::new()
        .name("tls-answers".into())
        .stack_size(256 * 1024)
        .spawn(move || pump_out(answers, &tls))?;
    // Before tiny_http sees a byte of this connection.
    peers().get_or_insert_with(HashMap::new).insert(local, peer);
    Ok((stream, handle))
}

/// Encrypt what tiny_http writes until it closes, then say close_notify and close the client.
fn pump_out(mut answers: TcpStream, tls: &Mutex<Tls>) {
    let mut buf = vec![0u8; 16 * 1024];
    let outcome = loop {
        let n = match answers.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) => break Err(e),
        };
        if let Err(e) = seal(&mut lock(tls), &buf[..n]) {
            break Err(e);
        }
    };
    let mut t = lock(tls);
    if outcome.is_ok() {
        t.conn.send_close_notify();
        let _ = t.flush();
    }
    let _ = t.client.shutdown(Shutdown::Both);
    let _ = answers.shutdown(Shutdown::Both);
}

/// Encrypt `plain` and write it to the client, in pieces when rustls's buffer is full.
fn seal(t: &mut Tls, mut plain: &[u8]) -> std::io::Result<()> {
    while !plain.is_empty() {
        let k = t.conn.writer().write(plain)?;
        plain = &plain[k..];
        if k == 0 && !t.conn.wants_write() {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        t.flush()?;
    }
    Ok(())
}
