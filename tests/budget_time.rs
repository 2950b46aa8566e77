//! The seconds budget against the waits that could outlast it: a pause the model asks for and
//! nobody answers counts (only time a person held the session is left out), and a tool call
//! waits no longer than what is left of the budget (the worker is told the same).

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn browser_worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(&d.worker_client(), "timebox", &["browser"], true, |cmd| match cmd["action"].as_str() {
        Some("browser_snapshot") => {
            json!({"success": true, "data": {"url": "https://x.test/", "snapshot": "heading \"Sign in\" [ref=e1]"}})
        }
        _ => json!({"success": true, "data": {"ok": true, "action": cmd["action"]}}),
    })
}

/// The review: a 4 s budget ran 16 s, its model asking for a person nobody answered. The wait
/// for a person ends with the budget, the model is told nobody came, and the wrap-up follows.
#[test]
fn an_unanswered_takeover_counts_against_a_seconds_budget() {
    let dir = TempDir::new("budget-pause");
    let script = vec![
        tool("request_takeover", json!({"reason": "a CAPTCHA"})),
        tool("browser_scroll", json!({"direction": "down"})),
        tool("finish_task", json!({"summary": "never"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.task.takeover_timeout_s = 12);
    let _w = browser_worker(&d);
    let c = d.client();
    let t = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "sign in",
               "options": {"budget": {"seconds": 3}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert!(t.elapsed() < Duration::from_secs(6), "a 3 s budget ran {:?}", t.elapsed());
    assert_eq!((s["ended_by"].as_str(), s["budget"]["exceeded"].as_str()), (Some("budget"), Some("seconds")), "{s}");
    assert!(s["budget"]["spent"]["seconds"].as_u64().unwrap() >= 3, "{s}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the call asking for a person, then the wrap-up");
    let told = requests[1].last_results().iter().map(Value::to_string).collect::<String>();
    assert!(told.contains("Nobody took over"), "{told}");
    assert!(!requests[1].tool_names().contains(&"browser_scroll".to_string()), "the wrap-up offers only delivery");
}

/// Once a person acts, the pause is theirs: the seconds they held it are left out, and the
/// budget's end does not cut them off.
#[test]
fn the_time_a_person_holds_the_session_is_left_out() {
    let dir = TempDir::new("budget-held");
    let script = vec![
        tool("request_takeover", json!({"reason": "a CAPTCHA"})),
        tool("finish_task", json!({"summary": "signed in"})),
    ];
    let (d, _llm) = llm_daemon(dir.path(), script, |c| c.task.takeover_timeout_s = 30);
    let _w = browser_worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "sign in",
               "options": {"budget": {"seconds": 3}}}),
    );
    wait_status(&c, &id, "paused");
    // The web page's first look is an act: the person has come.
    let r = c.post(&format!("/sessions/{id}/act"), &json!({"tool": "browser_snapshot", "input": {}}));
    assert_eq!(r.status, 200, "{}", r.text());
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        c.get(&format!("/sessions/{id}")).json()["status"],
        "paused",
        "the budget does not end a person's pause"
    );
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "signed in", "{s}");
    assert!(s.get("ended_by").is_none(), "{s}");
    assert!(s["budget"]["spent"]["seconds"].as_u64().unwrap() < 3, "{s}");
}

/// The review: a 3 s budget, a 12 s session, one tool call outlasting the budget. The call
/// waits only for what is left, and a command's own timeout is cut to it, so the worker stops it.
#[test]
fn a_tool_call_waits_no_longer_than_the_budget_left() {
    let dir = TempDir::new("budget-tool");
    let script = vec![
        tool("run_command", json!({"command": "make slow", "timeout_s": 60})),
        tool("run_command", json!({"command": "make slower"})),
        tool("finish_task", json!({"summary": "built"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let w = ScriptedWorker::start(&d.worker_client(), "slowbox", &["shell"], false, |_| {
        std::thread::sleep(Duration::from_secs(10));
        json!({"success": true, "data": {"exit_code": 0, "stdout": "built", "stderr": ""}})
    });
    let c = d.client();
    let t = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "task", "type": "shell", "target": "slowbox", "instruction": "build it",
               "options": {"budget": {"seconds": 3}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert!(t.elapsed() < Duration::from_secs(6), "a 3 s budget ran {:?}", t.elapsed());
    assert_eq!((s["ended_by"].as_str(), s["budget"]["exceeded"].as_str()), (Some("budget"), Some("seconds")), "{s}");
    assert_eq!(llm.requests().len(), 2, "the call, then the wrap-up");
    let seen = w.seen.lock().unwrap().clone();
    let cmd = seen.iter().find(|c| c["action"] == "run_command").expect("the command");
    assert!(cmd["timeout_s"].as_u64().unwrap() <= 3, "the worker's wait: {cmd}");
    assert!(cmd["params"]["timeout_s"].as_u64().unwrap() <= 3, "the command's own timeout: {cmd}");
}
