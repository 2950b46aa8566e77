//! `agent-controller skill`: the SKILL.md that teaches a coding agent (Claude Code, Codex) to
//! drive this tool from its shell — YAML front matter (`name`, `description`), then the
//! console's commands for running a task, following it, answering, fetching files, taking
//! over, replaying and exporting. The text is `docs/SKILL.md`, compiled in; `tests/cli.rs`
//! checks it against the command table, so it names no command that does not exist.

/// The skill file, as kept in the repository.
pub const SKILL_MD: &str = include_str!("../../docs/SKILL.md");
