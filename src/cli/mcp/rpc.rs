//! JSON-RPC 2.0 as the MCP server speaks it: one message per line, read into typed shapes
//! (`Incoming`), answered with a typed `Response`; a tool call's result is `ToolResult`.
//!
//! Reading follows the spec where clients differ: a request is a message with a string
//! `method` and an `id` that is a string or a number; with no such id it is a notification
//! (never answered); a message with an `id` and a `result` or `error` is an answer to a request
//! this server never sends (ignored). Everything else is answered with an error at once: a
//! line that is not JSON (-32700), a batch or a message without a method (-32600, with its id
//! when that id is a string or a number, else null). Params are checked per method
//! (`Request::params`): a shape that does not fit is -32602.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A request's id: a string or a number, echoed as it came. (Any other JSON is no id.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    Text(String),
}

impl Id {
    fn from_value(v: &Value) -> Option<Id> {
        match v {
            Value::Number(n) => Some(Id::Number(n.clone())),
            Value::String(s) => Some(Id::Text(s.clone())),
            _ => None,
        }
    }
}

/// One line from the client, as read.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request(Request),
    /// No id: nothing is answered.
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to a request this server never sent: ignored.
    Stray,
    /// Not a message this server can take: answered with this error.
    Invalid(Response),
}

#[derive(Debug, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    /// As sent; `{}` when absent.
    pub params: Value,
}

impl Request {
    /// The params in the method's shape; absent or `null` params read as `{}`.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, Response> {
        let params = if self.params.is_null() { Value::Object(Default::default()) } else { self.params.clone() };
        serde_json::from_value(params)
            .map_err(|e| Response::error(Some(self.id.clone()), INVALID_PARAMS, format!("invalid params: {e}")))
    }
}

/// A message's fields, each as sent: `Some(Value::Null)` for `"id": null`, `None` when absent
/// (the two differ: an answer with a null id is still an answer).
#[derive(Default, Deserialize)]
struct Fields {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Read one line (not empty).
pub fn parse(line: &str) -> Incoming {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Incoming::Invalid(Response::error(None, PARSE_ERROR, format!("parse error: {e}"))),
    };
    if msg.is_array() {
        let why = "batches are not supported; send one message per line";
        return Incoming::Invalid(Response::error(None, INVALID_REQUEST, why.into()));
    }
    // From the parsed value, so a repeated key is read as JSON reads it (the last one wins).
    let fields = if msg.is_object() { Fields::deserialize(&msg).unwrap_or_default() } else { Fields::default() };
    let id = fields.id.as_ref().and_then(Id::from_value);
    let Some(method) = fields.method.as_ref().and_then(Value::as_str) else {
        if fields.id.is_some() && (fields.result.is_some() || fields.error.is_some()) {
            return Incoming::Stray;
        }
        return Incoming::Invalid(Response::error(id, INVALID_REQUEST, "invalid request: no method".into()));
    };
    let method = method.to_string();
    let params = fields.params.unwrap_or_else(|| Value::Object(Default::default()));
    match id {
        Some(id) => Incoming::Request(Request { id, method, params }),
        None => Incoming::Notification { method, params },
    }
}

/// What the server writes: a result or an error for one request (or for none: id null).
#[derive(Debug, PartialEq, Serialize)]
pub struct Response {
    jsonrpc: &'static str,
    /// `null` for a line whose id could not be read.
    pub id: Option<Id>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Result(Value),
    Error(RpcError),
}

#[derive(Debug, PartialEq, Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl Response {
    /// The result for `id`; one that cannot be encoded is an internal error saying so.
    pub fn result(id: Id, result: &impl Serialize) -> Response {
        match serde_json::to_value(result) {
            Ok(v) => Response { jsonrpc: "2.0", id: Some(id), outcome: Outcome::Result(v) },
            Err(e) => Response::error(Some(id), INTERNAL_ERROR, format!("cannot encode the result: {e}")),
        }
    }

    pub fn error(id: Option<Id>, code: i64, message: String) -> Response {
        Response { jsonrpc: "2.0", id, outcome: Outcome::Error(RpcError { code, message }) }
    }

    /// The error code, if it is one.
    #[cfg(test)]
    pub fn code(&self) -> Option<i64> {
        match &self.outcome {
            Outcome::Error(e) => Some(e.code),
            Outcome::Result(_) => None,
        }
    }

    /// One line of compact JSON (which never holds a raw newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            let id = serde_json::to_string(&self.id).unwrap_or_else(|_| "null".into());
            let message = serde_json::to_string(&format!("cannot encode the response: {e}")).unwrap_or_default();
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{INTERNAL_ERROR},"message":{message}}}}}"#)
        })
    }
}

/// `initialize`'s params, as far as this server reads them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    #[serde(default)]
    pub protocol_version: Option<String>,
}

/// `tools/call`'s params.
#[derive(Debug, Deserialize)]
pub struct CallParams {
    pub name: String,
    /// Checked against the tool's schema; `{}` when absent.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// `notifications/cancelled`'s params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    pub request_id: Id,
}

/// `tools/call`'s result: what the tool says, and whether it failed.
#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<Content>,
    pub is_error: bool,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        /// Base64.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl ToolResult {
    pub fn text(text: String) -> ToolResult {
        ToolResult { content: vec![Content::Text { text }], is_error: false }
    }

    pub fn error(text: String) -> ToolResult {
        ToolResult { content: vec![Content::Text { text }], is_error: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid(line: &str) -> (Option<Id>, i64) {
        match parse(line) {
            Incoming::Invalid(r) => (r.id.clone(), r.code().unwrap()),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_strays() {
        let Incoming::Request(r) = parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#) else { panic!() };
        assert_eq!((r.id, r.method.as_str(), r.params), (Id::Number(7.into()), "ping", json!({})));
        let Incoming::Request(r) = parse(r#"{"id":"a","method":"x","params":[1]}"#) else { panic!() };
        assert_eq!((r.id, r.params), (Id::Text("a".into()), json!([1])));
        assert!(matches!(parse(r#"{"method":"notifications/initialized"}"#), Incoming::Notification { .. }));
        assert!(
            matches!(parse(r#"{"id":{"x":1},"method":"ping"}"#), Incoming::Notification { .. }),
            "an id that is no string or number is no id"
        );
        assert_eq!(parse(r#"{"id":7,"result":{}}"#), Incoming::Stray);
        assert_eq!(parse(r#"{"id":null,"error":1}"#), Incoming::Stray, "a null id is still there");
    }

    #[test]
    fn what_cannot_be_taken_is_answered() {
        assert_eq!(invalid("{not json"), (None, PARSE_ERROR));
        assert_eq!(invalid("[1,2]"), (None, INVALID_REQUEST));
        assert_eq!(invalid(r#"{"id":5}"#), (Some(Id::Number(5.into())), INVALID_REQUEST));
        assert_eq!(invalid(r#"{"id":[5],"method":3}"#), (None, INVALID_REQUEST));
        assert_eq!(invalid("17"), (None, INVALID_REQUEST));
        assert_eq!(invalid(r#"{"result":1}"#), (None, INVALID_REQUEST), "no id: not an answer");
    }

    #[test]
    fn params_in_the_methods_shape() {
        let req = |params: Value| Request { id: Id::Number(1.into()), method: "m".into(), params };
        let p: CallParams = req(json!({"name": "get_session"})).params().unwrap();
        assert_eq!((p.name.as_str(), p.arguments), ("get_session", json!({})));
        let bad = req(json!({"arguments": {}})).params::<CallParams>().unwrap_err();
        assert_eq!(bad.code(), Some(INVALID_PARAMS));
        assert!(req(Value::Null).params::<InitializeParams>().unwrap().protocol_version.is_none());
        let p: CancelledParams = req(json!({"requestId": "r1", "reason": "x"})).params().unwrap();
        assert_eq!(p.request_id, Id::Text("r1".into()));
    }

    #[test]
    fn responses_are_one_line_of_json_rpc() {
        let ok: Value = serde_json::from_str(&Response::result(Id::Number(2.into()), &json!({})).line()).unwrap();
        assert_eq!(ok, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        let err = Response::error(None, METHOD_NOT_FOUND, "method not found: x\ny".into()).line();
        assert!(!err.contains('\n'));
        let err: Value = serde_json::from_str(&err).unwrap();
        assert_eq!(
            err,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32601, "message": "method not found: x\ny"}})
        );
    }

    #[test]
    fn results_serialize_as_mcp_content() {
        let v = serde_json::to_value(ToolResult::error("no".into())).unwrap();
        assert_eq!(v, serde_json::json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        let image = Content::Image { data: "AA==".into(), mime_type: "image/png".into() };
        let v = serde_json::to_value(image).unwrap();
        assert_eq!(v, serde_json::json!({"type": "image", "data": "AA==", "mimeType": "image/png"}));
    }
}
