//! Taking over from the console (`pause`, `act`, `resume`) and from an MCP client
//! (`pause_session`, `act`, `resume_session`), against the real daemon, agent and a scripted
//! worker: two pauses in one session, acts reaching the worker, notes reaching the model.

use crate::mcp::{exchange, init};
use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::process::{Command, Output};
use std::time::Duration;

fn console(d: &TestDaemon, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("AGENT_CONTROLLER_API", &d.api)
        .env_remove("AGENT_CONTROLLER_TOKEN")
        .output()
        .unwrap()
}

fn mcp_call(d: &TestDaemon, name: &str, arguments: Value) -> Value {
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let got = exchange(
        &d.api,
        &[init("2025-06-18", 1), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), call],
        2,
    );
    got[1]["result"].clone()
}

#[test]
fn the_console_and_mcp_pause_act_and_resume() {
    let dir = TempDir::new("takeover-clients");
    let slow = Duration::from_millis(1500);
    let script = vec![
        tool("browser_snapshot", json!({})).delayed(slow),
        tool("browser_snapshot", json!({})).delayed(slow),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = ScriptedWorker::start(
        &d.worker_client(),
        "cli-box",
        &["browser"],
        false,
        |cmd| json!({"success": true, "data": {"url": "https://x.test/", "action": cmd["action"]}}),
    );
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "look"}));
    wait_until(Duration::from_secs(10), "the first model call", || (llm.requests().len() == 1).then_some(()));

    // The console pauses; MCP and the console act; MCP resumes with a note.
    let out = console(&d, &["pause", &id]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("paused"), "{out:?}");
    wait_status(&c, &id, "paused");
    let acted = mcp_call(&d, "act", json!({"session_id": id, "tool": "browser_click", "input": {"x": 30, "y": 40}}));
    assert_ne!(acted["isError"], true, "{acted}");
    let out = console(&d, &["act", &id, "browser_press_key", r#"{"key": "Enter"}"#]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"by\": \"human\""), "{out:?}");
    let out = console(&d, &["act", &id, "browser_press_key", "not json"]);
    assert_eq!(out.status.code(), Some(2), "a bad JSON argument is a usage error: {out:?}");
    let seen = worker.seen.lock().unwrap().clone();
    assert!(seen.iter().any(|c| c["action"] == "browser_click" && c["params"]["x"] == 30), "{seen:?}");
    assert!(seen.iter().any(|c| c["action"] == "browser_press_key" && c["params"]["key"] == "Enter"));
    let resumed = mcp_call(&d, "resume_session", json!({"session_id": id, "note": "pressed enter for you"}));
    assert_ne!(resumed["isError"], true, "{resumed}");

    // MCP pauses during the second call; the console resumes with a note.
    wait_until(Duration::from_secs(10), "the second model call", || (llm.requests().len() == 2).then_some(()));
    let paused = mcp_call(&d, "pause_session", json!({"session_id": id}));
    assert_ne!(paused["isError"], true, "{paused}");
    wait_status(&c, &id, "paused");
    let out = console(&d, &["resume", &id, "--note", "all yours again"]);
    assert!(out.status.success(), "{out:?}");
    wait_status(&c, &id, "finished");
    let requests = llm.requests();
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("pressed enter for you") && second.contains("browser_press_key"), "{second}");
    assert!(requests[2].body["messages"].to_string().contains("all yours again"));
    // Ended: the console says so with the daemon's error.
    let out = console(&d, &["pause", &id]);
    assert!(!out.status.success(), "{out:?}");
}
