//! Checking JSON arguments against a schema: the subset of JSON Schema the tool table and the
//! MCP server's tools use (types, enums, required and unknown properties, array items). The
//! first problem found is reported by name, for a model or an MCP client to correct.

use serde_json::Value;

/// `value` without the top-level arguments `schema` does not name, and their names. A model that
/// adds `press_enter` to a click still gets the click (the caller says what was left out).
pub fn known_arguments(schema: &Value, value: &Value) -> (Value, Vec<String>) {
    let (Some(props), Some(map)) = (schema["properties"].as_object(), value.as_object()) else {
        return (value.clone(), Vec::new());
    };
    let (known, unknown): (serde_json::Map<String, Value>, serde_json::Map<String, Value>) =
        map.clone().into_iter().partition(|(k, _)| props.contains_key(k));
    (Value::Object(known), unknown.into_iter().map(|(k, _)| k).collect())
}

/// One item where the tool takes a list of them: `{"selector": …, "value": …}` for a tool whose
/// one required argument is a list of such objects becomes that list of one (small models fill
/// one field so). `None` when the input already has the list or is not one of its items.
pub fn as_list_of_one(schema: &Value, value: &Value) -> Option<Value> {
    let required = schema["required"].as_array()?;
    let [Value::String(list)] = required.as_slice() else { return None };
    let items = &schema["properties"][list.as_str()]["items"];
    let (Some(item_props), Some(map)) = (items["properties"].as_object(), value.as_object()) else { return None };
    let fits = !map.is_empty() && !map.contains_key(list.as_str()) && map.keys().all(|k| item_props.contains_key(k));
    fits.then(|| serde_json::json!({ list.as_str(): [value] }))
}

/// A required `path`, `url` or `filename` the call left out while the arguments the tool does not take
/// hold exactly one (a folder of it aside) (`read_file {"command": "read_file /srv/a.txt"}`: small models carry the last
/// call's shape over): the input with it moved into place, and the argument it came from.
pub fn moved_required(schema: &Value, value: &Value) -> Option<(Value, String, String)> {
    let (props, map) = (schema["properties"].as_object()?, value.as_object()?);
    let required = schema["required"].as_array()?;
    let wanted = required.iter().filter_map(Value::as_str).find(|r| !map.contains_key(*r))?;
    let fits = |token: &&str| match wanted {
        "path" => token.starts_with('/'),
        "url" => token.starts_with("http://") || token.starts_with("https://"),
        // A bare file name (`save_file {"name": "answer.txt", …}`).
        "filename" => {
            let name = token.trim_matches(['"', '\'', '`']);
            !name.contains('/')
                && name.rsplit_once('.').is_some_and(|(stem, ext)| {
                    let ext_ok = ext.starts_with(|c: char| c.is_ascii_alphabetic())
                        && ext.chars().all(|c| c.is_ascii_alphanumeric());
                    !stem.is_empty() && (1..=4).contains(&ext.len()) && ext_ok
                })
        }
        _ => false,
    };
    let found: Vec<(&String, &str)> = map
        .iter()
        .filter(|(k, _)| !props.contains_key(*k))
        .filter_map(|(k, v)| Some((k, v.as_str()?)))
        .flat_map(|(k, v)| v.split_whitespace().filter(fits).map(move |t| (k, t)))
        .collect();
    // A folder of the one path (`cwd` beside the command that names a file in it) is not a second.
    let inside = |t: &str, u: &str| {
        u.strip_prefix(t.trim_end_matches('/')).is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
    };
    let found: Vec<_> = found.iter().filter(|(_, t)| !found.iter().any(|(_, u)| inside(t, u))).collect();
    let [(from, token)] = found.as_slice() else { return None };
    let mut fixed = value.clone();
    fixed[wanted] = Value::String(token.trim_matches(['"', '\'', '`']).to_string());
    Some((fixed, wanted.to_string(), from.to_string()))
}

/// The first way a value breaks its schema; `at` names where (`input`, a key, `key[2]`).
#[derive(Debug, thiserror::Error)]
pub enum Mismatch {
    /// The value is not of the schema's type (the type's name).
    #[error("`{at}` must be of type {expected}")]
    Type { at: String, expected: String },
    /// The value is none of the schema's `enum` (the options).
    #[error("`{at}` must be one of {}", Value::from(.options.clone()))]
    NotAnOption { at: String, options: Vec<Value> },
    /// A required property is missing or null.
    #[error("missing required `{name}` in `{at}`")]
    Missing { at: String, name: String },
    /// A property the schema does not name.
    #[error("unknown argument `{name}` in `{at}`")]
    Unknown { at: String, name: String },
}

/// Check `value` against the subset of JSON Schema our definitions use; the first problem in
/// words a model or an MCP client can act on.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Mismatch> {
    check(schema, value, "input")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), Mismatch> {
    let type_ok = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !type_ok {
        let expected = schema["type"].as_str().unwrap_or("?").to_string();
        return Err(Mismatch::Type { at: at.to_string(), expected });
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(value) {
            return Err(Mismatch::NotAnOption { at: at.to_string(), options: options.clone() });
        }
    }
    if let Some(map) = value.as_object() {
        for req in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if map.get(req).is_none_or(Value::is_null) {
                return Err(Mismatch::Missing { at: at.to_string(), name: req.to_string() });
            }
        }
        if let Some(props) = schema["properties"].as_object() {
            for (key, v) in map {
                match props.get(key) {
                    Some(sub) if !v.is_null() => check(sub, v, key)?,
                    Some(_) => {}
                    None => return Err(Mismatch::Unknown { at: at.to_string(), name: key.clone() }),
                }
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            check(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tools::Tool;
    use serde_json::json;

    #[test]
    fn validation_catches_bad_arguments() {
        let schema = Tool::BrowserDownloadBatch.spec().input_schema.to_value();
        assert!(validate(&schema, &json!({"urls": [{"url": "https://a/x.pdf"}]})).is_ok());
        assert!(validate(&schema, &json!({})).unwrap_err().to_string().contains("urls"));
        assert!(validate(&schema, &json!({"urls": [{"filename": "x"}]})).unwrap_err().to_string().contains("url"));
        assert!(validate(&schema, &json!({"urls": "x"})).unwrap_err().to_string().contains("array"));
        let schema = Tool::RequestConfirmation.spec().input_schema.to_value();
        assert!(validate(&schema, &json!({"action": "a", "description": "d", "risk_level": "extreme"})).is_err());
        assert!(validate(&schema, &json!({"action": "a", "description": "d", "bogus": 1})).is_err());
        let click = Tool::BrowserClick.spec().input_schema.to_value();
        let (known, left) = known_arguments(&click, &json!({"selector": "ref=e6", "clear": true, "press_enter": true}));
        assert_eq!(
            (known, left),
            (json!({"selector": "ref=e6"}), vec!["clear".to_string(), "press_enter".to_string()])
        );
        assert_eq!(known_arguments(&click, &json!({"selector": "a"})).1, Vec::<String>::new());
        let fill = Tool::BrowserFillForm.spec().input_schema.to_value();
        let one = json!({"selector": "ref=e6", "value": "3"});
        assert_eq!(as_list_of_one(&fill, &one), Some(json!({"fields": [one]})));
        assert_eq!(as_list_of_one(&fill, &json!({"fields": []})), None);
        assert_eq!(as_list_of_one(&fill, &json!({"selector": "a", "bogus": 1})), None);
        assert_eq!(as_list_of_one(&click, &json!({"selector": "a"})), None, "a click takes no list");
    }

    #[test]
    fn a_path_or_url_given_under_another_name_is_moved_into_place() {
        let read = Tool::ReadFile.spec().input_schema.to_value();
        let carried = json!({"command": "read_file /srv/b/notes.txt", "cwd": "/srv", "timeout_s": 15});
        let (fixed, to, from) = moved_required(&read, &carried).unwrap();
        assert_eq!((fixed["path"].as_str(), to.as_str(), from.as_str()), (Some("/srv/b/notes.txt"), "path", "command"));
        assert_eq!(moved_required(&read, &json!({"command": "cat /a /b"})), None, "two paths: no guess");
        assert_eq!(moved_required(&read, &json!({"path": "/a", "x": "/b"})), None, "nothing missing");
        let nav = Tool::BrowserNavigate.spec().input_schema.to_value();
        let (fixed, _, _) = moved_required(&nav, &json!({"link": "https://a.test/about.html"})).unwrap();
        assert_eq!(fixed["url"], "https://a.test/about.html");
        let save = Tool::SaveFile.spec().input_schema.to_value();
        let (fixed, _, _) =
            moved_required(&save, &json!({"command": "save_file answer.txt", "content": "45"})).unwrap();
        assert_eq!(fixed["filename"], "answer.txt");
        assert_eq!(
            moved_required(&save, &json!({"command": "save_file a.md x.y.z", "content": "1"})),
            None,
            "two names"
        );
        let (fixed, _, _) = moved_required(&save, &json!({"command": "save_file 1.5 a.md", "content": "1"})).unwrap();
        assert_eq!(fixed["filename"], "a.md", "a number is no file name");
    }

    #[test]
    fn guard_argument_repair_fires_on_a_list_of_one_a_moved_url_and_unknown_keys() {
        let fill = Tool::BrowserFillForm.spec().input_schema.to_value();
        assert!(as_list_of_one(&fill, &json!({"selector": "ref=e2", "value": "lamp"})).is_some());
        let nav = Tool::BrowserNavigate.spec().input_schema.to_value();
        assert!(moved_required(&nav, &json!({"href": "https://shop.test/search?q=lamp"})).is_some());
        let click = Tool::BrowserClick.spec().input_schema.to_value();
        assert_eq!(known_arguments(&click, &json!({"selector": "ref=e3", "wait": 2})).1, ["wait"]);
    }

    #[test]
    fn guard_argument_repair_is_quiet_on_well_formed_calls() {
        let calls = [
            (Tool::BrowserFillForm, json!({"fields": [{"selector": "ref=e2", "value": "lamp"}]})),
            (Tool::BrowserNavigate, json!({"url": "https://shop.test/search?q=lamp"})),
            (Tool::BrowserClick, json!({"selector": "ref=e3"})),
            (Tool::RunCommand, json!({"command": "grep -c ERROR /srv/app.log", "timeout_s": 30})),
            (Tool::SaveFile, json!({"filename": "answer.txt", "content": "42"})),
        ];
        for (tool, input) in calls {
            let schema = tool.spec().input_schema.to_value();
            assert_eq!(as_list_of_one(&schema, &input), None, "{input}");
            assert_eq!(moved_required(&schema, &input), None, "{input}");
            assert_eq!(known_arguments(&schema, &input), (input.clone(), Vec::new()), "{input}");
        }
    }
}
