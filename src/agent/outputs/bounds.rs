//! What a model's query of a stored output may cost. The path comes from the model, and page
//! text can steer a model into sending anything: a JSONPath nested a thousand deep overflows
//! the parser's stack (an abort, which no unwinding contains), and `$..*` over a deep output
//! selects every subtree, which written out is quadratic in the output's size.
//!
//! So a path is checked before it is parsed (length, nesting), its cost before it runs (the
//! nodes its descendant segments visit), and what a query produces is written into a capped
//! buffer: past the cap the answer says how much matched and where it was cut. A refusal is a
//! `Refused`, which tells the model what to send instead.

use serde_json::Value;
use std::fmt::{self, Write};

/// The longest path accepted, in bytes.
pub(super) const MAX_PATH_BYTES: usize = 1000;
/// Brackets and parentheses open at once, at most.
pub(super) const MAX_PATH_NESTING: usize = 16;
/// Nodes a query may visit, about: the output's nodes, times its depth for each descendant
/// segment (`..`) past the first.
pub(super) const NODE_BUDGET: u64 = 2_000_000;
/// The least text the line tools may make of a selection (more for a larger output: twice its
/// size, so a whole output always fits).
const TEXT_BUDGET: usize = 4 << 20;

/// Why a model's path is not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The path is longer than `MAX_PATH_BYTES` (its length in bytes).
    Length(usize),
    /// It nests brackets and parentheses deeper than `MAX_PATH_NESTING` (how deep).
    Nesting(usize),
    /// Its descendant segments would visit more than `NODE_BUDGET` values of this output.
    Cost { descendants: usize, nodes: u64, depth: u64, cost: u64 },
}

impl std::error::Error for Refused {}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Length(len) => write!(f, "the path is {len} bytes long; at most {MAX_PATH_BYTES} are accepted"),
            Refused::Nesting(nesting) => write!(
                f,
                "the path nests brackets and parentheses {nesting} deep; at most {MAX_PATH_NESTING} are accepted"
            ),
            Refused::Cost { descendants, nodes, depth, cost } => write!(
                f,
                "`..` {descendants} time(s) over this output ({nodes} values, {depth} deep) would visit about {cost} \
                 values (at most {NODE_BUDGET}): name the steps (e.g. $.items[*].price) instead of `..`"
            ),
        }
    }
}

/// Why a path is refused before it is parsed, if it is.
pub(super) fn check_path(path: &str) -> Result<(), Refused> {
    if path.len() > MAX_PATH_BYTES {
        return Err(Refused::Length(path.len()));
    }
    let shape = scan(path);
    if shape.nesting > MAX_PATH_NESTING {
        return Err(Refused::Nesting(shape.nesting));
    }
    Ok(())
}

/// Why running `path` over `doc` would cost too much, if it would.
pub(super) fn check_cost(doc: &Value, path: &str) -> Result<(), Refused> {
    let descendants = scan(path).descendants;
    if descendants == 0 {
        return Ok(());
    }
    let (nodes, depth) = size(doc);
    let cost = (1..descendants).fold(nodes, |cost, _| cost.saturating_mul(depth));
    if cost > NODE_BUDGET {
        return Err(Refused::Cost { descendants, nodes, depth, cost });
    }
    Ok(())
}

/// How deep a path nests and how many descendant segments it has, string literals skipped.
struct Shape {
    nesting: usize,
    descendants: usize,
}

fn scan(path: &str) -> Shape {
    let (mut depth, mut shape, mut quote, mut escaped, mut dot) =
        (0usize, Shape { nesting: 0, descendants: 0 }, None, false, false);
    for c in path.chars() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[') => {
                depth += 1;
                shape.nesting = shape.nesting.max(depth);
            }
            (None, ')' | ']') => depth = depth.saturating_sub(1),
            (None, '.') if dot => shape.descendants += 1,
            _ => {}
        }
        dot = quote.is_none() && c == '.' && !dot;
    }
    shape
}

/// The number of values in `doc` and its depth, without recursion.
fn size(doc: &Value) -> (u64, u64) {
    let (mut nodes, mut deepest) = (0u64, 0u64);
    let mut stack = vec![(doc, 1u64)];
    while let Some((v, depth)) = stack.pop() {
        nodes += 1;
        deepest = deepest.max(depth);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    (nodes, deepest)
}

/// Text of at most `cap` bytes; a write past that fails, so a formatter stops there.
struct Capped {
    text: String,
    cap: usize,
    cut: bool,
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.cap - self.text.len();
        if s.len() > room {
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
            return Err(fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// The nodes as JSON text of at most `cap` bytes (through `Value`'s own `Display`, compact or
/// pretty, so no serializer is built for this), and whether it was cut there. Several nodes
/// are written as an array.
pub(super) fn json_text(nodes: &[&Value], pretty: bool, cap: usize) -> (String, bool) {
    let mut out = Capped { text: String::new(), cap, cut: false };
    let one = |out: &mut Capped, v: &Value| if pretty { write!(out, "{v:#}") } else { write!(out, "{v}") };
    let _ = match nodes {
        [single] => one(&mut out, single),
        many => (|| {
            out.write_str("[")?;
            for (i, v) in many.iter().enumerate() {
                out.write_str(if i == 0 { "\n" } else { ",\n" })?;
                one(&mut out, v)?;
            }
            out.write_str("\n]")
        })(),
    };
    (out.text, out.cut)
}

/// The most text the line tools make of a selection from an output of `len` bytes.
pub(super) fn text_budget(len: usize) -> usize {
    TEXT_BUDGET.max(len.saturating_mul(2))
}

#[cfg(test)]
mod tests {
    use super::super::{count, extract};
    use serde_json::{Value, json};

    /// On a thread with a session thread's stack (1 MiB), as the agent runs it.
    fn on_session_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new().stack_size(1024 * 1024).spawn(f).unwrap().join().unwrap()
    }

    fn nested(depth: usize) -> String {
        let mut v = json!({"a": 1, "s": "x".repeat(300)});
        for _ in 0..depth {
            v = json!({"a": v, "s": "x".repeat(300)});
        }
        v.to_string()
    }

    #[test]
    fn deep_paths_are_refused_before_they_are_parsed() {
        let doc = nested(2);
        for depth in [100_000, 1_000] {
            let path = format!("$[?{}@.a{}]", "(".repeat(depth), ")".repeat(depth));
            let err =
                on_session_stack(move || extract(&nested(2), &json!({"path": path}), 1000).unwrap_err().to_string());
            assert!(err.contains("at most 1000 are accepted"), "{err}");
        }
        let path = format!("$[?{}@.a{}]", "(".repeat(40), ")".repeat(40));
        let err = extract(&doc, &json!({"path": path}), 1000).unwrap_err().to_string();
        assert!(err.contains("41 deep; at most 16"), "{err}");
        let brackets = format!("${}", "[?@".repeat(20)) + &"]".repeat(20);
        assert!(count(&doc, &json!({"path": brackets})).unwrap_err().to_string().contains("deep; at most 16"));
        // Literals do not count, and the deepest accepted path parses on a session's stack.
        let quoted = format!("$[?@.s == '{}']", "((((".repeat(50));
        assert_eq!(count(&doc, &json!({"path": quoted})).unwrap()["count"], 0);
        let deepest = format!("$[?{}@.a{}]", "(".repeat(15), ")".repeat(15));
        let got = on_session_stack(move || count(&nested(2), &json!({"path": deepest})).unwrap());
        assert_eq!(got["count"], 1);
    }

    #[test]
    fn every_subtree_answers_with_a_count_and_a_cut() {
        // 100 deep, about 40 KB: `$..*` selects each subtree; written out whole they are ~2 MB.
        let doc = nested(100);
        assert!(doc.len() > 30_000 && doc.len() < 50_000);
        let got = extract(&doc, &json!({"path": "$..*"}), 2000).unwrap();
        assert_eq!(got["matched"], 202);
        assert!(got.to_string().len() < 3000, "{}", got.to_string().len());
        assert!(got["left_out"].as_str().unwrap().contains("more not shown"), "{got}");
        let first = extract(&doc, &json!({"path": "$.a"}), 2000).unwrap();
        assert!(first["cut"].as_str().unwrap().contains("cut at 2000"), "{first}");
        assert!(first["items"][0].as_str().unwrap().len() <= 2004);
        // Lines of every subtree: the text made of them is capped (4 MiB here), not quadratic.
        let lines = count(&doc, &json!({"path": "$..*", "contains": "\"a\""})).unwrap();
        assert!(lines["lines"].as_u64().unwrap() > 1000, "{lines}");
    }

    #[test]
    fn descendant_segments_within_a_budget() {
        // 100 deep: `..` twice visits nodes × depth, thrice × depth² — past the budget.
        let doc = nested(100);
        assert_eq!(count(&doc, &json!({"path": "$..a..a"})).unwrap()["count"], 5050);
        let err = count(&doc, &json!({"path": "$..a..a..*"})).unwrap_err().to_string();
        assert!(err.contains("would visit about"), "{err}");
        // A filter's relative query counts too; `..` inside a string does not.
        assert!(count(&doc, &json!({"path": "$..[?@..[?@..a]]"})).unwrap_err().to_string().contains("would visit"));
        assert_eq!(count(&doc, &json!({"path": "$..[?@.s == '..x..y..']"})).unwrap()["count"], 0);
        let wide: Value = (0..3000).map(|i| json!({"k": i})).collect();
        assert_eq!(count(&wide.to_string(), &json!({"path": "$..k"})).unwrap()["count"], 3000);
    }
}
