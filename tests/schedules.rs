//! Scheduled sessions through the real daemon: `every` runs marked with their schedule, the
//! list with last and next run, bad input refused, a schedule that outlives a restart, no run
//! after DELETE, an overlapping run skipped, config.yaml's schedules read-only, and a replay
//! schedule whose runs fetch the file again with no model call (and report a divergence).

use crate::support::llm::*;
use crate::support::*;
use agent_controller::session::{AgentFn, AgentOutcome};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// An agent that finishes at once: each run is a whole session in a few milliseconds.
fn instant_agent() -> AgentFn {
    Arc::new(|_runner| AgentOutcome::Finished { summary: "done".into() })
}

/// The test config with runs allowed a second apart (60 s at least by default).
fn config(dir: &std::path::Path) -> agent_controller::config::Config {
    let mut c = test_config(dir);
    c.server.schedule_min_interval_s = 1;
    c
}

fn task() -> Value {
    json!({"mode": "task", "target": "https://example.test/", "instruction": "fetch the report"})
}

/// A seed-shaped worker that answers every command with success.
fn worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(&d.worker_client(), "sched-box", &["browser"], true, |_| json!({"success": true, "data": {}}))
}

fn runs_of(c: &Client, name: &str) -> Vec<Value> {
    c.get(&format!("/sessions?schedule={name}")).json().as_array().unwrap().clone()
}

fn wait_runs(c: &Client, name: &str, n: usize) -> Vec<Value> {
    wait_until(Duration::from_secs(20), &format!("{n} runs of {name}"), || {
        let runs = runs_of(c, name);
        (runs.len() >= n).then_some(runs)
    })
}

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(30), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

#[test]
fn every_runs_are_marked_listed_counted_and_stop_after_delete() {
    let dir = TempDir::new("sched-every");
    let d = TestDaemon::start(config(dir.path()), instant_agent());
    let _w = worker(&d);
    let c = d.client();
    let r = c.post("/schedules", &json!({"name": "tick", "every": "1s", "session": task()}));
    assert_eq!(r.status, 201, "{}", r.text());
    let made = r.json();
    assert_eq!(
        (made["name"].as_str(), made["every"].as_str(), made["from"].as_str()),
        (Some("tick"), Some("1s"), Some("api"))
    );
    assert!(made["next_run"].is_string() && made["last_run"].is_null(), "{made}");

    let runs = wait_runs(&c, "tick", 2);
    // Newest first; every one is marked with its schedule and its run number.
    for s in &runs {
        let id = s["session_id"].as_str().unwrap();
        let record = c.get(&format!("/sessions/{id}")).json();
        assert_eq!(record["schedule"]["name"], "tick", "{record}");
        assert!(record["schedule"]["run"].as_u64().unwrap() >= 1);
        assert_eq!(s["schedule"], record["schedule"]);
    }
    assert!(c.get("/sessions?schedule=other").json().as_array().unwrap().is_empty());
    let first = runs.last().unwrap()["session_id"].as_str().unwrap().to_string();
    assert_eq!(ended(&c, &first)["status"], "finished");

    let list = c.get("/schedules").json();
    let tick = &list.as_array().unwrap()[0];
    assert_eq!(tick["name"], "tick");
    assert!(tick["runs"].as_u64().unwrap() >= 2, "{tick}");
    let last = &tick["last_run"];
    assert!(last["session_id"].as_str().unwrap().starts_with("sess_"), "{tick}");
    assert!(last["status"].is_string() && last["at"].is_string() && last["run"].as_u64().unwrap() >= 2, "{tick}");
    assert!(tick["next_run"].as_str().unwrap() >= last["at"].as_str().unwrap(), "{tick}");
    assert_eq!(c.get("/schedules/tick").json()["name"], "tick");
    let metrics = c.get("/metrics").text();
    assert!(
        metrics.contains("agent_controller_schedule_runs_total{schedule=\"tick\",outcome=\"finished\"}"),
        "{metrics}"
    );

    let r = c.delete("/schedules/tick");
    assert_eq!(r.status, 200, "{}", r.text());
    // A run being created at the moment of the DELETE may still land; none after it.
    std::thread::sleep(Duration::from_millis(300));
    let after_delete = runs_of(&c, "tick").len();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(runs_of(&c, "tick").len(), after_delete, "no run after DELETE");
    assert_error(&c.get("/schedules/tick"), 404, "not_found");
    assert_error(&c.delete("/schedules/tick"), 404, "not_found");
    assert!(!dir.path().join("schedules/tick.json").exists());
}

#[test]
fn bad_schedules_are_refused_with_the_reason() {
    let dir = TempDir::new("sched-bad");
    let d = TestDaemon::start(config(dir.path()), instant_agent());
    let c = d.client();
    let ok = json!({"name": "daily", "cron": "0 6 * * *", "session": task()});
    assert_eq!(c.post("/schedules", &ok).status, 201);
    assert_error(&c.post("/schedules", &ok), 409, "conflict");
    let cases = [
        (json!({"name": "c", "cron": "0 25 * * *", "session": task()}), "cron"),
        (json!({"name": "c", "cron": "every day", "session": task()}), "cron"),
        (json!({"name": "c", "cron": "* * * * * *", "session": task()}), "five fields"),
        (json!({"name": "z", "every": "0s", "session": task()}), "longer than zero"),
        (json!({"name": "z", "every": "5 parsecs", "session": task()}), "every"),
        (json!({"name": "z", "every": "1m", "cron": "* * * * *", "session": task()}), "not both"),
        (json!({"name": "z", "session": task()}), "every"),
        (json!({"name": "s", "every": "1h", "session": {"mode": "task", "target": "https://x.test/"}}), "instruction"),
        (json!({"name": "s", "every": "1h", "session": {"mode": "task", "target": "x", "instuction": "y"}}), "session"),
        (json!({"name": "s", "every": "1h", "session": "not a body"}), "session"),
        (json!({"name": "s", "every": "1h"}), "session"),
        (json!({"name": "../escape", "every": "1h", "session": task()}), "name"),
        (json!({"name": "a/b", "every": "1h", "session": task()}), "name"),
        (json!({"name": ".hidden", "every": "1h", "session": task()}), "name"),
        (json!({"name": "", "every": "1h", "session": task()}), "name"),
        (json!({"name": "r", "every": "1h", "replay_of": "sess_nope"}), "replay_of"),
        (json!({"name": "t", "cron": "0 6 * * *", "tz": "Nowhere/Land", "session": task()}), "tz"),
        (json!({"name": "u", "every": "1h", "session": task(), "sometimes": true}), "unknown field"),
        (json!(["a", "1h"]), "must be a JSON object"),
        (
            json!({"name": "b", "every": "1h", "session": {"mode": "task", "target": "x", "instruction": "i",
                "options": {"budget": [5, 2.5, 9]}}}),
            "`options.budget` must be a JSON object",
        ),
    ];
    for (body, needle) in cases {
        let r = c.post("/schedules", &body);
        assert_error(&r, 400, "bad_request");
        assert!(r.json()["error"].as_str().unwrap().contains(needle), "{body}: {}", r.text());
    }
    assert_eq!(c.get("/schedules").json().as_array().unwrap().len(), 1, "nothing half-made");
    let files: Vec<_> =
        std::fs::read_dir(dir.path().join("schedules")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, ["daily.json"], "one file, no temp files");
    assert_error(&c.post("/schedules/nope/run", &json!({})), 404, "not_found");
    // A cron schedule in a named zone shows its next run.
    let r = c
        .post("/schedules", &json!({"name": "paris", "cron": "30 9 * * 1-5", "tz": "Europe/Paris", "session": task()}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.json()["next_run"].as_str().unwrap().ends_with(":30:00Z"), "{}", r.text());
}

#[test]
fn a_schedule_outlives_a_restart_and_config_schedules_are_read_only() {
    let dir = TempDir::new("sched-restart");
    let mut config = config(dir.path());
    config.schedules = vec![json!({"name": "from-config", "cron": "0 3 1 * *", "session": task()})];
    let mut d = TestDaemon::start(config.clone(), instant_agent());
    let c = d.client();
    let r = c.post("/schedules", &json!({"name": "kept", "every": "1s", "session": task()}));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c.delete("/schedules/from-config");
    assert_error(&r, 409, "conflict");
    assert!(r.json()["error"].as_str().unwrap().contains("config.yaml"), "{}", r.text());
    assert_error(
        &c.post("/schedules", &json!({"name": "from-config", "every": "1h", "session": task()})),
        409,
        "conflict",
    );
    let w = worker(&d);
    wait_runs(&c, "kept", 1);
    drop(w);
    d.shutdown();

    let d = TestDaemon::start(config, instant_agent());
    let c = d.client();
    let kept = c.get("/schedules/kept").json();
    let before = kept["runs"].as_u64().unwrap();
    assert!(before >= 1 && kept["last_run"]["session_id"].is_string(), "{kept}");
    assert_eq!(c.get("/schedules/from-config").json()["from"], "config");
    let _w = worker(&d);
    let run = wait_until(Duration::from_secs(20), "a run after the restart", || {
        let runs = runs_of(&c, "kept");
        runs.iter().filter_map(|s| s["schedule"]["run"].as_u64()).max().filter(|n| *n > before)
    });
    assert_eq!(run, before + 1, "the run count goes on");
    assert_eq!(c.delete("/schedules/kept").status, 200);
}

#[test]
fn runs_missed_while_down_are_made_up_once_only_with_catch_up() {
    let dir = TempDir::new("sched-catch-up");
    let mut d = TestDaemon::start(config(dir.path()), instant_agent());
    let c = d.client();
    for (name, catch_up) in [("caught", true), ("dropped", false)] {
        let body = json!({"name": name, "every": "1h", "session": task(), "catch_up": catch_up});
        assert_eq!(c.post("/schedules", &body).status, 201);
    }
    d.shutdown();
    // As if the daemon had been down for two and a half hours: two runs missed.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    for name in ["caught", "dropped"] {
        let path = dir.path().join(format!("schedules/{name}.json"));
        let mut kept: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        kept["created_ms"] = json!(now_ms - 9_000_000);
        std::fs::write(&path, serde_json::to_vec(&kept).unwrap()).unwrap();
    }
    let d = TestDaemon::start(config(dir.path()), instant_agent());
    let _w = worker(&d);
    let c = d.client();
    wait_runs(&c, "caught", 1);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(runs_of(&c, "caught").len(), 1, "one catch-up run, not one per missed run");
    assert!(runs_of(&c, "dropped").is_empty(), "without catch_up the missed runs are dropped");
    let dropped = c.get("/schedules/dropped").json();
    assert!(dropped["next_run"].as_str().unwrap() > dropped["created_at"].as_str().unwrap(), "{dropped}");
}

#[test]
fn a_run_still_going_makes_the_next_one_skip() {
    let dir = TempDir::new("sched-overlap");
    // The idle agent holds its session until it is stopped.
    let d = TestDaemon::idle(config(dir.path()));
    let _w = worker(&d);
    let c = d.client();
    assert_eq!(c.post("/schedules", &json!({"name": "slow", "every": "1s", "session": task()})).status, 201);
    let first = wait_runs(&c, "slow", 1)[0]["session_id"].as_str().unwrap().to_string();
    let skipped = wait_until(Duration::from_secs(10), "two skipped runs", || {
        let s = c.get("/schedules/slow").json();
        (s["skipped"].as_u64().unwrap() >= 2).then_some(s)
    });
    assert_eq!(skipped["running"], true);
    assert_eq!(runs_of(&c, "slow").len(), 1, "never stacked");
    assert_error(&c.post("/schedules/slow/run", &json!({})), 409, "conflict");
    let metrics = c.get("/metrics").text();
    assert!(
        metrics.contains("agent_controller_schedule_runs_total{schedule=\"slow\",outcome=\"skipped\"}"),
        "{metrics}"
    );
    // Once it ends, the next due run starts.
    assert_eq!(c.delete(&format!("/sessions/{first}")).status, 200);
    let runs = wait_runs(&c, "slow", 2);
    assert_eq!(runs[0]["schedule"]["run"], 2, "{runs:?}");
    assert_eq!(c.delete("/schedules/slow").status, 200);
}

#[test]
fn a_replay_schedule_fetches_the_file_again_without_the_model() {
    let script = vec![
        tool("browser_download", json!({"url": "https://x.test/report-{{month}}.pdf"})),
        tool("finish_task", json!({"summary": "got the report"})),
        // The model, once a replay diverges.
        tool("finish_task", json!({"summary": "the report moved"})),
    ];
    let dir = TempDir::new("sched-replay");
    let hooks = Receiver::start();
    let (d, llm) = llm_daemon(dir.path(), script, |c| {
        c.notifications.allow_private = true;
        c.server.schedule_min_interval_s = 1;
    });
    let uploader = d.worker_client();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failing = Arc::clone(&fail);
    let _w = ScriptedWorker::start(&d.worker_client(), "seed-box", &["browser"], true, move |cmd| {
        if cmd["action"] != "browser_download" {
            return json!({"success": true, "data": {}});
        }
        if failing.load(std::sync::atomic::Ordering::Relaxed) {
            return json!({"success": false, "error": "404 Not Found"});
        }
        let name = cmd["params"]["url"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
        json!({"success": true, "data": upload_as_worker(&uploader, cmd, &name, b"%PDF-1.4 monthly")})
    });
    let c = d.client();
    let first = create_session(&c, task());
    assert_eq!(ended(&c, &first)["status"], "finished");
    let calls = llm.requests().len();

    let body = json!({"name": "monthly", "every": "1s", "replay_of": first, "params": {"month": "2026-11"},
                      "notify": {"webhook": {"url": format!("{}/hook", hooks.url)}}});
    let r = c.post("/schedules", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["notify"], json!({"telegram": false, "webhook": true}), "targets are not shown");
    let runs = wait_runs(&c, "monthly", 2);
    for s in &runs[runs.len() - 2..] {
        let id = s["session_id"].as_str().unwrap();
        let record = ended(&c, id);
        assert_eq!(record["status"], "finished", "{record}");
        assert_eq!(record["replay"]["source"], first.as_str());
        assert!(record["replay"]["model_steps"].is_null(), "{record}");
        let files = c.get(&format!("/sessions/{id}/files")).json();
        assert_eq!(files[0]["filename"], "report-2026-11.pdf", "{files}");
    }
    assert_eq!(llm.requests().len(), calls, "no model call");

    // The file is gone: the replay hands over to the model, and the schedule reports it.
    fail.store(true, std::sync::atomic::Ordering::Relaxed);
    let hit = wait_until(Duration::from_secs(20), "the divergence to be reported", || {
        hooks.hits().into_iter().find(|(_, _, body)| body["message"].as_str().is_some_and(|m| m.contains("diverged")))
    });
    let metrics = c.get("/metrics").text();
    assert!(metrics.contains("schedule=\"monthly\",outcome=\"diverged\""), "{metrics}");
    assert_eq!(c.delete("/schedules/monthly").status, 200);
    let message = hit.2["message"].as_str().unwrap();
    assert!(message.contains("Schedule monthly") && message.contains("404 Not Found"), "{message}");
}

#[test]
fn the_console_adds_lists_runs_and_removes_a_schedule() {
    let dir = TempDir::new("sched-console");
    let d = TestDaemon::start(config(dir.path()), instant_agent());
    let _w = worker(&d);
    let run = |args: &[&str]| {
        let o = std::process::Command::new(binary())
            .args(args)
            .env("AGENT_CONTROLLER_API", &d.api)
            .env_remove("AGENT_CONTROLLER_TOKEN")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    };
    let session = task().to_string();
    let (code, out) = run(&["schedule", "add", "nightly", "--cron", "0 2 * * *", "--tz", "UTC", "--session", &session]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("schedule nightly added; next run ") && out.contains("T02:00:00Z"), "{out}");
    let (code, out) = run(&["schedule", "run", "nightly"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("run 1 of nightly started: session sess_"), "{out}");
    let (_, out) = run(&["schedule", "list"]);
    assert!(
        out.contains("NAME") && out.contains("nightly") && out.contains("0 2 * * *") && out.contains("#1 "),
        "{out}"
    );
    let (code, out) = run(&["schedule", "add", "bad", "--every", "0s", "--session", &session]);
    assert_eq!(code, Some(5), "an API error: {out}");
    assert!(out.contains("longer than zero"), "{out}");
    let (code, out) = run(&["schedule", "rm", "nightly"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("schedule nightly removed"), "{out}");
    assert!(no_schedules(&d.client()));
    let (code, out) = run(&["schedule", "frobnicate"]);
    assert_eq!(code, Some(2), "{out}");
}

fn no_schedules(c: &Client) -> bool {
    c.get("/schedules").json().as_array().unwrap().is_empty()
}

/// Schedules are capped (`server.max_schedules`) and run at least a minute apart
/// (`server.schedule_min_interval_s`): `every: 1s` made a session a second.
#[test]
fn schedules_are_capped_and_at_least_a_minute_apart() {
    let dir = TempDir::new("sched-limits");
    let mut config = test_config(dir.path());
    config.server.max_schedules = 2;
    let d = TestDaemon::start(config, instant_agent());
    let c = d.client();
    for every in ["1s", "59s"] {
        let r = c.post("/schedules", &json!({"name": "fast", "every": every, "session": task()}));
        assert_error(&r, 400, "bad_request");
        assert!(r.json()["error"].as_str().unwrap().contains("schedule_min_interval_s"), "{}", r.text());
    }
    for name in ["a", "b"] {
        let r = c.post("/schedules", &json!({"name": name, "every": "1m", "session": task()}));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = c.post("/schedules", &json!({"name": "c", "cron": "0 6 * * *", "session": task()}));
    assert_error(&r, 409, "conflict");
    assert!(r.json()["error"].as_str().unwrap().contains("server.max_schedules"), "{}", r.text());
    assert_eq!(c.delete("/schedules/a").status, 200);
    assert_eq!(c.post("/schedules", &json!({"name": "c", "cron": "0 6 * * *", "session": task()})).status, 201);
}

/// A schedule deleted and made again under its name while its run still goes does not start a
/// second run beside it.
#[test]
fn a_schedule_made_again_does_not_overlap_the_old_one_s_run() {
    let dir = TempDir::new("sched-again");
    // The idle agent holds its session until it is stopped.
    let d = TestDaemon::idle(config(dir.path()));
    let _w = worker(&d);
    let c = d.client();
    let body = json!({"name": "again", "every": "1h", "session": task()});
    assert_eq!(c.post("/schedules", &body).status, 201);
    let r = c.post("/schedules/again/run", &json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    let first = r.json()["session_id"].as_str().unwrap().to_string();
    assert_eq!(c.delete("/schedules/again").status, 200);
    assert_eq!(c.post("/schedules", &body).status, 201);
    assert_error(&c.post("/schedules/again/run", &json!({})), 409, "conflict");
    assert_eq!(c.get("/schedules/again").json()["running"], true);
    assert_eq!(runs_of(&c, "again").len(), 1, "never two at once");
    assert_eq!(c.delete(&format!("/sessions/{first}")).status, 200);
    wait_until(Duration::from_secs(10), "the old run to end", || {
        (c.get("/schedules/again").json()["running"] == false).then_some(())
    });
    assert_eq!(c.post("/schedules/again/run", &json!({})).status, 201);
}

/// A run a restart interrupted and a person resumed is the schedule's run again: the next run
/// waits for it, and its end is recorded (it was neither: runs overlapped, its end was lost).
#[test]
fn a_resumed_scheduled_run_stays_linked_to_its_schedule() {
    let dir = TempDir::new("sched-resume");
    let mut d = TestDaemon::idle(config(dir.path()));
    let w = worker(&d);
    let c = d.client();
    assert_eq!(c.post("/schedules", &json!({"name": "night", "every": "1h", "session": task()})).status, 201);
    let r = c.post("/schedules/night/run", &json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["session_id"].as_str().unwrap().to_string();
    wait_status(&c, &id, "running");
    drop(w);
    d.shutdown();

    let d = TestDaemon::idle(config(dir.path()));
    let _w = worker(&d);
    let c = d.client();
    let r = c.post(&format!("/sessions/{id}/resume"), &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    wait_status(&c, &id, "running");
    assert_eq!(c.get("/schedules/night").json()["running"], true);
    assert_error(&c.post("/schedules/night/run", &json!({})), 409, "conflict");
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    let metrics = wait_until(Duration::from_secs(10), "the run's end to be recorded", || {
        let m = c.get("/metrics").text();
        m.contains("agent_controller_schedule_runs_total{schedule=\"night\",outcome=\"stopped\"} 1").then_some(m)
    });
    assert!(!metrics.contains("outcome=\"finished\""), "{metrics}");
    let night = c.get("/schedules/night").json();
    assert_eq!((night["running"].as_bool(), night["last_run"]["status"].as_str()), (Some(false), Some("stopped")));
    let kept: Value = serde_json::from_slice(&std::fs::read(dir.path().join("schedules/night.json")).unwrap()).unwrap();
    assert_eq!(kept["last"]["status"], "stopped", "{kept}");
}
