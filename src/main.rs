//! The `agent-controller` binary: the daemon (`serve`, the default: load the config, run until
//! SIGINT/SIGTERM), the console commands (`console.rs`) and the MCP server (`mcp`).
//!
//! Daemon exit codes: 0 clean stop, 1 runtime failure, 2 usage or configuration error; the
//! console adds 3 stopped, 4 denied, 5 unreachable (see `console::exit`).

use agent_controller::config::Config;
use agent_controller::daemon::Daemon;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
agent-controller — controller daemon for LLM-driven remote automation

USAGE:
    agent-controller [serve] [OPTIONS]      the daemon
    agent-controller COMMAND …              the console (below)

OPTIONS:
    --config FILE        config file (default ./config.yaml; missing = all defaults)
    --host ADDR          bind address (server.host)
    --api-port N         API server port, 0 = any free port (server.api_port)
    --worker-port N      worker server port, 0 = any free port (server.worker_port)
    --insecure           allow a non-loopback bind without tokens
    -h, --help           this text
    -V, --version        version

ENVIRONMENT:
    ANTHROPIC_API_KEY                 api.api_key (api.provider: anthropic)
    OPENAI_API_KEY                    api.api_key (api.provider: openai)
    GEMINI_API_KEY, GOOGLE_API_KEY    api.api_key (api.provider: gemini)
    AGENT_CONTROLLER_TOKEN            server.api_token
    AGENT_CONTROLLER_WORKER_TOKEN     server.worker_token
";

fn main() -> ExitCode {
    let mut args = pico_args::Arguments::from_env();
    if args.contains(["-h", "--help"]) {
        print!("{USAGE}\n{}\n", agent_controller::cli::console::USAGE);
        return ExitCode::SUCCESS;
    }
    if args.contains(["-V", "--version"]) {
        println!("agent-controller {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    match args.subcommand() {
        Ok(None) => {}
        Ok(Some(cmd)) if cmd == "serve" => {}
        Ok(Some(cmd)) if cmd == "mcp" => {
            let api: Option<String> = args.opt_value_from_str("--api").unwrap_or(None);
            let token: Option<String> = args.opt_value_from_str("--token").unwrap_or(None);
            let files: Option<std::path::PathBuf> = args.opt_value_from_str("--files-dir").unwrap_or(None);
            // Per user: /tmp is shared, and another user's folder (or symlink) there must not
            // receive our downloads.
            let files = files.unwrap_or_else(|| {
                // SAFETY: getuid has no preconditions and cannot fail.
                std::env::temp_dir().join(format!("agent-controller-files-{}", unsafe { libc::getuid() }))
            });
            let client = agent_controller::cli::client::ApiClient::new(api, token);
            return ExitCode::from(agent_controller::cli::mcp::serve(client, files));
        }
        Ok(Some(cmd)) if cmd.starts_with('-') => {
            eprintln!("agent-controller: unknown option {cmd:?}\n\n{USAGE}");
            return ExitCode::from(2);
        }
        Ok(Some(cmd)) => return ExitCode::from(agent_controller::cli::console::run(&cmd, args)),
        Err(e) => {
            eprintln!("agent-controller: {e}");
            return ExitCode::from(2);
        }
    }
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("agent-controller: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(msg)) => {
            eprintln!("agent-controller: {msg}");
            ExitCode::from(1)
        }
    }
}

enum Failure {
    Usage(String),
    Runtime(String),
}

fn serve(mut args: pico_args::Arguments) -> Result<(), Failure> {
    let usage = |e: pico_args::Error| Failure::Usage(e.to_string());
    let config_path: Option<PathBuf> = args.opt_value_from_str("--config").map_err(usage)?;
    let host: Option<String> = args.opt_value_from_str("--host").map_err(usage)?;
    let api_port: Option<u16> = args.opt_value_from_str("--api-port").map_err(usage)?;
    let worker_port: Option<u16> = args.opt_value_from_str("--worker-port").map_err(usage)?;
    let insecure = args.contains("--insecure");
    let rest = args.finish();
    if !rest.is_empty() {
        return Err(Failure::Usage(format!("unexpected arguments: {rest:?} (see --help)")));
    }

    let required = config_path.is_some();
    let path = config_path.unwrap_or_else(|| PathBuf::from("config.yaml"));
    let mut config = Config::load(&path, required).map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(h) = host {
        config.server.host = h;
    }
    if let Some(p) = api_port {
        config.server.api_port = p;
    }
    if let Some(p) = worker_port {
        config.server.worker_port = p;
    }
    config.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    config.check_exposure(insecure).map_err(|e| Failure::Usage(e.to_string()))?;
    init_logging(&config).map_err(Failure::Runtime)?;

    // Block the stop signals in every thread (they inherit the mask) so only sigwait sees them.
    let signals = signals::block_stop_signals().map_err(Failure::Runtime)?;
    let agent = agent_controller::agent::llm_agent(&config);
    let daemon = Daemon::start(config, agent).map_err(|e| Failure::Runtime(e.to_string()))?;
    let signal = signals::wait(&signals);
    log::info!("received {signal}; a second one exits at once");
    std::thread::spawn(move || {
        let again = signals::wait(&signals);
        log::warn!("received {again} again: exiting now");
        std::process::exit(1);
    });
    daemon.shutdown();
    Ok(())
}

fn init_logging(config: &Config) -> Result<(), String> {
    use simplelog::{
        ColorChoice, CombinedLogger, ConfigBuilder, LevelFilter, SharedLogger, TermLogger, TerminalMode, WriteLogger,
    };
    let level = config.log_level().unwrap_or(LevelFilter::Info);
    // Under systemd journald stamps each line itself.
    let under_journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let mut builder = ConfigBuilder::new();
    builder.set_target_level(LevelFilter::Off).set_thread_level(LevelFilter::Off);
    // Dependencies may log URLs (a Telegram bot token sits in the path) or body bytes.
    for noisy in ["ureq", "ureq_proto", "rustls", "multipart2", "tiny_http"] {
        builder.add_filter_ignore_str(noisy);
    }
    if under_journald {
        builder.set_time_level(LevelFilter::Off);
    } else {
        let _ = builder.set_time_offset_to_local();
        builder.set_time_format_rfc3339();
    }
    let log_config = builder.build();
    let mut loggers: Vec<Box<dyn SharedLogger>> =
        vec![TermLogger::new(level, log_config.clone(), TerminalMode::Stderr, ColorChoice::Never)];
    if !config.logging.file.is_empty() {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&config.logging.file)
            .map_err(|e| format!("cannot open logging.file {}: {e}", config.logging.file))?;
        loggers.push(WriteLogger::new(level, log_config, file));
    }
    CombinedLogger::init(loggers).map_err(|e| format!("cannot start logging: {e}"))
}

mod signals {
    //! SIGINT/SIGTERM delivered synchronously through `sigwait` on the main thread.

    pub struct Mask(libc::sigset_t);

    pub fn block_stop_signals() -> Result<Mask, String> {
        // SAFETY: sigset_t is plain data initialised by sigemptyset before use; the calls
        // only read and write that local set and this thread's signal mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(format!("cannot block signals: error {rc}"));
            }
            Ok(Mask(set))
        }
    }

    pub fn wait(mask: &Mask) -> &'static str {
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: the set was initialised in block_stop_signals; sig is a valid out pointer.
            let rc = unsafe { libc::sigwait(&mask.0, &mut sig) };
            if rc == 0 {
                return match sig {
                    libc::SIGINT => "SIGINT",
                    libc::SIGTERM => "SIGTERM",
                    _ => "a signal",
                };
            }
        }
    }
}
