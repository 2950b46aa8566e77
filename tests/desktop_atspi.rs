//! Widgets from the AT-SPI accessibility bus, end to end: a real Xvfb, a session bus of the
//! test's own, the real at-spi-bus-launcher it starts, and a GTK 3 question dialog
//! (`gtk_dialog.py`: GTK's built-in bridge registers its widgets; Yes exits 0, No 1), driven
//! through the real controller and agent-worker.
//! Skipped with a message only when those programs are missing (`make test` installs them).
//! The worker without a bus is covered in desktop.rs (its answers say "not available").

use crate::desktop::{DesktopWorker, cmd, cmd_err, exit_code, rig};
use crate::support::desktop::{GTK_DIALOG, SessionBus, Xvfb, have_atspi, have_xvfb};
use crate::support::*;
use serde_json::{Value, json};

/// The question dialog titled `title`, in `bus`'s session.
fn dialog(bus: &SessionBus, x: &Xvfb, title: &str, text: &str) -> ChildGuard {
    bus.spawn(x, "/usr/bin/python3", &[GTK_DIALOG, title, text])
}

/// Every object in `v` (depth first) for which `f` holds.
fn all<'a>(v: &'a Value, f: &dyn Fn(&Value) -> bool, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(map) => {
            if f(v) {
                out.push(v);
            }
            map.values().for_each(|c| all(c, f, out));
        }
        Value::Array(items) => items.iter().for_each(|c| all(c, f, out)),
        _ => {}
    }
}

/// The one element in `list` with this name, checked to be a button of `window`.
fn button<'a>(list: &'a Value, name: &str, window: &str) -> &'a Value {
    let mut found = Vec::new();
    all(&list["elements"], &|e| e["name"] == name, &mut found);
    assert_eq!(found.len(), 1, "one {name:?} in {list}");
    let b = found[0];
    assert!(b["type"].as_str().unwrap().contains("button"), "{b}");
    assert_eq!(b["window"], window, "{b}");
    assert!(b["id"].as_str().unwrap().starts_with('w'), "{b}");
    b
}

fn rect(v: &Value) -> (i64, i64, i64, i64) {
    let n = |k: &str| v[k].as_i64().unwrap_or_else(|| panic!("no {k} in {v}"));
    (n("x"), n("y"), n("width"), n("height"))
}

/// Whether `inner` lies inside `outer`, give or take a pixel of rounding.
fn inside(inner: (i64, i64, i64, i64), outer: (i64, i64, i64, i64)) -> bool {
    inner.2 > 10
        && inner.3 > 10
        && inner.0 + 1 >= outer.0
        && inner.1 + 1 >= outer.1
        && inner.0 + inner.2 <= outer.0 + outer.2 + 1
        && inner.1 + inner.3 <= outer.1 + outer.3 + 1
}

#[test]
fn widgets_come_from_the_accessibility_bus_and_their_ids_can_be_clicked() {
    if !have_xvfb() || !have_atspi() {
        return;
    }
    let x = Xvfb::start("1920x1080");
    let bus = SessionBus::start(&x);
    let mut first = dialog(&bus, &x, "Deploy check", "Deploy now?");
    x.window_id("Deploy check");
    // The worker has no session bus: it finds the accessibility bus on the X root window.
    let rig = rig(&x, "atspi-box");
    let r = &rig.runner;
    assert_eq!(cmd(r, "screenshot", json!({}))["scale"], 1.5);

    let tree = cmd(r, "get_ui_tree", json!({}));
    assert!(tree["widgets_from"].as_str().unwrap().contains("AT_SPI_BUS"), "{tree}");
    let alert = &tree["widgets"][0];
    assert_eq!((alert["window"].as_str(), alert["role"].as_str()), (Some("Deploy check"), Some("alert")), "{tree}");
    let mut in_tree = Vec::new();
    all(alert, &|w| w["role"].as_str().is_some_and(|r| r.contains("button")), &mut in_tree);
    let names: Vec<&str> = in_tree.iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["No", "Yes"], "{tree}");

    // The list: the window, then its interactive widgets, in image pixels inside the window.
    let list = cmd(r, "list_elements", json!({}));
    let window = list["elements"].as_array().unwrap().iter().find(|e| e["type"] == "window").unwrap();
    assert_eq!(window["title"], "Deploy check", "{list}");
    let (yes, no) = (button(&list, "Yes", "Deploy check"), button(&list, "No", "Deploy check"));
    assert!(inside(rect(yes), rect(window)) && inside(rect(no), rect(window)), "{list}");
    assert!(rect(no).0 + rect(no).2 <= rect(yes).0 + 1, "No is left of Yes: {list}");
    assert_eq!(yes["id"], in_tree[1]["id"], "the same id in the tree and the list");
    assert!(yes["actions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().eq_ignore_ascii_case("click")));
    let buttons = cmd(r, "list_elements", json!({"control_type": "button"}));
    assert_eq!(buttons["elements"].as_array().unwrap().len(), 2, "{buttons}");
    let labels = cmd(r, "list_elements", json!({"control_type": "label"}));
    assert_eq!(labels["elements"][0]["name"], "Deploy now?", "{labels}");

    // Not a plain left click: the pointer goes to the widget's centre (image pixels there).
    let (nx, ny, nw, nh) = rect(no);
    let rc = cmd(r, "right_click", json!({"element": no["id"]}));
    assert_eq!(rc["method"], "the pointer at its centre", "{rc}");
    let at = rc["right_clicked"].as_array().unwrap();
    let (cx, cy) = (at[0].as_i64().unwrap(), at[1].as_i64().unwrap());
    assert!((cx - (nx + nw / 2)).abs() <= 1 && (cy - (ny + nh / 2)).abs() <= 1, "{rc} vs {no}");
    assert_eq!(rc["window"], "Deploy check", "{rc}");
    // The geometry is where the button is: a click there, by coordinates, answers "No".
    cmd(r, "click", json!({"x": cx, "y": cy}));
    assert_eq!(exit_code(&mut first, "the dialog to exit"), 1, "the No button's code");
    let e = cmd_err(r, "click", json!({"element": no["id"]}));
    assert!(e.contains("gone or does not answer"), "{e}");
    let e = cmd_err(r, "click", json!({"element": "w999"}));
    assert!(e.contains("w999 is no widget id this worker gave"), "{e}");

    // A plain click on an id uses the widget's own action.
    let mut second = dialog(&bus, &x, "Deploy again", "Really?");
    x.window_id("Deploy again");
    let list = cmd(r, "list_elements", json!({"window": "again"}));
    let yes = button(&list, "Yes", "Deploy again");
    let clicked = cmd(r, "click", json!({"element": yes["id"]}));
    assert!(clicked["method"].as_str().unwrap().starts_with("its accessible action"), "{clicked}");
    assert_eq!(clicked["element"], format!("{}: push button \"Yes\"", yes["id"].as_str().unwrap()), "{clicked}");
    assert_eq!(exit_code(&mut second, "the dialog to exit"), 0, "the Yes button's code");

    // An application that hangs (stopped) costs one call's time limit, and the others are
    // still listed.
    let _awake = dialog(&bus, &x, "Awake", "Here?");
    let hung = dialog(&bus, &x, "Hung", "Frozen?");
    x.window_id("Awake");
    x.window_id("Hung");
    assert!(std::process::Command::new("kill").args(["-STOP", &hung.0.id().to_string()]).status().unwrap().success());
    let started = std::time::Instant::now();
    let list = cmd(r, "list_elements", json!({}));
    let took = started.elapsed();
    button(&list, "Yes", "Awake");
    let notes = list["widget_notes"].to_string();
    assert!(notes.contains("left out") && notes.contains("no answer within 1500 ms"), "{list}");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    let _ = std::process::Command::new("kill").args(["-CONT", &hung.0.id().to_string()]).status();
}

/// The model lists the buttons, picks "No" from the tool result by its name, and clicks its id.
/// This worker finds the accessibility bus through the session bus (the root window's
/// property is removed).
#[test]
fn the_model_clicks_a_button_it_found_in_list_elements() {
    use crate::support::llm::*;
    if !have_xvfb() || !have_atspi() {
        return;
    }
    let x = Xvfb::start("1280x800");
    let bus = SessionBus::start(&x);
    let mut question = dialog(&bus, &x, "Shutdown check", "Shut down?");
    x.window_id("Shutdown check");
    assert!(x.output("xprop", &["-root", "AT_SPI_BUS"]).contains("unix:"), "the launcher set the property");
    x.command("xprop", &["-root", "-remove", "AT_SPI_BUS"]).status().unwrap();

    let script = vec![
        tool("get_ui_tree", json!({})),
        tool("list_elements", json!({"control_type": "button"})),
        tool("finish_task", json!({"summary": "found the buttons"})),
    ];
    let dir = TempDir::new("atspi-llm");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let env = [("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())];
    let _worker = DesktopWorker::start_with(&d, "atspi-llm", "app", &x.display, &env);
    let c = d.client();
    let look = json!({"mode": "task", "type": "app", "target": "Shutdown check", "instruction": "find the buttons"});
    wait_status(&c, &create_session(&c, look), "finished");

    let tree = result_json(&llm.requests()[1].last_results()[0]);
    assert!(tree["widgets_from"].as_str().unwrap().contains("org.a11y.Bus on the session bus"), "{tree}");
    let list = result_json(&llm.requests()[2].last_results()[0]);
    let no = button(&list, "No", "Shutdown check");
    assert_eq!(no["type"], "push button", "{no}");

    llm.push(vec![tool("click", json!({"element": no["id"]})), tool("finish_task", json!({"summary": "said no"}))]);
    let act = json!({"mode": "task", "type": "app", "target": "Shutdown check", "instruction": "say no"});
    wait_status(&c, &create_session(&c, act), "finished");
    assert_eq!(exit_code(&mut question, "the dialog to exit"), 1, "the No button's code");
    let clicked = llm.requests()[4].last_results()[0].to_string();
    assert!(clicked.contains("its accessible action"), "{clicked}");
    llm.assert_well_formed();
}

/// A tool result block's JSON (its content is the tool's answer as text, between markers).
fn result_json(block: &Value) -> Value {
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        other => panic!("a tool result without text: {other}"),
    };
    // What the desktop showed comes between the boundary's marker lines.
    let (first, rest) = text.split_once('\n').unwrap_or_else(|| panic!("not wrapped: {text}"));
    assert!(first.starts_with("<<desktop "), "not wrapped: {text}");
    let inner = rest.rsplit_once('\n').map_or(rest, |(inner, _)| inner);
    serde_json::from_str(inner).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
