//! The real agent-worker binary for end-to-end tests, with headless Chromium when the machine
//! has it (tests that need it say SKIPPED and return when it is missing).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::site::Site;
use super::{TempDir, TestAgent, TestDaemon, create_session, test_config, wait_until};
use agent_controller::session::SessionRunner;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const CHROMIUM: &str = "/usr/bin/chromium";

pub fn have_chromium() -> bool {
    let ok = std::path::Path::new(CHROMIUM).exists();
    if !ok {
        eprintln!("SKIPPED: {CHROMIUM} is not installed (make test installs it)");
    }
    ok
}

/// The agent-worker binary, stopped with SIGTERM on drop.
pub struct RealWorker(pub Child);

impl RealWorker {
    pub fn start(d: &TestDaemon, hostname: &str, caps: &str) -> RealWorker {
        RealWorker::start_with(d, hostname, caps, &[])
    }

    /// With more options (`--ca-file …`). AC_TEST_WORKER_LOG=1 shows the worker's log.
    pub fn start_with(d: &TestDaemon, hostname: &str, caps: &str, extra: &[&str]) -> RealWorker {
        let log = if std::env::var_os("AC_TEST_WORKER_LOG").is_some() { Stdio::inherit() } else { Stdio::null() };
        RealWorker::spawn(d, hostname, caps, extra, log)
    }

    /// As `start`, with the worker's log (stderr) going to `log`.
    pub fn start_with_log(d: &TestDaemon, hostname: &str, caps: &str, log: impl Into<Stdio>) -> RealWorker {
        RealWorker::spawn(d, hostname, caps, &[], log)
    }

    fn spawn(d: &TestDaemon, hostname: &str, caps: &str, extra: &[&str], log: impl Into<Stdio>) -> RealWorker {
        let child = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
            .args(extra)
            .args([
                "--controller",
                &d.worker,
                "--headless",
                "--hostname",
                hostname,
                "--capabilities",
                caps,
                "--browser",
                CHROMIUM,
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let c = d.client();
        wait_until(Duration::from_secs(10), "the worker to register", || {
            c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == hostname).then_some(())
        });
        RealWorker(child)
    }
}

impl Drop for RealWorker {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

/// A task session on the test site whose runner the test drives: the real daemon, a real
/// worker and Chromium, kept alive while it lives.
pub struct OnSite {
    pub r: SessionRunner,
    _done: crossbeam_channel::Sender<agent_controller::session::AgentOutcome>,
    _worker: RealWorker,
    pub d: TestDaemon,
    pub id: String,
    _dir: TempDir,
    pub site: Site,
}

impl OnSite {
    pub fn start(name: &str, instruction: &str) -> OnSite {
        let site = Site::start();
        let dir = TempDir::new(name);
        let (test_agent, agent) = TestAgent::new();
        let d = TestDaemon::start(test_config(dir.path()), agent);
        let worker = RealWorker::start(&d, &format!("{name}-box"), "browser");
        let id = create_session(&d.client(), json!({"mode": "task", "target": site.url, "instruction": instruction}));
        let (r, done) = test_agent.next();
        OnSite { r, _done: done, _worker: worker, d, id, _dir: dir, site }
    }
}
