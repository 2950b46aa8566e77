//! The names README.md, ARCHITECTURE.md, docs/tools.md and docs/security.md (the documents of
//! what is, not of its history) cite in backticks still exist, so a renamed tool or a removed
//! config key fails here instead of leaving the documents wrong.
//!
//! The rules, by the shape of what is between backticks:
//! - `agent-controller CMD …`: `CMD` is a command of the command table.
//! - a dotted key whose first part is a section of the configuration (`server.api_token`,
//!   `providers.NAME.price`, `files.*`): a key of the effective configuration (`NAME` and `*`
//!   stand for any key); `options.KEY`: a field of `POST /sessions`' options. File names
//!   (`session.json`) are not keys.
//! - a snake_case word of a tool family (its first part is the first part of a worker, agent or
//!   MCP tool: `browser_…`, `save_…`, `get_…`): a tool, an MCP tool, a tool's argument, a field
//!   of the API's bodies or a guard; `tool_outputs_*`: the prefix of a tool.
//! - a word next to "guard" (`the \`x\` guard`, `guard \`x\``): a guard.
//! - the first column of the console's table (`| commands | what |`): each span starts with a
//!   command.

use std::collections::BTreeSet;

/// Everything a document may cite, read from the code.
pub struct Known {
    pub tools: BTreeSet<String>,
    pub families: BTreeSet<String>,
    pub guards: BTreeSet<String>,
    /// Every key of the effective configuration as a dotted path, its sections included.
    pub config: BTreeSet<String>,
    pub commands: BTreeSet<String>,
}

/// Endings of file names, which look like dotted keys.
const FILE_ENDINGS: &[&str] =
    &["json", "jsonl", "md", "yaml", "new", "txt", "gif", "png", "pem", "rs", "js", "html", "css", "py", "sh", "lock"];

fn config_paths(value: &serde_yaml::Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let serde_yaml::Value::Mapping(map) = value {
        for (key, inner) in map {
            let Some(key) = key.as_str() else { continue };
            let path = if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
            out.insert(path.clone());
            config_paths(inner, &path, out);
        }
    }
}

/// Every key of every `properties` object in a JSON schema, at any depth.
fn property_names(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                if key == "properties" {
                    out.extend(inner.as_object().into_iter().flat_map(|o| o.keys().cloned()));
                }
                property_names(inner, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| property_names(i, out)),
        _ => {}
    }
}

impl Known {
    pub fn from_code() -> Known {
        use agent_controller::protocol::guards::Guard;
        use agent_controller::protocol::tools::Tool;
        let mut tools: BTreeSet<String> = Tool::ALL.iter().map(|t| t.name().to_string()).collect();
        tools.extend(agent_controller::cli::mcp::tool_names().into_iter().map(str::to_string));
        let families = tools.iter().filter_map(|t| t.split_once('_')).map(|(f, _)| f.to_string()).collect();
        let mut arguments = BTreeSet::new();
        for tool in Tool::ALL {
            if let Some(props) = tool.spec().input_schema.to_value()["properties"].as_object() {
                arguments.extend(props.keys().cloned());
            }
        }
        tools.extend(arguments);
        // The fields of the API's bodies (`replay_of`), from the OpenAPI document's schemas.
        let schemas = std::fs::read_to_string(super::root().join("src/http/openapi_schemas.json")).unwrap();
        let schemas: serde_json::Value = serde_json::from_str(&schemas).expect("the OpenAPI schemas parse");
        property_names(&schemas, &mut tools);
        // A named provider shows every key an endpoint may have.
        let yaml = "providers: {NAME: {provider: openai, base_url: \"http://127.0.0.1:1\"}}\n";
        let config = agent_controller::config::Config::from_yaml(yaml).expect("a config with one provider");
        let shown: serde_yaml::Value = serde_yaml::from_str(&config.effective_yaml()).expect("config check is YAML");
        let mut paths = BTreeSet::new();
        config_paths(&shown, "", &mut paths);
        Known {
            tools,
            families,
            guards: Guard::ALL.iter().map(|g| g.name().to_string()).collect(),
            config: paths,
            commands: agent_controller::cli::args::COMMANDS.iter().map(|c| c.name.to_string()).collect(),
        }
    }

    /// Whether `path` (`a.b.c`, `NAME` and `*` for any one key) is a key of the configuration.
    fn is_config_key(&self, path: &str) -> bool {
        self.config.iter().any(|known| {
            let (want, have): (Vec<&str>, Vec<&str>) = (path.split('.').collect(), known.split('.').collect());
            want.len() == have.len() && want.iter().zip(&have).all(|(w, h)| w == h || *w == "NAME" || *w == "*")
        })
    }

    /// Whether `key` is a field of `POST /sessions`' options (read strictly: an unknown one is refused).
    fn is_option(key: &str) -> bool {
        let body = serde_json::json!({ key: null });
        serde_json::from_value::<agent_controller::protocol::SessionOptionsRequest>(body).is_ok()
    }

    fn is_snake(word: &str) -> bool {
        word.contains('_')
            && word.starts_with(|c: char| c.is_ascii_lowercase())
            && word.split('_').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
    }

    /// What is wrong with one backticked span, if anything.
    fn check(&self, span: &str) -> Option<String> {
        if let Some(rest) = span.strip_prefix("agent-controller ") {
            let command = rest.split_whitespace().next().unwrap_or("");
            let is_word = command.starts_with(|c: char| c.is_ascii_lowercase());
            return (is_word && !self.commands.contains(command)).then(|| format!("no command {command:?}"));
        }
        if let Some(prefix) = span.strip_suffix('*').filter(|p| p.ends_with('_') && Self::is_snake(&format!("{p}x"))) {
            return (!self.tools.iter().any(|t| t.starts_with(prefix))).then(|| format!("no tool {span}"));
        }
        let dotted = span.contains('.')
            && span
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '*'));
        if dotted {
            let mut parts = span.split('.');
            let section = parts.next().unwrap_or("");
            let last = span.rsplit('.').next().unwrap_or("");
            if FILE_ENDINGS.contains(&last) {
                return None;
            }
            if section == "options" {
                let key = parts.next().unwrap_or("");
                return (!Self::is_option(key)).then(|| format!("no session option {key:?}"));
            }
            let is_section = self.config.contains(section) && !section.contains('*');
            return (is_section && !self.is_config_key(span)).then(|| format!("no config key {span}"));
        }
        let family = span.split('_').next().unwrap_or("");
        if Self::is_snake(span) && self.families.contains(family) {
            let known = self.tools.contains(span) || self.guards.contains(span);
            return (!known).then(|| format!("no tool {span}"));
        }
        None
    }

    /// Every backticked name of `doc` that the code does not know, with its line.
    pub fn unknown_in(&self, doc: &str) -> Vec<String> {
        let mut wrong = Vec::new();
        let mut in_commands = false;
        for (n, line) in doc.lines().enumerate() {
            // The console's table (`| commands | what |`): each span in its first column starts
            // with a command.
            in_commands = line.starts_with("| commands |") || in_commands && line.starts_with('|');
            let first_column = line.split(" | ").next().unwrap_or("");
            for span in first_column.split('`').skip(1).step_by(2).filter(|_| in_commands) {
                let command = span.split_whitespace().next().unwrap_or("");
                if !self.commands.contains(command) {
                    wrong.push(format!("line {}: `{span}`: no command {command:?}", n + 1));
                }
            }
            let pieces: Vec<&str> = line.split('`').collect();
            // Odd pieces are inside backticks (a line's unclosed tick spans no name).
            for (i, span) in pieces.iter().enumerate().skip(1).step_by(2).filter(|(i, _)| i + 1 < pieces.len()) {
                let mut why = self.check(span);
                let before = pieces[i - 1].trim_end().to_ascii_lowercase();
                let after = pieces[i + 1].trim_start().to_ascii_lowercase();
                let word_after = after.split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
                let named_guard = before.ends_with("guard") || word_after == "guard";
                if why.is_none() && named_guard && Self::is_snake(span) && !self.guards.contains(*span) {
                    why = Some(format!("no guard {span}"));
                }
                if let Some(why) = why {
                    wrong.push(format!("line {}: `{span}`: {why}", n + 1));
                }
            }
        }
        wrong
    }
}

#[test]
fn every_name_the_documents_cite_exists() {
    let known = Known::from_code();
    let mut wrong = Vec::new();
    for doc in ["README.md", "ARCHITECTURE.md", "docs/tools.md", "docs/security.md"] {
        let text = std::fs::read_to_string(super::root().join(doc)).unwrap();
        wrong.extend(known.unknown_in(&text).into_iter().map(|w| format!("{doc} {w}")));
    }
    assert!(wrong.is_empty(), "names the documents cite that the code does not have:\n{}", wrong.join("\n"));
}

#[test]
fn the_name_check_catches_a_renamed_tool_a_removed_key_and_a_missing_command() {
    let known = Known::from_code();
    let bad = "Click with `browser_klick`; set `server.api_tokens` and `options.max_turn`; \
               run `agent-controller sesions`; the `loop_hald` guard; read `tool_outputz_*`.\n\
               | commands | what |\n|---|---|\n| `sessions` · `statuz ID` | read |\n";
    let wrong = known.unknown_in(bad);
    for name in [
        "browser_klick",
        "server.api_tokens",
        "options.max_turn",
        "agent-controller sesions",
        "loop_hald",
        "tool_outputz_",
    ] {
        assert!(wrong.iter().any(|w| w.contains(name)), "{name} not caught: {wrong:?}");
    }
    let good = "Click with `browser_click`; set `server.api_token`, `providers.NAME.price` and \
                `options.max_turns`; run `agent-controller sessions`; the `loop_hold` guard; \
                read `tool_outputs_*`, `session.json` and `files.*`; type with `press_enter`.\n";
    assert_eq!(known.unknown_in(good), Vec::<String>::new());
}

/// README is for the people who run the daemon: no commit hashes (their history is in `docs/`).
#[test]
fn the_readme_names_no_commit() {
    let readme = std::fs::read_to_string(super::root().join("README.md")).unwrap();
    let hashes: Vec<&str> = readme
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| (7..=40).contains(&w.len()) && w.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(|c| c.is_ascii_alphabetic()))
        .collect();
    assert!(hashes.is_empty(), "README names commits (their history belongs in docs/): {hashes:?}");
}
