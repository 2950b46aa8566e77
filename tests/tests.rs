//! One integration test binary (faster links): the real daemon on port 0, over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agent;
mod api;
mod confirmations;
mod console;
mod files;
mod lifecycle;
mod loops;
mod mcp;
mod outputs;
mod prompts;
mod providers;
mod replay;
mod snapshots;
mod steps;
mod tidy;
mod vision;
mod worker_e2e;
mod workers;
