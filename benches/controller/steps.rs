//! Per-step overhead of a whole agent step (controller → model → controller → worker →
//! controller), for the daemon and for the seed's stack in the same run: an instant scripted
//! model on loopback answers every call at once with one shell tool call (`run_command`,
//! `read_file`, `list_dir` in turn) until a session has taken its steps, then `finish_task`; an
//! instant worker answers every command at once. A step is the interval between two consecutive model calls of one session, as the model sees them.
//! Also the pieces the other figures share: the model, the worker, and the seed stack's launcher.

use super::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// Sessions, each of this many steps; one more session first warms both stacks up.
const SESSIONS: usize = 10;
const STEPS: usize = 50;

/// While one session runs at a time: what happened when (model call in, model reply out,
/// command at the worker, result acknowledged), to split a step into its parts.
static TIMELINE: Mutex<Vec<(Event, Instant)>> = Mutex::new(Vec::new());
static RECORDING: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy, PartialEq)]
enum Event {
    ModelCall,
    ModelReply,
    Command,
    ResultAcked,
}

fn record(event: Event) {
    record_at(event, Instant::now());
}

fn record_at(event: Event, at: Instant) {
    if RECORDING.load(Ordering::Relaxed) {
        TIMELINE.lock().unwrap().push((event, at));
    }
}

/// Record the timeline (only while one session at a time takes steps) or stop recording it.
pub fn record_steps(on: bool) {
    RECORDING.store(on, Ordering::Relaxed);
}

/// Marks a session's instruction so the model can tell sessions apart: `bench-tag-<name>:`.
pub const TAG: &str = "bench-tag-";

/// An instant scripted Anthropic Messages server. A session whose tag contains `hold` is held
/// for a minute (a model still thinking); every other call is answered at once.
pub struct Model {
    pub url: String,
    steps: usize,
    arrivals: Arc<Mutex<HashMap<String, Vec<Instant>>>>,
}

impl Model {
    pub fn start(steps: usize) -> Model {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let arrivals = Arc::new(Mutex::new(HashMap::new()));
        for _ in 0..4 {
            let (server, arrivals) = (Arc::clone(&server), Arc::clone(&arrivals));
            std::thread::spawn(move || {
                while let Ok(request) = server.recv() {
                    answer(request, steps, &arrivals);
                }
            });
        }
        Model { url, steps, arrivals }
    }

    /// The step times of the sessions whose tag starts with `prefix`, forgotten once taken.
    pub fn take_steps(&self, prefix: &str) -> Vec<Duration> {
        let mut arrivals = self.arrivals.lock().unwrap();
        let tags: Vec<String> = arrivals.keys().filter(|t| t.starts_with(prefix)).cloned().collect();
        let mut steps = Vec::new();
        for tag in tags {
            let times = arrivals.remove(&tag).unwrap();
            let calls = times.len();
            assert_eq!(calls, self.steps + 1, "session {tag} ended after {calls} model calls (see its log)");
            steps.extend(times.windows(2).map(|w| w[1] - w[0]));
        }
        steps.sort();
        steps
    }
}

fn answer(mut request: tiny_http::Request, steps: usize, arrivals: &Mutex<HashMap<String, Vec<Instant>>>) {
    let at = Instant::now();
    let mut body = String::new();
    let _ = request.as_reader().read_to_string(&mut body);
    let tag: String = body
        .split(TAG)
        .nth(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect())
        .unwrap_or_default();
    if tag.contains("hold") {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(60));
            let _ = request.respond(tiny_http::Response::empty(529));
        });
        return;
    }
    record_at(Event::ModelCall, at);
    arrivals.lock().unwrap().entry(tag.clone()).or_default().push(at);
    let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let taken = parsed["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    let call = if taken >= steps {
        json!({"type": "tool_use", "id": format!("toolu_{taken}"), "name": "finish_task", "input": {"summary": "done"}})
    } else {
        // A user's session varies its tools (and the daemon holds back one tool called over and over).
        let (name, input) = match taken % 3 {
            0 => ("run_command", json!({"command": format!("echo step {taken}")})),
            1 => ("read_file", json!({"path": format!("/tmp/bench/{taken}.txt")})),
            _ => ("list_dir", json!({"path": format!("/tmp/bench/{taken}")})),
        };
        json!({"type": "tool_use", "id": format!("toolu_{taken}"), "name": name, "input": input})
    };
    let reply = json!({
        "id": format!("msg_{tag}_{taken}"), "type": "message", "role": "assistant", "model": "bench",
        "content": [call], "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": body.len() / 4, "output_tokens": 20},
    });
    let json_type = tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap();
    let _ = request.respond(tiny_http::Response::from_data(serde_json::to_vec(&reply).unwrap()).with_header(json_type));
    record(Event::ModelReply);
}

/// A worker that answers every command at once, speaking either protocol: ours (the
/// registration returns a `worker_id` and a secret, sent back on every request) or the
/// seed's bare one. Returns its count of failed requests once `stop` is set (1 when it could
/// not register).
pub fn instant_worker(addr: String, hostname: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || {
            let hello = json!({"hostname": hostname, "capabilities": ["shell"], "has_pywinauto": false});
            let body = serde_json::to_vec(&hello).unwrap();
            let reg = match Conn::open(&addr).and_then(|mut c| c.request("POST", "/register", &body)) {
                Ok((200, reply)) => serde_json::from_slice::<Value>(&reply).unwrap_or(Value::Null),
                failed => {
                    eprintln!("{hostname}: registration failed: {:?}", failed.map(|(status, _)| status));
                    return 1;
                }
            };
            let query = reg["worker_id"].as_str().map(|w| format!("?worker_id={w}")).unwrap_or_default();
            let mut conn = Conn::open(&addr).unwrap().for_worker(&reg);
            let mut errors = 0;
            while !stop.load(Ordering::Relaxed) {
                let cmd = match conn.request("GET", &format!("/command{query}"), b"") {
                    Ok((200, body)) => serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
                    _ => {
                        errors += u64::from(!stop.load(Ordering::Relaxed));
                        std::thread::sleep(Duration::from_millis(100));
                        if let Ok(c) = Conn::open(&addr) {
                            conn = c.for_worker(&reg);
                        }
                        continue;
                    }
                };
                if cmd["action"] == "wait" || cmd["id"].is_null() {
                    continue;
                }
                record(Event::Command);
                let data = json!({"exit_code": 0, "stdout": "ok\n", "stderr": "", "duration_ms": 0});
                let result = serde_json::to_vec(&json!({"id": cmd["id"], "success": true, "data": data})).unwrap();
                if !matches!(conn.request("POST", &format!("/result{query}"), &result), Ok((200, _))) {
                    errors += 1;
                }
                record(Event::ResultAcked);
            }
            errors
        })
        .unwrap()
}

/// The seed's stack (`benches/seed_stack/app.py`: Flask + waitress) as a child process.
pub struct SeedStack {
    pub child: Child,
    pub api: String,
    pub worker: String,
    pub stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for SeedStack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SeedStack {
    /// Start it (the Python from `SEED_PYTHON`, as scripts/bench.sh sets it up), ready to serve;
    /// None, said once, when there is no such Python.
    pub fn start(dir: &Path, model: &str, dispatch_bench: usize) -> Option<(SeedStack, Duration)> {
        let python = PathBuf::from(std::env::var("SEED_PYTHON").unwrap_or_default());
        if !python.exists() {
            println!("seed stack: skipped (SEED_PYTHON names no Python with flask, waitress, requests)");
            return None;
        }
        let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/seed_stack/app.py");
        let free = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (api_port, worker_port) = (free(), free());
        std::fs::create_dir_all(dir).unwrap();
        let t = Instant::now();
        let mut child = Command::new(python)
            .arg(app)
            .args(["--api-port", &api_port.to_string(), "--worker-port", &worker_port.to_string()])
            .args(["--output", &dir.display().to_string(), "--model-url", model])
            .args(["--dispatch-bench", &dispatch_bench.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the seed stack");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (api, worker) = (format!("127.0.0.1:{api_port}"), format!("127.0.0.1:{worker_port}"));
        let up = |addr: &str| Conn::open(addr).and_then(|mut c| c.request("GET", "/health", b"")).is_ok();
        while !(up(&api) && up(&worker)) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the seed stack exited (run benches/seed_stack/app.py to see why)"
            );
            assert!(t.elapsed() < Duration::from_secs(30), "the seed stack never answered /health");
            std::thread::sleep(Duration::from_millis(5));
        }
        Some((SeedStack { child, api, worker, stdout }, t.elapsed()))
    }
}

/// Run one warm-up session and then SESSIONS sessions of STEPS steps, one after another,
/// against the stack at `api` with one instant worker on `worker`; the step times.
fn drive(api: &str, worker: &str, model: &Model, label: &str) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let handle = instant_worker(worker.to_string(), format!("{label}-worker"), Arc::clone(&stop));
    for k in 0..=SESSIONS {
        record_steps(k > 0);
        let tag = if k == 0 { format!("warm{label}") } else { format!("{label}{k}") };
        let body = json!({"mode": "task", "type": "shell", "target": "bench-host",
            "instruction": format!("{TAG}{tag}: run the command the model asks for"), "options": {"max_turns": 1000}});
        let id = post_json(api, "/sessions", &body)["session_id"].as_str().unwrap().to_string();
        let t = Instant::now();
        while matches!(get_json(api, &format!("/sessions/{id}"))["status"].as_str(), Some("running" | "waiting")) {
            assert!(t.elapsed() < Duration::from_secs(120), "{label} session {id} never finished");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    record_steps(false);
    stop.store(true, Ordering::Relaxed);
    drop(handle); // parked in a long poll; it ends when its stack goes away
    let _ = model.take_steps(&format!("warm{label}"));
    model.take_steps(label)
}

/// Medians of the four parts of a step, from the timeline (emptied), and the dispatch round
/// trip of each step (the model's reply → command at the worker → result acknowledged), sorted.
pub fn step_parts() -> ([f64; 4], Vec<Duration>) {
    use Event::*;
    let timeline = std::mem::take(&mut *TIMELINE.lock().unwrap());
    let mut parts: [Vec<Duration>; 4] = Default::default();
    for w in timeline.windows(5) {
        if w.iter().map(|e| e.0).eq([ModelCall, ModelReply, Command, ResultAcked, ModelCall]) {
            for (i, part) in parts.iter_mut().enumerate() {
                part.push(w[i + 1].1 - w[i].1);
            }
        }
    }
    let mut dispatch: Vec<Duration> = parts[1].iter().zip(&parts[2]).map(|(a, b)| *a + *b).collect();
    dispatch.sort();
    let medians = parts.map(|mut p| {
        p.sort();
        if p.is_empty() { 0.0 } else { ms(percentile(&p, 0.5)) }
    });
    (medians, dispatch)
}

fn print_steps(who: &str, steps: &[Duration]) -> Option<f64> {
    if steps.is_empty() {
        println!("per-step overhead ({who}): no steps recorded");
        return None;
    }
    let p50 = ms(percentile(steps, 0.5));
    println!(
        "per-step overhead ({who}): p50 {p50:.3} ms p99 {:.3} ms ({} steps, {SESSIONS} sessions × {STEPS}, max {:.3} ms)",
        ms(percentile(steps, 0.99)),
        steps.len(),
        ms(*steps.last().unwrap())
    );
    let ([model, to_worker, at_worker, to_model], dispatch) = step_parts();
    println!(
        "  a step's parts, medians ({who}): model answers {model:.3} ms; its reply → command at the worker {to_worker:.3} ms; worker → result acknowledged {at_worker:.3} ms; → next model call {to_model:.3} ms; dispatch (reply → worker → result) p50 {:.3} ms, p99 {:.3} ms",
        ms(percentile(&dispatch, 0.5)),
        ms(percentile(&dispatch, 0.99))
    );
    Some(p50)
}

pub fn per_step(bin: &Path, work: &Path) {
    let model = Model::start(STEPS);
    let (daemon, _) = spawn_with_model(bin, &work.join("steps"), "server: {api_port: 0, worker_port: 0}\n", &model.url);
    let ours = drive(&daemon.api, &daemon.worker, &model, "ours");
    drop(daemon);
    let ours_p50 = print_steps("agent-controller", &ours);
    let Some((seed, _)) = SeedStack::start(&work.join("steps-seed"), &model.url, 0) else { return };
    let theirs = drive(&seed.api, &seed.worker, &model, "seed");
    drop(seed);
    if let (Some(a), Some(b)) = (ours_p50, print_steps("seed stack: Flask + waitress", &theirs)) {
        println!("per-step overhead: agent-controller p50 is {:.1}× better than the seed stack's", b / a);
    }
}
