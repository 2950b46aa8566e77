//! `agent-controller eval` itself, as a user runs it: the real binary with its own daemon, site
//! and agent-worker (real Chromium), against a scripted model. The model's script passes two
//! tasks (an answer saved, a form sent through the real browser) and fails one (it finishes
//! without the file), so the judge is seen to look at the disk and the site, not the words.
//! The miniwob suite runs on a MiniWoB-shaped fixture of our own (`fixtures/miniwob/`: seeded
//! query, START cover, a short time limit, a reward) without pip, and on the real package's
//! click-test when pip can fetch it. While an eval runs, its daemon refuses whoever lacks its
//! own tokens, and a SIGTERM removes its folder.

use crate::support::llm::*;
use crate::support::worker::have_chromium;
use crate::support::*;
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

/// A config for the eval against the scripted model (the injection suite's tests use it too).
pub(crate) fn config_for(llm: &ScriptedLlm, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("config.yaml");
    let yaml = format!(
        "api:\n  provider: anthropic\n  base_url: \"{}\"\n  api_key: sk-test-key-123\n  max_retries: 1\n",
        llm.url
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn the_eval_judges_sessions_by_what_reached_the_disk_and_the_site() {
    if !have_chromium() {
        return;
    }
    let fields = json!([
        {"selector": "#name", "value": "Ada Lovelace"},
        {"selector": "#email", "value": "ada@example.com"},
        {"selector": "#message", "value": "Please call me back."}
    ]);
    let script = vec![
        // price: the pricing page opened, the answer saved, then finished.
        tool("browser_click", json!({"selector": "text=Pricing"})),
        tool("save_file", json!({"filename": "answer.txt", "content": "$45"})),
        tool("finish_task", json!({"summary": "The Team plan costs $45 per month."})),
        // contact-form: filled and sent in the real browser.
        tool("browser_fill_form", json!({"fields": fields})),
        tool("browser_click", json!({"selector": "text=Send message"})),
        tool("finish_task", json!({"summary": "Sent."})),
        // staff-csv: claims success without saving anything.
        tool("finish_task", json!({"summary": "Saved staff.csv."})),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("eval");
    let config = config_for(&llm, dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
        .args(["eval", "--config"])
        .arg(&config)
        .args(["--tasks", "price,contact-form,staff-csv", "--max-turns", "6", "--json"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let rows = report["rows"].as_array().unwrap();
    let row = |task: &str| rows.iter().find(|r| r["task"] == task).unwrap().clone();
    assert_eq!(row("price")["pass"], true, "{report}");
    assert_eq!(row("contact-form")["pass"], true, "the form reached the site: {report}");
    let staff = row("staff-csv");
    assert_eq!(staff["pass"], false, "a summary is not a file: {report}");
    assert!(staff["why"].as_str().unwrap().contains("no file named staff"), "{staff}");
    assert_eq!((report["passed"].clone(), report["runs"].clone()), (json!(2), json!(3)));
    assert_eq!(row("price")["turns"], 3);
    assert_eq!(row("price")["first_request_tokens"], 150, "the scripted usage of the first call, cache reads included");
    assert!(row("contact-form")["input_tokens"].as_u64().unwrap() >= 300, "{report}");

    // Below --min-pass the exit code says so; an unknown task is a usage error.
    let llm2 = ScriptedLlm::start(vec![tool("finish_task", json!({"summary": "done"}))]);
    let config2 = config_for(&llm2, &dir.path().join(""));
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
        .args(["eval", "--config"])
        .arg(&config2)
        .args(["--tasks", "head-office", "--min-pass", "50"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("head-office") && text.contains("FAIL") && text.contains("passed 0/1"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller")).args(["eval", "--tasks", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no eval task \"nope\""));
}

/// `agent-controller probe` asks the endpoint its three questions, keeps the answers for
/// `config check` and `tool_mode: auto`; a session on an endpoint probed as JSON-only then
/// speaks JSON actions (no native tools in its requests).
#[test]
fn probe_finds_what_an_endpoint_can_do_and_auto_uses_it() {
    let script = vec![
        tool("get_weather", json!({"city": "Paris"})),
        text(r#"{"action": "next_step", "tool": "get_weather", "args": {"city": "Paris"}}"#),
        text("Red."),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("probe");
    let config = config_for(&llm, dir.path());
    let yaml = std::fs::read_to_string(&config).unwrap()
        + &format!("output:\n  dir: \"{}\"\n", dir.path().join("out").display());
    std::fs::write(&config, yaml).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
            .args(args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string())
    };
    let (code, printed) = run(&["probe", "--json"]);
    assert_eq!(code, Some(0), "{printed}");
    let found: Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(
        (found["native_tools"].clone(), found["json_mode"].clone(), found["vision"].clone()),
        (json!(true), json!(true), json!(true)),
        "{found}"
    );
    assert_eq!(found["context_tokens"], Value::Null, "the scripted server reports no context length");
    let reqs = llm.requests();
    assert_eq!(reqs[0].tool_names(), ["get_weather"]);
    assert!(reqs[1].body.get("tools").is_none(), "JSON mode lists the tool in the prompt");
    assert_eq!(reqs[2].image_count(), 1);
    let (_, check) = run(&["config", "check"]);
    assert!(
        check.contains("probed: native tools yes, JSON mode yes, reply schema no, images yes, context unknown tokens"),
        "{check}"
    );

    // Probed as JSON-only: `tool_mode: auto` sessions speak JSON actions.
    let out = dir.path().join("out2");
    std::fs::create_dir_all(&out).unwrap();
    let (d, llm2) = llm_daemon(&out, vec![text(r#"{"action": "complete", "message": "done"}"#)], |c| {
        c.api.tool_mode = "auto".into();
    });
    let endpoint = json!({"base_url": llm2.url, "model": "claude-sonnet-4-6", "native_tools": false, "json_mode": true, "vision": false});
    std::fs::write(out.join("probes.json"), json!({"api": endpoint}).to_string()).unwrap();
    let _worker = ScriptedWorker::start(
        &d.worker_client(),
        "auto-box",
        &["shell"],
        false,
        |_| json!({"success": true, "data": {}}),
    );
    let id =
        create_session(&d.client(), json!({"mode": "task", "type": "shell", "target": "auto-box", "instruction": "x"}));
    let s = wait_status(&d.client(), &id, "finished");
    assert_eq!(s["summary"], "done");
    assert!(llm2.requests()[0].body.get("tools").is_none(), "JSON mode: {}", llm2.requests()[0].body);
}

/// `agent-controller eval …` with the config and these environment variables: (exit code, stdout, stderr).
fn eval(config: &std::path::Path, args: &[&str], env: &[(&str, &std::path::Path)]) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-controller"));
    command.args(["eval", "--config"]).arg(config).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() { copy_dir(&path, &dest) } else { std::fs::copy(&path, &dest).map(|_| ()).unwrap() }
    }
}

/// Every distinct text of the requests that starts with `prefix` and runs to the next `.`.
fn asked(llm: &ScriptedLlm, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for r in llm.requests() {
        let body = r.body.to_string();
        for (i, _) in body.match_indices(prefix) {
            let end = body[i..].find('.').map_or(body.len(), |e| i + e + 1);
            if !found.contains(&body[i..end].to_string()) {
                found.push(body[i..end].to_string());
            }
        }
    }
    found
}

/// The fixture pages stand in for the package (put in the cache, so pip is never asked): the
/// instruction is the page's own seeded query, its reward display is hidden, the START cover is
/// skipped, the page's 1.5 s limit is lifted (the first click comes after 2 s; an episode never
/// ended is "no reward", not a time-out), and only the page's reward passes a run, whatever the
/// model says.
#[test]
fn the_miniwob_suite_seeds_each_page_lifts_its_limit_and_judges_by_its_reward() {
    if !have_chromium() {
        return;
    }
    // A click that ends the episode comes with the finish in the same reply: the eval stops a
    // session once its page gave the reward, so a later request might never be made.
    let click_and_finish = |selector: &str, summary: &str| {
        tools(None, &[("browser_click", json!({"selector": selector})), ("finish_task", json!({"summary": summary}))])
    };
    let script = vec![
        // click-test, run 1: the right button, after the page's own limit would have ended it.
        click_and_finish("#target", "Clicked.").delayed(std::time::Duration::from_secs(2)),
        // click-test-2, run 1: the wrong one, and says otherwise.
        click_and_finish("#other", "Clicked the right button."),
        // click-test, run 2: never clicks.
        tool("finish_task", json!({"summary": "Clicked the button."})),
        // click-test-2, run 2: the right one.
        click_and_finish("#target", "Done."),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("eval-miniwob");
    let config = config_for(&llm, dir.path());
    let cache = dir.path().join("cache");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/miniwob");
    copy_dir(&fixture, &cache.join("agent-controller/miniwob/1.1.0/html"));
    let args =
        ["--suite", "miniwob", "--tasks", "click-test,click-test-2", "--repeat", "2", "--max-turns", "4", "--json"];
    let (code, stdout, stderr) = eval(&config, &args, &[("XDG_CACHE_HOME", &cache), ("TMPDIR", dir.path())]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let rows = report["rows"].as_array().unwrap();
    let row = |task: &str, run: u64| rows.iter().find(|r| r["task"] == task && r["run"] == run).unwrap().clone();
    let first = row("click-test", 1);
    assert_eq!((first["pass"].clone(), first["reward"].clone()), (json!(true), json!(1.0)), "{report}");
    let wrong = row("click-test-2", 1);
    assert_eq!((wrong["pass"].clone(), wrong["reward"].clone()), (json!(false), json!(-1.0)), "{report}");
    assert_eq!(wrong["why"], "reward -1 (wrong button)", "the page's word, not the model's: {report}");
    let idle = row("click-test", 2);
    assert_eq!((idle["pass"].clone(), idle["reward"].clone()), (json!(false), Value::Null), "{report}");
    assert_eq!(idle["why"], "no reward", "no time-out ended it: {report}");
    assert_eq!(row("click-test-2", 2)["pass"], true, "{report}");

    // Each session was told exactly its page's query; the seed differs between runs.
    assert_ne!(first["seed"], idle["seed"]);
    let queries = asked(&llm, "Click the button labelled ");
    assert_eq!(queries.len(), 2, "one query per run of click-test: {queries:?}");
    assert_eq!(asked(&llm, "Press the button that says ").len(), 2);
    assert_eq!(asked(&llm, "Last reward"), Vec::<String>::new(), "the page's scoreboard is not the task's");

    // Per task and per run.
    assert_eq!(report["tasks"][0], json!({"task": "click-test", "passed": 1, "runs": 2, "pattern": "10"}));
    assert_eq!(report["tasks"][1]["pattern"], "01");
    assert_eq!((report["min_run_percent"].clone(), report["max_run_percent"].clone()), (json!(50.0), json!(50.0)));
    assert_eq!((report["suite"].clone(), report["passed"].clone()), (json!("miniwob"), json!(2)));
    assert_eq!(report["guards"], Value::Null, "no guards option unless asked for");
}

/// The real MiniWoB++ package (fetched with pip into the usual cache, once) and its click-test
/// page: the query is the page's, the click on its button is rewarded by its own code.
#[test]
fn the_miniwob_suite_runs_the_real_click_test_page() {
    if !have_chromium() {
        return;
    }
    let script = vec![
        tool("browser_click", json!({"selector": "#subbtn"})),
        tool("finish_task", json!({"summary": "Clicked the button."})),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("eval-miniwob-real");
    let config = config_for(&llm, dir.path());
    let args = ["--suite", "miniwob", "--tasks", "click-test", "--max-turns", "4", "--json"];
    let (code, stdout, stderr) = eval(&config, &args, &[("TMPDIR", dir.path())]);
    if code == Some(2) && (stderr.contains("pip download miniwob") || stderr.contains("needs pip")) {
        eprintln!("SKIPPED: the MiniWoB++ package could not be fetched with pip: {stderr}");
        return;
    }
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let row = &report["rows"][0];
    assert_eq!((row["pass"].clone(), row["reward"].clone()), (json!(true), json!(1.0)), "{report}");
    assert_eq!(asked(&llm, "Click the button."), ["Click the button."]);
}

/// What the miniwob suite refuses before it starts anything: a held-out task, an unknown suite,
/// a guards value that is not on or off; `--list` names the 36 development tasks.
#[test]
fn the_miniwob_suite_runs_only_the_development_split() {
    let dir = TempDir::new("eval-miniwob-usage");
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "").unwrap();
    let (code, listed, _) = eval(&config, &["--suite", "miniwob", "--list"], &[]);
    assert_eq!(code, Some(0));
    assert_eq!(listed.lines().count(), 36, "{listed}");
    assert!(listed.contains("click-test ") && !listed.contains("book-flight"), "{listed}");
    let (code, _, stderr) = eval(&config, &["--suite", "miniwob", "--tasks", "book-flight"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no task \"book-flight\" in the miniwob suite") && stderr.contains("development split"));
    let (code, _, stderr) = eval(&config, &["--suite", "webshop"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--suite \"webshop\": say own, miniwob or injection"), "{stderr}");
    let (code, _, stderr) = eval(&config, &["--suite", "miniwob", "--guards", "maybe"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--guards \"maybe\": say on or off"), "{stderr}");
    let (code, _, stderr) = eval(&config, &["--suite", "miniwob", "--site-port", "80a"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--site-port \"80a\" is not a number"), "{stderr}");
}

/// `--ablate-fired`: after a run, each guard that fired in it (here only the one named) is
/// switched off and the same task and seed run again; the table pairs the two outcomes and
/// counts the suite's rate without the guard. The rerun's requests really lack the guard.
#[test]
fn ablate_fired_reruns_each_run_with_the_guard_that_fired_off() {
    if !have_chromium() {
        return;
    }
    let click =
        || tools(None, &[("browser_click", json!({"selector": "#target"})), ("finish_task", json!({"summary": "ok"}))]);
    // The run with the short catalog passes; the rerun without it never clicks.
    let llm = ScriptedLlm::start(vec![click(), tool("finish_task", json!({"summary": "done"}))]);
    let dir = TempDir::new("eval-ablate");
    let config = config_for(&llm, dir.path());
    let cache = dir.path().join("cache");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/miniwob");
    copy_dir(&fixture, &cache.join("agent-controller/miniwob/1.1.0/html"));
    let args = ["--suite", "miniwob", "--tasks", "click-test", "--profile", "small"];
    // A fixed site port: the run and its rerun read the same URLs.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let args =
        [&args[..], &["--ablate-fired", "short_catalog", "--first-run", "3", "--site-port", &port, "--json"]].concat();
    let (code, stdout, stderr) = eval(&config, &args, &[("XDG_CACHE_HOME", &cache), ("TMPDIR", dir.path())]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!((report["passed"].clone(), report["runs"].clone()), (json!(1), json!(1)), "reruns are apart: {report}");
    let rerun = &report["reruns"][0];
    assert_eq!((rerun["ablated"].clone(), rerun["pass"].clone()), (json!("short_catalog"), json!(false)), "{report}");
    assert_eq!(rerun["seed"], report["rows"][0]["seed"], "the same page");
    assert_eq!((report["rows"][0]["run"].clone(), rerun["run"].clone()), (json!(3), json!(3)), "--first-run 3");
    assert_eq!(report["reruns"].as_array().unwrap().len(), 1, "only the guard named: {report}");
    let effect = &report["ablation"][0];
    assert_eq!(
        effect,
        &json!({"guard": "short_catalog", "fired_runs": 1, "void": 0, "runs": 1, "passed_with": 1, "passed_without": 0,
            "suite_with": 1, "suite_without": 0})
    );
    let requests = llm.requests();
    let short = |r: &Recorded| !r.tool_names().iter().any(|n| n == "browser_scrape_links");
    assert!(short(&requests[0]) && !short(&requests[1]), "the rerun ran with the whole catalog");
    let on_port = |r: &Recorded| r.body.to_string().contains(&format!("127.0.0.1:{port}/"));
    assert!(on_port(&requests[0]) && on_port(&requests[1]), "both on the site port asked for");
}

/// Issue 65: the eval's daemon had no token while it ran, so any local process could create a
/// shell session on the eval's worker and run a command through `act`; and a SIGTERM left the
/// eval's private folder behind.
#[test]
fn while_an_eval_runs_its_daemon_refuses_strangers_and_a_sigterm_removes_its_folder() {
    if !have_chromium() {
        return;
    }
    use std::io::BufRead;
    // The model takes a minute over its first answer: the eval is mid-session meanwhile.
    let llm = ScriptedLlm::start(vec![tool("finish_task", json!({"summary": "x"})).delayed(Duration::from_secs(60))]);
    let dir = TempDir::new("eval-locked");
    let config = config_for(&llm, dir.path());
    let child = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
        .args(["eval", "--config"])
        .arg(&config)
        .args(["--tasks", "price", "--json"])
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut eval = ChildGuard(child);
    let mut stderr = std::io::BufReader::new(eval.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("its daemon serves") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the eval never said where its daemon is");
    }
    let after = |key: &str| line.split_once(key).unwrap().1.split([' ', ')']).next().unwrap().to_string();
    let (api, workers) = (after("serves "), after("(workers: "));
    wait_until(Duration::from_secs(60), "the eval's session asks the model", || {
        (!llm.requests().is_empty()).then_some(())
    });

    let stranger = Client::new(api, None);
    assert_eq!(stranger.get("/sessions").status, 401);
    let shell =
        json!({"mode": "task", "type": "shell", "target": "eval-box", "worker": "eval-box", "instruction": "id"});
    assert_eq!(stranger.post("/sessions", &shell).status, 401);
    let posing = json!({"hostname": "eval-box", "capabilities": ["shell"], "use_secret": true});
    assert_eq!(Client::new(workers, None).post("/register", &posing).status, 401);

    let scratch = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("agent-controller-eval-"))
            .count()
    };
    assert_eq!(scratch(), 1, "the eval's folder is there while it runs");
    // SAFETY: our own child, still running.
    unsafe { libc::kill(eval.0.id() as libc::pid_t, libc::SIGTERM) };
    let status = wait_until(Duration::from_secs(20), "the eval to end", || eval.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(scratch(), 0, "the eval's folder is gone");
}
