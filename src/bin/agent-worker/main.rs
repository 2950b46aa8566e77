//! `agent-worker`: the program on the target machine. It registers with the controller,
//! long-polls for one command at a time, runs it (browser over CDP, or shell), posts the
//! result, and uploads the files it produced.
//!
//! When the controller is away it retries with jittered backoff (1 s → 30 s) and says so once.
//! SIGINT/SIGTERM or `{"action":"shutdown"}` stop it cleanly (the browser goes with it).
//! Exit codes: 0 clean stop, 1 runtime failure, 2 usage error.

mod browser;
mod cdp;
mod link;
mod shell;

use agent_controller::protocol::Command;
use browser::{Browser, Options, Uploader};
use link::{Backoff, Link, LinkError};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
agent-worker — runs commands from an agent-controller on this machine

USAGE:
    agent-worker --controller http://HOST:5901 [OPTIONS]

OPTIONS:
    --controller URL       the controller's worker server (or AGENT_WORKER_CONTROLLER)
    --token TOKEN          worker token (or AGENT_CONTROLLER_WORKER_TOKEN)
    --capabilities LIST    browser,shell (default: both)
    --browser PATH         Chromium binary (default /usr/bin/chromium)
    --headless | --headed  browser mode (default: what the controller says)
    --download-dir DIR     where downloads wait before upload (default: a temp dir)
    --hostname NAME        name to register under (default: this host's name)
    -h, --help             this text
";

fn main() -> ExitCode {
    let mut args = pico_args::Arguments::from_env();
    if args.contains(["-h", "--help"]) {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let outcome = run(args);
    // Every way out of `run` leaves no temporary folder behind.
    signals::remove_own_dirs();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("agent-worker: {msg}");
            ExitCode::from(code)
        }
    }
}

fn log(level: &str, msg: &str) {
    eprintln!("{} [{level}] {msg}", agent_controller::clock::Utc::now().rfc3339());
}

struct Upload<'a> {
    link: &'a Link,
    session_id: String,
    command_id: String,
}

impl Uploader for Upload<'_> {
    fn upload(&self, filename: &str, path: &Path) -> Result<Value, String> {
        let r = self.link.upload(&self.session_id, &self.command_id, filename, path)?;
        Ok(serde_json::json!({"filename": r.stored_as, "size_kb": r.size_kb}))
    }
}

fn run(mut args: pico_args::Arguments) -> Result<(), (u8, String)> {
    let usage = |e: pico_args::Error| (2, e.to_string());
    let controller: Option<String> = args.opt_value_from_str("--controller").map_err(usage)?;
    let token: Option<String> = args.opt_value_from_str("--token").map_err(usage)?;
    let caps: Option<String> = args.opt_value_from_str("--capabilities").map_err(usage)?;
    let browser_path: Option<PathBuf> = args.opt_value_from_str("--browser").map_err(usage)?;
    let download_dir: Option<PathBuf> = args.opt_value_from_str("--download-dir").map_err(usage)?;
    let hostname: Option<String> = args.opt_value_from_str("--hostname").map_err(usage)?;
    let headless = args.contains("--headless");
    let headed = args.contains("--headed");
    let rest = args.finish();
    if !rest.is_empty() {
        return Err((2, format!("unexpected arguments {rest:?} (see --help)")));
    }
    let controller = controller
        .or_else(|| std::env::var("AGENT_WORKER_CONTROLLER").ok())
        .ok_or((2, "--controller URL is required (e.g. http://127.0.0.1:5901)".to_string()))?;
    if !(controller.starts_with("http://") || controller.starts_with("https://")) {
        return Err((2, format!("--controller must be an http(s) URL, got {controller:?}")));
    }
    let token = token.or_else(|| std::env::var("AGENT_CONTROLLER_WORKER_TOKEN").ok()).filter(|t| !t.is_empty());
    let capabilities: Vec<String> = caps
        .unwrap_or_else(|| "browser,shell".into())
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty())
        .collect();
    for c in &capabilities {
        if !matches!(c.as_str(), "browser" | "shell") {
            return Err((2, format!("capability {c:?} is not supported by this worker (browser, shell)")));
        }
    }
    let hostname = hostname.unwrap_or_else(host_name);
    let download_dir = match download_dir {
        Some(d) => {
            std::fs::create_dir_all(&d).map_err(|e| (1, format!("cannot use {}: {e}", d.display())))?;
            d
        }
        // Our own, unguessable, 0700: never a directory someone else prepared in /tmp.
        None => {
            let d = browser::private_dir(&format!("agent-worker-{}-", std::process::id()))
                .map_err(|e| (1, format!("cannot create a download folder: {e}")))?;
            *signals::OWN_DOWNLOAD_DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(d.clone());
            d
        }
    };

    signals::stop_on_signal();
    let mut link = Link::new(&controller, token, hostname.clone(), capabilities.clone());
    let mut browser = Browser::new(Options {
        path: browser_path.unwrap_or_else(|| PathBuf::from("/usr/bin/chromium")),
        headless: true,
        width: 1280,
        height: 720,
        download_dir,
    });
    let mut backoff = Backoff::new();
    log(
        "info",
        &format!(
            "agent-worker {} for {controller} as {hostname} ({})",
            env!("CARGO_PKG_VERSION"),
            capabilities.join(",")
        ),
    );
    loop {
        if link.worker_id.is_none() {
            match link.register() {
                Ok(reg) => {
                    if backoff.succeed() {
                        log("info", "the controller is reachable again");
                    }
                    let has_display =
                        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
                    browser.opts.headless = if headed {
                        false
                    } else if headless || !has_display {
                        // A headed browser needs a display; without one, headless is the only option.
                        true
                    } else {
                        reg.config.browser.headless
                    };
                    browser.opts.width = reg.config.browser.viewport_width;
                    browser.opts.height = reg.config.browser.viewport_height;
                    log("info", &format!("registered as {}", reg.worker_id));
                }
                Err(LinkError::Refused(401, msg)) => {
                    return Err((1, format!("the controller refused the worker token ({msg})")));
                }
                Err(e) => {
                    wait_after(&mut backoff, &controller, &e);
                    continue;
                }
            }
        }
        let cmd = match link.poll() {
            Ok(cmd) => {
                if backoff.succeed() {
                    log("info", "the controller is reachable again");
                }
                cmd
            }
            Err(LinkError::Unknown) => {
                log("info", "the controller does not know this worker (it restarted?); registering again");
                link.worker_id = None;
                continue;
            }
            Err(e) => {
                wait_after(&mut backoff, &controller, &e);
                continue;
            }
        };
        match cmd["action"].as_str() {
            Some("wait") | None => continue,
            Some("shutdown") => {
                log("info", "the controller asked this worker to shut down");
                browser.shutdown();
                return Ok(());
            }
            Some(_) => {
                let cmd: Command = match serde_json::from_value(cmd) {
                    Ok(c) => c,
                    Err(e) => {
                        log("error", &format!("the controller sent a command this worker cannot read: {e}"));
                        continue;
                    }
                };
                let (id, action, params) = (cmd.id.clone(), cmd.action.as_str(), &cmd.params);
                let up = Upload { link: &link, session_id: cmd.session_id.clone(), command_id: id.clone() };
                let started = std::time::Instant::now();
                let outcome = if action.starts_with("browser_") {
                    if capabilities.iter().any(|c| c == "browser") {
                        // A little before the controller gives up, so the result still arrives.
                        let deadline = Some(cmd.timeout_s).filter(|&t| t > 0).and_then(|t| {
                            started.checked_add(
                                std::time::Duration::from_secs(t).saturating_sub(std::time::Duration::from_secs(2)),
                            )
                        });
                        browser.execute(action, params, &up, deadline)
                    } else {
                        Err("this worker was started without the browser capability".into())
                    }
                } else if capabilities.iter().any(|c| c == "shell") {
                    shell::execute(action, params)
                } else {
                    Err(format!("this worker cannot run `{action}`"))
                };
                log(
                    "info",
                    &format!(
                        "{id} {action}: {} in {} ms",
                        if outcome.is_ok() { "ok" } else { "failed" },
                        started.elapsed().as_millis()
                    ),
                );
                // The result matters: retry a few times if the controller blips (not on 4xx:
                // those will not change).
                let mut outcome = outcome;
                for attempt in 0..5 {
                    match link.post_result(&id, &outcome) {
                        Ok(()) => break,
                        Err(LinkError::Refused(413, _)) if outcome.is_ok() => {
                            outcome = Err("the result was too large to send to the controller; ask for less (a selector, fewer rows)".into());
                        }
                        Err(e @ (LinkError::Refused(..) | LinkError::Unknown)) => {
                            log("error", &format!("the result of {id} was refused: {e}"));
                            break;
                        }
                        Err(e) if attempt < 4 => {
                            log("warn", &format!("posting the result of {id} failed ({e}); retrying"));
                            std::thread::sleep(std::time::Duration::from_secs(1 << attempt));
                        }
                        Err(e) => log("error", &format!("the result of {id} is lost: {e}")),
                    }
                }
            }
        }
    }
}

fn wait_after(backoff: &mut Backoff, controller: &str, e: &LinkError) {
    let (delay, first) = backoff.fail();
    if first {
        log("warn", &format!("cannot reach the controller at {controller} ({e}); retrying with backoff up to 30 s"));
    }
    std::thread::sleep(delay);
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "worker".into())
}

mod signals {
    //! SIGINT/SIGTERM: stop the browser's process group and exit 0 at once (a long poll may
    //! be in flight; nothing is lost, the controller fails the command when it sees us gone).

    use std::sync::atomic::Ordering;

    /// The download folder this process created (removed at exit; a `--download-dir` is not).
    pub static OWN_DOWNLOAD_DIR: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

    pub fn remove_own_dirs() {
        if let Some(d) = OWN_DOWNLOAD_DIR.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    pub fn stop_on_signal() {
        // SAFETY: a zeroed sigset is initialised by sigemptyset before use; the mask is set for
        // this thread before any other starts, so every thread inherits it.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            set
        };
        std::thread::spawn(move || {
            let mut sig = 0;
            // SAFETY: `set` was initialised above.
            unsafe { libc::sigwait(&set, &mut sig) };

            // `exit` runs no destructors: take the browser, a running shell command and our
            // temporary folders down by hand.
            for pgid in
                [crate::browser::BROWSER_PGID.load(Ordering::Acquire), crate::shell::SHELL_PGID.load(Ordering::Acquire)]
            {
                if pgid > 0 {
                    // SAFETY: our own children's process groups.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                }
            }
            let profile = crate::browser::PROFILE.lock().unwrap_or_else(|p| p.into_inner()).take();
            let downloads = OWN_DOWNLOAD_DIR.lock().unwrap_or_else(|p| p.into_inner()).take();
            for dir in [profile, downloads].into_iter().flatten() {
                let _ = std::fs::remove_dir_all(dir);
            }
            eprintln!("{} [info] stopping (signal {sig})", agent_controller::clock::Utc::now().rfc3339());
            std::process::exit(0);
        });
    }
}
