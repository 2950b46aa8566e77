//! Named browser profiles that stay signed in (issue 67, item 2), with two real workers and
//! Chromium: a session in profile `shop` signs in (a cookie the site keeps for an hour); a
//! later session in `shop` opens the members' page signed in, even after the worker closed that
//! browser for a session without a profile, which is not signed in; a second session in `shop`
//! waits while the first runs, though another worker is free; `GET /profiles` lists it (in use,
//! size); `DELETE /profiles/shop` is 409 while in use, then removes the folder, then 404.
//! Skipped when Chromium is not installed.

use crate::support::llm::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A site that remembers its members: `/signin` sets a cookie for an hour, `/members` says
/// whether the request carried it. Every `/members` request is kept (signed in or not).
fn members_site() -> (String, Arc<Mutex<Vec<bool>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let visits = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&visits);
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let cookie = req.headers().iter().find(|h| h.field.equiv("Cookie")).map(|h| h.value.to_string());
            let member = cookie.is_some_and(|c| c.contains("member=bob-7f3a"));
            let html = |text: &str| {
                tiny_http::Response::from_string(text)
                    .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap())
            };
            let resp = match req.url() {
                "/signin" => html("<title>Signed in</title><p>Hello bob</p>").with_header(
                    tiny_http::Header::from_bytes("Set-Cookie", "member=bob-7f3a; Max-Age=3600; Path=/; HttpOnly")
                        .unwrap(),
                ),
                "/members" => {
                    seen.lock().unwrap().push(member);
                    if member {
                        html("<title>Members</title><h1>Welcome back, bob</h1>")
                    } else {
                        html("<title>Sign in</title><h1>Please sign in</h1>")
                    }
                }
                _ => html("<p>nothing here</p>"),
            };
            let _ = req.respond(resp);
        }
    });
    (url, visits)
}

fn session(c: &Client, target: String, profile: Option<&str>, worker: Option<&str>) -> String {
    let mut body = json!({"mode": "task", "target": target, "instruction": "Look at the page"});
    if let Some(p) = profile {
        body["options"] = json!({"browser_profile": p});
    }
    if let Some(w) = worker {
        body["worker"] = json!(w);
    }
    create_session(c, body)
}

fn shop(c: &Client) -> Option<Value> {
    c.get("/profiles").json().as_array().unwrap().iter().find(|p| p["name"] == "shop").cloned()
}

#[test]
fn a_profile_stays_signed_in_is_used_by_one_session_at_a_time_and_is_deleted() {
    if !have_chromium() {
        return;
    }
    let (site, visits) = members_site();
    let dir = TempDir::new("profiles");
    let done = || tool("finish_task", json!({"summary": "looked"}));
    let script = vec![done(), done(), done(), done().delayed(Duration::from_secs(4)), done()];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let roots = [dir.path().join("kept-a"), dir.path().join("kept-b")];
    let _a = RealWorker::start_with(&d, "box-a", "browser", &["--profile-dir", roots[0].to_str().unwrap()]);
    let _b = RealWorker::start_with(&d, "box-b", "browser", &["--profile-dir", roots[1].to_str().unwrap()]);
    let c = d.client();
    let ran_on = |id: &str| wait_status(&c, id, "finished")["worker"].as_str().unwrap().to_string();

    // Signed in once, in profile `shop`: the worker that ran it keeps it.
    let first = session(&c, format!("{site}/signin"), Some("shop"), None);
    let holder = ran_on(&first);
    let listed = shop(&c).expect("shop is listed");
    assert_eq!(listed["worker"], holder.as_str());
    // A session without it, on the same worker (whose browser it closes): not signed in.
    let plain = session(&c, format!("{site}/members"), None, Some(&holder));
    ran_on(&plain);
    // Profile `shop` again: the members' page, signed in, from the folder on disk.
    let again = session(&c, format!("{site}/members"), Some("shop"), None);
    assert_eq!(ran_on(&again), holder, "a session in a profile runs on the worker that keeps it");
    assert_eq!(*visits.lock().unwrap(), vec![false, true], "without the profile, then with it");
    let opening = |i: usize| llm.requests()[i].body["messages"][0].to_string();
    assert!(opening(1).contains("Please sign in") && opening(2).contains("Welcome back, bob"), "{}", opening(2));
    assert!(!opening(2).contains("bob-7f3a"), "the profile's cookie is shown to no model");

    // One session at a time: the second waits for the first, though the other worker is free.
    let busy = session(&c, format!("{site}/members"), Some("shop"), None);
    wait_until(Duration::from_secs(20), "the first to run", || {
        (c.get(&format!("/sessions/{busy}")).json()["status"] == "running").then_some(())
    });
    let second = session(&c, format!("{site}/members"), Some("shop"), None);
    std::thread::sleep(Duration::from_millis(1500));
    let waiting = c.get(&format!("/sessions/{second}")).json();
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    assert!(waiting["waiting_for"].as_str().unwrap().contains("browser profile shop"), "{waiting}");
    assert_eq!(shop(&c).unwrap()["in_use"], busy.as_str());
    assert_error(&c.delete("/profiles/shop"), 409, "conflict");
    assert_eq!(ran_on(&busy), holder);
    assert_eq!(ran_on(&second), holder);
    assert_eq!(visits.lock().unwrap().iter().filter(|&&m| m).count(), 3, "both signed in");

    // Deleted by its worker: the folder goes, and the name is unknown after.
    let listed = wait_until(Duration::from_secs(10), "shop to be free and sized", || {
        shop(&c).filter(|p| p["in_use"].is_null() && p["size_kb"].as_u64() > Some(0))
    });
    assert!(listed["last_used"].is_string(), "{listed}");
    let kept = roots.iter().map(|r| r.join("shop")).find(|p| p.exists()).expect("the folder is on disk");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o700);
    let r = c.delete("/profiles/shop");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!kept.exists(), "the worker removed {}", kept.display());
    assert!(shop(&c).is_none());
    assert_error(&c.delete("/profiles/shop"), 404, "not_found");
    assert_error(&c.delete("/profiles/..%2Fx"), 400, "bad_request");
    // A bad name, or a profile for a session with no browser, is refused at create.
    let bad = json!({"mode": "task", "target": site, "instruction": "x", "options": {"browser_profile": "../x"}});
    assert_error(&c.post("/sessions", &bad), 400, "bad_request");
    let shell = json!({"mode": "task", "target": "box", "type": "shell", "instruction": "x",
        "options": {"browser_profile": "shop"}});
    assert_error(&c.post("/sessions", &shell), 400, "bad_request");
}

/// A session in a kept profile keeps to its allow-list: the page's image on another host
/// (127.0.0.2) never reaches it, as in any session (the gate is the kept browser's proxy).
#[test]
fn a_profile_session_keeps_to_its_allow_list() {
    if !have_chromium() {
        return;
    }
    let far = tiny_http::Server::http("127.0.0.2:0").unwrap();
    let far_url = format!("http://{}", far.server_addr().to_ip().unwrap());
    let hits = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&hits);
    std::thread::spawn(move || {
        for req in far.incoming_requests() {
            *counted.lock().unwrap() += 1;
            let _ = req.respond(tiny_http::Response::from_string("x"));
        }
    });
    let near = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let near_url = format!("http://{}", near.server_addr().to_ip().unwrap());
    let page = format!("<title>Shop</title><h1>Shop</h1><img src=\"{far_url}/pixel.png\">");
    std::thread::spawn(move || {
        for req in near.incoming_requests() {
            let html = tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap();
            let _ = req.respond(tiny_http::Response::from_string(page.clone()).with_header(html));
        }
    });
    let dir = TempDir::new("profile-gate");
    let (d, llm) = llm_daemon(dir.path(), vec![tool("finish_task", json!({"summary": "looked"}))], |_| {});
    let root = dir.path().join("kept");
    let _w = RealWorker::start_with(&d, "gate-box", "browser", &["--profile-dir", root.to_str().unwrap()]);
    let c = d.client();
    let body = json!({"mode": "task", "target": format!("{near_url}/"), "instruction": "Look",
        "options": {"browser_profile": "shop", "allowed_domains": ["127.0.0.1"]}});
    let id = create_session(&c, body);
    wait_status(&c, &id, "finished");
    assert!(llm.requests()[0].body["messages"][0].to_string().contains("Shop"), "the allowed page opened");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(*hits.lock().unwrap(), 0, "the other host was never reached");
    assert!(root.join("shop").is_dir(), "in the kept profile");
}
