//! The exports' own checks: which steps are exported, secrets never written, the formats a
//! session's type takes, values as options, commands in order with their approvals.

use super::*;
use serde_json::json;

fn run<'a>(kind: SessionType, steps: &'a [Value]) -> Run<'a> {
    Run {
        id: "sess_1",
        kind,
        target: "http://site.test/",
        instruction: Some("order\nsocks"),
        status: "finished",
        created_at: "now",
        steps,
    }
}

#[test]
fn a_browser_run_becomes_playwright_with_its_values_as_options_and_no_secret() {
    let steps = vec![
        json!({"step": 1, "tool": "browser_navigate", "args": {"url": "http://site.test/form?q={{item}}"}}),
        json!({"step": 2, "tool": "browser_type", "args": {"selector": "ref=e1", "text": "Zoe"}, "thought": "Type the\nname",
            "element": {"tag": "input", "type": "text", "placeholder": "Your name", "unique": {"placeholder": "loose"}}}),
        json!({"step": 3, "tool": "browser_get_text", "args": {}}),
        json!({"step": 4, "tool": "browser_type", "args": {"selector": "#pw", "text": "[redacted]"}, "is_error": true}),
        json!({"step": 5, "tool": "browser_type", "args": {"selector": "#code", "text": "x-[redacted]"},
            "element": {"tag": "input", "id": "code", "unique": {"id": true}}}),
        json!({"step": 6, "tool": "browser_click", "args": {"selector": "ref=e9"}}),
    ];
    let script = script(Format::Playwright, &run(SessionType::Browser, &steps)).unwrap_or_default();
    assert!(script.contains("page.goto(\"http://site.test/form?q=\" + args.p1)"), "{script}");
    assert!(script.contains("\"--item\", dest=\"p1\", metavar=\"VALUE\", required=True"), "{script}");
    assert!(script.contains("page.get_by_placeholder(\"Your name\").fill(args.v1)"), "{script}");
    assert!(script.contains("\"--typed-into-your-name\", dest=\"v1\", metavar=\"VALUE\", default=\"Zoe\""), "{script}");
    assert!(script.contains("# the model: Type the name\n"), "one comment line: {script}");
    assert!(script.contains("# Task: order socks\n"), "{script}");
    assert!(script.contains("page.locator(\"#code\").fill(\"x-\" + secret(\"SECRET_1\"))"), "{script}");
    assert!(script.contains("#   SECRET_1  step 5"), "named in the header: {script}");
    assert!(!script.contains("[redacted]\")"), "{script}");
    assert!(script.contains("fail(6, "), "a bare ref cannot be found again, and says so: {script}");
    assert!(!script.contains("# 4."), "a failed step is left out: {script}");
}

#[test]
fn a_shell_run_becomes_its_commands_in_order_with_their_approvals() {
    let steps = vec![
        json!({"step": 1, "tool": "run_command", "args": {"command": "echo one"}, "observation": "{\"exit_code\":0}"}),
        json!({"step": 2, "tool": "read_file", "args": {"path": "/etc/hostname"}}),
        json!({"step": 3, "tool": "run_command", "args": {"command": "rm -rf /tmp/x"}, "approved": {"by": "person", "edited": "rm -r /tmp/x"}}),
        json!({"step": 4, "tool": "run_command", "args": {"command": "false", "cwd": "/srv"}, "observation": "{\"exit_code\":1,\"stdout\":\"\"}"}),
        json!({"step": 5, "tool": "write_file", "args": {"path": "/tmp/it's", "content": "a\nb"}}),
        json!({"step": 6, "tool": "run_command", "args": {"command": "login --token [redacted]"}}),
    ];
    let script = script(Format::Sh, &run(SessionType::Shell, &steps)).unwrap_or_default();
    let one = script.find("\necho one\n").unwrap_or(usize::MAX);
    let three = script.find("\nrm -r /tmp/x\n").unwrap_or(0);
    assert!(script.contains("set -euo pipefail") && one < three, "in order, the edited command ran: {script}");
    assert!(script.contains("# approved by a person, who edited"), "{script}");
    assert!(script.contains("(cd '/srv' && false) || true  # it exited 1"), "{script}");
    assert!(script.contains("printf '%s' 'a\nb' > '/tmp/it'\\''s'"), "{script}");
    assert!(
        script.contains("login --token \"${SECRET_1}\"") && script.contains(": \"${SECRET_1:?set SECRET_1"),
        "{script}"
    );
    assert!(!script.contains("/etc/hostname"), "a read is left out: {script}");
}

#[test]
fn formats_fit_their_sessions_and_an_empty_run_says_so() {
    let none: Vec<Value> = vec![json!({"step": 1, "tool": "browser_snapshot", "args": {}})];
    let e = script(Format::Sh, &run(SessionType::Browser, &none)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("format=playwright"), "{e}");
    assert!(script(Format::Playwright, &run(SessionType::App, &none)).is_err());
    let empty = script(Format::Playwright, &run(SessionType::Browser, &none)).unwrap_or_default();
    assert!(empty.contains("has no acting steps to run again"), "{empty}");
    assert_eq!(Format::parse("sh"), Some(Format::Sh));
    assert_eq!(Format::parse("pdf"), None);
}

#[test]
fn what_a_person_did_and_a_login_come_from_the_environment() {
    let field = json!({"tag": "input", "type": "text", "label": "Code", "unique": {"label": "loose"}});
    let pw = json!({"tag": "input", "type": "password", "label": "Password", "unique": {"label": "loose"}});
    let send = json!({"tag": "button", "role": "button", "name": "Sign in", "unique": {"role": "loose"}});
    let steps = vec![
        json!({"step": 1, "tool": "browser_click", "by": "human", "args": {"x": 120, "y": 80}}),
        json!({"step": 2, "tool": "browser_type", "by": "human", "args": {"selector": "#c", "text": "[6 characters typed by the person]"},
            "element": field}),
        json!({"step": 3, "tool": "browser_type", "args": {"selector": "#p", "text": "hunter2"}, "element": pw}),
        json!({"step": 4, "tool": "perform_login", "args": {}, "login": {"url": "http://site.test/login", "username": field,
            "password": pw, "submit": send, "code": {"field": "input[name=otp]", "send": "form button"}}}),
        json!({"step": 5, "tool": "perform_login", "args": {}}),
    ];
    let script = script(Format::Playwright, &run(SessionType::Browser, &steps)).unwrap_or_default();
    assert!(script.contains("page.mouse.click(120, 80)"), "{script}");
    assert!(script.contains("# a person did this while taking over"), "{script}");
    assert!(script.contains("page.get_by_label(\"Code\").fill(secret(\"TYPED_1\"))"), "{script}");
    assert!(!script.contains("hunter2"), "a password field's text is a secret: {script}");
    assert!(script.contains("page.get_by_label(\"Password\").fill(secret(\"PASSWORD_3\"))"), "{script}");
    assert!(
        script.contains("fill(secret(\"LOGIN_PASSWORD\"))") && script.contains("totp(secret(\"LOGIN_TOTP_SECRET\"))"),
        "{script}"
    );
    assert!(script.contains("def totp(key):"), "{script}");
    assert!(!script.contains("# 5."), "a login without its record is no step to run: {script}");
}
