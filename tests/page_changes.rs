//! Actions that answer with what they changed, and inputs that take what a person writes,
//! through the real controller, agent-worker and headless Chromium on the test site's
//! `/widgets` page: suggestions that appear on typing, an error line and a dialog on a click, a
//! date typed as `03/05/2024` and as `2024-03-05`, time and date-and-time fields, a range, a
//! number spinner, a colour and a native select, an ARIA slider and spin button; a click that
//! leaves the page answers with the whole new page; and the changes reach the model as lines,
//! in both profiles.

use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::worker::{OnSite, RealWorker, have_chromium};
use crate::support::*;
use agent_controller::session::SessionRunner;
use serde_json::{Value, json};
use std::time::Duration;

fn cmd(r: &SessionRunner, action: &str, params: Value) -> Value {
    r.execute(action, params.clone(), Duration::from_secs(60)).unwrap_or_else(|e| panic!("{action} {params}: {e}"))
}

fn cmd_err(r: &SessionRunner, action: &str, params: Value) -> String {
    match r.execute(action, params.clone(), Duration::from_secs(60)) {
        Ok(v) => panic!("{action} {params} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

/// The ref on the line of `text` that contains `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    let line = text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in\n{text}"));
    let start = line.find("[e").unwrap() + 1;
    format!("ref={}", &line[start..start + line[start..].find(']').unwrap()])
}

/// An action's changes, checked to be on the same page.
fn changes(v: &Value) -> String {
    assert_eq!(v["changed"]["page"], "same", "{v}");
    assert!(v.get("snapshot").is_none(), "only what changed: {v}");
    v["changes"].as_str().unwrap_or_else(|| panic!("no changes: {v}")).to_string()
}

#[test]
fn actions_answer_with_what_changed_on_the_page() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("page-changes");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _worker = RealWorker::start(&d, "changes-box", "browser");
    create_session(&d.client(), json!({"mode": "task", "target": site.url, "instruction": "look"}));
    let (r, _done) = test_agent.next();
    let nav = cmd(&r, "browser_navigate", json!({"url": format!("{}/widgets", site.url), "snapshot_chars": 6000}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    let size = ref_of(&snap, "select \"Size\"");
    assert!(
        snap.contains("select \"Size\" name=size: Choose… (selected) | Small=s | Medium=m | Large=l"),
        "options: {snap}"
    );

    // An error line on a click, with nothing else.
    let saved = cmd(&r, "browser_click", json!({"selector": ref_of(&snap, "button \"Save\"")}));
    let c = changes(&saved);
    assert_eq!(c, "What changed on the page (lines: 1 new):\ntext \"Please enter a city first\"", "{saved}");
    assert_eq!((&saved["changed"]["added"], &saved["changed"]["removed"]), (&json!(1), &json!(0)));

    // Suggestions that appear a moment after typing, with refs; the typed value is not echoed.
    let city = ref_of(&snap, "input text \"City\"");
    let typed = cmd(&r, "browser_type", json!({"selector": city, "text": "par"}));
    assert_eq!(typed["typed"], 3, "{typed}");
    let c = changes(&typed);
    assert!(c.contains("option \"Paris\"") && c.contains("option \"Parma\"") && !c.contains("Prague"), "{c}");
    assert!(c.contains("input text \"City\" name=city (value as typed)") && !c.contains("\"par\""), "{c}");
    assert_eq!(typed["changed"]["updated"], 1, "the field: {typed}");
    // Suggestions a page draws on key up come too: the text is typed key by key.
    let country = ref_of(&snap, "input text \"Country\"");
    let keyed = changes(&cmd(&r, "browser_type", json!({"selector": country, "text": "no"})));
    assert!(keyed.contains("option \"Norway\"") && !keyed.contains("Nepal"), "{keyed}");
    // A suggestion clicked by its ref: the field holds it, the list is gone.
    let picked = cmd(&r, "browser_click", json!({"selector": ref_of(&c, "option \"Paris\"")}));
    let c = changes(&picked);
    assert!(c.contains("input text \"City\" name=city value=\"Paris\""), "{c}");
    assert!(picked["changed"]["removed"].as_u64().unwrap() >= 1 && !c.contains("Parma"), "{picked}");
    // A key that changes nothing says so.
    let pressed = cmd(&r, "browser_press_key", json!({"key": "Escape"}));
    assert_eq!(changes(&pressed), "Nothing changed on the page.", "{pressed}");

    // A dialog opened by a click, closed by another.
    let opened = cmd(&r, "browser_click", json!({"selector": ref_of(&snap, "button \"Delete\"")}));
    let c = changes(&opened);
    assert!(c.contains("text \"Really delete the order?\"") && c.contains("button \"Yes, delete\""), "{c}");
    let closed = cmd(&r, "browser_click", json!({"selector": ref_of(&c, "button \"Keep it\"")}));
    assert!(changes(&closed).ends_with("(lines: 3 gone):"), "{closed}");

    // A date as people write it, set with the page's events.
    let start = ref_of(&snap, "input date \"Start date\"");
    let us = cmd(&r, "browser_type", json!({"selector": start, "text": "03/05/2024"}));
    assert_eq!((&us["set"], &us["kind"]), (&json!("2024-03-05"), &json!("date")), "{us}");
    let c = changes(&us);
    assert!(
        c.contains("input date \"Start date\" name=start (min 2020-01-01, max 2030-12-31) value=\"2024-03-05\""),
        "{c}"
    );
    assert!(c.contains("start input 2024-03-05; start change 2024-03-05;"), "input and change fired: {c}");
    let iso = cmd(&r, "browser_type", json!({"selector": start, "text": "2024-12-24"}));
    assert_eq!(iso["set"], "2024-12-24", "{iso}");
    assert!(changes(&iso).contains("(value as typed)"), "{iso}");
    let back = cmd(&r, "browser_type", json!({"selector": start, "text": "2024-03-05"}));
    assert_eq!(back["set"], "2024-03-05", "{back}");
    assert_eq!(cmd(&r, "browser_type", json!({"selector": start, "text": "31.12.2024"}))["set"], "2024-12-31");
    assert_eq!(
        cmd(
            &r,
            "browser_select_option",
            json!({"selector": start, "value": "March 5, 2024", "select_sets_value": true})
        )["set"],
        "2024-03-05"
    );
    // Not asked to (`select_sets_value` off), select_option chooses in a select only.
    let e = cmd_err(&r, "browser_select_option", json!({"selector": start, "value": "March 5, 2024"}));
    assert!(e.contains("is a date field") && e.contains("not a select: use browser_type with the value"), "{e}");
    let e = cmd_err(&r, "browser_type", json!({"selector": start, "text": "05-03-2024"}));
    assert!(e.contains("is not a date it takes") && e.contains("03/05/2024 (month first)"), "ambiguous: {e}");
    let e = cmd_err(&r, "browser_type", json!({"selector": start, "text": "2024-02-30"}));
    assert!(e.contains("is not a date it takes"), "{e}");
    let late = cmd(&r, "browser_type", json!({"selector": start, "text": "2031-01-01"}));
    assert!(late["problem"].as_str().unwrap_or_default().contains("2030"), "out of its range: {late}");

    // Time and date-and-time.
    let at = cmd(&r, "browser_type", json!({"selector": ref_of(&snap, "input time"), "text": "2:30 pm"}));
    assert_eq!(at["set"], "14:30", "{at}");
    let meet = ref_of(&snap, "input datetime-local");
    assert_eq!(
        cmd(&r, "browser_type", json!({"selector": meet, "text": "03/05/2024 9:15"}))["set"],
        "2024-03-05T09:15"
    );

    // A range and a spinner take a value, by type or by select_option, with their events.
    let vol = ref_of(&snap, "input range \"Volume\"");
    let slid = cmd(&r, "browser_select_option", json!({"selector": vol, "value": "8", "select_sets_value": true}));
    assert_eq!(slid["set"], "8", "{slid}");
    assert!(changes(&slid).contains("vol input 8; vol change 8;"), "{slid}");
    let over = cmd(&r, "browser_type", json!({"selector": vol, "text": "15"}));
    assert_eq!((&over["set"], &over["asked"]), (&json!("10"), &json!("15")), "kept to its bounds: {over}");
    let qty = ref_of(&snap, "input number \"Quantity\"");
    assert_eq!(cmd(&r, "browser_type", json!({"selector": qty, "text": "3"}))["set"], "3");
    let many = cmd(&r, "browser_select_option", json!({"selector": qty, "value": "12", "select_sets_value": true}));
    assert!(many["problem"].as_str().unwrap_or_default().contains('9'), "{many}");
    let e = cmd_err(&r, "browser_type", json!({"selector": qty, "text": "three"}));
    assert!(e.contains("number field") && e.contains("write it as a number"), "{e}");

    let tint = ref_of(&snap, "input color \"Colour\"");
    assert_eq!(cmd(&r, "browser_type", json!({"selector": tint, "text": "#f80"}))["set"], "#ff8800");
    assert_eq!(
        cmd(&r, "browser_select_option", json!({"selector": tint, "value": "teal", "select_sets_value": true}))["set"],
        "#008080"
    );

    // A native select: chosen, or its options listed.
    let chosen = cmd(&r, "browser_select_option", json!({"selector": size, "value": "Medium"}));
    assert!(changes(&chosen).contains("Medium=m (selected)"), "{chosen}");
    let e = cmd_err(&r, "browser_select_option", json!({"selector": size, "value": "XL"}));
    assert!(e.contains("options: Choose…, Small, Medium, Large"), "{e}");
    // One that takes several says so, and takes them as a task names them: those, and only those.
    let tops = ref_of(&snap, "select \"Toppings\" name=tops (multiple): Olives | Ham");
    let two = cmd(&r, "browser_select_option", json!({"selector": tops, "value": "Olives, Mushrooms"}));
    assert_eq!(two["selected"], json!(["Olives", "mush"]), "{two}");
    assert!(changes(&two).contains("Olives (selected) | Ham | Mushrooms=mush (selected) | Peppers"), "{two}");
    let other = cmd(&r, "browser_select_option", json!({"selector": tops, "value": "Ham and Peppers"}));
    assert!(changes(&other).contains("Olives | Ham (selected) | Mushrooms=mush | Peppers (selected)"), "{other}");
    let e = cmd_err(&r, "browser_select_option", json!({"selector": tops, "value": "Ham, Anchovies"}));
    assert!(e.contains("no option `Anchovies`") && e.contains("options: Olives, Ham"), "{e}");

    // A form filled at once: the date field takes a written date too.
    let fields = json!([{"selector": city, "value": "Oslo"}, {"selector": start, "value": "12/24/2024"}]);
    let filled = cmd(&r, "browser_fill_form", json!({"fields": fields}));
    assert_eq!(filled["filled"][1]["set"], "2024-12-24", "{filled}");
    assert!(changes(&filled).contains("name=city (value as typed)"), "{filled}");

    // A click that leaves the page: the whole new page. (The city's suggestions come 200 ms
    // after the fill and push the link down; a click aimed before they come would miss it.)
    std::thread::sleep(Duration::from_millis(500));
    let left = cmd(&r, "browser_click", json!({"selector": ref_of(&snap, "link \"Shop menu\"")}));
    assert_eq!(left["changed"]["page"], "new", "{left}");
    assert!(left["snapshot"].as_str().unwrap().contains("heading 1 \"Shop\""), "{left}");
}

/// A slider and a spin button made of ARIA (a div, and a text field that ignores typing) show
/// their number and bounds, and take a number by their arrow keys, as a person sets them: to
/// the number asked, to the first step past it, or to their bound.
#[test]
fn aria_sliders_and_spin_buttons_show_their_number_and_take_one_by_their_keys() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("page-steppers", "look");
    let r = &on.r;
    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/widgets", on.site.url), "snapshot_chars": 8000}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    assert!(snap.contains("] slider \"Brightness\" (min 0, max 100) value=\"40 (40 %)\""), "{snap}");
    assert!(snap.contains("] spinbutton \"Guests\" (min 1, max 8) value=\"2\""), "{snap}");

    let bright = ref_of(&snap, "slider \"Brightness\"");
    let up = cmd(r, "browser_type", json!({"selector": bright, "text": "60"}));
    assert_eq!((&up["set"], &up["keys"]), (&json!(60), &json!(4)), "{up}");
    assert!(changes(&up).contains("bright 60;"), "{up}");
    let between =
        cmd(r, "browser_select_option", json!({"selector": bright, "value": "52", "select_sets_value": true}));
    assert_eq!((&between["set"], &between["asked"]), (&json!(50), &json!(52)), "the first step past it: {between}");

    let e = cmd_err(r, "browser_select_option", json!({"selector": bright, "value": "52"}));
    assert!(e.contains("is a slider") && e.contains("use browser_type with the number"), "{e}");

    let guests = ref_of(&snap, "spinbutton \"Guests\"");
    let five = cmd(r, "browser_type", json!({"selector": guests, "text": "5"}));
    assert_eq!((&five["set"], &five["keys"]), (&json!(5), &json!(3)), "{five}");
    assert!(changes(&five).contains("guests 5;"), "{five}");
    let over = cmd(r, "browser_type", json!({"selector": guests, "text": "12"}));
    assert_eq!((&over["set"], &over["asked"]), (&json!(8), &json!(12)), "kept to its bound: {over}");
    let e = cmd_err(r, "browser_type", json!({"selector": guests, "text": "three"}));
    assert!(e.contains("spinbutton") && e.contains("takes a number"), "{e}");
}

/// The model reads an action's changes as lines after the result's JSON, between the page
/// markers, whichever profile the session runs with.
#[test]
fn the_model_reads_the_changes_as_lines_in_both_profiles() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    for profile in ["small", "full"] {
        let dir = TempDir::new("page-changes-model");
        let script = vec![
            tool("browser_type", json!({"selector": "#city", "text": "par"})),
            tool("finish_task", json!({"summary": "done"})),
        ];
        let (d, llm) = llm_daemon(dir.path(), script, |_| {});
        let _worker = RealWorker::start(&d, "changes-model-box", "browser");
        let c = d.client();
        let id = create_session(
            &c,
            json!({"mode": "task", "target": format!("{}/widgets", site.url), "instruction": "Pick a city",
                   "options": {"profile": profile}}),
        );
        wait_status(&c, &id, "finished");
        let data = llm.requests()[1].last_result_data();
        let (json_part, lines) = data.split_once('\n').unwrap_or_else(|| panic!("{profile}: {data}"));
        let result: Value = serde_json::from_str(json_part).unwrap_or_else(|e| panic!("{profile}: {e}: {data}"));
        // The page it stayed on: its title, URL and the counts are said once, by the lines' head.
        assert_eq!(result, json!({"into": "#city", "typed": 3}), "{profile}: {data}");
        assert!(lines.starts_with("What changed on the page (lines: "), "{profile}: {data}");
        assert!(lines.lines().any(|l| l.starts_with("[e") && l.ends_with("option \"Paris\"")), "{profile}: {data}");
    }
}
