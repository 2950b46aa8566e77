//! Goldens of what the model sees: scripted sessions through the real daemon and agent, each
//! in one profile (`full`, `small`) and one way of speaking (Anthropic tools, OpenAI-compatible
//! tools, JSON action mode), rendered from the requests the scripted model server received
//! (`goldens/render.rs`), normalized (`goldens/normalize.rs`) and compared with
//! `tests/goldens/NAME.txt`.
//!
//! Guarantees: a change to a prompt, the tool list, a guard's note, a result's wording or a
//! snapshot fails here with a diff; `UPDATE_EXPECT=1 cargo test --test tests goldens` rewrites
//! the files, so the change is reviewed as a diff of them. The sessions need no browser but
//! one (the real worker and Chromium on the test site's form, skipped without Chromium); the
//! shell sessions run the real worker's shell on files the test writes.

mod normalize;
mod render;

use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::wire::{Wire, openai_text};
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use agent_controller::config::Config;
use expect_test::{ExpectFile, expect_file};
use serde_json::{Value, json};
use std::time::Duration;

/// How the session speaks to the model.
#[derive(Clone, Copy)]
enum Speech {
    Tools(Wire),
    Json,
}

impl Speech {
    fn wire(self) -> Wire {
        match self {
            Speech::Tools(w) => w,
            Speech::Json => Wire::OpenAi,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Speech::Tools(Wire::Anthropic) => "Anthropic tools",
            Speech::Tools(_) => "OpenAI-compatible tools",
            Speech::Json => "JSON action mode (OpenAI-compatible)",
        }
    }
}

/// One golden session: its profile, its speech, what it does.
struct Golden {
    file: ExpectFile,
    profile: &'static str,
    speech: Speech,
    story: &'static str,
}

impl Golden {
    fn title(&self) -> String {
        format!("{} — profile {}, {}", self.story, self.profile, self.speech.name())
    }

    fn tune(&self) -> impl FnOnce(&mut Config) + use<> {
        let (profile, json) = (self.profile, matches!(self.speech, Speech::Json));
        move |c: &mut Config| {
            c.api.profile = profile.into();
            if json {
                c.api.tool_mode = "json".into();
            }
        }
    }

    /// Run `body` to its end with `script` on the worker `start` brings; check the transcript.
    fn check(&self, tag: &str, script: Vec<Step>, start: impl FnOnce(&TestDaemon) -> Box<dyn Send>, body: Value) {
        let dir = TempDir::new(tag);
        let (d, llm) = wire_daemon(dir.path(), self.speech.wire(), script, self.tune());
        let _worker = start(&d);
        let c = d.client();
        let id = create_session(&c, body);
        let record = ended(&c, &id);
        llm.assert_well_formed();
        let mut t = render::Transcript::new(&self.title());
        llm.requests().iter().for_each(|r| t.add(&r.body));
        self.file.assert_eq(&normalize::normalize(&t.finish(&ending(&record))));
    }
}

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(60), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

/// How the session ended, as its record says: status, summary, error, the guards that fired.
fn ending(record: &Value) -> String {
    let mut lines = vec![format!("status: {}", record["status"])];
    for key in ["summary", "error", "guards_fired"] {
        if let Some(v) = record.get(key).filter(|v| !v.is_null()) {
            lines.push(format!("{key}: {v}"));
        }
    }
    lines.join("\n")
}

// ----- the shop: a scripted browser worker ------------------------------------------------------

const SEARCH: &str = "Page: \"Lamps & Co\" — https://shop.test/ (HTTP 200)\n\
    [e2] input search \"Search\" name=q\n[e3] button \"Go\"\n[e4] link \"About\" → https://shop.test/about";
const RESULTS: &str = "Page: \"Results\" — https://shop.test/search?q=lamp (HTTP 200)\n\
    text \"2 results for lamp\"\n[e6] link \"Desk lamp, 24.90 EUR\" → https://shop.test/item/7\n\
    [e7] link \"Floor lamp, 89.00 EUR\" → https://shop.test/item/8";

/// A shop: Go shows the results, a click on anything else is not there, the rest is the search page.
fn shop(cmd: &Value) -> Value {
    let selector = cmd["params"]["selector"].as_str().unwrap_or("");
    match (cmd["action"].as_str().unwrap(), selector) {
        ("browser_click", "ref=e3") => {
            json!({"success": true, "data": {"url": "https://shop.test/search?q=lamp", "snapshot": RESULTS}})
        }
        ("browser_click", _) => json!({"success": false, "error": format!("no element matches `{selector}`")}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    }
}

fn shop_worker(d: &TestDaemon) -> Box<dyn Send> {
    Box::new(ScriptedWorker::start(&d.worker_client(), "shop-box", &["browser"], false, shop))
}

fn shop_task() -> Value {
    json!({"mode": "task", "target": "https://shop.test/", "instruction": "Find the price of the desk lamp and save it in price.txt"})
}

/// The shop's calls: a search (its typing with an argument the tool does not take), a miss,
/// the save and the finish.
fn shop_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("browser_type", json!({"selector": "ref=e2", "text": "lamp", "delay_ms": 50})),
        ("browser_click", json!({"selector": "ref=e3"})),
        ("browser_click", json!({"selector": "ref=e9"})),
        ("save_file", json!({"filename": "price.txt", "content": "Desk lamp: 24.90 EUR\n"})),
        ("finish_task", json!({"summary": "The desk lamp costs 24.90 EUR (price.txt)"})),
    ]
}

fn shop_golden(g: Golden) {
    let script = shop_calls().into_iter().map(|(name, input)| g.speech.wire().tool(name, input)).collect();
    g.check(&format!("golden-shop-{}", g.profile), script, shop_worker, shop_task());
}

#[test]
fn golden_shop_full_anthropic() {
    shop_golden(Golden {
        file: expect_file!["goldens/shop_full_anthropic.txt"],
        profile: "full",
        speech: Speech::Tools(Wire::Anthropic),
        story: "A browser task on a scripted shop: search, a missing ref, save_file, finish_task",
    });
}

#[test]
fn golden_shop_small_anthropic() {
    shop_golden(Golden {
        file: expect_file!["goldens/shop_small_anthropic.txt"],
        profile: "small",
        speech: Speech::Tools(Wire::Anthropic),
        story: "A browser task on a scripted shop: search, a missing ref, save_file, finish_task",
    });
}

/// The shop's calls as JSON actions, the finish as JSON mode's `complete`.
#[test]
fn golden_shop_small_json() {
    let g = Golden {
        file: expect_file!["goldens/shop_small_json.txt"],
        profile: "small",
        speech: Speech::Json,
        story: "A browser task on a scripted shop in JSON actions: search, a missing ref, save_file, complete",
    };
    let mut script: Vec<Step> = shop_calls()[..4]
        .iter()
        .map(|(name, args)| openai_text(&json!({"action": "next_step", "tool": name, "args": args}).to_string()))
        .collect();
    script.push(openai_text(r#"{"action": "complete", "message": "The desk lamp costs 24.90 EUR (price.txt)"}"#));
    g.check("golden-shop-json", script, shop_worker, shop_task());
}

// ----- the shell: the real worker on files the test writes ------------------------------------

fn shell_golden(g: Golden) {
    let work = TempDir::new(&format!("golden-shell-work-{}", g.profile));
    std::fs::write(work.path().join("sales.csv"), "day,amount\n1,20\n2,22\n").unwrap();
    let csv = work.path().join("sales.csv").display().to_string();
    let calls = [
        ("list_dir", json!({"path": work.path().display().to_string()})),
        ("read_file", json!({"path": csv})),
        ("run_command", json!({"command": format!("awk -F, 'NR>1 {{s+=$2}} END {{print s}}' {csv}")})),
        ("run_command", json!({"command": "cat no-such-file.txt", "cwd": work.path().display().to_string()})),
        ("save_file", json!({"filename": "total.txt", "content": "42\n"})),
        ("finish_task", json!({"summary": "The sales add up to 42 (total.txt)"})),
        // For a guard that holds the first finish (`small`'s premature_finish); `full` ends before.
        ("finish_task", json!({"summary": "The sales add up to 42 (total.txt)"})),
    ];
    let mut script: Vec<Step> = calls.into_iter().map(|(name, input)| g.speech.wire().tool(name, input)).collect();
    // The answer to a side request asking for a file's content (`small`'s answer_in_words).
    script.push(g.speech.wire().text("NONE"));
    let host = format!("golden-shell-{}", g.profile);
    let body = json!({"mode": "task", "type": "shell", "target": host, "instruction": "Add up the amounts in sales.csv and save the total"});
    g.check(&host, script, |d| Box::new(RealWorker::start(d, &host, "shell")), body);
}

#[test]
fn golden_shell_full_openai() {
    shell_golden(Golden {
        file: expect_file!["goldens/shell_full_openai.txt"],
        profile: "full",
        speech: Speech::Tools(Wire::OpenAi),
        story: "A shell task on the real worker: list_dir, read_file of a CSV, awk, a failing cat, save_file, finish_task",
    });
}

#[test]
fn golden_shell_small_openai() {
    shell_golden(Golden {
        file: expect_file!["goldens/shell_small_openai.txt"],
        profile: "small",
        speech: Speech::Tools(Wire::OpenAi),
        story: "A shell task on the real worker: list_dir, read_file of a CSV, awk, a failing cat, save_file, finish_task",
    });
}

// ----- the form: the real worker and Chromium on the test site -------------------------------

/// JSON actions on a real page: the snapshot as the worker takes it, and what each action changed.
#[test]
fn golden_form_full_json_chromium() {
    if !have_chromium() {
        return;
    }
    let g = Golden {
        file: expect_file!["goldens/form_full_json_chromium.txt"],
        profile: "full",
        speech: Speech::Json,
        story: "A browser task on the test site's order form (real worker and Chromium): type, select, submit, complete",
    };
    let act =
        |tool: &str, args: Value| openai_text(&json!({"action": "next_step", "tool": tool, "args": args}).to_string());
    let script = vec![
        act("browser_type", json!({"selector": "ref=e1", "text": "Ada"})),
        act("browser_select_option", json!({"selector": "ref=e2", "value": "Green"})),
        act("browser_click", json!({"selector": "ref=e4"})),
        openai_text(r#"{"action": "complete", "message": "Ordered in green for Ada"}"#),
    ];
    let site = Site::start();
    let body = json!({"mode": "task", "target": format!("{}/form", site.url), "instruction": "Order in green for Ada"});
    g.check("golden-form", script, |d| Box::new(RealWorker::start(d, "golden-form-box", "browser")), body);
}
