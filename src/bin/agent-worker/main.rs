//! `agent-worker`: the program on the target machine. It registers with the controller,
//! long-polls for one command at a time, runs it on the backend for its capability (a browser
//! over CDP, a shell, or the X11 desktop), posts the result, and uploads the files it produced.
//!
//! This file only wires the parts together: the command line (`cli.rs`), the backends chosen
//! by `--capabilities` (`backend.rs` says what a backend is; `browser/`, `shell.rs`,
//! `desktop/` are the ones there are), and the loop that serves the controller (`worker.rs`,
//! over `link.rs`). The worker registers only the capabilities it has a working backend for:
//! "app" needs a display that opens, "browser" a Chromium that starts, and the log says why
//! when they do not.
//! When the controller is away the worker retries with jittered backoff (1 s → 30 s) and says
//! so once. SIGINT/SIGTERM (`signals.rs`) or `{"action":"shutdown"}` stop it cleanly, the
//! browser with it, and no temporary folder is left behind.
//! Exit codes: 0 clean stop, 1 runtime failure, 2 usage error.

mod backend;
mod browser;
mod cdp;
mod cli;
mod desktop;
mod error;
mod frames;
mod heartbeat;
mod hygiene;
mod link;
mod scratch;
mod shell;
mod signals;
mod worker;

use agent_controller::util::cause::chain;
use backend::Backend;
use browser::{Browser, Options};
use cli::{Args, Exit};
use link::Link;
use std::path::PathBuf;
use std::process::ExitCode;

/// The capabilities this worker has a backend for; `backends` builds them.
pub const CAPABILITIES: &[&str] = &["browser", "shell", "app"];

/// The name the download folder is registered under while it exists.
const DOWNLOADS: &str = "downloads";

fn main() -> ExitCode {
    // A panic ends the worker as a signal would, then aborts: its service restarts it, and the
    // controller fails the command it held.
    agent_controller::util::panic::abort_on_panic(signals::stop_everything);
    let mut args = pico_args::Arguments::from_env();
    if args.contains(["-h", "--help"]) {
        print!("{}", cli::USAGE);
        return ExitCode::SUCCESS;
    }
    let outcome = cli::parse(args).and_then(run);
    // Every way out of `run` leaves no temporary folder behind.
    signals::remove_own_dirs();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(exit) => {
            eprintln!("agent-worker: {}", exit.message);
            ExitCode::from(exit.code)
        }
    }
}

/// The log line format: a UTC timestamp, the level, the message, on stderr.
pub fn log(level: &str, msg: &str) {
    eprintln!("{} [{level}] {msg}", agent_controller::util::clock::now_rfc3339());
}

fn run(args: Args) -> Result<(), Exit> {
    let download_dir = download_dir(args.download_dir.clone())?;
    signals::stop_on_signal();
    let backends = backends(&args, download_dir);
    let capabilities: Vec<String> =
        args.capabilities.iter().filter(|c| backends.iter().any(|b| b.capability() == c.as_str())).cloned().collect();
    if capabilities.is_empty() {
        return Err(Exit::failure("no capability is left to offer (the log says why)"));
    }
    if args.token_on_argv {
        log(
            "warn",
            "--token on the command line is visible to every local user in `ps`; use --token-file \
             (mode 0600) or AGENT_CONTROLLER_WORKER_TOKEN",
        );
    }
    let link =
        Link::new(&args.controller, args.token.clone(), args.hostname.clone(), capabilities.clone(), args.tls.clone());
    log(
        "info",
        &format!(
            "agent-worker {} for {} as {} ({})",
            env!("CARGO_PKG_VERSION"),
            args.controller,
            args.hostname,
            capabilities.join(",")
        ),
    );
    worker::Worker::new(link, backends, args.controller).run()
}

/// `--download-dir` (created if needed, never removed), or a private folder removed at exit.
fn download_dir(asked: Option<PathBuf>) -> Result<PathBuf, Exit> {
    match asked {
        Some(d) => {
            std::fs::create_dir_all(&d).map_err(|e| Exit::failure(format!("cannot use {}: {e}", d.display())))?;
            Ok(d)
        }
        // Our own, unguessable, 0700: never a directory someone else prepared in /tmp.
        None => {
            let d = agent_controller::util::private_temp_dir(&format!("agent-worker-{}-", std::process::id()))
                .map_err(|e| Exit::failure(format!("cannot create a download folder: {e}")))?;
            signals::own_dir(DOWNLOADS, d.clone());
            Ok(d)
        }
    }
}

/// One backend per capability asked for (`cli` has checked they are all in `CAPABILITIES`).
fn backends(args: &Args, download_dir: PathBuf) -> Vec<Box<dyn Backend>> {
    let mut list: Vec<Box<dyn Backend>> = Vec::new();
    for cap in &args.capabilities {
        if list.iter().any(|b| b.capability() == cap) {
            continue;
        }
        match cap.as_str() {
            "browser" => {
                // The controller's settings replace these at registration.
                let opts = Options {
                    path: args.browser_path.clone(),
                    headless: true,
                    width: 1280,
                    height: 720,
                    download_dir: download_dir.clone(),
                    profile_dir: args.profile_dir.clone(),
                };
                // Headless for the probe: the display, if one is wanted, is checked at first use.
                let browser = Browser::new(opts, args.headless);
                match browser.probe() {
                    Ok(()) => list.push(Box::new(browser)),
                    Err(e) => log(
                        "error",
                        &format!("browser not offered: {} does not start: {}", args.browser_path.display(), chain(&e)),
                    ),
                }
            }
            "shell" => list.push(Box::new(shell::Shell)),
            "app" => match desktop::Desktop::open(args.display.clone()) {
                Ok(d) => {
                    log("info", &format!("desktop: {}", d.describe()));
                    list.push(Box::new(d));
                }
                Err(why) => {
                    let level = if args.capabilities_given { "warn" } else { "info" };
                    log(level, &format!("no app capability: {}", chain(&why)));
                }
            },
            _ => {}
        }
    }
    list
}
