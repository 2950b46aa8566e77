//! The daemon's clients: the console commands (`task`, `explore`, `sessions`, …), the MCP stdio
//! server for other agents, and the REST client both use. They reach the daemon only over its
//! REST API, through `client.rs`, exactly as any other client would. `commands.rs` holds the
//! table of commands, `args.rs` the grammar that parses by it (help and completions are made
//! from the table), `table.rs` the console's aligned tables.

pub mod args;
pub mod client;
mod commands;
mod common;
pub mod completions;
pub mod console;
mod export;
mod follow;
pub mod mcp;
mod progress;
mod recording;
mod replay;
mod schedule;
pub mod skill;
mod table;
mod takeover;
