//! `agent-controller schedule add|list|rm|run`: the console's side of `/schedules`.
//!
//! `add NAME` takes `--every D` or `--cron EXPR` (with `--tz`), and `--replay ID` (with
//! `--param name=value`…) or `--session JSON` (a `POST /sessions` body); the daemon checks the
//! rest and its error is printed as it comes.

use super::args::Parsed;
use super::client::{ApiClient, path_segment};
use super::common::{Column, Out, exit, fail, print_table, text_of};
use super::table::Align;
use serde_json::{Map, Value, json};
use std::fmt;

const COLUMNS: &[Column] = &[
    ("NAME", Align::Left, |s| text_of(&s["name"])),
    ("WHEN", Align::Left, |s| {
        if s["every"].is_string() { format!("every {}", text_of(&s["every"])) } else { text_of(&s["cron"]) }
    }),
    ("RUNS", Align::Right, |s| text_of(&s["runs"])),
    ("LAST", Align::Left, |s| match s["last_run"].as_object() {
        Some(l) => format!("#{} {} {}", text_of(&l["run"]), text_of(&l["status"]), text_of(&l["session_id"])),
        None => "-".into(),
    }),
    ("NEXT", Align::Left, |s| text_of(&s["next_run"])),
    ("WHAT", Align::Left, |s| match s["replay_of"].as_str() {
        Some(id) => format!("replay {id}"),
        None => text_of(&s["session"]["target"]),
    }),
];

/// Run `schedule SUBCOMMAND`; the exit code.
pub(super) fn run(client: &ApiClient, out: &Out, parsed: &Parsed) -> u8 {
    let body = options(parsed);
    let free = &parsed.free;
    let name = free.get(1).map(|n| path_segment(n));
    let result = match (free.first().map(String::as_str), name) {
        (Some("list"), None) => client.get("/schedules").map(|v| print_table(&v, out, COLUMNS)),
        (Some("add"), Some(_)) => match body {
            Ok(mut body) => {
                body["name"] = json!(free[1]);
                client.post("/schedules", &body).map(|v| {
                    said(out, &v, &format!("schedule {} added; next run {}", free[1], text_of(&v["next_run"])))
                })
            }
            Err(e) => return usage(&e.to_string()),
        },
        (Some("rm"), Some(n)) => {
            client.delete(&format!("/schedules/{n}")).map(|v| said(out, &v, &format!("schedule {} removed", free[1])))
        }
        (Some("run"), Some(n)) => client.post(&format!("/schedules/{n}/run"), &json!({})).map(|v| {
            said(
                out,
                &v,
                &format!(
                    "run {} of {} started: session {}",
                    text_of(&v["schedule"]["run"]),
                    free[1],
                    text_of(&v["session_id"])
                ),
            )
        }),
        _ => return usage("give list, add NAME, rm NAME or run NAME"),
    };
    match result {
        Ok(()) => exit::FINISHED,
        Err(e) => fail(e),
    }
}

fn usage(why: &str) -> u8 {
    eprintln!("agent-controller schedule: {why} (agent-controller help schedule)");
    exit::USAGE
}

fn said(out: &Out, v: &Value, line: &str) {
    if out.json { println!("{v}") } else { println!("{line}") }
}

/// What is wrong with `add`'s options.
#[derive(Debug)]
enum OptionsError {
    /// `--session` is not JSON.
    Session(serde_json::Error),
    /// A `--param` without `=` (as given).
    Param(String),
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::Session(e) => write!(f, "--session is not JSON: {e}"),
            OptionsError::Param(p) => write!(f, "--param {p:?} is not name=value"),
        }
    }
}

impl std::error::Error for OptionsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OptionsError::Session(e) => Some(e),
            OptionsError::Param(_) => None,
        }
    }
}

/// The `add` body from the options.
fn options(parsed: &Parsed) -> Result<Value, OptionsError> {
    let mut body = json!({});
    for (key, option) in [("every", "--every"), ("cron", "--cron"), ("tz", "--tz"), ("replay_of", "--replay")] {
        if let Some(v) = parsed.value(option) {
            body[key] = json!(v);
        }
    }
    if let Some(session) = parsed.value("--session") {
        body["session"] = serde_json::from_str(session).map_err(OptionsError::Session)?;
    }
    if parsed.flag("--catch-up") {
        body["catch_up"] = json!(true);
    }
    let params = parsed.values("--param");
    if !params.is_empty() {
        let mut map = Map::new();
        for p in params {
            let (k, v) = p.split_once('=').ok_or_else(|| OptionsError::Param(p.clone()))?;
            map.insert(k.to_string(), json!(v));
        }
        body["params"] = Value::Object(map);
    }
    Ok(body)
}
