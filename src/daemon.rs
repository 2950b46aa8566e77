//! Start and stop the whole controller: the store, the session manager, the scheduler, the
//! worker hub, both HTTP servers, the long-poll reaper and the liveness monitor.
//!
//! `Daemon::start` returns once both servers listen (port 0 picks free ports; the bound
//! addresses are logged and returned). `Daemon::shutdown` stops accepting, marks active
//! sessions interrupted, answers every parked request, and returns within about 2 s.

use crate::config::Config;
use crate::http::api::Api;
use crate::http::worker_api::WorkerApi;
use crate::http::{ConnLimits, HttpServer, ServerSpec, TlsConfig};
use crate::hub::{HubSettings, WorkerHub};
use crate::schedule::Scheduler;
use crate::session::{AgentFn, SessionManager};
use crate::store::{DirLock, Store};
use crate::wait::park::Parker;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct StartError(pub String);

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

pub struct Daemon {
    api: Option<HttpServer>,
    worker: Option<HttpServer>,
    api_addr: SocketAddr,
    worker_addr: SocketAddr,
    parker: Arc<Parker>,
    hub: Arc<WorkerHub>,
    sessions: Arc<SessionManager>,
    schedules: Arc<Scheduler>,
    reaper: Option<JoinHandle<()>>,
    monitors: Vec<JoinHandle<()>>,
    monitor_stop: Arc<(Mutex<bool>, Condvar)>,
    stopping: Arc<AtomicBool>,
    _lock: DirLock,
}

impl Daemon {
    pub fn start(config: Config, agent: AgentFn) -> Result<Daemon, StartError> {
        let config = Arc::new(config);
        // Read once, before anything else: a bad certificate or key stops the start.
        let tls = config
            .tls()
            .then(|| crate::http::load_tls(&config.server.tls_cert, &config.server.tls_key))
            .transpose()
            .map_err(|e| StartError(e.to_string()))?;
        let store = Store::open(&config.output.dir, config.output.sync)
            .map_err(|e| StartError(format!("cannot use output.dir {}: {e}", config.output.dir.display())))?;
        // Before anything is loaded or marked: a second daemon must not touch the first's files.
        let lock = store
            .lock()
            .map_err(|e| StartError(format!("cannot lock output.dir {}: {e}", config.output.dir.display())))?;
        let parker = Arc::new(Parker::default());
        let hub = Arc::new(WorkerHub::new(
            HubSettings {
                long_poll: Duration::from_secs(config.server.long_poll_s),
                worker_timeout: Duration::from_secs(config.server.worker_timeout_s),
                legacy_workers: config.legacy_workers(),
                max_workers: config.server.max_workers,
            },
            Arc::clone(&parker),
        ));
        let schedule_store = store.clone();
        let sessions = Arc::new(
            SessionManager::open(Arc::clone(&config), store, Arc::clone(&hub), Arc::clone(&parker), agent)
                .map_err(|e| StartError(format!("cannot load sessions from {}: {e}", config.output.dir.display())))?,
        );

        sessions.prune();
        let schedules = Scheduler::start(&config, schedule_store, Arc::clone(&sessions), crate::http::session_failure)
            .map_err(|e| StartError(e.to_string()))?;
        let schedules = Arc::new(schedules);
        let reaper = spawn_reaper(&parker)?;
        let monitor_stop = Arc::new((Mutex::new(false), Condvar::new()));
        let monitors = spawn_monitor(&hub, &sessions, &monitor_stop)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let (api, worker) = start_servers(&config, &sessions, &hub, &schedules, &stopping, tls)?;
        let (api_addr, worker_addr) = (api.addr, worker.addr);
        let scheme = config.scheme();
        log::info!("API server listening on {scheme}://{api_addr}");
        log::info!("worker server listening on {scheme}://{worker_addr}");
        if config.server.api_token.is_empty() {
            log::info!("API auth is off (server.api_token is empty)");
        }
        Ok(Daemon {
            api: Some(api),
            worker: Some(worker),
            api_addr,
            worker_addr,
            parker,
            hub,
            sessions,
            schedules,
            reaper: Some(reaper),
            monitors,
            monitor_stop,
            stopping,
            _lock: lock,
        })
    }

    pub fn api_addr(&self) -> SocketAddr {
        self.api_addr
    }

    pub fn worker_addr(&self) -> SocketAddr {
        self.worker_addr
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
        // No run starts after this, and runs the shutdown interrupts report nothing.
        self.schedules.shutdown();
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
        for h in std::mem::take(&mut self.monitors) {
            let _ = h.join();
        }
        let busy = [self.api.take(), self.worker.take()].into_iter().flatten().map(|s| s.stop(deadline)).sum::<usize>();
        if busy > 0 {
            log::warn!("{busy} handler threads were still busy with clients at shutdown");
        }
        log::info!("stopped");
    }
}

/// Both HTTP servers, each with its routes and its own token's guard.
fn start_servers(
    config: &Arc<Config>,
    sessions: &Arc<SessionManager>,
    hub: &Arc<WorkerHub>,
    schedules: &Arc<Scheduler>,
    stopping: &Arc<AtomicBool>,
    tls: Option<TlsConfig>,
) -> Result<(HttpServer, HttpServer), StartError> {
    // A killed daemon (an `eval` run's, say) left its fronts' socket folders behind.
    let swept = crate::http::sweep_stale_dirs();
    if swept > 0 {
        log::info!("removed {swept} socket folders of daemons that are gone");
    }
    let host = if config.server.host == "localhost" { "127.0.0.1" } else { config.server.host.as_str() };
    let loopback = config.binds_loopback();
    let api_routes = Api {
        config: Arc::clone(config),
        sessions: Arc::clone(sessions),
        hub: Arc::clone(hub),
        schedules: Arc::clone(schedules),
    };
    let api = HttpServer::start(
        ServerSpec {
            name: "api",
            what: "API server",
            host,
            port: config.server.api_port,
            threads: config.server.api_threads,
            token: config.server.api_token.clone(),
            loopback,
            limits: conn_limits(config),
            tls: tls.clone(),
        },
        stopping,
        Arc::new(move |r| api_routes.handle(r)),
    )
    .map_err(|e| StartError(e.to_string()))?;
    let worker_routes =
        Arc::new(WorkerApi { config: Arc::clone(config), hub: Arc::clone(hub), sessions: Arc::clone(sessions) });
    let worker = HttpServer::start(
        ServerSpec {
            name: "worker-api",
            what: "worker server",
            host,
            port: config.server.worker_port,
            threads: config.server.worker_threads,
            token: config.server.worker_token.clone(),
            loopback,
            limits: conn_limits(config),
            tls,
        },
        stopping,
        Arc::new(move |r| worker_routes.handle(r)),
    )
    .map_err(|e| StartError(e.to_string()))?;
    Ok((api, worker))
}

/// What bounds each connection on either port.
fn conn_limits(config: &Config) -> ConnLimits {
    ConnLimits {
        max_connections: config.server.max_connections,
        header_timeout: Duration::from_secs(config.server.header_timeout_s),
        read_timeout: Duration::from_secs(config.server.read_timeout_s),
        idle_timeout: config.io_timeout(),
    }
}

fn spawn_reaper(parker: &Arc<Parker>) -> Result<JoinHandle<()>, StartError> {
    let parker = Arc::clone(parker);
    std::thread::Builder::new()
        .name("long-poll-reaper".into())
        .stack_size(256 * 1024)
        .spawn(move || parker.run_reaper())
        .map_err(|e| StartError(format!("cannot start a thread: {e}")))
}

/// How often the retention rules run after the start.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// Checks worker liveness every 500 ms and, on a thread of its own when retention is set (a
/// prune walks folders; lost workers must not wait for it), applies the retention rules every
/// `PRUNE_EVERY`, until told to stop.
fn spawn_monitor(
    hub: &Arc<WorkerHub>,
    sessions: &Arc<SessionManager>,
    stop: &Arc<(Mutex<bool>, Condvar)>,
) -> Result<Vec<JoinHandle<()>>, StartError> {
    let hub = Arc::clone(hub);
    let mut threads = vec![every("worker-monitor", Duration::from_millis(500), stop, move || hub.check_liveness())?];
    if sessions.retention_set() {
        let sessions = Arc::clone(sessions);
        threads.push(every("retention", PRUNE_EVERY, stop, move || {
            sessions.prune();
        })?);
    }
    Ok(threads)
}

/// Run `tick` every `period` on a named thread until `stop` is set.
fn every(
    name: &str,
    period: Duration,
    stop: &Arc<(Mutex<bool>, Condvar)>,
    tick: impl Fn() + Send + 'static,
) -> Result<JoinHandle<()>, StartError> {
    let stop = Arc::clone(stop);
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let (lock, cv) = &*stop;
            let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !*stopped {
                stopped = cv.wait_timeout(stopped, period).unwrap_or_else(|p| p.into_inner()).0;
                if !*stopped {
                    drop(stopped);
                    tick();
                    stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                }
            }
        })
        .map_err(|e| StartError(format!("cannot start a thread: {e}")))
}
