//! The zip figures beside the plain download of the same file, in one daemon: 1 GiB of random
//! bytes under a name that says nothing (`.bin`: the zip must sniff it and store it), and
//! 1 GiB of log-like text (deflated at the fast level).

use super::*;

/// Upload `src` as `name` into session `sid` through the worker API.
fn upload(d: &Spawned, (wid, secret): (&str, &str), sid: &str, src: &Path, name: &str) {
    let boundary = "benchboundary";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"session_id\"\r\n\r\n{sid}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"filename\"\r\n\r\n{name}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let total = head.len() as u64 + std::fs::metadata(src).unwrap().len() + tail.len() as u64;
    let mut conn = Conn::open(&d.worker).unwrap();
    let s = conn.reader.get_mut();
    write!(s, "POST /upload?worker_id={wid} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {total}\r\n\r\n").unwrap();
    s.write_all(head.as_bytes()).unwrap();
    std::io::copy(&mut std::fs::File::open(src).unwrap(), s).unwrap();
    s.write_all(tail.as_bytes()).unwrap();
    let (status, body) = conn.read_response().unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// GET `path` to the end; (bytes received, seconds, RSS peak growth in MiB).
fn download(d: &Spawned, path: &str) -> (u64, f64, f64) {
    let pid = d.child.id();
    let hwm_before = rss_kib(pid, "VmHWM:").max(rss_kib(pid, "VmRSS:"));
    let t = Instant::now();
    let mut s = TcpStream::connect(&d.api).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = vec![0u8; MIB as usize];
    let mut received = 0u64;
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        received += n as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    (received, secs, rss_kib(pid, "VmHWM:").saturating_sub(hwm_before) as f64 / 1024.0)
}

fn write_source(path: &Path, text: bool) {
    let mut f = std::io::BufWriter::with_capacity(MIB as usize, std::fs::File::create(path).unwrap());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut written = 0u64;
    let levels = ["INFO", "WARN", "DEBUG", "ERROR"];
    let paths = ["/index.html", "/api/sessions", "/static/app.js", "/login", "/files/report.pdf"];
    while written < 1024 * MIB {
        if text {
            let r = next();
            let line = format!(
                "2026-11-23T12:{:02}:{:02}.{:03}Z {} request {} from 10.0.{}.{} served {} in {} ms\n",
                r % 60,
                (r >> 8) % 60,
                (r >> 16) % 1000,
                levels[(r >> 26) as usize % 4],
                paths[(r >> 28) as usize % 5],
                (r >> 32) % 256,
                (r >> 40) % 256,
                200 + (r >> 48) % 4 * 100,
                (r >> 52) % 900
            );
            f.write_all(line.as_bytes()).unwrap();
            written += line.len() as u64;
        } else {
            let block: Vec<u8> = (0..8192).flat_map(|_| next().to_le_bytes()).collect();
            f.write_all(&block).unwrap();
            written += block.len() as u64;
        }
    }
    f.into_inner().unwrap().sync_all().unwrap();
}

pub fn zip_figures(bin: &Path, work: &Path) {
    for (text, name) in [(false, "random.bin"), (true, "server.log")] {
        let dir = work.join(format!("zip-{name}"));
        let (d, _) = spawn(
            bin,
            &dir,
            "server: {api_port: 0, worker_port: 0}\nfiles: {max_file_size_mb: 2048, max_session_storage_mb: 8192}\n",
        );
        let src = work.join(name);
        write_source(&src, text);
        let reg = post_json(
            &d.worker,
            "/register",
            &json!({"hostname": "zipper", "capabilities": ["browser"], "use_secret": true}),
        );
        let wid = reg["worker_id"].as_str().unwrap().to_string();
        let secret = reg["worker_secret"].as_str().unwrap().to_string();
        let created =
            post_json(&d.api, "/sessions", &json!({"mode": "task", "target": "https://x.test", "instruction": "zip"}));
        let sid = created["session_id"].as_str().unwrap().to_string();
        wait_running(&d.api, &sid);
        let size = std::fs::metadata(&src).unwrap().len() as f64;
        upload(&d, (&wid, &secret), &sid, &src, name);
        let _ = std::fs::remove_file(&src);
        let (_, plain_secs, plain_rss) = download(&d, &format!("/sessions/{sid}/files/{name}"));
        let (zipped, zip_secs, zip_rss) = download(&d, &format!("/sessions/{sid}/files/zip"));
        let mb = |secs: f64| size / 1e6 / secs;
        println!(
            "zip of 1 GiB {}: {:.0} MB/s (input), {:.0}% of the plain download of the same file ({:.0} MB/s); zip {:.0}% of the input; RSS growth zip {zip_rss:.1} MiB, download {plain_rss:.1} MiB",
            if text { "text (.log)" } else { "random (.bin)" },
            mb(zip_secs),
            100.0 * plain_secs / zip_secs,
            mb(plain_secs),
            100.0 * zipped as f64 / size,
        );
    }
}
