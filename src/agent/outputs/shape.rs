//! A stored output's shape for its description: each top-level member's type in a few words,
//! and example paths. Read from a tree the result already is, or streamed from the text: an
//! array is counted and only its first item looked at, so describing 9 MB of small objects
//! builds no tree of them.

use super::{EXAMPLES, KEYS};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use std::fmt;

/// What the description needs of one value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape {
    /// `null`, `boolean` or `number`.
    Scalar(&'static str),
    Text {
        chars: usize,
        lines: usize,
    },
    List {
        len: usize,
        first: Option<Box<Shape>>,
    },
    /// The first `KEYS` keys.
    Record {
        keys: Vec<String>,
    },
}

/// An output's root and, when it is an object, each member's shape in its order.
pub(super) struct Sketch {
    root: Shape,
    members: Vec<(String, Shape)>,
}

impl Shape {
    pub(super) fn of(v: &Value) -> Shape {
        match v {
            Value::Null => Shape::Scalar("null"),
            Value::Bool(_) => Shape::Scalar("boolean"),
            Value::Number(_) => Shape::Scalar("number"),
            Value::String(s) => Shape::text(s),
            Value::Array(a) => Shape::List { len: a.len(), first: a.first().map(|f| Box::new(Shape::of(f))) },
            Value::Object(o) => Shape::Record { keys: o.keys().take(KEYS).cloned().collect() },
        }
    }

    fn text(s: &str) -> Shape {
        Shape::Text { chars: s.chars().count(), lines: s.lines().count() }
    }

    fn kind(&self) -> &'static str {
        match self {
            Shape::Scalar(kind) => kind,
            Shape::Text { .. } => "string",
            Shape::List { .. } => "array",
            Shape::Record { .. } => "object",
        }
    }

    /// The type in a few words: `array[3] of objects {text, url}`.
    fn words(&self) -> String {
        match self {
            Shape::Text { chars, lines } => format!("string ({chars} chars, {lines} lines)"),
            Shape::List { len, first: Some(first) } => match first.as_ref() {
                Shape::Record { keys } => format!("array[{len}] of objects {{{}}}", keys.join(", ")),
                other => format!("array[{len}] of {}", other.kind()),
            },
            Shape::List { .. } => "array[0]".into(),
            Shape::Record { keys } => format!("object {{{}}}", keys.join(", ")),
            Shape::Scalar(kind) => kind.to_string(),
        }
    }

    /// Example paths into this value at `base`.
    fn examples(&self, base: &str, out: &mut Vec<String>) {
        match self {
            Shape::List { first: Some(first), .. } => match first.as_ref() {
                Shape::Record { keys } => out.extend(keys.iter().take(2).map(|k| format!("{base}[*]{}", segment(k)))),
                _ => out.push(format!("{base}[*]")),
            },
            Shape::List { .. } => out.push(format!("{base}[*]")),
            _ => out.push(base.to_string()),
        }
    }

    /// Where an example path is worth most: arrays, then objects, then long strings.
    fn bulk_rank(&self) -> u8 {
        match self {
            Shape::List { .. } => 0,
            Shape::Record { .. } => 1,
            Shape::Text { chars, .. } if *chars > 200 => 2,
            _ => 3,
        }
    }
}

impl Sketch {
    pub(super) fn of(v: &Value) -> Sketch {
        let members = match v {
            Value::Object(o) => o.iter().map(|(k, c)| (k.clone(), Shape::of(c))).collect(),
            _ => Vec::new(),
        };
        Sketch { root: Shape::of(v), members }
    }

    /// The text's sketch, when it is a JSON object or array.
    pub(super) fn read(text: &str) -> Option<Sketch> {
        let sketch: Sketch = serde_json::from_str(text).ok()?;
        matches!(sketch.root, Shape::List { .. } | Shape::Record { .. }).then_some(sketch)
    }

    /// The description (`kind`, `root`, `keys`, `example_paths`) and the first example path.
    pub(super) fn stats(&self) -> (Value, Option<String>) {
        let mut paths = Vec::new();
        let keys = if let Shape::Record { .. } = self.root {
            let mut children: Vec<&(String, Shape)> = self.members.iter().collect();
            children.sort_by_key(|(_, c)| c.bulk_rank());
            for (k, child) in children.into_iter().take(EXAMPLES) {
                child.examples(&format!("${}", segment(k)), &mut paths);
            }
            let described: serde_json::Map<String, Value> =
                self.members.iter().take(KEYS).map(|(k, c)| (k.clone(), json!(c.words()))).collect();
            Value::Object(described)
        } else {
            self.root.examples("$", &mut paths);
            Value::Null
        };
        paths.truncate(EXAMPLES);
        let first = paths.first().cloned();
        (json!({"kind": "json", "root": self.root.words(), "keys": keys, "example_paths": paths}), first)
    }
}

/// A path segment for a key (`.name`, or `['odd key']`).
fn segment(key: &str) -> String {
    if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !key.starts_with(|c: char| c.is_ascii_digit()) {
        format!(".{key}")
    } else {
        format!("['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// Reads one value's shape: arrays are counted past their first item, objects' values skipped.
struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Shape, E> {
        Ok(Shape::Scalar("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Scalar("boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Scalar("number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Scalar("number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Scalar("number"))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Shape, E> {
        Ok(Shape::text(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let first = seq.next_element::<Shape>()?.map(Box::new);
        let mut len = usize::from(first.is_some());
        while seq.next_element::<IgnoredAny>()?.is_some() {
            len += 1;
        }
        Ok(Shape::List { len, first })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if keys.len() < KEYS {
                keys.push(key);
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(Shape::Record { keys })
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shape, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

/// Reads the root's shape and, for an object, every member's.
struct SketchVisitor;

impl<'de> Visitor<'de> for SketchVisitor {
    type Value = Sketch;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sketch, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let shape = map.next_value::<Shape>()?;
            members.push((key, shape));
        }
        let keys = members.iter().take(KEYS).map(|(k, _)| k.clone()).collect();
        Ok(Sketch { root: Shape::Record { keys }, members })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Sketch, A::Error> {
        Ok(Sketch { root: ShapeVisitor.visit_seq(seq)?, members: Vec::new() })
    }
    fn visit_unit<E: de::Error>(self) -> Result<Sketch, E> {
        Ok(Sketch { root: Shape::Scalar("null"), members: Vec::new() })
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Sketch, E> {
        self.visit_unit()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Sketch, E> {
        self.visit_unit()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Sketch, E> {
        self.visit_unit()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Sketch, E> {
        self.visit_unit()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Sketch, E> {
        self.visit_unit()
    }
}

impl<'de> Deserialize<'de> for Sketch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sketch, D::Error> {
        d.deserialize_any(SketchVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed sketch describes a text as the tree of it does (keys in the text's order,
    /// which is a tree's order for what serde_json wrote).
    #[test]
    fn the_streamed_shape_is_the_trees() {
        let docs = [
            json!({"links": [{"text": "a", "url": "u"}], "count": 1, "note": "x\ny", "empty": [], "meta": {"b": 1, "a": [1]}}),
            json!([[1, 2], [3]]),
            json!([{"id": 1}, {"id": 2, "v": "w"}]),
            json!({"s": "ä".repeat(300), "n": null, "t": true, "f": 1.5}),
        ];
        for doc in docs {
            let streamed = Sketch::read(&doc.to_string()).unwrap();
            assert_eq!(streamed.stats(), Sketch::of(&doc).stats(), "{doc}");
        }
        assert!(Sketch::read("\"just a string\"").is_none());
        assert!(Sketch::read("{\"cut\": [1, 2").is_none());
    }

    #[test]
    fn a_long_array_is_counted_past_its_first_item() {
        let items: Vec<Value> = (0..1000).map(|i| json!({"id": i, "v": "x"})).collect();
        let (stats, first) = Sketch::read(&json!({"items": items}).to_string()).unwrap().stats();
        assert_eq!(stats["keys"]["items"], "array[1000] of objects {id, v}");
        assert_eq!(first.as_deref(), Some("$.items[*].id"));
    }
}
