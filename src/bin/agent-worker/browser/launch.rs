//! Starting Chromium, attaching to a tab, and taking it all down again.
//!
//! Chromium runs in its own process group with a fresh private profile,
//! `--remote-debugging-port=0` (the port is read from `DevToolsActivePort`) and the flags that
//! keep it off the network. The group and the profile are registered with `signals` from the
//! moment they exist, and whatever owns them (`Launching` while starting, `Running` after)
//! kills the whole group and removes the profile when dropped, so no failure path leaves a
//! browser or a profile behind. Downloads are denied to the browser itself: files come only
//! through `browser_download`, with cookies, and go to the controller.

use super::Options;
use crate::cdp::{Cdp, CdpError};
use crate::error::WorkerError;
use crate::signals;
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one DevTools call may take.
pub const CALL: Duration = Duration::from_secs(30);
/// The names the browser's process group and profile are registered under.
const GROUP: &str = "browser";
const PROFILE: &str = "browser profile";

/// A started, attached browser.
pub struct Running {
    child: Child,
    profile: PathBuf,
    pub cdp: Cdp,
    /// The flat DevTools session of the attached page, and that page's target id.
    pub session: String,
    pub target: String,
}

impl Running {
    /// Whether the Chromium process is still there.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signals to our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        // A moment to exit cleanly, then no more.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        forget(&self.profile);
    }
}

/// A Chromium being started: killed (whole group) and its profile removed unless handed over.
struct Launching {
    child: Option<Child>,
    profile: PathBuf,
}

impl Drop for Launching {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: our own child's process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            forget(&self.profile);
        }
    }
}

/// The browser is gone: unregister it and remove its profile.
fn forget(profile: &Path) {
    signals::disown_group(GROUP);
    signals::disown_dir(PROFILE);
    let _ = std::fs::remove_dir_all(profile);
}

/// Start Chromium, connect to it and attach to its first tab.
pub fn launch(opts: &Options) -> Result<Running, WorkerError> {
    let profile = agent_controller::util::private_temp_dir(&format!("agent-worker-profile-{}-", std::process::id()))
        .map_err(|e| WorkerError::io("cannot create a browser profile", e))?;
    let child = match chromium(opts, &profile).spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&profile);
            return Err(WorkerError::io(format!("cannot start the browser {}", opts.path.display()), e));
        }
    };
    signals::own_group(GROUP, child.id() as i32);
    signals::own_dir(PROFILE, profile.clone());
    // From here on the guard kills the process group and removes the profile on any failure.
    let mut guard = Launching { child: Some(child), profile: profile.clone() };
    let (port, path) = devtools_port(&mut guard, opts)?;
    let mut cdp = Cdp::connect(port, &path)
        .map_err(|e| WorkerError::Unavailable(format!("cannot connect to the browser: {e}")))?;
    // Downloads go through browser_download (with cookies, uploaded to the controller);
    // nothing is saved behind the worker's back.
    cdp.call(None, "Browser.setDownloadBehavior", json!({"behavior": "deny"}), CALL)?;
    let child =
        guard.child.take().ok_or_else(|| WorkerError::Unavailable("internal: the browser process is gone".into()))?;
    let mut running = Running { child, profile, cdp, session: String::new(), target: String::new() };
    reattach(&mut running, opts.width, opts.height)?;
    Ok(running)
}

/// The Chromium command line: its own process group, no stdio, nothing on the network, and
/// only the environment it needs.
fn chromium(opts: &Options, profile: &Path) -> Command {
    let mut cmd = Command::new(&opts.path);
    cmd.arg("--remote-debugging-port=0")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
            "--metrics-recording-only",
            "--password-store=basic",
            "--use-mock-keychain",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--window-size={},{}", opts.width, opts.height));
    if opts.headless {
        cmd.arg("--headless=new");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.arg("--no-sandbox");
    }
    crate::hygiene::browser_env(&mut cmd);
    cmd.arg("about:blank").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    cmd
}

/// Wait (up to 20 s) for Chromium to write its DevTools port and path into the profile.
fn devtools_port(guard: &mut Launching, opts: &Options) -> Result<(u16, String), WorkerError> {
    let port_file = guard.profile.join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next().and_then(|p| p.trim().parse::<u16>().ok()), lines.next()) {
                return Ok((port, path.trim().to_string()));
            }
        }
        if let Some(Ok(Some(status))) = guard.child.as_mut().map(Child::try_wait) {
            let hint = if std::env::var_os("DISPLAY").is_none() && !opts.headless {
                " (headed, but there is no DISPLAY: pass --headless)"
            } else {
                ""
            };
            return Err(WorkerError::Unavailable(format!("the browser exited at start ({status}){hint}")));
        }
        if Instant::now() > deadline {
            return Err(WorkerError::Unavailable("the browser did not open its DevTools port within 20 s".into()));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Attach to the first page target that is still there (or a new one).
pub fn reattach(r: &mut Running, width: u32, height: u32) -> Result<(), WorkerError> {
    let targets = r.cdp.call(None, "Target.getTargets", json!({}), CALL)?;
    let target = targets["targetInfos"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str().map(str::to_string));
    let target = match target {
        Some(t) => t,
        None => r.cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), CALL)?["targetId"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    attach(r, &target, width, height)
}

/// Attach to `target` with a flat session, with page events, network and our viewport.
pub fn attach(r: &mut Running, target: &str, width: u32, height: u32) -> Result<(), WorkerError> {
    let attached = r.cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), CALL)?;
    let session = attached["sessionId"]
        .as_str()
        .ok_or_else(|| WorkerError::Browser(CdpError::Protocol("the browser gave no session id".into())))?
        .to_string();
    for (method, params) in [
        ("Page.enable", json!({})),
        ("Network.enable", json!({})),
        (
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        ),
    ] {
        r.cdp.call(Some(&session), method, params, CALL)?;
    }
    r.session = session;
    r.target = target.to_string();
    Ok(())
}
