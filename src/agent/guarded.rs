//! The agent's side of the guard table (`protocol::guards`): which guards are on for this
//! session, and the one way a guard reports that it acted.
//!
//! Invariant: every guard's action goes through `Agent::fire` (one log event named by the row,
//! a count in the record and so in `/metrics`), and acts only where `Guards::on` says so.

use super::Agent;
use crate::config::Config;
use crate::protocol::LogKind;
use crate::protocol::SessionRecord;
use crate::protocol::guards::{Guard, ProfileChoice};
use serde_json::json;
use std::collections::BTreeSet;

/// The guards on for one session.
#[derive(Debug, Clone)]
pub(super) struct Guards {
    on: BTreeSet<Guard>,
}

impl Guards {
    /// The profile's guards, then the config's switches, then the session's (`"all"` first).
    pub fn new(choice: &ProfileChoice, config: &Config, record: &SessionRecord) -> Guards {
        let mut on: BTreeSet<Guard> = Guard::ALL.iter().copied().filter(|g| g.in_profile(choice.name)).collect();
        let asked = &record.options.guards;
        let switch = |on: &mut BTreeSet<Guard>, name: &str, wanted: bool| {
            if let Some(g) = Guard::from_name(name) {
                if wanted {
                    on.insert(g)
                } else {
                    on.remove(&g)
                };
            }
        };
        for (name, wanted) in &config.agent.guards {
            switch(&mut on, name, *wanted);
        }
        match asked.get("all") {
            Some(false) => on.clear(),
            Some(true) => on.extend(Guard::ALL),
            None => {}
        }
        for (name, wanted) in asked {
            switch(&mut on, name, *wanted);
        }
        Guards { on }
    }

    pub fn on(&self, guard: Guard) -> bool {
        self.on.contains(&guard)
    }
}

impl Agent {
    /// Whether `guard` may act in this session.
    pub(super) fn guard_on(&self, guard: Guard) -> bool {
        self.guards.on(guard)
    }

    /// `guard` acted: one log event with its name and what it did, counted in the record.
    pub(super) fn fire(&self, guard: Guard, what: &str) {
        let name = guard.name();
        self.runner.log(LogKind::System, &format!("guard {name}: {what}"), Some(json!({"guard": name})));
        self.runner.count_guard(name);
    }
}
