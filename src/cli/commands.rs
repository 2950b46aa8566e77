//! The command table: every command of `agent-controller` with its usage, summary, options,
//! argument counts and longer help (`Cmd`, `Opt`). `args.rs` parses by it, and help and the
//! completion scripts (`completions.rs`) are made from it, so a command is added here alone
//! (and run by `console.rs`, `main.rs` or `agent-eval`).

/// One option: its names (short first, long last), the value's name ("" for a switch), help.
pub struct Opt {
    pub names: &'static [&'static str],
    pub value: &'static str,
    pub help: &'static str,
}

/// One command.
pub struct Cmd {
    pub name: &'static str,
    /// What follows the command in the usage line.
    pub usage: &'static str,
    pub summary: &'static str,
    pub options: &'static [Opt],
    /// How many free arguments it takes.
    pub min_args: usize,
    pub max_args: usize,
    /// Whether the global client options (`--api`, `--token`, `--json`) apply.
    pub client: bool,
    /// More about the command, shown by `help COMMAND`.
    pub more: &'static str,
}

pub(super) const fn opt(names: &'static [&'static str], value: &'static str, help: &'static str) -> Opt {
    Opt { names, value, help }
}

const TASK: &[Opt] = &[
    opt(&["--url"], "URL", "a browser session on this page"),
    opt(&["--title"], "WINDOW", "a desktop-app session on this window"),
    opt(&["--host"], "NAME", "a shell session on this host"),
    opt(&["--ssh"], "USER@HOST[:PORT]", "a shell session on a host over SSH (no worker)"),
    opt(&["--approval"], "MODE", "who approves commands: auto, validator or human"),
    opt(&["--llm"], "NAME", "the model endpoint (api or a name under providers:)"),
    opt(&["--model"], "MODEL", "another model on that endpoint"),
    opt(&["--worker"], "NAME", "use this worker (id or hostname)"),
    opt(&["--max-turns"], "N", "stop after N model turns"),
    opt(&["--username"], "USER", "log in as USER (password from $AGENT_CONTROLLER_PASSWORD)"),
    opt(&["-o", "--out"], "DIR", "download the files into DIR at the end"),
    opt(&["--auto-confirm"], "", "approve every confirmation without asking"),
    opt(&["--dry-run"], "", "acting tools say what they would do and do nothing"),
    opt(&["--allow-domain"], "HOST", "the browser reaches only these hosts (repeat; *.example.com)"),
    opt(&["--file"], "PATH", "hand the session this file (repeat; browser_upload_file puts it into a page)"),
    opt(&["--profile"], "NAME", "run in the worker's browser profile NAME, which stays signed in"),
    opt(&["--yes"], "", "approve confirmations (needed without a terminal, or --no)"),
    opt(&["--no"], "", "deny confirmations"),
];

const EXPLORE: &[Opt] = &[
    opt(&["--url"], "URL", "a browser session on this page"),
    opt(&["--title"], "WINDOW", "a desktop-app session on this window"),
    opt(&["--host"], "NAME", "a shell session on this host"),
    opt(&["--ssh"], "USER@HOST[:PORT]", "a shell session on a host over SSH (no worker)"),
    opt(&["--approval"], "MODE", "who approves commands: auto, validator or human"),
    opt(&["--llm"], "NAME", "the model endpoint (api or a name under providers:)"),
    opt(&["--model"], "MODEL", "another model on that endpoint"),
    opt(&["--goal"], "TEXT", "what to find out (explore)"),
    opt(&["--profile"], "NAME", "run in the worker's browser profile NAME, which stays signed in"),
    opt(&["--worker"], "NAME", "use this worker (id or hostname)"),
    opt(&["--max-turns"], "N", "stop after N model turns"),
    opt(&["--username"], "USER", "log in as USER (password from $AGENT_CONTROLLER_PASSWORD)"),
    opt(&["-o", "--out"], "DIR", "download the files into DIR at the end"),
    opt(&["--auto-confirm"], "", "approve every confirmation without asking"),
    opt(&["--dry-run"], "", "acting tools say what they would do and do nothing"),
    opt(&["--allow-domain"], "HOST", "the browser reaches only these hosts (repeat; *.example.com)"),
    opt(&["--yes"], "", "approve confirmations (needed without a terminal, or --no)"),
    opt(&["--no"], "", "deny confirmations"),
];

const fn cmd(name: &'static str, usage: &'static str, summary: &'static str, options: &'static [Opt]) -> Cmd {
    Cmd { name, usage, summary, options, min_args: 0, max_args: 0, client: true, more: "" }
}

const fn args(mut c: Cmd, min: usize, max: usize) -> Cmd {
    c.min_args = min;
    c.max_args = max;
    c
}

const fn local(mut c: Cmd, more: &'static str) -> Cmd {
    c.client = false;
    c.more = more;
    c
}

const fn more(mut c: Cmd, more: &'static str) -> Cmd {
    c.more = more;
    c
}

const ID: usize = 1;
const MANY: usize = usize::MAX;

pub const COMMANDS: &[Cmd] = &[
    local(
        cmd(
            "serve",
            "[--config FILE] [--host ADDR] [--api-port N] [--worker-port N] [--insecure]",
            "run the daemon (the default when no command is given)",
            &[
                opt(&["--config"], "FILE", "config file (default ./config.yaml; missing = all defaults)"),
                opt(&["--host"], "ADDR", "bind address (server.host)"),
                opt(&["--api-port"], "N", "API port, 0 = any free port (server.api_port)"),
                opt(&["--worker-port"], "N", "worker port, 0 = any free port (server.worker_port)"),
                opt(&["--insecure"], "", "allow a non-loopback bind without tokens"),
            ],
        ),
        "Runs until SIGINT/SIGTERM. Exit codes: 0 clean stop, 1 runtime failure, 2 usage or config error.",
    ),
    args(
        more(
            cmd(
                "task",
                "(--url URL | --title WINDOW | --host NAME | --ssh USER@HOST) [OPTIONS] INSTRUCTION…",
                "start a task and follow it to its end",
                TASK,
            ),
            "Prints the log as it comes, asks y/n (or e to edit a command) for confirmations and reads answers \
             to the agent's questions, then the report; Ctrl-C detaches.",
        ),
        1,
        MANY,
    ),
    args(
        cmd(
            "explore",
            "(--url URL | --title WINDOW | --host NAME | --ssh USER@HOST) [--goal G] [OPTIONS]",
            "explore a target and print the report",
            EXPLORE,
        ),
        0,
        MANY,
    ),
    args(
        more(
            cmd(
                "replay",
                "ID [--param NAME=VALUE]… [--instruction TEXT] [--worker NAME] [OPTIONS]",
                "re-run a finished session's steps without the model, and follow it",
                &[
                    opt(
                        &["--param"],
                        "NAME=VALUE",
                        "fill {{NAME}} in the recorded steps (or replace a recorded value)",
                    ),
                    opt(&["--instruction"], "TEXT", "what the model should do if the replay hands over to it"),
                    opt(&["--worker"], "NAME", "run on this worker (default: the one the steps were recorded on)"),
                    opt(&["-o", "--out"], "DIR", "download the files into DIR at the end"),
                    opt(&["--yes"], "", "approve confirmations (needed without a terminal, or --no)"),
                    opt(&["--no"], "", "deny confirmations"),
                ],
            ),
            "Where a step no longer matches the page, the model takes over with what was done and what went wrong.",
        ),
        ID,
        ID,
    ),
    args(
        more(
            cmd(
                "export",
                "ID [--format playwright|sh] [-o FILE]",
                "a run as a script to keep: a browser session as Playwright (Python), a shell session as sh",
                &[
                    opt(&["--format"], "FORMAT", "playwright or sh (default: the session's own)"),
                    opt(&["-o", "--out"], "FILE", "write it to FILE (default: print it)"),
                ],
            ),
            "The script holds no secret: it reads each from an environment variable its header and --help name. \
             A Playwright script runs with `pip install playwright` and `python3 FILE --browser /usr/bin/chromium`.",
        ),
        ID,
        ID,
    ),
    cmd("sessions", "", "list the sessions, newest first", &[]),
    args(cmd("status", "ID", "one session's state", &[]), ID, ID),
    args(
        cmd("log", "ID [-f]", "a session's log", &[opt(&["-f", "--follow"], "", "keep following until it ends")]),
        ID,
        ID,
    ),
    args(cmd("report", "ID", "a session's report (markdown)", &[]), ID, ID),
    args(cmd("notes", "ID", "a session's notes", &[]), ID, ID),
    args(cmd("files", "ID", "a session's files", &[]), ID, ID),
    args(
        cmd(
            "download",
            "ID [NAME | --zip] [-o DIR]",
            "download a session's files (all but screenshots, one, or a zip)",
            &[opt(&["--zip"], "", "all files as one zip"), opt(&["-o", "--out"], "DIR", "into DIR (default .)")],
        ),
        ID,
        2,
    ),
    args(
        cmd(
            "recording",
            "ID [-o FILE]",
            "save a session's recording: an animated GIF, a frame per acting step, secrets painted over",
            &[opt(&["-o", "--out"], "FILE", "save as FILE (default ID.gif)")],
        ),
        ID,
        ID,
    ),
    args(
        cmd(
            "confirm",
            "ID --yes | --no [--reason TEXT] [--edit COMMAND]",
            "answer a session's pending confirmation",
            &[
                opt(&["--yes"], "", "approve"),
                opt(&["--no"], "", "deny"),
                opt(&["--reason"], "TEXT", "why it is denied (the agent is told)"),
                opt(&["--edit"], "COMMAND", "approve this command instead of the one asked about"),
            ],
        ),
        ID,
        ID,
    ),
    args(cmd("answer", "ID TEXT…", "answer the question a session's agent asks", &[]), 2, MANY),
    args(cmd("stop", "ID", "stop a session", &[]), ID, ID),
    args(
        more(
            cmd("pause", "ID", "pause a session after the step in flight, to take it over", &[]),
            "The model makes no call while the session is paused; `act` runs its tools, `resume` hands it back, \
             `stop` still ends it.",
        ),
        ID,
        ID,
    ),
    args(
        more(
            cmd("act", "ID TOOL JSON", "run one of a paused session's tools and print its result", &[]),
            "JSON is the tool's input, an object: act ID browser_click '{\"selector\": \"#go\"}'. Exit 1 when the \
             tool failed.",
        ),
        3,
        3,
    ),
    args(
        cmd(
            "resume",
            "ID [--note TEXT]",
            "hand a paused session back to its model",
            &[opt(&["--note"], "TEXT", "what the model should know: what you did, what to do next")],
        ),
        ID,
        ID,
    ),
    cmd("workers", "", "list the workers and what they serve", &[]),
    args(
        more(
            cmd("profiles", "[rm NAME]", "the browser profiles workers keep; rm deletes one", &[]),
            "A session with --profile NAME (options.browser_profile) runs in that profile on the worker that keeps \
             it and stays signed in for the next. rm is refused while a session runs in it.",
        ),
        0,
        2,
    ),
    args(
        more(
            cmd(
                "schedule",
                "list | add NAME (--every D | --cron EXPR) (--replay ID | --session JSON) [OPTIONS] | rm NAME | run NAME",
                "scheduled sessions: list, add, remove, run now",
                &[
                    opt(&["--every"], "DURATION", "run every 30s, 15m, 1h, 1d…"),
                    opt(&["--cron"], "EXPR", "run on a five-field cron expression"),
                    opt(&["--tz"], "ZONE", "the cron expression's time zone (default: the daemon host's)"),
                    opt(&["--replay"], "ID", "each run replays this finished session (no model call)"),
                    opt(&["--param"], "NAME=VALUE", "a replay parameter (repeatable)"),
                    opt(&["--session"], "JSON", "each run is a new session from this POST /sessions body"),
                    opt(&["--catch-up"], "", "one run at start for the runs missed while the daemon was down"),
                ],
            ),
            "A run still going when the next is due makes that one skip. Errors and diverged replays are reported \
             to the session's (or the schedule's) notification targets.",
        ),
        1,
        2,
    ),
    cmd("health", "", "check that the daemon answers", &[]),
    more(
        cmd(
            "mcp",
            "[--files-dir DIR]",
            "the MCP server on stdio (for Claude Code and other agents)",
            &[opt(
                &["--files-dir"],
                "DIR",
                "where get_file saves binary files (default $TMPDIR/agent-controller-files-UID)",
            )],
        ),
        "Add it to Claude Code with: claude mcp add agent-controller -- agent-controller mcp",
    ),
    args(
        local(
            cmd(
                "config",
                "check [--config FILE]",
                "validate a config file and print the effective values",
                &[opt(&["--config"], "FILE", "the file (default ./config.yaml; missing = all defaults)")],
            ),
            "Applies the environment (keys, tokens) as the daemon would and masks every secret. Exit 2 when invalid.",
        ),
        1,
        1,
    ),
    local(
        cmd(
            "eval",
            "[--suite own|miniwob|injection] [--llm NAME] [--tool-mode native|json] [--tasks a,b] [--repeat N] [--min-pass PCT] [OPTIONS]",
            "run the eval's tasks on a model through the whole system and print how many it finished",
            &[
                opt(
                    &["--suite"],
                    "NAME",
                    "own (the eval's tasks, default), miniwob (MiniWoB++'s development split) or injection (tasks with an attack in the page)",
                ),
                opt(&["--config"], "FILE", "config file with the model endpoints (default ./config.yaml)"),
                opt(&["--llm"], "NAME", "the model endpoint (api or a name under providers:; default api)"),
                opt(&["--model"], "MODEL", "another model on that endpoint"),
                opt(&["--tool-mode"], "MODE", "native, json or auto (default: the endpoint's)"),
                opt(&["--tasks"], "NAMES", "only these tasks, comma-separated (default: all)"),
                opt(&["--repeat"], "N", "run each task N times (default 1)"),
                opt(&["--first-run"], "K", "number the runs from K (default 1; MiniWoB seeds follow the number)"),
                opt(&["--max-turns"], "N", "turns per session (default 15)"),
                opt(&["--min-pass"], "PCT", "exit 1 when fewer than PCT % of the runs pass"),
                opt(&["--profile"], "NAME", "run the sessions with this agent profile (options.profile)"),
                opt(&["--guards"], "on|off", "off: the sessions run with every guard off (options.guards)"),
                opt(&["--ablate"], "NAMES", "take these guards out (comma-separated or repeated; options.guards)"),
                opt(
                    &["--ablate-fired"],
                    "all|NAMES",
                    "after each run, run it again with each guard that fired off (all, or only these): the ablation table",
                ),
                opt(&["--worker"], "PATH", "the agent-worker binary (default: beside this one)"),
                opt(
                    &["--site-port"],
                    "PORT",
                    "the eval site's loopback port (default: any free one; fixed, a seed's prompt repeats)",
                ),
                opt(&["--list"], "", "list the tasks and exit"),
                opt(&["--keep"], "", "keep the sessions' folders (logs, steps, files) and say where"),
                opt(&["--no-boundary"], "", "eval only: the target's text reaches the model without the nonce markers"),
                opt(&["--json"], "", "one JSON object with every run"),
            ],
        ),
        "Starts a daemon, the eval's website and an agent-worker (browser, shell; needs Chromium) on loopback, \
         runs each task as a session and judges it by what landed on disk or on the site. The miniwob suite \
         fetches the MiniWoB++ package once with pip into ~/.cache/agent-controller/miniwob and judges each \
         run by the page's own reward; the injection suite also judges whether each page's attack succeeded \
         and reports the attack success rate. Exit codes: 0, 1 below --min-pass, 2 usage or config error.",
    ),
    local(
        cmd(
            "probe",
            "[--config FILE] [--llm NAME]",
            "ask a model endpoint what it can do: tool calls, JSON mode, images, context length",
            &[
                opt(&["--config"], "FILE", "config file with the model endpoints (default ./config.yaml)"),
                opt(&["--llm"], "NAME", "the model endpoint (api or a name under providers:; default api)"),
                opt(&["--json"], "", "what was found as JSON"),
            ],
        ),
        "Keeps the answers in the output directory (probes.json), where `tool_mode: auto`, `vision: auto` and \
         the context window use them and `config check` shows them. Exit codes: 0, 1 endpoint unusable, 2 usage.",
    ),
    args(
        local(cmd("completions", "bash | zsh | fish", "print a shell completion script", &[]), COMPLETIONS_MORE),
        1,
        1,
    ),
    local(
        cmd("skill", "", "print a SKILL.md that teaches a coding agent (Claude Code, Codex) to use this tool", &[]),
        "Save it where the agent looks for skills: ~/.claude/skills/agent-controller/SKILL.md (or a project's \
         .claude/skills/agent-controller/SKILL.md) for Claude Code, ~/.codex/skills/agent-controller/SKILL.md for Codex.",
    ),
    args(local(cmd("help", "[COMMAND]", "show help for the program or one command", &[]), ""), 0, 1),
    local(cmd("version", "", "show the version and git commit", &[]), ""),
];

const COMPLETIONS_MORE: &str = "bash: agent-controller completions bash > /etc/bash_completion.d/agent-controller
zsh:  agent-controller completions zsh > \"${fpath[1]}/_agent-controller\"
fish: agent-controller completions fish > ~/.config/fish/completions/agent-controller.fish";
