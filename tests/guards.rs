//! The small profile's guards that act inside the agent, through the real daemon on a scripted
//! model and a scripted worker: each fires on the case it was written for (its firing counted
//! under its name in the session record), and is quiet on a task or page it was not written for
//! (a search form, a shell task, a task that keeps no file), where the run goes as the model
//! asked. Pure guards are tested beside their code (`src/agent/guards/*.rs`).

use crate::support::llm::*;
use crate::support::wire::{Wire, openai_text};
use crate::support::*;
use serde_json::{Value, json};

/// A small-profile session run to `status`: its record, the model's requests, the worker's commands.
struct Run {
    record: Value,
    requests: Vec<Recorded>,
    commands: Vec<Value>,
    files: Vec<String>,
}

impl Run {
    fn fired(&self, guard: &str) -> u64 {
        self.record["guards_fired"][guard].as_u64().unwrap_or(0)
    }

    fn actions(&self) -> Vec<&str> {
        self.commands.iter().map(|c| c["action"].as_str().unwrap()).collect()
    }

    /// The text of the `i`th request's first tool result.
    fn result(&self, i: usize) -> String {
        self.requests[i].last_results()[0]["content"].to_string()
    }
}

fn run(
    tag: &str,
    script: Vec<Step>,
    caps: &str,
    body: Value,
    status: &str,
    respond: impl Fn(&Value) -> Value + Send + 'static,
) -> Run {
    run_on(tag, |dir| llm_daemon(dir, script, small), caps, body, status, respond)
}

/// A small-profile session answering in JSON actions (OpenAI's format), run to `status`.
fn run_json(
    tag: &str,
    script: Vec<Step>,
    body: Value,
    status: &str,
    respond: impl Fn(&Value) -> Value + Send + 'static,
) -> Run {
    let json_mode = |c: &mut agent_controller::config::Config| {
        small(c);
        c.api.tool_mode = "json".into();
    };
    run_on(tag, |dir| wire_daemon(dir, Wire::OpenAi, script, json_mode), "browser", body, status, respond)
}

fn run_on(
    tag: &str,
    daemon: impl FnOnce(&std::path::Path) -> (TestDaemon, ScriptedLlm),
    caps: &str,
    body: Value,
    status: &str,
    respond: impl Fn(&Value) -> Value + Send + 'static,
) -> Run {
    let dir = TempDir::new(tag);
    let (d, llm) = daemon(dir.path());
    let worker = ScriptedWorker::start(&d.worker_client(), "guard-box", &[caps], false, respond);
    let c = d.client();
    let id = create_session(&c, body);
    let record = wait_status(&c, &id, status);
    let files = c.get(&format!("/sessions/{id}/files")).json();
    let files = files.as_array().unwrap().iter().map(|f| f["filename"].as_str().unwrap().to_string()).collect();
    let commands = worker.seen.lock().unwrap().clone();
    assert_eq!(record["guards_fired"]["short_catalog"], 1, "the small profile's guards are on: {record}");
    Run { record, requests: llm.requests(), commands, files }
}

fn task(target: &str, instruction: &str) -> Value {
    json!({"mode": "task", "target": target, "instruction": instruction})
}

fn shell_task(instruction: &str) -> Value {
    json!({"mode": "task", "type": "shell", "target": "box", "instruction": instruction})
}

const SEARCH: &str = "Page: \"Catalogue\" — https://shop.test/ (HTTP 200)\n\
    [e2] input search \"Search\" name=q\n[e3] button \"Go\"\n[e4] link \"About\" → https://shop.test/about";
const RESULTS: &str = "Page: \"Results\" — https://shop.test/search?q=lamp (HTTP 200)\n\
    text \"Desk lamp, 24.90 EUR\"\n[e6] link \"Desk lamp\" → https://shop.test/item/7";

/// A shop with a search form: a click on Go shows the results; everything else the search page.
fn shop(cmd: &Value) -> Value {
    let page = if cmd["action"] == "browser_click" { RESULTS } else { SEARCH };
    json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": page}})
}

fn finish(summary: &str) -> Step {
    tool("finish_task", json!({"summary": summary}))
}

#[test]
fn guard_short_catalog_fires_and_a_tool_it_hides_still_runs_when_called() {
    let scrape = tool("browser_scrape_links", json!({}));
    let r = run(
        "g-catalog",
        vec![scrape, finish("listed")],
        "browser",
        task("https://shop.test/", "list the links"),
        "finished",
        shop,
    );
    assert_eq!(r.fired("short_catalog"), 1, "{}", r.record);
    assert!(!r.requests[0].tool_names().contains(&"browser_scrape_links".to_string()), "not listed");
    assert_eq!(r.actions(), ["browser_navigate", "browser_scrape_links"], "but run when called by name");
}

/// A catalogue of 120 lines (about 1 400 tokens): one look at it puts the task a few pages back.
fn long_catalogue(cmd: &Value) -> Value {
    if cmd["action"] != "browser_snapshot" {
        return shop(cmd);
    }
    let rows: Vec<String> = (1..=120).map(|i| format!("text \"Lamp no. {i}, brass, {i}.90 EUR\"")).collect();
    let page = format!("Page: \"All lamps\" — https://shop.test/lamps (HTTP 200)\n{}", rows.join("\n"));
    json!({"success": true, "data": {"url": "https://shop.test/lamps", "snapshot": page}})
}

fn recited(request: &Recorded) -> bool {
    let last = request.body["messages"].as_array().unwrap().last().unwrap()["content"].as_array().unwrap().clone();
    last.last().unwrap().to_string().contains("(Reminder) Your task: look at the shop")
}

#[test]
fn guard_recital_starts_once_the_task_is_far_back_and_stays_out_of_the_conversation() {
    let script = vec![tool("browser_snapshot", json!({})), tool("browser_snapshot", json!({})), finish("seen")];
    let dir = TempDir::new("g-recital");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = ScriptedWorker::start(&d.worker_client(), "guard-box", &["browser"], false, long_catalogue);
    let c = d.client();
    let id = create_session(&c, task("https://shop.test/", "look at the shop"));
    let record = wait_status(&c, &id, "finished");
    let requests = llm.requests();
    let recitals: Vec<bool> = requests.iter().map(recited).collect();
    assert_eq!(recitals, [false, true, true], "from the request after the long page on: {record}");
    assert_eq!(record["guards_fired"]["recital"], 2, "one per request that ends with it: {record}");
    let conversation = c.get(&format!("/sessions/{id}/conversation")).text();
    assert!(!conversation.contains("(Reminder)"), "the record keeps what was said: {conversation}");
}

/// A short page done in two turns (what a MiniWoB task is): the task is just above, so nothing
/// is recited.
#[test]
fn guard_recital_is_quiet_while_the_task_is_near() {
    let script = vec![tool("browser_snapshot", json!({})), finish("seen")];
    let r = run("g-recital-quiet", script, "browser", task("https://shop.test/", "look at the shop"), "finished", shop);
    assert_eq!(r.fired("recital"), 0, "{}", r.record);
    assert!(!r.requests.iter().any(recited), "no request ends with the task");
}

/// The same short page with a model that answers in JSON actions: there the recital closes
/// every request from the first, and still never enters the conversation.
#[test]
fn guard_recital_closes_every_request_in_json_mode() {
    let script = vec![
        openai_text(r#"{"tool": "browser_snapshot", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "seen"}"#),
    ];
    let dir = TempDir::new("g-recital-json");
    let (d, llm) = wire_daemon(dir.path(), Wire::OpenAi, script, |c| {
        small(c);
        c.api.tool_mode = "json".into();
    });
    let _worker = ScriptedWorker::start(&d.worker_client(), "guard-box", &["browser"], false, shop);
    let c = d.client();
    let id = create_session(&c, task("https://shop.test/", "look at the shop"));
    let record = wait_status(&c, &id, "finished");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{record}");
    for r in &requests {
        let last = r.body["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
        assert!(last.contains("(Reminder) Your task: look at the shop"), "{last}");
    }
    assert_eq!(record["guards_fired"]["recital"], 2, "{record}");
    let conversation = c.get(&format!("/sessions/{id}/conversation")).text();
    assert!(!conversation.contains("(Reminder)"), "{conversation}");
}

#[test]
fn guard_login_hint_fires_on_a_sign_in_form() {
    let body = json!({"mode": "task", "target": "https://a.test/login", "instruction": "open my account",
                      "credentials": {"username": "u", "password": "p-secret", "login_url": "https://a.test/login"}});
    let r = run("g-login", vec![finish("signed in")], "browser", body, "finished", |_| {
        json!({"success": true, "data": {"url": "https://a.test/login", "sign_in": true, "snapshot":
            "Page: \"Sign in\" — https://a.test/login (HTTP 200)\n[e2] input email \"Email\"\n[e3] input password \"Password\""}})
    });
    assert_eq!(r.fired("login_hint"), 1, "{}", r.record);
    let opening = r.requests[0].body["messages"][0].to_string();
    assert!(opening.contains("call perform_login, which fills and submits it"), "{opening}");
}

#[test]
fn guard_login_hint_is_quiet_on_a_search_form() {
    let body = json!({"mode": "task", "target": "https://shop.test/", "instruction": "find a lamp",
                      "credentials": {"username": "u", "password": "p-secret", "login_url": "https://shop.test/login"}});
    let r = run("g-login-quiet", vec![finish("found")], "browser", body, "finished", shop);
    assert_eq!(r.fired("login_hint"), 0, "{}", r.record);
    assert!(!r.requests[0].body["messages"].to_string().contains("perform_login, which"), "no hint");
}

/// A shell session reading one file three times, then computing: told of the loop, never stuck,
/// so the next turn stays open (`stuck_deliver` quiet).
#[test]
fn guard_stuck_deliver_is_quiet_on_a_file_read_three_times_then_a_command() {
    let read = || tool("read_file", json!({"path": "/srv/app.log"}));
    let script =
        vec![read(), read(), read(), tool("run_command", json!({"command": "wc -l /srv/app.log"})), finish("12 lines")];
    let r = run(
        "g-looked-quiet",
        script,
        "shell",
        shell_task("How long is /srv/app.log?"),
        "finished",
        |cmd| json!({"success": true, "data": {"path": cmd["params"]["path"], "content": "a\nb\n", "stdout": "12 /srv/app.log\n"}}),
    );
    assert_eq!(r.fired("stuck_deliver"), 0, "{}", r.record);
    let open = r.requests[3].tool_names();
    assert!(open.contains(&"run_command".to_string()), "an open turn, not the last chance: {open:?}");
    assert_eq!(r.actions(), ["read_file", "read_file", "read_file", "run_command"]);
}

/// A task that keeps no file, finished in the same reply as a call that worked: honoured at once.
#[test]
fn guards_premature_finish_is_quiet_on_a_task_that_keeps_no_file() {
    let reply = tools(
        None,
        &[
            ("browser_type", json!({"selector": "ref=e2", "text": "lamp"})),
            ("finish_task", json!({"summary": "typed"})),
        ],
    );
    let r = run(
        "g-finish-quiet",
        vec![reply],
        "browser",
        task("https://shop.test/", "Type lamp into the search."),
        "finished",
        shop,
    );
    assert_eq!(r.record["summary"], "typed");
    assert_eq!(r.fired("premature_finish"), 0, "{}", r.record);
    assert_eq!(r.requests.len(), 1);
}

/// A task whose file is a PDF, ended in words: no call asks for a text file's content.
#[test]
fn guard_answer_in_words_is_quiet_on_a_task_that_keeps_a_pdf() {
    let script = vec![text("I looked at the shop."), text("The shop sells lamps.")];
    let r = run(
        "g-words-quiet",
        script,
        "browser",
        task("https://shop.test/", "Save the shop's page as shop.pdf."),
        "finished",
        shop,
    );
    assert_eq!(r.fired("answer_in_words"), 0, "{}", r.record);
    assert_eq!(r.requests.len(), 2, "the reply, the nudge: no extra call");
    assert!(r.files.is_empty(), "{:?}", r.files);
}

/// A click that failed twice is held the third time; once a new page comes, it runs again.
#[test]
fn guard_failed_hold_fires_on_a_third_try_and_is_quiet_after_a_new_page() {
    let click = || tool("browser_click", json!({"selector": "#buy"}));
    let snap = || tool("browser_snapshot", json!({}));
    let nav = tool("browser_navigate", json!({"url": "https://shop.test/item/7"}));
    let script = vec![click(), snap(), click(), snap(), click(), nav, click(), finish("bought")];
    let r = run("g-failed", script, "browser", task("https://shop.test/", "Buy a lamp."), "finished", |cmd| {
        let p = &cmd["params"];
        match cmd["action"].as_str().unwrap() {
            "browser_click" => json!({"success": false, "error": "no element matches `#buy`"}),
            "browser_navigate" if p["url"] == "https://shop.test/item/7" => {
                json!({"success": true, "data": {"snapshot": RESULTS}})
            }
            _ => json!({"success": true, "data": {"snapshot": SEARCH}}),
        }
    });
    assert_eq!(r.fired("failed_hold"), 1, "{}", r.record);
    assert!(r.result(5).contains("it failed the same way twice before"), "{}", r.result(5));
    let clicks = r.actions().iter().filter(|a| **a == "browser_click").count();
    assert_eq!(clicks, 3, "the third try held, the one on the new page run: {:?}", r.actions());
}

/// A click refused two different ways (a form's defaults, then a list opened over the button)
/// on a page that changed in between is not a loop: its third try runs and sends.
#[test]
fn guard_failed_hold_is_quiet_on_a_call_that_failed_two_ways() {
    let click = || tool("browser_click", json!({"selector": "ref=e5"}));
    let pick = tool("browser_select_option", json!({"selector": "ref=e1", "value": "6 ft"}));
    let script = vec![click(), click(), pick, click(), finish("sent")];
    let tries = std::sync::atomic::AtomicUsize::new(0);
    let r = run(
        "g-failed-ways",
        script,
        "browser",
        task("https://shop.test/", "Choose 6 ft, then send."),
        "finished",
        move |cmd| match cmd["action"].as_str().unwrap() {
            "browser_click" => match tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => json!({"success": false, "error": "not sent yet: the height select holds the page's default"}),
                1 => json!({"success": false, "error": "`ref=e5` is covered by a list of heights"}),
                _ => json!({"success": true, "data": {"clicked": "button", "text": "Send"}}),
            },
            _ => json!({"success": true, "data": {"snapshot": SEARCH}}),
        },
    );
    assert_eq!(r.fired("failed_hold"), 0, "{}", r.record);
    let clicks = r.actions().iter().filter(|a| **a == "browser_click").count();
    assert_eq!(clicks, 3, "every try ran: {:?}", r.actions());
}

/// A page with a link to a report (a file) and a contact link.
const HOME: &str = "Page: \"Acme\" — https://shop.test/ (HTTP 200)\n\
    [e5] link \"Annual report\" → https://shop.test/report.pdf\n[e6] link \"Contact\" → https://shop.test/contact";

/// A click on the ref of the line below the link the words name: aimed at that link, which
/// leads to a file, so downloaded. Both guards act on the one step, once each, and the step log
/// says which (the call made once, not re-entered).
#[test]
fn guard_click_as_said_and_file_link_download_are_named_in_the_step_log() {
    let said =
        tools(Some("I will open the \"Annual report\" link."), &[("browser_click", json!({"selector": "ref=e6"}))]);
    let dir = TempDir::new("g-step-log");
    let (d, _llm) = llm_daemon(dir.path(), vec![said, finish("downloaded")], small);
    let worker = ScriptedWorker::start(&d.worker_client(), "guard-box", &["browser"], false, |cmd| match cmd["action"]
        .as_str()
        .unwrap()
    {
        "browser_download" => json!({"success": true, "data": {"filename": "report.pdf", "size": 3}}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": HOME}}),
    });
    let c = d.client();
    let id = create_session(&c, task("https://shop.test/", "Get the annual report."));
    let record = wait_status(&c, &id, "finished");
    assert_eq!(record["guards_fired"]["click_as_said"], 1, "{record}");
    assert_eq!(record["guards_fired"]["file_link_download"], 1, "{record}");
    let actions: Vec<Value> = worker.seen.lock().unwrap().iter().map(|c| c["action"].clone()).collect();
    assert_eq!(actions, ["browser_navigate", "browser_download"], "no click ran");
    let steps = c.get(&format!("/sessions/{id}/steps")).json();
    let steps = steps.as_array().unwrap();
    assert_eq!(steps.len(), 3, "the opening, the one redirected step, the finish: {steps:?}");
    assert_eq!(steps[0].get("guard"), None, "the opening is no guard's: {}", steps[0]);
    assert_eq!(steps[2].get("guard"), None, "nor the finish: {}", steps[2]);
    let step = &steps[1];
    assert_eq!(step["tool"], "browser_download", "{step}");
    assert_eq!(step["args"], json!({"url": "https://shop.test/report.pdf"}), "{step}");
    assert_eq!(step["guard"], "click_as_said", "the first guard that changed it: {step}");
    assert_eq!(step["guards"], json!(["click_as_said", "file_link_download"]), "{step}");
}

const BOOKING: &str = "Page: \"Booking\" — https://shop.test/book (HTTP 200)\n\
    [e2] input text \"Arrival\" name=arrive (empty) (read-only)\n[e3] button \"Reserve\"";

/// `readonly_click` on a case it was not written for, a typing the worker took as it is (a field
/// that is not read-only): the worker is asked either way, the flag it answers when it clicked
/// is this guard's firing and step, never the model's text, and without the flag nothing fires.
#[test]
fn guard_readonly_click_asks_the_worker_and_logs_its_click_not_its_flag() {
    let script = vec![
        tool("browser_type", json!({"selector": "ref=e2", "text": "03/03/2024"})),
        tool("browser_type", json!({"selector": "ref=e3", "text": "x"})),
        finish("picked"),
    ];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_type" if cmd["params"]["selector"] == "ref=e2" => {
            let asked = cmd["params"]["readonly_click"] == true;
            json!({"success": true, "data": {"clicked": "input", "typed": 0, "clicked_read_only": asked}})
        }
        "browser_type" => json!({"success": true, "data": {"typed": 1, "into": "ref=e3"}}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/book", "snapshot": BOOKING}}),
    };
    let r =
        run("g-readonly", script, "browser", task("https://shop.test/book", "Arrive on 3 March."), "finished", respond);
    let typings: Vec<&Value> = r.commands.iter().filter(|c| c["action"] == "browser_type").collect();
    assert!(typings.iter().all(|c| c["params"]["readonly_click"] == true), "asked on every typing: {typings:?}");
    assert_eq!(r.fired("readonly_click"), 1, "{}", r.record);
    let to_model: String = r.requests.iter().map(|q| q.body.to_string()).collect();
    assert!(!to_model.contains("clicked_read_only"), "the flag is the guard's, not the model's: {to_model}");
}

/// A worker's answer is outside data: one that is not an object (a string, a list) passes the
/// answer's units untouched, and the session goes on (a panic there would end the daemon).
#[test]
fn guards_pass_an_answer_that_is_not_an_object_untouched() {
    let script = vec![
        tool("run_command", json!({"command": "awk '{s+=$2} END {print s}' /srv/a.csv"})),
        tool("read_file", json!({"path": "/srv/a.csv"})),
        finish("read"),
    ];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "run_command" => json!({"success": true, "data": "13"}),
        _ => json!({"success": true, "data": ["a,b", "1,2"]}),
    };
    let r = run("g-not-object", script, "shell", shell_task("Sum column b of /srv/a.csv."), "finished", respond);
    assert_eq!(r.fired("reading_hints"), 0, "{}", r.record);
    assert!(r.result(1).contains("13") && r.result(2).contains("1,2"), "{}", r.result(2));
}

/// `radio_by_label` on a fill it was not written for (a text field and a checkbox): asked on the
/// fill, firing once for the one field the worker marked, the mark never shown to the model.
#[test]
fn guard_radio_by_label_asks_the_worker_and_counts_only_the_fields_it_marked() {
    let fields = json!([{"selector": "ref=e2", "value": "Zoe"}, {"selector": "ref=e3", "value": "Express"},
        {"selector": "ref=e5", "value": "yes"}]);
    let script = vec![tool("browser_fill_form", json!({"fields": fields})), finish("filled")];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_fill_form" => {
            let asked = cmd["params"]["radio_by_label"] == true;
            json!({"success": true, "data": {"filled": [{"selector": "ref=e2", "filled": true},
                {"selector": "ref=e4", "checked": true, "chosen_by_label": asked}, {"selector": "ref=e5", "checked": true}]}})
        }
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    };
    let r = run("g-radio", script, "browser", task("https://shop.test/", "Express for Zoe."), "finished", respond);
    let fill = r.commands.iter().find(|c| c["action"] == "browser_fill_form").unwrap();
    assert_eq!(fill["params"]["radio_by_label"], true, "{fill}");
    assert_eq!(r.fired("radio_by_label"), 1, "{}", r.record);
    assert!(!r.result(1).contains("chosen_by_label"), "{}", r.result(1));
}

/// `read_miss_page` on a case it was not written for, a links read (it came from a DOM read's
/// miss): asked on every read, firing on the worker's `found: false`, and switched off the
/// worker is told so and the miss is the model's error.
#[test]
fn guard_read_miss_page_asks_the_worker_on_reads_and_fires_on_its_answer() {
    let script = vec![tool("browser_scrape_links", json!({"selector": "#toc"})), finish("read")];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_scrape_links" if cmd["params"]["read_miss_page"] == true => json!({"success": true,
            "data": {"found": false, "message": "no element matches `#toc`", "snapshot": SEARCH}}),
        "browser_scrape_links" => json!({"success": false, "error": "no element matches `#toc`"}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    };
    let on =
        run("g-miss", script.clone(), "browser", task("https://shop.test/", "List the links."), "finished", respond);
    assert_eq!(on.fired("read_miss_page"), 1, "{}", on.record);
    assert!(on.result(1).contains("[e4] link"), "{}", on.result(1));
    let mut body = task("https://shop.test/", "List the links.");
    body["options"] = json!({"guards": {"read_miss_page": false}});
    let off = run("g-miss-off", script, "browser", body, "finished", respond);
    let read = off.commands.iter().find(|c| c["action"] == "browser_scrape_links").unwrap();
    assert_eq!(read["params"]["read_miss_page"], false, "{read}");
    assert_eq!(off.fired("read_miss_page"), 0, "{}", off.record);
}

/// `select_sets_value` on a case it was not written for, a colour field (it came from dates and
/// sliders): asked on every select_option, firing on a value set and not on a select's choice.
#[test]
fn guard_select_sets_value_asks_the_worker_and_fires_on_a_value_set_only() {
    let script = vec![
        tool("browser_select_option", json!({"selector": "ref=e2", "value": "teal"})),
        tool("browser_select_option", json!({"selector": "ref=e3", "value": "Large"})),
        finish("set"),
    ];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_select_option" if cmd["params"]["selector"] == "ref=e2" => {
            match cmd["params"]["select_sets_value"] == true {
                true => json!({"success": true, "data": {"set": "#008080", "kind": "color"}}),
                false => json!({"success": false, "error": "`ref=e2` is a color field, not a select"}),
            }
        }
        "browser_select_option" => json!({"success": true, "data": {"selected": "l", "label": "Large"}}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    };
    let r =
        run("g-select-set", script, "browser", task("https://shop.test/", "A large teal one."), "finished", respond);
    let selects: Vec<&Value> = r.commands.iter().filter(|c| c["action"] == "browser_select_option").collect();
    assert!(selects.len() == 2 && selects.iter().all(|c| c["params"]["select_sets_value"] == true), "{selects:?}");
    assert_eq!(r.fired("select_sets_value"), 1, "{}", r.record);
}

/// `tool_advice`: asked on a click and a table read, firing on the answer that carries advice,
/// not on a click whose answer has none (a button's).
#[test]
fn guard_tool_advice_asks_the_worker_and_fires_on_advice_only() {
    let script = vec![
        tool("browser_click", json!({"selector": "ref=e3"})),
        tool("browser_scrape_table", json!({})),
        finish("read"),
    ];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_click" => json!({"success": true, "data": {"clicked": "button", "text": "Go"}}),
        "browser_scrape_table" => {
            let mut data = json!({"rows": 2, "columns": 2, "csv": "a,b\n1,2\n"});
            if cmd["params"]["advice"] == true {
                data["to_save"] = json!("to keep it as a file, call browser_scrape_table again with a filename");
            }
            json!({"success": true, "data": data})
        }
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    };
    let r = run("g-advice", script, "browser", task("https://shop.test/", "Read the table."), "finished", respond);
    let asked: Vec<&Value> = r.commands.iter().filter(|c| c["params"].get("advice").is_some()).collect();
    assert!(asked.len() == 2 && asked.iter().all(|c| c["params"]["advice"] == true), "{asked:?}");
    assert_eq!(r.fired("tool_advice"), 1, "{}", r.record);
}

/// `progress` on a case it was not written for, a search typed, a suggestion picked, then sent
/// by a key, in JSON action mode: from the second action each request closes with the steps so
/// far, each with its element's line as the model saw it (on the page or in a result) and what
/// it did, and nothing it typed; a scroll is no step. With native tool calls it stays quiet.
#[test]
fn guard_progress_closes_requests_with_the_steps_so_far() {
    let calls = [
        ("browser_type", json!({"selector": "ref=e2", "text": "brass lamp"})),
        ("browser_scroll", json!({"direction": "down"})),
        ("browser_click", json!({"selector": "ref=e9"})),
        ("browser_press_key", json!({"key": "Enter"})),
    ];
    let as_json = |(name, args): &(&str, Value)| openai_text(&json!({"tool": name, "args": args}).to_string());
    let mut script: Vec<Step> = calls.iter().map(as_json).collect();
    script.push(openai_text(r#"{"action": "complete", "message": "searched"}"#));
    let r = run_json("g-progress", script, task("https://shop.test/", "Search for a lamp."), "finished", suggesting);
    let closing = |i: usize| {
        let msgs = r.requests[i].body["messages"].as_array().unwrap().clone();
        msgs.last().unwrap()["content"].to_string()
    };
    assert!(!closing(2).contains("steps so far"), "one step is no list yet: {}", closing(2));
    let last = closing(4);
    assert!(last.contains("steps so far"), "{last}");
    assert!(last.contains("1. typed into input search \\\"Search\\\" name=q → lines 1 new, 1 changed"), "{last}");
    assert!(last.contains("2. clicked option \\\"Brass lamp\\\" → lines 1 changed"), "a result's ref: {last}");
    assert!(last.contains("3. pressed Enter → a new page \\\"Results\\\""), "{last}");
    assert!(!last.contains("brass") && !last.contains("scroll"), "{last}");
    assert_eq!(r.fired("progress"), 2, "{}", r.record);

    let mut native: Vec<Step> = calls.iter().map(|(name, args)| tool(name, args.clone())).collect();
    native.push(finish("searched"));
    let r = run("g-progress-native", native, "browser", task("https://shop.test/", "Search."), "finished", suggesting);
    assert!(r.record["guards_fired"].get("progress").is_none(), "JSON mode only: {}", r.record);
}

/// A search box whose typing brings a suggestion, a click on it that fills the box, and a key
/// that sends the search.
fn suggesting(cmd: &Value) -> Value {
    let same = |added: u64, updated: u64| json!({"page": "same", "added": added, "updated": updated, "removed": 0});
    match cmd["action"].as_str().unwrap() {
        "browser_type" => json!({"success": true, "data": {"typed": 10, "changed": same(1, 1),
            "changes": "What changed on the page (lines: 1 new, 1 changed):\n[e2] input search \"Search\" name=q (value as typed)\n[e9] option \"Brass lamp\""}}),
        "browser_click" => json!({"success": true, "data": {"clicked": "li", "changed": same(0, 1),
            "changes": "What changed on the page (lines: 1 changed):\n[e2] input search \"Search\" name=q value=\"Brass lamp\""}}),
        "browser_press_key" => json!({"success": true, "data": {"pressed": "Enter", "changed": {"page": "new"},
            "url": "https://shop.test/search?q=lamp", "title": "Results", "snapshot": RESULTS}}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    }
}

/// `invalid_form_hold` on a case it was not written for, an e-mail field that holds no e-mail
/// (it came from required fields left empty): asked on every click, firing on the typed
/// refusal, and switched off the click goes to the worker unheld.
#[test]
fn guard_invalid_form_hold_asks_the_worker_and_fires_on_its_refusal() {
    let script = vec![tool("browser_click", json!({"selector": "ref=e3"})), finish("held")];
    let respond = |cmd: &Value| match cmd["action"].as_str().unwrap() {
        "browser_click" if cmd["params"]["hold_invalid"] == true => json!({"success": false,
            "error": "the form was not sent: [e2] \"Email\": Please include an '@' in the email address.",
            "data": {"refused": "form_invalid", "selector": "ref=e3",
                "fields": [{"ref": "e2", "label": "Email", "problem": "Please include an '@' in the email address."}]}}),
        "browser_click" => json!({"success": true, "data": {"clicked": "button", "text": "Go"}}),
        _ => json!({"success": true, "data": {"url": "https://shop.test/", "snapshot": SEARCH}}),
    };
    let on = run("g-invalid", script.clone(), "browser", task("https://shop.test/", "Search."), "finished", respond);
    assert_eq!(on.fired("invalid_form_hold"), 1, "{}", on.record);
    assert!(on.result(1).contains("include an '@'"), "{}", on.result(1));
    let mut body = task("https://shop.test/", "Search.");
    body["options"] = json!({"guards": {"invalid_form_hold": false}});
    let off = run("g-invalid-off", script, "browser", body, "finished", respond);
    let click = off.commands.iter().find(|c| c["action"] == "browser_click").unwrap();
    assert_eq!(click["params"]["hold_invalid"], false, "{click}");
    assert_eq!(off.fired("invalid_form_hold"), 0, "{}", off.record);
}
