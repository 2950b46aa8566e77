//! What one large structured result costs the daemon's memory: an instant scripted model asks
//! once for `browser_scrape_links`, an instant worker answers it with about 8.7 MB of random
//! JSON (the size of the review's result), and the model then finishes. Two shapes: links
//! (`{text, url}` of 55 letters each) and many small objects (`{id, v}`), where a parsed tree
//! costs the most per byte. The daemon is the real
//! binary as a child, so its figures are its own: RSS before the session, the peak (VmHWM)
//! while the result goes through, and RSS once the session has ended (what it keeps). Three
//! sessions run one after another, so a cost kept per session would show as growth.

use super::*;

/// About 8.7 MB of links as JSON: 52 000 of `{text, url}`, random letters.
const LINKS: usize = 52_000;
/// About 8.7 MB of small objects: 330 000 of `{"id": n, "v": "…"}`.
const SMALL: usize = 330_000;
const SESSIONS: usize = 3;

pub fn big_result(bin: &Path, work: &Path) {
    big_result_of(bin, &work.join("bigresult-links"), "links", random_links);
    big_result_of(bin, &work.join("bigresult-small"), "small objects", small_objects);
}

fn big_result_of(bin: &Path, work: &Path, shape: &str, make: fn() -> Value) {
    let model = links_model();
    let (d, _) = spawn_with_model(bin, work, "server: {api_port: 0, worker_port: 0}\n", &model);
    let data = serde_json::to_vec(&make()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = links_worker(d.worker.clone(), make, Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(300));
    let pid = d.child.id();
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!("large result: {:.1} MB of {shape} as one browser_scrape_links result", data.len() as f64 / 1e6);
    drop(data);
    for k in 1..=SESSIONS {
        let before = rss_kib(pid, "VmRSS:");
        let body = json!({"mode": "task", "target": "https://example.test/", "instruction": "list the links"});
        let id = post_json(&d.api, "/sessions", &body)["session_id"].as_str().unwrap().to_string();
        let t = Instant::now();
        while matches!(get_json(&d.api, &format!("/sessions/{id}"))["status"].as_str(), Some("running" | "waiting")) {
            assert!(t.elapsed() < Duration::from_secs(120), "session {id} never finished");
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = get_json(&d.api, &format!("/sessions/{id}"))["status"].clone();
        let took = t.elapsed();
        std::thread::sleep(Duration::from_millis(1000));
        println!(
            "  session {k} ({status}, {:.2} s): RSS before {:.1} MB, peak (VmHWM) {:.1} MB, after it ended {:.1} MB",
            took.as_secs_f64(),
            mb(before),
            mb(rss_kib(pid, "VmHWM:")),
            mb(rss_kib(pid, "VmRSS:"))
        );
    }
    stop.store(true, Ordering::Relaxed);
    drop(worker);
}

/// Random lowercase words from a fixed seed (xorshift), so every run sends the same bytes.
fn words() -> impl FnMut(usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    move |n| {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (b'a' + (x % 26) as u8) as char
            })
            .collect()
    }
}

/// `{count, links, truncated}` as the worker's `browser_scrape_links` answers.
fn random_links() -> Value {
    let mut word = words();
    let links: Vec<Value> = (0..LINKS)
        .map(|_| json!({"text": format!("{} {}", word(20), word(35)), "url": format!("https://example.test/{}/{}", word(30), word(40))}))
        .collect();
    json!({"count": LINKS, "links": links, "truncated": false})
}

/// `{count, items}` of small objects: the shape whose parsed tree costs the most per byte.
fn small_objects() -> Value {
    let mut word = words();
    let items: Vec<Value> = (0..SMALL).map(|i| json!({"id": i, "v": word(8)})).collect();
    json!({"count": SMALL, "items": items})
}

/// The model: `browser_scrape_links` first, then `finish_task`.
fn links_model() -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let taken =
                parsed["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
            let call = if taken == 0 {
                json!({"type": "tool_use", "id": "toolu_0", "name": "browser_scrape_links", "input": {}})
            } else {
                json!({"type": "tool_use", "id": format!("toolu_{taken}"), "name": "finish_task", "input": {"summary": "listed"}})
            };
            let reply = json!({"id": format!("msg_{taken}"), "type": "message", "role": "assistant", "model": "bench",
                "content": [call], "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": body.len() / 4, "output_tokens": 20}});
            let json_type = tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap();
            let _ = request
                .respond(tiny_http::Response::from_data(serde_json::to_vec(&reply).unwrap()).with_header(json_type));
        }
    });
    url
}

/// A browser worker answering `browser_scrape_links` with `make`'s JSON (rebuilt per command so
/// the bench holds no copy between results) and everything else at once.
fn links_worker(addr: String, make: fn() -> Value, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let hello = json!({"hostname": "links-worker", "capabilities": ["browser"], "use_secret": true});
        let (_, reply) =
            Conn::open(&addr).unwrap().request("POST", "/register", &serde_json::to_vec(&hello).unwrap()).unwrap();
        let reg: Value = serde_json::from_slice(&reply).unwrap();
        let query = format!("?worker_id={}", reg["worker_id"].as_str().unwrap());
        let mut conn = Conn::open(&addr).unwrap().for_worker(&reg);
        while !stop.load(Ordering::Relaxed) {
            let Ok((200, body)) = conn.request("GET", &format!("/command{query}"), b"") else { break };
            let cmd: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if cmd["action"] == "wait" || cmd["id"].is_null() {
                continue;
            }
            let result = if cmd["action"] == "browser_scrape_links" {
                let mut result = format!("{{\"id\":{},\"success\":true,\"data\":", cmd["id"]).into_bytes();
                result.extend_from_slice(&serde_json::to_vec(&make()).unwrap());
                result.push(b'}');
                result
            } else {
                let data =
                    json!({"url": "https://example.test/", "title": "Links", "snapshot": "heading \"Links\" [ref=e1]"});
                serde_json::to_vec(&json!({"id": cmd["id"], "success": true, "data": data})).unwrap()
            };
            let _ = conn.request("POST", &format!("/result{query}"), &result);
        }
    })
}
