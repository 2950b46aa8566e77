//! A browser session as a standalone Python script on Playwright's sync API: each acting step
//! once more, in order, on locators a person would write (`locator.rs`), the page waited for
//! after each (its load, then a moment of network quiet); downloads, printed pages and saved
//! tables go into the folder `--downloads` names; recorded values are options
//! (`values.rs`), secrets environment variables; `--browser PATH` runs an installed Chromium.
//!
//! The script's fixed parts are the templates at the end of this file; what is made per session
//! is the header's words, the options and the body of `run`. Every text from the record
//! enters the script as a Python string literal or as a comment line made safe
//! (`comment_text`), never as code.

use super::locator::{NoLocator, locator};
use super::values::{Values, py};
use super::{Run, Step, comment_text};
use crate::protocol::takeover::typed_pointers;
use crate::protocol::tools::Tool;
use serde_json::Value;

/// What the body uses of the script's helpers.
#[derive(Default)]
struct Uses {
    totp: bool,
    stepper: bool,
}

/// The whole script.
pub(super) fn script(run: &Run<'_>, steps: &[Step<'_>]) -> String {
    let mut values = Values::default();
    let mut uses = Uses::default();
    let mut body = Vec::new();
    let mut exported = 0;
    for step in steps {
        let lines = match emit(step, &mut values, &mut uses) {
            Ok(lines) if lines.is_empty() => continue,
            Ok(lines) => lines,
            Err(why) => vec![format!("fail({}, {})", step.number(), py(&why.to_string()))],
        };
        exported += 1;
        body.push(String::new());
        body.push(format!("# {}. {}", step.number(), comment_text(&what(step))));
        body.extend(step.meant().map(|m| format!("# {m}")));
        body.extend(lines);
    }
    if exported == 0 {
        body.push(format!(
            "print({}, file=sys.stderr)",
            py(&format!("session {} has no acting steps to run again: nothing to do", run.id))
        ));
    }
    let mut out = header(run, exported, &values);
    out.push_str(IMPORTS);
    out.push_str(&secrets_table(&values));
    out.push_str(&options_fn(run, &values));
    out.push_str(HELPERS);
    if uses.totp {
        out.push_str(TOTP);
    }
    if uses.stepper {
        out.push_str(STEPPER);
    }
    out.push_str("\n\ndef run(page, args):\n    \"\"\"The session's acting steps, in order.\"\"\"\n");
    for line in body {
        if line.is_empty() { out.push('\n') } else { out.push_str(&format!("    {line}\n")) }
    }
    out.push_str(MAIN);
    out
}

fn header(run: &Run<'_>, exported: usize, values: &Values) -> String {
    let file = super::Format::Playwright.file_name(run.id);
    let mut h = format!(
        "#!/usr/bin/env python3\n# agent-controller: session {id} as a Playwright script ({exported} acting steps).\n",
        id = comment_text(run.id)
    );
    h.push_str(&format!("# Target: {}\n", comment_text(run.target)));
    if let Some(task) = run.instruction {
        h.push_str(&format!("# Task: {}\n", comment_text(task)));
    }
    h.push_str(&format!("# Recorded: {} (status {}).\n#\n", comment_text(run.created_at), comment_text(run.status)));
    h.push_str(&format!(
        "# Run it:  pip install playwright\n#          python3 {file} --browser /usr/bin/chromium   (a Chromium already installed)\n\
         #     or:  python3 -m playwright install chromium && python3 {file}\n"
    ));
    h.push_str(&format!("# Options (recorded values, replay parameters): python3 {file} --help\n"));
    h.push_str("# Files the steps save go into ./downloads (--downloads DIR).\n");
    if values.secrets.is_empty() {
        h.push_str("# Secrets: none.\n");
    } else {
        h.push_str("# Secrets are read from these environment variables, never written here:\n");
        for (name, about) in &values.secrets {
            h.push_str(&format!("#   {name}  {}\n", comment_text(about)));
        }
    }
    h
}

fn secrets_table(values: &Values) -> String {
    let rows: String = values.secrets.iter().map(|(n, about)| format!("    {}: {},\n", py(n), py(about))).collect();
    format!("\n# What each secret is: the environment variable, what it holds.\nSECRETS = {{\n{rows}}}\n")
}

fn options_fn(run: &Run<'_>, values: &Values) -> String {
    let about = format!("Session {} again, on {}.", run.id, run.target);
    let mut f = format!("{OPTIONS_HEAD}        description={},\n{OPTIONS_COMMON}", py(&about));
    for o in &values.options {
        let help = o.help.replace('%', "%%").replace("%%(default)s", "%(default)s");
        let default = match &o.default {
            Some(d) => format!("default={}", py(d)),
            None => "required=True".into(),
        };
        f.push_str(&format!(
            "    parser.add_argument({}, dest={}, metavar=\"VALUE\", {default}, help={})\n",
            py(&format!("--{}", o.flag)),
            py(&o.dest),
            py(&help)
        ));
    }
    f.push_str("    return parser.parse_args()\n");
    f
}

/// What the step did, in words.
fn what(step: &Step<'_>) -> String {
    let a = step.args();
    let on = || named(&step.entry["element"], a["selector"].as_str());
    match step.tool {
        Tool::BrowserNavigate => format!("open {}", a["url"].as_str().unwrap_or("")),
        Tool::BrowserClick => format!("click {}", on()),
        Tool::BrowserType => format!("type into {}", on()),
        Tool::BrowserSelectOption => format!("choose {:?} in {}", a["value"].as_str().unwrap_or(""), on()),
        Tool::BrowserFillForm => format!("fill {} fields", a["fields"].as_array().map_or(0, Vec::len)),
        Tool::BrowserPressKey => format!("press {}", a["key"].as_str().unwrap_or("")),
        Tool::BrowserSubmitForm => "send the form".into(),
        Tool::PerformLogin => "log in with the stored credentials".into(),
        other => other.name().replace("browser_", "").replace('_', " "),
    }
}

/// An element as a person names it: `"Send order"`, else its selector.
fn named(described: &Value, selector: Option<&str>) -> String {
    let words = ["name", "label", "placeholder", "text", "field_name"]
        .iter()
        .find_map(|k| described[*k].as_str().filter(|t| !t.is_empty()));
    match (words, selector) {
        (Some(w), _) => format!("{w:?}"),
        (None, Some(s)) => format!("`{s}`"),
        (None, None) => "the element".into(),
    }
}

/// The step's lines of Python (none for a step that only reads), or why it cannot be written.
fn emit(step: &Step<'_>, values: &mut Values, uses: &mut Uses) -> Result<Vec<String>, NoLocator> {
    let a = step.args();
    let n = step.number();
    let loc = || locator(Some(&step.entry["element"]), a["selector"].as_str());
    let settle = "settle(page)".to_string();
    Ok(match step.tool {
        Tool::BrowserNavigate => {
            vec![format!("page.goto({})", values.literal(a["url"].as_str().unwrap_or(""), n)), settle]
        }
        Tool::BrowserBack => vec!["page.go_back()".into(), settle],
        Tool::BrowserForward => vec!["page.go_forward()".into(), settle],
        // A person's click on the session's screenshot, at a point of the page.
        Tool::BrowserClick if a.get("selector").is_none() && a["x"].is_number() => {
            vec![
                format!("page.mouse.click({}, {})", a["x"].as_f64().unwrap_or(0.0), a["y"].as_f64().unwrap_or(0.0)),
                settle,
            ]
        }
        Tool::BrowserClick => vec![format!("{}.click()", loc()?), settle],
        Tool::BrowserHover => vec![format!("{}.hover()", loc()?)],
        Tool::BrowserPressKey => {
            vec![format!("page.keyboard.press({})", py(&key_name(a["key"].as_str().unwrap_or("")))), settle]
        }
        Tool::BrowserType | Tool::BrowserSelectOption if is_stepper(&step.entry["element"]) => {
            uses.stepper = true;
            stepped(step, &loc()?, values)
        }
        Tool::BrowserType => typed(step, &loc()?, values),
        Tool::BrowserSelectOption => chosen(step, &loc()?, values),
        Tool::BrowserFillForm => fill_form(step, values)?,
        Tool::BrowserSubmitForm => submit(step)?,
        Tool::BrowserDownload => vec![download_line(a, n, values)],
        Tool::BrowserDownloadBatch => {
            a["urls"].as_array().into_iter().flatten().map(|u| download_line(u, n, values)).collect()
        }
        Tool::BrowserSaveAsPdf => {
            vec![format!("page.pdf(path=saved(args, {}))", py(a["filename"].as_str().unwrap_or("page.pdf")))]
        }
        Tool::BrowserScrapeTable => match a["filename"].as_str().filter(|f| !f.trim().is_empty()) {
            Some(name) => {
                let table = match a["selector"].as_str() {
                    Some(_) => loc()?,
                    None => "page.locator(\"table\").first".into(),
                };
                let name = if name.contains('.') { name.to_string() } else { format!("{name}.csv") };
                vec![format!("save_table({table}, saved(args, {}))", py(&name))]
            }
            None => Vec::new(),
        },
        Tool::BrowserWaitFor => wait_for(a)?,
        Tool::BrowserAnswerDialog => {
            let answer = match (a["accept"] == true, a["text"].as_str()) {
                (true, Some(t)) => format!("dialog.accept({})", values.literal(t, n)),
                (true, None) => "dialog.accept()".into(),
                (false, _) => "dialog.dismiss()".into(),
            };
            vec![format!("page.once(\"dialog\", lambda dialog: {answer})")]
        }
        Tool::BrowserSwitchTab => match (a["index"].as_u64(), a["url_contains"].as_str()) {
            (Some(i), _) => vec![format!("page = page.context.pages[{i}]"), "page.bring_to_front()".into()],
            (None, Some(part)) => vec![
                format!("page = next(p for p in page.context.pages if {} in p.url)", py(part)),
                "page.bring_to_front()".into(),
            ],
            (None, None) => Vec::new(),
        },
        Tool::PerformLogin => login(step, values, uses)?,
        _ => Vec::new(),
    })
}

/// A typing: filled whole (a date or number field is set whole, as the worker set it), or key by
/// key where the step did not clear the field; Enter after it where the step pressed it.
fn typed(step: &Step<'_>, target: &str, values: &mut Values) -> Vec<String> {
    let (a, element) = (step.args(), &step.entry["element"]);
    let text = typed_value(step, "/text", element, &as_set(element, a["text"].as_str().unwrap_or("")), values);
    let how = if a["clear"] == false && element["set"].is_null() { "press_sequentially" } else { "fill" };
    let mut lines = vec![format!("{target}.{how}({text})")];
    if a["press_enter"] == true {
        lines.extend([format!("{target}.press(\"Enter\")"), "settle(page)".into()]);
    }
    lines
}

/// A choice in a select (several where it took several), or a date, number or range field the
/// step set through `browser_select_option`.
fn chosen(step: &Step<'_>, target: &str, values: &mut Values) -> Vec<String> {
    let (a, element) = (step.args(), &step.entry["element"]);
    let asked = a["value"].as_str().unwrap_or("");
    let value = match element["set"].as_array() {
        Some(several) => {
            format!("[{}]", several.iter().filter_map(Value::as_str).map(py).collect::<Vec<_>>().join(", "))
        }
        None => values.option(&as_set(element, asked), step.number(), &about("chosen in", element, a)),
    };
    vec![set_field(target, element, &value, asked), "settle(page)".into()]
}

/// A slider or spin button made of ARIA, typed into or chosen in: moved by its keys (`step_to`).
fn stepped(step: &Step<'_>, target: &str, values: &mut Values) -> Vec<String> {
    let (a, element) = (step.args(), &step.entry["element"]);
    let key = if step.tool == Tool::BrowserType { "text" } else { "value" };
    let value = typed_value(step, &format!("/{key}"), element, &as_set(element, a[key].as_str().unwrap_or("")), values);
    vec![format!("step_to({target}, {value})"), "settle(page)".into()]
}

/// The text a step typed: what a person typed and what went into a password field from the
/// environment, anything else an option with the recorded text.
fn typed_value(step: &Step<'_>, pointer: &str, element: &Value, recorded: &str, values: &mut Values) -> String {
    let n = step.number();
    let typed = match step.entry["typed"].as_array() {
        Some(ps) => ps.iter().any(|p| p == pointer),
        None => step.entry["by"] == "human" && typed_pointers(step.tool, step.args()).iter().any(|p| p == pointer),
    };
    if typed {
        let name = format!("TYPED_{}", values.secrets.iter().filter(|(k, _)| k.starts_with("TYPED_")).count() + 1);
        return values.secret(&name, &format!("step {n}: what a person typed into {}", named(element, None)));
    }
    if element["type"] == "password" && !recorded.is_empty() {
        let name = format!("PASSWORD_{n}");
        return values
            .secret(&name, &format!("step {n}: what was typed into the password field {}", named(element, None)));
    }
    values.option(recorded, n, &about("typed into", element, step.args()))
}

/// What a step set into its element as the field holds it (`set`, from the worker: a date as
/// `2024-03-05`, a select's option value rather than its text), else what the step asked; a
/// parameter or a secret as asked, so the script reads it as the run did.
fn as_set(element: &Value, asked: &str) -> String {
    let set = match &element["set"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match set {
        Some(set) if !asked.contains("{{") && !asked.contains(super::values::REDACTED) => set,
        _ => asked.to_string(),
    }
}

/// A slider or spin button made of ARIA (not a range or number input): the worker moved it by
/// its arrow keys, and so does the script (`step_to`).
fn is_stepper(element: &Value) -> bool {
    let native = element["tag"] == "input" && matches!(element["type"].as_str(), Some("range" | "number"));
    matches!(element["role"].as_str(), Some("slider" | "spinbutton")) && !native
}

/// An option's words: `typed into "Your name"`.
fn about(verb: &str, element: &Value, args: &Value) -> String {
    let words = ["label", "name", "placeholder", "field_name", "id"]
        .iter()
        .find_map(|k| element[*k].as_str().filter(|t| !t.is_empty()));
    match words {
        Some(w) => format!("{verb} {w}"),
        None => format!("{verb} {}", args["selector"].as_str().unwrap_or("the field")),
    }
}

/// A value set into a field of its kind: a select chosen, a box checked, a text filled.
fn set_field(target: &str, element: &Value, value: &str, recorded: &str) -> String {
    match (element["tag"].as_str(), element["type"].as_str()) {
        (Some("select"), _) => format!("{target}.select_option({value})"),
        (_, Some("checkbox")) => format!("{target}.set_checked({})", if truthy(recorded) { "True" } else { "False" }),
        (_, Some("radio")) => format!("{target}.check()"),
        _ => format!("{target}.fill({value})"),
    }
}

/// What the worker reads as a box to check (`page.js`'s `checkedWanted`).
fn truthy(value: &str) -> bool {
    !matches!(value.trim().to_lowercase().as_str(), "false" | "no" | "off" | "0" | "unchecked" | "uncheck" | "")
}

fn fill_form(step: &Step<'_>, values: &mut Values) -> Result<Vec<String>, NoLocator> {
    let fields = step.args()["fields"].as_array().cloned().unwrap_or_default();
    let mut lines = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let element = &step.entry["elements"][i];
        let target = locator(Some(element), f["selector"].as_str())
            .map_err(|e| NoLocator::Field { number: i + 1, cause: Box::new(e) })?;
        let recorded = f["value"].as_str().unwrap_or("");
        let boxed = matches!(element["type"].as_str(), Some("checkbox" | "radio"));
        let value = if boxed {
            String::new()
        } else {
            typed_value(step, &format!("/fields/{i}/value"), element, &as_set(element, recorded), values)
        };
        lines.push(set_field(&target, element, &value, recorded));
    }
    lines.push("settle(page)".into());
    Ok(lines)
}

fn submit(step: &Step<'_>) -> Result<Vec<String>, NoLocator> {
    let a = step.args();
    let element = &step.entry["element"];
    let send = if let Some(button) = a["submit_selector"].as_str() {
        format!("{}.click()", locator(Some(element), Some(button))?)
    } else if let Some(form) = a["selector"].as_str() {
        format!("{}.evaluate({})", locator(Some(element), Some(form))?, py(REQUEST_SUBMIT))
    } else {
        format!("page.locator(\"form\").first.evaluate({})", py(REQUEST_SUBMIT))
    };
    Ok(vec![send, "settle(page)".into()])
}

fn download_line(a: &Value, n: u64, values: &mut Values) -> String {
    let url = values.literal(a["url"].as_str().unwrap_or(""), n);
    let name = a["filename"].as_str().map_or_else(|| "None".into(), py);
    format!("download(page, {url}, {name}, args)")
}

fn wait_for(a: &Value) -> Result<Vec<String>, NoLocator> {
    let timeout = a["timeout_s"].as_u64().map_or_else(String::new, |s| format!("timeout={}", s.clamp(1, 600) * 1000));
    Ok(match (a["selector"].as_str(), a["text"].as_str()) {
        (Some(s), _) => vec![format!("{}.wait_for({timeout})", locator(None, Some(s))?)],
        (None, Some(t)) => vec![format!("page.get_by_text({}).first.wait_for({timeout})", py(t))],
        (None, None) => Vec::new(),
    })
}

/// A login: its page, the credentials from the environment, the send, and the one-time code
/// where the site asked for one.
fn login(step: &Step<'_>, values: &mut Values, uses: &mut Uses) -> Result<Vec<String>, NoLocator> {
    let l = &step.entry["login"];
    let n = step.number();
    let field = |k: &'static str| {
        locator(Some(&l[k]), None).map_err(|e| NoLocator::LoginField { field: k, cause: Box::new(e) })
    };
    let user = values.secret("LOGIN_USERNAME", &format!("step {n}: the username of the stored credentials"));
    let pass = values.secret("LOGIN_PASSWORD", &format!("step {n}: the password of the stored credentials"));
    let mut lines = vec![
        format!("page.goto({})", values.literal(l["url"].as_str().unwrap_or(""), n)),
        "settle(page)".into(),
        format!("{}.fill({user})", field("username")?),
        format!("{}.fill({pass})", field("password")?),
        format!("{}.click()", field("submit")?),
        "settle(page)".into(),
    ];
    if let (Some(code), Some(send)) = (l["code"]["field"].as_str(), l["code"]["send"].as_str()) {
        uses.totp = true;
        let key = values.secret("LOGIN_TOTP_SECRET", &format!("step {n}: the TOTP key (base32 or otpauth:// URI)"));
        lines.extend([
            format!("page.locator({}).first.fill(totp({key}))", py(code)),
            format!("page.locator({}).first.click()", py(send)),
            "settle(page)".into(),
        ]);
    }
    Ok(lines)
}

/// A key as Playwright names it (`enter` → `Enter`, `ctrl+a` → `Control+a`).
fn key_name(key: &str) -> String {
    let part = |p: &str| -> String {
        match p.to_lowercase().as_str() {
            "ctrl" | "control" => "Control".into(),
            "cmd" | "meta" | "command" | "super" => "Meta".into(),
            "alt" | "option" => "Alt".into(),
            "shift" => "Shift".into(),
            "esc" | "escape" => "Escape".into(),
            "return" | "enter" => "Enter".into(),
            "del" | "delete" => "Delete".into(),
            "space" => "Space".into(),
            "up" | "down" | "left" | "right" => format!("Arrow{}{}", p[..1].to_uppercase(), p[1..].to_lowercase()),
            _ if p.chars().count() > 1 => {
                let mut c = p.chars();
                c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
            }
            _ => p.to_string(),
        }
    };
    key.split('+').map(part).collect::<Vec<_>>().join("+")
}

/// Send the form an element is or is in, as the browser sends it (its checks, its submit event).
const REQUEST_SUBMIT: &str = "el => (el.tagName === 'FORM' ? el : el.form || el.closest('form')).requestSubmit()";

const IMPORTS: &str = r#"
import argparse
import csv
import os
import sys
from urllib.parse import urljoin, urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright
"#;

const OPTIONS_HEAD: &str = r#"

def options():
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=secrets_help(),
"#;

const OPTIONS_COMMON: &str = r#"    )
    parser.add_argument("--browser", metavar="PATH",
                        help="run this installed Chromium (executable_path) instead of Playwright's own")
    parser.add_argument("--headed", action="store_true", help="show the browser's window")
    parser.add_argument("--downloads", metavar="DIR", default="downloads",
                        help="where the files the steps save go (default: %(default)s)")
    parser.add_argument("--timeout", metavar="S", type=float, default=30.0,
                        help="seconds a step may wait for its element or page (default: %(default)s)")
"#;

const HELPERS: &str = r#"

def secrets_help():
    if not SECRETS:
        return "It needs no secrets."
    rows = "\n".join(f"  {name}  {about}" for name, about in SECRETS.items())
    return "Secrets, read from the environment (never written into this script):\n" + rows


def secret(name):
    value = os.environ.get(name)
    if value is None:
        sys.exit(f"{name} is not set: {SECRETS[name]} (see --help)")
    return value


def fail(step, why):
    sys.exit(f"step {step} cannot be run again: {why}")


def settle(page):
    """Wait for the page after a step: its load, then a moment without network traffic."""
    page.wait_for_load_state()
    try:
        page.wait_for_load_state("networkidle", timeout=3000)
    except PlaywrightTimeout:
        pass


def saved(args, name):
    """Where a file the steps save goes: the --downloads folder, made when first needed."""
    os.makedirs(args.downloads, exist_ok=True)
    return os.path.join(args.downloads, os.path.basename(name) or "download")


def download(page, url, name, args):
    """A file fetched with the page's cookies, written whole or not at all."""
    url = urljoin(page.url, url)
    response = page.context.request.get(url)
    if not response.ok:
        sys.exit(f"the download of {url} failed: HTTP {response.status}")
    path = saved(args, name or urlparse(url).path)
    with open(path + ".part", "wb") as out:
        out.write(response.body())
    os.replace(path + ".part", path)
    print("saved", path)


def save_table(table, path):
    rows = table.evaluate("t => Array.from(t.rows, r => Array.from(r.cells, c => c.innerText.trim()))")
    with open(path + ".part", "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows(rows)
    os.replace(path + ".part", path)
    print("saved", path)
"#;

const TOTP: &str = r#"

def totp(key):
    """The current one-time code (RFC 6238) of a base32 key or an otpauth://totp/ URI."""
    import base64, hashlib, hmac, struct, time
    from urllib.parse import parse_qs
    digits, period, algorithm = 6, 30, "sha1"
    if key.startswith("otpauth://"):
        query = parse_qs(urlparse(key).query)
        digits = int(query.get("digits", ["6"])[0])
        period = int(query.get("period", ["30"])[0])
        algorithm = query.get("algorithm", ["SHA1"])[0].lower()
        key = query["secret"][0]
    key = key.replace(" ", "").upper()
    mac = hmac.new(base64.b32decode(key + "=" * (-len(key) % 8)),
                   struct.pack(">Q", int(time.time()) // period), getattr(hashlib, algorithm)).digest()
    offset = mac[-1] & 0x0F
    code = (struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF) % 10 ** digits
    return str(code).zfill(digits)
"#;

const STEPPER: &str = r#"

def step_to(target, value):
    """A slider or spin button made of ARIA, moved by its arrow keys until it holds `value`."""
    read = "el => el.tagName === 'INPUT' && el.value.trim() !== '' ? el.value : el.getAttribute('aria-valuenow')"
    want = float(value)
    target.focus()
    for _ in range(200):
        was = float(target.evaluate(read))
        if was == want:
            return
        target.press("ArrowUp" if was < want else "ArrowDown")
        now = float(target.evaluate(read))
        if now == was or (now < want) != (was < want):
            return
"#;

const MAIN: &str = r#"

def main():
    args = options()
    missing = [name for name in SECRETS if name not in os.environ]
    if missing:
        sys.exit("set " + ", ".join(missing) + " first (see --help)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.browser, headless=not args.headed)
        context = browser.new_context(accept_downloads=True)
        context.set_default_timeout(args.timeout * 1000)
        try:
            run(context.new_page(), args)
        finally:
            context.close()
            browser.close()
    print("done: every step ran again")


if __name__ == "__main__":
    main()
"#;
