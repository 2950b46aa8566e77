//! agent-eval: every `agent-controller` command but the daemon's (`serve`, `help`, `version`):
//! the console, the MCP server (`mcp`), `completions`, `config check`, `skill`, and `eval` and `probe`,
//! which measure models and ask endpoints. `agent-controller` runs this binary with its
//! arguments; none of these is part of the daemon, and living here keeps the daemon's static
//! binary small.

use agent_controller::cli::args::{self, Parsed};
use agent_controller::cli::{completions, console};
use agent_controller::config::Config;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match args::parse(std::env::args_os().skip(1).collect()) {
        Ok(p) => p,
        Err(e) => return usage(&e.to_string()),
    };
    if parsed.help {
        print!("{}", args::help(parsed.named.then_some(parsed.command)));
        return ExitCode::SUCCESS;
    }
    match parsed.command.name {
        "eval" => eval(&parsed),
        "probe" => probe(&parsed),
        "serve" | "help" | "version" => usage("`serve`, `help` and `version` are agent-controller's own commands"),
        other => {
            quiet_broken_pipe();
            client(other, &parsed)
        }
    }
}

/// A client command: the console's, `mcp`, `completions`, `config check`.
fn client(name: &str, parsed: &Parsed) -> ExitCode {
    match name {
        "completions" => match completions::script(&parsed.free[0]) {
            Some(script) => {
                print!("{script}");
                ExitCode::SUCCESS
            }
            None => usage(&format!("no completions for {:?}; say bash, zsh or fish", parsed.free[0])),
        },
        "config" => config_check(parsed),
        "skill" => {
            print!("{}", agent_controller::cli::skill::SKILL_MD);
            ExitCode::SUCCESS
        }
        "mcp" => mcp(parsed),
        _ => ExitCode::from(console::run(parsed)),
    }
}

/// Client commands end quietly when their reader goes away (`… | head`): the default action of
/// SIGPIPE, as for any Unix filter, instead of a panic on the failed write.
fn quiet_broken_pipe() {
    // SAFETY: resetting a signal's disposition to the default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `config check [--config FILE]`: validate, then print the effective values, secrets masked.
fn config_check(parsed: &Parsed) -> ExitCode {
    if parsed.free[0] != "check" {
        return usage(&format!("unknown config command {:?}; say `config check`", parsed.free[0]));
    }
    let (path, loaded) = Config::load_named(parsed.value("--config").map(PathBuf::from));
    let config = match loaded.and_then(|c| c.validate().map(|()| c)) {
        Ok(c) => c,
        Err(e) => return usage(&format!("{}: {e}", path.display())),
    };
    print!("{}", config.effective_yaml());
    if let Err(e) = config.check_exposure(false) {
        eprintln!("agent-controller: warning: {e}");
    }
    ExitCode::SUCCESS
}

/// `mcp`: the MCP server on stdio.
fn mcp(parsed: &Parsed) -> ExitCode {
    let api = parsed.value("--api").map(str::to_string);
    let token = parsed.value("--token").map(str::to_string);
    // Per user: /tmp is shared, and another user's folder (or symlink) there must not receive
    // our downloads.
    let files = parsed.value("--files-dir").map(PathBuf::from).unwrap_or_else(|| {
        // SAFETY: getuid has no preconditions and cannot fail.
        std::env::temp_dir().join(format!("agent-controller-files-{}", unsafe { libc::getuid() }))
    });
    let ca_file = parsed.value("--ca-file").map(PathBuf::from);
    let client = match agent_controller::cli::client::ApiClient::new(api, token, ca_file) {
        Ok(c) => c,
        Err(e) => return usage(&e.to_string()),
    };
    ExitCode::from(agent_controller::cli::mcp::serve(client, files))
}

fn usage(message: &str) -> ExitCode {
    eprintln!("agent-controller: {message}");
    ExitCode::from(2)
}

/// `eval`: the eval's tasks on a model, through a daemon, site and worker of its own.
fn eval(parsed: &Parsed) -> ExitCode {
    if parsed.flag("--list") {
        return match agent_controller::eval::command::list(parsed) {
            Ok(list) => {
                print!("{list}");
                ExitCode::SUCCESS
            }
            Err(e) => usage(&e.to_string()),
        };
    }
    let (path, loaded) = Config::load_named(parsed.value("--config").map(PathBuf::from));
    match loaded {
        Ok(config) => ExitCode::from(agent_controller::eval::command(parsed, config)),
        Err(e) => usage(&format!("{}: {e}", path.display())),
    }
}

/// `probe`: what an endpoint's model can do, kept for `tool_mode: auto` and `vision: auto`.
fn probe(parsed: &Parsed) -> ExitCode {
    let (path, loaded) = Config::load_named(parsed.value("--config").map(PathBuf::from));
    let config = match loaded {
        Ok(c) => c,
        Err(e) => return usage(&format!("{}: {e}", path.display())),
    };
    let name = parsed.value("--llm").unwrap_or(agent_controller::config::DEFAULT_LLM);
    let Some(endpoint) = config.endpoint(name) else {
        return usage(&format!("no model endpoint {name:?} in {}", path.display()));
    };
    let found = agent_controller::llm::probe::probe(&endpoint, &config);
    if let Err(e) = agent_controller::llm::probe::save(&endpoint, &config, &found) {
        eprintln!("agent-controller: warning: could not keep the result in {}: {e}", config.output.dir.display());
    }
    if parsed.flag("--json") {
        println!("{}", found.to_json(&endpoint));
    } else {
        let yes = |b: bool| if b { "yes" } else { "no" };
        println!("{name}: {} {} at {}", endpoint.wire.name(), endpoint.model, endpoint.base_url);
        println!("  native tool calls: {}", yes(found.native_tools));
        println!("  JSON action mode:  {}", yes(found.json_mode));
        println!("  images:            {}", yes(found.vision));
        let context = found.context_tokens.map_or("unknown".to_string(), |n| format!("{n} tokens"));
        println!("  context:           {context}");
        for note in &found.notes {
            println!("  note: {}", agent_controller::util::ansi::printable(note));
        }
    }
    if found.native_tools || found.json_mode { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
