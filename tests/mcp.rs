//! The MCP server: JSON-line protocol tests in Rust, and a whole session driven through the
//! official MCP Python client.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Send lines to a fresh `agent-controller mcp`, read `expect` response lines.
fn spawn_mcp(api: &str) -> std::process::Child {
    Command::new(binary())
        .args(["mcp", "--api", api])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

pub(crate) fn exchange(api: &str, lines: &[Value], expect: usize) -> Vec<Value> {
    let mut child = spawn_mcp(api);
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        let text =
            if let Some(raw) = l.as_str().filter(|_| l.get("raw").is_none()) { raw.to_string() } else { l.to_string() };
        writeln!(stdin, "{text}").unwrap();
    }
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut got = Vec::new();
    for _ in 0..expect {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        got.push(
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line:?}")),
        );
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "exits cleanly when stdin closes: {status:?}");
    got
}

pub(crate) fn init(version: &str, id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

#[test]
fn version_negotiation_unknown_methods_and_malformed_input() {
    let dir = TempDir::new("mcp-lines");
    let d = TestDaemon::idle(test_config(dir.path()));
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let r = exchange(&d.api, &[init(v, 1)], 1);
        assert_eq!(r[0]["result"]["protocolVersion"], v);
        assert_eq!(r[0]["result"]["serverInfo"]["name"], "agent-controller");
        assert!(r[0]["result"]["serverInfo"]["version"].is_string());
        assert_eq!(r[0]["result"]["capabilities"]["tools"], json!({"listChanged": false}));
    }
    let r = exchange(&d.api, &[init("2030-01-01", 1)], 1);
    assert_eq!(r[0]["result"]["protocolVersion"], "2025-11-25", "an unknown version gets our newest");

    let lines = vec![
        json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": {}}}),
        Value::String("{not json".into()),
        Value::String("[1,2]".into()),
        json!({"jsonrpc": "2.0", "id": 5}),
        init("2025-11-25", 1),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": "p1", "method": "ping", "params": {"_meta": {}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/list"}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": {}}}),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "get_session", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "get_session", "arguments": {"session_id": "sess_x"}}}),
    ];
    let r = exchange(&d.api, &lines, 11);
    let by_id =
        |id: Value| r.iter().find(|m| m["id"] == id).cloned().unwrap_or_else(|| panic!("no answer for {id}: {r:?}"));
    assert_eq!(by_id(json!("d"))["error"]["code"], -32601, "server/discover is refused at once, before initialize");
    let parse = r.iter().filter(|m| m["error"]["code"] == -32700).count();
    assert_eq!(parse, 1);
    assert_eq!(r.iter().filter(|m| m["error"]["code"] == -32600).count(), 2, "a batch and a method-less request");
    assert_eq!(by_id(json!("p1"))["result"], json!({}));
    assert_eq!(by_id(json!(7))["error"]["code"], -32601);
    let tools = by_id(json!(8))["result"]["tools"].as_array().unwrap().clone();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "act",
            "answer_question",
            "create_session",
            "export_session",
            "get_file",
            "get_log",
            "get_notes",
            "get_recording",
            "get_report",
            "get_session",
            "list_files",
            "list_schedules",
            "list_sessions",
            "list_workers",
            "pause_session",
            "replay_session",
            "respond_confirmation",
            "resume_session",
            "run_schedule",
            "stop_session",
            "wait_for_session"
        ]
    );
    for t in &tools {
        assert_eq!(t["inputSchema"]["type"], "object");
        // The properties are written as JSON text: a typo there would leave them null.
        assert!(t["inputSchema"]["properties"].is_object(), "{t}");
        assert!(
            t["annotations"]["readOnlyHint"].is_boolean() && t["annotations"]["destructiveHint"].is_boolean(),
            "{t}"
        );
    }
    let stop = tools.iter().find(|t| t["name"] == "stop_session").unwrap();
    assert_eq!(stop["annotations"]["destructiveHint"], true);
    assert_eq!(by_id(json!(9))["error"]["code"], -32602);
    assert_eq!(by_id(json!(10))["result"]["isError"], true);
    assert!(by_id(json!(10))["result"]["content"][0]["text"].as_str().unwrap().contains("session_id"));
    let missing = by_id(json!(11))["result"].clone();
    assert_eq!(missing["isError"], true);
    assert!(missing["content"][0]["text"].as_str().unwrap().contains("no session"), "{missing}");
}

/// Found by tests/fuzz: a line that was not UTF-8 ended the server without a word.
#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_not_the_end() {
    let mut child = spawn_mcp("http://127.0.0.1:1");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\xff\xfe{\n").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).unwrap();
    // Also found by it: an id that is no string or number was echoed (and a float in it,
    // read and written again, need not come back the same); it is answered as null.
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": {"x": 4.0174534273660343e-280}})).unwrap();
    drop(stdin);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    let got: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(got.len(), 3, "{out}");
    assert_eq!(got[0]["error"]["code"], -32700, "{out}");
    assert_eq!(got[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    assert_eq!((got[2]["error"]["code"].clone(), got[2]["id"].clone()), (json!(-32600), Value::Null), "{out}");
    assert!(child.wait().unwrap().success());
}

#[test]
fn cancelled_wait_gets_no_answer_and_ping_still_works() {
    let dir = TempDir::new("mcp-cancel");
    let d = TestDaemon::idle(test_config(dir.path()));
    register(&d.worker_client(), json!({"hostname": "w", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "explore", "target": "https://x.test"}));
    // Running already, so the wait below cannot end early on the waiting → running change.
    wait_status(&d.client(), &id, "running");
    let mut child = spawn_mcp(&d.api);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(init("2025-11-25", 1));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait_for_session", "arguments": {"session_id": id, "timeout_s": 30}}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}}));
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "get_session", "arguments": {"session_id": id}}}),
    );
    drop(stdin);
    let mut lines = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        lines.push(serde_json::from_str::<Value>(&line).unwrap());
        line.clear();
    }
    assert!(child.wait().unwrap().success());
    assert!(t.elapsed() < Duration::from_secs(10), "the cancelled wait ended early: {:?}", t.elapsed());
    let ids: Vec<Value> = lines.iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(3), json!(4)], "no answer to the cancelled request: {lines:?}");
}

#[test]
fn a_whole_session_through_the_official_python_client() {
    let python_ok = Command::new("python3").args(["-c", "import mcp"]).status().map(|s| s.success()).unwrap_or(false);
    if !python_ok {
        eprintln!("SKIPPED: the Python `mcp` package is missing (make test installs it)");
        return;
    }
    let dir = TempDir::new("mcp-python");
    let script = vec![
        tool("request_confirmation", json!({"action": "download", "description": "Download the report"})),
        tool("browser_download", json!({"url": "https://x.test/report.pdf"})),
        tool("save_file", json!({"filename": "data.csv", "content": "a,b\n1,2\n"})),
        tool("finish_task", json!({"summary": "done", "report_markdown": "# MCP report\nfine"})),
    ];
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let uploader = d.worker_client();
    let _w = ScriptedWorker::start(
        &d.worker_client(),
        "mcp-box",
        &["browser"],
        false,
        move |cmd| json!({"success": true, "data": upload_as_worker(&uploader, cmd, "report.pdf", b"%PDF-1.4 mcp")}),
    );
    let files = TempDir::new("mcp-files");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let o = Command::new("python3").arg(script).arg(binary()).arg(&d.api).arg(files.path()).output().unwrap();
    assert!(
        o.status.success(),
        "python client failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let seen: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(seen["version"], "2025-11-25");
    assert_eq!(seen["server"], "agent-controller");
    assert_eq!(seen["tools"].as_array().unwrap().len(), 21);
    assert!(seen["read_only"].as_array().unwrap().contains(&json!("wait_for_session")));
    assert!(
        seen["waits"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("confirmation pending")),
        "{seen}"
    );
    assert!(seen["waits"].as_array().unwrap().last().unwrap().as_str().unwrap().starts_with("finished"), "{seen}");
    assert!(seen["respond"].as_str().unwrap().starts_with("Approved conf_001"));
    assert_eq!(seen["report"], "# MCP report\nfine");
    assert_eq!(seen["files"].as_array().unwrap().len(), 2);
    assert_eq!(seen["csv"], "a,b\n1,2\n", "text files come inline");
    let pdf_line = seen["pdf"].as_str().unwrap();
    assert!(pdf_line.starts_with("Saved report.pdf"), "{pdf_line}");
    let path = pdf_line.rsplit(" to ").next().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"%PDF-1.4 mcp", "other files are saved locally");
    assert_eq!(seen["bad_is_error"], true);
}

#[test]
fn get_file_returns_images_as_image_content() {
    let dir = TempDir::new("mcp-image");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    register(&d.worker_client(), json!({"hostname": "img", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, _done) = test_agent.next();
    let png = b"\x89PNG\r\n\x1a\nnot-really-a-png".to_vec();
    runner.store_screenshot(3, &png).unwrap();
    let r = exchange(
        &d.api,
        &[
            init("2025-11-25", 1),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_file", "arguments": {"session_id": id, "filename": "step_0003.png"}}}),
        ],
        2,
    );
    let content = &r[1]["result"]["content"];
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, content[1]["data"].as_str().unwrap())
            .unwrap(),
        png
    );
}
