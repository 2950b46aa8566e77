//! `agent-controller replay ID [--param name=value]… [--instruction TEXT] [--worker NAME]`: the body of
//! `POST /sessions/ID/replay`, followed like `task` (the same `--out`, `--yes`/`--no`, `--json`).
//! A parameter fills `{{name}}` in the recorded steps, or replaces a recorded value `name`.

use super::common::Answers;
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// The replay body (with `replay_of`, the source, for the caller to take out), `--out`, answers.
pub(super) fn body(mut args: pico_args::Arguments) -> Result<(Value, Option<PathBuf>, Answers), String> {
    let params: Vec<String> = args.values_from_str("--param").map_err(|e| e.to_string())?;
    let instruction: Option<String> = args.opt_value_from_str("--instruction").map_err(|e| e.to_string())?;
    let worker: Option<String> = args.opt_value_from_str("--worker").map_err(|e| e.to_string())?;
    let out_dir: Option<PathBuf> = args.opt_value_from_str(["-o", "--out"]).map_err(|e| e.to_string())?;
    let answers = Answers { yes: args.contains("--yes"), no: args.contains("--no") };
    if answers.yes && answers.no {
        return Err("--yes and --no together".into());
    }
    let free: Vec<String> = args.finish().into_iter().filter_map(|s| s.into_string().ok()).collect();
    let [id] = free.as_slice() else { return Err("give the id of one finished session to replay".into()) };
    let mut map = Map::new();
    for p in params {
        let (name, value) = p.split_once('=').ok_or_else(|| format!("--param {p:?} is not name=value"))?;
        map.insert(name.to_string(), json!(value));
    }
    let mut body = json!({"replay_of": id, "params": map});
    if let Some(i) = instruction {
        body["instruction"] = json!(i);
    }
    if let Some(w) = worker {
        body["worker"] = json!(w);
    }
    Ok((body, out_dir, answers))
}
