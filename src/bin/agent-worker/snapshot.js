// agent-worker page snapshot: what the model reads of a page, with refs it can act on.
// Loaded after page.js; adds __ac.snapshot(max, floor, reset, known, part, lines, signIn) once per
// document, and __ac.watch()/__ac.quiet() to wait for the changes an action sets off.
// Invariants: hidden elements are left out; a secret field's value never appears (masks.js: a
// password, a card number or one-time code, a credential or a person's typing); every element
// shown gets a ref `eN` (text and images only where a click does something there) that stays the same for
// that element while the document lives, and that an element looking the same (its line without
// values and state marks) on a later page of the session gets again (`known`, see page.js);
// new numbers start at `floor`, so a ref never names two different things; the text is at most
// `max` characters, and what is left out comes as further parts (`part` 2, 3…).
if (window.__ac && !window.__ac.snapshot) { window.__ac.snapshot = (() => {
  const ac = window.__ac, norm = ac.norm;
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "HEAD", "OPTION", "DATALIST"]);
  const BUTTON_INPUTS = new Set(["submit", "button", "reset", "image"]);
  const RUN_CHARS = 300, CELL_CHARS = 60, ROWS = 15, OPTIONS = 15;
  // What the page makes clickable is one line when its text is at most this long (a longer
  // one is a region: its parts stand, its text with a ref).
  const FOLD_CHARS = 200;
  // ARIA roles a person clicks, shown by their role's name (`tab "Profile" (selected)`).
  const CLICK_ROLES = new Set(["link", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "treeitem", "checkbox", "radio", "switch"]);
  // Elements nested deeper are left out: a page can nest 100 000 deep, and the walk recurses.
  const MAX_DEPTH = 256;
  let depth = 0;
  const cut = (s, n) => s.length > n ? s.slice(0, n - 1) + "…" : s;
  const q = s => JSON.stringify(cut(norm(s), 100));
  // A long value the page put in a field, as a person reads it by scrolling: its start and its
  // end (a text's last word, a log's last line), at most `RUN_CHARS` in all.
  const VALUE_TAIL = 100;
  const ends = s => s.length > RUN_CHARS ? s.slice(0, RUN_CHARS - VALUE_TAIL - 3) + " … " + s.slice(-VALUE_TAIL) : s;
  // A link or button with no text of its own (an icon) is named by what it holds, as a person
  // reads the icon: an image's alt, an SVG's title, a child's label or tooltip.
  function iconName(el) {
    for (const c of el.querySelectorAll("img[alt], svg title, [aria-label], [title]")) {
      const name = norm(c.tagName.toLowerCase() === "title" ? c.textContent : c.getAttribute("alt") || c.getAttribute("aria-label") || c.getAttribute("title"));
      if (name) return name;
    }
    return "";
  }
  function shown(el) {
    if (el.tagName === "INPUT" && el.type === "hidden") return false;
    if (el.checkVisibility) return el.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true});
    return ac.visible(el);
  }
  function blockOf(node) {
    for (let e = node.parentElement; e; e = e.parentElement) {
      const d = getComputedStyle(e).display;
      if (!d.startsWith("inline") && d !== "contents") return e;
    }
    return null;
  }
  // What a person sees of an element's state: ` (collapsed) (disabled)`. keyOf strips these.
  function states(el) {
    const a = n => el.getAttribute(n), out = [];
    const exp = el.tagName === "SUMMARY" && el.parentElement && el.parentElement.tagName === "DETAILS"
      ? String(el.parentElement.open) : a("aria-expanded");
    if (exp === "true" || exp === "false") out.push(exp === "true" ? "expanded" : "collapsed");
    if (a("aria-selected") === "true") out.push("selected");
    if (a("aria-pressed") === "true" || a("aria-pressed") === "false") out.push(a("aria-pressed") === "true" ? "pressed" : "not pressed");
    if (a("aria-checked") === "true" || a("aria-checked") === "false") out.push(a("aria-checked") === "true" ? "checked" : "not checked");
    if (el.matches(":disabled") || a("aria-disabled") === "true") out.push("disabled");
    if (el.required || a("aria-required") === "true") out.push("required");
    if ((el.readOnly && /^(INPUT|TEXTAREA)$/.test(el.tagName)) || a("aria-readonly") === "true") out.push("read-only");
    return out.map(s => ` (${s})`).join("");
  }
  function describeField(el, tag, label) {
    const name = el.getAttribute("name") ? ` name=${el.getAttribute("name")}` : "";
    if (tag === "select") {
      const opts = Array.from(el.options);
      const listed = opts.slice(0, OPTIONS).map(o => cut(norm(o.text), 40) + (o.value && o.value !== norm(o.text) ? `=${cut(o.value, 30)}` : "") + (o.selected ? " (selected)" : ""));
      const more = opts.length > OPTIONS ? ` | … ${opts.length - OPTIONS} more` : "";
      const many = el.multiple ? " (multiple)" : "";
      return `select ${q(label)}${name}${many}${states(el)}: ${listed.join(" | ")}${more}`;
    }
    const type = tag === "textarea" ? "textarea" : (el.type || "text");
    const step = type === "text" && ac.stepper(el);
    if (step) return stepLine(el, step, label, name);
    let value = "";
    if (window.__acMasks.secret(el)) value = el.value ? " (filled; value hidden)" : " (empty)";
    else if (type === "checkbox" || type === "radio") value = el.checked ? " (checked)" : " (not checked)";
    else if (el.value) value = ` value=${JSON.stringify(ends(norm(el.value)))}`;
    // An empty field says so: its label alone reads to a small model like a filled-in value.
    else if (ac.takesText(el)) value = " (empty)";
    // A number, range or date field's bounds: what a value set there must keep to.
    const bounded = /^(number|range|date|time|datetime-local|month|week)$/.test(type) && (el.min || el.max);
    const bounds = bounded ? ` (${[el.min && "min " + el.min, el.max && "max " + el.max].filter(Boolean).join(", ")})` : "";
    return `${type === "textarea" ? "textarea" : "input " + type} ${q(label)}${name}${bounds}${value}${states(el)}`;
  }
  // A slider or spin button made of ARIA (`slider "Brightness" (min 0, max 100) value=40`):
  // what it holds and its bounds, as a native range field shows them.
  function stepLine(el, step, label, name = "") {
    const b = [step.min !== null && "min " + step.min, step.max !== null && "max " + step.max].filter(Boolean);
    const text = el.getAttribute("aria-valuetext");
    const value = step.now === null ? "" : ` value=${JSON.stringify(text && text !== String(step.now) ? `${step.now} (${text})` : String(step.now))}`;
    return `${step.role} ${q(label)}${name}${b.length ? ` (${b.join(", ")})` : ""}${value}${states(el)}`;
  }
  // Whether a table holds a field a person types into or chooses in (page.js's `takesText`).
  const holdsEntry = t => Array.from(t.querySelectorAll("input,select,textarea")).some(f => f.tagName === "SELECT" || ac.takesText(f));
  function tableLines(t) {
    const rows = Array.from(t.rows).filter(r => shown(r));
    const cols = rows.reduce((m, r) => Math.max(m, r.cells.length), 0);
    const lines = rows.slice(0, ROWS).map(r => "    | " + Array.from(r.cells).map(c => cut(norm(c.innerText), CELL_CHARS)).join(" | ") + " |");
    if (rows.length > ROWS) lines.push(`    … ${rows.length - ROWS} more rows (browser_scrape_table reads them all)`);
    return {head: `table ${rows.length}×${cols}`, lines};
  }
  const CLICKABLE = "[onclick],[role=button],[role=link],[role=tab],[role=menuitem],[tabindex]";
  // The elements the page gave a click listener, read once per document walked. Only an
  // element's own listener counts: one on a container is mostly delegation (a framework's root).
  let listeners = new Set();
  const clickable = el => !!el && (!!el.closest(CLICKABLE) || getComputedStyle(el).cursor === "pointer" || listeners.has(el));
  // Why the page makes an element clickable (the tags and roles shown as what they are aside):
  // a role a person clicks, `onclick` (as an attribute or a listener its script added), a
  // tabindex of 0 or more, or a pointer cursor its parent does not already give it.
  function clickWhy(el, tag, role) {
    if (tag === "summary") return "clickable";
    if (CLICK_ROLES.has(role)) return role;
    if (el.hasAttribute("onclick") || listeners.has(el) || (el.getAttribute("tabindex") !== null && el.tabIndex >= 0)) return "clickable";
    const up = el.parentElement;
    if (getComputedStyle(el).cursor === "pointer" && !(up && getComputedStyle(up).cursor === "pointer")) return "clickable";
    return null;
  }
  // An element's key across documents: its line without what changes as it is used (values,
  // state marks).
  const STATE_MARKS = / \((?:filled[^)]*|empty|checked|not checked|selected|expanded|collapsed|pressed|not pressed|disabled|required|read-only)\)/g;
  const keyOf = line => line.replace(/ value=.*$/, "").replace(STATE_MARKS, "");
  // One pass over a document (and the same-origin frames in it), in document order.
  function collect(doc, state, indent) {
    for (const el of ac.listenedIn(doc)) listeners.add(el);
    const items = state.items;
    let run = null;
    const flush = () => {
      // Text without a letter or digit (a "·" between links) is left out; text gets a ref only
      // where something on it reacts to a click (small models click paragraphs otherwise).
      if (run && /[\p{L}\p{N}]/u.test(run.text)) {
        const line = `text ${JSON.stringify(cut(norm(run.text), RUN_CHARS))}`;
        items.push({kind: "text", el: clickable(run.block) ? run.block : null, key: line, line, indent, text: norm(run.text)});
      }
      run = null;
    };
    const item = (kind, el, line, more, name) => { flush(); items.push({kind, el, key: keyOf(line), line, more, name, indent}); };
    // An element walked into, then shown as one line (`line(name)`) when what it holds is only
    // text, images and headings, at most FOLD_CHARS: a pointer div holding a pointer span is one
    // item. Otherwise its parts stand (a card with a button, a heading with a link in it).
    function fold(el, inTable, line) {
      flush();
      const start = items.length;
      walk(el, inTable);
      flush();
      const inner = items.slice(start);
      const alts = inner.filter(i => i.kind === "image").map(i => i.name).join(" ");
      const name = norm(el.innerText) || norm(el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("alt")) || alts;
      if (!name || name.length > FOLD_CHARS || !inner.every(i => /^(text|image|heading)$/.test(i.kind))) return;
      items.length = start;
      item(line.kind, el, line(name));
    }
    function walk(node, inTable) {
      if (depth >= MAX_DEPTH) return;
      depth++;
      try { walkChildren(node, inTable); } finally { depth--; }
    }
    function walkChildren(node, inTable) {
      for (let n = node.firstChild; n; n = n.nextSibling) {
        if (n.nodeType === 3) {
          if (inTable || !n.data.trim()) continue;
          const block = blockOf(n);
          if (run && run.block !== block) flush();
          if (!run) run = {block, text: ""};
          run.text += n.data;
          continue;
        }
        if (n.nodeType !== 1 || SKIP.has(n.tagName.toUpperCase()) || !shown(n)) continue;
        visit(n, inTable);
      }
    }
    // A link's absolute address; none for one within the page (`#`, `#fees`, a script's link):
    // that address is the page's own again, a click is what it takes, and it costs every line.
    function address(a) {
      const within = a.getAttribute("href").trim().startsWith("#");
      return within ? "" : ` → ${a.href}`;
    }
    function visit(el, inTable) {
      const tag = el.tagName.toLowerCase(), role = el.getAttribute("role");
      if (tag === "a" && el.hasAttribute("href")) return item("link", el, `link ${q(ac.textOf(el) || iconName(el))}${states(el)}${address(el)}`);
      if (tag === "button" || role === "button" || (tag === "input" && BUTTON_INPUTS.has(el.type)))
        return item("button", el, `button ${q(ac.textOf(el) || el.value || iconName(el))}${states(el)}`);
      if (tag === "input" || tag === "textarea" || tag === "select") {
        const label = ac.labelFor(el);
        return item("field", el, describeField(el, tag, label), undefined, label);
      }
      if (tag === "label" && el.control) { flush(); return walk(el, true); }
      // A table that holds a text field or a select is a form laid out in rows, not data: its
      // text and fields read in order (a data-table line would show those cells empty).
      if (tag === "table" && !inTable && !holdsEntry(el)) {
        const t = tableLines(el);
        item("table", el, t.head, t.lines);
        flush();
        return walk(el, {clicks: 0});
      }
      if (tag === "iframe" || tag === "frame") return frame(el);
      if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) {
        const text = norm(el.innerText);
        return item("field", el, `textbox ${q(el.getAttribute("aria-label") || "")}${text ? ` value=${q(text)}` : ""}`);
      }
      const step = ac.stepper(el);
      if (step) return item("field", el, stepLine(el, step, ac.labelFor(el)));
      const why = clickWhy(el, tag, role);
      if (why) {
        const tableClicks = inTable && typeof inTable === "object" && ++inTable.clicks > ROWS;
        if (!tableClicks) return fold(el, inTable, Object.assign(name => `${why} ${q(name)}${states(el)}`, {kind: "clickable"}));
      }
      if (/^h[1-6]$/.test(tag)) return fold(el, inTable, Object.assign(name => `heading ${tag[1]} ${q(name)}`, {kind: "heading"}));
      // An image, like text, gets a ref only where a click on it does something.
      if (tag === "img" && el.alt) return item("image", clickable(el) ? el : null, `image ${q(el.alt)}`, undefined, el.alt);
      if (/^(p|div|li|td|th|section|article|main|header|footer|nav|ul|ol|dd|dt|form|tr|br|hr)$/.test(tag)) flush();
      walk(el, inTable);
      if (/^(p|div|li|section|article|main|header|footer|nav|ul|ol|form)$/.test(tag)) flush();
    }
    function frame(el) {
      let inner = null;
      try { inner = el.contentDocument; } catch (e) { inner = null; }
      const src = el.src || "(inline)";
      if (!inner || !inner.body) return item("frame", el, `iframe ${src} (another site: its content cannot be read here; browser_navigate to it to see it)`);
      item("frame", el, `iframe ${src}:`);
      collect(inner, state, indent + "  ");
    }
    walk(doc.body || doc.documentElement, false);
    flush();
  }
  function status() {
    const nav = performance.getEntriesByType("navigation")[0];
    return nav && nav.responseStatus ? nav.responseStatus : null;
  }
  // The first part keeps what matters most within `max` (text runs go first, from the end, then
  // whatever comes last); what it leaves out follows in order as parts 2, 3… of at most `max`.
  function render(items, max, header, part) {
    const lineOf = it => `${it.indent}${it.ref ? `[${it.ref}] ` : ""}${it.line}` + (it.more ? "\n" + it.more.map(l => it.indent + l).join("\n") : "");
    const text = items.map(lineOf);
    let total = header.length + text.reduce((a, l) => a + l.length + 1, 0);
    const keep = items.map(() => true);
    const drop = i => { keep[i] = false; total -= text[i].length + 1; };
    for (let i = items.length - 1; i >= 0 && total > max; i--) if (items[i].kind === "text") drop(i);
    for (let i = items.length - 1; i >= 0 && total > max; i--) if (keep[i]) drop(i);
    const parts = [text.filter((_, i) => keep[i])];
    let size = max;
    for (let i = 0; i < items.length; i++) {
      if (keep[i]) continue;
      if (size + text[i].length + 1 > max && (parts.length === 1 || parts[parts.length - 1].length)) { parts.push([]); size = header.length; }
      parts[parts.length - 1].push(text[i]);
      size += text[i].length + 1;
    }
    const n = Math.min(Math.max(Number(part) || 1, 1), parts.length);
    const head = parts.length > 1 ? `${header} — part ${n} of ${parts.length}` : header;
    let out = head + "\n" + parts[n - 1].join("\n");
    if (n < parts.length) out += `\n… more of this page: browser_snapshot {"page": ${n + 1}}`;
    return {text: out, all: text};
  }
  // Mutations since `watch()`, so that `quiet` can wait for what an action sets off (a list
  // shown after a debounce, a dialog) to finish.
  // `leaving`: the action started a navigation to another document (a link to a slow server
  // answers long after the page went still), told by the Navigation API's `navigate` event.
  let watching = null, leaving = false, heard = false;
  function watch() {
    if (watching) watching.observer.disconnect();
    leaving = false;
    if (!heard && window.navigation) {
      heard = true;
      navigation.addEventListener("navigate", e => { if (!e.destination.sameDocument) leaving = true; });
    }
    watching = {start: performance.now(), last: 0, observer: new MutationObserver(() => { watching.last = performance.now(); })};
    watching.observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    return true;
  }
  // Resolves once the page has been still for `still` ms after a change, or `first` ms passed
  // with no change at all, or `most` ms in any case; at once when nothing is watched; with
  // "leaving" as soon as another document is on its way.
  function quiet(still, first, most) {
    const w = watching;
    if (!w) return true;
    return new Promise(done => {
      const tick = () => {
        const now = performance.now();
        if (leaving) { w.observer.disconnect(); return done("leaving"); }
        if ((w.last && now - w.last >= still) || (!w.last && now - w.start >= first) || now - w.start >= most) {
          w.observer.disconnect();
          if (watching === w) watching = null;
          return done(true);
        }
        setTimeout(tick, 25);
      };
      tick();
    });
  }
  // A field named by the text beside it (`x =`, a row's `Year` cell) shows that text in its own
  // line: the plain text line next to it, saying only the same, is left out.
  function withoutEchoes(items) {
    const echoed = (it, i) => it.kind === "text" && !it.el &&
      [items[i - 1], items[i + 1]].some(f => f && f.kind === "field" && f.name === it.text);
    return items.filter((it, i) => !echoed(it, i));
  }
  // `lines`: every line as well, unbounded (each item's text; a table's rows follow its head),
  // for the worker to tell what an action changed; `doc` names the document. `signIn` is the
  // selector of a sign-in form (protocol's SIGN_IN_FORM).
  function snapshot(max, floor, reset, known, part, lines, signIn) {
    const state = ac.refState(floor, reset, known);
    const walked = [];
    listeners = new Set();
    collect(document, {items: walked}, "");
    const items = withoutEchoes(walked);
    for (const it of items) if (it.el) it.ref = state.assign(it.el, it.key);
    const code = status();
    // A 2xx says nothing a person would notice; an error status is news (and costs every page).
    const http = code && (code < 200 || code > 299) ? ` (HTTP ${code})` : "";
    const header = `Page: ${JSON.stringify(String(document.title || "(untitled)"))} — ${location.href}${http}`;
    const r = render(items, Math.max(max, 500), header, part);
    const out = {url: location.href, title: String(document.title || ""), status: code, snapshot: r.text,
            sign_in: items.some(i => i.kind === "field" && i.line.startsWith("input password") && i.el && !!i.el.closest(signIn)),
            next_ref: state.next(), keys: state.keys(items.map(i => i.ref).filter(Boolean))};
    if (lines) Object.assign(out, {lines: r.all, doc: String(performance.timeOrigin)});
    return out;
  }
  ac.watch = watch;
  ac.quiet = quiet;
  return snapshot;
})(); }
