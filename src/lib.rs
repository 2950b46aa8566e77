//! agent-controller: the controller daemon for LLM-driven remote automation.
//!
//! A synchronous, threaded daemon: two HTTP servers (the API for people and agents, the worker
//! server for the machines that do the work), one OS thread per session, crossbeam `bounded(1)`
//! channels and Condvars for the handshakes. One folder per seam; see ARCHITECTURE.md for the
//! codemap, the invariants and what may import what.

pub mod agent;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod error;
pub mod eval;
pub mod exec;
pub mod export;
pub mod http;
pub mod hub;
pub mod llm;
pub mod notify;
pub mod protocol;
pub mod schedule;
pub mod session;
pub mod store;
pub mod util;
pub mod vault;
pub mod wait;
