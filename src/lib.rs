//! agent-controller: the controller daemon for LLM-driven remote automation.
//!
//! A synchronous, threaded daemon: two tiny_http servers (API for people and agents, worker
//! server for the machines that do the work), one OS thread per session, crossbeam `bounded(1)`
//! channels and Condvars for the handshakes. See ARCHITECTURE.md for the codemap.

pub mod agent;
pub mod api;
pub mod b64;
pub mod client;
pub mod clock;
pub mod config;
pub mod console;
pub mod daemon;
pub mod error;
pub mod http;
pub mod hub;
pub mod llm;
pub mod mcp;
pub mod notify;
pub mod prompts;
pub mod protocol;
pub mod runner;
pub mod sessions;
pub mod store;
pub mod tools;
pub mod vault;
pub mod worker_api;
