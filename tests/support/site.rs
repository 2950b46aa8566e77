//! A small website on loopback for browser tests: PDF links, a table, a login that sets a
//! cookie guarding a private PDF, a form with a result page, content that appears late, a page
//! that remembers a visit in localStorage (every form posted kept, in order), a hostile page that tampers with its globals, and
//! widgets that answer an action in place (suggestions, a dialog, dates, a range, a spinner).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

pub struct Site {
    pub url: String,
    /// Every form posted to the site, as `PATH BODY`, in order.
    pub posted: Arc<std::sync::Mutex<Vec<String>>>,
    server: Arc<tiny_http::Server>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// A page that replaces what page helpers in its own world would use, fakes `window.__ac`, and
/// writes into `#spied` whatever of it is called.
const HOSTILE: &str = r#"<h1>Hostile</h1>
<table id="t"><tr><th>Name</th><th>Score</th></tr><tr><td>Ada</td><td>9</td></tr></table>
<input name="q" placeholder="Search"><button id="go" onclick="document.getElementById('out').textContent = 'went'">Go</button>
<p id="out"></p><p id="spied"></p>
<script>(() => {
  const log = document.getElementById('spied');
  const spy = what => { log.textContent += what + ';'; };
  const fake = () => { spy('__ac call'); return {url: 'pwned', title: 'pwned', snapshot: 'pwned'}; };
  window.__ac = new Proxy({}, {get: (_, k) => { spy('__ac.' + String(k)); return fake; }});
  const wrap = (proto, name) => { const orig = proto[name]; proto[name] = function (...a) { spy(name); return orig.apply(this, a); }; };
  wrap(Document.prototype, 'querySelector'); wrap(Document.prototype, 'querySelectorAll');
  wrap(Element.prototype, 'querySelectorAll'); wrap(Element.prototype, 'getBoundingClientRect');
  JSON.stringify = () => { spy('JSON.stringify'); return '"pwned"'; };
  Array.prototype.map = function () { spy('map'); return []; };
  Array.from = function () { spy('Array.from'); return []; };
  const value = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
  Object.defineProperty(HTMLInputElement.prototype, 'value',
    {get() { return value.get.call(this); }, set(v) { spy('value=' + v); value.set.call(this, v); }, configurable: true});
})();</script>"#;

pub fn pdf_bytes(name: &str) -> Vec<u8> {
    // Not a real PDF, but distinct bytes per file, some of them binary.
    let mut v = format!("%PDF-1.4\n% test file {name}\n").into_bytes();
    v.extend((0..5000u32).map(|i| (i.wrapping_mul(31) ^ name.len() as u32) as u8));
    v
}

fn page(title: &str, body: &str) -> String {
    format!("<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head><body>{body}</body></html>")
}

fn form_value(body: &str, key: &str) -> String {
    body.split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
        .unwrap_or_default()
}

/// A page with one of everything a snapshot shows or hides: an image and a clickable image, links
/// within the page (no address shown), a table longer than a snapshot lists, a filled password, a
/// hidden block, a long text the page put in a field, a same-origin frame.
fn snapshot_page() -> String {
    let rows: String = (1..=30).map(|i| format!("<tr><td>Plan {i}</td><td>{}</td></tr>", i * 10)).collect();
    let story: String = (1..=80).map(|i| format!("word{i} ")).collect();
    format!(
        r##"<h1>Snapshot page</h1><p>Intro text with <b>bold</b> words.</p>
        <p><img alt="Logo" width="20" height="20" src="data:,"> <span style="cursor:pointer"><img alt="Zoom" width="20" height="20" src="data:,"></span></p>
        <nav><a href="/files/chapter1.pdf">Chapter 1</a> <a href="about.html">About us</a> <a href="#">More</a> <a href="#fees">Fees</a></nav>
        <table id="fees"><tr><th>Plan</th><th>Price</th></tr>{rows}</table>
        <form id="signin" action="/login" method="post"><label>Email <input type="email" name="user" value="bob@example.test"></label>
        <label>Password <input type="password" name="pass" value="PLANTED-PW-VALUE"></label>
        <button type="submit">Sign in</button></form>
        <label>Color <select name="color"><option value="r">Red</option><option value="g" selected>Green</option></select></label>
        <div style="display:none">HIDDEN-TEXT <a href="/secret">Hidden link</a></div>
        <textarea name="story">{story}Finale.</textarea>
        <button id="hello" onclick="document.getElementById('out').textContent='clicked!'">Say hello</button><div id="out"></div>
        <iframe src="/frame" width="400" height="150"></iframe>"##
    )
}

/// A page of what the page makes clickable and of states: a span with `onclick`, a pointer div
/// (with a pointer span in it) whose listener page JS added, a tree node with only a mousedown
/// listener and a span with only an `onclick` property (no pointer, no attribute), beside a
/// listener on their container that must not make its text clickable, a span made focusable
/// (`tabindex`) and one with only a pointer cursor, tabs, an accordion, `<details>`, a
/// toggle, a disabled button, a required and a read-only field. `open` starts the accordion open.
fn states_page(open: bool) -> String {
    let (expanded, hidden) = if open { ("true", "") } else { ("false", " hidden") };
    format!(
        r#"<h1>States</h1><p>Tell us: <span id="like" onclick="this.textContent='Liked'">Like</span> if you agree.</p>
        <div id="card" style="cursor:pointer"><span style="cursor:pointer">Open card</span></div><p id="card-out"></p>
        <script>document.getElementById('card').addEventListener('click', () => {{
          document.getElementById('card-out').textContent = 'card opened'; }});</script>
        <ul id="tree"><li><div id="node">Reports</div></li><li>Plain item</li></ul><p>Rate it: <span id="star">Star</span></p>
        <p><span tabindex="0">Filter: red</span> <span style="cursor:pointer">Help</span></p>
        <script>document.getElementById('node').addEventListener('mousedown', e => {{ e.target.textContent = 'Reports (open)'; }});
          document.getElementById('star').onclick = e => {{ e.target.textContent = 'Starred'; }};
          document.getElementById('tree').parentElement.addEventListener('click', () => {{}});</script>
        <div role="tablist"><div role="tab" aria-selected="true">Profile</div><div role="tab" aria-selected="false">Settings</div></div>
        <h3><button id="acc" aria-expanded="{expanded}" aria-controls="panel" onclick="const p = document.getElementById('panel');
          p.hidden = !p.hidden; this.setAttribute('aria-expanded', String(!p.hidden))">Shipping details</button></h3>
        <div id="panel"{hidden}>Ships in 3 days</div>
        <details><summary>More info</summary><p>Hidden details text</p></details>
        <button aria-pressed="false" onclick="this.setAttribute('aria-pressed', 'true')">Bold</button>
        <button disabled>Delete</button> <button><img src="/logo.png" alt="Search"></button>
        <a href="/cart"><svg width="9" height="9"><title>Cart</title><rect width="9" height="9"/></svg></a>
        <label>Code <input name="code" required></label> <label>Account <input name="account" value="ACC-7" readonly></label>"#
    )
}

/// Fields with no label of their own, laid out as pages do it: in a table row after a header
/// cell, after a span in a paragraph, before a caption; a search box beside its button (its
/// placeholder names it), a checkbox before its words, and a box after a long paragraph.
const LAYOUTS: &str = r#"<h1>Layouts</h1>
<table><tr><th>Genre</th><td><input id="genre"></td></tr><tr><th>Year</th><td><input id="year"></td></tr></table>
<p><span>Director:</span> <input id="director"></p>
<div class="entry"><input id="town"><div>Town</div></div>
<div class="search"><input id="q" placeholder="Search products"><button>Go</button></div>
<div><input type="checkbox" id="remember"> Remember me</div>
<div><p>This paragraph explains at length what the next box is for, far more than a label says.</p><input id="notes"></div>
<div><label><input type="radio" name="size" value="s"> Small</label> <label><input type="radio" name="size" value="l"> Large</label> <input id="qty" placeholder="Quantity"></div>
<div onclick="this.textContent = 'sent'">Send</div>"#;

/// A page built without `<form>`, as script-driven sites are: a Join button among an email
/// field and a plan select (its script reads them), an Apply button beside an empty coupon field, a Buy button in a card with no field, a
/// `+` step button (`type=button`) beside a quantity, and a read-only arrival date whose calendar
/// opens over its Reserve button. Each click writes into `#out`.
const SPA_FORM: &str = r##"<h1>Sign up</h1>
<div class="signup"><div><label>Email <input id="em"></label></div>
<div><label>Plan <select id="plan"><option>Basic</option><option>Pro</option></select></label></div>
<div><button id="join" onclick="out.textContent = 'joined ' + em.value + ' ' + plan.value">Join</button></div></div>
<div><label>Coupon <input id="coupon"></label> <button onclick="out.textContent = 'coupon ' + coupon.value">Apply</button></div>
<div><label>Days <select id="days" multiple><option>Mon</option><option>Tue</option></select></label> <button onclick="out.textContent = 'booked'">Book</button></div>
<div class="cards"><div><b>Lamp</b> <button onclick="out.textContent = 'bought lamp'">Buy</button></div></div>
<div class="find"><div><label>Title <input id="title"></label></div><div><button type="button" onclick="out.textContent = 'found ' + title.value">Find</button></div></div>
<div><label>Qty <input id="qty" value="1"></label> <button type="button" onclick="qty.value = +qty.value + 1; out.textContent = 'qty ' + qty.value">+</button></div>
<div><p>Arrival: <input id="arrive" readonly></p><div id="cal" style="position: absolute; background: #fff; padding: 6px" hidden></div><button onclick="out.textContent = 'reserved ' + arrive.value">Reserve</button></div>
<p id="out"></p>
<script>
arrive.onfocus = () => { cal.hidden = false; cal.innerHTML = '<b>March 2024</b> ' + [1, 2, 3, 4, 5].map(d => `<a href="#" data-d="${d}">${d}</a>`).join(' '); };
cal.onclick = e => { const d = e.target.dataset.d; if (!d) return; e.preventDefault(); arrive.value = '03/0' + d + '/2024'; cal.hidden = true; };
</script>"##;

/// A page whose elements answer an action without leaving it: a city field whose suggestions
/// appear a moment after typing, a Save button that shows an error line, a Delete button that
/// opens a dialog, date, time and date-and-time fields, a range, a number spinner, a colour and a native
/// select, each writing what its last input and change events said into `#log`; and a slider and
/// a spin button made of ARIA that only their arrow keys move.
const WIDGETS: &str = r#"<h1>Widgets</h1>
<label>City <input id="city" name="city" autocomplete="off"></label><ul id="sugg"></ul>
<label>Country <input id="country" name="country" autocomplete="off"></label><ul id="csugg"></ul>
<button id="save">Save</button><p id="err"></p>
<button id="del">Delete</button>
<div id="dlg" role="dialog" hidden><p>Really delete the order?</p><button id="yes">Yes, delete</button> <button id="no">Keep it</button></div>
<label>Start date <input type="date" id="start" name="start" min="2020-01-01" max="2030-12-31"></label>
<label>Start time <input type="time" id="at" name="at"></label>
<label>Meeting <input type="datetime-local" id="meet" name="meet"></label>
<label>Volume <input type="range" id="vol" name="vol" min="0" max="10" step="1" value="5"></label>
<label>Quantity <input type="number" id="qty" name="qty" min="1" max="9" value="1"></label>
<label>Colour <input type="color" id="tint" name="tint"></label>
<label>Size <select id="size" name="size"><option value="">Choose…</option><option value="s">Small</option><option value="m">Medium</option><option value="l">Large</option></select></label>
<label>Toppings <select id="tops" name="tops" multiple><option>Olives</option><option>Ham</option><option value="mush">Mushrooms</option><option>Peppers</option></select></label>
<span id="bright-l">Brightness</span> <div id="bright" role="slider" tabindex="0" aria-labelledby="bright-l" aria-valuemin="0" aria-valuemax="100" aria-valuenow="40" aria-valuetext="40 %" style="display:inline-block;width:100px;height:12px;background:#ccc"></div>
<label for="guests">Guests</label> <input id="guests" role="spinbutton" value="2" aria-valuemin="1" aria-valuemax="8">
<p id="log"></p><a href="/menu">Shop menu</a>
<script>
const $ = id => document.getElementById(id), seen = [];
const log = t => { seen.push(t); $('log').textContent = seen.slice(-2).join('; ') + ';'; };
const CITIES = ['Paris', 'Parma', 'Prague', 'Porto', 'Oslo'];
$('city').addEventListener('input', e => setTimeout(() => {
  const v = e.target.value.toLowerCase();
  $('sugg').innerHTML = '';
  for (const c of CITIES.filter(c => v && c.toLowerCase().startsWith(v))) {
    const li = document.createElement('li');
    li.setAttribute('role', 'option'); li.textContent = c;
    li.onclick = () => { $('city').value = c; $('sugg').innerHTML = ''; };
    $('sugg').appendChild(li);
  }
}, 200));
// Suggestions drawn on key up only, as older autocompletes do.
$('country').addEventListener('keyup', e => {
  const v = e.target.value.toLowerCase();
  $('csugg').innerHTML = ['Norway', 'Nepal', 'Spain'].filter(c => v && c.toLowerCase().startsWith(v)).map(c => '<li role="option">' + c + '</li>').join('');
});
$('save').onclick = () => { $('err').textContent = $('city').value ? 'Saved' : 'Please enter a city first'; };
$('del').onclick = () => { $('dlg').hidden = false; };
$('no').onclick = () => { $('dlg').hidden = true; };
// A slider and a spin button made of ARIA, moved only by their arrow keys (typing is ignored,
// as a spinner that checks its input does), 5 and 1 a step, within their bounds.
for (const [id, step] of [['bright', 5], ['guests', 1]]) $(id).addEventListener('keydown', e => {
  e.preventDefault();
  const el = $(id), by = {ArrowUp: step, ArrowRight: step, ArrowDown: -step, ArrowLeft: -step}[e.key];
  if (!by) return;
  const now = Number(el.getAttribute('aria-valuenow') || el.value);
  const next = Math.min(Number(el.getAttribute('aria-valuemax')), Math.max(Number(el.getAttribute('aria-valuemin')), now + by));
  el.setAttribute('aria-valuenow', next);
  if (id === 'bright') el.setAttribute('aria-valuetext', next + ' %'); else el.value = next;
  log(id + ' ' + next);
});
for (const id of ['start', 'at', 'meet', 'vol', 'qty', 'size']) {
  $(id).addEventListener('input', e => log(id + ' input ' + e.target.value));
  $(id).addEventListener('change', e => log(id + ' change ' + e.target.value));
}
</script>"#;

impl Site {
    pub fn start() -> Site {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let srv = Arc::clone(&server);
        let posted = Arc::new(std::sync::Mutex::new(Vec::new()));
        let posts = Arc::clone(&posted);
        let handle = std::thread::spawn(move || {
            while let Ok(mut rq) = srv.recv() {
                let mut body = String::new();
                let _ = rq.as_reader().read_to_string(&mut body);
                if rq.method().as_str() == "POST" {
                    posts.lock().unwrap().push(format!("{} {body}", rq.url()));
                }
                let cookie = rq
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Cookie"))
                    .map(|h| h.value.to_string())
                    .unwrap_or_default();
                let logged_in = cookie.contains("session=ok");
                let path = rq.url().split('?').next().unwrap_or("/").to_string();
                let html = |s: String| {
                    tiny_http::Response::from_string(s)
                        .with_header(tiny_http::Header::from_bytes("Content-Type", "text/html; charset=utf-8").unwrap())
                };
                let resp = match (rq.method().as_str(), path.as_str()) {
                    ("GET", "/") => html(page(
                        "Library",
                        r#"
                        <h1>Lecture library</h1>
                        <nav><a href="/login">Log in</a> <a href="/form">Order form</a> <a href="/delayed">Slow page</a></nav>
                        <ul id="toc">
                          <li><a href="/files/chapter1.pdf">Chapter 1</a></li>
                          <li><a href="/files/chapter2.pdf">Chapter 2</a></li>
                          <li><a href="/about.html">About</a></li>
                        </ul>
                        <table id="prices"><tr><th>Plan</th><th>Price</th></tr>
                          <tr><td>Basic</td><td>10</td></tr><tr><td>Pro, yearly</td><td>99</td></tr></table>
                        <button id="hello" onclick="document.getElementById('out').textContent='clicked!'">Say hello</button>
                        <div id="out"></div>
                        <div style="height:3000px"></div><p id="bottom">Bottom of the page</p>"#,
                    )),
                    // N MiB of bytes, with their length announced (`/big/N.bin`) or streamed chunked
                    // without it (`/stream/N.bin`).
                    ("GET", p) if p.starts_with("/big/") || p.starts_with("/stream/") => {
                        let mib: usize = p.rsplit('/').next().unwrap().trim_end_matches(".bin").parse().unwrap();
                        let bytes: Vec<u8> = (0..mib * 1024 * 1024).map(|i| (i * 7 % 251) as u8).collect();
                        let length = p.starts_with("/big/").then_some(bytes.len());
                        let body = Box::new(std::io::Cursor::new(bytes)) as Box<dyn std::io::Read + Send>;
                        // Above 32 KiB tiny_http chunks even a known length unless told otherwise.
                        let threshold = if length.is_some() { usize::MAX } else { 0 };
                        let resp = tiny_http::Response::new(200.into(), vec![], body, length, None);
                        let _ = rq.respond(resp.with_chunked_threshold(threshold));
                        continue;
                    }
                    ("GET", p) if p.starts_with("/files/") => {
                        let name = p.trim_start_matches("/files/");
                        tiny_http::Response::from_data(pdf_bytes(name))
                            .with_header(tiny_http::Header::from_bytes("Content-Type", "application/pdf").unwrap())
                    }
                    ("GET", "/private/report.pdf") if logged_in => {
                        tiny_http::Response::from_data(pdf_bytes("private-report"))
                            .with_header(tiny_http::Header::from_bytes("Content-Type", "application/pdf").unwrap())
                    }
                    ("GET", "/private/report.pdf") => {
                        html(page("Forbidden", "<p>log in first</p>")).with_status_code(403)
                    }
                    ("GET", "/login") => html(page(
                        "Log in",
                        r#"
                        <form method="post" action="/login"><label>Email <input type="email" name="user"></label>
                        <label>Password <input type="password" name="pass"></label><button type="submit">Sign in</button></form>"#,
                    )),
                    ("POST", "/login") => {
                        if form_value(&body, "user") == "alice@example.test" && form_value(&body, "pass") == "s3cret-pw"
                        {
                            tiny_http::Response::from_string("")
                                .with_status_code(303)
                                .with_header(tiny_http::Header::from_bytes("Location", "/account").unwrap())
                                .with_header(tiny_http::Header::from_bytes("Set-Cookie", "session=ok; Path=/").unwrap())
                        } else {
                            html(page("Log in", "<p id=error>Wrong email or password</p>")).with_status_code(401)
                        }
                    }
                    ("GET", "/dialog") => html(page(
                        "Dialog",
                        r#"<button id="save" onclick="alert('Saved!'); document.getElementById('done').textContent = 'after alert'">Save</button><p id="done"></p>
                        <input id="secret" type="password" style="display:none"><input id="visible" name="visible">"#,
                    )),
                    ("GET", "/confirm") => html(page(
                        "Confirm",
                        r#"<button id="del" onclick="document.getElementById('r').textContent = confirm('Delete everything?') ? 'deleted' : 'kept'">Delete</button>
                        <button id="ask" onclick="document.getElementById('r').textContent = 'name:' + prompt('Your name?')">Ask</button><p id="r"></p>"#,
                    )),
                    ("GET", "/slow.pdf") => {
                        // Slower than any deadline a test gives it; answered on its own thread.
                        std::thread::spawn(move || {
                            std::thread::sleep(std::time::Duration::from_secs(20));
                            let _ = rq.respond(tiny_http::Response::from_data(pdf_bytes("slow")));
                        });
                        continue;
                    }
                    ("GET", "/go-private") => tiny_http::Response::from_string("")
                        .with_status_code(302)
                        .with_header(tiny_http::Header::from_bytes("Location", "/private/report.pdf").unwrap()),
                    ("GET", "/account") if logged_in => {
                        html(page("Account", r#"<h1>Welcome alice</h1><a href="/private/report.pdf">Your report</a>"#))
                    }
                    ("GET", "/account") => html(page("Account", "<p>not logged in</p>")),
                    ("GET", "/form") => html(page(
                        "Order",
                        r#"
                        <form id="order" method="post" action="/submit">
                          <input name="name" placeholder="Your name">
                          <select name="color"><option value="r">Red</option><option value="g">Green</option></select>
                          <label><input type="checkbox" name="gift" value="yes"> Gift wrap</label>
                          <input type="submit" value="Send order"></form>"#,
                    )),
                    ("POST", "/submit") => html(page(
                        "Thanks",
                        &format!(
                            "<h1>Order received</h1><p id=summary>name={} color={} gift={}</p>",
                            form_value(&body, "name"),
                            form_value(&body, "color"),
                            form_value(&body, "gift")
                        ),
                    )),
                    // Fields a run sets by what they mean (a date, a slider, a radio by its
                    // label, a select by its text) and a form inside a same-origin frame.
                    ("GET", "/booking") => html(page(
                        "Booking",
                        r#"<iframe id="pay" title="Payment" src="/card" style="width:400px;height:120px"></iframe>
                        <form method="post" action="/submit">
                          <label>Delivery date <input type="date" name="when" id="when"></label>
                          <label>Volume <input type="range" name="volume" id="volume" min="0" max="10" value="2"></label>
                          <label><input type="radio" name="ship" value="std" id="std" checked> Standard</label>
                          <label><input type="radio" name="ship" value="exp"> Express</label>
                          <select name="size" id="size"><option value="s">Small</option><option value="l">Large</option></select>
                          <div role="slider" id="stars" aria-label="Stars" aria-valuemin="1" aria-valuemax="5"
                            aria-valuenow="1" tabindex="0">*</div><input type="hidden" name="stars" value="1">
                          <button>Book</button></form>
                        <script>
                          const stars = document.getElementById("stars");
                          stars.addEventListener("keydown", e => {
                            const by = {ArrowUp: 1, ArrowRight: 1, ArrowDown: -1, ArrowLeft: -1}[e.key];
                            if (!by) return;
                            const n = Math.min(5, Math.max(1, Number(stars.getAttribute("aria-valuenow")) + by));
                            stars.setAttribute("aria-valuenow", n);
                            stars.textContent = "*".repeat(n);
                            document.querySelector("input[name=stars]").value = n;
                            e.preventDefault();
                          });
                        </script>"#,
                    )),
                    ("GET", "/card") => html(page(
                        "Card",
                        r#"<form method="post" action="/submit"><label>Card holder <input name="holder"></label>
                        <button>Save card</button></form>"#,
                    )),
                    // A form the browser will not send while a required field is empty.
                    ("GET", "/required") => html(page(
                        "Contact",
                        r#"<form method="post" action="/submit"><label>Your name <input name="name" required></label>
                        <label>Email <input type="email" name="email"></label>
                        <select name="color"><option value="r">Red</option><option value="g">Green</option></select>
                        <button>Send</button></form>"#,
                    )),
                    // The order form, changed: its first field is another one (for replays).
                    ("GET", "/form2") => html(page(
                        "Order",
                        r#"<form id="order" method="post" action="/submit"><input name="email" placeholder="Your email">
                        <input type="submit" value="Send order"></form>"#,
                    )),
                    // Says whether this browser context stored something here before.
                    ("GET", "/storage") => html(page(
                        "Storage",
                        r#"<p id="seen"></p><script>document.getElementById('seen').textContent =
                        localStorage.getItem('visited') ? 'seen before' : 'first visit'; localStorage.setItem('visited', '1');</script>"#,
                    )),
                    ("GET", "/hostile") => html(page("Hostile", HOSTILE)),
                    // A button at a known place on the screen, for a click on a screenshot.
                    ("GET", "/big-button") => html(page(
                        "Big button",
                        "<button id='big' style='position:absolute;left:100px;top:100px;width:300px;height:150px' \
                         onclick=\"document.getElementById('out').textContent='The big button was pressed'\">Big</button>\
                         <p id='out' style='position:absolute;top:300px'></p>",
                    )),
                    ("GET", "/snap") => html(page("Snapshot", &snapshot_page())),
                    // Asks for the account's password, and is no sign-in form (it has a list).
                    ("GET", "/survey") => html(page(
                        "Survey",
                        "<form action=/submit method=post><input name=name><select name=rating><option>1</option>\
                        <option>5</option></select><input type=password name=pw><button>Send</button></form>",
                    )),
                    ("GET", "/spa-form") => html(page("Sign up", SPA_FORM)),
                    ("GET", "/widgets") => html(page("Widgets", WIDGETS)),
                    ("GET", "/layouts") => html(page("Layouts", LAYOUTS)),
                    ("GET", "/states") => html(page("States", &states_page(rq.url().contains("open=1")))),
                    // Slow, as real servers are: the page goes still long before it comes.
                    ("GET", "/menu") => {
                        std::thread::sleep(std::time::Duration::from_millis(900));
                        html(page(
                            "Menu",
                            r#"<header><h1>Shop</h1><nav><a href="/prices">Prices</a> · <a href="/about.html">About us</a></nav></header>
                        <main><p>Welcome to the shop.</p></main>"#,
                        ))
                    }
                    // 1 000 elements, each inside the one before (Chromium gives no page 3 000 deep in a minute), and a line after them.
                    ("GET", "/deep") => html(page(
                        "Deep",
                        r#"<h1>Deep page</h1><div id="deep"></div><p>After the depths</p><script>
                        let at = document.getElementById('deep');
                        for (let i = 0; i < 1000; i++) { const d = document.createElement('div'); at.appendChild(d); at = d; }
                        at.textContent = 'at the bottom';</script>"#,
                    )),
                    ("GET", "/frame") => html(page(
                        "Frame",
                        r#"<p>Inside the frame</p><button onclick="this.textContent='frame clicked'">Frame button</button>"#,
                    )),
                    // A "download" that is really an HTML page (a login wall, an error).
                    ("GET", "/export/pricing.csv") => html(page("Please log in", "<p>Log in to export</p>")),
                    ("GET", "/delayed") => html(page(
                        "Slow",
                        r#"<p>Loading…</p>
                        <script>setTimeout(() => { const d = document.createElement('div'); d.id = 'late'; d.textContent = 'Ready now'; document.body.appendChild(d); }, 2000);</script>"#,
                    )),
                    _ => html(page("Not found", "<p>404</p>")).with_status_code(404),
                };
                let _ = rq.respond(resp);
            }
        });
        Site { url, posted, server, handle: Some(handle) }
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
