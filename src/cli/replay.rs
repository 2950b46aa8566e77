//! `agent-controller replay ID [--param name=value]… [--instruction TEXT] [--worker NAME]`: the body of
//! `POST /sessions/ID/replay`, followed like `task` (the same `--out`, `--yes`/`--no`, `--json`).
//! A parameter fills `{{name}}` in the recorded steps, or replaces a recorded value `name`.

use super::args::Parsed;
use super::common::Answers;
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// The replay body (with `replay_of`, the source, for the caller to take out), `--out`, answers.
pub(super) fn body(parsed: &Parsed) -> Result<(Value, Option<PathBuf>, Answers), String> {
    let answers = Answers { yes: parsed.flag("--yes"), no: parsed.flag("--no") };
    if answers.yes && answers.no {
        return Err("--yes and --no together".into());
    }
    let mut map = Map::new();
    for p in parsed.values("--param") {
        let (name, value) = p.split_once('=').ok_or_else(|| format!("--param {p:?} is not name=value"))?;
        map.insert(name.to_string(), json!(value));
    }
    let mut body = json!({"replay_of": parsed.free[0], "params": map});
    if let Some(i) = parsed.value("--instruction") {
        body["instruction"] = json!(i);
    }
    if let Some(w) = parsed.value("--worker") {
        body["worker"] = json!(w);
    }
    Ok((body, parsed.value("--out").map(PathBuf::from), answers))
}
