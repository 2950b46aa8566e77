//! The systemd notification protocol, in a few lines of std: `READY=1` once the daemon
//! serves, `STOPPING=1` when it begins to stop, `WATCHDOG=1` at half the interval systemd asks
//! for (`WATCHDOG_USEC`). One datagram per message to `$NOTIFY_SOCKET` (a path, or `@name` in
//! the abstract namespace).
//!
//! Invariants: without `$NOTIFY_SOCKET` (not under systemd, or `Type=exec`) every call is a
//! no-op; a failure to notify is logged at debug level and never stops the daemon.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// Send `state` ("READY=1", "STOPPING=1", …; several lines allowed). False when there is no
/// socket to tell or the send failed.
pub fn notify(state: &str) -> bool {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else { return false };
    let result = UnixDatagram::unbound().and_then(|sock| send(&sock, socket.as_bytes(), state.as_bytes()));
    if let Err(e) = &result {
        log::debug!("cannot notify the service manager ({state:?}): {e}");
    }
    result.is_ok()
}

fn send(sock: &UnixDatagram, socket: &[u8], message: &[u8]) -> std::io::Result<()> {
    match socket.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(message, &addr)?;
        }
        None => {
            sock.send_to(message, OsStr::from_bytes(socket))?;
        }
    }
    Ok(())
}

/// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, if it is meant for this process
/// (`$WATCHDOG_PID` unset or ours).
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok().filter(|u| *u > 0)?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2))
}

/// Start pinging the watchdog from a small thread of its own, if systemd asked for it; the
/// thread lives as long as the process.
pub fn spawn_watchdog() {
    let Some(every) = watchdog_interval() else { return };
    let spawned = std::thread::Builder::new().name("sd-watchdog".into()).stack_size(64 * 1024).spawn(move || {
        loop {
            notify("WATCHDOG=1");
            std::thread::sleep(every);
        }
    });
    if let Err(e) = spawned {
        log::warn!("cannot start the watchdog thread: {e}");
    }
}
