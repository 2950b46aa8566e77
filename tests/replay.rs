//! Replay through the real daemon, agent-worker and Chromium: a finished session's worker steps
//! run again without the model, with a new parameter, and finish with zero model calls; on a
//! changed page the replay stops at the step that no longer matches and the model takes over
//! with what was done, what went wrong and the page.

use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(60), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

#[test]
fn a_replay_runs_without_the_model_and_hands_over_where_the_page_changed() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    // The session opens its target itself (step 1): the model starts by typing.
    let script = vec![
        tool("browser_type", json!({"selector": "ref=e1", "text": "Zoe"})),
        tool("browser_submit_form", json!({"selector": "#order"})),
        tool("browser_get_text", json!({"selector": "#summary"})),
        tool("finish_task", json!({"summary": "ordered for Zoe"})),
        // The model, after the second replay hands over.
        tool("finish_task", json!({"summary": "the form has no name field any more"})),
    ];
    let dir = TempDir::new("replay");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "replay-box", "browser");
    let c = d.client();
    let first = create_session(
        &c,
        json!({"mode": "task", "target": format!("{}/form", site.url), "instruction": "order for Zoe"}),
    );
    assert_eq!(ended(&c, &first)["status"], "finished");
    let steps = c.get(&format!("/sessions/{first}/steps")).json();
    assert_eq!(
        steps[1]["target"], "input text \"Your name\" name=name (empty)",
        "the ref's element is recorded: {steps}"
    );
    assert_eq!(llm.requests().len(), 4);

    // The same page, a new parameter: no model call at all.
    let r = c.post(&format!("/sessions/{first}/replay"), &json!({"params": {"Zoe": "Max"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    let second = r.json()["session_id"].as_str().unwrap().to_string();
    assert_eq!(r.json()["replay"], json!({"source": first, "params": ["Zoe"]}));
    let s = ended(&c, &second);
    assert_eq!(s["status"], "finished", "{s}");
    assert!(s["summary"].as_str().unwrap().contains("Replayed all 4 steps"), "{s}");
    assert_eq!((s["replay"]["replayed_steps"].as_u64(), s["replay"]["model_steps"].as_u64()), (Some(4), None), "{s}");
    assert_eq!(llm.requests().len(), 4, "zero model calls");
    let replayed = c.get(&format!("/sessions/{second}/steps")).json();
    assert!(replayed.as_array().unwrap().iter().all(|s| s["replayed"] == true), "{replayed}");
    assert!(replayed[3]["observation"].as_str().unwrap().contains("name=Max color=r"), "{replayed}");

    // A changed page: the name field is gone, so step 2 (typing into ref=e1) does not match.
    let r = c.post(&format!("/sessions/{first}/replay"), &json!({"params": {"/form": "/form2"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    let third = r.json()["session_id"].as_str().unwrap().to_string();
    let s = ended(&c, &third);
    assert_eq!(s["summary"], "the form has no name field any more", "{s}");
    assert_eq!(
        (s["replay"]["replayed_steps"].as_u64(), s["replay"]["model_steps"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 5, "the model took over once");
    let opening = reqs[4].body["messages"][0].to_string();
    assert!(
        opening.contains("1 of 4 steps went through") && opening.contains("Step 2 could not be replayed"),
        "{opening}"
    );
    assert!(
        opening.contains(
            "was input text \\\"Your name\\\" name=name when recorded and is now input text \\\"Your email\\\""
        ),
        "{opening}"
    );
    assert!(opening.contains("The page now:"), "{opening}");
    let steps = c.get(&format!("/sessions/{third}/steps")).json();
    assert_eq!(steps.as_array().unwrap().len(), 2, "one step replayed, then the model's finish: {steps}");

    // From the console: the same replay, followed to its end.
    let out = std::process::Command::new(binary())
        .args(["replay", &first, "--param", "Zoe=Ann", "--json"])
        .env("AGENT_CONTROLLER_API", &d.api)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(printed.contains("name=Ann"), "{printed}");
    assert_eq!(llm.requests().len(), 5, "still no model call");

    // A parameter that matches nothing is refused.
    let r = c.post(&format!("/sessions/{first}/replay"), &json!({"params": {"nothing-like-this": "x"}}));
    assert_error(&r, 400, "bad_request");
}

/// A replay runs where its steps were recorded. A shell session pinned to host-a, replayed
/// while host-a is busy and host-b free, waits for host-a (it ran on any free worker: a
/// recorded command ran on another machine); `worker` in the body names another on purpose.
#[test]
fn a_replay_runs_on_the_worker_it_was_recorded_on() {
    let script = vec![
        tool("run_command", json!({"command": "touch /srv/flag"})),
        tool("finish_task", json!({"summary": "flag set"})),
        // The session that keeps host-a busy meanwhile.
        tool("finish_task", json!({"summary": "busy"})).delayed(Duration::from_secs(3)),
    ];
    let dir = TempDir::new("replay-where");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let answer = |_: &Value| json!({"success": true, "data": {"stdout": "", "stderr": "", "exit_code": 0}});
    let a = ScriptedWorker::start(&d.worker_client(), "host-a", &["shell"], false, answer);
    let b = ScriptedWorker::start(&d.worker_client(), "host-b", &["shell"], false, answer);
    let commands = |w: &ScriptedWorker| w.seen.lock().unwrap().iter().filter(|c| c["action"] == "run_command").count();
    let c = d.client();
    let shell = |what: &str| json!({"mode": "task", "type": "shell", "target": "prod-db", "instruction": what, "worker": "host-a"});
    let first = create_session(&c, shell("set the flag"));
    assert_eq!(ended(&c, &first)["status"], "finished");
    // The target of a shell session on a worker is a label: the model is told the machine.
    let opening = llm.requests()[0].body["messages"][0].to_string();
    assert!(opening.contains("\\\"host-a\\\"") && opening.contains("prod-db"), "{opening}");

    let busy = create_session(&c, shell("wait"));
    wait_status(&c, &busy, "running");
    let r = c.post(&format!("/sessions/{first}/replay"), &json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["requested_worker"], "host-a", "{}", r.text());
    let replay = r.json()["session_id"].as_str().unwrap().to_string();
    let s = ended(&c, &replay);
    assert_eq!((s["status"].as_str(), s["worker"].as_str()), (Some("finished"), Some("host-a")), "{s}");
    assert_eq!((commands(&a), commands(&b)), (2, 0), "the recorded command ran on host-a only");

    // Elsewhere only when the body says so; a worker that never registered is refused.
    let r = c.post(&format!("/sessions/{first}/replay"), &json!({"worker": "host-b"}));
    assert_eq!(r.status, 201, "{}", r.text());
    let s = ended(&c, r.json()["session_id"].as_str().unwrap());
    assert_eq!(s["worker"], "host-b", "{s}");
    assert_eq!(commands(&b), 1);
    assert_error(&c.post(&format!("/sessions/{first}/replay"), &json!({"worker": "nobody"})), 400, "bad_request");
}

/// What a person typed while taking over is kept only as its length, so a replay cannot type
/// it again: it asks for it as a parameter (`typed_1`) instead of typing the placeholder
/// `[6 characters typed by the person]` and reporting success. The value given is typed, and
/// kept out of the replay's log and step log; a replay of that replay asks for it again.
#[test]
fn a_replay_asks_for_what_a_person_typed() {
    let script = vec![
        tool("request_takeover", json!({"reason": "a one-time code is needed"})),
        tool("browser_click", json!({"selector": "#go"})),
        tool("finish_task", json!({"summary": "signed in"})),
    ];
    let dir = TempDir::new("replay-typed");
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let w = ScriptedWorker::start(
        &d.worker_client(),
        "typebox",
        &["browser"],
        true,
        |cmd| json!({"success": true, "data": {"ok": true, "action": cmd["action"]}}),
    );
    let typed = |w: &ScriptedWorker| -> Vec<String> {
        let seen = w.seen.lock().unwrap();
        seen.iter().filter(|c| c["action"] == "browser_type").map(|c| c["params"]["text"].to_string()).collect()
    };
    let c = d.client();
    let first = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "sign in"}));
    wait_status(&c, &first, "paused");
    let r = c.post(
        &format!("/sessions/{first}/act"),
        &json!({"tool": "browser_type", "input": {"selector": "#code", "text": "424242"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.post(&format!("/sessions/{first}/resume"), &json!({})).status, 202);
    assert_eq!(ended(&c, &first)["status"], "finished");

    let r = c.post(&format!("/sessions/{first}/replay"), &json!({}));
    assert_error(&r, 400, "bad_request");
    assert!(r.json()["error"].as_str().unwrap().contains("typed_1"), "{}", r.text());
    assert_eq!(typed(&w), ["\"424242\""], "nothing typed again: {:?}", typed(&w));

    let r = c.post(&format!("/sessions/{first}/replay"), &json!({"params": {"typed_1": "777111"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    let second = r.json()["session_id"].as_str().unwrap().to_string();
    let s = ended(&c, &second);
    assert_eq!((s["status"].as_str(), s["replay"]["replayed_steps"].as_u64()), (Some("finished"), Some(3)), "{s}");
    assert_eq!(typed(&w)[1], "\"777111\"");
    let written = std::fs::read_to_string(dir.path().join(&second).join("log.jsonl")).unwrap()
        + &std::fs::read_to_string(dir.path().join(&second).join("steps.jsonl")).unwrap();
    assert!(!written.contains("777111"), "{written}");

    let r = c.post(&format!("/sessions/{second}/replay"), &json!({}));
    assert_error(&r, 400, "bad_request");
    let r = c.post(&format!("/sessions/{second}/replay"), &json!({"params": {"typed_1": "555000"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    ended(&c, r.json()["session_id"].as_str().unwrap());
    assert_eq!(typed(&w)[2], "\"555000\"");
}
