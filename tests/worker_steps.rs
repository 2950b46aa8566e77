//! The worker's step requests (poll, result, heartbeat) over raw sockets: pipelined on one
//! connection and answered in order by HTTP's rules, and a parked poll's large answer arriving
//! whole to a reader that is slow to read it.

use crate::support::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One answer off a kept-alive connection: the status line, the head's lines, the body.
fn read_answer(reader: &mut BufReader<TcpStream>) -> (String, Vec<String>, String) {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let (mut head, mut length) = (Vec::new(), 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        head.push(line.trim_end().to_string());
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status.trim_end().to_string(), head, String::from_utf8(body).unwrap())
}

#[test]
fn the_worker_step_requests_keep_http_s_rules() {
    let dir = TempDir::new("steps");
    let mut config = test_config(dir.path());
    config.server.worker_token = agent_controller::util::secret::Secret::new("wtok-steps");
    let d = TestDaemon::idle(config);
    let r = d.worker_client().post("/register", &json!({"hostname": "q", "capabilities": ["shell"]}));
    let (id, secret) =
        (r.json()["worker_id"].as_str().unwrap().to_string(), r.json()["worker_secret"].as_str().unwrap().to_string());
    let mut s = TcpStream::connect(d.worker.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let auth = format!("Host: 127.0.0.1\r\nAuthorization: Bearer wtok-steps\r\nX-Worker-Secret: {secret}\r\n");
    let post = |path: &str, headers: &str, body: &str| {
        format!("POST {path}?worker_id={id} HTTP/1.1\r\n{headers}Content-Length: {}\r\n\r\n{body}", body.len())
    };
    // Results small and large (a screenshot's size), for a command nobody waits for.
    let small = r#"{"id":"cmd_gone","success":true}"#;
    let large = format!(r#"{{"id":"cmd_gone","success":true,"data":{{"stdout":"{}"}}}}"#, "x".repeat(100_000));
    // Pipelined in one write, answered in order on the one connection.
    let requests = [
        post("/heartbeat", &auth, ""),
        post("/result", &auth, "{not json"),
        post("/result", "Host: 127.0.0.1\r\n", "{}"),
        post("/result", &auth, small),
        post("/result", &auth, &large),
        // A chunked body, written again by the front.
        format!(
            "POST /result?worker_id={id} HTTP/1.1\r\n{auth}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{small}\r\n0\r\n\r\n",
            small.len()
        ),
    ];
    s.write_all(requests.concat().as_bytes()).unwrap();
    let (status, _, body) = read_answer(&mut reader);
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(body.contains("\"interval_s\""), "{body}");
    let (status, _, body) = read_answer(&mut reader);
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["code"], "bad_request");
    let (status, head, body) = read_answer(&mut reader);
    assert_eq!(status, "HTTP/1.1 401 Unauthorized", "{body}");
    assert!(head.iter().any(|h| h == "WWW-Authenticate: Bearer"), "{head:?}");
    for _ in 0..3 {
        let (status, head, body) = read_answer(&mut reader);
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        assert!(head.iter().any(|h| h == "Content-Type: application/json"), "{head:?}");
        assert!(body.contains("no command cmd_gone is waiting"), "{body}");
    }
    // HTTP/1.0 (no keep-alive): answered, then the connection ends.
    let mut s = TcpStream::connect(d.worker.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(post("/heartbeat", &auth, "").replace("HTTP/1.1", "HTTP/1.0").as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    // (read to its end: the connection closed after the answer)
    assert!(reply.starts_with("HTTP/1.0 200") && reply.contains("\"interval_s\""), "{reply}");
}

#[test]
fn a_command_larger_than_the_socket_takes_at_once_arrives_whole() {
    let dir = TempDir::new("bigcommand");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let (id, worker) = register_as(&d.worker_client(), json!({"hostname": "big", "capabilities": ["shell"]}));
    let secret = worker.secret.clone().unwrap();
    create_session(&d.client(), json!({"mode": "task", "type": "shell", "target": "big", "instruction": "x"}));
    let (runner, _done) = test_agent.next();
    // The poll is parked, and its client reads nothing for a while: the answer (the command,
    // 8 MiB of it) fills the socket's buffers and the rest must wait for the reader.
    let mut s = TcpStream::connect(d.worker.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET /command?worker_id={id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\n\r\n").unwrap();
    let text = "y".repeat(8 << 20);
    let command = format!("echo {text}");
    let executing = std::thread::spawn(move || {
        runner.execute("run_command", json!({"command": command}), Duration::from_secs(30)).map(|_| ())
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let (status, _, body) = read_answer(&mut reader);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let cmd: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(cmd["params"]["command"].as_str().map(str::len), Some(text.len() + 5), "the command came cut");
    let result = json!({"id": cmd["id"], "success": true, "data": {"exit_code": 0, "stdout": "ok", "stderr": ""}});
    let body = result.to_string();
    write!(
        s,
        "POST /result?worker_id={id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let (status, _, _) = read_answer(&mut reader);
    assert_eq!(status, "HTTP/1.1 200 OK");
    executing.join().unwrap().unwrap();
}
