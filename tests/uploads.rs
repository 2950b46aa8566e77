//! Files a person hands to a session, and `browser_upload_file` (issue 67, item 3), with the
//! real worker and Chromium: input files put before the session starts reach a site's upload
//! form byte for byte (a file field set directly, and a chooser a button opens from script), a
//! path instead of a session file's name is refused, bad input names are 400, and the listing
//! keeps inputs apart from what the session produced. Skipped when Chromium is not installed.

use crate::support::llm::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::json;
use std::io::Read;
use std::sync::{Arc, Mutex};

/// Random bytes (not text): every byte value, in an order nobody wrote.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&agent_controller::util::clock::random_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A site with an upload form: one visible file field, one hidden one a button opens from
/// script. Each POST's parts (name, filename, bytes) are kept.
type Parts = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

fn upload_site() -> (String, Parts) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let parts: Parts = Arc::default();
    let kept = Arc::clone(&parts);
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut body = Vec::new();
            let _ = req.as_reader().take(64 << 20).read_to_end(&mut body);
            let html = |text: &str| {
                tiny_http::Response::from_string(text)
                    .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap())
            };
            let resp = match (req.method().as_str(), req.url()) {
                ("POST", "/up") => {
                    let ct = req.headers().iter().find(|h| h.field.equiv("Content-Type")).unwrap().value.to_string();
                    let boundary = ct.split("boundary=").nth(1).unwrap().trim_matches('"').to_string();
                    kept.lock().unwrap().extend(split_parts(&body, &boundary));
                    html("<title>Received</title><h1>Thank you</h1>")
                }
                _ => html(
                    "<title>Supplier portal</title><form method=post action=/up enctype=multipart/form-data>\
                     <label>Invoice <input type=file name=invoice id=invoice></label>\
                     <input type=file name=extra id=extra style=display:none>\
                     <button type=button id=pick onclick=\"document.getElementById('extra').click()\">Attach more</button>\
                     <button type=submit id=send>Send</button></form>",
                ),
            };
            let _ = req.respond(resp);
        }
    });
    (url, parts)
}

/// The parts of a multipart body: (field name, file name, bytes).
fn split_parts(body: &[u8], boundary: &str) -> Vec<(String, String, Vec<u8>)> {
    let delimiter = format!("\r\n--{boundary}");
    let mut body = [b"\r\n".as_slice(), body].concat();
    let mut out = Vec::new();
    while let Some(start) = find(&body, delimiter.as_bytes()) {
        body.drain(..start + delimiter.len());
        let Some(head_end) = find(&body, b"\r\n\r\n") else { break };
        let head = String::from_utf8_lossy(&body[..head_end]).to_string();
        let rest = &body[head_end + 4..];
        let Some(end) = find(rest, delimiter.as_bytes()) else { break };
        let field = |key: &str| head.split(&format!("{key}=\"")).nth(1).and_then(|s| s.split('"').next());
        out.push((
            field(" name").unwrap_or("").to_string(),
            field("filename").unwrap_or("").to_string(),
            rest[..end].to_vec(),
        ));
        body.drain(..head_end + 4);
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn an_input_file_reaches_the_upload_form_byte_for_byte_and_a_path_is_refused() {
    if !have_chromium() {
        return;
    }
    let (site, parts) = upload_site();
    let dir = TempDir::new("uploads");
    let script = vec![
        tool("browser_upload_file", json!({"selector": "#invoice", "filename": "../x"})),
        tool("browser_upload_file", json!({"selector": "#invoice", "filename": "/etc/passwd"})),
        tool("browser_upload_file", json!({"selector": "#invoice", "filename": "secret-notes.txt"})),
        tool("browser_upload_file", json!({"selector": "#invoice", "filename": "invoice 7.bin"})),
        tool("browser_upload_file", json!({"selector": "#pick", "filename": "extra.bin"})),
        tool("browser_click", json!({"selector": "#send"})),
        tool("finish_task", json!({"summary": "uploaded"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "upload-box", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{site}/form"), "instruction": "Upload the invoice",
            "inputs": ["invoice 7.bin", "extra.bin"]}),
    );
    // It waits for what it was promised, holding no worker.
    let waiting = wait_until(std::time::Duration::from_secs(5), "the session to wait for its inputs", || {
        let r = c.get(&format!("/sessions/{id}")).json();
        r["waiting_for"].as_str().filter(|w| w.contains("input files")).map(str::to_string)
    });
    assert!(waiting.contains("invoice 7.bin") && waiting.contains("extra.bin"), "{waiting}");
    for bad in ["..%2Fx", "%2Fetc%2Fpasswd", ".hidden", "a%5Cb", "a%00b", "%2E%2E"] {
        let r = c.request("PUT", &format!("/sessions/{id}/inputs/{bad}"), None, Some(b"x".to_vec()));
        assert_error(&r, 400, "bad_request");
        assert!(r.text().contains("not a path"), "{bad}: {}", r.text());
    }
    let invoice = random_bytes(300_000);
    let extra = random_bytes(70_001);
    let put = |name: &str, bytes: &[u8]| {
        c.request("PUT", &format!("/sessions/{id}/inputs/{name}"), None, Some(bytes.to_vec()))
    };
    assert_eq!(put("invoice%207.bin", b"first version").status, 201);
    let again = put("invoice%207.bin", &invoice);
    assert_eq!(again.status, 200, "a second PUT replaces: {}", again.text());
    assert_eq!(put("extra.bin", &extra).status, 201);
    wait_status(&c, &id, "finished");

    let got = parts.lock().unwrap().clone();
    let part = |name: &str| got.iter().find(|(n, _, _)| n == name).unwrap_or_else(|| panic!("no {name}: {got:?}"));
    assert_eq!(part("invoice").1, "invoice 7.bin", "the site sees the input's own name");
    assert!(part("invoice").2 == invoice, "the invoice arrived byte for byte");
    assert!(part("extra").2 == extra, "the chooser was answered with the other input");

    // The paths were refused, in words; a name the session does not hold names those it does.
    let reqs = llm.requests();
    let said = |i: usize| reqs[i].last_results()[0].to_string();
    assert!(said(1).contains("not a path") && said(1).contains("../x"), "{}", said(1));
    assert!(said(2).contains("not a path"), "{}", said(2));
    assert!(said(3).contains("no file") && said(3).contains("invoice 7.bin"), "{}", said(3));
    // The model was told of its inputs, in one factual line of the opening message.
    let opening = reqs[0].body["messages"][0].to_string();
    assert!(
        opening.contains("Files handed over for this task (by name): extra.bin (69 KB), invoice 7.bin (293 KB)."),
        "{opening}"
    );

    // Inputs are listed apart from what the session produced, and kept in inputs/.
    let files = c.get(&format!("/sessions/{id}/files")).json();
    let kind = |name: &str| files.as_array().unwrap().iter().find(|f| f["filename"] == name).map(|f| f["type"].clone());
    assert_eq!(kind("invoice 7.bin"), Some(json!("input")), "{files}");
    let stored = std::fs::read(dir.path().join(&id).join("inputs").join("invoice 7.bin")).unwrap();
    assert!(stored == invoice);
    assert_eq!(c.get(&format!("/sessions/{id}/files/invoice%207.bin")).body, invoice);
    // An ended session takes no more.
    assert_error(&put("late.bin", b"x"), 409, "conflict");
}

#[test]
fn a_worker_gets_only_the_files_of_the_session_it_serves() {
    let dir = TempDir::new("upload-fetch");
    let d = TestDaemon::idle(test_config(dir.path()));
    let (wid, w) = register_as(
        &d.worker_client(),
        json!({"hostname": "idle-box", "capabilities": ["browser"], "use_secret": true}),
    );
    let r = w.get(&format!("/files/anything?worker_id={wid}"));
    assert_error(&r, 409, "conflict");
    let r = d.worker_client().get(&format!("/files/anything?worker_id={wid}"));
    assert_eq!(r.status, 403, "no secret, no file: {}", r.text());
}
