//! System prompts, one per mode × session type, and the opening user message.
//!
//! Written for small models too: short, concrete, one obvious first action, how to finish said
//! once, selector help with real examples, and nothing about a particular site. Explore prompts
//! are observe-only. A confirmation is asked for only where the session needs one (never under
//! `auto_confirm`, which would approve it anyway).

use crate::protocol::{Mode, SessionRecord, SessionType, is_ssh_target};

/// How pages come back: with an example, unless the first message already holds a real snapshot.
fn pages(opened: bool) -> String {
    let example = if opened {
        "like the one in the first message: one line per element, a ref on each you can act on.\n"
    } else {
        "one line per element, a ref on each you can act on, e.g.\n\
[e7] link \"Pricing\" → https://example.com/pricing\n\
[e12] input email \"Email\" name=email\n\
[e15] button \"Sign in\"\n"
    };
    format!(
        "Pages come back as a snapshot {example}To act on an element pass its ref as the selector: \
{{\"selector\": \"ref=e12\"}}. Links are absolute URLs: use them as they are. A click or navigation answers with \
the new page."
    )
}

const ON_FAILURE: &str = "If a call fails, read the error: it says what is on the page. Try something \
different; the same call again gets the same answer.";

fn login_line(record: &SessionRecord) -> &'static str {
    match (record.has_credentials, record.mode) {
        (true, _) => {
            "Credentials are stored for this site: call perform_login when you need to log in. You never see the password.\n"
        }
        (false, Mode::Task) => "",
        (false, Mode::Explore) => "No credentials were given: stay on pages that need no login.\n",
    }
}

/// The confirmation rule, or nothing when the session approves everything anyway.
fn confirm_line(record: &SessionRecord) -> &'static str {
    if record.options.auto_confirm {
        ""
    } else {
        "Before a step that orders, pays, sends, deletes or downloads many files, call request_confirmation; \
if it is denied, do not do it.\n"
    }
}

/// The first step of a browser session: the page is open already (`opened`), or open it.
fn first_browser_step(opened: bool) -> &'static str {
    if opened {
        "The website is already open: its snapshot is in the first message."
    } else {
        "First call browser_navigate with the website's URL: its answer is the page's snapshot."
    }
}

/// The system prompt; `opened`: the session opened its browser target before the first turn.
pub fn system_prompt(record: &SessionRecord, opened: bool) -> String {
    match (record.mode, record.session_type) {
        (Mode::Explore, SessionType::Browser) => format!(
            "You explore a website in a browser and write a report about it. You only observe: never submit \
forms, buy, delete, change settings or download files.\n\n\
{first} Then follow the main links; note what each important \
page holds with save_note. {login}\
When you have seen enough, call finish_exploration once, with a summary and a markdown report \
(overview, structure, notable pages, forms, issues).\n\n{pages}\n\n{ON_FAILURE}",
            first = first_browser_step(opened),
            pages = pages(opened),
            login = login_line(record)
        ),
        (Mode::Explore, SessionType::App) => format!(
            "You explore a desktop application and write a report. You only observe: open menus and dialogs to \
look, then close them; never save, delete or change settings.\n\n\
First call get_ui_tree (or screenshot) to see the window. Go through the menus, toolbars and main views; note \
each finding with save_note. Then call finish_exploration once, with a summary and a markdown report.\n\n{ON_FAILURE}"
        ),
        (Mode::Explore, SessionType::Shell) => format!(
            "You explore a machine through a shell and write a report. You only observe: run read-only commands \
(ls, cat, ps, df, uname, systemctl status); never change, install or delete anything.\n\n\
First run `uname -a; id; df -h`. Note findings with save_note; search_history finds earlier output. Then call \
finish_exploration once, with a summary and a markdown report.\n\n{ON_FAILURE}"
        ),
        (Mode::Task, SessionType::Browser) => format!(
            "You carry out a task in a web browser for the user.\n\n\
{first}\n\
Then act on what the snapshot shows: browser_click, browser_type, browser_fill_form, browser_select_option.\n\
- Text in a snapshot is already yours: to save a value, call save_file with it (never click or type on text).\n\
- A file: browser_download with the link's URL. A table: browser_scrape_table with a filename saves it. This page as a PDF: \
browser_save_as_pdf.\n\
{login}{confirm}\
When the task is done (for a question: as soon as you see the answer, saved if asked), or cannot be done, call finish_task \
once with the answer or what you did and what failed.\n\n{pages}\n\n{ON_FAILURE}",
            first = first_browser_step(opened),
            pages = pages(opened),
            login = login_line(record),
            confirm = confirm_line(record)
        ),
        (Mode::Task, SessionType::App) => format!(
            "You carry out a task in a desktop application for the user.\n\n\
First call get_ui_tree (or screenshot) to see the window; then act with click, type_text and press_key.\n\
{confirm}Save results with save_file. When done, or when it cannot be done, call finish_task once with what \
was done and what failed.\n\n{ON_FAILURE}",
            confirm = confirm_line(record)
        ),
        (Mode::Task, SessionType::Shell) => format!(
            "You carry out a task on a machine through a shell for the user.\n\n\
First look with read-only commands (ls, cat, uname). Keep commands non-interactive (add -y, no pagers or \
editors); set timeout_s for long ones. Let commands count, add up and search for you (grep -c, wc -l, \
awk -F, for CSV, find) instead of reading whole files: their output is exact.\n\
{confirm}Save results with save_file. When done, or when it cannot be done, call finish_task once with what \
was done and what failed.\n\n{ON_FAILURE}",
            confirm = confirm_line(record)
        ),
    }
}

/// The first user message: the target, what to do, and the first step (none when the session
/// opened the page itself: its snapshot follows).
pub fn opening_message(record: &SessionRecord, opened: bool) -> String {
    let (target, first) = match record.session_type {
        SessionType::Browser if opened => (format!("Website: {}", record.target), String::new()),
        SessionType::Browser => {
            (format!("Website: {}", record.target), format!(" Start with browser_navigate to {}.", record.target))
        }
        SessionType::App => (format!("Application window: {}", record.target), " Start with get_ui_tree.".to_string()),
        // The machine's name quoted and said to be one: a bare `Machine: eval-box` reads to a
        // small model like a command to run. On a worker, the target is only the session's label:
        // the commands run on the worker's own machine, and that is the one named.
        SessionType::Shell => {
            let machine = match &record.worker {
                Some(host) if !is_ssh_target(&record.target) && *host != record.target => format!(
                    "Machine: the host named \"{host}\", which this session calls \"{}\" (run_command runs your \
                     commands there)",
                    record.target
                ),
                _ => format!("Machine: the host named \"{}\" (run_command runs your commands there)", record.target),
            };
            (machine, " Start with a read-only command.".to_string())
        }
    };
    let what = match record.mode {
        Mode::Task => format!("Task: {}", record.instruction.as_deref().unwrap_or("")),
        Mode::Explore => match &record.goal {
            Some(goal) => format!("Exploration goal: {goal}"),
            None => "Exploration goal: understand what this is and how it works.".to_string(),
        },
    };
    format!("{target}\n{what}\n\nYou have at most {} turns.{first}", record.max_turns)
}

/// Said once when the model answers without calling a tool.
pub fn nudge(mode: Mode) -> &'static str {
    match mode {
        Mode::Task => "Continue with the tools. If the task is complete, call finish_task.",
        Mode::Explore => "Continue with the tools. If you have seen enough, call finish_exploration.",
    }
}

#[cfg(test)]
mod tests {
    use super::pages;

    #[test]
    fn the_snapshot_example_is_left_out_when_a_real_snapshot_is_in_the_first_message() {
        let opened = pages(true);
        assert!(opened.contains("like the one in the first message") && !opened.contains("[e15]"), "{opened}");
        let not_opened = pages(false);
        assert!(not_opened.contains("[e12] input email") && !not_opened.contains("first message"), "{not_opened}");
        for text in [opened, not_opened] {
            assert!(text.contains("{\"selector\": \"ref=e12\"}"), "how to use a ref stays: {text}");
        }
    }
}
