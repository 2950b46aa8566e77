//! Start and stop the whole controller: the store, the session manager, the worker hub, both
//! HTTP servers, the long-poll reaper and the liveness monitor.
//!
//! `Daemon::start` returns once both servers listen (port 0 picks free ports; the bound
//! addresses are logged and returned). `Daemon::shutdown` stops accepting, marks active
//! sessions interrupted, answers every parked request, and returns within about 2 s.

use crate::api::Api;
use crate::config::Config;
use crate::http::{self, Parker};
use crate::hub::{HubSettings, WorkerHub};
use crate::sessions::{AgentFn, SessionManager};
use crate::store::Store;
use crate::worker_api::WorkerApi;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tiny_http::Server;

#[derive(Debug)]
pub struct StartError(pub String);

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

struct HttpServer {
    server: Arc<Server>,
    threads: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

pub struct Daemon {
    api: HttpServer,
    worker: HttpServer,
    parker: Arc<Parker>,
    hub: Arc<WorkerHub>,
    sessions: Arc<SessionManager>,
    reaper: Option<JoinHandle<()>>,
    monitor: Option<JoinHandle<()>>,
    monitor_stop: Arc<(Mutex<bool>, Condvar)>,
    stopping: Arc<AtomicBool>,
}

impl Daemon {
    pub fn start(config: Config, agent: AgentFn) -> Result<Daemon, StartError> {
        let config = Arc::new(config);
        let store = Store::open(&config.output.dir)
            .map_err(|e| StartError(format!("cannot use output.dir {}: {e}", config.output.dir.display())))?;
        let parker = Arc::new(Parker::default());
        let hub = Arc::new(WorkerHub::new(
            HubSettings {
                long_poll: Duration::from_secs(config.server.long_poll_s),
                worker_timeout: Duration::from_secs(config.server.worker_timeout_s),
            },
            Arc::clone(&parker),
        ));
        let sessions = Arc::new(
            SessionManager::open(Arc::clone(&config), store, Arc::clone(&hub), Arc::clone(&parker), agent)
                .map_err(|e| StartError(format!("cannot load sessions from {}: {e}", config.output.dir.display())))?,
        );

        let reaper = {
            let parker = Arc::clone(&parker);
            std::thread::Builder::new()
                .name("long-poll-reaper".into())
                .stack_size(256 * 1024)
                .spawn(move || parker.run_reaper())
                .map_err(|e| StartError(format!("cannot start a thread: {e}")))?
        };
        let monitor_stop = Arc::new((Mutex::new(false), Condvar::new()));
        let monitor = {
            let hub = Arc::clone(&hub);
            let stop = Arc::clone(&monitor_stop);
            std::thread::Builder::new()
                .name("worker-monitor".into())
                .stack_size(256 * 1024)
                .spawn(move || {
                    let (lock, cv) = &*stop;
                    let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                    while !*stopped {
                        stopped =
                            cv.wait_timeout(stopped, Duration::from_millis(500)).unwrap_or_else(|p| p.into_inner()).0;
                        hub.check_liveness();
                    }
                })
                .map_err(|e| StartError(format!("cannot start a thread: {e}")))?
        };

        let host = if config.server.host == "localhost" { "127.0.0.1" } else { config.server.host.as_str() };
        let bind = |port: u16, what: &str| -> Result<(Arc<Server>, SocketAddr), StartError> {
            let addr = format_addr(host, port);
            let listener = std::net::TcpListener::bind(&addr)
                .map_err(|e| StartError(format!("cannot listen on {addr} for the {what}: {e}")))?;
            widen_backlog(&listener);
            let server = Server::from_listener(listener, None)
                .map_err(|e| StartError(format!("cannot serve on {addr} for the {what}: {e}")))?;
            let bound =
                server.server_addr().to_ip().ok_or_else(|| StartError(format!("{what} did not bind an IP address")))?;
            Ok((Arc::new(server), bound))
        };
        let (api_server, api_addr) = bind(config.server.api_port, "API server")?;
        let (worker_server, worker_addr) = bind(config.server.worker_port, "worker server")?;

        let api = Arc::new(Api { config: Arc::clone(&config), sessions: Arc::clone(&sessions), hub: Arc::clone(&hub) });
        let worker_api =
            Arc::new(WorkerApi { config: Arc::clone(&config), hub: Arc::clone(&hub), sessions: Arc::clone(&sessions) });
        let stopping = Arc::new(AtomicBool::new(false));
        let loopback = config.binds_loopback();
        let api_threads = http::spawn_pool(
            "api",
            Arc::clone(&api_server),
            config.server.api_threads,
            http::BrowserGuard { open: config.server.api_token.is_empty(), loopback },
            Arc::clone(&stopping),
            Arc::new(move |r| api.handle(r)),
        )
        .map_err(|e| StartError(format!("cannot start API threads: {e}")))?;
        let worker_threads = http::spawn_pool(
            "worker-api",
            Arc::clone(&worker_server),
            config.server.worker_threads,
            http::BrowserGuard { open: config.server.worker_token.is_empty(), loopback },
            Arc::clone(&stopping),
            Arc::new(move |r| worker_api.handle(r)),
        )
        .map_err(|e| StartError(format!("cannot start worker-server threads: {e}")))?;

        log::info!("API server listening on http://{api_addr}");
        log::info!("worker server listening on http://{worker_addr}");
        if config.server.api_token.is_empty() {
            log::info!("API auth is off (server.api_token is empty)");
        }
        Ok(Daemon {
            api: HttpServer { server: api_server, threads: api_threads, addr: api_addr },
            worker: HttpServer { server: worker_server, threads: worker_threads, addr: worker_addr },
            parker,
            hub,
            sessions,
            reaper: Some(reaper),
            monitor: Some(monitor),
            monitor_stop,
            stopping,
        })
    }

    pub fn api_addr(&self) -> SocketAddr {
        self.api.addr
    }

    pub fn worker_addr(&self) -> SocketAddr {
        self.worker.addr
    }

    pub fn sessions(&self) -> &Arc<SessionManager> {
        &self.sessions
    }

    pub fn hub(&self) -> &Arc<WorkerHub> {
        &self.hub
    }

    /// Graceful stop, bounded to about 2 s: sessions are marked interrupted and woken, parked
    /// polls answered, then the handler pools are stopped; handlers still busy with a slow
    /// client at the deadline are left to the process exit.
    pub fn shutdown(mut self) {
        let deadline = Instant::now() + Duration::from_millis(1800);
        log::info!("shutting down");
        self.stopping.store(true, Ordering::Release);
        self.hub.shutdown();
        self.sessions.shutdown(Duration::from_millis(1000));
        self.parker.close();
        if let Some(h) = self.reaper.take() {
            let _ = h.join();
        }
        {
            let (lock, cv) = &*self.monitor_stop;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_all();
        }
        if let Some(h) = self.monitor.take() {
            let _ = h.join();
        }
        let busy = http::stop_pool(&self.api.server, std::mem::take(&mut self.api.threads), deadline)
            + http::stop_pool(&self.worker.server, std::mem::take(&mut self.worker.threads), deadline);
        if busy > 0 {
            log::warn!("{busy} handler threads were still busy with clients at shutdown");
        }
        log::info!("stopped");
    }
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

fn format_addr(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}
