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

