//! Property tests of every parser of outside input, run on generated inputs: arbitrary bytes
//! and text, and near-valid inputs (valid examples with random edits, JSON built from each
//! shape's own keys) so that the deep code is reached, not only the first check.
//!
//! Each parser runs `FUZZ_CASES` cases (a short run by default, in `make test`; `make fuzz`
//! runs 100 000 each and prints the count per parser). A panic is a failure, shrunk to the
//! smallest input that shows it; where a parser promises more than "no panic" (a sanitizer's
//! invariants, a round trip, a typed error) that is asserted too.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use std::fmt::Debug;
use std::time::Instant;

mod bodies;
mod config;
mod heads;
mod mcp;
mod models;
mod names;
mod uploads;

/// Cases per parser when `FUZZ_CASES` is not set: a few seconds in all, in a debug build.
const DEFAULT_CASES: u32 = 300;

fn cases() -> u32 {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CASES)
}

/// Run `test` on `cases()` values of `strategy`; report the count (seen with `--nocapture`).
pub fn fuzz<S>(parser: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let config = Config { cases: cases(), failure_persistence: None, max_shrink_iters: 4096, ..Config::default() };
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    let start = Instant::now();
    if let Err(e) = runner.run(&strategy, test) {
        panic!("fuzz {parser}: {e}");
    }
    eprintln!("fuzz {parser}: {cases} cases, 0 failures, {:.1} s", start.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// Pieces that make parsers take their rare paths: delimiters, escapes, huge and negative
/// numbers, separators, controls, bidi and multi-byte characters.
const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "-1",
    "0",
    "1e999",
    "-0.0",
    "18446744073709551616",
    "4294967296",
    "\\u0000",
    "\\ud800",
    "\\",
    "\r\n",
    "\n",
    "\0",
    "--",
    "/",
    "..",
    "%",
    "%00",
    "%2F",
    "%zz",
    "+",
    "=",
    "&",
    "?",
    ";",
    "#",
    "'",
    "é",
    "\u{202E}",
    "\u{FEFF}",
    "\u{2215}",
    "```",
    "<tool_call>",
    "</tool_call>",
    "{{",
    "}}",
    "$",
    "$..",
    "[*]",
    "~",
    "!",
    "|",
    "- ",
    ": ",
    "  ",
    "\t",
];

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub enum Edit {
    Delete(Index, u8),
    Insert(Index, Vec<u8>),
    Token(Index, usize),
    Flip(Index, u8),
    Duplicate(Index, u8),
    Truncate(Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 1u8..16).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), 0..TOKENS.len()).prop_map(|(i, t)| Edit::Token(i, t)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<Index>(), 1u8..32).prop_map(|(i, n)| Edit::Duplicate(i, n)),
        any::<Index>().prop_map(Edit::Truncate),
    ]
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let at = |i: &Index, len: usize| i.index(len + 1);
        match e {
            Edit::Delete(i, n) => {
                let s = at(i, bytes.len());
                let end = (s + *n as usize).min(bytes.len());
                bytes.drain(s..end);
            }
            Edit::Insert(i, b) => {
                let s = at(i, bytes.len());
                bytes.splice(s..s, b.iter().copied());
            }
            Edit::Token(i, t) => {
                let s = at(i, bytes.len());
                bytes.splice(s..s, TOKENS[*t].bytes());
            }
            Edit::Flip(i, b) if !bytes.is_empty() => {
                let s = i.index(bytes.len());
                bytes[s] ^= b | 1;
            }
            Edit::Duplicate(i, n) => {
                let s = at(i, bytes.len());
                let end = (s + *n as usize).min(bytes.len());
                let copy = bytes[s..end].to_vec();
                bytes.splice(end..end, copy);
            }
            Edit::Truncate(i) => bytes.truncate(at(i, bytes.len())),
            Edit::Flip(..) => {}
        }
    }
    bytes
}

/// One of `examples` with 1 to 4 random edits.
pub fn mutated(examples: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (prop::sample::select(examples), prop::collection::vec(edit(), 1..5)).prop_map(|(b, e)| apply(b, &e))
}

/// Any bytes, short and sometimes long.
pub fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..64),
        1 => prop::collection::vec(any::<u8>(), 0..4096),
    ]
}

/// Text made of tokens, ASCII and any characters: closer to what parsers split on than
/// uniform Unicode.
pub fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => (0..TOKENS.len()).prop_map(|t| TOKENS[t].to_string()),
        3 => "[ -~]{0,8}",
        2 => any::<String>(),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

/// Arbitrary input to a text parser: text, lossy bytes, or a mutated example.
pub fn text_input(examples: &[&str]) -> impl Strategy<Value = String> + use<> {
    let examples: Vec<Vec<u8>> = examples.iter().map(|e| e.as_bytes().to_vec()).collect();
    prop_oneof![
        2 => text(),
        1 => bytes().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        4 => mutated(examples).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// JSON leaves: the edge numbers, and strings from `words` or anywhere.
fn leaf(words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let edge = [json!(0), json!(-1), json!(u32::MAX), json!(u64::MAX), json!(i64::MIN), json!(1.5), json!(-1e300)];
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => prop::sample::select(edge.to_vec()),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>().prop_map(Value::from),
        3 => prop::sample::select(words).prop_map(Value::from),
        2 => text().prop_map(Value::String),
    ]
}

/// JSON whose object keys come from `keys` (a shape's own field names, mostly) and whose
/// strings come from `words`: decoders get past "unknown field" to the checks behind it.
pub fn json_like(keys: &'static [&'static str], words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let key = prop_oneof![8 => prop::sample::select(keys).prop_map(str::to_string), 1 => "[a-z_]{1,12}"];
    leaf(words).prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            3 => prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// An object with some of `keys`: the top level of a request body.
pub fn json_object(keys: &'static [&'static str], words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(keys), json_like(keys, words)), 0..10)
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

/// JSON bodies for a decoder: structured objects, their text mutated, and arbitrary bytes.
pub fn json_body(
    keys: &'static [&'static str],
    words: &'static [&'static str],
    examples: &[Value],
) -> impl Strategy<Value = Vec<u8>> + use<> {
    let examples: Vec<Vec<u8>> = examples.iter().map(|e| e.to_string().into_bytes()).collect();
    prop_oneof![
        4 => json_object(keys, words).prop_map(|v| v.to_string().into_bytes()),
        4 => mutated(examples),
        1 => bytes(),
    ]
}
