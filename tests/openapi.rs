//! `/openapi.json` cannot drift: every route the router matches (read from the match arms in
//! `src/http/api.rs`) is in the document and every documented operation is routed; the
//! document passes `openapi-spec-validator`; real responses of a running session validate
//! against the documented schemas.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};

/// (method, path) of every arm `(Get, ["sessions", id, "log"])` of the router, as OpenAPI
/// paths with the parameter names blanked: `get /sessions/{}/log`.
fn routed() -> BTreeSet<String> {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/http/api.rs")).unwrap();
    let mut routes = BTreeSet::new();
    for method in ["Get", "Post", "Delete", "Put", "Patch"] {
        let start = format!("({method}, [");
        for (i, _) in source.match_indices(&start) {
            let rest = &source[i + start.len()..];
            let inner = &rest[..rest.find(']').unwrap()];
            let segments: Vec<String> = inner
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    Some(literal) => literal.to_string(),
                    None => "{}".to_string(),
                })
                .collect();
            routes.insert(format!("{} /{}", method.to_lowercase(), segments.join("/")));
        }
    }
    routes
}

fn documented(doc: &Value) -> BTreeSet<String> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let blank: Vec<String> = path
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| if s.starts_with('{') { "{}".to_string() } else { s.to_string() })
            .collect();
        for method in item.as_object().unwrap().keys() {
            ops.insert(format!("{method} /{}", blank.join("/")));
        }
    }
    ops
}

#[test]
fn every_route_is_documented_and_every_documented_route_exists() {
    let dir = TempDir::new("openapi-routes");
    let d = TestDaemon::idle(test_config(dir.path()));
    let r = d.client().get("/openapi.json");
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let routed = routed();
    assert!(routed.len() >= 20 && routed.contains("get /sessions/{}/log"), "{routed:?}");
    let documented = documented(&doc);
    let missing: Vec<&String> = routed.difference(&documented).collect();
    assert!(missing.is_empty(), "routes missing from /openapi.json (add them to http/openapi.rs): {missing:?}");
    let unrouted: Vec<&String> = documented.difference(&routed).collect();
    assert!(unrouted.is_empty(), "/openapi.json describes routes api.rs does not have: {unrouted:?}");
}

/// Runs `tests/openapi_check.py`: the document through openapi-spec-validator, and each
/// (schema, instance) pair through a JSON Schema 2020-12 validator.
fn python_check(doc: &Value, checks: &[(&str, Value)]) -> bool {
    let ok = Command::new("python3").args(["-c", "import openapi_spec_validator"]).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: the Python `openapi-spec-validator` package is missing (make test installs it)");
        return false;
    }
    let input = json!({"doc": doc, "checks": checks.iter().map(|(s, v)| json!([s, v])).collect::<Vec<_>>()});
    let mut child = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openapi_check.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "openapi check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn the_document_is_valid_and_real_responses_match_its_schemas() {
    let dir = TempDir::new("openapi-valid");
    let (test_agent, agent) = TestAgent::new();
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("openapi-token");
    let d = TestDaemon::start(config, agent);
    let _ = register(&d.worker_client(), json!({"hostname": "o", "capabilities": ["browser"]}));
    let c = d.client();
    let created = c.post("/sessions", &json!({"mode": "task", "target": "https://x.test", "instruction": "i"}));
    assert_eq!(created.status, 201);
    let id = created.json()["session_id"].as_str().unwrap().to_string();
    let (runner, done) = test_agent.next();
    runner.save_note(Some("Seen"), "a note");
    runner.store_file("data.csv", b"a,b\n", agent_controller::protocol::FileKind::Generated).unwrap();
    let asker = {
        let r = runner.clone();
        std::thread::spawn(move || r.request_confirmation("download", "Download it", json!(["a.pdf"]), "low"))
    };
    let pending = wait_until(std::time::Duration::from_secs(5), "a confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    });
    let mut checks: Vec<(&str, Value)> = vec![
        ("Session", created.json()),
        ("ConfirmationState", pending.clone()),
        ("Session", c.get(&format!("/sessions/{id}")).json()),
        ("Health", c.get("/health").json()),
        ("Error", c.get("/sessions/nope").json()),
    ];
    let answer = json!({"confirmation_id": pending["confirmation_id"], "approved": true});
    checks.push(("Ok", c.post(&format!("/sessions/{id}/confirmation"), &answer).json()));
    asker.join().unwrap();
    checks.push(("ConfirmationState", c.get(&format!("/sessions/{id}/confirmation")).json()));
    for (schema, path) in [
        ("Llm", "/llms"),
        ("Worker", "/workers"),
        ("SessionSummary", "/sessions"),
        ("Note", "/notes"),
        ("File", "/files"),
        ("Step", "/steps"),
    ] {
        let path = if path.starts_with("/sessions") || path == "/llms" || path == "/workers" {
            path.to_string()
        } else {
            format!("/sessions/{id}{path}")
        };
        for item in c.get(&path).json().as_array().unwrap() {
            checks.push((schema, item.clone()));
        }
    }
    checks.push(("LogPage", c.get(&format!("/sessions/{id}/log")).json()));
    checks.push(("Report", c.get(&format!("/sessions/{id}/report")).json()));
    drop(done);
    checks.push(("Stopped", c.delete(&format!("/sessions/{id}")).json()));
    let doc = c.get("/openapi.json").json();
    checks.push(("OpenApi", doc.clone()));
    python_check(&doc, &checks);
}
