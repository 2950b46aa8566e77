//! `agent-controller eval`: how often a model finishes real tasks through the whole system.
//!
//! It starts everything on loopback in one process — the daemon (output in a private temporary
//! folder), the eval's website (`site.rs`) and a real `agent-worker` (browser and shell) — then
//! runs each task of the suite as a session on the chosen endpoint, one at a time, and judges
//! it by what landed on disk or on the site: the own suite's tasks (`tasks.rs`), or MiniWoB++'s
//! development split judged by each page's own reward (`miniwob/`). It prints a row per run
//! (pass, turns, tokens, seconds, why it failed, guards fired) and the totals, or JSON with
//! `--json` (`command.rs`). Nothing of it runs in the daemon; `make eval` points it at the
//! local model of `../shared/tools/real-llm/`.

pub mod ablation;
pub mod command;
mod loopback;
pub mod miniwob;
mod report;
pub mod site;
pub mod tasks;

use crate::cli::client::{ApiClient, ClientError};
use crate::config::{Config, ConfigError};
use crate::daemon::{Daemon, StartError};
use crate::util::tls::CaFileError;
use serde_json::{Value, json};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tasks::{Evidence, Kind, Setup, TASKS};

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
}

impl Suite {
    pub fn parse(name: &str) -> Option<Suite> {
        match name {
            "own" => Some(Suite::Own),
            "miniwob" => Some(Suite::Miniwob),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Suite::Own => "own",
            Suite::Miniwob => "miniwob",
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
    /// Called with each row as it is judged (the console prints it).
    pub on_row: Option<ShowRow>,
}

/// Why the eval could not run, or one task's session could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum EvalError {
    /// A task name that is none of the suite's (the suite, the name).
    UnknownTask(Suite, String),
    /// `--suite` names neither `own` nor `miniwob`.
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
            UnknownTask(Suite::Miniwob, n) => write!(
                f,
                "no task {n:?} in the miniwob suite, which runs only the development split: {}",
                miniwob::DEV_TASKS.join(", ")
            ),
            UnknownSuite(s) => write!(f, "--suite {s:?}: say own or miniwob"),
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
}

/// The suite's tasks named (all when none), or the first unknown name.
pub fn select(suite: Suite, names: &[String]) -> Result<Vec<Chosen>, EvalError> {
    let all: Vec<Chosen> = match suite {
        Suite::Own => TASKS.iter().map(Chosen::Own).collect(),
        Suite::Miniwob => miniwob::DEV_TASKS.iter().map(|t| Chosen::Miniwob(t)).collect(),
    };
    if names.is_empty() {
        return Ok(all);
    }
    let name = |c: &Chosen| match c {
        Chosen::Own(t) => t.name,
        Chosen::Miniwob(t) => t,
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
    let package = match opts.suite {
        Suite::Miniwob => Some(miniwob::fetch::ensure().map_err(EvalError::Miniwob)?),
        Suite::Own => None,
    };
    let scratch = crate::util::private_temp_dir("agent-controller-eval-").map_err(EvalError::TempDir)?;
    let stack = Stack::start(config, &scratch, package, opts)?;
    let mut report = Report {
        suite: opts.suite.name().into(),
        llm: opts.llm.clone(),
        model: opts.model.clone().unwrap_or(endpoint.model),
        tool_mode: opts.tool_mode.clone().unwrap_or_else(|| mode_name(endpoint.tool_mode).into()),
        profile: opts.profile.clone(),
        guards: opts.guards.clone(),
        rows: Vec::new(),
        reruns: Vec::new(),
    };
    let run_one = |task: &Chosen, run: u32, opts: &Options| {
        let row = match task {
            Chosen::Own(task) => stack.run_task(task, run, opts),
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

/// The daemon, the site and the worker, alive while the eval runs.
struct Stack {
    daemon: Option<Daemon>,
    client: ApiClient,
    site: site::Site,
    worker: Child,
    scratch: PathBuf,
    output: PathBuf,
}

impl Stack {
    fn start(mut config: Config, scratch: &Path, package: Option<PathBuf>, opts: &Options) -> Result<Stack, EvalError> {
        let output = scratch.join("output");
        config.output.dir = output.clone();
        config.server.host = "127.0.0.1".into();
        (config.server.api_port, config.server.worker_port) = (0, 0);
        config.server.api_token = Default::default();
        config.server.worker_token = Default::default();
        config.validate().map_err(EvalError::Config)?;
        let agent = crate::agent::llm_agent(&config);
        let daemon = Daemon::start(config, agent).map_err(EvalError::Daemon)?;
        let api = format!("http://{}", daemon.api_addr());
        let client = ApiClient::new(Some(api), None, None).map_err(EvalError::Client)?;
        let site = site::Site::start(opts.site_port, USERNAME, &password(), package).map_err(EvalError::Site)?;
        let worker = start_worker(opts, &daemon, scratch)?;
        let stack = Stack { daemon: Some(daemon), client, site, worker, scratch: scratch.to_path_buf(), output };
        stack.wait_for_worker()?;
        Ok(stack)
    }

    fn wait_for_worker(&self) -> Result<(), EvalError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let workers = self.client.get("/workers").map_err(EvalError::Workers)?;
            let ready = workers.as_array().into_iter().flatten().any(|w| {
                let caps = w["capabilities"].to_string();
                w["status"] != "disconnected" && caps.contains("browser") && caps.contains("shell")
            });
            if ready {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(EvalError::NoWorker)
    }

    fn run_task(&self, task: &tasks::Task, run: u32, opts: &Options) -> Row {
        let dir = self.scratch.join("box").join(format!("{}-{run}", task.name));
        // A rerun of the same task and run (`--ablate-fired`) starts from nothing: what the first
        // run left there must not pass the second.
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::create_dir_all(&dir);
        self.site.clear_posts();
        let prepared = task.prepare(&Setup { site: &self.site, dir });
        let started = Instant::now();
        let mut row = Row::new(task.name, task.kind.name(), run);
        let creds = prepared.credentials.as_ref();
        let id = match self.create(task.kind, &prepared.target, &prepared.instruction, creds, opts) {
            Ok(id) => id,
            Err(e) => {
                row.why = e.to_string();
                return row;
            }
        };
        let session = self.wait_until_ended(&id, opts.session_timeout, &|| false);
        row.seconds = started.elapsed().as_secs_f64();
        row.fill_from(&session, first_request_tokens(&self.output.join(&id)));
        let evidence = Evidence { files: self.files(&id), posts: self.site.posts(), site: &self.site };
        match tasks::judge(&prepared.expect, &evidence) {
            Ok(()) => row.pass = true,
            Err(why) => row.why = why.to_string(),
        }
        row.session = id;
        row
    }

    fn create(
        &self,
        kind: Kind,
        target: &str,
        instruction: &str,
        credentials: Option<&(String, String)>,
        opts: &Options,
    ) -> Result<String, EvalError> {
        let mut body = session_body(kind, target, instruction, opts);
        if let Some((username, password)) = credentials {
            body["credentials"] = json!({"username": username, "password": password});
        }
        let session = self.client.post("/sessions", &body).map_err(EvalError::NotCreated)?;
        session["session_id"].as_str().map(str::to_string).ok_or(EvalError::NoSessionId)
    }

    /// The session once it ended: stopped when it runs past `timeout`, or a moment after
    /// `judged` (the outcome is fixed then; the moment lets a session that is finishing anyway
    /// finish rather than be stopped).
    fn wait_until_ended(&self, id: &str, timeout: Duration, judged: &dyn Fn() -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        let mut judged_at: Option<Instant> = None;
        let path = format!("/sessions/{id}");
        loop {
            let session = self.client.get(&path).unwrap_or(Value::Null);
            if !crate::cli::client::is_active(&session) && !session.is_null() {
                return session;
            }
            if judged_at.is_none() && judged() {
                judged_at = Some(Instant::now());
            }
            let settled = judged_at.is_some_and(|at| at.elapsed() >= JUDGED_GRACE);
            if Instant::now() >= deadline || settled {
                // No report on the stop: its model call would hold up the next task's.
                let _ = self.client.delete(&format!("{path}?report=false"));
                std::thread::sleep(Duration::from_secs(2));
                return self.client.get(&path).unwrap_or(session);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The session's files but screenshots, with their bytes.
    fn files(&self, id: &str) -> Vec<(String, Vec<u8>)> {
        let listed = self.client.get(&format!("/sessions/{id}/files")).unwrap_or(Value::Null);
        listed
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["type"] != "screenshot")
            .filter_map(|f| f["filename"].as_str())
            .filter_map(|name| {
                let path = format!("/sessions/{id}/files/{}", crate::util::percent_encode(name));
                let (bytes, _) = self.client.get_bytes(&path, 64 << 20).ok()?;
                Some((name.to_string(), bytes))
            })
            .collect()
    }
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

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.worker.kill();
        let _ = self.worker.wait();
        if let Some(d) = self.daemon.take() {
            d.shutdown();
        }
    }
}

fn start_worker(opts: &Options, daemon: &Daemon, scratch: &Path) -> Result<Child, EvalError> {
    let bin = match &opts.worker {
        Some(b) => b.clone(),
        None => std::env::current_exe().map_err(EvalError::OwnPath)?.with_file_name("agent-worker"),
    };
    let downloads = scratch.join("downloads");
    let _ = std::fs::create_dir_all(&downloads);
    let mut command = Command::new(&bin);
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to signal the child when we die.
    unsafe {
        use std::os::unix::process::CommandExt;
        // An eval stopped by Ctrl-C or a kill takes its worker (and the worker's browser) along.
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    command
        .args(["--controller", &format!("http://{}", daemon.worker_addr())])
        .args(["--capabilities", "browser,shell", "--headless", "--hostname", HOSTNAME])
        .arg("--download-dir")
        .arg(&downloads)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(move |source| EvalError::Worker { bin, source })
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
    }
}
