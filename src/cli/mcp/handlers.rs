//! What each MCP tool does: REST calls through the `Rest` seam (the daemon's client, or a
//! fake in the unit tests), answered as text a model can read. Arguments have been checked
//! against the tool's schema before a handler runs.

use super::Call;
use super::rpc::{Content, ToolResult};
use crate::cli::client::{ClientError, is_active, path_segment};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest `wait_for_session` (the MCP clients' request timeout is about a minute).
const WAIT_MAX: Duration = Duration::from_secs(50);
/// Text and images up to this size come inline; larger files are saved locally.
const INLINE_MAX: u64 = 20 * 1024 * 1024;
/// A recording larger than this is only saved (an animation is many frames).
const RECORDING_INLINE_MAX: u64 = 2 * 1024 * 1024;

type Outcome = Result<ToolResult, ClientError>;

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A GET whose answer is shown as it is.
fn shown(c: &Call<'_>, path: &str) -> Outcome {
    c.rest.get(path).map(|v| ToolResult::text(pretty(&v)))
}

pub fn create_session(c: &Call<'_>) -> Outcome {
    let args = c.args;
    let mut body = json!({"mode": args["mode"], "target": args["target"]});
    for key in ["type", "instruction", "goal", "worker"] {
        if let Some(v) = args.get(key).filter(|v| !v.is_null()) {
            body[key] = v.clone();
        }
    }
    let mut options = json!({});
    if let Some(n) = args["max_turns"].as_u64() {
        options["max_turns"] = json!(n);
    }
    if let Some(b) = args["auto_confirm"].as_bool() {
        options["auto_confirm"] = json!(b);
    }
    if let Some(list) = args.get("allowed_domains").filter(|v| !v.is_null()) {
        options["allowed_domains"] = list.clone();
    }
    if let Some(p) = args["browser_profile"].as_str() {
        options["browser_profile"] = json!(p);
    }
    body["options"] = options;
    let files: Vec<std::path::PathBuf> =
        args["files"].as_array().into_iter().flatten().filter_map(Value::as_str).map(Into::into).collect();
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string()).collect();
    if !files.is_empty() {
        body["inputs"] = json!(names);
    }
    let s = c.rest.post("/sessions", &body)?;
    let id = s["session_id"].as_str().unwrap_or("").to_string();
    for (file, name) in files.iter().zip(&names) {
        let put = c.rest.put_file(&format!("/sessions/{}/inputs/{}", path_segment(&id), path_segment(name)), file);
        if let Err(e) = put {
            // It would wait for this file: stopped instead.
            let _ = c.rest.delete(&format!("/sessions/{}", path_segment(&id)));
            return Err(e);
        }
    }
    Ok(ToolResult::text(format!(
        "Created session {id} ({}). Call wait_for_session to follow it.\n{}",
        s["status"].as_str().unwrap_or(""),
        pretty(&s)
    )))
}

pub fn list_sessions(c: &Call<'_>) -> Outcome {
    shown(c, "/sessions")
}

pub fn get_session(c: &Call<'_>) -> Outcome {
    shown(c, &format!("/sessions/{}", c.session()))
}

pub fn get_log(c: &Call<'_>) -> Outcome {
    let after = c.args["after"].as_u64().unwrap_or(0);
    c.rest.get(&format!("/sessions/{}/log?after={after}", c.session())).map(|v| ToolResult::text(format_log(&v)))
}

pub fn get_report(c: &Call<'_>) -> Outcome {
    c.rest.get(&format!("/sessions/{}/report", c.session())).map(|v| {
        let r = v["report"].as_str().unwrap_or("");
        ToolResult::text(if r.is_empty() { "(no report yet)".into() } else { r.to_string() })
    })
}

pub fn export_session(c: &Call<'_>) -> Outcome {
    let query = c.args["format"].as_str().map_or_else(String::new, |f| format!("?format={}", path_segment(f)));
    let (bytes, _) = c.rest.get_bytes(&format!("/sessions/{}/export{query}", c.session()), INLINE_MAX)?;
    Ok(ToolResult::text(String::from_utf8_lossy(&bytes).into_owned()))
}

pub fn get_notes(c: &Call<'_>) -> Outcome {
    shown(c, &format!("/sessions/{}/notes", c.session()))
}

pub fn list_files(c: &Call<'_>) -> Outcome {
    shown(c, &format!("/sessions/{}/files", c.session()))
}

pub fn list_workers(c: &Call<'_>) -> Outcome {
    shown(c, "/workers")
}

pub fn list_schedules(c: &Call<'_>) -> Outcome {
    shown(c, "/schedules")
}

pub fn run_schedule(c: &Call<'_>) -> Outcome {
    let name = c.args["name"].as_str().map(path_segment).unwrap_or_default();
    c.rest.post(&format!("/schedules/{name}/run"), &json!({})).map(|s| {
        let new = s["session_id"].as_str().unwrap_or("");
        ToolResult::text(format!("Run of {name} started as session {new}. Call wait_for_session to follow it."))
    })
}

pub fn stop_session(c: &Call<'_>) -> Outcome {
    c.rest.delete(&format!("/sessions/{}", c.session())).map(|v| ToolResult::text(pretty(&v)))
}

pub fn replay_session(c: &Call<'_>) -> Outcome {
    let id = c.session();
    let params = c.args.get("params").cloned().unwrap_or_else(|| json!({}));
    c.rest
        .post(&format!("/sessions/{id}/replay"), &json!({"params": params, "instruction": c.args["instruction"]}))
        .map(|s| {
            let new = s["session_id"].as_str().unwrap_or("");
            ToolResult::text(format!("Replaying {id} as session {new}. Call wait_for_session to follow it."))
        })
}

pub fn answer_question(c: &Call<'_>) -> Outcome {
    let id = c.session();
    c.rest
        .post(&format!("/sessions/{id}/answer"), &json!({"text": c.args["text"]}))
        .map(|_| ToolResult::text(format!("Answered the question of {id}")))
}

/// `POST /pause`: the session pauses after the step in flight (at once if it waits for a
/// worker or a person).
pub fn pause_session(c: &Call<'_>) -> Outcome {
    let id = c.session();
    c.rest.post(&format!("/sessions/{id}/pause"), &json!({})).map(|v| {
        let said = if v["status"] == "paused" {
            format!("{id} is paused.")
        } else {
            format!("Pausing {id}: it waits after the step in flight (wait_for_session returns once it is paused).")
        };
        ToolResult::text(format!("{said} While it is paused, act runs its tools; resume_session lets it go on."))
    })
}

/// `POST /act`: one worker tool as the person; its result's text (a failed tool is a tool
/// error), and the screenshot it left, by name.
pub fn act(c: &Call<'_>) -> Outcome {
    let input = c.args.get("input").filter(|v| !v.is_null()).cloned().unwrap_or_else(|| json!({}));
    let body = json!({"tool": c.args["tool"], "input": input});
    let answer = match c.rest.post(&format!("/sessions/{}/act", c.session()), &body) {
        // The client gives up after 90 s; the daemon waits as long as the tool's own timeout.
        Err(ClientError::Unreachable { why, .. }) if why == "timed out" => {
            let why = "no answer within 90 s: the tool may still be running on the target (get_log shows its end)";
            return Ok(ToolResult::error(why.into()));
        }
        other => other,
    };
    answer.map(|v| {
        let Some(result) = v["result"].as_str() else { return ToolResult::text(pretty(&v)) };
        let mut text = result.to_string();
        if let Some(shot) = v["screenshot"].as_str() {
            text.push_str(&format!("\nscreenshot: {shot} (get_file shows it)"));
        }
        if v["is_error"] == true { ToolResult::error(text) } else { ToolResult::text(text) }
    })
}

/// `POST /resume`, with the person's note for the model if there is one.
pub fn resume_session(c: &Call<'_>) -> Outcome {
    let id = c.session();
    let body = match c.args["note"].as_str() {
        Some(note) => json!({"note": note}),
        None => json!({}),
    };
    c.rest
        .post(&format!("/sessions/{id}/resume"), &body)
        .map(|_| ToolResult::text(format!("Resumed {id}. Call wait_for_session to follow it.")))
}

fn format_log(page: &Value) -> String {
    let mut out = String::new();
    for e in page["entries"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{} {} [{}] {}\n",
            e["seq"],
            e["ts"].as_str().and_then(|t| t.get(11..19)).unwrap_or(""),
            e["type"].as_str().unwrap_or(""),
            e["text"].as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!("next: {}", page["next"]));
    out
}

pub fn respond_confirmation(c: &Call<'_>) -> Outcome {
    let (id, args) = (c.session(), c.args);
    let cid = match args["confirmation_id"].as_str() {
        Some(cid) => cid.to_string(),
        None => {
            let pending = c.rest.get(&format!("/sessions/{id}/confirmation"))?;
            if pending["pending"] != true {
                return Ok(ToolResult::error(format!("session {id} is not waiting for a confirmation")));
            }
            pending["confirmation_id"].as_str().unwrap_or("").to_string()
        }
    };
    let approved = args["approved"].as_bool().unwrap_or(false);
    let mut answer = json!({"confirmation_id": cid, "approved": approved});
    for key in ["reason", "edited_command"] {
        if let Some(v) = args[key].as_str() {
            answer[key] = json!(v);
        }
    }
    c.rest.post(&format!("/sessions/{id}/confirmation"), &answer)?;
    Ok(ToolResult::text(format!("{} {cid}", if approved { "Approved" } else { "Denied" })))
}

/// How `get_file` returns a file, by its name.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Image,
    Other,
}

fn kind_of(ext: &str) -> Kind {
    match ext {
        "txt" | "csv" | "md" | "json" | "log" | "html" | "htm" | "xml" | "tsv" | "yaml" | "yml" => Kind::Text,
        "png" | "jpg" | "jpeg" | "gif" | "webp" => Kind::Image,
        _ => Kind::Other,
    }
}

pub fn get_file(c: &Call<'_>) -> Outcome {
    let (id, filename) = (c.session(), c.args["filename"].as_str().unwrap_or(""));
    let path = format!("/sessions/{id}/files/{}", path_segment(filename));
    let files = c.rest.get(&format!("/sessions/{id}/files"))?;
    let size_kb = files
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["filename"] == filename)
        .and_then(|f| f["size_kb"].as_u64())
        .ok_or_else(|| ClientError::Other(format!("session {id} has no file {filename:?} (list_files shows them)")))?;
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let kind = kind_of(&ext);
    if kind != Kind::Other && size_kb * 1024 <= INLINE_MAX {
        let (bytes, ct) = c.rest.get_bytes(&path, INLINE_MAX)?;
        if kind == Kind::Text {
            return Ok(ToolResult::text(String::from_utf8_lossy(&bytes).into_owned()));
        }
        let mime_type =
            if ct.starts_with("image/") { ct } else { format!("image/{}", if ext == "jpg" { "jpeg" } else { &ext }) };
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
        let content =
            vec![Content::Text { text: format!("{filename} ({size_kb} KB)") }, Content::Image { data, mime_type }];
        return Ok(ToolResult { content, is_error: false });
    }
    let dir = c.files_dir.join(crate::util::filename::sanitize_filename(&id));
    // Inside our own 0700 folder nobody else can plant anything, so only that one is checked.
    private_dir(c.files_dir)
        .and_then(|()| std::fs::create_dir_all(&dir))
        .map_err(|e| ClientError::Other(format!("cannot use {}: {e}", dir.display())))?;
    let dest = dir.join(crate::util::filename::sanitize_filename(filename));
    let size = c.rest.download(&path, &dest)?;
    Ok(ToolResult::text(format!("Saved {filename} ({} KB) to {}", size.div_ceil(1024), dest.display())))
}

/// `get_recording`: the session's GIF saved beside its files, and shown when small.
pub fn get_recording(c: &Call<'_>) -> Outcome {
    let id = c.session();
    let dir = c.files_dir.join(crate::util::filename::sanitize_filename(&id));
    private_dir(c.files_dir)
        .and_then(|()| std::fs::create_dir_all(&dir))
        .map_err(|e| ClientError::Other(format!("cannot use {}: {e}", dir.display())))?;
    let dest = dir.join("recording.gif");
    let size = c.rest.download(&format!("/sessions/{id}/recording"), &dest)?;
    let mut content =
        vec![Content::Text { text: format!("Saved the recording ({} KB) to {}", size.div_ceil(1024), dest.display()) }];
    if size <= RECORDING_INLINE_MAX {
        let bytes =
            std::fs::read(&dest).map_err(|e| ClientError::Other(format!("cannot read {}: {e}", dest.display())))?;
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
        content.push(Content::Image { data, mime_type: "image/gif".into() });
    }
    Ok(ToolResult { content, is_error: false })
}

/// Create `dir` (0700) if needed and make sure it is a real folder of ours: the default lives
/// in the shared /tmp, where another user could have put a folder or a symlink first.
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != me {
        return Err(std::io::Error::other("not a folder owned by this user"));
    }
    Ok(())
}

/// Why a wait ends, if it does now.
fn wait_over(s: &Value, first_status: &Value, deadline: Instant, cancelled: bool) -> Option<&'static str> {
    if !is_active(s) {
        Some("ended")
    } else if !s["confirmation_pending"].is_null() {
        Some("confirmation pending: answer with respond_confirmation")
    } else if s["question_pending"].is_object() {
        Some("question pending: answer with answer_question")
    } else if s["status"] != *first_status {
        Some("status changed")
    } else if Instant::now() >= deadline {
        Some("still running; call wait_for_session again")
    } else if cancelled {
        Some("cancelled")
    } else {
        None
    }
}

/// Return on a status change, a new pending confirmation, the end, or after the timeout.
pub fn wait_for_session(c: &Call<'_>) -> Outcome {
    let id = c.session();
    let limit = Duration::from_secs(c.args["timeout_s"].as_u64().unwrap_or(50)).min(WAIT_MAX);
    let deadline = Instant::now() + limit;
    let start = c.rest.get(&format!("/sessions/{id}"))?;
    let first_status = start["status"].clone();
    let mut current = Some(start);
    let log = c.rest.get(&format!("/sessions/{id}/log"))?;
    let mut after = log["next"].as_u64().unwrap_or(0).saturating_sub(5);
    let mut lines = String::new();
    let (state, why) = loop {
        let s = match current.take() {
            Some(s) => s,
            None => c.rest.get(&format!("/sessions/{id}"))?,
        };
        if let Some(why) = wait_over(&s, &first_status, deadline, c.cancelled.load(Ordering::Acquire)) {
            break (s, why);
        }
        let left = deadline.saturating_duration_since(Instant::now()).as_secs().clamp(1, 5);
        let page = c.rest.get(&format!("/sessions/{id}/log?after={after}&wait={left}"))?;
        for e in page["entries"].as_array().into_iter().flatten() {
            lines.push_str(&format!("[{}] {}\n", e["type"].as_str().unwrap_or(""), e["text"].as_str().unwrap_or("")));
        }
        after = page["next"].as_u64().unwrap_or(after);
    };
    Ok(ToolResult::text(wait_text(&state, why, &lines)))
}

fn wait_text(state: &Value, why: &str, lines: &str) -> String {
    let mut text = format!("{}: {why}\n", state["status"].as_str().unwrap_or(""));
    if let Some(conf) = state["confirmation_pending"].as_object() {
        text.push_str(&format!("confirmation: {}\n", pretty(&Value::Object(conf.clone()))));
    }
    if let Some(q) = state["question_pending"]["question"].as_str() {
        text.push_str(&format!("question: {q}\n"));
    }
    for key in ["summary", "error"] {
        if let Some(v) = state[key].as_str() {
            text.push_str(&format!("{key}: {v}\n"));
        }
    }
    text.push_str(&format!("turn {}/{}, {} file(s)\n", state["turn"], state["max_turns"], state["files"]));
    if !lines.is_empty() {
        text.push_str("recent log:\n");
        text.push_str(lines);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, one, server, server_with, text};
    use serde_json::json;

    #[test]
    fn pause_act_and_resume_send_what_the_routes_take() {
        let (server, fake, rx) = server();
        let r = one(&server, &rx, call("pause_session", json!({"session_id": "s1"})));
        assert!(text(&r).starts_with("Pausing s1: it waits after the step in flight"), "{r}");
        let input = json!({"selector": "#go"});
        let r = one(&server, &rx, call("act", json!({"session_id": "s1", "tool": "browser_click", "input": input})));
        assert!(text(&r).contains("\"session_id\": \"s2\""), "another shape comes as it is, pretty: {r}");
        one(&server, &rx, call("act", json!({"session_id": "s1", "tool": "browser_snapshot"})));
        one(&server, &rx, call("resume_session", json!({"session_id": "s1", "note": "logged in"})));
        let r = one(&server, &rx, call("resume_session", json!({"session_id": "s1"})));
        assert_eq!(text(&r), "Resumed s1. Call wait_for_session to follow it.");
        let bodies: Vec<(String, serde_json::Value)> =
            fake.seen.lock().unwrap().iter().map(|(_, path, body)| (path.clone(), body.clone())).collect();
        assert_eq!(
            bodies,
            [
                ("/sessions/s1/pause".to_string(), json!({})),
                ("/sessions/s1/act".to_string(), json!({"tool": "browser_click", "input": {"selector": "#go"}})),
                ("/sessions/s1/act".to_string(), json!({"tool": "browser_snapshot", "input": {}})),
                ("/sessions/s1/resume".to_string(), json!({"note": "logged in"})),
                ("/sessions/s1/resume".to_string(), json!({})),
            ]
        );
        let r = one(&server, &rx, call("act", json!({"session_id": "s1", "tool": "x", "input": "not an object"})));
        assert_eq!(r["result"]["isError"], true, "the schema wants an object");
    }

    #[test]
    fn an_acts_result_is_its_text_and_a_failure_a_tool_error() {
        let answer = |failed: bool| {
            move |_: &str, _: &str, _: &serde_json::Value| {
                Ok(json!({"tool": "browser_click", "by": "human", "is_error": failed, "result": "clicked #go",
                    "screenshot": "step_0004.png"}))
            }
        };
        let (server, _, rx) = server_with(Box::new(answer(false)));
        let r = one(&server, &rx, call("act", json!({"session_id": "s1", "tool": "browser_click"})));
        assert_eq!(text(&r), "clicked #go\nscreenshot: step_0004.png (get_file shows it)");
        assert_eq!(r["result"]["isError"], false);
        let (server, _, rx) = server_with(Box::new(answer(true)));
        let r = one(&server, &rx, call("act", json!({"session_id": "s1", "tool": "browser_click"})));
        assert_eq!(r["result"]["isError"], true);
    }

    #[test]
    fn a_paused_session_is_said_to_be_paused() {
        let (server, _, rx) =
            server_with(Box::new(|_, _, _| Ok(json!({"pause_requested": false, "status": "paused"}))));
        let r = one(&server, &rx, call("pause_session", json!({"session_id": "s1"})));
        assert!(text(&r).starts_with("s1 is paused."), "{r}");
    }
}
