//! The last chance (a budget spent, a session stuck) through the real daemon and agent on a
//! scripted model and worker, in both profiles: the call offers every tool of the session that
//! delivers and the finish, whatever the task's words say, requires a call without naming one,
//! and refuses another call with the list it offers.

use crate::support::llm::*;
use crate::support::*;
use agent_controller::config::Config;
use serde_json::{Value, json};

const QUESTION: &str = "Which year is the annual report PDF from? Write just the year into answer.txt.";

/// A profile's name, its config tune, and the tools its last chance lists.
type Case<'a> = (&'a str, fn(&mut Config), &'a [&'a str]);

fn full(config: &mut Config) {
    config.api.profile = "full".into();
}

/// What one session left: its record, the requests the model's server received, the worker's
/// commands.
struct Run {
    record: Value,
    requests: Vec<Recorded>,
    actions: Vec<String>,
    /// answer.txt, when the session saved one.
    answer: Option<String>,
}

impl Run {
    /// The index of the request that brought the last chance's note.
    fn last_chance(&self) -> usize {
        let told = |r: &Recorded| r.body["messages"].to_string().contains("Deliver");
        self.requests.iter().position(told).expect("a request with the last chance's note")
    }
}

fn run(tag: &str, tune: fn(&mut Config), script: Vec<Step>, caps: &str, body: Value) -> Run {
    let dir = TempDir::new(tag);
    let (d, llm) = llm_daemon(dir.path(), script, tune);
    let worker = ScriptedWorker::start(&d.worker_client(), "last-box", &[caps], false, |cmd| {
        let p = &cmd["params"];
        json!({"success": true, "data": {"url": "https://reports.test/", "snapshot": "[e1] link \"Annual report 2021 (PDF)\"",
                                         "path": p["path"], "content": "a\nb\n", "written": true}})
    });
    let c = d.client();
    let id = create_session(&c, body);
    let record = wait_status(&c, &id, "finished");
    let file = c.get(&format!("/sessions/{id}/files/answer.txt"));
    let answer = (file.status == 200).then(|| file.text());
    let actions = worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect();
    Run { record, requests: llm.requests(), actions, answer }
}

/// A model that looks down the page three times (new answers: no loop), then answers.
fn looking_then_answering() -> Vec<Step> {
    let mut script: Vec<Step> =
        (0..3).map(|i| tool("browser_scroll", json!({"direction": "down", "amount": 100 + i}))).collect();
    script.push(tools(
        None,
        &[
            ("save_file", json!({"filename": "answer.txt", "content": "2021"})),
            ("finish_task", json!({"summary": "The report is from 2021."})),
        ],
    ));
    script
}

/// A question whose task says "PDF" and "write": its budget spent, the model is offered the
/// session's tools that deliver and the finish (not the one PDF print those words once chose),
/// saves its answer and finishes.
#[test]
fn a_spent_budget_offers_every_delivering_tool_whatever_the_task_s_words() {
    let full_offers = [
        "save_note",
        "browser_download",
        "browser_download_batch",
        "browser_scrape_table",
        "browser_save_as_pdf",
        "save_file",
        "finish_task",
    ];
    // The short catalog leaves save_note (a task's) and the batch download out of the list.
    let small_offers = ["browser_download", "browser_scrape_table", "browser_save_as_pdf", "save_file", "finish_task"];
    let listed: [Case; 2] = [("full", full, &full_offers), ("small", small, &small_offers)];
    for (profile, tune, offered) in listed {
        let body = json!({"mode": "task", "target": "https://reports.test/", "instruction": QUESTION,
                          "options": {"budget": {"tokens": 300}}});
        let r = run(&format!("last-budget-{profile}"), tune, looking_then_answering(), "browser", body);
        assert_eq!(r.record["profile"]["name"], profile);
        assert_eq!(r.record["ended_by"], "budget", "{profile}: {}", r.record);
        assert_eq!(r.requests.len(), 4, "three calls spend the budget, then the wrap-up");
        let wrap_up = r.requests.last().unwrap();
        assert_eq!(wrap_up.tool_names(), offered, "{profile}: every tool that delivers, and the finish");
        assert_eq!(wrap_up.body["tool_choice"], json!({"type": "any"}), "{profile}: a call required, none named");
        let note = wrap_up.body["messages"].to_string();
        assert!(note.contains("token budget is spent") && note.contains(QUESTION), "{profile}: {note}");
        assert_eq!(r.answer.as_deref(), Some("2021"), "{profile}: {}", r.record);
        let summary = r.record["summary"].as_str().unwrap_or_default();
        assert!(summary.contains("The report is from 2021."), "{profile}: {summary}");
    }
}

/// A shell task that says "write", stuck reading one file: its last chance offers the shell's
/// own delivering tools and the finish (not write_file alone); a command there is not run, and
/// its answer lists what the call offers. The model then writes the file and finishes.
#[test]
fn a_stuck_shell_session_is_offered_its_delivering_tools_and_the_finish() {
    let listed: [Case; 2] = [
        ("full", full, &["write_file", "save_note", "save_file", "finish_task"]),
        ("small", small, &["write_file", "save_file", "finish_task"]),
    ];
    for (profile, tune, offered) in listed {
        let read = || tool("read_file", json!({"path": "/srv/app.log"}));
        let mut script: Vec<Step> = (0..5).map(|_| read()).collect();
        script.push(tool("run_command", json!({"command": "wc -l /srv/app.log"})));
        script.push(tools(
            None,
            &[
                ("write_file", json!({"path": "/srv/count.txt", "content": "2"})),
                ("finish_task", json!({"summary": "2 lines, written to /srv/count.txt"})),
            ],
        ));
        let body = json!({"mode": "task", "type": "shell", "target": "box",
                          "instruction": "Write the number of lines of /srv/app.log into /srv/count.txt."});
        let r = run(&format!("last-stuck-{profile}"), tune, script, "shell", body);
        assert_eq!(r.record["guards_fired"]["stuck_deliver"], 2, "{profile}: the last chance, the call it refused");
        let at = r.last_chance();
        assert_eq!(r.requests[at].tool_names(), offered, "{profile}: the shell's tools that deliver, and the finish");
        assert_eq!(r.requests[at].body["tool_choice"], json!({"type": "any"}), "{profile}");
        let refused = r.requests[at + 1].last_results()[0]["content"].to_string();
        let (finish, others) = offered.split_last().unwrap();
        let says = format!("this turn offers only {} and {finish}", others.join(", "));
        assert!(refused.contains(&says), "{profile}: {refused}");
        assert!(!r.actions.contains(&"run_command".to_string()), "{profile}: {:?}", r.actions);
        assert_eq!(r.actions.last().map(String::as_str), Some("write_file"), "{profile}: {:?}", r.actions);
        assert_eq!(r.record["summary"], "2 lines, written to /srv/count.txt", "{profile}");
    }
}
