//! Starting Chromium, giving each session a browser context of its own, attaching to a tab,
//! and taking it all down again.
//!
//! Chromium runs in its own process group with a fresh private profile, the flags that keep it
//! off the network, and DevTools over `--remote-debugging-pipe` (our pipes on its fds 3 and
//! 4): no port, so no other local process can drive it or read its cookies. Its sandbox stays
//! on, except for root in a container, where it cannot work; the log says so once. The group
//! and the profile are registered with `signals` from the moment they exist, and whatever owns
//! them (`Launching` while starting, `Running` after) kills the whole group and removes the
//! profile when dropped, so no failure path leaves a browser or a profile behind; a hung
//! browser gets SIGKILL at once. Each session works in its own browser context (cookies,
//! storage and cache in memory, apart from every other session's), disposed when the next
//! session begins. A session in a kept profile (`profiles.rs`) gets a browser on that folder
//! instead (the gate as proxy flags), closed cleanly; the folder stays. Downloads are denied
//! to the browser: files come only through `browser_download`.

use super::Options;
use crate::cdp::{Cdp, CdpError, HUNG};
use crate::error::WorkerError;
use crate::signals;
use serde_json::{Value, json};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one DevTools call may take.
pub const CALL: Duration = Duration::from_secs(30);
/// How long a cold Chromium may take to answer its first command.
const STARTUP: Duration = Duration::from_secs(20);
/// The names the browser's process group and profile are registered under.
const GROUP: &str = "browser";
const PROFILE: &str = "browser profile";

/// A kept profile (`profiles.rs`) a browser starts in: its folder, and the allow-list's gate
/// as Chromium's own proxy flags (a profile's own context takes no proxy of its own).
pub struct Kept {
    pub name: String,
    pub dir: PathBuf,
    pub proxy: Option<(String, String)>,
}

impl Kept {
    /// What a running browser must match to serve a session in this profile.
    pub fn key(&self) -> String {
        format!("{}|{:?}", self.name, self.proxy)
    }
}

/// A started, attached browser.
pub struct Running {
    child: Child,
    profile: PathBuf,
    /// Started in a kept profile (its `Kept::key`): the folder stays, and the browser is
    /// closed cleanly so that it writes its cookies out.
    pub kept: Option<String>,
    pub cdp: Cdp,
    /// The flat DevTools session of the attached page, and that page's target id.
    pub session: String,
    pub target: String,
    /// The browser context of the current agent session, and that session's id.
    pub context: Option<String>,
    pub context_session: String,
    /// The attached page's isolated world where the helpers run (`page.rs`), once made, and
    /// the mark each world gets, which the main world of a page cannot know.
    pub world: Option<u64>,
    pub world_mark: String,
    /// Stopped answering: no grace period when it is taken down.
    hung: bool,
}

impl Running {
    /// Whether the Chromium process is still there.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Whether the browser process answers a trivial command within `HUNG`.
    pub fn answers(&mut self) -> bool {
        self.cdp.call(None, "Browser.getVersion", json!({}), HUNG).is_ok()
    }

    /// The browser stopped answering: when dropped, kill it without waiting for it.
    pub fn mark_hung(&mut self) {
        self.hung = true;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        if self.kept.is_some() && !self.hung {
            // Its own shutdown writes the profile out (cookies, storage); a signal might not.
            let _ = self.cdp.call(None, "Browser.close", json!({}), Duration::from_secs(3));
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if !self.hung {
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
        }
        // SAFETY: as above; SIGKILL also ends a stopped process.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        forget(&self.profile, self.kept.is_some());
    }
}

/// A Chromium being started: killed (whole group) and its profile removed unless handed over
/// (a kept profile stays).
struct Launching {
    child: Option<Child>,
    profile: PathBuf,
    keep: bool,
}

impl Drop for Launching {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: our own child's process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            forget(&self.profile, self.keep);
        }
    }
}

/// The browser is gone: unregister it and remove its profile (unless it is a kept one).
fn forget(profile: &Path, keep: bool) {
    signals::disown_group(GROUP);
    if !keep {
        signals::disown_dir(PROFILE);
        let _ = std::fs::remove_dir_all(profile);
    }
}

/// A pipe whose ends close on exec (the browser gets its ends by `dup2`, nothing else does).
fn pipe() -> Result<(OwnedFd, OwnedFd), WorkerError> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(WorkerError::io("cannot create the DevTools pipe", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// In the child before exec: `commands` becomes fd 3 and `answers` fd 4 (Chromium's pipe
/// protocol). Both go above 4 first, so neither is overwritten by the other's `dup2`.
fn hand_over(commands: i32, answers: i32) -> std::io::Result<()> {
    // SAFETY: fcntl, dup2 and close are async-signal-safe and touch only descriptors.
    unsafe {
        let (a, b) = (libc::fcntl(commands, libc::F_DUPFD, 5), libc::fcntl(answers, libc::F_DUPFD, 5));
        if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::close(a);
        libc::close(b);
    }
    Ok(())
}

/// Start Chromium (in a fresh private profile, or in `kept`) and check that it answers on its
/// DevTools pipe.
pub fn launch(opts: &Options, kept: Option<&Kept>) -> Result<Running, WorkerError> {
    let profile = match kept {
        Some(k) => k.dir.clone(),
        None => agent_controller::util::private_temp_dir(&format!("agent-worker-profile-{}-", std::process::id()))
            .map_err(|e| WorkerError::io("cannot create a browser profile", e))?,
    };
    let keep = kept.is_some();
    let remove = |profile: &Path| {
        if !keep {
            let _ = std::fs::remove_dir_all(profile);
        }
    };
    let pipes = pipe().and_then(|commands| Ok((commands, pipe()?)));
    let ((commands_read, commands_write), (answers_read, answers_write)) = match pipes {
        Ok(p) => p,
        Err(e) => {
            remove(&profile);
            return Err(e);
        }
    };
    let mut cmd = chromium(opts, &profile, kept.and_then(|k| k.proxy.as_ref()));
    let (theirs_in, theirs_out) = (commands_read.as_raw_fd(), answers_write.as_raw_fd());
    // SAFETY: `hand_over` only calls async-signal-safe functions.
    unsafe { cmd.pre_exec(move || hand_over(theirs_in, theirs_out)) };
    let spawned = cmd.spawn();
    // Only the browser keeps its ends: its exit is then our end of file.
    drop((commands_read, answers_write));
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            remove(&profile);
            return Err(WorkerError::io(format!("cannot start the browser {}", opts.path.display()), e));
        }
    };
    signals::own_group(GROUP, child.id() as i32);
    if !keep {
        signals::own_dir(PROFILE, profile.clone());
    }
    // From here on the guard kills the process group and removes the profile on any failure.
    let mut guard = Launching { child: Some(child), profile: profile.clone(), keep };
    let to_browser = File::from(commands_write);
    // SAFETY: F_SETFL on a descriptor we own; writes then never block past their deadline.
    unsafe { libc::fcntl(to_browser.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut cdp = Cdp::over_pipes(to_browser, File::from(answers_read));
    // The first answer says the browser is up. Downloads go through browser_download (with
    // cookies, uploaded to the controller); nothing is saved behind the worker's back.
    if let Err(e) = cdp.call(None, "Browser.setDownloadBehavior", json!({"behavior": "deny"}), STARTUP) {
        return Err(not_started(&mut guard, opts, e));
    }
    let child =
        guard.child.take().ok_or_else(|| WorkerError::Unavailable("internal: the browser process is gone".into()))?;
    Ok(Running {
        child,
        profile,
        kept: kept.map(Kept::key),
        cdp,
        session: String::new(),
        target: String::new(),
        context: None,
        context_session: String::new(),
        world: None,
        world_mark: format!("{:016x}", agent_controller::util::clock::random_u64()),
        hung: false,
    })
}

/// Why a starting browser never answered: it exited (and how), or it stayed silent.
fn not_started(guard: &mut Launching, opts: &Options, e: CdpError) -> WorkerError {
    // Its pipe closes a moment before its exit status can be collected.
    let deadline = Instant::now() + Duration::from_secs(1);
    while let Some(Ok(None)) = guard.child.as_mut().map(Child::try_wait) {
        if Instant::now() > deadline {
            return WorkerError::Unavailable(format!("the browser did not answer on its DevTools pipe: {e}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = guard.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
    let status = status.map_or_else(|| "status unknown".to_string(), |s| s.to_string());
    let hint = if std::env::var_os("DISPLAY").is_none() && !opts.headless {
        " (headed, but there is no DISPLAY: pass --headless)"
    } else if is_root() && container_sign().is_none() {
        " (the worker runs as root outside a container, where Chromium's sandbox is kept and Chromium \
         refuses root: run the worker as an ordinary user)"
    } else {
        ""
    };
    WorkerError::Unavailable(format!("the browser exited at start ({status}){hint}"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// What shows that this process runs in a container, if anything does.
fn container_sign() -> Option<String> {
    if let Some(f) = ["/.dockerenv", "/run/.containerenv"].into_iter().find(|f| Path::new(f).exists()) {
        return Some(format!("{f} exists"));
    }
    if let Some(v) = std::env::var_os("container").filter(|v| !v.is_empty()) {
        return Some(format!("container={}", v.to_string_lossy()));
    }
    let cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    ["docker", "kubepods", "containerd", "libpod", "lxc"]
        .into_iter()
        .find(|w| cgroup.contains(w))
        .map(|w| format!("/proc/1/cgroup names {w}"))
}

/// Why Chromium runs without its sandbox, or None when it keeps it: only root in a container,
/// where the sandbox cannot be set up (no user namespaces, no setuid helper) and Chromium
/// refuses to start as root with it.
fn sandbox_off(root: bool, container: Option<String>) -> Option<String> {
    let container = container.filter(|_| root)?;
    Some(format!(
        "the worker runs as root in a container ({container}), where Chromium's sandbox cannot work: \
         Chromium runs with --no-sandbox; run the worker as an ordinary user to keep the sandbox"
    ))
}

/// The Chromium command line: its own process group, no stdio, nothing on the network, no
/// WebRTC over UDP, and only the environment it needs.
fn chromium(opts: &Options, profile: &Path, proxy: Option<&(String, String)>) -> Command {
    let mut cmd = Command::new(&opts.path);
    cmd.arg("--remote-debugging-pipe")
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
            // WebRTC's UDP (STUN, TURN, media) goes around a context's proxy, and so around the
            // allow-list's gate: none unless proxied, and the gate forwards nothing.
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        ])
        .arg(format!("--window-size={},{}", opts.width, opts.height));
    if opts.headless {
        cmd.arg("--headless=new");
    }
    if let Some((server, bypass)) = proxy {
        cmd.arg(format!("--proxy-server={server}")).arg(format!("--proxy-bypass-list={bypass}"));
    }
    if let Some(why) = sandbox_off(is_root(), container_sign()) {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| crate::log("warn", &format!("browser: {why}")));
        cmd.arg("--no-sandbox");
    }
    crate::hygiene::browser_env(&mut cmd);
    cmd.arg("about:blank").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    cmd
}

/// A fresh browser context for the session `session_id`, with one tab attached; the previous
/// session's context is disposed of, with its tabs, cookies and storage. `proxy`: the
/// allow-list's gate and the hosts that bypass it (`gate.rs`).
pub fn enter_context(
    r: &mut Running,
    session_id: &str,
    (width, height): (u32, u32),
    proxy: Option<(String, String)>,
) -> Result<(), WorkerError> {
    let params = match proxy {
        Some((server, bypass)) => json!({"proxyServer": server, "proxyBypassList": bypass}),
        None => json!({}),
    };
    let created = r.cdp.call(None, "Target.createBrowserContext", params, CALL)?;
    let context = created["browserContextId"]
        .as_str()
        .ok_or_else(|| WorkerError::Browser(CdpError::Protocol("the browser gave no context id".into())))?
        .to_string();
    let old = r.context.replace(context.clone());
    r.context_session = session_id.to_string();
    let deny = json!({"behavior": "deny", "browserContextId": context});
    r.cdp.call(None, "Browser.setDownloadBehavior", deny, CALL)?;
    let target = new_tab(r)?;
    attach(r, &target, width, height)?;
    if let Some(old) = old {
        r.cdp.call(None, "Target.disposeBrowserContext", json!({"browserContextId": old}), CALL)?;
    }
    Ok(())
}

/// A session in a kept profile: its own context (the profile's), a new tab attached, the
/// tabs an earlier session left closed.
pub fn enter_kept(r: &mut Running, session_id: &str, (width, height): (u32, u32)) -> Result<(), WorkerError> {
    let old: Vec<String> = pages(r)?.iter().filter_map(|t| t["targetId"].as_str().map(str::to_string)).collect();
    r.context = None;
    r.context_session = session_id.to_string();
    let target = new_tab(r)?;
    attach(r, &target, width, height)?;
    for t in old {
        let _ = r.cdp.call(None, "Target.closeTarget", json!({"targetId": t}), CALL);
    }
    Ok(())
}

/// A new blank tab in the session's context.
fn new_tab(r: &mut Running) -> Result<String, WorkerError> {
    let mut params = json!({"url": "about:blank"});
    if let Some(c) = &r.context {
        params["browserContextId"] = json!(c);
    }
    let created = r.cdp.call(None, "Target.createTarget", params, CALL)?;
    Ok(created["targetId"].as_str().unwrap_or_default().to_string())
}

/// The session's tabs (page targets of its context), in the browser's order.
pub fn pages(r: &mut Running) -> Result<Vec<Value>, WorkerError> {
    let targets = r.cdp.call(None, "Target.getTargets", json!({}), CALL)?;
    let context = r.context.clone().map(Value::String).unwrap_or(Value::Null);
    Ok(targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "page" && (context.is_null() || t["browserContextId"] == context))
        .cloned()
        .collect())
}

/// Attach to the session's first tab that is still there (or a new one).
pub fn reattach(r: &mut Running, width: u32, height: u32) -> Result<(), WorkerError> {
    let target = pages(r)?.iter().find_map(|t| t["targetId"].as_str().map(str::to_string));
    let target = match target {
        Some(t) => t,
        None => new_tab(r)?,
    };
    attach(r, &target, width, height)
}

/// Records the elements the page gives a click listener, in the page's own world (see the file).
const LISTENERS_JS: &str = include_str!("../listeners.js");

/// Attach to `target` with a flat session, with page events, network, our viewport and the
/// listener record.
pub fn attach(r: &mut Running, target: &str, width: u32, height: u32) -> Result<(), WorkerError> {
    let attached = r.cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), CALL)?;
    let session = attached["sessionId"]
        .as_str()
        .ok_or_else(|| WorkerError::Browser(CdpError::Protocol("the browser gave no session id".into())))?
        .to_string();
    for (method, params) in [
        ("Page.enable", json!({})),
        ("Page.addScriptToEvaluateOnNewDocument", json!({"source": LISTENERS_JS, "runImmediately": true})),
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
    r.world = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_is_off_only_for_root_in_a_container() {
        let docker = || Some("/.dockerenv exists".to_string());
        let why = sandbox_off(true, docker()).unwrap_or_default();
        assert!(why.contains("root in a container (/.dockerenv exists)") && why.contains("--no-sandbox"), "{why}");
        assert_eq!(sandbox_off(true, None), None, "root outside a container keeps the sandbox");
        assert_eq!(sandbox_off(false, docker()), None);
        assert_eq!(sandbox_off(false, None), None);
    }
}
