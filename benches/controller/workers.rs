//! The figures that need a real `agent-worker`: browser commands through the controller with
//! headless Chromium, and desktop screenshots on a busy 1920×1080 Xvfb screen.

use super::*;

/// Time per browser command through controller + agent-worker + headless Chromium.
pub fn browser_commands(worker_bin: &Path, work: &Path) {
    if !Path::new("/usr/bin/chromium").exists() || !worker_bin.exists() {
        println!("browser commands: skipped (needs /usr/bin/chromium and {})", worker_bin.display());
        return;
    }
    let site = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let site_url = format!("http://{}", site.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for rq in site.incoming_requests() {
            let body = "<!doctype html><title>Bench</title><h1>Bench page</h1><button id=b onclick=\"this.textContent='ok'\">Click</button>\
                        <table id=t><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>";
            let resp = tiny_http::Response::from_string(body)
                .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap());
            let _ = rq.respond(resp);
        }
    });
    let (daemon, rx, done_tx) = daemon_with_test_agent(&work.join("browser"));
    let mut worker = Command::new(worker_bin)
        .args(["--controller", &format!("http://{}", daemon.worker_addr()), "--headless", "--capabilities", "browser"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while daemon.hub().workers().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(10), "worker never registered");
        std::thread::sleep(Duration::from_millis(10));
    }
    post_json(
        &daemon.api_addr().to_string(),
        "/sessions",
        &json!({"mode": "task", "target": site_url, "instruction": "bench"}),
    );
    let runner = rx.recv().unwrap();
    let run = |action: &str, params: Value| -> Duration {
        let t = Instant::now();
        runner.execute(action, params, Duration::from_secs(60)).unwrap();
        t.elapsed()
    };
    let first = run("browser_navigate", json!({"url": format!("{site_url}/")}));
    let (mut nav, mut shot, mut click) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..20 {
        nav.push(run("browser_navigate", json!({"url": format!("{site_url}/?{i}")})));
        shot.push(run("browser_screenshot", json!({})));
        click.push(run("browser_click", json!({"selector": "#b"})));
    }
    for v in [&mut nav, &mut shot, &mut click] {
        v.sort();
    }
    let worker_rss = rss_kib(worker.id(), "VmRSS:");
    println!(
        "browser commands via controller + agent-worker + headless Chromium (20 each): navigate p50 {:.1} ms, screenshot p50 {:.1} ms, click p50 {:.1} ms; first command (starts Chromium) {:.0} ms; agent-worker RSS {:.1} MiB (Chromium itself not counted)",
        ms(percentile(&nav, 0.5)),
        ms(percentile(&shot, 0.5)),
        ms(percentile(&click, 0.5)),
        ms(first),
        worker_rss as f64 / 1024.0
    );
    let _ = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status();
    let _ = worker.wait();
    let _ = done_tx.send(());
    daemon.shutdown();
}

/// `screenshot` commands through controller + agent-worker on a busy 1920×1080 Xvfb screen
/// (3000 random rectangles and a terminal full of text): the worker's capture + downscale to
/// 1280 + JPEG q70 (as it reports them), and the whole command round trip.
pub fn desktop_screenshots(worker_bin: &Path, work: &Path) {
    let free = (90..400).find(|n| !Path::new(&format!("/tmp/.X{n}-lock")).exists());
    let (Some(n), true) = (free, Path::new("/usr/bin/Xvfb").exists() && worker_bin.exists()) else {
        return println!("desktop screenshots: skipped (needs Xvfb and {})", worker_bin.display());
    };
    let display = format!(":{n}");
    let quiet = |c: &mut Command| Spawned {
        child: c.stderr(Stdio::null()).spawn().unwrap(),
        api: "".into(),
        worker: "".into(),
    };
    let _xvfb =
        quiet(Command::new("Xvfb").args([&display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"]));
    let _x = busy_screen(&display);
    let text = "ls -lR /usr/share/doc | head -3000; sleep 600";
    let _term = quiet(
        Command::new("xterm").args(["-geometry", "200x60+200+100", "-e", "sh", "-c", text]).env("DISPLAY", &display),
    );
    std::thread::sleep(Duration::from_secs(2));
    let (daemon, rx, done_tx) = daemon_with_test_agent(&work.join("desktop"));
    let controller = format!("http://{}", daemon.worker_addr());
    let worker = quiet(Command::new(worker_bin).args([
        "--controller",
        &controller,
        "--capabilities",
        "app",
        "--display",
        &display,
    ]));
    let t = Instant::now();
    while daemon.hub().workers().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(30), "worker never registered");
        std::thread::sleep(Duration::from_millis(10));
    }
    let session = json!({"mode": "task", "type": "app", "target": "bench", "instruction": "bench"});
    post_json(&daemon.api_addr().to_string(), "/sessions", &session);
    let runner = rx.recv().unwrap();
    let (mut trip, mut grab, mut png, mut kib) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..60 {
        let t = Instant::now();
        let shot = runner.execute("screenshot", json!({}), Duration::from_secs(30)).unwrap();
        trip.push(t.elapsed());
        let stage = |k: &str| Duration::from_secs_f64(shot["timing_ms"][k].as_f64().unwrap() / 1000.0);
        grab.push(stage("capture") + stage("scale") + stage("jpeg"));
        png.push(stage("png"));
        kib = shot["image_base64"].as_str().unwrap().len() * 3 / 4 / 1024;
    }
    let p = |v: &mut Vec<Duration>, q| {
        v.sort();
        ms(percentile(v, q))
    };
    println!(
        "desktop screenshot, busy Xvfb 1920×1080 → 1280×720 JPEG q70 ({kib} KiB), 60 via controller + agent-worker: capture + downscale + JPEG (worker) p50 {:.1} ms, p99 {:.1} ms; full-size PNG p50 {:.1} ms; whole command round trip p50 {:.1} ms, p99 {:.1} ms; agent-worker RSS {:.1} MiB",
        p(&mut grab, 0.5),
        p(&mut grab, 0.99),
        p(&mut png, 0.5),
        p(&mut trip, 0.5),
        p(&mut trip, 0.99),
        rss_kib(worker.child.id(), "VmRSS:") as f64 / 1024.0
    );
    drop(worker);
    let _ = done_tx.send(());
    daemon.shutdown();
}

/// Connect to `display` and make its root background 3000 random rectangles of random colours.
fn busy_screen(display: &str) -> x11rb::rust_connection::RustConnection {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{ChangeGCAux, ChangeWindowAttributesAux, ConnectionExt as _, CreateGCAux, Rectangle};
    let t = Instant::now();
    let (conn, screen) = loop {
        match x11rb::connect(Some(display)) {
            Ok(c) => break c,
            Err(e) => assert!(t.elapsed() < Duration::from_secs(10), "Xvfb {display}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let s = &conn.setup().roots[screen];
    let (pixmap, gc) = (conn.generate_id().unwrap(), conn.generate_id().unwrap());
    conn.create_pixmap(s.root_depth, pixmap, s.root, 1920, 1080).unwrap();
    conn.create_gc(gc, pixmap, &CreateGCAux::new()).unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (at, size) = ((x % 1920) as i16, if i < 200 { 400 } else { 80 });
        let (w, h) = (4 + (x >> 32) as u16 % size, 4 + (x >> 48) as u16 % size);
        conn.change_gc(gc, &ChangeGCAux::new().foreground(x as u32 & 0xff_ffff)).unwrap();
        conn.poly_fill_rectangle(pixmap, gc, &[Rectangle { x: at, y: (x >> 16) as i16 % 1080, width: w, height: h }])
            .unwrap();
    }
    conn.change_window_attributes(s.root, &ChangeWindowAttributesAux::new().background_pixmap(pixmap)).unwrap();
    conn.clear_area(false, s.root, 0, 0, 0, 0).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    conn
}

/// `workers` long-polling workers (instant ones) and `sessions` sessions held mid model call
/// for 20 s on the default thread pools, while probe sessions take steps through free workers:
/// errors, how many workers stay connected, the daemon's RSS and threads, and the probe's step
/// time (model → controller → worker → controller → model), which bounds the dispatch round
/// trip from above.
pub fn many_workers(bin: &Path, work: &Path, workers: usize, sessions: usize, long_poll_s: u64) {
    use super::steps::{Model, TAG, instant_worker, record_steps, step_parts};
    raise_fd_limit();
    let model = Model::start(50);
    let config = format!(
        "server: {{api_port: 0, worker_port: 0, long_poll_s: {long_poll_s}, worker_timeout_s: 60, max_workers: {}, max_sessions: {}}}\n",
        workers + 16,
        sessions + 16
    );
    let (d, _) = spawn_with_model(bin, &work.join(format!("many{workers}")), &config, &model.url);
    let pid = d.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> =
        (0..workers).map(|i| instant_worker(d.worker.clone(), format!("w{i:04}"), Arc::clone(&stop))).collect();
    let t = Instant::now();
    let mut registered = 0;
    while registered < workers && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        registered = get_json(&d.api, "/workers").as_array().map_or(0, Vec::len);
    }
    let workers_registered = registered;
    let registering = t.elapsed();
    let task = |tag: String| json!({"mode": "task", "type": "shell", "target": "bench-host", "instruction": format!("{TAG}{tag}: bench")});
    let ids: Vec<String> = (0..sessions)
        .map(|i| post_json(&d.api, "/sessions", &task(format!("hold{i}")))["session_id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        wait_running(&d.api, id);
    }
    let (mut api_errors, mut fewest, mut peak, mut probes) = (0, workers, 0, 0);
    record_steps(true);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let probe = post_json(&d.api, "/sessions", &task(format!("probe{probes}")));
        probes += 1;
        let workers_now = get_json(&d.api, "/workers");
        let connected = workers_now.as_array().map_or(0, |a| a.iter().filter(|w| w["connected"] == true).count());
        if connected != workers_registered {
            api_errors += 1;
            fewest = fewest.min(connected);
        }
        let probe_id = probe["session_id"].as_str().unwrap().to_string();
        while matches!(
            get_json(&d.api, &format!("/sessions/{probe_id}"))["status"].as_str(),
            Some("running" | "waiting")
        ) {
            peak = peak.max(rss_kib(pid, "VmRSS:"));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    record_steps(false);
    let (_, dispatch) = step_parts();
    let running = ids.iter().filter(|id| get_json(&d.api, &format!("/sessions/{id}"))["status"] == "running").count();
    let threads = rss_kib(pid, "Threads:"); // a count, from the same /proc status file
    stop.store(true, Ordering::Relaxed);
    let steps = model.take_steps("probe");
    drop(d);
    let errors: u64 = handles.into_iter().map(|h| h.join().unwrap_or(1)).sum();
    println!(
        "{workers_registered}/{workers} long-polling workers registered in {:.1} s (long_poll_s {long_poll_s}) + {sessions} sessions held mid model call, 20 s: {errors} worker errors, {api_errors} checks with a worker missing (fewest connected {fewest}), {running}/{sessions} sessions running; daemon RSS peak {:.1} MiB, {threads} threads; meanwhile {probes} probe sessions: step p50 {:.3} ms, p99 {:.3} ms ({} steps); dispatch (model reply → command at the worker → result acknowledged) p50 {:.3} ms, p99 {:.3} ms",
        registering.as_secs_f64(),
        peak as f64 / 1024.0,
        ms(percentile(&steps, 0.5)),
        ms(percentile(&steps, 0.99)),
        steps.len(),
        ms(percentile(&dispatch, 0.5)),
        ms(percentile(&dispatch, 0.99))
    );
}

/// Two file descriptors per worker (ours and the daemon's, which inherits the limit): as many
/// as the hard limit allows.
fn raise_fd_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
