//! The desktop backend end to end: a real Xvfb (openbox where EWMH matters), real X programs,
//! the real agent-worker with `--display`, driven through the real controller by a test agent.
//! Skipped with a message only when Xvfb is not installed (`make test` installs it).

use crate::support::desktop::{Xvfb, child_windows, decode_jpeg, have_xvfb};
use crate::support::*;
use agent_controller::session::SessionRunner;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The agent-worker on `display`, stopped with SIGTERM on drop.
pub(crate) struct DesktopWorker(ChildGuard);

impl DesktopWorker {
    fn start(d: &TestDaemon, hostname: &str, caps: &str, display: &str) -> DesktopWorker {
        DesktopWorker::start_with(d, hostname, caps, display, &[])
    }

    /// With these environment variables; without them it has no session bus (nor $DISPLAY).
    pub(crate) fn start_with(
        d: &TestDaemon,
        hostname: &str,
        caps: &str,
        display: &str,
        env: &[(&str, &str)],
    ) -> DesktopWorker {
        let child = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
            .args(["--controller", &d.worker, "--hostname", hostname, "--capabilities", caps, "--display", display])
            .env_remove("DISPLAY")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("AC_TEST_WORKER_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
            .spawn()
            .unwrap();
        let c = d.client();
        wait_until(Duration::from_secs(15), "the worker to register", || {
            c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == hostname).then_some(())
        });
        DesktopWorker(ChildGuard(child))
    }
}

impl Drop for DesktopWorker {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.0.id().to_string()]).status();
        let _ = self.0.0.wait();
    }
}

/// A daemon, a worker on `x`'s display and an app session: the runner the test drives.
pub(crate) struct Rig {
    pub(crate) runner: SessionRunner,
    _done: crossbeam_channel::Sender<agent_controller::session::AgentOutcome>,
    _worker: DesktopWorker,
    _daemon: TestDaemon,
    _dir: TempDir,
}

pub(crate) fn rig(x: &Xvfb, host: &str) -> Rig {
    let dir = TempDir::new(host);
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let worker = DesktopWorker::start(&d, host, "app", &x.display);
    create_session(&d.client(), json!({"mode": "task", "type": "app", "target": "desktop", "instruction": "test"}));
    let (runner, done) = test_agent.next();
    Rig { runner, _done: done, _worker: worker, _daemon: d, _dir: dir }
}

pub(crate) fn cmd(r: &SessionRunner, action: &str, params: Value) -> Value {
    r.execute(action, params.clone(), Duration::from_secs(30)).unwrap_or_else(|e| panic!("{action} {params}: {e}"))
}

pub(crate) fn cmd_err(r: &SessionRunner, action: &str, params: Value) -> String {
    match r.execute(action, params.clone(), Duration::from_secs(30)) {
        Ok(v) => panic!("{action} {params} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

/// Wait for a child to exit; its exit code.
pub(crate) fn exit_code(child: &mut ChildGuard, what: &str) -> i32 {
    wait_until(Duration::from_secs(15), what, || child.0.try_wait().unwrap()).code().unwrap_or(-1)
}

#[test]
fn a_screenshot_of_a_solid_background_has_its_colour() {
    if !have_xvfb() {
        return;
    }
    let x = Xvfb::start("1920x1080");
    assert!(x.command("xsetroot", &["-solid", "#ff8000"]).status().unwrap().success());
    let rig = rig(&x, "solid-box");
    let r = &rig.runner;

    let shot = cmd(r, "screenshot", json!({}));
    assert_eq!(shot["media_type"], "image/jpeg");
    assert_eq!((shot["width"].as_u64(), shot["height"].as_u64()), (Some(1280), Some(720)), "downscaled, aspect kept");
    assert_eq!((shot["screen_width"].as_u64(), shot["screen_height"].as_u64()), (Some(1920), Some(1080)));
    assert_eq!(shot["scale"], 1.5);
    let jpeg = STANDARD.decode(shot["image_base64"].as_str().unwrap()).unwrap();
    std::fs::write("/tmp/dbg-shot.jpg", &jpeg).unwrap();
    std::fs::write("/tmp/dbg-shot.png", STANDARD.decode(shot["full_png_base64"].as_str().unwrap()).unwrap()).unwrap();
    let (w, h, rgb) = decode_jpeg(&jpeg);
    assert_eq!((w, h), (1280, 720));
    for px in [(0, 0), (640, 360), (1279, 719), (100, 600)] {
        let i = (px.1 * w + px.0) * 3;
        let (r, g, b) = (rgb[i] as i32, rgb[i + 1] as i32, rgb[i + 2] as i32);
        assert!((r - 255).abs() <= 8 && (g - 128).abs() <= 8 && b <= 8, "pixel {px:?} is ({r}, {g}, {b})");
    }
    // The full-resolution PNG is exact.
    let png = STANDARD.decode(shot["full_png_base64"].as_str().unwrap()).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height, info.color_type), (1920, 1080, png::ColorType::Rgb));
    assert!(buf[..info.buffer_size()].chunks_exact(3).all(|p| p == [255, 128, 0]));

    // The controller's settings: a narrower image, clamped to the allowed range.
    let small = cmd(r, "screenshot", json!({"screenshot": {"width": 100, "quality": 30}}));
    assert_eq!((small["width"].as_u64(), small["height"].as_u64()), (Some(320), Some(180)));
    assert_eq!(small["scale"], 6.0);
    // Coordinates are now in that image's space, mapped back and clamped to the screen.
    let moved = cmd(r, "move", json!({"x": 100, "y": 50}));
    assert_eq!(moved["screen"], json!([600, 300]), "{moved}");
    let moved = cmd(r, "move", json!({"x": 5000, "y": -3}));
    assert_eq!(moved["screen"], json!([1919, 0]), "{moved}");
    let e = cmd_err(r, "click", json!({"x": 3}));
    assert!(e.contains("both `x` and `y`"), "{e}");
    let e = cmd_err(r, "click", json!({}));
    assert!(e.contains("`element`"), "{e}");
    // `wait` runs in the controller, not on the worker.
    assert!(cmd_err(r, "wait", json!({"ms": 50})).contains("cannot run `wait`"));
    // No window manager here, no windows and no accessibility bus: the tree says so, and why
    // there are no widgets.
    let tree = cmd(r, "get_ui_tree", json!({}));
    assert_eq!(tree["window_manager"], Value::Null);
    assert_eq!(tree["windows"], json!([]));
    let no_bus = "not available (no accessibility bus: the X root window has no AT_SPI_BUS property; \
                  no session bus ($DBUS_SESSION_BUS_ADDRESS is not set))";
    assert_eq!(tree["widgets"], no_bus, "{tree}");
}

#[test]
fn a_click_on_an_xmessage_button_exits_with_its_code() {
    if !have_xvfb() {
        return;
    }
    let x = Xvfb::start("1920x1080");
    let mut msg = x.spawn("xmessage", &["-buttons", "yes:3,no:4", "hello"]);
    x.window_id("xmessage");
    let rig = rig(&x, "xmessage-box");
    let r = &rig.runner;

    // The window list (no window manager: the plain tree) knows it; without an accessibility
    // bus there are only windows, and the answer says why.
    let list = cmd(r, "list_elements", json!({}));
    assert_eq!(list["elements"].as_array().unwrap().len(), 1, "{list}");
    assert!(list["widgets"].as_str().unwrap().starts_with("not available (no accessibility bus: "), "{list}");
    let el = &list["elements"][0];
    assert_eq!(
        (el["title"].as_str(), el["class"].as_str(), el["type"].as_str()),
        (Some("xmessage"), Some("Xmessage"), Some("window")),
        "{list}"
    );
    // The buttons are the bottom row of xmessage's windows, left to right: yes, no.
    let kids = child_windows(&x, "xmessage");
    let bottom = kids.iter().map(|k| k.1).max().unwrap();
    let mut buttons: Vec<_> = kids.into_iter().filter(|k| k.1 == bottom).collect();
    buttons.sort();
    assert_eq!(buttons.len(), 2, "{buttons:?}");
    let no = buttons[1];
    // The test agent works like the model: in the screenshot's pixels.
    let shot = cmd(r, "screenshot", json!({}));
    let scale = shot["scale"].as_f64().unwrap();
    let (ix, iy) = (((no.0 + no.2 / 2) as f64 / scale).round(), ((no.1 + no.3 / 2) as f64 / scale).round());
    let clicked = cmd(r, "click", json!({"x": ix, "y": iy}));
    assert_eq!(clicked["clicked"], json!([ix as i64, iy as i64]), "{clicked}");
    assert_eq!(clicked["window"], "xmessage", "{clicked}");
    assert_eq!(exit_code(&mut msg, "xmessage to exit"), 4, "the `no` button's code");

    // By element: a window title; its centre is clicked.
    let mut second =
        x.spawn("xmessage", &["-buttons", "only:7", "-title", "Second message", "a much longer message line"]);
    x.window_id("Second message");
    let e = cmd_err(r, "click", json!({"element": "nowhere"}));
    assert!(e.contains("no window title contains \"nowhere\"") && e.contains("Second message"), "{e}");
    let clicked = cmd(r, "click", json!({"element": "second"}));
    assert_eq!(clicked["window"], "Second message", "{clicked}");
    assert!(clicked["element"].as_str().unwrap().contains("centre"), "{clicked}");
    let _ = &mut second;
}

#[test]
fn typed_unicode_text_lands_in_a_file_through_xterm() {
    if !have_xvfb() {
        return;
    }
    let x = Xvfb::start("1280x800");
    let work = TempDir::new("xterm-type");
    let file = work.path().join("typed.txt");
    let mut term = x
        .spawn("xterm", &["-u8", "-T", "typing", "-geometry", "80x24+0+0", "-e", &format!("cat > {}", file.display())]);
    x.window_id("typing");
    let rig = rig(&x, "xterm-box");
    let r = &rig.runner;
    // No window manager: the keyboard follows the pointer, so point at the terminal first.
    let clicked = cmd(r, "click", json!({"element": "typing"}));
    assert_eq!(clicked["window"], "typing", "{clicked}");

    let text = "héllo wörld € ok\n";
    let typed = cmd(r, "type_text", json!({"text": text}));
    assert_eq!(typed["typed"], text.chars().count());
    assert!(!typed.to_string().contains("wörld"), "typed text is never echoed: {typed}");
    cmd(r, "press_key", json!({"key": "ctrl+d"}));
    assert_eq!(exit_code(&mut term, "cat to see the end of input"), 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // Borrowed keycodes are given back: the keymap has no € or é any more once it settled.
    std::thread::sleep(std::time::Duration::from_millis(400));
    cmd(r, "get_window_info", json!({}));
    let keymap = x.output("xmodmap", &["-pke"]);
    assert!(!keymap.contains("EuroSign") && !keymap.contains("eacute") && !keymap.contains("U20AC"), "{keymap}");
}

#[test]
fn switch_window_and_key_combinations_under_openbox() {
    if !have_xvfb() {
        return;
    }
    let x = Xvfb::start("1280x800").with_openbox();
    let work = TempDir::new("openbox");
    let file = work.path().join("keys.txt");
    let _alpha = x.spawn("xterm", &["-T", "alpha", "-geometry", "60x10+10+10"]);
    let mut beta =
        x.spawn("xterm", &["-T", "beta", "-geometry", "60x10+400+300", "-e", &format!("cat > {}", file.display())]);
    let (alpha_id, beta_id) = (x.window_id("alpha"), x.window_id("beta"));
    let rig = rig(&x, "openbox-box");
    let r = &rig.runner;

    let tree = cmd(r, "get_ui_tree", json!({}));
    assert_eq!(tree["window_manager"], "Openbox", "{tree}");
    let titles: Vec<&str> = tree["windows"].as_array().unwrap().iter().map(|w| w["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"alpha") && titles.contains(&"beta"), "{titles:?}");

    for (title, id) in [("alpha", alpha_id), ("BETA", beta_id), ("alp", alpha_id), ("beta", beta_id)] {
        let switched = cmd(r, "switch_window", json!({"title": title}));
        assert_eq!(switched["active"], true, "{switched}");
        assert_eq!(switched["method"], "_NET_ACTIVE_WINDOW", "{switched}");
        wait_until(Duration::from_secs(5), &format!("{title} to be active"), || {
            (x.active_window() == Some(id)).then_some(())
        });
        let info = cmd(r, "get_window_info", json!({}));
        assert_eq!(info["active_window"]["id"], format!("0x{id:x}"), "{info}");
    }

    // Key combinations reach the focused terminal: ctrl+u erases the line, Return ends it,
    // ctrl+d ends the input.
    cmd(r, "type_text", json!({"text": "wrong"}));
    assert_eq!(cmd(r, "press_key", json!({"key": "Ctrl+U"}))["pressed"], "ctrl+U");
    cmd(r, "type_text", json!({"text": "right"}));
    cmd(r, "press_key", json!({"key": "shift+a"}));
    cmd(r, "press_key", json!({"key": "Return"}));
    cmd(r, "press_key", json!({"key": "CONTROL+d"}));
    assert_eq!(exit_code(&mut beta, "beta's cat to end"), 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "rightA\n");
    let e = cmd_err(r, "press_key", json!({"key": "hyper+x"}));
    assert!(e.contains("unknown modifier"), "{e}");

    // Alt+F4 is openbox's "close": alpha goes away.
    cmd(r, "switch_window", json!({"title": "alpha"}));
    cmd(r, "press_key", json!({"key": "Alt+F4"}));
    wait_until(Duration::from_secs(10), "alpha to close", || {
        (!x.output("xwininfo", &["-root", "-tree"]).contains("\"alpha\"")).then_some(())
    });
}

#[test]
fn a_worker_without_a_display_offers_no_app_capability() {
    let dir = TempDir::new("no-display");
    let d = TestDaemon::idle(test_config(dir.path()));
    let log = dir.path().join("worker.log");
    let _worker = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_agent-worker"))
            .args(["--controller", &d.worker, "--hostname", "headless-box", "--capabilities", "shell,app"])
            .args(["--display", ":399"])
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let c = d.client();
    let w = wait_until(Duration::from_secs(15), "the worker to register", || {
        c.get("/workers").json().as_array().unwrap().iter().find(|w| w["hostname"] == "headless-box").cloned()
    });
    assert_eq!(w["capabilities"], json!(["shell"]), "{w}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("no app capability: cannot open display :399"), "{text}");
    // Only app asked for, and no display: nothing to offer, so it stops with a failure.
    let out = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
        .args(["--controller", &d.worker, "--capabilities", "app", "--display", ":399"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The whole loop with a scripted model: it looks twice at an unchanged screen (the second is not
/// sent again), tries a click in a dry run (nothing happens), then a real session clicks `no`
/// in image coordinates and xmessage exits with that button's code; the step log has every step.
#[test]
fn the_model_clicks_a_button_in_image_coordinates_and_dry_runs_touch_nothing() {
    use crate::support::llm::*;
    if !have_xvfb() {
        return;
    }
    let x = Xvfb::start("1920x1080");
    let mut msg = x.spawn("xmessage", &["-buttons", "yes:3,no:4", "hello"]);
    x.window_id("xmessage");
    let kids = child_windows(&x, "xmessage");
    let bottom = kids.iter().map(|k| k.1).max().unwrap();
    let mut buttons: Vec<_> = kids.into_iter().filter(|k| k.1 == bottom).collect();
    buttons.sort();
    let no = buttons[1];
    // 1920 wide shown at 1280: image pixels are 1.5 screen pixels.
    let (ix, iy) = (((no.0 + no.2 / 2) as f64 / 1.5).round() as i64, ((no.1 + no.3 / 2) as f64 / 1.5).round() as i64);
    let click = || tool("click", json!({"x": ix, "y": iy}));
    let script = vec![
        tool("screenshot", json!({})),
        tool("screenshot", json!({})),
        click(),
        tool("finish_task", json!({"summary": "planned"})),
        click(),
        tool("finish_task", json!({"summary": "clicked no"})),
    ];
    let dir = TempDir::new("desktop-llm");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = DesktopWorker::start(&d, "desk-llm", "app", &x.display);
    let c = d.client();
    let dry = create_session(
        &c,
        json!({"mode": "task", "type": "app", "target": "xmessage", "instruction": "say no", "options": {"dry_run": true}}),
    );
    wait_status(&c, &dry, "finished");
    assert!(msg.0.try_wait().unwrap().is_none(), "a dry run clicks nothing");
    let reqs = llm.requests();
    assert_eq!(reqs[1].image_count(), 1);
    assert!(reqs[2].last_results()[0].to_string().contains("unchanged since step 1"));
    let dry_click = reqs[3].last_results()[0].to_string();
    assert!(dry_click.contains(&format!("(dry-run) click at ({ix}, {iy}) in 'xmessage'")), "{dry_click}");
    let s = c.get(&format!("/sessions/{dry}")).json();
    assert_eq!((s["images"]["sent"].as_u64(), s["images"]["skipped"].as_u64()), (Some(1), Some(1)), "{s}");
    let steps = c.get(&format!("/sessions/{dry}/steps")).json();
    assert_eq!(steps.as_array().unwrap().len(), 4);
    assert_eq!(steps[0]["screenshot"], "step_0001.png");
    let png = c.get(&format!("/sessions/{dry}/files/step_0001.png")).body;
    assert_eq!(&png[1..4], b"PNG", "the full-resolution PNG is kept");

    let real =
        create_session(&c, json!({"mode": "task", "type": "app", "target": "xmessage", "instruction": "say no"}));
    wait_status(&c, &real, "finished");
    assert_eq!(exit_code(&mut msg, "xmessage to exit"), 4, "the model's click, mapped back to the screen");
    let worker_said = llm.requests()[5].last_results()[0].to_string();
    assert!(worker_said.contains("xmessage"), "{worker_said}");
}
