//! The front's reading of request heads and chunk-size lines (`http::reread_head`,
//! `http::chunk_size`), and the bounds on a model's JSONPath (`agent::outputs::answer`).

use super::*;
use agent_controller::agent::outputs::answer;
use agent_controller::http::{chunk_size, reread_head};
use agent_controller::protocol::tools::Tool;
use std::net::SocketAddr;

const HEADS: &[&str] = &[
    "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "POST /register HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nX-Agent-Controller-Peer: 1.2.3.4:5\r\n\r\n",
    "POST /result?worker_id=w HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
    "POST /x HTTP/1.1\r\nHost: a\r\n Content-Length: 5000\r\n\r\n",
    "POST /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    "GET http://127.0.0.1:5900/sessions?a=1 HTTP/1.0\r\nConnection: keep-alive, close\r\nHost: b\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n",
];

const CHUNK_LINES: &[&str] = &["5", "0", "ff;name=value", "A ;x=\"y;z\"", "0000000000000010", "+5", "0x5", " 5"];

fn peer() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], 4242))
}

/// Heads that end where the front would cut them: at their first blank line.
fn heads() -> impl Strategy<Value = Vec<u8>> {
    let examples: Vec<Vec<u8>> = HEADS.iter().map(|h| h.as_bytes().to_vec()).collect();
    prop_oneof![4 => mutated(examples), 1 => bytes()].prop_map(|mut b| {
        match b.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => b.truncate(end + 4),
            None => b.extend_from_slice(b"\r\n\r\n"),
        }
        b
    })
}

#[test]
fn fuzz_request_heads() {
    fuzz("request heads (http::reread_head: the front's one reading)", heads(), |raw| {
        match reread_head(&raw, peer()) {
            Ok(inner) => {
                // What tiny_http gets reads again to itself: nothing the front did not read.
                prop_assert_eq!(reread_head(&inner, peer()), Ok(inner.clone()));
                let text = std::str::from_utf8(&inner).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let lines: Vec<&str> = text.trim_end_matches("\r\n").split("\r\n").collect();
                let peers = lines.iter().filter(|l| l.to_ascii_lowercase().starts_with("x-agent-controller-peer:"));
                prop_assert_eq!(peers.count(), 1, "one peer header: {}", text);
                prop_assert_eq!(lines.last().copied(), Some("X-Agent-Controller-Peer: 192.0.2.1:4242"));
                prop_assert!(lines.iter().skip(1).all(|l| l.contains(": ") && !l.starts_with([' ', '\t'])));
            }
            Err((status, why)) => {
                prop_assert!([400, 413, 417, 431, 501, 505].contains(&status), "{status} {why}");
            }
        }
        Ok(())
    });
}

#[test]
fn fuzz_chunk_size_lines() {
    fuzz("chunk-size lines (http::chunk_size)", text_input(CHUNK_LINES), |line| {
        if let Ok(n) = chunk_size(line.as_bytes()) {
            let digits: String = line.chars().take_while(char::is_ascii_hexdigit).collect();
            prop_assert_eq!(u64::from_str_radix(&digits, 16).ok(), Some(n));
            prop_assert!(!line.contains(['\r', '\n', '\0']));
        }
        Ok(())
    });
}

/// Paths of nested filters, brackets and descendant segments, up to a few thousand deep.
fn deep_paths() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec!["(", ")", "[?", "]", "[", "@.a", "..", "*", "!", "==1", "||", "'('", "$"]);
    (prop::collection::vec(piece, 0..64), 1usize..3000).prop_map(|(pieces, times)| {
        let unit = pieces.concat();
        format!("${}", unit.repeat(times.min(20_000 / unit.len().max(1))))
    })
}

#[test]
fn fuzz_jsonpath_guard() {
    let doc = (0..30).fold(json!({"a": 1}), |v, _| json!({"a": v, "b": [1, "x"]})).to_string();
    let stored = prop_oneof![Just(doc), text_input(&["[1, {\"a\": [[[]]]}]"])];
    // On a session thread's stack (1 MiB), where the tools run.
    let run = move || {
        fuzz("JSONPath guard (agent::outputs: nested and descendant paths)", (stored, deep_paths()), |(text, path)| {
            for tool in [Tool::ToolOutputsExtract, Tool::ToolOutputsCount] {
                match answer(tool, &text, &json!({"id": "x", "path": path}), 4000) {
                    Ok(v) => prop_assert!(v.to_string().len() < 20_000, "bounded: {}", v.to_string().len()),
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                }
            }
            Ok(())
        });
    };
    std::thread::Builder::new().stack_size(1 << 20).spawn(run).unwrap().join().unwrap();
}
