//! What every session now records and offers beside the agent loop: the step log
//! (`steps.jsonl`, `GET /steps`), dry runs, desktop screenshots (full PNG kept, the model's
//! copy sized by the session, a repeated frame not sent again, image counts), and a lease wait
//! that says what it waits for and can give up.

use crate::support::llm::*;
use crate::support::*;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(30), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

#[test]
fn dry_run_acts_on_nothing_and_the_step_log_has_every_call() {
    let dir = TempDir::new("dry-run");
    let script = vec![
        tool("browser_get_text", json!({})),
        tool("browser_click", json!({"selector": "#buy"})),
        tool("browser_type", json!({"selector": "#pw", "text": "s3cret-pw"})),
        tool("finish_task", json!({"summary": "planned the purchase"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = ScriptedWorker::start(
        &d.worker_client(),
        "box",
        &["browser"],
        false,
        |_| json!({"success": true, "data": {"text": "Buy now"}}),
    );
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://shop.test/", "instruction": "buy", "options": {"dry_run": true},
               "credentials": {"username": "u", "password": "s3cret-pw"}}),
    );
    assert_eq!(ended(&c, &id)["status"], "finished");
    let seen: Vec<String> =
        worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect();
    assert_eq!(seen, ["browser_get_text"], "only the observing tool reached the worker");
    let results = llm.requests()[2].last_results();
    assert_eq!(results[0]["content"][0]["text"], "(dry-run) click #buy; nothing was done");
    let steps = c.get(&format!("/sessions/{id}/steps")).json();
    let steps = steps.as_array().unwrap();
    assert_eq!(steps.len(), 4);
    let summary: Vec<(u64, &str, bool)> = steps
        .iter()
        .map(|s| (s["step"].as_u64().unwrap(), s["tool"].as_str().unwrap(), s["dry_run"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            (1, "browser_get_text", false),
            (2, "browser_click", true),
            (3, "browser_type", true),
            (4, "finish_task", false)
        ]
    );
    assert!(steps[0]["observation"].as_str().unwrap().contains("Buy now"));
    assert!(steps[0]["duration_ms"].is_u64() && steps[0]["ts"].is_string());
    assert_eq!(steps[2]["args"]["text"], "[redacted]", "a vault secret is masked in the step log");
    let on_disk = std::fs::read_to_string(dir.path().join(&id).join("steps.jsonl")).unwrap();
    assert_eq!(on_disk.lines().count(), 4);
    assert!(!on_disk.contains("s3cret-pw"));
}

/// A desktop worker whose screen changes only when told to.
fn desktop_worker(d: &TestDaemon) -> ScriptedWorker {
    let frame = std::sync::atomic::AtomicU32::new(0);
    ScriptedWorker::start(&d.worker_client(), "desk", &["app"], false, move |cmd| {
        match cmd["action"].as_str().unwrap() {
            "screenshot" => {
                let n = frame.load(std::sync::atomic::Ordering::Relaxed);
                let jpeg = format!("jpeg-bytes-of-frame-{n}");
                let png = format!("full-png-of-frame-{n}");
                json!({"success": true, "data": {"image_base64": STANDARD.encode(jpeg), "media_type": "image/jpeg",
                "width": 1280, "height": 720, "scale": 1.5, "full_png_base64": STANDARD.encode(png)}})
            }
            _ => {
                frame.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                json!({"success": true, "data": {"clicked": [cmd["params"]["x"], cmd["params"]["y"]]}})
            }
        }
    })
}

#[test]
fn desktop_frames_full_png_kept_repeats_not_resent_and_counted() {
    let dir = TempDir::new("frames");
    let script = vec![
        tool("screenshot", json!({})),
        tool("screenshot", json!({})),
        tool("click", json!({"x": 10, "y": 20})),
        tool("screenshot", json!({})),
        tool("finish_exploration", json!({"summary": "looked"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = desktop_worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "explore", "type": "app", "target": "Calculator",
               "options": {"screenshot_width": 800, "screenshot_quality": 50}}),
    );
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(
        s["images"],
        json!({"sent": 2, "skipped": 1, "bytes": 2 * 21, "estimated_tokens": 2 * (1280 * 720 / 750)})
    );
    let reqs = llm.requests();
    assert_eq!(reqs.iter().map(Recorded::image_count).collect::<Vec<_>>(), [0, 1, 1, 1, 2]);
    let repeated = reqs[2].last_results()[0]["content"].to_string();
    assert!(repeated.contains("unchanged since step 1"), "{repeated}");
    assert!(!reqs[1].last_results()[0]["content"].to_string().contains("full_png_base64"));
    for cmd in worker.seen.lock().unwrap().iter() {
        assert_eq!(cmd["params"]["screenshot"], json!({"width": 800, "quality": 50}), "{cmd}");
    }
    let shot = c.get(&format!("/sessions/{id}/files/step_0001.png"));
    assert_eq!(shot.body, b"full-png-of-frame-0", "the full-resolution PNG is what is kept");
}

#[test]
fn a_lease_wait_says_what_it_waits_for_and_can_give_up() {
    let dir = TempDir::new("lease-timeout");
    let (d, _llm) = llm_daemon(dir.path(), vec![], |_| {});
    let _browser = ScriptedWorker::start(&d.worker_client(), "web", &["browser"], false, |_| json!({"success": true}));
    let c = d.client();
    let started = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "explore", "type": "app", "target": "Calculator", "options": {"lease_timeout_s": 1}}),
    );
    let w = wait_until(Duration::from_secs(5), "waiting_for", || {
        c.get(&format!("/sessions/{id}")).json()["waiting_for"].as_str().map(str::to_string)
    });
    assert!(w.contains("none of the 1 connected worker(s) has the app capability"), "{w}");
    let s = ended(&c, &id);
    assert_eq!(s["status"], "error");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("within 1 s (options.lease_timeout_s)") && error.contains("app capability"), "{error}");
    assert!(s.get("waiting_for").is_none(), "{s}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let log = c.get(&format!("/sessions/{id}/log")).json().to_string();
    assert!(log.contains("waiting for a worker that can run app sessions (none of the 1 connected"), "{log}");
}
