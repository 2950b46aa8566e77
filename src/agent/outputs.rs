//! Stored tool outputs and the five tools that traverse them.
//!
//! A worker result longer than `agent.max_tool_output_chars` is not put into the context: it is
//! stored in the session's `tool_outputs/` and the model gets `{persisted, id, size_chars,
//! preview, stats, available_tools}`, where `stats` is the output's shape with example paths.
//! The first time that happens the five `tool_outputs_*` tools are added to the session's tools.
//! They read JSON by JSONPath (RFC 9535, `serde_json_path`) and text by line range and
//! substring; what they answer is itself bounded by the same limit, saying what was left out.
//! A query that cannot be answered is a `QueryError`; the model gets its words.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::ToolDef;
use crate::protocol::tools::{OUTPUT_TOOLS, Tool};
use serde_json::{Value, json};
use serde_json_path::JsonPath;

mod bounds;
mod shape;

use shape::Sketch;

/// Characters of a stored output shown as its preview.
const PREVIEW_CHARS: usize = 1500;
/// Keys of an object described in stats, and example paths offered.
const KEYS: usize = 30;
const EXAMPLES: usize = 6;
const DEFAULT_SAMPLE: usize = 5;

/// The start and the end of a long text (the end is where errors and totals usually are).
fn head_and_tail(text: &str, size: usize) -> String {
    if size <= PREVIEW_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(PREVIEW_CHARS * 2 / 3).collect();
    let tail: String = text.chars().skip(size - PREVIEW_CHARS / 3).collect();
    format!("{head}\n… [{} characters not shown] …\n{tail}", size - PREVIEW_CHARS)
}

impl Agent {
    /// An output too long for the context: stored, and described for the model (`stats`: the
    /// tree the text was written from, so it is never parsed back, or how to read the text).
    /// What the controller says is a JSON line; what comes from the output (its preview, and
    /// its shape: first lines, keys, example paths) follows between the markers, on lines of
    /// its own.
    pub(super) fn persist_output(&mut self, tool: &str, text: &str, stats: Stats) -> String {
        let size = text.chars().count();
        let preview = self.boundary.wrap(&head_and_tail(text, size));
        // Described before it is saved: the tree is gone by then.
        let (stats, example) = match stats {
            Stats::Tree(v) if v.is_object() || v.is_array() => Sketch::of(&v).stats(),
            Stats::Parse => match Sketch::read(text) {
                Some(sketch) => sketch.stats(),
                None => (text_stats(text), None),
            },
            _ => (text_stats(text), None),
        };
        let id = match self.runner.save_tool_output(tool, text) {
            Ok(id) => id,
            Err(e) => {
                return format!(
                    "{preview}\n… [output truncated: {size} characters in all; cannot store the output: {e}]"
                );
            }
        };
        self.offer_output_tools();
        // An example path is made of the output's keys: it is named, not quoted.
        let how = match example {
            Some(_) => format!(
                "tool_outputs_extract {{\"id\": \"{id}\", \"path\": …}} with the first of the example_paths below"
            ),
            None => {
                format!("tool_outputs_extract {{\"id\": \"{id}\", \"contains\": \"word\"}} or {{\"lines\": \"1-50\"}}")
            }
        };
        let said = json!({
            "persisted": true, "id": id, "size_chars": size,
            "available_tools": OUTPUT_TOOLS.iter().map(|t| t.name()).collect::<Vec<_>>(),
            "next": format!("The output was too long to show; it is stored. Its preview and its shape follow. \
                             Read the part you need, e.g. {how}"),
        });
        format!("{said}\nPreview:\n{preview}\nShape:\n{}", self.boundary.wrap(&stats.to_string()))
    }

    fn offer_output_tools(&mut self) {
        for t in OUTPUT_TOOLS {
            if !self.offered.contains(&t) {
                let spec = t.spec();
                self.offered.push(t);
                self.tools.push(ToolDef {
                    name: t.name(),
                    description: spec.description,
                    input_schema: spec.input_schema.to_value(),
                });
            }
        }
    }

    /// The handler of the five `tool_outputs_*` tools.
    pub(super) fn output_tool(&mut self, tool: Tool, input: &Value) -> ToolOutcome {
        let stored = self.runner.tool_outputs();
        if tool == Tool::ToolOutputsList {
            let list: Vec<Value> = stored.iter().map(|(id, size)| self.describe_output(id, *size)).collect();
            return ToolOutcome::ok(json!({"outputs": list}));
        }
        let id = input["id"].as_str().unwrap_or("");
        let Some(text) = self.runner.read_tool_output(id) else {
            let ids: Vec<&str> = stored.iter().map(|(id, _)| id.as_str()).collect();
            return ToolOutcome::error(format!("no stored output `{id}`; stored: {}", ids.join(", ")));
        };
        let max = self.runner.config().agent.max_tool_output_chars;
        match answer(tool, &text, input, max) {
            // What the target gave, read back: data between the markers like the first time.
            Ok(v) => ToolOutcome::blocks(vec![crate::llm::Block::text(self.boundary.wrap(&v.to_string()))]),
            Err(e) => ToolOutcome::error(e.to_string()),
        }
    }

    fn describe_output(&self, id: &str, size: u64) -> Value {
        let tool = id.splitn(3, '_').nth(2).unwrap_or("");
        let kind = match self.runner.read_tool_output(id).as_deref().and_then(parse) {
            Some(_) => "json",
            None => "text",
        };
        json!({"id": id, "tool": tool, "size_bytes": size, "kind": kind})
    }
}

/// Why a query of a stored output has no answer; the model is told in these words.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A path was given for an output that is text.
    #[error("this output is text, not JSON: use `lines` and `contains` instead of `path`")]
    NotJson,
    /// The path is refused before it runs (too long, too deep, too costly).
    #[error(transparent)]
    Refused(#[from] bounds::Refused),
    /// The path is no JSONPath: the path, and the parser's reason.
    #[error("`{0}` is not a JSONPath (RFC 9535): {1}; e.g. $.items[*].name or $..price")]
    BadPath(String, #[source] serde_json_path::ParseError),
    /// `lines` is not a range like 120-160 (as given).
    #[error("`{0}` is not a line range like 120-160")]
    BadRange(String),
}

/// What `tool_outputs_stats`, `_extract`, `_count` or `_sample` answers about one stored output,
/// given the model's arguments (a JSONPath, a line range, a needle, a count); else what the
/// model is told instead.
pub fn answer(tool: Tool, text: &str, input: &Value, max: usize) -> Result<Value, QueryError> {
    match tool {
        Tool::ToolOutputsStats => Ok(match Sketch::read(text) {
            Some(sketch) => sketch.stats().0,
            None => text_stats(text),
        }),
        Tool::ToolOutputsExtract => extract(text, input, max),
        Tool::ToolOutputsCount => count(text, input),
        _ => sample(text, input, max),
    }
}

/// A stored output as JSON, when it is an object or an array.
/// What a stored output's description is made from.
pub(super) enum Stats {
    /// The tree the text is the JSON of.
    Tree(Value),
    /// Text that may be JSON (a command's output): parsed to describe it.
    Parse,
    /// Text that is not JSON as a whole (a result with a page after it).
    Text,
}

fn parse(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(|v| v.is_object() || v.is_array())
}

fn text_stats(text: &str) -> Value {
    let first: Vec<&str> = text.lines().take(3).map(|l| l.get(..l.len().min(120)).unwrap_or(l)).collect();
    json!({"kind": "text", "lines": text.lines().count(), "chars": text.chars().count(), "first_lines": first})
}

/// A stored output and the path the model gave: its nodes are selected by reference, so a
/// query that selects every subtree copies none of them.
struct Selection {
    doc: Value,
    path: Option<JsonPath>,
    /// The output is JSON (else `doc` is its text as one string).
    json: bool,
}

impl Selection {
    fn nodes(&self) -> Vec<&Value> {
        match &self.path {
            Some(path) => path.query(&self.doc).all(),
            None => vec![&self.doc],
        }
    }
}

/// What a path selects (the whole output without a path), the path checked for size and cost
/// first (`bounds`).
fn select(text: &str, path: Option<&str>) -> Result<Selection, QueryError> {
    let path = path.filter(|p| !p.trim().is_empty());
    let Some(doc) = parse(text) else {
        return match path {
            Some(_) => Err(QueryError::NotJson),
            None => Ok(Selection { doc: Value::String(text.to_string()), path: None, json: false }),
        };
    };
    let Some(path) = path else { return Ok(Selection { doc, path: None, json: true }) };
    bounds::check_path(path)?;
    let parsed = JsonPath::parse(path).map_err(|e| QueryError::BadPath(path.to_string(), e))?;
    bounds::check_cost(&doc, path)?;
    Ok(Selection { doc, path: Some(parsed), json: true })
}

/// The text the line tools work on: one string node as it is, anything else as pretty JSON,
/// at most `cap` bytes of it; and whether it was cut there.
fn as_text(nodes: &[&Value], cap: usize) -> (String, bool) {
    match nodes {
        [Value::String(s)] => (s.clone(), false),
        nodes => bounds::json_text(nodes, true, cap),
    }
}

/// Numbered lines of `text` in `range` ("a-b", 1-based) that contain `needle`.
fn lines_of(text: &str, range: Option<&str>, needle: Option<&str>) -> Result<Vec<String>, QueryError> {
    let (from, to) = match range.filter(|r| !r.trim().is_empty()) {
        Some(r) => {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            let n = |s: &str| s.trim().parse::<usize>().map_err(|_| QueryError::BadRange(r.to_string()));
            (n(a)?, n(b)?)
        }
        None => (1, usize::MAX),
    };
    let needle = needle.filter(|n| !n.is_empty()).map(str::to_lowercase);
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(i, _)| *i >= from && *i <= to)
        .filter(|(_, l)| needle.as_ref().is_none_or(|n| l.to_lowercase().contains(n)))
        .map(|(i, l)| format!("{i}: {l}"))
        .collect())
}

/// Values as JSON within `max` characters, counting what did not fit; a first value too long
/// for them all is cut (its text up to there, as a string).
fn bounded(items: &[&Value], max: usize) -> Value {
    let (mut kept, mut used, mut cut) = (Vec::new(), 2, false);
    for item in items {
        let (text, long) = bounds::json_text(&[item], false, max.saturating_sub(used).max(1));
        if long {
            if kept.is_empty() {
                kept.push(Value::String(format!("{text}…")));
                cut = true;
            }
            break;
        }
        used += text.len() + 1;
        kept.push((*item).clone());
    }
    let total = items.len();
    let mut out = json!({"matched": total, "items": kept});
    if cut {
        out["cut"] = json!(format!("the first item is cut at {max} characters: use a narrower path or `lines`"));
    }
    let shown = if cut { 0 } else { kept_len(&out) };
    if shown < total {
        out["left_out"] = json!(format!(
            "{} more not shown (the answer is limited to {max} characters): use a narrower path, `lines`, or tool_outputs_sample",
            total - shown
        ));
    }
    out
}

fn kept_len(out: &Value) -> usize {
    out["items"].as_array().map_or(0, Vec::len)
}

/// Numbered lines of a selection, and the note that its text was cut, if it was.
fn selected_lines(
    text: &str,
    nodes: &[&Value],
    range: Option<&str>,
    needle: Option<&str>,
) -> Result<(Vec<String>, bool), QueryError> {
    let (selected, cut) = as_text(nodes, bounds::text_budget(text.len()));
    Ok((lines_of(&selected, range, needle)?, cut))
}

fn extract(text: &str, input: &Value, max: usize) -> Result<Value, QueryError> {
    let selection = select(text, input["path"].as_str())?;
    let nodes = selection.nodes();
    let (range, needle) = (input["lines"].as_str(), input["contains"].as_str());
    if range.is_none() && needle.is_none() && selection.json {
        return Ok(bounded(&nodes, max));
    }
    let (lines, cut) = selected_lines(text, &nodes, range, needle)?;
    let lines: Vec<Value> = lines.into_iter().map(Value::String).collect();
    let mut out = bounded(&lines.iter().collect::<Vec<_>>(), max);
    if cut {
        out["text_cut"] = json!("the selection written out was too long and is cut: use a narrower path");
    }
    Ok(out)
}

fn count(text: &str, input: &Value) -> Result<Value, QueryError> {
    let selection = select(text, input["path"].as_str())?;
    let nodes = selection.nodes();
    match input["contains"].as_str() {
        Some(needle) => Ok(json!({"lines": selected_lines(text, &nodes, None, Some(needle))?.0.len()})),
        None if selection.json => Ok(json!({"count": nodes.len()})),
        None => Ok(json!({"lines": text.lines().count()})),
    }
}

fn sample(text: &str, input: &Value, max: usize) -> Result<Value, QueryError> {
    let n = input["n"].as_u64().map_or(DEFAULT_SAMPLE, |n| n.clamp(1, 100) as usize);
    let selection = select(text, input["path"].as_str())?;
    let mut nodes = selection.nodes();
    // One array selected: sample its items.
    if let [Value::Array(items)] = nodes.as_slice() {
        nodes = items.iter().collect();
    }
    let lines: Vec<Value>;
    if !selection.json {
        lines = lines_of(text, None, None)?.into_iter().map(Value::String).collect();
        nodes = lines.iter().collect();
    }
    let len = nodes.len();
    let picked: Vec<&Value> = (0..n.min(len)).map(|i| nodes[i * len / n.min(len)]).collect();
    let mut out = bounded(&picked, max);
    out["matched"] = json!(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_traversed_by_jsonpath_and_text_by_lines() {
        let doc = json!({"links": [{"text": "a", "url": "u1"}, {"text": "b", "url": "u2"}, {"text": "c", "url": "u3"}], "note": "x\ny"});
        let text = doc.to_string();
        let (stats, first) = Sketch::of(&doc).stats();
        assert_eq!(first.as_deref(), Some("$.links[*].text"));
        assert_eq!(stats["keys"]["links"], "array[3] of objects {text, url}");
        let got = extract(&text, &json!({"path": "$.links[*].url"}), 1000).unwrap();
        assert_eq!(got["items"], json!(["u1", "u2", "u3"]));
        assert_eq!(count(&text, &json!({"path": "$.links[?@.text != 'b']"})).unwrap()["count"], 2);
        assert_eq!(sample(&text, &json!({"path": "$.links", "n": 2}), 1000).unwrap()["items"][1]["url"], "u2");
        assert!(extract(&text, &json!({"path": "links["}), 1000).unwrap_err().to_string().contains("not a JSONPath"));
        let lines = extract(&text, &json!({"path": "$.note", "contains": "Y"}), 1000).unwrap();
        assert_eq!(lines["items"], json!(["2: y"]));
        let log = (1..=100).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        assert_eq!(
            extract(&log, &json!({"lines": "10-11"}), 1000).unwrap()["items"],
            json!(["10: line 10", "11: line 11"])
        );
        assert_eq!(count(&log, &json!({"contains": "line 1"})).unwrap()["lines"], 12);
        let capped = extract(&log, &json!({}), 100).unwrap();
        assert!(capped["left_out"].as_str().unwrap().contains("more not shown"), "{capped}");
    }
}
