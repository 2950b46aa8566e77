//! Durability through the real daemon: one daemon per output directory, panics contained,
//! storage management, worker liveness during long commands.

use crate::support::*;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_second_daemon_on_the_same_directory_exits_naming_the_holder() {
    let dir = TempDir::new("dirlock");
    let out = dir.path().join("out");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(&out), agent);
    let c = d.client();
    let _w = register(&d.worker_client(), json!({"hostname": "l", "capabilities": ["browser"]}));
    let id = create_session(&c, json!({"mode": "explore", "target": "https://x.test"}));
    let (_runner, _done) = test_agent.next();
    wait_status(&c, &id, "running");
    let record = std::fs::read(out.join(&id).join("session.json")).unwrap();
    let log = std::fs::read(out.join(&id).join("log.jsonl")).unwrap();

    std::fs::write(
        dir.path().join("second.yaml"),
        format!("server:\n  api_port: 0\n  worker_port: 0\noutput:\n  dir: \"{}\"\n", out.display()),
    )
    .unwrap();
    let started = Instant::now();
    let o = Command::new(binary())
        .args(["--config", "second.yaml"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "exits at once");
    assert!(stderr.contains(&format!("pid {}", std::process::id())), "names the holder: {stderr}");
    // Nothing of the first daemon was touched: the session still runs, its files are as they were.
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "running");
    assert_eq!(std::fs::read(out.join(&id).join("session.json")).unwrap(), record);
    assert_eq!(std::fs::read(out.join(&id).join("log.jsonl")).unwrap(), log);
    drop(d);
    // Released with the daemon: a new one starts on the same directory.
    let d = TestDaemon::idle(test_config(&out));
    assert_eq!(d.client().get(&format!("/sessions/{id}")).json()["status"], "error");
}

#[test]
fn a_panic_ends_one_session_and_one_request_not_the_daemon() {
    let dir = TempDir::new("panic");
    let (test_agent, inner) = TestAgent::new();
    // Sessions whose instruction says so panic inside the agent; the others go to the test.
    let agent: agent_controller::session::AgentFn = std::sync::Arc::new(move |runner| {
        if runner.record().instruction.as_deref() == Some("panic") {
            runner.log(agent_controller::protocol::LogKind::Assistant, "about to fail", None);
            panic!("the agent tripped over {}", "a bug");
        }
        inner(runner)
    });
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    let _w1 = register(&d.worker_client(), json!({"hostname": "a", "capabilities": ["browser"]}));
    let _w2 = register(&d.worker_client(), json!({"hostname": "b", "capabilities": ["browser"]}));
    let calm = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "calm"}));
    let (runner, done) = test_agent.next();
    let bad = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "panic"}));
    let s = wait_status(&c, &bad, "error");
    assert_eq!(s["error"], "internal error: the agent tripped over a bug");
    // The end is recorded like any other: the log has what came before and the reason.
    wait_until(Duration::from_secs(5), "the end in the log", || {
        let log = c.get(&format!("/sessions/{bad}/log")).json();
        let texts: Vec<String> =
            log["entries"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str().map(String::from)).collect();
        (texts.iter().any(|t| t == "about to fail") && texts.iter().any(|t| t.contains("internal error"))).then_some(())
    });
    // The worker is free again: a third session gets it.
    let third = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "calm"}));
    let (_r3, done3) = test_agent.next();
    wait_status(&c, &third, "running");
    // A panicking route answers 500 JSON, on both servers, and the handlers go on.
    for client in [&c, &d.worker_client()] {
        for _ in 0..12 {
            let r = client.get("/__test/panic");
            assert_eq!(r.status, 500, "{}", r.text());
            assert_eq!(r.json()["code"], "internal");
        }
        assert_eq!(client.get("/health").status, 200);
    }
    // The other session never noticed.
    assert_eq!(c.get(&format!("/sessions/{calm}")).json()["status"], "running");
    runner.log(agent_controller::protocol::LogKind::Assistant, "still here", None);
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &calm, "finished");
    done3.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &third, "finished");
}
