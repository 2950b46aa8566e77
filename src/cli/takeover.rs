//! Taking a session over from the console: `pause ID` (it waits after the step in flight),
//! `act ID TOOL JSON` (one of its worker tools, run by the person while it is paused; JSON is
//! the tool's input, an object, checked here before anything is sent) and
//! `resume ID [--note TEXT]`, through `POST /sessions/:id/pause`, `/act` and `/resume`.
//! Daemon errors are printed and exit 5 like every other command's; a tool that ran and
//! failed exits 1.

use super::client::{ApiClient, ClientError};
use super::common::{Out, exit, fail, shown};
use serde_json::{Value, json};

/// Run `pause`, `act` or `resume` for session `id` (already a path segment); `rest` is what
/// follows the id. Returns the exit code.
pub(super) fn run(command: &str, client: &ApiClient, out: &Out, id: &str, rest: &[String], note: Option<String>) -> u8 {
    let result = match command {
        "pause" => pause(client, out, id),
        "act" => match act_body(rest) {
            Ok(body) => act(client, out, id, &body),
            Err(why) => {
                eprintln!("agent-controller act: {why}");
                return exit::USAGE;
            }
        },
        _ => resume(client, out, id, note),
    };
    result.unwrap_or_else(fail)
}

fn pause(client: &ApiClient, out: &Out, id: &str) -> Result<u8, ClientError> {
    let v = client.post(&format!("/sessions/{id}/pause"), &json!({}))?;
    if out.json {
        println!("{v}");
    } else if v["status"] == "paused" {
        println!("{id} is paused already");
    } else {
        println!("paused {id}: it waits after the step in flight");
    }
    Ok(exit::FINISHED)
}

/// `TOOL JSON` as the body of `POST /act`; the JSON must be an object (the tool's input).
fn act_body(rest: &[String]) -> Result<Value, String> {
    let [tool, input] = rest else {
        return Err("give the tool and its input, e.g. act ID browser_click '{\"selector\": \"#go\"}'".into());
    };
    if tool.trim().is_empty() {
        return Err("give the tool's name, e.g. browser_click".into());
    }
    let input: Value = serde_json::from_str(input).map_err(|e| format!("the input is not JSON ({e}): {input}"))?;
    if !input.is_object() {
        return Err(format!("the input must be a JSON object of the tool's arguments, e.g. '{{}}' (got {input})"));
    }
    Ok(json!({"tool": tool, "input": input}))
}

fn act(client: &ApiClient, out: &Out, id: &str, body: &Value) -> Result<u8, ClientError> {
    // The daemon bounds the wait by the tool's own timeout, which may pass the client's usual 90 s.
    let v = client.post_waiting(&format!("/sessions/{id}/act"), body)?;
    if out.json {
        println!("{v}");
    } else {
        println!("{}", shown(&serde_json::to_string_pretty(&v).unwrap_or_default()));
    }
    Ok(if v["is_error"] == true { exit::ERROR } else { exit::FINISHED })
}

fn resume(client: &ApiClient, out: &Out, id: &str, note: Option<String>) -> Result<u8, ClientError> {
    let body = match note {
        Some(note) => json!({"note": note}),
        None => json!({}),
    };
    let v = client.post(&format!("/sessions/{id}/resume"), &body)?;
    if out.json {
        println!("{v}")
    } else {
        println!("resumed {id}")
    }
    Ok(exit::FINISHED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(args: &[&str]) -> Result<Value, String> {
        act_body(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_input_is_a_json_object() {
        assert_eq!(
            body(&["browser_click", r##"{"selector": "#go"}"##]),
            Ok(json!({"tool": "browser_click", "input": {"selector": "#go"}}))
        );
        assert_eq!(body(&["browser_snapshot", "{}"]), Ok(json!({"tool": "browser_snapshot", "input": {}})));
        assert!(body(&["browser_click", "[1]"]).unwrap_err().contains("must be a JSON object"));
        assert!(body(&["browser_click", "42"]).unwrap_err().contains("must be a JSON object"));
        assert!(body(&["browser_click", "{selector: #go}"]).unwrap_err().contains("is not JSON"));
        assert!(body(&[" ", "{}"]).unwrap_err().contains("tool's name"));
        assert!(body(&["browser_click"]).is_err());
    }
}
