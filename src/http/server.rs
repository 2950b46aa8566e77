//! One HTTP server: a listener with a raised backlog and a send timeout, tiny_http over it, and a fixed pool of
//! handler threads that pass every request through the guards and then to the routes.
//!
//! A receive error while not stopping means the listener died (tiny_http stops accepting for
//! good after an accept error): the process exits 1 so the service manager restarts it, rather
//! than living on deaf. Stopping unblocks each handler thread once and joins them until a
//! deadline; threads still busy with a slow client then are left to the process exit.
//! The listener gets a send timeout before tiny_http takes it; Linux copies it to every
//! accepted socket, so a client that stops reading (a slow zip download) frees its thread after
//! `io_timeout`. A receive timeout cannot go the same way: on a listener it also bounds
//! `accept`, and tiny_http stops accepting for good after one accept error.
//! With TLS (`tls.rs`) the listener is the TLS front's, and tiny_http serves a private loopback
//! one behind it.

use super::guard::{BrowserGuard, refuse_body_on_bodiless, refuse_oversized};
use super::tls::{self, TlsConfig};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;
use tiny_http::{Request, Server};

/// What a server does with a request that passed the guards.
pub type Handler = Arc<dyn Fn(Request) + Send + Sync>;

pub struct HttpServer {
    server: Arc<Server>,
    threads: Vec<JoinHandle<()>>,
    pub addr: SocketAddr,
    /// The TLS front's listener, shut at stop.
    front: Option<TcpListener>,
}

/// How to run one server.
pub struct ServerSpec<'a> {
    /// Names its threads (`api-0`…).
    pub name: &'a str,
    /// Names it in messages ("API server").
    pub what: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub threads: usize,
    /// Whether the server has no token (then browser pages are refused), and binds loopback.
    pub tokenless: bool,
    pub loopback: bool,
    /// The longest a write to one connection may block.
    pub io_timeout: std::time::Duration,
    /// HTTPS with this certificate, else plain HTTP.
    pub tls: Option<TlsConfig>,
}

impl HttpServer {
    /// Bind, then start the handler pool; `stopping` tells the pool a receive error is expected.
    pub fn start(spec: ServerSpec<'_>, stopping: &Arc<AtomicBool>, handler: Handler) -> Result<HttpServer, String> {
        let addr = format_addr(spec.host, spec.port);
        let listener = listen(&addr, spec.io_timeout)
            .map_err(|e| format!("cannot listen on {addr} for the {}: {e}", spec.what))?;
        let bound = listener.local_addr().map_err(|e| format!("the {} has no address: {e}", spec.what))?;
        let (server, front) =
            serve(listener, &spec).map_err(|e| format!("cannot serve on {addr} for the {}: {e}", spec.what))?;
        let addr = front
            .as_ref()
            .map_or_else(|| server.server_addr().to_ip(), |_| Some(bound))
            .ok_or_else(|| format!("the {} did not bind an IP address", spec.what))?;
        let server = Arc::new(server);
        let guard = BrowserGuard { open: spec.tokenless, loopback: spec.loopback };
        let threads = spawn_pool(spec.name, &server, spec.threads, guard, stopping, handler)
            .map_err(|e| format!("cannot start the {} threads: {e}", spec.what))?;
        Ok(HttpServer { server, threads, addr, front })
    }

    /// Stop the pool; returns how many threads were still busy at `deadline`.
    pub fn stop(mut self, deadline: Instant) -> usize {
        if let Some(front) = &self.front {
            tls::shut_listener(front);
        }
        stop_pool(&self.server, std::mem::take(&mut self.threads), deadline)
    }
}

/// A listener with a raised backlog and the send timeout its connections inherit.
fn listen(addr: &str, io_timeout: std::time::Duration) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    widen_backlog(&listener);
    send_timeout(&listener, io_timeout)?;
    no_delay(&listener);
    Ok(listener)
}

/// TCP_NODELAY, inherited by every accepted connection on Linux: tiny_http writes a response's
/// head and body separately, and with Nagle the body waits for the client's delayed ACK (40 ms).
fn no_delay(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid fd owned by `listener`, and an int of the size we pass.
    let rc = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        log::debug!("could not set TCP_NODELAY: {}", std::io::Error::last_os_error());
    }
}

/// tiny_http on `listener`; with TLS, tiny_http on a loopback listener of its own and the TLS
/// front (returned, to be shut at stop) on `listener`.
fn serve(
    listener: TcpListener,
    spec: &ServerSpec<'_>,
) -> Result<(Server, Option<TcpListener>), Box<dyn std::error::Error + Send + Sync>> {
    let Some(config) = &spec.tls else { return Ok((Server::from_listener(listener, None)?, None)) };
    let inner = listen("127.0.0.1:0", spec.io_timeout)?;
    let inner_addr = inner.local_addr()?;
    let server = Server::from_listener(inner, None)?;
    let front = listener.try_clone()?;
    tls::spawn_front(spec.name, listener, inner_addr, std::sync::Arc::clone(config))?;
    Ok((server, Some(front)))
}

/// Run `threads` handler threads that take requests from `server` and pass them to `handle`.
/// A receive error while not `stopping` means the listener died (tiny_http stops accepting
/// for good after an accept error): the process exits 1 so the service manager restarts it,
/// rather than living on deaf.
fn spawn_pool(
    name: &str,
    server: &Arc<Server>,
    threads: usize,
    guard: BrowserGuard,
    stopping: &Arc<AtomicBool>,
    handle: Handler,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    (0..threads)
        .map(|i| {
            let server = Arc::clone(server);
            let handle = Arc::clone(&handle);
            let stopping = Arc::clone(stopping);
            let thread_name = format!("{name}-{i}");
            std::thread::Builder::new().name(thread_name.clone()).stack_size(1024 * 1024).spawn(move || {
                loop {
                    match server.recv() {
                        // Guarded here, for every server, before any route sees the request.
                        Ok(request) => {
                            let request = refuse_oversized(request).and_then(|r| guard.check(r));
                            if let Some(request) = request.and_then(refuse_body_on_bodiless) {
                                // Routes contain their own panics (`contain.rs`); this keeps the
                                // thread if answering panics (tiny_http answers a dropped request 500).
                                let handled =
                                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(request)));
                                if handled.is_err() {
                                    log::error!("{thread_name}: a request handler panicked; the thread goes on");
                                }
                            }
                        }
                        Err(_) if stopping.load(Ordering::Acquire) => return,
                        Err(e) => {
                            log::error!("{thread_name}: the listener failed ({e}); exiting so the daemon is restarted");
                            std::process::exit(1);
                        }
                    }
                }
            })
        })
        .collect()
}

/// Stop a pool: one unblock per handler thread, then join them until `deadline`. Threads still
/// busy then (a slow download, a stalled upload) are left to the process exit.
fn stop_pool(server: &Server, handles: Vec<JoinHandle<()>>, deadline: Instant) -> usize {
    for _ in 0..handles.len() {
        server.unblock();
    }
    let (tx, rx) = crossbeam_channel::unbounded();
    let total = handles.len();
    let joiner = std::thread::Builder::new().name("pool-join".into()).spawn(move || {
        for h in handles {
            let _ = h.join();
            let _ = tx.send(());
        }
    });
    if joiner.is_err() {
        return total;
    }
    let mut joined = 0;
    while joined < total {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(()) => joined += 1,
            Err(_) => break,
        }
    }
    total - joined
}

/// std listens with a backlog of 128; hundreds of workers reconnecting at once (after a
/// restart) overflow it and get resets. Linux lets `listen` be called again to raise it (the
/// kernel caps it at net.core.somaxconn).
fn widen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd belongs to `listener`, which is alive and already listening.
    let rc = unsafe { libc::listen(listener.as_raw_fd(), 4096) };
    if rc != 0 {
        log::debug!("could not raise the listen backlog: {}", std::io::Error::last_os_error());
    }
}

/// SO_SNDTIMEO on the listener, inherited by each accepted connection (SO_RCVTIMEO would make
/// tiny_http's `accept` fail once the port has been idle that long).
fn send_timeout(listener: &std::net::TcpListener, timeout: std::time::Duration) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let tv = libc::timeval {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
    };
    // SAFETY: a valid fd owned by `listener`, and a timeval of the size we pass.
    let rc = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn format_addr(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}
