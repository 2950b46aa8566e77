//! The daemon's clients: the console commands (`task`, `explore`, `sessions`, …), the MCP stdio
//! server for other agents, and the REST client both use. They reach the daemon only over its
//! REST API, through `client.rs`, exactly as any other client would.

pub mod client;
pub mod console;
mod follow;
pub mod mcp;
