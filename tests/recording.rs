//! Watching a run (issue 66, items 1 and 2), with the real worker and Chromium and a scripted
//! model: a session that signs in with stored credentials serves screenshots, the model's own
//! screenshot and a recording in which the fields holding a secret (the username and password
//! the vault typed, a card number by its autocomplete) are uniformly painted over and an
//! ordinary field is not; a field a person typed into while taking over is painted over from
//! then on; the recording is an animated GIF with a frame per acting step; `recording: false`
//! gives none; a GTK password entry is painted over on a desktop (Xvfb and AT-SPI). Each test
//! is skipped when its programs are not installed.

use crate::support::llm::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use base64::Engine;
use serde_json::{Value, json};

/// The mask's colour (the worker's `frames::MASK`).
const MASK: [u8; 3] = [0x2b, 0x2f, 0x3a];
/// The fields, each 200×24 CSS pixels at x = 40: (id, top).
const SECRET_FIELDS: [(&str, u32); 3] = [("user", 40), ("pw", 100), ("card", 160)];
const PLAIN_TOP: u32 = 220;

/// A sign-in page whose form stays on the page when sent (its script keeps it), so every
/// picture after the sign-in still shows the fields.
fn site() -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let page = "<!doctype html><title>Sign in</title><style>body{margin:0;background:#fff}\
                input{position:absolute;left:40px;width:200px;height:24px;border:0;padding:0;margin:0;\
                background:#ffe080;font:16px monospace}</style>\
                <form id=f onsubmit=\"event.preventDefault();document.getElementById('done').textContent='Signed in'\">\
                <input name=user id=user style=top:40px>\
                <input type=password name=pw id=pw style=top:100px>\
                <input name=card id=card autocomplete=cc-number style=top:160px value=4242424242424242>\
                <input name=plain id=plain style=top:220px value='nothing secret'>\
                <button id=go style=position:absolute;left:40px;top:280px>Sign in</button></form>\
                <p id=done style=position:absolute;left:40px;top:320px></p>";
            let resp = tiny_http::Response::from_string(page)
                .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap());
            let _ = req.respond(resp);
        }
    });
    url
}

/// Pixels as RGB rows: width, height, 3 bytes a pixel.
struct Picture {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Picture {
    fn png(bytes: &[u8]) -> Picture {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let n = info.color_type.samples();
        let rgb = buf[..info.buffer_size()].chunks_exact(n).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Picture { width: info.width as usize, height: info.height as usize, rgb }
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Whether every pixel of a field's box (CSS pixels, times `k`; a pixel in from each edge)
    /// is the mask's colour.
    fn masked(&self, top: u32, k: f64) -> bool {
        let (x0, x1) = ((40.0 * k).ceil() as usize + 1, (240.0 * k).floor() as usize - 1);
        let (y0, y1) = ((top as f64 * k).ceil() as usize + 1, ((top + 24) as f64 * k).floor() as usize - 1);
        assert!(x1 <= self.width && y1 <= self.height, "the box is inside the picture");
        (y0..y1).all(|y| (x0..x1).all(|x| self.at(x, y) == MASK))
    }

    /// Every field holding a secret painted over, the ordinary one not.
    fn check(&self, k: f64, what: &str) {
        for (id, top) in SECRET_FIELDS {
            assert!(self.masked(top, k), "{what}: #{id} is not painted over");
        }
        assert!(!self.masked(PLAIN_TOP, k), "{what}: the ordinary field is painted over too");
        let plain = self.at((100.0 * k) as usize, ((PLAIN_TOP + 12) as f64 * k) as usize);
        assert_ne!(plain, MASK, "{what}");
    }
}

/// The frames of an animated GIF, composited as a viewer shows them.
fn gif_frames(bytes: &[u8]) -> Vec<Picture> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options.read_info(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert_eq!((frame.left, frame.top), (0, 0));
        let rgb = frame.buffer.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
        out.push(Picture { width: frame.width as usize, height: frame.height as usize, rgb });
    }
    out
}

/// The PNG in the first image block of a request to the model.
fn image_sent(body: &Value) -> Option<Vec<u8>> {
    match body {
        Value::Object(m) if m.get("type") == Some(&json!("image")) => {
            base64::engine::general_purpose::STANDARD.decode(m["source"]["data"].as_str()?).ok()
        }
        Value::Object(m) => m.values().find_map(image_sent),
        Value::Array(a) => a.iter().find_map(image_sent),
        _ => None,
    }
}

#[test]
fn secrets_are_painted_over_in_every_picture_and_each_acting_step_is_a_frame() {
    if !have_chromium() {
        return;
    }
    let url = site();
    let dir = TempDir::new("recording");
    let script = vec![
        tool("browser_navigate", json!({"url": format!("{url}/login")})),
        tool("perform_login", json!({})),
        tool("browser_screenshot", json!({})),
        tool("browser_click", json!({"selector": "#plain"})),
        tool("finish_task", json!({"summary": "signed in"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "recording-box", "browser");
    let c = d.client();
    let login_url = format!("{url}/login");
    let creds = json!({"username": "bob-the-user", "password": "hunter2-secret", "login_url": login_url,
        "username_selector": "#user", "password_selector": "#pw", "submit_selector": "#go"});
    let id = create_session(
        &c,
        json!({"mode": "task", "target": login_url, "instruction": "Sign in", "credentials": creds,
            "options": {"auto_confirm": true}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["status"], "finished", "{s}");

    // The stored screenshot, and the one the model was shown.
    let files = c.get(&format!("/sessions/{id}/files")).json();
    let shot = files.as_array().unwrap().iter().find(|f| f["type"] == "screenshot").expect("a screenshot");
    let png = c.get(&format!("/sessions/{id}/files/{}", shot["filename"].as_str().unwrap())).body;
    Picture::png(&png).check(1.0, "the stored screenshot");
    let sent = llm.requests().iter().find_map(|r| image_sent(&r.body["messages"])).expect("the model got an image");
    Picture::png(&sent).check(1.0, "the model's screenshot");

    // The recording: one frame per acting step, each masked where its fields hold a secret.
    let steps = c.get(&format!("/sessions/{id}/steps")).json();
    let acting = ["browser_navigate", "perform_login", "browser_click"];
    let expected = steps.as_array().unwrap().iter().filter(|s| acting.contains(&s["tool"].as_str().unwrap())).count();
    assert!(expected >= 3, "{steps}");
    let r = c.get(&format!("/sessions/{id}/recording"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("image/gif"));
    let frames = gif_frames(&r.body);
    assert_eq!(frames.len(), expected, "a frame per acting step");
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.width, 640, "frame {i} is shrunk to 640 pixels");
        let k = 0.5;
        // Before the sign-in only the password and the card number hold secrets.
        assert!(f.masked(100, k) && f.masked(160, k), "frame {i}: the password or card shows");
        assert!(!f.masked(PLAIN_TOP, k), "frame {i}: the ordinary field is painted over");
    }
    for (i, f) in frames.iter().enumerate().skip(frames.len() - 2) {
        f.check(0.5, &format!("frame {i}, after the sign-in"));
    }
    // The frames live in the session folder, and no secret is in any file.
    let folder = dir.path().join(&id).join("recording");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), expected);
    for (path, bytes) in all_files(&dir.path().join(&id)) {
        assert!(!String::from_utf8_lossy(&bytes).contains("hunter2-secret"), "{path:?} holds the password");
    }
}

#[test]
fn a_session_with_recording_off_has_none() {
    if !have_chromium() {
        return;
    }
    let url = site();
    let dir = TempDir::new("recording-off");
    let script = vec![
        tool("browser_navigate", json!({"url": format!("{url}/login")})),
        tool("browser_click", json!({"selector": "#plain"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "recording-off-box", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{url}/login"), "instruction": "look",
            "options": {"recording": false}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["options"]["recording"], false, "{s}");
    let r = c.get(&format!("/sessions/{id}/recording"));
    assert_error(&r, 404, "not_found");
    assert!(r.text().contains("recording: false"), "{}", r.text());
    assert!(!dir.path().join(&id).join("recording").exists());
    assert_error(&c.get("/sessions/sess_nope/recording"), 404, "not_found");
}

/// The screen pixels of a widget `list_elements` gave (image pixels at scale 1).
fn widget_box(list: &Value, role: &str) -> (usize, usize, usize, usize) {
    let found = list["elements"].as_array().unwrap().iter().find(|e| e["type"] == role);
    let e = found.unwrap_or_else(|| panic!("no {role} in {list}"));
    let n = |k: &str| e[k].as_u64().unwrap() as usize;
    (n("x"), n("y"), n("width"), n("height"))
}

fn uniform(p: &Picture, (x, y, w, h): (usize, usize, usize, usize), k: f64) -> bool {
    let (x0, y0) = ((x as f64 * k).ceil() as usize + 1, (y as f64 * k).ceil() as usize + 1);
    let (x1, y1) = (((x + w) as f64 * k).floor() as usize - 1, ((y + h) as f64 * k).floor() as usize - 1);
    (y0..y1).all(|yy| (x0..x1).all(|xx| p.at(xx, yy) == MASK))
}

#[test]
fn a_desktop_password_field_is_painted_over_in_screenshots_and_frames() {
    use crate::desktop::{cmd, rig};
    use crate::support::desktop::{SessionBus, Xvfb, have_atspi, have_xvfb};
    if !have_xvfb() || !have_atspi() {
        return;
    }
    let x = Xvfb::start("1280x720");
    let bus = SessionBus::start(&x);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gtk_password.py");
    let _window = bus.spawn(&x, "/usr/bin/python3", &[script, "Sign in"]);
    x.window_id("Sign in");
    let rig = rig(&x, "mask-box");
    let r = &rig.runner;
    let list = cmd(r, "list_elements", json!({}));
    let (password, plain) = (widget_box(&list, "password text"), widget_box(&list, "text"));
    let shot = cmd(r, "screenshot", json!({}));
    assert_eq!(shot["scale"], 1.0, "{shot}");
    let png = base64::engine::general_purpose::STANDARD.decode(shot["full_png_base64"].as_str().unwrap()).unwrap();
    let full = Picture::png(&png);
    assert!(uniform(&full, password, 1.0), "the password field shows in the full screenshot");
    assert!(!uniform(&full, plain, 1.0), "the user name field is painted over too");
    let frame = cmd(r, "recording_frame", json!({"caption": "1 type text 7 characters"}));
    let gif = base64::engine::general_purpose::STANDARD.decode(frame["frame_gif_base64"].as_str().unwrap()).unwrap();
    let frames = gif_frames(&gif);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].width, 640);
    assert!(uniform(&frames[0], password, 0.5), "the password field shows in the frame");
    assert!(!uniform(&frames[0], plain, 0.5));
    // A person clicks into the user name field and types: it is painted over from then on.
    let center = json!({"x": plain.0 + plain.2 / 2, "y": plain.1 + plain.3 / 2});
    cmd(r, "click", center);
    cmd(r, "type_text", json!({"text": "typed-by-a-person", "mask_typed": true}));
    let shot = cmd(r, "screenshot", json!({}));
    let png = base64::engine::general_purpose::STANDARD.decode(shot["full_png_base64"].as_str().unwrap()).unwrap();
    let full = Picture::png(&png);
    assert!(uniform(&full, plain, 1.0), "the field a person typed into shows");
    assert!(uniform(&full, password, 1.0));
}

#[test]
fn a_field_a_person_typed_into_is_painted_over_from_then_on() {
    if !have_chromium() {
        return;
    }
    let url = site();
    let dir = TempDir::new("recording-person");
    let script = vec![
        tool("browser_navigate", json!({"url": format!("{url}/login")})),
        tool("request_takeover", json!({"reason": "a code only you have"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "recording-person-box", "browser");
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": format!("{url}/login"), "instruction": "verify"}));
    wait_status(&c, &id, "paused");
    let act = |tool: &str, input: Value| {
        let r = c.post(&format!("/sessions/{id}/act"), &json!({"tool": tool, "input": input}));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    // Before: the ordinary field shows. After the person types into it: painted over.
    let before = act("browser_screenshot", json!({}));
    let png = c.get(&format!("/sessions/{id}/files/{}", before["screenshot"].as_str().unwrap())).body;
    assert!(!Picture::png(&png).masked(PLAIN_TOP, 1.0), "nobody typed into it yet");
    act("browser_type", json!({"selector": "#plain", "text": "typed-by-a-person"}));
    let after = act("browser_screenshot", json!({}));
    let png = c.get(&format!("/sessions/{id}/files/{}", after["screenshot"].as_str().unwrap())).body;
    assert!(Picture::png(&png).masked(PLAIN_TOP, 1.0), "the person's typing shows in the take-over view");
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    wait_status(&c, &id, "finished");
    // The person's act is a frame too, with their field painted over.
    let frames = gif_frames(&c.get(&format!("/sessions/{id}/recording")).body);
    assert!(frames.len() >= 2, "{} frames", frames.len());
    assert!(frames.last().unwrap().masked(PLAIN_TOP, 0.5), "the person's typing shows in the recording");
}
