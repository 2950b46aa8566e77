//! The command line's grammar, read once: `pico_args` reads the arguments by the command table
//! (`commands.rs`: every command with its options and arguments) into `Parsed`, the typed form
//! every command takes its options from; help and usage are made from the same table.
//!
//! Rules: global options (`--api`, `--token`, `--json`, `-h/--help`, `-V/--version`) go before
//! or after the command; `--name value` and `--name=value` both work; `--` ends the options.
//! An unknown option, a missing value, a value given to a switch, a missing or extra argument is
//! a `UsageError` naming it (exit 2). No command means `serve`. A command asks `Parsed` only for
//! options its row lists (a debug build panics at any other name).

use super::commands::opt;
pub use super::commands::{COMMANDS, Cmd, Opt};
use std::ffi::OsString;
use std::str::FromStr;

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

impl std::error::Error for UsageError {}

/// One option given: its long name, and its value (`None` for a switch).
type Given = (&'static str, Option<String>);

/// A parsed command line.
pub struct Parsed {
    pub command: &'static Cmd,
    /// Whether the command was named (no command is `serve`).
    pub named: bool,
    /// (the option's long name, its value; `None` for a switch); one option's in the order given.
    options: Vec<Given>,
    pub free: Vec<String>,
    pub help: bool,
    pub version: bool,
}

impl Parsed {
    /// The value of an option by its long name; the last one given wins.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.given(long).filter_map(Option::as_deref).last()
    }

    /// Every value of a repeatable option, in the order given.
    pub fn values(&self, long: &str) -> Vec<String> {
        self.given(long).filter_map(Option::clone).collect()
    }

    /// Whether a switch (or an option) was given.
    pub fn flag(&self, long: &str) -> bool {
        self.given(long).next().is_some()
    }

    /// The value of an option read as a `T` (a number): a value that is not one is an error
    /// naming the option.
    pub fn parse<T: FromStr>(&self, long: &str) -> Result<Option<T>, UsageError> {
        let Some(v) = self.value(long) else { return Ok(None) };
        let what = lookup(self.command, long).map_or("", |o| o.value);
        v.parse().map(Some).map_err(|_| UsageError(format!("option {long} takes {what}, not {v:?}")))
    }

    fn given<'a>(&'a self, long: &str) -> impl Iterator<Item = &'a Option<String>> {
        debug_assert!(
            lookup(self.command, long).is_some_and(|o| o.names.last() == Some(&long)),
            "`{}` reads {long}, which is not the long name of one of its options",
            self.command.name
        );
        self.options.iter().filter(move |(n, _)| *n == long).map(|(_, v)| v)
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
    let mut argv: Vec<String> = argv
        .into_iter()
        .enumerate()
        .map(|(i, a)| a.into_string().map_err(|_| UsageError(format!("argument {} is not valid UTF-8", i + 1))))
        .collect::<Result<_, _>>()?;
    let (command, at) = command_of(&argv)?;
    if let Some(i) = at {
        argv.remove(i);
    }
    let (argv, after_dashes) = check_options(command, at.is_some(), argv)?;
    let (mut options, mut free) = read(command, argv)?;
    free.extend(after_dashes);
    let help = options.iter().any(|(n, _)| *n == "--help");
    let version = options.iter().any(|(n, _)| *n == "--version");
    options.retain(|(n, _)| *n != "--help" && *n != "--version");
    let p = Parsed { command, named: at.is_some(), options, free, help, version };
    if !p.help && !p.version {
        check_arguments(&p)?;
    }
    Ok(p)
}

/// Check the options before `--` against the command's row: each is one of its options, a
/// switch has no value, an option that takes one has it, and that value is not one of the
/// command's options (so `read` pairs each name with its own value). Returns the arguments
/// before `--`, each `--name=value` as `--name value`, and those after it.
fn check_options(c: &'static Cmd, named: bool, argv: Vec<String>) -> Result<(Vec<String>, Vec<String>), UsageError> {
    let whose = if named { format!(" for `{}`", c.name) } else { String::new() };
    let mut out = Vec::with_capacity(argv.len());
    let mut rest = argv.into_iter();
    while let Some(a) = rest.next() {
        if a == "--" {
            break;
        }
        if !a.starts_with('-') || a.len() == 1 {
            out.push(a);
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a, None),
        };
        if !named && GLOBAL.iter().any(|o| o.names.contains(&name.as_str())) {
            return Err(UsageError(format!("{name} goes with a console command (see `agent-controller help`)")));
        }
        let Some(o) = lookup(c, &name) else {
            return Err(UsageError(format!("unknown option {name}{whose} (see `agent-controller help {}`)", c.name)));
        };
        out.push(name);
        if o.value.is_empty() {
            if inline.is_some() {
                return Err(UsageError(format!("option {} takes no value", o.names[o.names.len() - 1])));
            }
            continue;
        }
        match inline.or_else(|| rest.next()) {
            Some(v) if !is_option_of(c, &v) => out.push(v),
            _ => return Err(needs_value(o)),
        }
    }
    Ok((out, rest.collect()))
}

fn needs_value(o: &Opt) -> UsageError {
    UsageError(format!("option {} needs a value ({})", o.names[o.names.len() - 1], o.value))
}

/// Whether `arg` is `--` or one of the command's options (with or without `=value`).
fn is_option_of(c: &'static Cmd, arg: &str) -> bool {
    arg == "--" || (arg.starts_with('-') && lookup(c, arg.split('=').next().unwrap_or(arg)).is_some())
}

/// `pico_args` reads every option of the command's row (checked by `check_options`), in the
/// row's order and each one's values in the order given; what is left are the free arguments.
fn read(c: &'static Cmd, argv: Vec<String>) -> Result<(Vec<Given>, Vec<String>), UsageError> {
    let mut args = pico_args::Arguments::from_vec(argv.into_iter().map(OsString::from).collect());
    let mut options = Vec::new();
    for o in options_of(c) {
        let long = o.names[o.names.len() - 1];
        let keys = || -> pico_args::Keys { if o.names.len() == 1 { long.into() } else { [o.names[0], long].into() } };
        if o.value.is_empty() {
            while args.contains(keys()) {
                options.push((long, None));
            }
            continue;
        }
        let values: Vec<String> = args.values_from_str(keys()).map_err(|e| match e {
            pico_args::Error::OptionWithoutAValue(_) => needs_value(o),
            other => UsageError(format!("option {long}: {other}")),
        })?;
        options.extend(values.into_iter().map(|v| (long, Some(v))));
    }
    let free: Vec<String> = args.finish().into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
    Ok((options, free))
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
        assert_eq!(parsed.value("--out"), Some("dir"));
        assert!(parsed.flag("--zip"));
        assert_eq!(parsed.free, ["S1"]);
        let line = ["task", "--file=a", "x", "--url", "u", "--file", "b", "y", "--max-turns=3"];
        let parsed = p(&line).unwrap();
        assert_eq!(parsed.values("--file"), ["a", "b"], "repeated, in the order given, either spelling");
        assert_eq!(parsed.free, ["x", "y"]);
        assert_eq!(parsed.parse::<u32>("--max-turns"), Ok(Some(3)));
        assert_eq!(parsed.parse::<u32>("--worker"), Ok(None));
        let parsed = p(&["task", "--url", "u", "--max-turns", "many", "x"]).unwrap();
        assert_eq!(parsed.parse::<u32>("--max-turns").unwrap_err().0, "option --max-turns takes N, not \"many\"");
    }

    #[test]
    fn an_option_is_never_the_value_of_another() {
        let err = |args: &[&str]| p(args).err().unwrap().0;
        // Whatever the order in which the options are read, a name is never taken for a value.
        assert!(err(&["task", "--title", "--url", "https://x", "go"]).contains("--title needs a value"));
        assert!(err(&["log", "S1", "--follow", "x"]).contains("unexpected argument \"x\""));
        assert!(err(&["download", "S1", "-o", "-o"]).contains("--out needs a value"));
        assert!(err(&["confirm", "S1", "--reason=--yes"]).contains("--reason needs a value"));
        assert!(err(&["download", "S1", "-o=dir"]).contains("unknown option -o=dir"));
        let parsed = p(&["confirm", "S1", "--no", "--reason", "--not-ours"]).unwrap();
        assert_eq!(parsed.value("--reason"), Some("--not-ours"), "a value may look like an option no one takes");
    }

    #[test]
    #[should_panic(expected = "reads --goal")]
    #[cfg(debug_assertions)]
    fn a_command_reads_only_its_own_options() {
        let _ = p(&["task", "--url", "u", "x"]).unwrap().value("--goal");
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
