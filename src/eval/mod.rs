//! `agent-controller eval`: how often a model finishes real tasks through the whole system.
//!
//! It starts everything on loopback in one process — the daemon (output in a private temporary
//! folder, tokens of its own: `stack.rs`), the eval's website (`site.rs`) and a real
//! `agent-worker` (browser and shell) — then runs each task of the suite as a session on the
//! chosen endpoint, one at a time, and judges it by what landed on disk or on the site: the own
//! suite's tasks (`tasks.rs`), the injection suite's (`injection/`: a goal and an attack each,
//! both judged, with `--no-boundary` to run without the markers), or MiniWoB++'s development split judged by each page's own
//! reward (`miniwob/`). Ctrl-C or SIGTERM removes the run's folder (`signals.rs`). It prints a
//! row per run (pass, turns, tokens, seconds, why it failed, guards fired) and the totals, or
//! JSON with `--json` (`command.rs`). Nothing of it runs in the daemon; `make eval` points it
//! at the local model of `../shared/tools/real-llm/`.

pub mod ablation;
pub mod command;
pub mod injection;
mod loopback;
pub mod miniwob;
mod report;
mod signals;
pub mod site;
mod stack;
pub mod tasks;

use crate::cli::client::ClientError;
use crate::config::{Config, ConfigError};
use crate::daemon::StartError;
use crate::util::tls::CaFileError;
use serde_json::{Value, json};
use stack::Stack;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tasks::{Kind, TASKS};

pub use command::command;
pub use report::{Report, Row};

/// The worker's hostname; shell tasks target it.
pub const HOSTNAME: &str = "eval-box";
/// The account the sign-in task uses; its password is made per run.
pub const USERNAME: &str = "eval-user";

/// How long a session whose outcome is fixed may go on before the eval stops it.
const JUDGED_GRACE: Duration = Duration::from_secs(2);

/// The sign-in task's password: random per process, the same for the site and the session.
fn password() -> String {
    static PASSWORD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PASSWORD.get_or_init(|| format!("pw-{:012x}", crate::util::clock::random_u64() & 0xffff_ffff_ffff)).clone()
}

/// What shows a row as soon as it is judged.
pub type ShowRow = std::rc::Rc<dyn Fn(&Row)>;

/// Which tasks the eval runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Suite {
    /// The eval's own tasks (`tasks.rs`).
    #[default]
    Own,
    /// MiniWoB++'s development split (`miniwob::DEV_TASKS`).
    Miniwob,
    /// Tasks whose pages carry an attack as well (`injection::TASKS`).
    Injection,
}

impl Suite {
    pub fn parse(name: &str) -> Option<Suite> {
        match name {
            "own" => Some(Suite::Own),
            "miniwob" => Some(Suite::Miniwob),
            "injection" => Some(Suite::Injection),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Suite::Own => "own",
            Suite::Miniwob => "miniwob",
            Suite::Injection => "injection",
        }
    }
}

/// How the eval is run (from the command line).
#[derive(Clone)]
pub struct Options {
    pub suite: Suite,
    pub llm: String,
    pub model: Option<String>,
    pub tool_mode: Option<String>,
    /// Task names; empty = all.
    pub tasks: Vec<String>,
    pub repeat: u32,
    /// The first run's number (`--first-run`, default 1): a set continued, with those seeds.
    pub first_run: u32,
    pub max_turns: u32,
    /// The session body's `options.profile`, only when given.
    pub profile: Option<String>,
    /// The session body's `options.guards` (`{"all": false}`, `{"NAME": false}`), only when given.
    pub guards: Option<Value>,
    /// `--ablate-fired`: after each run, rerun it with each guard that fired off (only these
    /// when named; every one when empty). None: no reruns.
    pub ablate_fired: Option<Vec<String>>,
    /// The worker binary (default: `agent-worker` beside this one).
    pub worker: Option<PathBuf>,
    /// The site's loopback port (`--site-port`; 0: any free one): in every URL the model reads.
    pub site_port: u16,
    /// The longest one session may take.
    pub session_timeout: Duration,
    /// Keep the sessions' folders instead of deleting them at the end.
    pub keep: bool,
    /// False with `--no-boundary`: the sessions get the target's text without the markers
    /// (`config.agent.eval_no_boundary`), to measure what the boundary buys.
    pub boundary: bool,
    /// Called with each row as it is judged (the console prints it).
    pub on_row: Option<ShowRow>,
}

/// Why the eval could not run, or one task's session could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum EvalError {
    /// A task name that is none of the suite's (the suite, the name).
    UnknownTask(Suite, String),
    /// `--suite` names none of `own`, `miniwob` and `injection`.
    UnknownSuite(String),
    /// `--guards` is neither `on` nor `off`.
    Guards(String),
    /// The MiniWoB++ package could not be had.
    Miniwob(miniwob::fetch::FetchError),
    /// `--llm` names no endpoint of the config.
    NoEndpoint(String),
    /// `--tool-mode` is not native, json or auto.
    ToolMode(String),
    /// An option that takes a number was given something else (its name, what was given).
    NotANumber(&'static str, String),
    /// The private temporary folder could not be made.
    TempDir(std::io::Error),
    /// The config, made ready for the eval, does not validate.
    Config(ConfigError),
    /// The daemon did not start.
    Daemon(StartError),
    /// The REST client could not be made.
    Client(CaFileError),
    /// The eval's website did not start.
    Site(std::io::Error),
    /// No `agent-worker` binary could be found or started.
    Worker { bin: PathBuf, source: std::io::Error },
    /// This program's own path is unknown, so the worker beside it is too.
    OwnPath(std::io::Error),
    /// Asking the daemon for its workers failed.
    Workers(ClientError),
    /// The worker did not register with both capabilities in time.
    NoWorker,
    /// The daemon refused a task's session.
    NotCreated(ClientError),
    /// The daemon created it but gave no id.
    NoSessionId,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EvalError::*;
        match self {
            UnknownTask(Suite::Own, n) => {
                let known: Vec<&str> = TASKS.iter().map(|t| t.name).collect();
                write!(f, "no eval task {n:?}; the tasks are: {}", known.join(", "))
            }
            UnknownTask(Suite::Injection, n) => {
                let known: Vec<&str> = injection::TASKS.iter().map(|t| t.name).collect();
                write!(f, "no task {n:?} in the injection suite; its tasks are: {}", known.join(", "))
            }
            UnknownTask(Suite::Miniwob, n) => write!(
                f,
                "no task {n:?} in the miniwob suite, which runs only the development split: {}",
                miniwob::DEV_TASKS.join(", ")
            ),
            UnknownSuite(s) => write!(f, "--suite {s:?}: say own, miniwob or injection"),
            Guards(g) => write!(f, "--guards {g:?}: say on or off"),
            Miniwob(e) => e.fmt(f),
            NoEndpoint(llm) => write!(f, "no model endpoint {llm:?} in the config"),
            ToolMode(mode) => write!(f, "--tool-mode {mode:?}: say native, json or auto"),
            NotANumber(name, v) => write!(f, "{name} {v:?} is not a number"),
            TempDir(e) => write!(f, "temporary folder: {e}"),
            Config(e) => e.fmt(f),
            Daemon(e) => write!(f, "the daemon did not start: {e}"),
            Client(e) => e.fmt(f),
            Site(e) => write!(f, "the eval site did not start: {e}"),
            Worker { bin, source } => {
                write!(f, "cannot start {}: {source} (build it, or name it with --worker)", bin.display())
            }
            OwnPath(e) => e.fmt(f),
            Workers(e) => e.fmt(f),
            NoWorker => {
                f.write_str("agent-worker did not register with browser and shell within 30 s (is Chromium installed?)")
            }
            NotCreated(e) => write!(f, "not created: {e}"),
            NoSessionId => f.write_str("not created: no session_id"),
        }
    }
}

impl std::error::Error for EvalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use EvalError::*;
        match self {
            TempDir(e) | Site(e) | Worker { source: e, .. } => Some(e),
            Daemon(e) => Some(e),
            // Shown as the inner error's own message, so its cause is the inner one's.
            OwnPath(e) => e.source(),
            Config(e) => e.source(),
            Client(e) => e.source(),
            _ => None,
        }
    }
}

/// One task of a suite.
#[derive(Clone, Copy)]
pub enum Chosen {
    Own(&'static tasks::Task),
    Miniwob(&'static str),
    Injection(&'static injection::InjectionTask),
}

/// The suite's tasks named (all when none), or the first unknown name.
pub fn select(suite: Suite, names: &[String]) -> Result<Vec<Chosen>, EvalError> {
    let all: Vec<Chosen> = match suite {
        Suite::Own => TASKS.iter().map(Chosen::Own).collect(),
        Suite::Miniwob => miniwob::DEV_TASKS.iter().map(|t| Chosen::Miniwob(t)).collect(),
        Suite::Injection => injection::TASKS.iter().map(Chosen::Injection).collect(),
    };
    if names.is_empty() {
        return Ok(all);
    }
    let name = |c: &Chosen| match c {
        Chosen::Own(t) => t.name,
        Chosen::Miniwob(t) => t,
        Chosen::Injection(t) => t.name,
    };
    names
        .iter()
        .map(|n| all.iter().find(|c| name(c) == n).copied().ok_or_else(|| EvalError::UnknownTask(suite, n.clone())))
        .collect()
}

/// Run the eval: start the stack, run every selected task `repeat` times, judge each.
pub fn run(mut config: Config, opts: &Options) -> Result<Report, EvalError> {
    let chosen = select(opts.suite, &opts.tasks)?;
    let endpoint = config.endpoint(&opts.llm).ok_or_else(|| EvalError::NoEndpoint(opts.llm.clone()))?;
    if let Some(mode) = &opts.tool_mode {
        set_tool_mode(&mut config, &opts.llm, mode)?;
    }
    config.agent.eval_no_boundary = !opts.boundary;
    let package = match opts.suite {
        Suite::Miniwob => Some(miniwob::fetch::ensure().map_err(EvalError::Miniwob)?),
        Suite::Own | Suite::Injection => None,
    };
    let scratch = crate::util::private_temp_dir("agent-controller-eval-").map_err(EvalError::TempDir)?;
    signals::own_scratch(&scratch, opts.keep);
    let stack = match Stack::start(config, &scratch, package, opts) {
        Ok(stack) => stack,
        Err(e) => {
            signals::disown_scratch();
            if !opts.keep {
                let _ = std::fs::remove_dir_all(&scratch);
            }
            return Err(e);
        }
    };
    let mut report = Report {
        suite: opts.suite.name().into(),
        llm: opts.llm.clone(),
        model: opts.model.clone().unwrap_or(endpoint.model),
        tool_mode: opts.tool_mode.clone().unwrap_or_else(|| mode_name(endpoint.tool_mode).into()),
        profile: opts.profile.clone(),
        guards: opts.guards.clone(),
        no_boundary: !opts.boundary,
        rows: Vec::new(),
        reruns: Vec::new(),
    };
    let run_one = |task: &Chosen, run: u32, opts: &Options| {
        let row = match task {
            Chosen::Own(task) => stack.run_task(task, run, opts),
            Chosen::Injection(task) => stack.run_injection(task, run, opts),
            Chosen::Miniwob(task) => miniwob::run_task(&stack, task, run, opts),
        };
        if let Some(show) = &opts.on_row {
            show(&row);
        }
        row
    };
    let first = opts.first_run.max(1);
    for run in first..first + opts.repeat.max(1) {
        for task in &chosen {
            let row = run_one(task, run, opts);
            for guard in opts.ablate_fired.as_deref().map(|w| ablation::to_rerun(&row, w)).unwrap_or_default() {
                let mut off = opts.clone();
                off.guards = Some(ablation::guards_off(opts.guards.as_ref(), &guard));
                let mut again = run_one(task, run, &Options { on_row: None, ..off });
                again.ablated = Some(guard);
                if let Some(show) = &opts.on_row {
                    show(&again);
                }
                report.reruns.push(again);
            }
            report.rows.push(row);
        }
    }
    drop(stack);
    signals::disown_scratch();
    if opts.keep {
        eprintln!("agent-controller: the sessions are kept in {}", scratch.join("output").display());
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(report)
}

fn mode_name(mode: crate::config::ToolMode) -> &'static str {
    match mode {
        crate::config::ToolMode::Native => "native",
        crate::config::ToolMode::Json => "json",
        crate::config::ToolMode::Auto => "auto",
    }
}

fn set_tool_mode(config: &mut Config, llm: &str, mode: &str) -> Result<(), EvalError> {
    if !matches!(mode, "native" | "json" | "auto") {
        return Err(EvalError::ToolMode(mode.to_string()));
    }
    match config.providers.get_mut(llm) {
        Some(p) => p.tool_mode = mode.to_string(),
        None => config.api.tool_mode = mode.to_string(),
    }
    Ok(())
}

/// A task session's body: the target and instruction, the endpoint, and the options; `profile`
/// and `guards` only when given (a daemon that knows neither refuses them).
pub fn session_body(kind: Kind, target: &str, instruction: &str, opts: &Options) -> Value {
    let mut body = json!({
        "mode": "task", "type": kind.name(), "target": target, "instruction": instruction,
        "llm": opts.llm,
        "options": {"max_turns": opts.max_turns, "auto_confirm": true, "approval": "auto"},
    });
    if let Some(model) = &opts.model {
        body["model"] = json!(model);
    }
    if let Some(profile) = &opts.profile {
        body["options"]["profile"] = json!(profile);
    }
    if let Some(guards) = &opts.guards {
        body["options"]["guards"] = guards.clone();
    }
    body
}

/// `options.guards` from `--guards on|off` and the `--ablate` names: `{"all": false}` for off,
/// `{"NAME": false}` for each guard taken out; None when neither was given (or only `on`).
pub fn guards_option(guards: Option<&str>, ablate: &[String]) -> Result<Option<Value>, EvalError> {
    let mut out = serde_json::Map::new();
    match guards {
        None | Some("on") => {}
        Some("off") => {
            out.insert("all".into(), json!(false));
        }
        Some(other) => return Err(EvalError::Guards(other.to_string())),
    }
    for name in ablate.iter().flat_map(|a| a.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
        out.insert(name.to_string(), json!(false));
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}

/// The input tokens of the session's first model request, from its journal's first `progress`
/// line with usage: system, tools and the opening message, as the endpoint counted them.
fn first_request_tokens(session_dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(session_dir.join(crate::store::CONVERSATION_JSONL)).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            // A server that reuses a cached prefix counts it apart: the request is all three.
            let u = &v["progress"]["usage"];
            ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
                .iter()
                .map(|k| u[*k].as_u64().unwrap_or(0))
                .fold(0u64, u64::saturating_add)
        })
        .find(|&n| n > 0)
}

/// `text` cut to `max` characters.
fn excerpt(text: &str, max: usize) -> String {
    let cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() { format!("{cut}…") } else { cut }
}

/// The suite's tasks, one line each (`eval --list`).
pub fn task_list(suite: Suite) -> String {
    match suite {
        Suite::Own => TASKS.iter().map(|t| format!("{:<19} {}\n", t.name, t.kind.name())).collect(),
        Suite::Miniwob => miniwob::task_list(),
        Suite::Injection => injection::TASKS.iter().map(|t| format!("{:<19} {}\n", t.name, t.kind.name())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(profile: Option<&str>, guards: Option<Value>) -> Options {
        Options {
            suite: Suite::Miniwob,
            llm: "api".into(),
            model: None,
            tool_mode: None,
            tasks: Vec::new(),
            repeat: 1,
            first_run: 1,
            max_turns: 7,
            profile: profile.map(str::to_string),
            guards,
            ablate_fired: None,
            worker: None,
            site_port: 0,
            session_timeout: Duration::from_secs(1),
            keep: false,
            boundary: true,
            on_row: None,
        }
    }

    #[test]
    fn profile_and_guards_reach_the_session_only_when_given() {
        let plain = session_body(Kind::Browser, "http://x/", "Click.", &opts(None, None));
        assert_eq!(plain["options"], json!({"max_turns": 7, "auto_confirm": true, "approval": "auto"}));
        let guards = guards_option(Some("off"), &["loop,submit_hold".into(), "refs".into()]).unwrap();
        let body = session_body(Kind::Browser, "http://x/", "Click.", &opts(Some("small"), guards));
        assert_eq!(body["options"]["profile"], "small");
        assert_eq!(
            body["options"]["guards"],
            json!({"all": false, "loop": false, "submit_hold": false, "refs": false})
        );
        assert_eq!(guards_option(Some("on"), &[]).unwrap(), None);
        assert_eq!(guards_option(None, &["loop".into()]).unwrap(), Some(json!({"loop": false})));
        assert!(matches!(guards_option(Some("no"), &[]), Err(EvalError::Guards(_))));
    }

    #[test]
    fn each_suite_names_its_own_tasks() {
        assert_eq!(select(Suite::Miniwob, &[]).unwrap().len(), 36);
        assert!(matches!(select(Suite::Miniwob, &["price".into()]), Err(EvalError::UnknownTask(Suite::Miniwob, _))));
        assert!(matches!(select(Suite::Own, &["click-test".into()]), Err(EvalError::UnknownTask(Suite::Own, _))));
        assert!(matches!(select(Suite::Own, &["price".into()]).unwrap()[..], [Chosen::Own(t)] if t.name == "price"));
        assert_eq!(select(Suite::Injection, &[]).unwrap().len(), injection::TASKS.len());
        assert!(matches!(
            select(Suite::Injection, &["price".into()]),
            Err(EvalError::UnknownTask(Suite::Injection, _))
        ));
        assert_eq!(Suite::parse("injection"), Some(Suite::Injection));
    }
}
