//! A target tool's answer: its JSON tree, with at most one large member kept as the text the
//! worker sent.
//!
//! A parsed tree of many small objects costs about 30 times its text (a map per object), so a
//! result over `BULK_BYTES` keeps its largest array or object member as text (`Bulk`); every
//! other member, and every member the controller reads (`READ_MEMBERS`), is parsed as before.
//! The bulk is written back verbatim where the result becomes text (`Answer::text`), scrubbed
//! as text, and parsed only by a caller that needs the whole tree (`Answer::into_tree`).
//! Text with `\u` or `\/` escapes is parsed whole: a secret written that way would not be
//! found by a scrub of the text.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Results shorter than this are parsed whole (what a tree costs there is not worth a second path).
pub const BULK_BYTES: usize = 1 << 20;
/// The smallest member worth keeping as text.
const BULK_MEMBER_BYTES: usize = 64 << 10;
/// Container members the controller reads from a result: never kept as text.
const READ_MEMBERS: &[&str] =
    &["acted_on", "changed", "changes", "needs_approval", "read_as", "refused", "sign_in", "submit_held"];

/// One member of a result kept as the JSON text the worker sent.
#[derive(Debug)]
pub struct Bulk {
    pub key: String,
    pub text: Box<RawValue>,
}

/// What a target tool answered.
#[derive(Debug)]
pub struct Answer {
    /// The result, without the bulk member when there is one.
    pub tree: Value,
    pub bulk: Option<Bulk>,
}

impl From<Value> for Answer {
    fn from(tree: Value) -> Answer {
        Answer { tree, bulk: None }
    }
}

impl Answer {
    /// The worker's `data` as sent: parsed whole, or with its largest container kept as text.
    pub fn from_raw(raw: &RawValue) -> Result<Answer, serde_json::Error> {
        let text = raw.get();
        if text.len() < BULK_BYTES || !text.starts_with('{') {
            return serde_json::from_str::<Value>(text).map(Answer::from);
        }
        let members: BTreeMap<String, &RawValue> = serde_json::from_str(text)?;
        let bulk_key = members
            .iter()
            .filter(|(key, raw)| keepable(key, raw.get()))
            .max_by_key(|(_, raw)| raw.get().len())
            .map(|(key, _)| key.clone());
        let mut tree = Map::new();
        let mut bulk = None;
        for (key, member) in members {
            if bulk_key.as_ref() == Some(&key) {
                bulk = Some(Bulk { key, text: member.to_owned() });
            } else {
                tree.insert(key, serde_json::from_str(member.get())?);
            }
        }
        Ok(Answer { tree: Value::Object(tree), bulk })
    }

    /// The whole tree, the bulk parsed back in (for a caller that reads every member).
    pub fn into_tree(self) -> Value {
        let Answer { mut tree, bulk } = self;
        if let (Some(bulk), Some(map)) = (bulk, tree.as_object_mut()) {
            let member = serde_json::from_str(bulk.text.get()).unwrap_or(Value::Null);
            map.insert(bulk.key, member);
        }
        tree
    }

    /// The result as compact JSON text followed by `tail`: the tree's members serialized, the
    /// bulk's text as it came, in the order a parsed tree would have them.
    pub fn text(&self, tail: &str) -> String {
        let Some(bulk) = &self.bulk else { return exact_json(&self.tree, tail) };
        let empty = Map::new();
        let map = self.tree.as_object().unwrap_or(&empty);
        // The small members first, so the text is allocated once at its size.
        let mut members: Vec<(&str, String)> = map.iter().map(|(k, v)| (k.as_str(), exact_json(v, ""))).collect();
        let at = members.partition_point(|(k, _)| *k < bulk.key.as_str());
        members.insert(at, (bulk.key.as_str(), String::new()));
        let size = members.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>() + bulk.text.get().len();
        let mut out = String::with_capacity(size + tail.len() + 2);
        out.push('{');
        for (i, (key, value)) in members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&quoted(key));
            out.push(':');
            out.push_str(if i == at { bulk.text.get() } else { value });
        }
        out.push('}');
        out.push_str(tail);
        out
    }
}

/// A member worth keeping as text: large, an array or an object, not read by the controller,
/// and written without the escapes a scrub of the text would miss.
fn keepable(key: &str, text: &str) -> bool {
    text.len() >= BULK_MEMBER_BYTES
        && text.starts_with(['[', '{'])
        && !READ_MEMBERS.contains(&key)
        && !text.contains("\\u")
        && !text.contains("\\/")
}

fn quoted(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
}

/// The length of `v`'s compact JSON text, counted without writing it.
pub fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

/// `value` as JSON text followed by `tail`, in a string of exactly that size: a large result
/// grown by doubling would take up to twice its size (measured twice instead: a count, then
/// the text).
pub fn exact_json(value: &Value, tail: &str) -> String {
    let mut out = Vec::with_capacity(json_len(value) + tail.len());
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(tail.as_bytes());
    // serde_json writes valid UTF-8, and `tail` is a str.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: &Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(v).unwrap()
    }

    fn big() -> Value {
        let items: Vec<Value> = (0..60_000).map(|i| json!({"id": i, "v": "abcdefgh"})).collect();
        json!({"count": 60_000, "items": items, "acted_on": {"ref": "e1"}, "zeta": "z"})
    }

    #[test]
    fn a_small_result_is_a_tree() {
        let v = json!({"items": [1, 2, 3], "count": 3});
        let answer = Answer::from_raw(&raw(&v)).unwrap();
        assert!(answer.bulk.is_none());
        assert_eq!(answer.tree, v);
    }

    #[test]
    fn a_large_result_keeps_its_largest_container_as_text_and_writes_the_same_json() {
        let v = big();
        let answer = Answer::from_raw(&raw(&v)).unwrap();
        assert_eq!(answer.bulk.as_ref().map(|b| b.key.as_str()), Some("items"));
        assert_eq!(answer.tree["acted_on"], json!({"ref": "e1"}), "read members stay parsed");
        assert_eq!(answer.text("\ntail"), format!("{}\ntail", exact_json(&v, "")));
        assert_eq!(answer.into_tree(), v);
    }

    #[test]
    fn escapes_a_scrub_would_miss_keep_the_tree() {
        let mut v = big();
        v["items"][7]["v"] = json!("\u{1}");
        let answer = Answer::from_raw(&raw(&v)).unwrap();
        assert!(answer.bulk.is_none(), "a \\u escape: parsed whole");
        assert_eq!(answer.tree, v);
    }

    #[test]
    fn a_read_member_is_never_the_bulk() {
        let items: Vec<Value> = (0..60_000).map(|i| json!({"id": i})).collect();
        let v = json!({"changes": items.clone(), "other": items[..10]});
        let answer = Answer::from_raw(&raw(&v)).unwrap();
        assert!(answer.bulk.is_none());
        assert_eq!(answer.tree, v);
    }
}
