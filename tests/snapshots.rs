//! Page snapshots and honest tool results, through the real controller, agent-worker and
//! headless Chromium on a site served on loopback: what a snapshot shows and hides, acting by
//! `ref=`, stale refs, a 404, a wrong selector answered with the page, the wrong kind of
//! element, a download that is an HTML page, a PDF printed after a wait that timed out, and
//! clicks that cannot do what a model expects (a select, a form the browser will not send).

use crate::support::worker::{OnSite, have_chromium};
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

/// What an action left on the page: its new snapshot, else its whole answer.
fn shown(v: &Value) -> String {
    v["snapshot"].as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

/// The typed refusal of a click the worker refuses on purpose, with its words as `message`.
fn cmd_refusal(r: &SessionRunner, params: Value) -> Value {
    match r.execute("browser_click", params.clone(), Duration::from_secs(60)) {
        Err(agent_controller::exec::ExecError::Refused { mut refusal, message }) => {
            refusal["message"] = json!(message);
            refusal
        }
        other => panic!("browser_click {params} should be refused, got {other:?}"),
    }
}

/// The ref on the snapshot line that contains `needle`.
fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in\n{snapshot}"));
    let start = line.find("[e").unwrap() + 1;
    line[start..start + line[start..].find(']').unwrap()].to_string()
}

#[test]
fn snapshots_show_the_page_and_refs_act_on_it() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("snapshots", "look");
    let (site, r) = (&on.site, &on.r);

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/snap", site.url), "snapshot_chars": 4000}));
    assert_eq!(nav["status"], 200);
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    assert!(snap.starts_with(&format!("Page: \"Snapshot\" — {}/snap\n", site.url)), "a 2xx is not said: {snap}");
    assert!(snap.contains("heading 1 \"Snapshot page\""), "{snap}");
    assert!(snap.contains(&format!("link \"About us\" → {}/about.html", site.url)), "absolute hrefs: {snap}");
    for anchor in ["More", "Fees"] {
        let line = format!("link \"{anchor}\"");
        assert!(snap.lines().any(|l| l.ends_with(&line)), "a link within the page has no address: {snap}");
    }
    assert!(snap.contains("text \"Intro text with bold words.\""), "{snap}");
    assert!(snap.lines().any(|l| l == "image \"Logo\""), "an image a click does nothing on has no ref: {snap}");
    assert!(snap.lines().any(|l| l.starts_with("[e") && l.ends_with("\"Zoom\"")), "a clickable one has: {snap}");
    assert!(snap.contains("table 31×2") && snap.contains("| Plan 3 | 30 |"), "rows: {snap}");
    assert!(snap.contains("16 more rows") && !snap.contains("Plan 20 "), "bounded rows: {snap}");
    assert!(snap.contains("input email \"Email\" name=user value=\"bob@example.test\""), "{snap}");
    assert!(snap.contains("input password \"Password\" name=pass (filled; value hidden)"), "{snap}");
    assert!(!nav.to_string().contains("PLANTED-PW-VALUE"), "a password's value never appears");
    assert_eq!(nav["sign_in"], true, "a password field is said as a field, not left to the words");
    let survey = cmd(r, "browser_navigate", json!({"url": format!("{}/survey", site.url)}));
    assert_eq!(survey.get("sign_in"), None, "a form with a list that asks for a password is no sign-in form: {survey}");
    cmd(r, "browser_navigate", json!({"url": format!("{}/snap", site.url), "snapshot_chars": 4000}));
    assert!(snap.contains("select \"Color\" name=color: Red=r | Green=g (selected)"), "{snap}");
    let story = snap.lines().find(|l| l.contains("name=story")).unwrap_or_else(|| panic!("{snap}"));
    assert!(
        story.contains("value=\"word1 word2 ") && story.contains(" … ") && story.ends_with("word80 Finale.\""),
        "{story}"
    );
    assert!(!snap.contains("HIDDEN-TEXT") && !snap.contains("Hidden link"), "hidden elements are dropped: {snap}");
    assert!(snap.contains(&format!("iframe {}/frame:", site.url)) && snap.contains("  [e"), "{snap}");
    assert!(snap.contains("text \"Inside the frame\""), "the frame's content: {snap}");

    // A page nested 1 000 deep: the walk stops at its depth bound, the rest of the page shows.
    let deep = cmd(r, "browser_navigate", json!({"url": format!("{}/deep", site.url)}));
    let deep = deep["snapshot"].as_str().unwrap();
    assert!(deep.contains("heading 1 \"Deep page\"") && deep.contains("After the depths"), "{deep}");
    assert!(!deep.contains("at the bottom"), "{deep}");
    cmd(r, "browser_navigate", json!({"url": format!("{}/snap", site.url)}));

    // Acting by ref, in the page and inside the frame.
    let clicked =
        cmd(r, "browser_click", json!({"selector": format!("ref={}", ref_of(&snap, "button \"Say hello\""))}));
    assert_eq!(clicked["clicked"], "button");
    // On the same page a click answers with what it changed, not the whole page again.
    assert_eq!(clicked["changes"], "What changed on the page (lines: 1 new):\ntext \"clicked!\"", "{clicked}");
    let frame_button = ref_of(&snap, "button \"Frame button\"");
    let in_frame = cmd(r, "browser_click", json!({"selector": format!("ref={frame_button}")}));
    let changed = in_frame["changes"].as_str().unwrap();
    assert!(changed.contains(&format!("[{frame_button}] button \"frame clicked\"")), "{in_frame}");
    let email = ref_of(&snap, "input email");
    cmd(r, "browser_type", json!({"selector": format!("ref={email}"), "text": "zoe@example.test"}));
    let again = cmd(r, "browser_snapshot", json!({}));
    assert!(
        again["snapshot"]
            .as_str()
            .unwrap()
            .contains(&format!("[{email}] input email \"Email\" name=user value=\"zoe@example.test\"")),
        "refs are stable: {again}"
    );

    // A selector that matches nothing: reading tools answer with the page where the controller
    // asks (`read_miss_page`), acting ones fail with it.
    let dom = cmd(r, "browser_get_dom", json!({"selector": "#no-such-part", "read_miss_page": true}));
    assert_eq!(dom["found"], false);
    assert!(dom["message"].as_str().unwrap().contains("no element matches `#no-such-part`"), "{dom}");
    assert!(dom["snapshot"].as_str().unwrap().contains("button \"Say hello\""), "{dom}");
    let e = cmd_err(r, "browser_click", json!({"selector": "#buy"}));
    assert!(e.contains("no element matches `#buy`") && e.contains("button \"Say hello\""), "{e}");
    // The wrong kind of element says what it is and which tool fits.
    let e = cmd_err(r, "browser_fill_form", json!({"fields": [{"selector": "#hello", "value": "x"}]}));
    assert!(e.contains("is a button \"Say hello\", not a text field: use browser_click"), "{e}");
    let e = cmd_err(r, "browser_type", json!({"selector": "#hello", "text": "x"}));
    assert!(e.contains("is a button"), "{e}");

    // Another page: a ref that names nothing there says so, and what to do.
    let missing = cmd(r, "browser_navigate", json!({"url": format!("{}/no-such-page", site.url)}));
    assert_eq!(missing["status"], 404);
    assert!(missing["warning"].as_str().unwrap().contains("HTTP 404"), "{missing}");
    assert!(missing["snapshot"].as_str().unwrap().contains("(HTTP 404)"), "{missing}");
    let e = cmd_err(r, "browser_click", json!({"selector": format!("ref={email}")}));
    assert!(
        e.contains(&format!("ref={email} (input email \"Email\" name=user) is not on this page"))
            && e.contains("use a ref from the latest snapshot"),
        "{e}"
    );
    let back = cmd(r, "browser_back", json!({}));
    let back = back["snapshot"].as_str().unwrap().to_string();
    assert!(back.contains("Snapshot page"), "{back}");
    // Back on the first page, a new document: the same elements get the refs they had.
    assert_eq!(ref_of(&back, "input email"), email, "{back}");
    cmd(r, "browser_type", json!({"selector": format!("ref={email}"), "text": "max@example.test"}));
    // A long page comes in parts: the next part holds what the first left out.
    let first = cmd(r, "browser_snapshot", json!({"snapshot_chars": 600}));
    let first = first["snapshot"].as_str().unwrap();
    assert!(first.contains(" — part 1 of ") && first.ends_with("browser_snapshot {\"page\": 2}"), "{first}");
    let second = cmd(r, "browser_snapshot", json!({"snapshot_chars": 600, "page": 2}));
    let second = second["snapshot"].as_str().unwrap();
    assert!(second.contains(" — part 2 of "), "{second}");
    let shown: Vec<&str> = first.lines().skip(1).collect();
    assert!(second.lines().skip(1).all(|l| !shown.contains(&l)), "no line twice: {first}\n{second}");

    // A download that is an HTML page says so; a PDF whose wait times out is printed anyway.
    let dl = cmd(r, "browser_download", json!({"url": format!("{}/export/pricing.csv", site.url)}));
    assert!(dl["content_type"].as_str().unwrap().starts_with("text/html"), "{dl}");
    assert!(dl["warning"].as_str().unwrap().contains("HTML page"), "{dl}");
    let t = std::time::Instant::now();
    let pdf = cmd(r, "browser_save_as_pdf", json!({"filename": "snap.pdf", "wait_for_selector": "#never"}));
    assert!(pdf["warning"].as_str().unwrap().contains("printed as it was"), "{pdf}");
    assert!(t.elapsed() < Duration::from_secs(25), "{:?}", t.elapsed());
    assert!(on.d.client().get(&format!("/sessions/{}/files/snap.pdf", on.id)).body.starts_with(b"%PDF"));
}

/// A click that would do nothing a model expects says why: a select does not choose, a form the
/// browser will not send names the fields in the way (by ref), a text field says how to type.
#[test]
fn clicks_say_what_they_cannot_do() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("clicks", "send");
    let (site, r) = (&on.site, &on.r);

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/required", site.url), "snapshot_chars": 4000}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    let (name, email, send) =
        (ref_of(&snap, "\"Your name\""), ref_of(&snap, "input email"), ref_of(&snap, "button \"Send\""));
    let e = cmd_err(r, "browser_click", json!({"selector": format!("ref={send}"), "hold_invalid": true}));
    assert!(e.contains("the form was not sent") && e.contains(&format!("[{name}] \"Your name\"")), "{e}");
    // Not asked to hold it (`invalid_form_hold` off), the click is made and the browser keeps
    // the form: the page stays.
    let sent = cmd(r, "browser_click", json!({"selector": format!("ref={send}")}));
    assert!(sent["url"].as_str().unwrap().ends_with("/required"), "{sent}");
    let e = cmd_err(r, "browser_click", json!({"selector": format!("ref={}", ref_of(&snap, "select"))}));
    assert!(e.contains("a click does not choose") && e.contains("browser_select_option") && e.contains("Green"), "{e}");
    let clicked = cmd(r, "browser_click", json!({"selector": format!("ref={name}"), "advice": true}));
    assert!(clicked["next"].as_str().unwrap().contains("browser_type"), "{clicked}");
    let plain = cmd(r, "browser_click", json!({"selector": format!("ref={name}")}));
    assert!(plain.get("next").is_none(), "advice only where `tool_advice` asks: {plain}");
    // A field's name where a ref was meant finds it where `loose_selectors` asks, and says so;
    // elsewhere it is no selector.
    let e = cmd_err(r, "browser_fill_form", json!({"fields": [{"selector": "ref=name", "value": "Zoe"}]}));
    assert!(e.contains("invalid selector `ref=name`"), "{e}");
    let loose = |fields: Value| json!({"fields": fields, "loose_selectors": true});
    let filled = cmd(r, "browser_fill_form", loose(json!([{"selector": "ref=name", "value": "Zoe"}])));
    assert_eq!(filled["read_as"], json!([{"selector": "ref=name", "read_as": "the element named name"}]), "{filled}");
    let e = cmd_err(r, "browser_fill_form", loose(json!([{"selector": "ref=phone", "value": "1"}])));
    assert!(e.contains("no element has the ref, name or id `phone`"), "{e}");
    cmd(r, "browser_type", json!({"selector": format!("ref={email}"), "text": "not an address"}));
    let e = cmd_err(r, "browser_click", json!({"selector": format!("ref={send}"), "hold_invalid": true}));
    assert!(e.contains(&format!("[{email}] \"Email\"")) && !e.contains("Your name"), "{e}");
    cmd(r, "browser_type", json!({"selector": format!("ref={email}"), "text": "zoe@example.test", "clear": true}));
    // Asked for by the small profile's guard: the select nobody chose is pointed out once, typed.
    let asked = json!({"selector": format!("ref={send}"), "confirm_defaults": true});
    let refusal = cmd_refusal(r, asked.clone());
    assert_eq!((&refusal["refused"], &refusal["selector"]), (&json!("form_unset"), &json!(format!("ref={send}"))));
    let fields = refusal["fields"].as_array().unwrap();
    assert!(
        fields.iter().any(|f| f["value"] == "Red") && !fields.iter().any(|f| f["label"] == "Your name"),
        "{refusal}"
    );
    let color = fields.iter().find(|f| f["value"] == "Red").unwrap();
    assert_eq!((&color["kind"], &color["options"]), (&json!("select"), &json!(["Red", "Green"])), "typed: {refusal}");
    // An option as the snapshot lists it (`Green=g`) is chosen.
    let chosen = cmd(r, "browser_select_option", json!({"selector": "select", "value": "Green=g"}));
    assert_eq!(chosen["selected"], "g", "{chosen}");
    // Its text in another case is that option; part of it only where `loose_selectors` asks.
    assert_eq!(cmd(r, "browser_select_option", json!({"selector": "select", "value": "red"}))["selected"], "r");
    let e = cmd_err(r, "browser_select_option", json!({"selector": "select", "value": "gre"}));
    assert!(e.contains("no option `gre`"), "{e}");
    let part = cmd(r, "browser_select_option", json!({"selector": "select", "value": "gre", "loose_selectors": true}));
    assert_eq!(part["selected"], "g", "{part}");
    assert_eq!(part["read_as"], json!([{"selector": "select", "read_as": "the option \"Green\""}]), "{part}");
    cmd(r, "browser_select_option", json!({"selector": "select", "value": "Green"}));
    let sent = cmd(r, "browser_click", asked);
    assert!(sent["snapshot"].as_str().unwrap().contains("name=Zoe"), "{sent}");
    // Without the guard (the full profile) the first click sends the form as it is.
    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/required", site.url), "snapshot_chars": 4000}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    cmd(
        r,
        "browser_fill_form",
        loose(json!([{"selector": "ref=name", "value": "Ann"}, {"selector": "ref=email", "value": "a@b.test"}])),
    );
    let sent = cmd(r, "browser_click", json!({"selector": format!("ref={}", ref_of(&snap, "button \"Send\""))}));
    assert!(sent["snapshot"].as_str().unwrap().contains("name=Ann"), "{sent}");

    // A click on a heading is made like any other: the model sees what happened.
    cmd(r, "browser_navigate", json!({"url": format!("{}/snap", site.url)}));
    assert_eq!(cmd(r, "browser_click", json!({"selector": "h1"}))["clicked"], "h1");
    // A ref of a link to the page now open says that this is where it led.
    let snap = cmd(r, "browser_snapshot", json!({}));
    let about = ref_of(snap["snapshot"].as_str().unwrap(), "link \"About us\"");
    cmd(r, "browser_navigate", json!({"url": format!("{}/about.html", site.url)}));
    let e = cmd_err(r, "browser_click", json!({"selector": format!("ref={about}")}));
    assert!(e.contains("is not on this page; it is a link to the page you are on now"), "{e}");
}

/// What the page makes clickable gets a ref whatever its tag, and states show: a click on the
/// span's ref runs its handler, and the accordion keeps its ref when it opens, in the same
/// document and on a later one that starts open.
#[test]
fn snapshots_show_clickables_and_states() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("states", "look");
    let (site, r) = (&on.site, &on.r);

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/states", site.url)}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    let like = ref_of(&snap, "clickable \"Like\"");
    assert!(snap.contains("text \"Tell us:\"") && snap.contains("text \"if you agree.\""), "{snap}");
    ref_of(&snap, "clickable \"Open card\"");
    assert_eq!(snap.matches("Open card").count(), 1, "a pointer div holding a pointer span is one item: {snap}");
    // Listeners alone, with no pointer and no attribute: the page's script added them.
    let node = ref_of(&snap, "clickable \"Reports\"");
    let star = ref_of(&snap, "clickable \"Star\"");
    assert!(snap.contains("text \"Plain item\"") && !snap.contains("] text \"Plain item\""), "delegation only: {snap}");
    ref_of(&snap, "clickable \"Filter: red\"");
    ref_of(&snap, "clickable \"Help\"");
    ref_of(&snap, "tab \"Profile\" (selected)");
    ref_of(&snap, "tab \"Settings\"");
    assert!(!snap.contains("\"Settings\" (selected)"), "{snap}");
    let acc = ref_of(&snap, "button \"Shipping details\" (collapsed)");
    let more = ref_of(&snap, "clickable \"More info\" (collapsed)");
    let bold = ref_of(&snap, "button \"Bold\" (not pressed)");
    ref_of(&snap, "button \"Delete\" (disabled)");
    // Icons: named by the image's alt and the SVG's title a person reads them by.
    ref_of(&snap, "button \"Search\"");
    ref_of(&snap, "link \"Cart\" →");
    ref_of(&snap, "input text \"Code\" name=code (empty) (required)");
    ref_of(&snap, "input text \"Account\" name=account value=\"ACC-7\" (read-only)");
    assert!(!snap.contains("Ships in 3 days") && !snap.contains("Hidden details text"), "closed: {snap}");

    // What each click changed (the page stays).
    let click = |r_: &str| {
        let v = cmd(r, "browser_click", json!({"selector": format!("ref={r_}")}));
        v["changes"].as_str().unwrap_or_else(|| panic!("{v}")).to_string()
    };
    let after = click(&like);
    assert!(after.contains(&format!("[{like}] clickable \"Liked\"")), "the handler ran: {after}");
    let after = click(&ref_of(&snap, "clickable \"Open card\""));
    assert!(after.contains("text \"card opened\""), "the listener ran: {after}");
    let after = click(&node);
    assert!(after.contains(&format!("[{node}] clickable \"Reports (open)\"")), "the mousedown listener ran: {after}");
    let after = click(&star);
    assert!(after.contains(&format!("[{star}] clickable \"Starred\"")), "the onclick property ran: {after}");
    let after = click(&acc);
    assert!(after.contains(&format!("[{acc}] button \"Shipping details\" (expanded)")), "{after}");
    assert!(after.contains("Ships in 3 days"), "{after}");
    let after = click(&more);
    assert!(after.contains(&format!("[{more}] clickable \"More info\" (expanded)")), "{after}");
    assert!(after.contains("Hidden details text"), "{after}");
    let after = click(&bold);
    assert!(after.contains(&format!("[{bold}] button \"Bold\" (pressed)")), "{after}");
    // Another document where the accordion starts open: the ref it had (state marks aside).
    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/states?open=1", site.url)}));
    let open = nav["snapshot"].as_str().unwrap();
    assert!(open.contains(&format!("[{acc}] button \"Shipping details\" (expanded)")), "{open}");
}

/// The layouts page opened in a worker, and its snapshot; none without Chromium.
fn layouts_page() -> Option<(OnSite, String)> {
    if !have_chromium() {
        return None;
    }
    let on = OnSite::start("layouts", "look");
    let nav = cmd(&on.r, "browser_navigate", json!({"url": format!("{}/layouts", on.site.url)}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    Some((on, snap))
}

/// A field with no label of its own is named by the short text beside it in the smallest block
/// that holds no other field or button, as a person reads it; otherwise by its placeholder.
#[test]
fn fields_without_a_label_are_named_by_the_text_beside_them() {
    let Some((on, snap)) = layouts_page() else { return };
    let snap = snap.as_str();
    for line in [
        "input text \"Genre\"",
        "input text \"Year\"",
        "input text \"Director:\"",
        "input text \"Town\"",
        "input text \"Search products\"",
        "input checkbox \"Remember me\" (not checked)",
        "input text \"\"",
    ] {
        ref_of(snap, line);
    }
    assert!(!snap.contains("input text \"Go\"") && !snap.contains("input text \"This paragraph"), "{snap}");
    // The table of fields reads as a form, in order, not as a data table of empty cells; the
    // text that names a field is said once, in the field's line.
    let (genre_field, year_field) = (snap.find("input text \"Genre\""), snap.find("input text \"Year\""));
    assert!(!snap.contains("table 2×2") && genre_field < year_field, "{snap}");
    for echo in ["text \"Genre\"", "text \"Director:\"", "text \"Town\""] {
        assert!(!snap.lines().any(|line| line.trim() == echo), "{echo} is said once: {snap}");
    }
    assert!(snap.contains("text \"This paragraph explains"), "a longer text beside a box stays: {snap}");
    // Selectors in other tools' words (`loose_selectors`): `:contains` and `button=Go` are taken;
    // `:text` is not, and the answer names the inputs shown.
    let genre = ref_of(snap, "input text \"Genre\"");
    let e = cmd_err(&on.r, "browser_type", json!({"selector": "input:text", "text": "saga"}));
    assert!(e.contains(&format!("the input elements shown: `ref={genre}` \"Genre\"")), "{e}");
    // A label's text names its field, as a person reads the form; not without `loose_selectors`.
    let e = cmd_err(&on.r, "browser_type", json!({"selector": "text=Genre", "text": "saga"}));
    assert!(!e.is_empty(), "the label itself takes no typing");
    let typed = cmd(&on.r, "browser_type", json!({"selector": "text=Genre", "text": "saga", "loose_selectors": true}));
    assert_eq!(
        (&typed["typed"], &typed["read_as"][0]["read_as"]),
        (&json!(4), &json!("the field it labels")),
        "{typed}"
    );
    let changes = typed["changes"].as_str().unwrap_or_default();
    assert!(changes.contains(&format!("[{genre}] input text \"Genre\" (value as typed)")), "{typed}");
    for selector in ["button:contains('Go')", "button=Go"] {
        let e = cmd_err(&on.r, "browser_click", json!({"selector": selector}));
        assert!(e.contains("invalid selector"), "{selector}: {e}");
        let go = cmd(&on.r, "browser_click", json!({"selector": selector, "loose_selectors": true}));
        assert_eq!(go["text"], "Go", "{selector}: {go}");
    }
}

/// A checkbox or radio takes true or false, or (a radio, where `radio_by_label` asks) one of its
/// group's labels; any other value is refused with the group's choices and the text fields
/// beside it, and ticks nothing.
/// Typing into what the page makes clickable says to click it.
#[test]
fn a_box_takes_only_a_state_or_a_label_and_a_clickable_is_clicked() {
    let Some((on, snap)) = layouts_page() else { return };
    let snap = snap.as_str();
    let (small, large) = (ref_of(snap, "input radio \"Small\""), ref_of(snap, "input radio \"Large\""));
    let qty = ref_of(snap, "input text \"Quantity\"");
    let fill = |selector: &str, value: &str| json!({"fields": [{"selector": selector, "value": value}]});
    let e = cmd_err(&on.r, "browser_fill_form", fill(&format!("ref={small}"), "6"));
    assert!(e.contains("is a radio: it is checked or not") && e.contains("takes no \"6\""), "{e}");
    assert!(e.contains(&format!("[{small}] \"Small\", [{large}] \"Large\"")), "the choices: {e}");
    assert!(e.contains(&format!("Text goes into a text field: [{qty}] \"Quantity\"")), "{e}");
    let e = cmd_err(&on.r, "browser_fill_form", fill(&format!("ref={small}"), "Large"));
    assert!(e.contains("takes no \"Large\"") && e.contains(&format!("[{large}] \"Large\"")), "{e}");
    let mut by_label = fill(&format!("ref={small}"), "Large");
    by_label["radio_by_label"] = true.into();
    let filled = cmd(&on.r, "browser_fill_form", by_label);
    let want = json!({"selector": format!("ref={large}"), "checked": true, "chosen_by_label": true});
    assert_eq!(filled["filled"][0], want, "{filled}");
    let now = cmd(&on.r, "browser_snapshot", json!({}));
    let now = now["snapshot"].as_str().unwrap();
    assert!(
        now.contains("\"Small\" name=size (not checked)") && now.contains("\"Large\" name=size (checked)"),
        "{now}"
    );
    let remember = ref_of(snap, "input checkbox \"Remember me\"");
    let ticked = cmd(&on.r, "browser_fill_form", fill(&format!("ref={remember}"), "yes"));
    assert_eq!(ticked["filled"][0]["checked"], true, "{ticked}");
    let send = ref_of(snap, "clickable \"Send\"");
    let e = cmd_err(&on.r, "browser_type", json!({"selector": format!("ref={send}"), "text": "Send"}));
    assert!(e.contains("not a text field: use browser_click"), "{e}");
}

/// The worker's guard on what it was not written for, asked for as the small profile asks: a
/// form whose one field was typed is sent at the first click, and a click on a link goes where
/// it leads (`form_defaults`).
#[test]
fn guard_form_defaults_is_quiet_on_a_typed_form_and_a_link() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("guards-worker-quiet", "send");
    let (site, r) = (&on.site, &on.r);
    let guarded = |selector: &str| json!({"selector": selector, "confirm_defaults": true});

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/form2", site.url)}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    cmd(
        r,
        "browser_type",
        json!({"selector": format!("ref={}", ref_of(&snap, "Your email")), "text": "zoe@example.test"}),
    );
    let sent = cmd(r, "browser_click", guarded(&format!("ref={}", ref_of(&snap, "Send order"))));
    assert!(sent["snapshot"].as_str().unwrap().contains("Order received"), "sent at the first click: {sent}");

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/menu", site.url)}));
    let about = ref_of(nav["snapshot"].as_str().unwrap(), "link \"About us\"");
    let clicked = cmd(r, "browser_click", guarded(&format!("ref={about}")));
    assert!(clicked["url"].as_str().unwrap_or_default().ends_with("/about.html"), "followed: {clicked}");
}

/// `form_defaults` on a page built without `<form>`: a default button among fields is held once,
/// naming them (typed, with the button's text); so is a `type=button` among empty fields (pages
/// that send by script); a button in a card with no field and a step button (`type=button`)
/// beside a filled field are clicked at once; the held button's second click sends.
#[test]
fn form_defaults_holds_a_button_among_fields_with_no_form_once() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("spa-form", "join");
    let (site, r) = (&on.site, &on.r);
    let guarded = |r: &str| json!({"selector": format!("ref={r}"), "confirm_defaults": true});

    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/spa-form", site.url)}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    let join = ref_of(&snap, "button \"Join\"");
    let refusal = cmd_refusal(r, guarded(&join));
    assert_eq!((&refusal["refused"], &refusal["text"]), (&json!("form_unset"), &json!("Join")), "{refusal}");
    let kinds: Vec<_> =
        refusal["fields"].as_array().unwrap().iter().map(|f| (f["kind"].clone(), f["value"].clone())).collect();
    assert_eq!(kinds, [(json!("text"), json!("")), (json!("select"), json!("Basic"))], "{refusal}");
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(message.contains("to send the form as it is"), "a select the page set: {refusal}");
    let empty = cmd_refusal(r, guarded(&ref_of(&snap, "button \"Apply\"")));
    let message = empty["message"].as_str().unwrap_or_default();
    assert!(message.contains("nothing was typed into") && !message.contains("as it is"), "{empty}");
    let days = cmd_refusal(r, guarded(&ref_of(&snap, "button \"Book\"")));
    assert_eq!(days["fields"][0]["kind"], "select-multiple", "a select that takes several says so: {days}");
    assert_eq!(days["fields"][0]["label"], "Days", "{days}");
    let bought = cmd(r, "browser_click", guarded(&ref_of(&snap, "button \"Buy\"")));
    assert!(shown(&bought).contains("bought lamp"), "no field around it: {bought}");
    let find = ref_of(&snap, "button \"Find\"");
    let scripted = cmd_refusal(r, guarded(&find));
    assert_eq!(
        (&scripted["refused"], &scripted["fields"][0]["label"]),
        (&json!("form_unset"), &json!("Title")),
        "a type=button among empty fields: {scripted}"
    );
    let found = cmd(r, "browser_click", guarded(&find));
    assert!(shown(&found).contains("found"), "held once only: {found}");
    let stepped = cmd(r, "browser_click", guarded(&ref_of(&snap, "button \"+\"")));
    assert!(shown(&stepped).contains("qty 2"), "a step button sends nothing: {stepped}");
    let joined = cmd(r, "browser_click", guarded(&join));
    assert!(shown(&joined).contains("joined Basic"), "held once only: {joined}");
}

/// A read-only field (a date picked from a calendar) takes no typing: typed into, it is refused,
/// the click named, and where `readonly_click` asks it is clicked, the answer showing the
/// calendar that opened; no fill writes it. The calendar lies over the button: a click there
/// would hit a day, so it is not made, and the answer names the calendar.
#[test]
fn a_read_only_field_opens_its_calendar_and_a_covered_button_is_not_clicked() {
    if !have_chromium() {
        return;
    }
    let on = OnSite::start("read-only", "reserve");
    let (site, r) = (&on.site, &on.r);
    let nav = cmd(r, "browser_navigate", json!({"url": format!("{}/spa-form", site.url)}));
    let snap = nav["snapshot"].as_str().unwrap().to_string();
    let reserve = format!("ref={}", ref_of(&snap, "button \"Reserve\""));
    let arrive = format!("ref={}", ref_of(&snap, "(read-only)"));
    let e = cmd_err(r, "browser_fill_form", json!({"fields": [{"selector": arrive, "value": "03/03/2024"}]}));
    assert!(e.contains("is read-only"), "{e}");
    let e = cmd_err(r, "browser_type", json!({"selector": arrive, "text": "03/03/2024"}));
    assert!(e.contains("is read-only") && e.contains("Click it (browser_click)"), "{e}");
    assert!(cmd(r, "browser_click", json!({"selector": reserve}))["clicked"].is_string(), "nothing opened over it");
    let typed = cmd(r, "browser_type", json!({"selector": arrive, "text": "03/03/2024", "readonly_click": true}));
    assert_eq!((&typed["typed"], &typed["clicked_read_only"]), (&json!(0), &json!(true)), "{typed}");
    assert!(typed["next"].as_str().unwrap_or_default().contains("read-only field"), "{typed}");
    let e = cmd_err(r, "browser_click", json!({"selector": reserve}));
    assert!(e.contains("is covered by [") && e.contains("div \"March 2024 1 2 3 4 5\""), "{e}");
    let day = ref_of(typed["changes"].as_str().unwrap_or_default(), "link \"3\"");
    cmd(r, "browser_click", json!({"selector": format!("ref={day}")}));
    let reserved = cmd(r, "browser_click", json!({"selector": reserve}));
    assert!(shown(&reserved).contains("reserved 03/03/2024"), "picked from the calendar: {reserved}");
}
