//! Creating a replay: a new session with the finished source session's mode, target, model and
//! options, whose record carries the source's worker steps (from `steps.jsonl`) with the
//! caller's parameters filled in. The agent runs them without the model (`agent/replay.rs`).
//!
//! A replay runs where its steps were recorded: on the worker the source asked for, else the
//! one that served it (an `ssh://` target names its host itself), unless the request names
//! another `worker`. It waits for that worker as a session asking for it by name would; one
//! that is not registered is refused, naming it.
//!
//! Replayed are the steps that ran on the target, succeeded and were no dry run, in order.
//! Parameters: `{{name}}` in a recorded argument takes the value of `name`; a name that is no
//! placeholder is a recorded value to replace. What a person typed while taking over is
//! recorded only as its length: never typed again as that, it is the placeholder `typed_N`
//! (in the order of the steps), and its value is kept out of everything the replay writes. A
//! placeholder without a value, or a parameter that matches nothing, is refused before
//! anything starts.

use super::error::SessionError;
use super::{NewSession, Session, SessionManager};
use crate::protocol::replay::{ReplayInfo, ReplayRequest, ReplayStep};
use crate::protocol::takeover::typed_pointers;
use crate::protocol::tools::{Runs, Tool};
use crate::protocol::{CreateSessionRequest, Mode, is_ssh_target};
use crate::util::secret::Secret;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

impl SessionManager {
    /// `POST /sessions/:id/replay`: the new session, started.
    pub fn replay(&self, source: &str, req: ReplayRequest) -> Result<Arc<Session>, SessionError> {
        self.create(self.prepare_replay(source, req)?)
    }

    /// A replay of `source`, checked and ready for `create` (a schedule marks it first).
    pub fn prepare_replay(&self, source: &str, req: ReplayRequest) -> Result<NewSession, SessionError> {
        let src = self.get(source)?;
        let record = src.record();
        if record.status.is_active() {
            return Err(SessionError::Conflict(format!(
                "session {source} has not ended yet; only a finished one is replayed"
            )));
        }
        let steps = plan(&src.read_steps(), &req.params)?;
        if steps.is_empty() {
            return Err(SessionError::Invalid(format!("session {source} has no worker steps to replay")));
        }
        let llm = record.llm.clone().unwrap_or_default();
        // Every option carries over (approval included) but dry_run: replaying a rehearsal is
        // the real run.
        let mut options = json!(record.options);
        if let Some(o) = options.as_object_mut() {
            o.remove("dry_run");
        }
        // Never "any free worker": a recorded command belongs to the machine it ran on.
        let recorded = if is_ssh_target(&record.target) {
            None
        } else {
            record.requested_worker.clone().or(record.worker.clone())
        };
        let explicit = req.worker.clone().filter(|w| !w.trim().is_empty());
        let worker = explicit.clone().or(recorded.clone());
        let body = json!({
            "mode": record.mode, "target": record.target, "type": record.session_type, "worker": worker,
            "instruction": req.instruction.clone().or(record.instruction.clone()),
            "goal": if record.mode == Mode::Explore { record.goal.clone() } else { None },
            "llm": Some(llm.name).filter(|n| !n.is_empty()), "model": Some(llm.model).filter(|m| !m.is_empty()),
            "options": options,
        });
        let create: CreateSessionRequest = serde_json::from_value(body)
            .map_err(|e| SessionError::Internal(format!("cannot build the replay session: {e}")))?;
        let mut new = self.validate(create).map_err(|e| match (e, &recorded) {
            (SessionError::Invalid(m), Some(w)) if explicit.is_none() => SessionError::Invalid(format!(
                "{m}: the replay runs on {w:?}, where session {source} was recorded; name another with `worker`"
            )),
            (e, _) => e,
        })?;
        let params = req.params.keys().cloned().collect();
        // What a person typed, given again, is kept out of everything the replay writes.
        let typed = steps.iter().flat_map(|s| s.typed.iter().filter_map(|p| s.args.pointer(p)?.as_str()));
        new.vault = new.vault.with_typed(typed.map(|t| Secret::new(t.to_string())).collect());
        new.record.replay = Some(ReplayInfo { source: source.to_string(), params, steps, ..Default::default() });
        Ok(new)
    }
}

/// The replayable steps of a step log, parameters filled in.
pub fn plan(log: &[Value], params: &BTreeMap<String, String>) -> Result<Vec<ReplayStep>, SessionError> {
    // An empty name would "replace" the empty string: `to` between every character of every
    // recorded argument.
    if params.contains_key("") {
        return Err(SessionError::Invalid("a param needs a name: {\"name\": \"value\"}".into()));
    }
    let mut steps: Vec<ReplayStep> = Vec::new();
    let mut typed_names = BTreeSet::new();
    for s in log.iter().filter(|s| s["is_error"] != true && s["dry_run"] != true) {
        let Some(tool) = s["tool"].as_str().and_then(Tool::from_name) else { continue };
        if !matches!(tool.spec().runs, Runs::Target(_)) {
            continue;
        }
        // What a person typed is recorded as its length: it becomes a `typed_N` placeholder.
        let typed: Vec<String> = match s["typed"].as_array() {
            Some(pointers) => pointers.iter().filter_map(|p| p.as_str().map(str::to_string)).collect(),
            None if s["by"] == "human" => typed_pointers(tool, &s["args"]),
            None => Vec::new(),
        };
        let mut args = s["args"].clone();
        for pointer in &typed {
            if let Some(v) = args.pointer_mut(pointer) {
                let name = format!("typed_{}", typed_names.len() + 1);
                *v = json!(format!("{{{{{name}}}}}"));
                typed_names.insert(name);
            }
        }
        steps.push(ReplayStep {
            tool: tool.name().to_string(),
            args,
            target: s["target"].as_str().map(str::to_string),
            typed,
        });
    }
    let mut placeholders = BTreeSet::new();
    for s in &steps {
        strings(&s.args, &mut |t| placeholders.extend(find_placeholders(t)));
    }
    let missing: Vec<&String> = placeholders.iter().filter(|p| !params.contains_key(*p)).collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        let why = if missing.iter().any(|m| typed_names.contains(*m)) {
            " (typed_N: text a person typed while taking over, which the record keeps only as its length; \
             give it again, {\"typed_1\": \"…\"})"
        } else {
            ""
        };
        return Err(SessionError::Invalid(format!("the recorded steps need params: {}{why}", names.join(", "))));
    }
    for (name, value) in params {
        let placeholder = placeholders.contains(name);
        let fill = |text: &str| {
            if placeholder {
                fill_placeholder(text, name, value)
            } else {
                text.contains(name.as_str()).then(|| text.replace(name.as_str(), value))
            }
        };
        let mut hits = 0;
        for s in &mut steps {
            hits += replace_in(&mut s.args, &fill);
        }
        if hits == 0 {
            return Err(SessionError::Invalid(format!(
                "param `{name}` is neither a {{{{{name}}}}} placeholder nor a value in the recorded steps"
            )));
        }
    }
    Ok(steps)
}

/// Call `f` on every string inside `v`.
fn strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, f)),
        Value::Object(o) => o.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}

/// The `{{name}}` placeholders in a text.
fn find_placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            out.push(name.to_string());
        }
        rest = &after[end + 2..];
    }
    out
}

/// `text` with each `{{name}}` (spaces inside the braces allowed, as `find_placeholders`
/// reads them) replaced by `value`; `None` when it has none.
fn fill_placeholder(text: &str, name: &str, value: &str) -> Option<String> {
    let (mut out, mut rest, mut hit) = (String::new(), text, false);
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        if after[..end].trim() == name {
            out.push_str(&rest[..start]);
            out.push_str(value);
            hit = true;
        } else {
            out.push_str(&rest[..start + 2 + end + 2]);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    hit.then_some(out)
}

/// Rewrite every string inside `v` that `fill` changes; how many it changed.
fn replace_in(v: &mut Value, fill: &dyn Fn(&str) -> Option<String>) -> usize {
    match v {
        Value::String(s) => match fill(s) {
            Some(new) => {
                *s = new;
                1
            }
            None => 0,
        },
        Value::Array(a) => a.iter_mut().map(|x| replace_in(x, fill)).sum(),
        Value::Object(o) => o.values_mut().map(|x| replace_in(x, fill)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: &str, args: Value) -> Value {
        json!({"tool": tool, "args": args, "is_error": false, "dry_run": false})
    }

    #[test]
    fn worker_steps_are_planned_with_their_params() {
        let log = vec![
            step("browser_navigate", json!({"url": "https://shop.test/?q={{item}}"})),
            step("save_note", json!({"content": "local tools are not replayed"})),
            json!({"tool": "browser_click", "args": {"selector": "#x"}, "is_error": true}),
            step("browser_type", json!({"selector": "ref=e3", "text": "socks"})),
        ];
        let params = BTreeMap::from([("item".to_string(), "shoes".to_string()), ("socks".into(), "boots".into())]);
        let steps = plan(&log, &params).unwrap_or_default();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].args["url"], "https://shop.test/?q=shoes");
        assert_eq!(steps[1].args["text"], "boots");
        let e = plan(&log, &BTreeMap::new()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("need params: item"), "{e}");
        let odd = BTreeMap::from([("item".to_string(), "x".to_string()), ("nothing".into(), "y".into())]);
        let e = plan(&log, &odd).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("param `nothing`"), "{e}");
        // Found by tests/fuzz: `{{ item }}` counted as the placeholder `item` but was never
        // filled (the request was refused), and an empty name put its value between every
        // character.
        let spaced = vec![step("browser_navigate", json!({"url": "https://shop.test/?q={{ item }}&r={{item}}"}))];
        let item = BTreeMap::from([("item".to_string(), "shoes".to_string())]);
        let steps = plan(&spaced, &item).unwrap_or_default();
        assert_eq!(steps[0].args["url"], "https://shop.test/?q=shoes&r=shoes");
        let empty = BTreeMap::from([("item".to_string(), "x".to_string()), (String::new(), "y".into())]);
        let e = plan(&log, &empty).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("needs a name"), "{e}");
    }
}
