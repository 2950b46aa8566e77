//! The eval's stack: its own daemon, site and worker, alive while the eval runs, and the one
//! task session at a time it runs on them.
//!
//! Guarantees: the daemon listens on loopback only, with an API token and a worker token drawn
//! from the OS for this run alone (the eval's client holds the one, its worker the other, given
//! in its environment, not on its command line), so no other local process can create a session
//! on it or pose as its worker; every session is pinned to the worker the eval started.

use super::{EvalError, HOSTNAME, JUDGED_GRACE, Options, Row, USERNAME, first_request_tokens, password};
use super::{injection, session_body, site, tasks};
use crate::cli::client::ApiClient;
use crate::config::Config;
use crate::daemon::Daemon;
use crate::util::secret::Secret;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tasks::{Evidence, Kind, Setup};

/// The daemon, the site and the worker, alive while the eval runs.
pub(super) struct Stack {
    daemon: Option<Daemon>,
    client: ApiClient,
    pub(super) site: site::Site,
    worker: Child,
    /// The id our worker registered as: every session asks for it.
    worker_id: String,
    pub(super) scratch: PathBuf,
    pub(super) output: PathBuf,
}

/// What readies a task in its setup: the goal, and the attack when the task carries one.
type Prepare<'a> = &'a dyn Fn(&Setup) -> (tasks::Prepared, Option<injection::Attack>);

/// The tools a session called, in order, from its step log.
fn called_tools(session_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(session_dir.join(crate::store::STEPS_JSONL)).unwrap_or_default();
    let steps = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok());
    steps.filter_map(|v| v["tool"].as_str().map(str::to_string)).collect()
}

/// Random 64-bit words in a token the eval makes (256 bits, 64 hex digits).
const TOKEN_WORDS: usize = 4;

/// A token for this run alone, from the OS's randomness.
fn fresh_token() -> String {
    (0..TOKEN_WORDS).map(|_| format!("{:016x}", crate::util::clock::random_u64())).collect()
}

impl Stack {
    pub(super) fn start(
        mut config: Config,
        scratch: &Path,
        package: Option<PathBuf>,
        opts: &Options,
    ) -> Result<Stack, EvalError> {
        let output = scratch.join("output");
        config.output.dir = output.clone();
        config.server.host = "127.0.0.1".into();
        (config.server.api_port, config.server.worker_port) = (0, 0);
        let (api_token, worker_token) = (fresh_token(), fresh_token());
        config.server.api_token = Secret::new(api_token.clone());
        config.server.worker_token = Secret::new(worker_token.clone());
        config.validate().map_err(EvalError::Config)?;
        let agent = crate::agent::llm_agent(&config);
        let daemon = Daemon::start(config, agent).map_err(EvalError::Daemon)?;
        let (api, workers) = (format!("http://{}", daemon.api_addr()), format!("http://{}", daemon.worker_addr()));
        eprintln!("agent-controller: eval: its daemon serves {api} (workers: {workers}), with tokens of its own");
        let client = ApiClient::new(Some(api), Some(api_token), None).map_err(EvalError::Client)?;
        let site = site::Site::start(opts.site_port, USERNAME, &password(), package).map_err(EvalError::Site)?;
        let worker = start_worker(opts, &workers, &worker_token, scratch)?;
        super::signals::own_worker(worker.id());
        let mut stack = Stack {
            daemon: Some(daemon),
            client,
            site,
            worker,
            worker_id: String::new(),
            scratch: scratch.to_path_buf(),
            output,
        };
        stack.worker_id = stack.wait_for_worker()?;
        Ok(stack)
    }

    /// The id of our worker once it is connected with both capabilities.
    fn wait_for_worker(&self) -> Result<String, EvalError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let workers = self.client.get("/workers").map_err(EvalError::Workers)?;
            let ours = workers.as_array().into_iter().flatten().find(|w| {
                let caps = w["capabilities"].to_string();
                w["hostname"] == HOSTNAME
                    && w["connected"] == true
                    && caps.contains("browser")
                    && caps.contains("shell")
            });
            if let Some(id) = ours.and_then(|w| w["worker_id"].as_str()) {
                return Ok(id.to_string());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(EvalError::NoWorker)
    }

    pub(super) fn run_task(&self, task: &tasks::Task, run: u32, opts: &Options) -> Row {
        self.run_prepared(task.name, task.kind, run, opts, &|setup| (task.prepare(setup), None))
    }

    /// An injection task: its goal judged as the own suite's, and whether its attack succeeded.
    pub(super) fn run_injection(&self, task: &injection::InjectionTask, run: u32, opts: &Options) -> Row {
        self.run_prepared(task.name, task.kind, run, opts, &|setup| {
            let (prepared, attack) = task.prepare(setup);
            (prepared, Some(attack))
        })
    }

    /// One session of a task `prepare` makes ready (in a fresh folder, the site's records
    /// cleared), judged by what landed on disk or on the site; its attack, if any, too.
    fn run_prepared(&self, name: &str, kind: Kind, run: u32, opts: &Options, prepare: Prepare) -> Row {
        let dir = self.scratch.join("box").join(format!("{name}-{run}"));
        // A rerun of the same task and run (`--ablate-fired`) starts from nothing: what the first
        // run left there must not pass the second.
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::create_dir_all(&dir);
        self.site.clear_posts();
        let (prepared, attack) = prepare(&Setup { site: &self.site, dir });
        let started = Instant::now();
        let mut row = Row::new(name, kind.name(), run);
        let creds = prepared.credentials.as_ref();
        let id = match self.create(kind, &prepared.target, &prepared.instruction, creds, opts) {
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
        if let Some(attack) = attack {
            let (hits, tools) = (self.site.hits(), called_tools(&self.output.join(&id)));
            let succeeded = attack.succeeded(&injection::Seen { hits: &hits, posts: &evidence.posts, tools: &tools });
            row.attack = Some(succeeded);
            row.attack_note = attack.to_string();
        }
        row.session = id;
        row
    }

    pub(super) fn create(
        &self,
        kind: Kind,
        target: &str,
        instruction: &str,
        credentials: Option<&(String, String)>,
        opts: &Options,
    ) -> Result<String, EvalError> {
        let mut body = session_body(kind, target, instruction, opts);
        body["worker"] = json!(self.worker_id);
        if let Some((username, password)) = credentials {
            body["credentials"] = json!({"username": username, "password": password});
        }
        let session = self.client.post("/sessions", &body).map_err(EvalError::NotCreated)?;
        session["session_id"].as_str().map(str::to_string).ok_or(EvalError::NoSessionId)
    }

    /// The session once it ended: stopped when it runs past `timeout`, or a moment after
    /// `judged` (the outcome is fixed then; the moment lets a session that is finishing anyway
    /// finish rather than be stopped).
    pub(super) fn wait_until_ended(&self, id: &str, timeout: Duration, judged: &dyn Fn() -> bool) -> Value {
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

impl Drop for Stack {
    fn drop(&mut self) {
        super::signals::end_worker(&mut self.worker);
        if let Some(d) = self.daemon.take() {
            d.shutdown();
        }
    }
}

/// Our worker, on the daemon's worker port, with the worker token in its environment (the
/// command line is visible to every local user; the worker gives its commands a clean one).
fn start_worker(opts: &Options, workers: &str, token: &str, scratch: &Path) -> Result<Child, EvalError> {
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
        // An eval killed outright takes its worker (and the worker's browser) along.
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    command
        .args(["--controller", workers])
        .args(["--capabilities", "browser,shell", "--headless", "--hostname", HOSTNAME])
        .arg("--download-dir")
        .arg(&downloads)
        .env(crate::config::ENV_WORKER_TOKEN, token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(move |source| EvalError::Worker { bin, source })
}
