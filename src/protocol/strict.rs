//! Request bodies read strictly: a JSON array where an object is expected is refused.
//!
//! serde's derived structs also accept their fields as a list in order, so without this
//! `options.budget: [5, 2.5, 9]` would read as `{tokens: 5, usd: 2.5, seconds: 9}` and a whole
//! body `["task", "https://…"]` as a session. `from_value` deserializes from a parsed JSON value
//! the same way serde_json does, except that every struct must be an object; the refusal names
//! the key (`options.budget`). API request bodies, schedule definitions and their session
//! bodies are read through it; worker messages, which are tolerant by design, are not.

use serde::de::{self, DeserializeOwned, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Error, Value};

/// `value` as `T`, every struct in it an object.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, Error> {
    T::deserialize(Strict { value, path: String::new() })
}

/// A value and where it is in the body (`options.budget`, `fields[2]`).
struct Strict<'de> {
    value: &'de Value,
    path: String,
}

impl<'de> de::Deserializer<'de> for Strict<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visitor.visit_seq(Items { iter: items.iter().enumerate(), path: self.path }),
            Value::Object(map) => visitor.visit_map(Fields { iter: map.iter(), next: None, path: self.path }),
            scalar => scalar.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(_) => self.deserialize_any(visitor),
            // No "invalid type: " prefix: the API's error text keeps this one whole (no value in it).
            Value::Array(_) => {
                let place = if self.path.is_empty() { "the body".to_string() } else { format!("`{}`", self.path) };
                Err(Error::custom(format!("{place} must be a JSON object, not an array")))
            }
            // What serde_json says of a scalar (its value is left out of the API's answer).
            scalar => scalar.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.value.deserialize_enum(name, variants, visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Items<'de> {
    iter: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    path: String,
}

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.iter.next() {
            Some((i, value)) => seed.deserialize(Strict { value, path: format!("{}[{i}]", self.path) }).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct Fields<'de> {
    iter: serde_json::map::Iter<'de>,
    next: Option<(&'de String, &'de Value)>,
    path: String,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.iter.next() else { return Ok(None) };
        self.next = Some((key, value));
        seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, value) = self.next.take().ok_or_else(|| Error::custom("a value without its key"))?;
        let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
        seed.deserialize(Strict { value, path })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CreateSessionRequest;
    use serde_json::json;

    fn create(body: Value) -> Result<CreateSessionRequest, Error> {
        from_value(&body)
    }

    #[test]
    fn an_array_is_no_struct_anywhere_and_the_key_is_named() {
        let ok =
            create(json!({"mode": "task", "target": "x", "instruction": "i", "options": {"budget": {"tokens": 5}}}));
        assert_eq!(ok.ok().and_then(|r| r.options).and_then(|o| o.budget).and_then(|b| b.tokens), Some(5));
        let e =
            create(json!({"mode": "task", "target": "x", "options": {"budget": [5, 2.5, 9]}})).unwrap_err().to_string();
        assert_eq!(e, "`options.budget` must be a JSON object, not an array");
        let e = create(json!(["task", "https://x.test", null, "go"])).unwrap_err().to_string();
        assert_eq!(e, "the body must be a JSON object, not an array");
        // What serde_json itself says stays as it was.
        let e = create(json!({"mode": "fly", "target": "x"})).unwrap_err().to_string();
        assert!(e.contains("unknown variant `fly`"), "{e}");
        let e = create(json!({"mode": "task", "target": 5})).unwrap_err().to_string();
        assert!(e.starts_with("invalid type: integer `5`, expected a string"), "{e}");
        let e = create(json!({"mode": "task", "target": "x", "surprise": 1})).unwrap_err().to_string();
        assert!(e.contains("unknown field `surprise`"), "{e}");
        // Lists and free JSON are still read as such.
        let v: Value = from_value(&json!({"a": [1, {"b": null}], "c": 1.5})).unwrap_or_default();
        assert_eq!(v, json!({"a": [1, {"b": null}], "c": 1.5}));
    }
}
