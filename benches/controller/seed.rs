//! The daemon beside the seed's stack (Flask + waitress, `benches/seed_stack/app.py`) in the
//! same run, on the endpoints both have: idle RSS, the command round trip agent → worker →
//! result, a 256 MiB multipart upload and the zip download of that session.

use super::steps::{SeedStack, instant_worker};
use super::*;

const UPLOAD_MIB: u64 = 256;

pub fn seed_figures(bin: &Path, work: &Path) {
    let Some((seed, seed_ready)) = SeedStack::start(&work.join("seed-idle"), slow_model(), 0) else { return };
    std::thread::sleep(Duration::from_millis(500));
    let seed_rss = rss_kib(seed.child.id(), "VmRSS:");
    drop(seed);
    let (ours, ours_ready) = spawn(bin, &work.join("seed-idle-ours"), "server: {api_port: 0, worker_port: 0}\n");
    std::thread::sleep(Duration::from_millis(500));
    let ours_rss = rss_kib(ours.child.id(), "VmRSS:");
    drop(ours);
    println!(
        "idle, beside the seed stack: agent-controller RSS {:.1} MiB, ready in {:.1} ms; seed stack RSS {:.1} MiB, ready in {:.0} ms",
        ours_rss as f64 / 1024.0,
        ms(ours_ready),
        seed_rss as f64 / 1024.0,
        ms(seed_ready)
    );
    round_trip(work);
    seed_round_trip(work);
    upload_and_zip_both(bin, work);
}

/// The seed's put_command → worker → result, timed inside the seed's process as our round
/// trip is timed inside ours, with the same instant worker.
fn seed_round_trip(work: &Path) {
    let Some((mut seed, _)) = SeedStack::start(&work.join("seed-rt"), slow_model(), 5200) else { return };
    let stop = Arc::new(AtomicBool::new(false));
    let _worker = instant_worker(seed.worker.clone(), "seed-rt".into(), Arc::clone(&stop));
    let mut line = String::new();
    while !line.starts_with("dispatch ") {
        line.clear();
        assert!(seed.stdout.read_line(&mut line).unwrap() > 0, "the seed stack exited");
    }
    stop.store(true, Ordering::Relaxed);
    let secs: Vec<f64> = serde_json::from_str(&line["dispatch ".len()..]).unwrap();
    let mut samples: Vec<Duration> = secs.into_iter().map(Duration::from_secs_f64).collect();
    samples.sort();
    println!(
        "command round trip agent → worker → result, seed stack (loopback, {} samples): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        samples.len(),
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().unwrap())
    );
}

/// POST `src` as a multipart upload to `worker` (query and headers as the stack wants them);
/// the seconds it took.
fn multipart(worker: &str, query_and_headers: (&str, &str), sid: &str, src: &Path) -> f64 {
    let boundary = "benchboundary";
    let name = src.file_name().unwrap().to_string_lossy();
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"session_id\"\r\n\r\n{sid}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"filename\"\r\n\r\n{name}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let total = head.len() as u64 + std::fs::metadata(src).unwrap().len() + tail.len() as u64;
    let (query, headers) = query_and_headers;
    let mut conn = Conn::open(worker).unwrap();
    let t = Instant::now();
    let s = conn.reader.get_mut();
    write!(s, "POST /upload{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {total}\r\n\r\n").unwrap();
    s.write_all(head.as_bytes()).unwrap();
    std::io::copy(&mut std::fs::File::open(src).unwrap(), s).unwrap();
    s.write_all(tail.as_bytes()).unwrap();
    let (status, body) = conn.read_response().unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    t.elapsed().as_secs_f64()
}

/// GET `path` from `api` to the end of the body (Connection: close); seconds.
fn fetch(api: &str, path: &str) -> f64 {
    let t = Instant::now();
    let mut s = TcpStream::connect(api).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = vec![0u8; MIB as usize];
    while s.read(&mut buf).unwrap() > 0 {}
    t.elapsed().as_secs_f64()
}

/// Upload, then zip: (upload MiB/s, upload RSS growth MiB, zip MiB/s of input, zip RSS growth).
fn upload_then_zip(pid: u32, api: &str, worker: &str, auth: (&str, &str), sid: &str, src: &Path) -> [f64; 4] {
    let growth = |before: u64| rss_kib(pid, "VmHWM:").saturating_sub(before) as f64 / 1024.0;
    let before = rss_kib(pid, "VmHWM:").max(rss_kib(pid, "VmRSS:"));
    let up = UPLOAD_MIB as f64 / multipart(worker, auth, sid, src);
    let up_rss = growth(before);
    let before = rss_kib(pid, "VmHWM:");
    let zip = UPLOAD_MIB as f64 / fetch(api, &format!("/sessions/{sid}/files/zip"));
    [up, up_rss, zip, growth(before)]
}

fn upload_and_zip_both(bin: &Path, work: &Path) {
    let src = work.join("compare.bin");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&src).unwrap());
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..UPLOAD_MIB * MIB / 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f.write_all(&x.to_le_bytes()).unwrap();
        }
    }
    let config = "server: {api_port: 0, worker_port: 0}\n";
    let (d, _) = spawn(bin, &work.join("compare-ours"), config);
    let reg =
        post_json(&d.worker, "/register", &json!({"hostname": "up", "capabilities": ["shell"], "use_secret": true}));
    let (wid, secret) = (reg["worker_id"].as_str().unwrap(), reg["worker_secret"].as_str().unwrap());
    let body = json!({"mode": "task", "type": "shell", "target": "bench-host", "instruction": "upload"});
    let sid = post_json(&d.api, "/sessions", &body)["session_id"].as_str().unwrap().to_string();
    wait_running(&d.api, &sid);
    let auth = (format!("?worker_id={wid}"), format!("X-Worker-Secret: {secret}\r\n"));
    let ours = upload_then_zip(d.child.id(), &d.api, &d.worker, (&auth.0, &auth.1), &sid, &src);
    drop(d);
    let Some((seed, _)) = SeedStack::start(&work.join("compare-seed"), slow_model(), 0) else { return };
    let sid = post_json(&seed.api, "/sessions", &body)["session_id"].as_str().unwrap().to_string();
    let theirs = upload_then_zip(seed.child.id(), &seed.api, &seed.worker, ("", ""), &sid, &src);
    drop(seed);
    let _ = std::fs::remove_file(&src);
    for (who, [up, up_rss, zip, zip_rss]) in [("agent-controller", ours), ("seed stack", theirs)] {
        println!(
            "{UPLOAD_MIB} MiB of random bytes, {who}: multipart upload {up:.0} MiB/s (RSS growth {up_rss:.1} MiB); zip download {zip:.0} MiB/s of input (RSS growth {zip_rss:.1} MiB)"
        );
    }
}
