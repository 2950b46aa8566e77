//! The confirmation handshake: approve, deny, timeout, wrong id, stop, auto_confirm.

use crate::support::*;
use agent_controller::session::ConfirmationOutcome;
use agent_controller::session::{AgentOutcome, SessionRunner};
use serde_json::json;
use std::time::{Duration, Instant};

fn setup(
    tag: &str,
    timeout_s: u64,
    options: serde_json::Value,
) -> (TempDir, TestDaemon, String, SessionRunner, crossbeam_channel::Sender<AgentOutcome>) {
    let dir = TempDir::new(tag);
    let mut config = test_config(dir.path());
    config.task.confirmation_timeout = timeout_s;
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let _ = register(&d.worker_client(), json!({"hostname": "c", "capabilities": ["browser"]}));
    let id = create_session(
        &d.client(),
        json!({"mode": "task", "target": "https://x.test", "instruction": "i", "options": options}),
    );
    let (runner, done) = test_agent.next();
    (dir, d, id, runner, done)
}

fn ask(runner: &SessionRunner) -> std::thread::JoinHandle<(ConfirmationOutcome, Duration)> {
    let r = runner.clone();
    std::thread::spawn(move || {
        let t = Instant::now();
        let out = r.request_confirmation(
            "batch_download",
            "Download 47 PDF files",
            json!(["Vol1_Ch01.pdf", "…(46 more)"]),
            "medium",
        );
        (out, t.elapsed())
    })
}

fn pending(c: &Client, id: &str) -> serde_json::Value {
    wait_until(Duration::from_secs(5), "a pending confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    })
}

#[test]
fn approve_and_deny_over_rest() {
    let (_dir, d, id, runner, done) = setup("confirm", 300, json!({}));
    let c = d.client();
    for (approved, expected) in [(true, ConfirmationOutcome::Approved), (false, ConfirmationOutcome::Denied)] {
        let waiter = ask(&runner);
        let p = pending(&c, &id);
        assert_eq!(p["action"], "batch_download");
        assert_eq!(p["description"], "Download 47 PDF files");
        assert_eq!(p["details"], json!(["Vol1_Ch01.pdf", "…(46 more)"]));
        assert_eq!(p["risk_level"], "medium");
        let s = c.get(&format!("/sessions/{id}")).json();
        assert_eq!(s["status"], "confirming");
        assert_eq!(s["confirmation_pending"]["confirmation_id"], p["confirmation_id"]);
        // Wrong id: 409, and the question stays open.
        let r =
            c.post(&format!("/sessions/{id}/confirmation"), &json!({"confirmation_id": "conf_999", "approved": true}));
        assert_error(&r, 409, "conflict");
        assert_eq!(c.get(&format!("/sessions/{id}/confirmation")).json()["pending"], true);
        let r = c.post(
            &format!("/sessions/{id}/confirmation"),
            &json!({"confirmation_id": p["confirmation_id"], "approved": approved}),
        );
        assert_eq!(r.json(), json!({"ok": true}));
        let (out, _) = waiter.join().unwrap();
        assert_eq!(out, expected);
        assert_eq!(c.get(&format!("/sessions/{id}/confirmation")).json(), json!({"pending": false}));
        assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "running");
        // A second answer to the same id: nothing pending any more.
        assert_error(
            &c.post(
                &format!("/sessions/{id}/confirmation"),
                &json!({"confirmation_id": p["confirmation_id"], "approved": true}),
            ),
            409,
            "conflict",
        );
    }
    // Ids count up per session; the log tells the story.
    let log = c.get(&format!("/sessions/{id}/log")).json();
    let texts: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "confirmation")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(texts.iter().any(|t| t.starts_with("Awaiting confirmation")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("Approved")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("Denied")), "{texts:?}");
    done.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn timeout_is_denied() {
    let (_dir, d, id, runner, done) = setup("confirmtimeout", 1, json!({}));
    let (out, elapsed) = ask(&runner).join().unwrap();
    assert_eq!(out, ConfirmationOutcome::TimedOut);
    assert!(elapsed >= Duration::from_millis(950) && elapsed < Duration::from_secs(3), "{elapsed:?}");
    let c = d.client();
    assert_eq!(c.get(&format!("/sessions/{id}/confirmation")).json(), json!({"pending": false}));
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "running");
    done.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn delete_wakes_the_waiter_at_once() {
    let (_dir, d, id, runner, _done) = setup("confirmstop", 300, json!({}));
    let c = d.client();
    let waiter = ask(&runner);
    pending(&c, &id);
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{id}")).json()["status"], "stopped");
    let (out, _) = waiter.join().unwrap();
    assert_eq!(out, ConfirmationOutcome::Stopped);
    assert!(t.elapsed() < AT_ONCE, "{:?}", t.elapsed());
    let s = wait_status(&c, &id, "stopped");
    assert_eq!(s["confirmation_pending"], json!(null));
    // Stopping again is fine; the agent side sees the stop.
    assert!(runner.stop_requested());
}

#[test]
fn auto_confirm_approves_without_asking() {
    let (_dir, d, id, runner, done) = setup("autoconfirm", 300, json!({"auto_confirm": true}));
    let (out, elapsed) = ask(&runner).join().unwrap();
    assert_eq!(out, ConfirmationOutcome::AutoApproved);
    assert!(elapsed < Duration::from_millis(500));
    assert_eq!(d.client().get(&format!("/sessions/{id}/confirmation")).json(), json!({"pending": false}));
    done.send(AgentOutcome::Finished { summary: "done".into() }).unwrap();
    // A finished session cannot be stopped.
    wait_status(&d.client(), &id, "finished");
    assert_error(&d.client().delete(&format!("/sessions/{id}")), 409, "conflict");
}
