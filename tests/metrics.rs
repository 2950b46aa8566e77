//! `GET /metrics` as Prometheus reads it: the exposition parsed by `prometheus_client`'s text
//! parser, with values that follow a session as it runs (a retried model call, a pending
//! confirmation, a worker command, an upload, the end).

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

const UPLOAD: &[u8] = b"%PDF-1.4 a metrics test upload of known size";

/// The parsed exposition: sample name + labels → value.
struct Scrape {
    types: Value,
    samples: Vec<(String, Value, f64)>,
}

impl Scrape {
    fn value(&self, name: &str, labels: &Value) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, l, _)| n == name && labels.as_object().unwrap().iter().all(|(k, v)| &l[k] == v))
            .map(|(_, _, v)| *v)
    }

    fn get(&self, name: &str, labels: Value) -> f64 {
        self.value(name, &labels).unwrap_or_else(|| panic!("no sample {name} {labels}"))
    }

    fn sum(&self, name: &str) -> f64 {
        self.samples.iter().filter(|(n, _, _)| n == name).map(|(_, _, v)| v).sum()
    }
}

fn have_parser() -> bool {
    let ok = Command::new("python3").args(["-c", "import prometheus_client"]).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: the Python `prometheus_client` package is missing (make test installs it)");
    }
    ok
}

fn scrape(c: &Client) -> Scrape {
    let r = c.get("/metrics");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    let mut child = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/metrics_parse.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &r.body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "unparseable exposition: {}\n{}", String::from_utf8_lossy(&out.stderr), r.text());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = v["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let value = match &s[2] {
                Value::String(inf) if inf == "+Inf" => f64::INFINITY,
                n => n.as_f64().unwrap(),
            };
            (s[0].as_str().unwrap().to_string(), s[1].clone(), value)
        })
        .collect();
    Scrape { types: v["types"].clone(), samples }
}

fn script() -> Vec<Step> {
    vec![
        Step::error(529, "overloaded_error", "Overloaded").with_header("retry-after-ms", "10"),
        tool("browser_navigate", json!({"url": "https://m.test/"})),
        tool(
            "request_confirmation",
            json!({"action": "download", "description": "Download it", "details": [], "risk_level": "low"}),
        ),
        tool("browser_download", json!({"url": "https://m.test/a.pdf"})),
        tool("finish_task", json!({"summary": "done"})),
    ]
}

#[test]
fn metrics_follow_a_session_and_parse_as_prometheus_text() {
    if !have_parser() {
        return;
    }
    let dir = TempDir::new("metrics");
    let (d, _llm) = llm_daemon(dir.path(), script(), |c| {
        c.server.api_token = agent_controller::util::secret::Secret::new("metrics-token");
    });
    let uploader = d.worker_client();
    let _w = ScriptedWorker::start(&d.worker_client(), "metrics-box", &["browser", "shell"], false, move |cmd| {
        if cmd["action"] == "browser_download" {
            json!({"success": true, "data": upload_as_worker(&uploader, cmd, "a.pdf", UPLOAD)})
        } else {
            json!({"success": true, "data": {}})
        }
    });
    let c = d.client();
    assert_error(&c.with_token(None).get("/metrics"), 401, "unauthorized");
    let before = scrape(&c);
    assert_eq!(before.types["agent_controller_command_round_trip_seconds"], "histogram");
    assert_eq!(before.types["agent_controller_sessions"], "gauge");
    assert_eq!(before.get("agent_controller_sessions", json!({"status": "finished"})), 0.0);
    assert_eq!(before.get("agent_controller_workers_connected", json!({})), 1.0);
    assert_eq!(before.get("agent_controller_workers_connected_by_capability", json!({"capability": "shell"})), 1.0);
    assert!(before.get("process_resident_memory_bytes", json!({})) > 1e6);
    assert!(before.get("process_open_fds", json!({})) > 3.0);

    let id = create_session(&c, json!({"mode": "task", "target": "https://m.test/", "instruction": "get a.pdf"}));
    let pending = wait_until(Duration::from_secs(15), "the confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    });
    let mid = scrape(&c);
    assert_eq!(mid.get("agent_controller_confirmations_pending", json!({})), 1.0);
    assert_eq!(mid.get("agent_controller_sessions", json!({"status": "confirming"})), 1.0);
    assert_eq!(mid.get("agent_controller_workers_busy", json!({})), 1.0);
    let answer = json!({"confirmation_id": pending["confirmation_id"], "approved": true});
    assert_eq!(c.post(&format!("/sessions/{id}/confirmation"), &answer).status, 200);
    wait_status(&c, &id, "finished");
    // The worker is released just after the session records its end.
    wait_until(Duration::from_secs(5), "the worker's release", || {
        c.get("/workers").json().as_array().unwrap().iter().all(|w| w["session_id"].is_null()).then_some(())
    });

    let after = scrape(&c);
    assert_eq!(after.get("agent_controller_sessions", json!({"status": "finished"})), 1.0);
    assert_eq!(after.get("agent_controller_sessions", json!({"status": "confirming"})), 0.0);
    assert_eq!(after.get("agent_controller_confirmations_pending", json!({})), 0.0);
    assert_eq!(after.get("agent_controller_workers_busy", json!({})), 0.0);
    let tokens = |kind: &str| {
        after.get("agent_controller_llm_tokens_total", json!({"provider": "anthropic", "llm": "api", "kind": kind}))
    };
    assert_eq!((tokens("input"), tokens("output"), tokens("cache_read")), (400.0, 80.0, 200.0));
    // Process-wide counters (other tests run alongside): at least this session's share.
    let grew = |name: &str, labels: Value, by: f64| {
        // A provider no request has gone to yet has no sample.
        let (b, a) = (before.value(name, &labels).unwrap_or(0.0), after.get(name, labels.clone()));
        assert!(a - b >= by, "{name} {labels}: {b} -> {a}, expected +{by}");
    };
    grew("agent_controller_commands_total", json!({"outcome": "ok"}), 2.0);
    grew("agent_controller_command_round_trip_seconds_count", json!({}), 2.0);
    grew("agent_controller_llm_requests_total", json!({"provider": "anthropic"}), 5.0);
    grew("agent_controller_llm_errors_total", json!({"provider": "anthropic"}), 1.0);
    grew("agent_controller_llm_retries_total", json!({"provider": "anthropic"}), 1.0);
    grew("agent_controller_uploads_total", json!({}), 1.0);
    grew("agent_controller_uploaded_bytes_total", json!({}), UPLOAD.len() as f64);
    // The histogram is cumulative and ends at +Inf = count.
    let buckets: Vec<f64> = after
        .samples
        .iter()
        .filter(|(n, _, _)| n == "agent_controller_command_round_trip_seconds_bucket")
        .map(|(_, _, v)| *v)
        .collect();
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    assert_eq!(buckets.last().copied(), Some(after.sum("agent_controller_command_round_trip_seconds_count")));
    assert_eq!(
        after.get("agent_controller_command_round_trip_seconds_bucket", json!({"le": "+Inf"})),
        buckets[buckets.len() - 1]
    );
}
