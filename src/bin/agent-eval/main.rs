//! agent-eval: `agent-controller eval` and `agent-controller probe`, which run this binary with
//! their arguments. They measure models and ask endpoints; they are not part of the daemon, and
//! living here keeps the daemon's binary small.

use agent_controller::cli::args::{self, Parsed};
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
        other => usage(&format!("agent-eval runs `eval` and `probe`, not {other:?}")),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("agent-controller: {message}");
    ExitCode::from(2)
}

/// `eval`: the eval's tasks on a model, through a daemon, site and worker of its own.
fn eval(parsed: &Parsed) -> ExitCode {
    if parsed.value("--list").is_some() || parsed.options.iter().any(|(n, _)| *n == "--list") {
        print!("{}", agent_controller::eval::task_list());
        return ExitCode::SUCCESS;
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
    if parsed.options.iter().any(|(n, _)| *n == "--json") {
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
            println!("  note: {note}");
        }
    }
    if found.native_tools || found.json_mode { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
