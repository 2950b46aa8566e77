//! The front acceptor: our own accept loop on a port, in front of tiny_http (which has no
//! limits of its own: an unbounded head line, no read timeouts, a thread per connection and
//! a panic when one cannot be spawned).
//!
//! Each accepted connection gets a thread of ours that relays it request by request
//! (`relay.rs`) to tiny_http, which listens on a Unix socket in a private 0700 directory. At
//! most `max_connections` are open per port; at the cap a new connection evicts the one idle
//! longest (no request in flight: silent since accept, between requests, still sending its
//! head, or its body still held back by the relay), and is refused 503 when all are busy. A thread that cannot be spawned refuses its
//! connection with 503; an accept error (out of descriptors) pauses the loop, never ends it.
//! On an HTTPS port the relay terminates TLS itself (`tls::Client`), so all of this holds over
//! TLS too; there a refused connection is closed unanswered (no answer precedes a handshake).
//! A daemon sweeps at start the socket folders of fronts whose process was killed.

use super::conns::{Limits, Registry, Slot};
use super::relay;
use super::tls::{Client, TlsConfig};
use crate::util::secret::Secret;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running acceptor; dropping it without `stop` leaves its thread running. Declared after
/// the tiny_http server wherever both are held, so the server is dropped first.
pub struct Front {
    listener: TcpListener,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    dir: PathBuf,
}

impl Front {
    /// Start relaying `listener`'s connections; tiny_http is to serve the returned listener.
    pub fn start(
        listener: TcpListener,
        name: &str,
        limits: Limits,
        tls: Option<TlsConfig>,
        token: Secret,
    ) -> std::io::Result<(Front, UnixListener)> {
        // 0700: only this user can reach tiny_http behind the limits (and forge the peer header).
        let dir = crate::util::private_temp_dir(&format!("{DIR_PREFIX}{}-{name}-", std::process::id()))?;
        let inner_path = dir.join("http.sock");
        let inner = UnixListener::bind(&inner_path)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let token = (!token.is_empty()).then_some(token);
        let registry = Arc::new(Registry::new(tls, token));
        let accept_from = listener.try_clone()?;
        let stop = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || accept_loop(&accept_from, &inner_path, &limits, &registry, &stop))?;
        Ok((Front { listener, stopping, thread: Some(thread), dir }, inner))
    }

    /// Stop accepting; open connections finish on their own.
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // SAFETY: our own listening socket; shutting it down wakes the blocked `accept`.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Front {
    /// After tiny_http's own drop (it unblocks its accept thread through the socket).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A front's socket folder in the temporary directory: `agent-controller-<pid>-<port>-<16 hex>`.
const DIR_PREFIX: &str = "agent-controller-";

/// Remove the socket folders of fronts whose process is gone (a kill leaves them behind; `eval`
/// starts a daemon per run). Only a folder of this user, named as a front's, whose pid runs no
/// more, and only its socket: anything else in it keeps it. How many went.
pub fn sweep_stale_dirs() -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return 0 };
    // SAFETY: geteuid(2) cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut swept = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(front_pid) else { continue };
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_dir() && m.uid() == uid);
        if !ours || runs(pid) {
            continue;
        }
        let _ = std::fs::remove_file(path.join("http.sock"));
        if std::fs::remove_dir(&path).is_ok() {
            swept += 1;
        }
    }
    swept
}

/// The pid in a front's folder name (`agent-controller-123-api-0123456789abcdef`).
fn front_pid(name: &str) -> Option<i32> {
    let (pid, rest) = name.strip_prefix(DIR_PREFIX)?.split_once('-')?;
    let (port, random) = rest.rsplit_once('-')?;
    let named = !port.is_empty() && random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit());
    (named && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.parse().ok()).flatten().filter(|p| *p > 0)
}

/// Whether a process with this pid exists (one of another user's counts).
fn runs(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH) }
}

fn accept_loop(listener: &TcpListener, inner: &Path, limits: &Limits, registry: &Arc<Registry>, stop: &AtomicBool) {
    let mut last_complaint: Option<Instant> = None;
    loop {
        match listener.accept() {
            _ if stop.load(Ordering::Acquire) => return,
            Ok((client, peer)) => admit(client, peer, inner, limits, registry),
            Err(e) => {
                // Out of descriptors or memory: the kernel keeps the queue; try again shortly.
                if last_complaint.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    log::warn!("cannot accept a connection ({e}); retrying");
                    last_complaint = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Give a new connection a slot and a thread, or refuse it with 503.
fn admit(client: TcpStream, peer: SocketAddr, inner: &Path, limits: &Limits, registry: &Arc<Registry>) {
    let Some(id) = registry.admit(&client, limits.max_connections) else {
        return refuse(&client, registry, "too many open connections; try again");
    };
    let _ = client.set_nodelay(true);
    let _ = client.set_write_timeout(Some(limits.idle_timeout));
    let slot = Slot { registry: Arc::clone(registry), id, accepted: Instant::now() };
    let (inner, limits) = (inner.to_path_buf(), limits.clone());
    // The thread takes the descriptor, not the stream: if it cannot start, the stream is
    // still ours to answer on.
    let fd = client.into_raw_fd();
    let spawned = std::thread::Builder::new().name("conn".into()).stack_size(128 * 1024).spawn(move || {
        // SAFETY: `fd` was given up by `into_raw_fd` above and is owned by this thread alone.
        let client = unsafe { TcpStream::from_raw_fd(fd) };
        relay::serve(&client, peer, &inner, &limits, &slot);
        // Out of the registry before the descriptor closes, so eviction never hits a reused one.
        slot.registry.remove(slot.id);
        drop(client);
    });
    if let Err(e) = spawned {
        // SAFETY: the thread never ran, so `fd` is still ours alone.
        let client = unsafe { TcpStream::from_raw_fd(fd) };
        registry.remove(id);
        log::warn!("cannot start a thread for a connection from {peer} ({e}); refused");
        refuse(&client, registry, "cannot take more connections now; try again");
    }
}

/// A 503 written without blocking the accept loop, then the connection closed. (Over TLS
/// there is no answer before a handshake, which the accept loop cannot wait for: just closed.)
fn refuse(client: &TcpStream, registry: &Registry, why: &str) {
    if registry.tls.is_none() {
        let _ = client.set_nonblocking(true);
        relay::answer(&mut Client::Plain(client), 503, why);
    }
}

#[cfg(test)]
mod tests {
    use super::front_pid;

    #[test]
    fn only_a_front_s_folder_name_gives_a_pid() {
        assert_eq!(front_pid("agent-controller-4242-api-0123456789abcdef"), Some(4242));
        assert_eq!(front_pid("agent-controller-7-worker-api-0123456789ABCDEF"), Some(7));
        for other in [
            "agent-controller-eval-0123456789abcdef",
            "agent-controller-files-1000",
            "agent-controller-0-api-0123456789abcdef",
            "agent-controller-12-api-0123",
            "agent-controller-12-0123456789abcdef",
            "ac-ssh-0123456789abcdef",
        ] {
            assert_eq!(front_pid(other), None, "{other}");
        }
    }
}
