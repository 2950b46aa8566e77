//! The table entries of the five tools that traverse stored tool outputs. They run in the
//! controller and are offered to no mode × type set up front: the agent adds them to a session
//! the first time one of its outputs is stored (so small models see five tools fewer until then).

use super::{Sets, Spec, Tool, local, obj};

/// Offered to no session from the start; the agent adds them when it stores an output.
const ONCE_STORED: Sets = Sets { explore: &[], task: &[] };

/// The tools, in the order the agent adds them.
pub const OUTPUT_TOOLS: [Tool; 5] = [
    Tool::ToolOutputsList,
    Tool::ToolOutputsStats,
    Tool::ToolOutputsExtract,
    Tool::ToolOutputsCount,
    Tool::ToolOutputsSample,
];

/// The properties the five share, as JSON text.
macro_rules! id {
    () => {
        r#""id": {"type": "string", "description": "The id of a stored output, e.g. out_001_browser_get_text"}"#
    };
}
macro_rules! path {
    () => {
        r#""path": {"type": "string", "description": "JSONPath (RFC 9535), e.g. $.links[*].url or $..price; for a text output leave it out"}"#
    };
}
macro_rules! contains {
    () => {
        r#""contains": {"type": "string", "description": "Text outputs: only lines containing this (case-insensitive)"}"#
    };
}
macro_rules! lines {
    () => {
        r#""lines": {"type": "string", "description": "Text outputs: a line range, e.g. 120-160"}"#
    };
}

pub(super) fn spec(tool: Tool) -> Spec {
    match tool {
        Tool::ToolOutputsList => {
            local(ONCE_STORED, "List the stored tool outputs: id, tool, size, JSON or text.", obj("{}", &[]))
        }
        Tool::ToolOutputsStats => local(
            ONCE_STORED,
            "The shape of a stored output: for JSON its keys, types, array lengths and example paths; for text its lines.",
            obj(concat!("{", id!(), "}"), &["id"]),
        ),
        Tool::ToolOutputsExtract => local(
            ONCE_STORED,
            "Read part of a stored output: JSON by a JSONPath, text by a line range and/or a substring.",
            obj(concat!("{", id!(), ", ", path!(), ", ", lines!(), ", ", contains!(), "}"), &["id"]),
        ),
        Tool::ToolOutputsCount => local(
            ONCE_STORED,
            "Count what a JSONPath matches in a stored JSON output, or the lines (containing a substring) of a text output.",
            obj(concat!("{", id!(), ", ", path!(), ", ", contains!(), "}"), &["id"]),
        ),
        _ => local(
            ONCE_STORED,
            "N items spread evenly over what a JSONPath matches (or over the lines of a text output), to see what they look like.",
            obj(
                concat!(
                    "{",
                    id!(),
                    ", ",
                    path!(),
                    r#", "n": {"type": "integer", "description": "How many (default 5)"}}"#
                ),
                &["id"],
            ),
        ),
    }
}
