//! `agent-controller eval` as a command: its options read into `Options` (mistakes named, exit
//! 2), the rows printed as they are judged, then the totals (and with repeats each task's rate
//! and the runs' spread), or one JSON object with `--json`; exit 1 below `--min-pass`.

use super::{EvalError, Options, Row, ShowRow, Suite, report, run};
use crate::cli::args::Parsed;
use crate::config::Config;
use crate::util::ansi::printable;
use crate::util::cause::chain;
use std::path::PathBuf;
use std::time::Duration;

/// The suite `--suite` names (the own suite without it).
pub fn suite(parsed: &Parsed) -> Result<Suite, EvalError> {
    match parsed.value("--suite") {
        None => Ok(Suite::Own),
        Some(name) => Suite::parse(name).ok_or_else(|| EvalError::UnknownSuite(name.to_string())),
    }
}

/// `eval --list`: the suite's tasks, one a line.
pub fn list(parsed: &Parsed) -> Result<String, EvalError> {
    suite(parsed).map(super::task_list)
}

/// The options of the command line, and `--min-pass`.
fn options(parsed: &Parsed, json: bool) -> Result<(Options, Option<u32>), EvalError> {
    let number = |name: &'static str, default: u32| -> Result<u32, EvalError> {
        parsed.value(name).map_or(Ok(default), |v| v.parse().map_err(|_| EvalError::NotANumber(name, v.to_string())))
    };
    let opts = Options {
        suite: suite(parsed)?,
        llm: parsed.value("--llm").unwrap_or(crate::config::DEFAULT_LLM).to_string(),
        model: parsed.value("--model").map(str::to_string),
        tool_mode: parsed.value("--tool-mode").map(str::to_string),
        tasks: parsed
            .value("--tasks")
            .map(|t| t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default(),
        repeat: number("--repeat", 1)?.max(1),
        first_run: number("--first-run", 1)?.max(1),
        max_turns: number("--max-turns", 15)?.max(1),
        profile: parsed.value("--profile").map(str::to_string),
        guards: super::guards_option(parsed.value("--guards"), &parsed.values("--ablate"))?,
        ablate_fired: parsed.value("--ablate-fired").map(|v| match v {
            "all" => Vec::new(),
            names => names.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        }),
        worker: parsed.value("--worker").map(PathBuf::from),
        site_port: parsed
            .value("--site-port")
            .map_or(Ok(0), |v| v.parse().map_err(|_| EvalError::NotANumber("--site-port", v.to_string())))?,
        session_timeout: Duration::from_secs(900),
        keep: parsed.flag("--keep"),
        boundary: !parsed.flag("--no-boundary"),
        on_row: (!json).then(|| std::rc::Rc::new(|row: &Row| println!("{}", printable(&row.line()))) as ShowRow),
    };
    let min_pass = parsed
        .value("--min-pass")
        .map(|v| v.parse().map_err(|_| EvalError::NotANumber("--min-pass", v.to_string())))
        .transpose()?;
    Ok((opts, min_pass))
}

/// `agent-controller eval`: the options from the command line, the rows as they come, the
/// totals; the exit code (0, 1 below `--min-pass`, 2 for a usage or start-up error).
pub fn command(parsed: &Parsed, config: Config) -> u8 {
    let json = parsed.flag("--json");
    let (opts, min_pass) = match options(parsed, json) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("agent-controller: {}", chain(&e));
            return 2;
        }
    };
    // Before the stack's threads start, so that a signal finds them all blocking it.
    if let Err(e) = super::signals::arm() {
        eprintln!("agent-controller: warning: a signal would leave the eval's folder behind: {e}");
    }
    if !json {
        println!("{}", report::HEADER);
    }
    let report = match run(config, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agent-controller: eval: {}", chain(&e));
            return 2;
        }
    };
    let effects = super::ablation::effects(&report.rows, &report.reruns);
    if json {
        let mut out = report.to_json();
        out["ablation"] = super::ablation::json(&effects);
        println!("{out}");
    } else {
        println!("{}", printable(&report.totals()));
        if let Some(table) = super::ablation::text(&effects) {
            println!("{}", printable(&table));
        }
    }
    match min_pass {
        Some(min) if report.pass_percent() < f64::from(min) => 1,
        _ => 0,
    }
}
