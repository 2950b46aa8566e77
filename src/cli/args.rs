//! The command line's grammar: a command line parsed strictly by the command table
//! (`commands.rs`: every command with its options and arguments), and the help and usage made
//! from it.
//!
//! Rules: global options (`--api`, `--token`, `--json`, `-h/--help`, `-V/--version`) go before
//! or after the command; `--name value` and `--name=value` both work; `--` ends the options.
//! An unknown option, a missing value, a value given to a switch, a missing or extra argument is
//! a `UsageError` naming it (exit 2). No command means `serve`. The parsed result is handed to
//! the commands as a canonical argument list (`Parsed::arguments`), so they need not re-check.

use super::commands::opt;
pub use super::commands::{COMMANDS, Cmd, Opt};
use std::ffi::OsString;

pub const GLOBAL: &[Opt] = &[
    opt(&["--api"], "URL", "the daemon's API (default $AGENT_CONTROLLER_API or http://127.0.0.1:5900)"),
    opt(&["--token"], "TOKEN", "the API token (default $AGENT_CONTROLLER_TOKEN)"),
    opt(&["--ca-file"], "FILE", "trust an https daemon only if this CA signed it (default $AGENT_CONTROLLER_CA_FILE)"),
    opt(&["--json"], "", "JSON output for scripts"),
];

const HELP: Opt = opt(&["-h", "--help"], "", "show help (also: agent-controller help COMMAND)");
const VERSION: Opt = opt(&["-V", "--version"], "", "show the version and git commit");

/// A command line that does not follow the grammar; the message names what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A parsed command line.
pub struct Parsed {
    pub command: &'static Cmd,
    /// Whether the command was named (no command is `serve`).
    pub named: bool,
    /// (the option's long name, its value) in the order given.
    pub options: Vec<(&'static str, Option<String>)>,
    pub free: Vec<String>,
    pub help: bool,
    pub version: bool,
}

impl Parsed {
    /// A switch or value by its long name.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.options.iter().rev().find(|(n, _)| *n == long).and_then(|(_, v)| v.as_deref())
    }

    /// The canonical argument list for the command: options by long name, then the free ones.
    pub fn arguments(&self) -> pico_args::Arguments {
        let mut out: Vec<OsString> = Vec::new();
        for (name, value) in &self.options {
            out.push(name.into());
            if let Some(v) = value {
                out.push(v.into());
            }
        }
        out.extend(self.free.iter().map(OsString::from));
        pico_args::Arguments::from_vec(out)
    }
}

pub fn find(name: &str) -> Option<&'static Cmd> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The options a command accepts, globals included.
fn options_of(c: &Cmd) -> impl Iterator<Item = &'static Opt> + '_ {
    let globals: &'static [Opt] = if c.client { GLOBAL } else { &[] };
    c.options.iter().chain(globals).chain([&HELP, &VERSION])
}

fn lookup(c: &'static Cmd, name: &str) -> Option<&'static Opt> {
    options_of(c).find(|o| o.names.contains(&name))
}

/// Whether `name` takes a value in any command (to skip values while looking for the command).
fn takes_value_anywhere(name: &str) -> bool {
    COMMANDS.iter().flat_map(options_of).any(|o| !o.value.is_empty() && o.names.contains(&name))
}

/// The command: the first argument that is neither an option nor an option's value.
fn command_of(argv: &[String]) -> Result<(&'static Cmd, Option<usize>), UsageError> {
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" {
            break;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += if !a.contains('=') && takes_value_anywhere(a) { 2 } else { 1 };
            continue;
        }
        return match find(a) {
            Some(c) => Ok((c, Some(i))),
            None => Err(UsageError(format!("unknown command {a:?} (see `agent-controller help`)"))),
        };
    }
    Ok((&COMMANDS[0], None))
}

/// Parse the arguments after the program name.
pub fn parse(argv: Vec<OsString>) -> Result<Parsed, UsageError> {
    let argv: Vec<String> = argv
        .into_iter()
        .enumerate()
        .map(|(i, a)| a.into_string().map_err(|_| UsageError(format!("argument {} is not valid UTF-8", i + 1))))
        .collect::<Result<_, _>>()?;
    let (command, at) = command_of(&argv)?;
    let mut p =
        Parsed { command, named: at.is_some(), options: Vec::new(), free: Vec::new(), help: false, version: false };
    let mut rest = argv.into_iter().enumerate().filter(|(i, _)| Some(*i) != at).map(|(_, a)| a);
    let whose = || if at.is_some() { format!(" for `{}`", command.name) } else { String::new() };
    while let Some(a) = rest.next() {
        if a == "--" {
            p.free.extend(rest.by_ref());
            break;
        }
        if !a.starts_with('-') || a.len() == 1 {
            p.free.push(a);
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if at.is_none() && GLOBAL.iter().any(|o| o.names.contains(&name.as_str())) {
            return Err(UsageError(format!("{name} goes with a console command (see `agent-controller help`)")));
        }
        let Some(o) = lookup(command, &name) else {
            return Err(UsageError(format!(
                "unknown option {name}{} (see `agent-controller help {}`)",
                whose(),
                command.name
            )));
        };
        let long = o.names[o.names.len() - 1];
        if o.value.is_empty() {
            if inline.is_some() {
                return Err(UsageError(format!("option {long} takes no value")));
            }
            p.help |= long == "--help";
            p.version |= long == "--version";
            p.options.push((long, None));
            continue;
        }
        let value = match inline.or_else(|| rest.next()) {
            Some(v) if !(v.starts_with("--") && lookup(command, v.split('=').next().unwrap_or("")).is_some()) => v,
            _ => return Err(UsageError(format!("option {long} needs a value ({})", o.value))),
        };
        p.options.push((long, Some(value)));
    }
    p.options.retain(|(n, _)| *n != "--help" && *n != "--version");
    if !p.help && !p.version {
        check_arguments(&p)?;
    }
    Ok(p)
}

fn check_arguments(p: &Parsed) -> Result<(), UsageError> {
    let c = p.command;
    if p.free.len() > c.max_args {
        let extra = &p.free[c.max_args];
        return Err(UsageError(format!("unexpected argument {extra:?} for `{}` (usage: {})", c.name, usage_line(c))));
    }
    if p.free.len() < c.min_args {
        let words = positional_words(c.usage);
        let what = words.get(p.free.len()).or(words.first()).copied().unwrap_or("an argument");
        return Err(UsageError(format!("`{}` needs {what} (usage: {})", c.name, usage_line(c))));
    }
    Ok(())
}

/// The free arguments a usage line names, in order: its words outside `[…]` and `(…)` that
/// are neither options nor `|` (`ID TOOL JSON`; `INSTRUCTION…` after the target's group).
fn positional_words(usage: &str) -> Vec<&str> {
    let mut depth = 0i32;
    let mut words = Vec::new();
    for word in usage.split_whitespace() {
        let opens = word.chars().filter(|c| matches!(c, '(' | '[')).count() as i32;
        let closes = word.chars().filter(|c| matches!(c, ')' | ']')).count() as i32;
        if depth == 0 && opens == 0 && !word.starts_with('-') && word != "|" {
            words.push(word);
        }
        depth += opens - closes;
    }
    words
}

fn usage_line(c: &Cmd) -> String {
    format!("agent-controller {} {}", c.name, c.usage).trim_end().to_string()
}

/// The version line: the package version and the commit it was built from.
pub fn version() -> String {
    match option_env!("AC_GIT_COMMIT") {
        Some(commit) if !commit.is_empty() => {
            format!("agent-controller {} (commit {commit})", env!("CARGO_PKG_VERSION"))
        }
        _ => format!("agent-controller {} (commit unknown)", env!("CARGO_PKG_VERSION")),
    }
}

fn option_lines(options: &[&Opt]) -> String {
    let left = |o: &Opt| {
        let names = o.names.join(", ");
        if o.value.is_empty() { names } else { format!("{names} {}", o.value) }
    };
    let width = options.iter().map(|o| left(o).chars().count()).max().unwrap_or(0);
    options.iter().map(|o| format!("    {:<width$}  {}\n", left(o), o.help)).collect()
}

/// `help` and `--help`: the program's help, or one command's.
pub fn help(command: Option<&Cmd>) -> String {
    let Some(c) = command else { return program_help() };
    let mut out = format!("agent-controller {} — {}\n\nUSAGE:\n    {}\n", c.name, c.summary, usage_line(c));
    if !c.options.is_empty() {
        out += &format!("\nOPTIONS:\n{}", option_lines(&c.options.iter().collect::<Vec<_>>()));
    }
    let mut globals: Vec<&Opt> = if c.client { GLOBAL.iter().collect() } else { Vec::new() };
    globals.push(&HELP);
    out += &format!("\nGLOBAL OPTIONS:\n{}", option_lines(&globals));
    if !c.more.is_empty() {
        out += &format!("\n{}\n", c.more);
    }
    out
}

fn program_help() -> String {
    let width = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let commands: String = COMMANDS.iter().map(|c| format!("    {:<width$}  {}\n", c.name, c.summary)).collect();
    let globals: Vec<&Opt> = GLOBAL.iter().chain([&HELP, &VERSION]).collect();
    format!(
        "{}\ncontroller daemon for LLM-driven remote automation, and its console\n\n\
         USAGE:\n    agent-controller [serve] [OPTIONS]     run the daemon\n    \
         agent-controller COMMAND [OPTIONS]     talk to a running daemon\n\n\
         COMMANDS:\n{commands}\nGLOBAL OPTIONS (before or after the command):\n{}\n{ENVIRONMENT}\n\
         `agent-controller help COMMAND` shows a command's options.\n",
        version(),
        option_lines(&globals),
    )
}

const ENVIRONMENT: &str = "ENVIRONMENT:
    ANTHROPIC_API_KEY, OPENAI_API_KEY,
    GEMINI_API_KEY, GOOGLE_API_KEY      api.api_key, by api.provider
    AGENT_CONTROLLER_TOKEN              server.api_token (daemon) / the token (console)
    AGENT_CONTROLLER_WORKER_TOKEN       server.worker_token
    AGENT_CONTROLLER_API                the daemon's API (console)
    AGENT_CONTROLLER_CA_FILE            the private CA of an https daemon (console)
    AGENT_CONTROLLER_PASSWORD           the password for --username

EXIT CODES:
    0 finished or ok, 1 session error or runtime failure, 2 usage or config error,
    3 stopped, 4 finished after a denied confirmation, 5 controller unreachable or API error
";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, UsageError> {
        parse(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn global_options_go_before_or_after_the_command() {
        for line in [
            &["--api", "http://x", "status", "S1"][..],
            &["status", "S1", "--api=http://x"],
            &["status", "--api", "http://x", "S1"],
        ] {
            let parsed = p(line).unwrap();
            assert_eq!(parsed.command.name, "status");
            assert_eq!(parsed.value("--api"), Some("http://x"));
            assert_eq!(parsed.free, ["S1"]);
        }
        assert_eq!(p(&["--config", "c.yaml"]).unwrap().command.name, "serve");
        assert!(!p(&[]).unwrap().named);
    }

    #[test]
    fn mistakes_are_named() {
        let err = |args: &[&str]| p(args).err().unwrap().0;
        assert!(err(&["task", "--frobnicate", "x"]).contains("unknown option --frobnicate for `task`"));
        assert!(err(&["task", "--url"]).contains("--url needs a value (URL)"));
        assert!(err(&["task", "--url", "--yes", "x"]).contains("--url needs a value"));
        assert!(err(&["log", "S1", "--follow=yes"]).contains("--follow takes no value"));
        assert!(err(&["status"]).contains("needs ID"));
        assert!(err(&["act", "S1"]).contains("`act` needs TOOL"), "the first argument not given is named");
        assert!(err(&["task", "--url", "https://x"]).contains("`task` needs INSTRUCTION…"));
        assert!(err(&["answer", "S1"]).contains("needs TEXT…"));
        assert!(err(&["status", "a", "b"]).contains("unexpected argument \"b\""));
        assert!(err(&["frobnicate"]).contains("unknown command \"frobnicate\""));
        assert!(err(&["serve", "--json"]).contains("unknown option --json"));
        assert!(p(&["task", "--help"]).unwrap().help, "help wins over missing arguments");
        assert!(p(&["-V"]).unwrap().version);
    }

    #[test]
    fn values_and_free_arguments_reach_the_command() {
        let parsed = p(&["task", "--url", "https://x", "--", "--not-an-option", "-o"]).unwrap();
        assert_eq!(parsed.free, ["--not-an-option", "-o"]);
        let parsed = p(&["download", "S1", "-o", "dir", "--zip"]).unwrap();
        let mut a = parsed.arguments();
        assert_eq!(a.opt_value_from_str::<_, String>("--out").unwrap().as_deref(), Some("dir"));
        assert!(a.contains("--zip"));
        assert_eq!(a.finish(), [OsString::from("S1")]);
    }

    #[test]
    fn every_command_has_help() {
        for c in COMMANDS {
            let text = help(Some(c));
            assert!(text.contains(&format!("agent-controller {}", c.name)), "{text}");
            for o in c.options {
                assert!(text.contains(o.names[o.names.len() - 1]), "{}: {text}", c.name);
            }
        }
        assert!(help(None).contains("COMMANDS:"));
    }
}
