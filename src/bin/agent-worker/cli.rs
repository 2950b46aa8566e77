//! The command line: options, environment fallbacks, and their checks.
//!
//! Everything the user can get wrong on the command line is found here, before the worker
//! touches the network or the disk, and ends the program with exit code 2 and a message that
//! says what to write instead. Options win over the environment variables they stand for.

use agent_controller::util::cause::chain;
use std::path::PathBuf;

pub const USAGE: &str = "\
agent-worker — runs commands from an agent-controller on this machine

USAGE:
    agent-worker --controller http://HOST:5901 [OPTIONS]

OPTIONS:
    --controller URL       the controller's worker server (or AGENT_WORKER_CONTROLLER)
    --token-file FILE      worker token from a file only you can read (mode 0600)
    --token TOKEN          worker token (visible in `ps`: prefer --token-file or AGENT_CONTROLLER_WORKER_TOKEN)
    --ca-file FILE         trust an https controller only if this CA signed it (or AGENT_WORKER_CA_FILE)
    --capabilities LIST    browser,shell,app (default: browser,shell, plus app when a display opens)
    --display NAME         X display for the app capability, e.g. :0 (default: $DISPLAY)
    --browser PATH         Chromium binary (default /usr/bin/chromium)
    --headless | --headed  browser mode (default: what the controller says)
    --download-dir DIR     where downloads wait before upload (default: a temp dir)
    --profile-dir DIR      where named browser profiles are kept, each in a 0700 folder
                           (default: $XDG_DATA_HOME or ~/.local/share, then agent-worker/profiles)
    --hostname NAME        name to register under (default: this host's name)
    -h, --help             this text
";

/// Asked for when `--capabilities` is not given; "app" only if the display opens.
const DEFAULT_CAPABILITIES: &str = "browser,shell,app";

/// Why the program ends early: the exit code (2 usage, 1 runtime) and what to tell the user.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

impl Exit {
    pub fn usage(message: impl Into<String>) -> Exit {
        Exit { code: 2, message: message.into() }
    }

    pub fn failure(message: impl Into<String>) -> Exit {
        Exit { code: 1, message: message.into() }
    }
}

/// The checked command line.
pub struct Args {
    pub controller: String,
    pub token: Option<String>,
    /// The token came from `--token` (warned about: argv is visible in `ps`).
    pub token_on_argv: bool,
    /// As given (lower-cased, in order), or the default. This list is sent at registration,
    /// less "app" when the display cannot be opened.
    pub capabilities: Vec<String>,
    /// `--capabilities` was given (a display that does not open is then a warning).
    pub capabilities_given: bool,
    /// `--display`; `$DISPLAY` when absent.
    pub display: Option<String>,
    pub browser_path: PathBuf,
    /// `--headless` (true) or `--headed` (false; it wins if both are given).
    pub headless: Option<bool>,
    pub download_dir: Option<PathBuf>,
    /// Where named browser profiles live (`options.browser_profile`).
    pub profile_dir: PathBuf,
    pub hostname: String,
    /// Web roots, or the private CA of `--ca-file`.
    pub tls: ureq::tls::TlsConfig,
}

pub fn parse(mut args: pico_args::Arguments) -> Result<Args, Exit> {
    let usage = |e: pico_args::Error| Exit::usage(e.to_string());
    let controller: Option<String> = args.opt_value_from_str("--controller").map_err(usage)?;
    let token: Option<String> = args.opt_value_from_str("--token").map_err(usage)?;
    let token_file: Option<PathBuf> = args.opt_value_from_str("--token-file").map_err(usage)?;
    let caps: Option<String> = args.opt_value_from_str("--capabilities").map_err(usage)?;
    let browser_path: Option<PathBuf> = args.opt_value_from_str("--browser").map_err(usage)?;
    let download_dir: Option<PathBuf> = args.opt_value_from_str("--download-dir").map_err(usage)?;
    let profile_dir: Option<PathBuf> = args.opt_value_from_str("--profile-dir").map_err(usage)?;
    let hostname: Option<String> = args.opt_value_from_str("--hostname").map_err(usage)?;
    let display: Option<String> = args.opt_value_from_str("--display").map_err(usage)?;
    let ca_file: Option<PathBuf> = args.opt_value_from_str("--ca-file").map_err(usage)?;
    let headless = args.contains("--headless");
    let headed = args.contains("--headed");
    let rest = args.finish();
    if !rest.is_empty() {
        return Err(Exit::usage(format!("unexpected arguments {rest:?} (see --help)")));
    }
    let controller = controller
        .or_else(|| std::env::var("AGENT_WORKER_CONTROLLER").ok())
        .ok_or_else(|| Exit::usage("--controller URL is required (e.g. http://127.0.0.1:5901)"))?;
    if !(controller.starts_with("http://") || controller.starts_with("https://")) {
        return Err(Exit::usage(format!("--controller must be an http(s) URL, got {controller:?}")));
    }
    let ca_file = ca_file.or_else(|| std::env::var_os("AGENT_WORKER_CA_FILE").map(PathBuf::from));
    let tls = agent_controller::util::tls::client_tls(ca_file.as_deref().filter(|p| !p.as_os_str().is_empty()))
        .map_err(|e| Exit::usage(e.to_string()))?;
    let token_on_argv = token.as_deref().is_some_and(|t| !t.is_empty());
    let from_file = match &token_file {
        Some(path) => Some(crate::hygiene::read_token_file(path).map_err(|e| Exit::usage(chain(&e)))?),
        None => None,
    };
    let token =
        token.or(from_file).or_else(|| std::env::var("AGENT_CONTROLLER_WORKER_TOKEN").ok()).filter(|t| !t.is_empty());
    Ok(Args {
        controller,
        token,
        token_on_argv,
        capabilities_given: caps.is_some(),
        capabilities: capabilities(caps.as_deref().unwrap_or(DEFAULT_CAPABILITIES))?,
        display,
        browser_path: browser_path.unwrap_or_else(|| PathBuf::from("/usr/bin/chromium")),
        headless: if headed { Some(false) } else { headless.then_some(true) },
        download_dir,
        profile_dir: profile_dir.unwrap_or_else(default_profile_dir),
        hostname: hostname.unwrap_or_else(host_name),
        tls,
    })
}

/// `browser, Shell` → `["browser", "shell"]`, each one a capability this worker has a backend for.
fn capabilities(list: &str) -> Result<Vec<String>, Exit> {
    let caps: Vec<String> = list.split(',').map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()).collect();
    if let Some(c) = caps.iter().find(|c| !crate::CAPABILITIES.contains(&c.as_str())) {
        return Err(Exit::usage(format!(
            "capability {c:?} is not supported by this worker ({})",
            crate::CAPABILITIES.join(", ")
        )));
    }
    Ok(caps)
}

/// `$XDG_DATA_HOME/agent-worker/profiles`, else `~/.local/share/agent-worker/profiles`.
fn default_profile_dir() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local/share")));
    data.unwrap_or_else(|| PathBuf::from(".")).join("agent-worker").join("profiles")
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "worker".into())
}
