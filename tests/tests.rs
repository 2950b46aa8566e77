//! One integration test binary (faster links): the real daemon on port 0, over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agent;
mod api;
mod browser_isolation;
mod budget;
mod build_script;
mod cli;
mod confirmations;
mod connections;
mod console;
mod desktop;
mod desktop_atspi;
mod durability;
mod eval;
mod files;
mod fuzz;
mod guards;
mod lifecycle;
mod loops;
mod mcp;
mod metrics;
mod openapi;
mod outputs;
mod profiles;
mod prompts;
mod providers;
mod replay;
mod schedules;
mod security;
mod service;
mod snapshots;
mod ssh;
mod steps;
mod takeover;
mod takeover_clients;
mod tidy;
mod tls;
mod vision;
mod web;
mod web_takeover;
mod worker_e2e;
mod worker_steps;
mod workers;
