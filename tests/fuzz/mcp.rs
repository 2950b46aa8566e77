//! The MCP server's stdin (`agent-controller mcp`): JSON-RPC lines from the MCP client, fed to
//! the real process one case at a time. Its controller is a closed port, so tool calls end at
//! once with a tool error; what is checked is the framing: every answer is one JSON-RPC 2.0
//! object, every request gets exactly one, notifications and stray responses none, and the
//! process lives through it all and exits cleanly at the end of its input.

use super::*;
use crate::support::binary;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

const KEYS: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "name",
    "arguments",
    "protocolVersion",
    "requestId",
    "result",
    "error",
    "session_id",
    "mode",
    "target",
    "instruction",
    "filename",
    "timeout_s",
    "approved",
    "text",
];
const WORDS: &[&str] = &[
    "2.0",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "notifications/cancelled",
    "notifications/initialized",
    "resources/list",
    "create_session",
    "list_sessions",
    "get_session",
    "wait_for_session",
    "get_file",
    "list_files",
    "stop_session",
    "respond_confirmation",
    "2025-06-18",
    "sess_x",
    "task",
    "https://a.test/",
    "../../etc/passwd",
];

const EXAMPLES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
    r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"get_file","arguments":{"session_id":"s","filename":"../x"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}}"#,
    r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
];

/// One running `agent-controller mcp`, shared by the cases.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    fn start() -> Mcp {
        let mut child = Command::new(binary())
            .args(["mcp", "--api", "http://127.0.0.1:1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Mcp { child, stdin, stdout, next: 0 }
    }

    fn read(&mut self) -> Result<Value, TestCaseError> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(n > 0, "the MCP server closed its output");
        let v: Value = serde_json::from_str(&line).map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
        prop_assert_eq!(&v["jsonrpc"], "2.0", "{}", line);
        prop_assert!(v.get("result").is_some() != v.get("error").is_some(), "{}", line);
        Ok(v)
    }
}

/// How many answers a line gets, and with which id (JSON-RPC 2.0 as the server reads it).
fn expected(line: &[u8]) -> (usize, Value) {
    let Ok(msg) = serde_json::from_str::<Value>(&String::from_utf8_lossy(line)) else { return (1, Value::Null) };
    if msg.is_array() {
        return (1, Value::Null);
    }
    let id = msg.get("id").cloned();
    if msg.get("method").and_then(Value::as_str).is_none() {
        let stray_response = id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some());
        let scalar = id.filter(|i| i.is_string() || i.is_number()).unwrap_or(Value::Null);
        return if stray_response { (0, Value::Null) } else { (1, scalar) };
    }
    match id.filter(|i| i.is_string() || i.is_number()) {
        Some(id) => (1, id),
        None => (0, Value::Null),
    }
}

/// A line as the client might send it; a JSON object gets an id of its own, so that answers
/// can be told apart.
fn line(mcp: &mut Mcp, raw: Vec<u8>) -> Vec<u8> {
    mcp.next += 1;
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(&String::from_utf8_lossy(&raw)) else {
        return raw.into_iter().map(|b| if b == b'\n' { b' ' } else { b }).collect();
    };
    match msg.get("id") {
        Some(Value::String(_)) => msg.insert("id".into(), json!(format!("fz-{}", mcp.next))),
        Some(Value::Number(_)) => msg.insert("id".into(), json!(1_000_000_000 + mcp.next)),
        _ => None,
    };
    Value::Object(msg).to_string().into_bytes()
}

#[test]
fn fuzz_mcp_stdin() {
    let input = prop_oneof![
        3 => json_object(KEYS, WORDS).prop_map(|v| v.to_string().into_bytes()),
        3 => text_input(EXAMPLES).prop_map(String::into_bytes),
        1 => mutated(EXAMPLES.iter().map(|e| e.as_bytes().to_vec()).collect()),
    ];
    let mcp = Mutex::new(Mcp::start());
    fuzz("MCP stdin (agent-controller mcp: JSON-RPC lines)", input, |raw| {
        let mut mcp = mcp.lock().unwrap_or_else(|p| p.into_inner());
        let line = line(&mut mcp, raw);
        if String::from_utf8_lossy(&line).trim().is_empty() {
            return Ok(());
        }
        let (count, id) = expected(&line);
        let sentinel = format!("sentinel-{}", mcp.next);
        mcp.stdin.write_all(&line).unwrap();
        writeln!(mcp.stdin, "\n{}", json!({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})).unwrap();
        // Answers to the line come before the sentinel's, except a tool call's (a thread).
        let mut answers = Vec::new();
        let mut seen_sentinel = false;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !seen_sentinel || answers.len() < count {
            prop_assert!(std::time::Instant::now() < deadline, "no answer to {}", String::from_utf8_lossy(&line));
            let v = mcp.read()?;
            if v["id"] == sentinel.as_str() {
                seen_sentinel = true;
            } else {
                answers.push(v);
            }
        }
        let shown = String::from_utf8_lossy(&line);
        prop_assert_eq!(answers.len(), count, "{} for {}", serde_json::to_string(&answers).unwrap(), shown);
        if let Some(a) = answers.first() {
            prop_assert_eq!(&a["id"], &id, "{}", a);
        }
        Ok(())
    });
    let mut mcp = mcp.into_inner().unwrap();
    drop(mcp.stdin);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut mcp.stdout, &mut rest);
    assert!(mcp.child.wait().unwrap().success(), "exits 0 when its input ends; left: {rest}");
}
