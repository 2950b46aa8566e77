//! Signing in as a person does (issue 67), against the real worker and Chromium: a site that
//! asks for a one-time code after the password gets the current TOTP code from the vault, a
//! refused code is followed by the next period's, and neither the secret nor a code reaches the
//! model or the session's files. Skipped when Chromium is not installed.

use crate::support::llm::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use agent_controller::util::totp::Totp;
use serde_json::json;
use std::io::Read;
use std::sync::{Arc, Mutex};

const SECRET: &str = "JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP";

/// A site with a password form, then a code form that refuses the first code it is sent.
fn two_factor_site() -> (String, Arc<Mutex<Vec<String>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        let totp = Totp::parse(SECRET).unwrap();
        let mut codes_sent = 0;
        for mut req in server.incoming_requests() {
            let mut body = String::new();
            let _ = req.as_reader().take(64 << 10).read_to_string(&mut body);
            log.lock().unwrap().push(format!("{} {} {body}", req.method(), req.url()));
            let html = |text: String| {
                tiny_http::Response::from_string(text)
                    .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html").unwrap())
            };
            let go = |to: &str| {
                tiny_http::Response::from_string("")
                    .with_status_code(303)
                    .with_header(tiny_http::Header::from_bytes("Location", to).unwrap())
            };
            let code_form = "<title>Verify</title><form method=post action=/code><label>Code \
                <input name=otp autocomplete=one-time-code inputmode=numeric></label><button>Verify</button></form>";
            let resp = match (req.method().as_str(), req.url()) {
                ("GET", "/login") => html(
                    "<title>Sign in</title><form method=post action=/login><input name=user>\
                    <input type=password name=pw><button type=submit>Sign in</button></form>"
                        .into(),
                ),
                ("POST", "/login") if body == "user=bob&pw=hunter2-secret" => go("/code"),
                ("GET", "/code") => html(code_form.into()),
                ("POST", "/code") => {
                    codes_sent += 1;
                    let now = agent_controller::util::clock::now().unix_timestamp() as u64;
                    let valid = [now - 30, now, now + 30].map(|t| format!("otp={}", totp.code_at(t)));
                    if codes_sent > 1 && valid.contains(&body) {
                        go("/account")
                    } else {
                        html(format!("<p>That code did not work</p>{code_form}"))
                    }
                }
                ("GET", "/account") => html("<title>Account</title><h1>Welcome bob</h1>".into()),
                _ => html("<p>nothing here</p>".into()),
            };
            let _ = req.respond(resp);
        }
    });
    (url, seen)
}

#[test]
fn a_one_time_code_is_filled_from_the_vault_and_a_refused_one_retried() {
    if !have_chromium() {
        return;
    }
    let (site, seen) = two_factor_site();
    let dir = TempDir::new("totp");
    let script = vec![tool("perform_login", json!({})), tool("finish_task", json!({"summary": "signed in"}))];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "totp-box", "browser");
    let c = d.client();
    let login_url = format!("{site}/login");
    let id = create_session(
        &c,
        json!({"mode": "task", "target": login_url, "instruction": "Sign in",
            "credentials": {"username": "bob", "password": "hunter2-secret", "login_url": login_url, "totp": SECRET}}),
    );
    wait_status(&c, &id, "finished");
    let posts: Vec<String> = seen.lock().unwrap().iter().filter(|l| l.starts_with("POST /code")).cloned().collect();
    assert_eq!(posts.len(), 2, "the refused code, then the next: {posts:?}");
    assert_ne!(posts[0], posts[1], "{posts:?}");
    assert!(seen.lock().unwrap().iter().any(|l| l.starts_with("GET /account")), "signed in");
    // The model reads the page after it, and no code; the files hold neither secret nor code.
    let told = llm.requests()[1].last_results()[0].to_string();
    assert!(told.contains("Welcome bob"), "{told}");
    let codes: Vec<&str> = posts.iter().map(|p| p.rsplit('=').next().unwrap()).collect();
    let everything = all_text_below(&dir.path().join("out"));
    for secret in codes.iter().copied().chain(["JBSWY3DP", "JBSW Y3DP"]) {
        assert!(!told.contains(secret) && !everything.contains(secret), "{secret} leaked");
    }
    // A secret that is no TOTP is refused at create, naming the key.
    let bad = json!({"mode": "task", "target": login_url, "instruction": "x",
        "credentials": {"username": "bob", "password": "hunter2-secret", "totp": "not base32!"}});
    let r = c.post("/sessions", &bad);
    assert_error(&r, 400, "bad_request");
    assert!(r.text().contains("credentials.totp"), "{}", r.text());
}

/// Every file's text below `dir`, joined.
fn all_text_below(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&all_text_below(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}
