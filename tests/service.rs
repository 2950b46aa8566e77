//! Running as a service: the systemd notifications (READY, WATCHDOG, STOPPING) over a real
//! `$NOTIFY_SOCKET`, a headless browser by default when there is no display, the units, and
//! `make install` keeping an existing config.

use crate::support::*;
use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::{Duration, Instant};

/// The daemon under a fake service manager listening on `socket` (a path, or `@name`).
fn start(dir: &TempDir, notify_socket: &str, env: &[(&str, &str)]) -> (ChildGuard, String) {
    let mut cmd = Command::new(binary());
    cmd.args(["serve", "--api-port", "0", "--worker-port", "0"])
        .current_dir(dir.path())
        .env("NOTIFY_SOCKET", notify_socket)
        .env_remove("WATCHDOG_USEC")
        .env_remove("WATCHDOG_PID");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let Serving { child, mut stderr, api, .. } = start_serving(&mut cmd);
    // Keep draining stderr so the daemon never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, api)
}

/// The next datagram, within `timeout`.
fn next(sock: &UnixDatagram, timeout: Duration) -> Option<String> {
    sock.set_read_timeout(Some(timeout)).unwrap();
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn terminate(child: &mut ChildGuard) {
    // SAFETY: a plain kill of our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
}

#[test]
fn ready_watchdog_and_stopping_reach_the_service_manager() {
    let dir = TempDir::new("sd-notify");
    let path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let (mut child, api) = start(&dir, path.to_str().unwrap(), &[("WATCHDOG_USEC", "200000")]);
    let ready = next(&sock, Duration::from_secs(5)).expect("READY=1");
    assert!(ready.starts_with("READY=1\n"), "{ready}");
    assert!(ready.contains(&format!("STATUS=API on {api}")), "{ready}");
    // Half of 200 ms: several pings a second.
    let started = Instant::now();
    let mut pings = 0;
    while started.elapsed() < Duration::from_millis(600) {
        if next(&sock, Duration::from_millis(300)).as_deref() == Some("WATCHDOG=1") {
            pings += 1;
        }
    }
    assert!(pings >= 3, "{pings} watchdog pings in 600 ms");
    terminate(&mut child);
    let stopping = (0..50).find_map(|_| next(&sock, Duration::from_secs(3)).filter(|m| m.starts_with("STOPPING=1")));
    assert!(stopping.is_some(), "STOPPING=1 after SIGTERM");
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn an_abstract_socket_works_and_a_watchdog_for_another_process_is_ignored() {
    use std::os::linux::net::SocketAddrExt;
    let dir = TempDir::new("sd-abstract");
    let name = format!("ac-test-notify-{}", std::process::id());
    let sock = UnixDatagram::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    let (mut child, _) = start(&dir, &format!("@{name}"), &[("WATCHDOG_USEC", "100000"), ("WATCHDOG_PID", "1")]);
    assert!(next(&sock, Duration::from_secs(5)).is_some_and(|m| m.starts_with("READY=1")));
    // WATCHDOG_PID names another process: no pings.
    assert_eq!(next(&sock, Duration::from_millis(400)), None);
    terminate(&mut child);
    assert!(next(&sock, Duration::from_secs(5)).is_some_and(|m| m.starts_with("STOPPING=1")));
    assert!(child.0.wait().unwrap().success());
}

#[test]
fn the_browser_is_headless_by_default_without_a_display() {
    let headless = |display: Option<&str>| -> String {
        let mut cmd = Command::new(binary());
        cmd.args(["config", "check", "--config", "/dev/null"]).env_remove("DISPLAY");
        if let Some(d) = display {
            cmd.env("DISPLAY", d);
        }
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        out.lines().find(|l| l.trim_start().starts_with("headless:")).unwrap().trim().to_string()
    };
    assert_eq!(headless(None), "headless: true");
    assert_eq!(headless(Some(":0")), "headless: false");
}

#[test]
fn the_units_are_valid_and_hardened() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd");
    let controller = std::fs::read_to_string(root.join("agent-controller.service")).unwrap();
    for line in ["Type=notify", "WatchdogSec=", "NoNewPrivileges=yes", "ProtectSystem=strict"] {
        assert!(controller.lines().any(|l| l.starts_with(line)), "agent-controller.service: {line}");
    }
    let worker = std::fs::read_to_string(root.join("agent-worker.service")).unwrap();
    for line in ["DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes"]
    {
        assert!(worker.lines().any(|l| l.starts_with(line)), "agent-worker.service: {line}");
    }
    // systemd's own check, where systemd is installed (the binaries need not be).
    let Ok(out) = Command::new("systemd-analyze")
        .arg("verify")
        .arg(root.join("agent-controller.service"))
        .arg(root.join("agent-worker.service"))
        .output()
    else {
        eprintln!("SKIPPED: systemd-analyze is not installed");
        return;
    };
    let complaints: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains("is not executable") && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    assert!(complaints.is_empty(), "systemd-analyze verify: {complaints:?}");
}

#[test]
fn make_install_never_overwrites_a_config_and_says_what_it_installed() {
    let dest = TempDir::new("install");
    let install = || {
        let out = Command::new("make")
            .args(["-s", "-C", env!("CARGO_MANIFEST_DIR"), "install-files"])
            .arg(format!("DESTDIR={}", dest.path().display()))
            .arg(format!("RELEASE_BIN={}", binary().display()))
            .arg(concat!("WORKER_BIN=", env!("CARGO_BIN_EXE_agent-worker")))
            .arg(concat!("EVAL_BIN=", env!("CARGO_BIN_EXE_agent-eval")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let config = dest.path().join("etc/agent-controller/config.yaml");
    let first = install();
    for file in [
        "/usr/local/bin/agent-controller",
        "/usr/local/bin/agent-worker",
        "/usr/local/bin/agent-eval",
        "/etc/agent-controller/config.yaml",
    ] {
        assert!(first.contains(&format!("installed {}{file}\n", dest.path().display())), "{first}");
    }
    assert!(first.contains("agent-worker.service"), "{first}");
    std::fs::write(&config, "server:\n  api_port: 7777\n").unwrap();
    let second = install();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "server:\n  api_port: 7777\n", "the config was kept");
    let new = config.with_file_name("config.yaml.new");
    assert_eq!(
        std::fs::read(&new).unwrap(),
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/config.yaml")).unwrap()
    );
    assert!(second.contains("config.yaml.new") && second.contains("kept"), "{second}");
}
