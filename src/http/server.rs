//! One HTTP server: a listener with a raised backlog, our front acceptor on it (connection cap,
//! head cap, read deadlines, TLS when configured: `front.rs`), tiny_http behind that on a
//! private Unix socket, and
//! a fixed pool of handler threads that pass every request through the guards and then to the
//! routes.
//!
//! A request whose body comes at the client's pace (more than the front holds back, or chunked)
//! is handled on a thread of its own (at most `SLOW_BODIES_MAX` at a time per server), so slow
//! uploads cannot hold every handler thread while the port's other requests wait.
//!
//! A receive error while not stopping means tiny_http's listener died (it stops accepting for
//! good after an accept error): the process exits 1 so the service manager restarts it, rather
//! than living on deaf. Stopping closes the front, unblocks each handler thread once and joins
//! them until a deadline; threads still busy with a slow client then are left to the process
//! exit.

use super::conns::Limits;
use super::front::Front;
use super::guard::BrowserGuard;
use super::tls::TlsConfig;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;
use tiny_http::{Request, Server};

/// What a server does with a request that passed the guards.
pub type Handler = Arc<dyn Fn(Request) + Send + Sync>;

/// Requests with a body under way on threads of their own, per server, at most; past that
/// they are handled on the pool as any other.
const SLOW_BODIES_MAX: usize = 64;

pub struct HttpServer {
    server: Arc<Server>,
    front: Front,
    threads: Vec<JoinHandle<()>>,
    pub addr: SocketAddr,
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
    /// The server's bearer token (empty: none, and then browser pages are refused), and
    /// whether it binds loopback.
    pub token: crate::util::secret::Secret,
    pub loopback: bool,
    /// What bounds each connection.
    pub limits: Limits,
    /// HTTPS with this certificate, else plain HTTP.
    pub tls: Option<TlsConfig>,
}

/// Why a server did not start: what it was doing, for which server, and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{doing}: {source}")]
pub struct StartFailed {
    doing: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl StartFailed {
    fn new(doing: String) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> StartFailed {
        move |source| StartFailed { doing, source }
    }
}

impl HttpServer {
    /// Bind, then start the handler pool; `stopping` tells the pool a receive error is expected.
    pub fn start(
        spec: ServerSpec<'_>,
        stopping: &Arc<AtomicBool>,
        handler: Handler,
    ) -> Result<HttpServer, StartFailed> {
        let guard = BrowserGuard { open: spec.token.is_empty(), loopback: spec.loopback };
        let (front, inner, addr) = listen(&spec)?;
        let server = Server::from_listener(inner, None)
            .map_err(StartFailed::new(format!("cannot serve on {addr} for the {}", spec.what)))?;
        let server = Arc::new(server);
        let threads = spawn_pool(spec.name, &server, spec.threads, guard, stopping, handler)
            .map_err(|e| StartFailed::new(format!("cannot start the {} threads", spec.what))(e.into()))?;
        Ok(HttpServer { server, front, threads, addr })
    }

    /// Stop the pool; returns how many threads were still busy at `deadline`.
    pub fn stop(mut self, deadline: Instant) -> usize {
        self.front.stop();
        stop_pool(&self.server, std::mem::take(&mut self.threads), deadline)
    }
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
    let slow_bodies = Arc::new(AtomicUsize::new(0));
    (0..threads)
        .map(|i| {
            let server = Arc::clone(server);
            let handle = Arc::clone(&handle);
            let stopping = Arc::clone(stopping);
            let slow_bodies = Arc::clone(&slow_bodies);
            let thread_name = format!("{name}-{i}");
            std::thread::Builder::new().name(thread_name.clone()).stack_size(HANDLER_STACK).spawn(move || {
                loop {
                    match server.recv() {
                        // Guarded here, for every server, before any route sees the request. (The
                        // front refused absurd lengths and bodies on GET/HEAD/DELETE already.)
                        Ok(request) => {
                            if let Some(request) = guard.check(request)
                                && let Some(request) = hand_off_slow_body(request, &handle, &slow_bodies)
                            {
                                handle(request);
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

/// A handler thread's stack (routes parse JSON and build replies on it).
const HANDLER_STACK: usize = 1024 * 1024;

/// Handle a request whose body comes at the client's pace on a thread of its own; the request
/// back when it is not such a request, or no thread is to be had.
fn hand_off_slow_body(request: Request, handle: &Handler, under_way: &Arc<AtomicUsize>) -> Option<Request> {
    // The front hands a request on once head and body are whole or `HOLD` bytes have come;
    // past that (or in chunks of unknown total) the rest comes as the client sends it.
    let streams = match request.body_length() {
        Some(n) => n > super::relay::HOLD,
        None => super::header_value(&request, "Transfer-Encoding").is_some(),
    };
    if !streams {
        return Some(request);
    }
    if under_way.fetch_add(1, Ordering::AcqRel) >= SLOW_BODIES_MAX {
        under_way.fetch_sub(1, Ordering::AcqRel);
        return Some(request);
    }
    // Through a channel, so the request is still ours if the thread cannot start.
    let (tx, rx) = crossbeam_channel::bounded(1);
    let _ = tx.send(request);
    let (handle, counter, taken) = (Arc::clone(handle), Arc::clone(under_way), rx.clone());
    let spawned = std::thread::Builder::new().name("body".into()).stack_size(HANDLER_STACK).spawn(move || {
        if let Ok(request) = taken.recv() {
            handle(request);
        }
        counter.fetch_sub(1, Ordering::AcqRel);
    });
    if spawned.is_err() {
        under_way.fetch_sub(1, Ordering::AcqRel);
        return rx.try_recv().ok();
    }
    None
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

/// Bind the port and put the front acceptor on it; tiny_http is to serve the Unix listener.
fn listen(spec: &ServerSpec<'_>) -> Result<(Front, std::os::unix::net::UnixListener, SocketAddr), StartFailed> {
    let failed = |doing: String| move |e: std::io::Error| StartFailed::new(doing)(e.into());
    let addr = format_addr(spec.host, spec.port);
    let listener =
        std::net::TcpListener::bind(&addr).map_err(failed(format!("cannot listen on {addr} for the {}", spec.what)))?;
    widen_backlog(&listener);
    raise_descriptor_limit();
    let bound = listener.local_addr().map_err(failed(format!("the {} has no address", spec.what)))?;
    let (front, inner) = Front::start(listener, spec.name, spec.limits.clone(), spec.tls.clone(), spec.token.clone())
        .map_err(failed(format!("cannot start the front acceptor on {addr} for the {}", spec.what)))?;
    Ok((front, inner, bound))
}

/// Each relayed request holds four descriptors (client, inner socket, tiny_http's end and its
/// clone); a soft limit of 1024 would run out well below `server.max_connections`. Raise the
/// soft limit to the hard one.
fn raise_descriptor_limit() {
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn format_addr(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}
