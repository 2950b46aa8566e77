//! The `agent-controller` binary: the daemon (`serve`, the default: load the config, run until
//! SIGINT/SIGTERM), `help` and `version`. The command line is parsed strictly by `cli::args`
//! first: a mistake is one line naming it and exit 2. Every other command (the console, the MCP
//! server, `completions`, `config check`, `eval`, `probe`) runs `agent-eval` beside this binary
//! with the same arguments: clients are not part of the daemon, whose static binary stays small.
//!
//! Daemon exit codes: 0 clean stop, 1 runtime failure, 2 usage or configuration error; the
//! console adds 3 stopped, 4 denied, 5 unreachable (see `console::exit`).

use agent_controller::cli::args::{self, Parsed};
use agent_controller::cli::console;
use agent_controller::config::Config;
use agent_controller::daemon::Daemon;
use agent_controller::util::cause::chain;
use agent_controller::util::sd_notify;
use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match args::parse(std::env::args_os().skip(1).collect()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agent-controller: {e}");
            return ExitCode::from(console::exit::USAGE);
        }
    };
    let name = parsed.command.name;
    if parsed.version || name == "version" {
        println!("{}", args::version());
        return ExitCode::SUCCESS;
    }
    if parsed.help {
        print!("{}", args::help(parsed.named.then_some(parsed.command)));
        return ExitCode::SUCCESS;
    }
    match name {
        "serve" => {
            agent_controller::util::panic::abort_on_panic(|| {});
            agent_controller::util::malloc::drop_thread_caches();
            run_daemon(&parsed)
        }
        "help" => help(&parsed),
        // The console, the MCP server, completions, `config check`, eval and probe.
        _ => forward_to_client_binary(),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("agent-controller: {message}");
    ExitCode::from(console::exit::USAGE)
}

/// `help [COMMAND]`.
fn help(parsed: &Parsed) -> ExitCode {
    match parsed.free.first() {
        None => print!("{}", args::help(None)),
        Some(name) => match args::find(name) {
            Some(c) => print!("{}", args::help(Some(c))),
            None => return usage(&format!("no command {name:?} (see `agent-controller help`)")),
        },
    }
    ExitCode::SUCCESS
}

/// The client commands live in `agent-eval` beside this binary (they are not part of the
/// daemon, which stays small): run it with the same arguments, in this process.
fn forward_to_client_binary() -> ExitCode {
    use std::os::unix::process::CommandExt;
    let bin = std::env::current_exe().map(|p| p.with_file_name("agent-eval")).unwrap_or_default();
    let err = std::process::Command::new(&bin).args(std::env::args_os().skip(1)).exec();
    usage(&format!("{} did not start ({err}): `make install` puts agent-eval beside agent-controller", bin.display()))
}

fn run_daemon(parsed: &Parsed) -> ExitCode {
    match serve(parsed) {
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

fn serve(parsed: &Parsed) -> Result<(), Failure> {
    let usage = |e: args::UsageError| Failure::Usage(e.0);
    let api_port: Option<u16> = parsed.parse("--api-port").map_err(usage)?;
    let worker_port: Option<u16> = parsed.parse("--worker-port").map_err(usage)?;
    let (host, insecure) = (parsed.value("--host"), parsed.flag("--insecure"));

    let (_, loaded) = Config::load_named(parsed.value("--config").map(PathBuf::from));
    let mut config = loaded.map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(h) = host {
        config.server.host = h.to_string();
    }
    if let Some(p) = api_port {
        config.server.api_port = p;
    }
    if let Some(p) = worker_port {
        config.server.worker_port = p;
    }
    config.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    config.check_exposure(insecure).map_err(|e| Failure::Usage(e.to_string()))?;
    init_logging(&config).map_err(|e| Failure::Runtime(chain(&e)))?;

    // Block the stop signals in every thread (they inherit the mask) so only sigwait sees them.
    let signals = signals::block_stop_signals().map_err(|e| Failure::Runtime(e.to_string()))?;
    let agent = agent_controller::agent::llm_agent(&config);
    let scheme = config.scheme();
    let daemon = Daemon::start(config, agent).map_err(|e| Failure::Runtime(e.to_string()))?;
    let (api, worker) = (daemon.api_addr(), daemon.worker_addr());
    sd_notify::notify(&format!("READY=1\nSTATUS=API on {scheme}://{api}, workers on {scheme}://{worker}"));
    sd_notify::spawn_watchdog();
    let signal = signals::wait(&signals);
    sd_notify::notify("STOPPING=1\nSTATUS=shutting down");
    log::info!("received {signal}; a second one exits at once");
    std::thread::spawn(move || {
        let again = signals::wait(&signals);
        log::warn!("received {again} again: exiting now");
        std::process::exit(1);
    });
    daemon.shutdown();
    Ok(())
}

/// Why logging could not be set up.
#[derive(Debug)]
enum LoggingError {
    /// `logging.file` could not be opened for appending (the path as configured).
    File(String, std::io::Error),
    /// A logger was already installed.
    Init(log::SetLoggerError),
}

impl fmt::Display for LoggingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoggingError::File(path, e) => write!(f, "cannot open logging.file {path}: {e}"),
            LoggingError::Init(e) => write!(f, "cannot start logging: {e}"),
        }
    }
}

impl std::error::Error for LoggingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoggingError::File(_, e) => Some(e),
            LoggingError::Init(e) => Some(e),
        }
    }
}

fn init_logging(config: &Config) -> Result<(), LoggingError> {
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
            .map_err(|e| LoggingError::File(config.logging.file.clone(), e))?;
        loggers.push(WriteLogger::new(level, log_config, file));
    }
    CombinedLogger::init(loggers).map_err(LoggingError::Init)
}

mod signals {
    //! SIGINT/SIGTERM delivered synchronously through `sigwait` on the main thread.

    pub struct Mask(libc::sigset_t);

    /// `pthread_sigmask` failed with this error number.
    #[derive(Debug)]
    pub struct BlockError(i32);

    impl std::fmt::Display for BlockError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot block signals: error {}", self.0)
        }
    }

    pub fn block_stop_signals() -> Result<Mask, BlockError> {
        // SAFETY: sigset_t is plain data initialised by sigemptyset before use; the calls
        // only read and write that local set and this thread's signal mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(BlockError(rc));
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
