//! Files: streamed uploads within limits, hostile names, downloads, the zip.

use crate::support::*;
use agent_controller::protocol::FileKind;
use agent_controller::session::{AgentOutcome, SessionError, SessionRunner};
use serde_json::json;
use std::io::Read;

/// Fields drop in order: the daemon stops before its folder is removed.
struct Fixture {
    d: TestDaemon,
    dir: std::path::PathBuf,
    id: String,
    runner: SessionRunner,
    done: crossbeam_channel::Sender<AgentOutcome>,
    worker_id: String,
    /// The worker client carrying its secret.
    wc: Client,
    _dir: TempDir,
}

fn fixture(tag: &str, tune: impl FnOnce(&mut agent_controller::config::Config)) -> Fixture {
    let dir = TempDir::new(tag);
    let mut config = test_config(dir.path());
    tune(&mut config);
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let (worker_id, wc) = register_as(&d.worker_client(), json!({"hostname": "up", "capabilities": ["browser"]}));
    let id =
        create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "get files"}));
    let (runner, done) = test_agent.next();
    Fixture { dir: dir.path().to_path_buf(), _dir: dir, d, id, runner, done, worker_id, wc }
}

impl Fixture {
    fn upload(&self, filename: &str, data: &[u8]) -> Reply {
        let (ct, body) = multipart(&[
            ("session_id", None, self.id.as_bytes()),
            ("filename", None, filename.as_bytes()),
            ("command_id", None, b"cmd_0001"),
            ("file", Some("ignored.bin"), data),
        ]);
        self.wc.post_raw(&format!("/upload?worker_id={}", self.worker_id), &ct, &body)
    }

    /// Nothing but committed files in the session folder: no staging leftovers.
    fn assert_no_partials(&self) {
        for (path, _) in all_files(&self.dir.join(&self.id)) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert!(!name.ends_with(".part") && !name.ends_with(".tmp"), "leftover {path:?}");
        }
    }
}

/// A raw request on a kept-alive connection; the whole answer up to the server's close, or
/// None if the server kept the connection open past 5 s.
fn raw_until_close(api: &str, head: &str) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(api.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => Some(out),
        Err(_) => panic!("still open after: {:?}", String::from_utf8_lossy(&out[..out.len().min(400)])),
    }
}

/// Streamed answers end their connection (the relay cannot check their framing, so a stream
/// cut short must end in a close, not a short body on an open connection), and an HTTP/1.0
/// client gets the zip up to the close, with no chunk lines in it.
#[test]
fn streamed_answers_close_and_http_1_0_gets_no_chunks() {
    let f = fixture("streamclose", |_| {});
    let data: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    assert_eq!(f.upload("table.csv", &data).status, 200);
    let auth = f.d.api_token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let keep_alive = format!("GET /sessions/{}/files/table.csv HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n", f.id);
    let answer = raw_until_close(&f.d.api, &keep_alive).expect("a file download ends its connection");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    assert!(head.contains("content-length: 70000") && head.contains("connection: close"), "{head}");
    assert_eq!(&answer[split..], &data[..]);

    let old = format!("GET /sessions/{}/files/zip HTTP/1.0\r\n{auth}\r\n", f.id);
    let answer = raw_until_close(&f.d.api, &old).expect("an HTTP/1.0 zip ends with the close");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(!String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase().contains("chunked"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&answer[split..])).unwrap();
    let mut entry = archive.by_name("table.csv").unwrap();
    let mut back = Vec::new();
    entry.read_to_end(&mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn upload_download_and_zip() {
    let f = fixture("updown", |_| {});
    let c = f.d.client();
    let pdf: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let r = f.upload("lecture01.pdf", &pdf);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), json!({"success": true, "stored_as": "lecture01.pdf", "size_kb": 293}));
    // Same name again: never overwritten, a suffix instead.
    let r = f.upload("lecture01.pdf", b"second");
    assert_eq!(r.json()["stored_as"], "lecture01-2.pdf");
    // Generated file and a screenshot through the agent seam.
    let csv = f.runner.store_file("prices.csv", b"name,price\nA,1\n", FileKind::Generated).unwrap();
    assert_eq!(csv.filename, "prices.csv");
    f.runner.store_screenshot(7, b"\x89PNG fake").unwrap();

    let list = c.get(&format!("/sessions/{}/files", f.id)).json();
    let mut kinds: Vec<(String, String)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["filename"].as_str().unwrap().to_string(), e["type"].as_str().unwrap().to_string()))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            ("lecture01-2.pdf".into(), "download".into()),
            ("lecture01.pdf".into(), "download".into()),
            ("prices.csv".into(), "generated".into()),
            ("step_0007.png".into(), "screenshot".into()),
        ]
    );
    assert_eq!(c.get(&format!("/sessions/{}", f.id)).json()["files"], 3);

    let r = c.get(&format!("/sessions/{}/files/lecture01.pdf", f.id));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, pdf);
    assert_eq!(r.header("content-type"), Some("application/pdf"));
    assert_eq!(r.header("content-length"), Some("300000"));
    assert!(r.header("content-disposition").unwrap().contains("attachment; filename=\"lecture01.pdf\""));
    let r = c.get(&format!("/sessions/{}/files/prices.csv", f.id));
    assert_eq!(r.text(), "name,price\nA,1\n");
    assert!(r.header("content-type").unwrap().starts_with("text/csv"));
    assert_eq!(c.get(&format!("/sessions/{}/files/step_0007.png", f.id)).header("content-type"), Some("image/png"));
    assert_error(&c.get(&format!("/sessions/{}/files/nothere.pdf", f.id)), 404, "not_found");
    assert_error(&c.get(&format!("/sessions/{}/files/..%2Fsession.json", f.id)), 404, "not_found");
    assert_error(&c.get(&format!("/sessions/{}/files/%2E%2E", f.id)), 404, "not_found");

    // The zip: streamed (chunked, no length), every file byte for byte.
    let r = c.get(&format!("/sessions/{}/files/zip", f.id));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/zip"));
    assert!(r.header("content-length").is_none(), "zip must be streamed");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(r.body)).unwrap();
    let mut names: Vec<String> = archive.file_names().map(|n| n.unwrap().to_string()).collect();
    names.sort();
    assert_eq!(names, vec!["lecture01-2.pdf", "lecture01.pdf", "prices.csv", "screenshots/step_0007.png"]);
    let mut entry = archive.by_name("lecture01.pdf").unwrap();
    // Sniffed, not guessed from the name: this "pdf" is a repeating pattern, so it is deflated.
    assert_eq!(entry.compression(), zip::CompressionMethod::Deflated);
    let mut got = Vec::new();
    entry.read_to_end(&mut got).unwrap();
    assert_eq!(got, pdf);
    drop(entry);
    let mut entry = archive.by_name("prices.csv").unwrap();
    assert_eq!(entry.compression(), zip::CompressionMethod::Deflated);
    let mut text = String::new();
    entry.read_to_string(&mut text).unwrap();
    assert_eq!(text, "name,price\nA,1\n");
    f.assert_no_partials();
    f.done.send(AgentOutcome::Stopped).unwrap();
}

/// The same bytes again are not stored twice (the answer names the file that holds them), by
/// any way in but one: a file the model writes under a name of its own is stored under it, as
/// the task may ask for that name. Equal sizes with other bytes are stored.
#[test]
fn a_file_with_the_bytes_of_a_stored_one_is_not_stored_again() {
    let f = fixture("dedupe", |_| {});
    let report: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    assert_eq!(f.upload("report.pdf", &report).json()["stored_as"], "report.pdf");
    assert_eq!(f.upload("report-copy.pdf", &report).json()["stored_as"], "report.pdf", "named, not copied");
    let mut other = report.clone();
    other[69_999] ^= 1;
    assert_eq!(f.upload("report.pdf", &other).json()["stored_as"], "report-2.pdf", "same size, other bytes");
    let written = f.runner.store_file("again.pdf", &report, FileKind::Generated).unwrap();
    assert_eq!((written.filename.as_str(), written.duplicate), ("again.pdf", false), "the name asked for");
    let again = f.runner.store_file("again.pdf", &report, FileKind::Generated).unwrap();
    assert_eq!((again.filename.as_str(), again.duplicate), ("again.pdf", true));
    let files = f.d.client().get(&format!("/sessions/{}/files", f.id)).json();
    assert_eq!(files.as_array().unwrap().len(), 3, "{files}");
    assert!(!files.to_string().contains("duplicate"), "listings never say duplicate: {files}");
    f.assert_no_partials();
    f.done.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn hostile_filenames_are_sanitized() {
    let f = fixture("names", |_| {});
    let long = "n".repeat(300);
    let cases: Vec<(&str, &str)> = vec![
        ("../x", "x"),
        ("/etc/passwd", "passwd"),
        ("a\\b", "b"),
        ("nul\0byte.txt", "nul_byte.txt"),
        ("CON", "_CON"),
        (".hidden", "hidden"),
        ("zip", "_zip"),
    ];
    for (raw, expected) in cases {
        let r = f.upload(raw, format!("data of {raw}").as_bytes());
        assert_eq!(r.status, 200, "{raw:?}: {}", r.text());
        assert_eq!(r.json()["stored_as"], expected, "{raw:?}");
    }
    let r = f.upload(&long, b"data");
    let stored = r.json()["stored_as"].as_str().unwrap().to_string();
    assert!(stored.len() <= 150 && stored.starts_with("nnnn"), "{stored}");
    // Nothing escaped the session's files/ folder.
    let outside: Vec<_> = all_files(&f.dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| {
            let rel = p.strip_prefix(f.dir.join(&f.id)).map(|r| r.to_path_buf());
            match rel {
                Ok(r) => r.starts_with("files") && r.components().count() != 2,
                // The daemon's lock file is the only thing outside the session's folder.
                Err(_) => *p != f.dir.join(".lock"),
            }
        })
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    assert!(!f.dir.join("x").exists() && !f.dir.join(&f.id).join("x").exists());
    // save_file with a traversal name lands in files/ as well.
    let e = f.runner.store_file("../../evil.sh", b"#!/bin/sh", FileKind::Generated).unwrap();
    assert_eq!(e.filename, "evil.sh");
    assert!(f.dir.join(&f.id).join("files/evil.sh").exists());
    f.done.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn upload_limits_answer_413_and_507_and_leave_nothing() {
    let f = fixture("limits", |c| {
        c.files.max_file_size_mb = 1;
        c.files.max_session_storage_mb = 2;
        c.files.max_files_per_session = 3;
    });
    let mib = 1024 * 1024;
    // Over the per-file limit.
    let r = f.upload("big.bin", &vec![7u8; mib + 1]);
    assert_error(&r, 413, "too_large");
    assert!(r.json()["error"].as_str().unwrap().contains("max_file_size_mb"));
    f.assert_no_partials();
    // Fill the session: two files of 0.9 MiB fit, the third would exceed 2 MiB.
    // (Different bytes each: a file with the bytes of a stored one is not stored again.)
    let chunk = |b: u8| vec![b; 900 * 1024];
    assert_eq!(f.upload("a.bin", &chunk(1)).status, 200);
    assert_eq!(f.upload("b.bin", &chunk(2)).status, 200);
    let r = f.upload("c.bin", &chunk(3));
    assert_error(&r, 507, "storage_full");
    assert!(r.json()["error"].as_str().unwrap().contains("max_session_storage_mb"));
    f.assert_no_partials();
    // File count: one small file fits, the next is refused.
    assert_eq!(f.upload("d.txt", b"small").status, 200);
    let r = f.upload("e.txt", b"small too");
    assert_error(&r, 507, "storage_full");
    assert!(r.json()["error"].as_str().unwrap().contains("max_files_per_session"));
    // The agent seam gets the same limits.
    let refused = f.runner.store_file("f.txt", b"x", FileKind::Generated).unwrap_err();
    assert!(matches!(&refused, SessionError::NoRoom(m) if m.contains("max_files_per_session")), "{refused:?}");
    let files = f.d.client().get(&format!("/sessions/{}/files", f.id)).json();
    assert_eq!(files.as_array().unwrap().len(), 3);
    f.assert_no_partials();
    f.done.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn uploads_go_only_to_the_session_the_worker_serves() {
    let f = fixture("uploadsession", |_| {});
    let w = f.wc.clone();
    // Claiming another session is refused.
    let (ct, body) = multipart(&[
        ("session_id", None, b"sess_20000101_000000"),
        ("filename", None, b"x.txt"),
        ("file", Some("x.txt"), b"hi"),
    ]);
    assert_error(&w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body), 403, "forbidden");
    // Not multipart, truncated multipart, no file part.
    assert_error(
        &w.post_raw(&format!("/upload?worker_id={}", f.worker_id), "application/json", b"{}"),
        400,
        "bad_request",
    );
    let (ct, mut body) = multipart(&[("file", Some("t.bin"), &[5u8; 10_000])]);
    body.truncate(5_000);
    assert_error(&w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body), 400, "bad_request");
    let (ct, body) = multipart(&[("filename", None, b"x.txt")]);
    assert_error(&w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body), 400, "bad_request");
    // Found by tests/fuzz: a part without Content-Disposition made multipart2's error format
    // itself until the stack overflowed, which aborted the whole daemon.
    let (ct, mut body) = multipart(&[("file", Some("t.bin"), b"x")]);
    let at = body.windows(20).position(|w| w == b"Content-Disposition:").unwrap();
    body[at..at + 20].copy_from_slice(b"Content-Dismissal:  ");
    let r = w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body);
    assert_error(&r, 400, "bad_request");
    assert!(r.json()["error"].as_str().unwrap().contains("Content-Disposition"), "{}", r.text());
    f.assert_no_partials();
    // The part's own filename is used when no `filename` field is sent.
    let (ct, body) = multipart(&[("file", Some("no-session.txt"), b"hello")]);
    assert_error(&w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body), 400, "bad_request");
    f.assert_no_partials();
    let (ct, body) = multipart(&[("session_id", None, f.id.as_bytes()), ("file", Some("from-part.txt"), b"hello")]);
    let r = w.post_raw(&format!("/upload?worker_id={}", f.worker_id), &ct, &body);
    assert_eq!(r.json()["stored_as"], "from-part.txt");
    // After the session ends the worker serves nothing: 409.
    f.done.send(AgentOutcome::Finished { summary: "x".into() }).unwrap();
    wait_status(&f.d.client(), &f.id, "finished");
    wait_until(std::time::Duration::from_secs(5), "lease release", || {
        (f.d.client().get("/workers").json()[0]["session_id"].is_null()).then_some(())
    });
    assert_error(&f.upload("late.txt", b"late"), 409, "conflict");
}
