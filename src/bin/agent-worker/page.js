// agent-worker page helpers: defined once per document as window.__ac, in the worker's own
// isolated world (the page's scripts share the DOM, but cannot see or replace anything here).
// Selectors: CSS, `text=Visible text`, `css:has-text("text")`, and `ref=e12` (a ref a snapshot
// gave, see snapshot.js; one that names no live element is refused with the nearest match).
// Small models' other spellings (`[ref=e4]`, `e4`, `name=email`, `button=Send`, `:contains(…)`, a
// label's text for its field) are read only where `loose_selectors` asks (`looseFor`), reported.
if (!window.__ac) { window.__ac = (() => {
  const norm = s => String(s ?? "").replace(/\s+/g, " ").trim();
  class NoMatch extends Error {} // a selector or ref that names nothing: typed for the worker (its className)
  const body = () => document.body || document.documentElement;
  const visible = el => {
    // nodeType, not instanceof: elements of a same-origin frame come from another realm.
    if (!el || el.nodeType !== 1) return false;
    const r = el.getBoundingClientRect(), st = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && st.visibility !== "hidden" && st.display !== "none";
  };
  const textOf = el => norm(el.innerText !== undefined ? el.innerText : el.textContent) ||
    (el.type === "password" ? "" : norm(el.value)) || norm(el.getAttribute && (el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("alt")));
  // Prefer the innermost match: an element none of whose children also match.
  const innermost = list => list.filter(el => !list.some(o => o !== el && el.contains(o)));
  const INTERACTIVE = "a,button,input,select,textarea,label,summary,[role=button],[role=link],[onclick]";
  // The elements of `doc` the page gave a click listener, asked of the page's world through
  // the DOM (listeners.js records them there; an event is all the two worlds share).
  function listenedIn(doc) {
    const found = new Set();
    const take = e => found.add(e.composedPath()[0]);
    doc.addEventListener("__ac_listener", take, true);
    try { doc.dispatchEvent(new Event("__ac_listeners")); } finally { doc.removeEventListener("__ac_listener", take, true); }
    return found;
  }
  // Refs: stable per element while the document lives; across documents an element that looks
  // the same (its kind and line, without values; the nth of its likes) gets the ref it had, from
  // `known` (key → ref) that the worker keeps for the session. A ref of any earlier snapshot that
  // still names a live element works; one that does not is refused with the nearest match.
  const fresh = () => ({byRef: new Map(), byEl: new WeakMap(), next: 0, keyOf: new Map(), known: {}});
  const refs = fresh();
  function refState(floor, reset, known) {
    if (reset) Object.assign(refs, fresh());
    refs.next = Math.max(refs.next, Number(floor) || 0);
    refs.known = known || {};
    const count = new Map();
    const assign = (el, key) => {
      const n = (count.get(key) || 0) + 1;
      count.set(key, n);
      const k = n > 1 ? key + " #" + n : key;
      let r = refs.byEl.get(el);
      if (!r) {
        const old = refs.known[k];
        r = old && !refs.byRef.has(old) ? old : "e" + (++refs.next);
        refs.byEl.set(el, r);
      }
      refs.byRef.set(r, el);
      refs.keyOf.set(r, k);
      return r;
    };
    return {assign, next: () => refs.next, keys: list => Object.fromEntries(list.map(r => [refs.keyOf.get(r), r]))};
  }
  // `link "Pricing"`, `input email "Email"`: what a key says before its URL, name or value.
  const labelOf = key => { const m = String(key || "").match(/^(\S+(?: \S+)? "[^"]*")/); return m ? m[1] : null; };
  function byRef(id) {
    const el = refs.byRef.get(id);
    if (el && el.isConnected) return el;
    const was = Object.keys(refs.known).find(k => refs.known[k] === id) || (el ? refs.keyOf.get(id) : null);
    const label = labelOf(was);
    const near = label && Array.from(refs.keyOf.entries()).find(([r, k]) => r !== id && labelOf(k) === label && refs.byRef.get(r).isConnected);
    const to = was && (String(was).match(/ → (\S+)$/) || [])[1];
    const here = to && to === location.href ? "; it is a link to the page you are on now" : "";
    const hint = here + (near ? `; the same element is now ref=${near[0]}` : "; use a ref from the latest snapshot");
    throw new NoMatch(`ref=${id}${was ? ` (${was.slice(0, 80)})` : ""} is not on this page${hint}`);
  }
  let loose = false; const readAs = new Map();
  // Each command says whether loose spellings are read (the worker prefixes every call).
  const looseFor = on => { loose = on === true; return true; };
  // The loose spellings read since last asked: selector → what it was read as.
  const looseRead = () => { const read = Array.from(readAs, ([selector, as]) => ({selector, read_as: as})); readAs.clear(); return read; };
  const readLoosely = (sel, as, found) => { readAs.set(sel, as); return found; };
  // A ref or a field's name or id in another spelling than `ref=e12`, or null.
  function looseRef(sel) {
    let m = sel.match(/^\[?(?:ref\s*=\s*)?(e\d+)\]?$/i);
    if (m && (/ref/i.test(sel) || refs.byRef.has(m[1].toLowerCase()) || !document.querySelector(m[1]))) return readLoosely(sel, "ref=" + m[1].toLowerCase(), [byRef(m[1].toLowerCase())]);
    // A field's name or id where a ref was meant (the snapshot shows `name=email` beside the ref).
    m = sel.match(/^(?:ref|name)\s*=\s*["']?([\w.:-]+)["']?$/i);
    if (!m) return null;
    const named = Array.from(document.getElementsByName(m[1])), byId = document.getElementById(m[1]);
    if (named.length || byId) return readLoosely(sel, "the element named " + m[1], named.length ? named : [byId]);
    throw new Error("no element has the ref, name or id `" + m[1] + "`" + hint(sel));
  }
  function findAll(sel) {
    sel = String(sel || "").trim();
    if (!sel) throw new Error("empty selector");
    let m = sel.match(/^ref=(e\d+)$/);
    if (m) return [byRef(m[1])];
    const asRef = loose && looseRef(sel);
    if (asRef) return asRef;
    m = sel.match(/^text=(.*)$/s);
    if (m) {
      let want = norm(m[1].replace(/^["']|["']$/g, ""));
      const all = Array.from(document.querySelectorAll("body *")).filter(visible);
      let exact = innermost(all.filter(el => textOf(el) === want));
      if (!exact.length) exact = innermost(all.filter(el => textOf(el).toLowerCase().includes(want.toLowerCase())));
      // A click on text usually means the interactive element around it; loosely, a label's
      // text the field it names (`text=Genre` where a table row's header names the box beside it).
      return exact.map(el => {
        const near = el.closest(INTERACTIVE);
        const field = loose && ((near && near.tagName === "LABEL" && near.control) || (!near && fieldLabelled(el)));
        return field ? readLoosely(sel, "the field it labels", field) : near || el;
      });
    }
    // `button=Submit`: a tag and the text it shows.
    m = loose && sel.match(/^([a-z][a-z0-9]*)\s*=\s*(.+)$/is);
    if (m && !(document.createElement(m[1]) instanceof HTMLUnknownElement)) return readLoosely(sel, m[1] + ":has-text(" + m[2] + ")", findAll(m[1] + ":has-text(" + m[2] + ")"));
    // `:contains(…)` is jQuery's spelling of the same test.
    m = sel.match(loose ? /^(.*?):(?:has-text|contains)\((.*)\)\s*$/s : /^(.*?):has-text\((.*)\)\s*$/s);
    if (m) {
      const base = m[1].trim() || "*";
      const want = norm(m[2].replace(/^["']|["']$/g, "")).toLowerCase();
      if (!/:has-text\(/.test(sel)) readLoosely(sel, base + ":has-text(" + m[2] + ")");
      return innermost(Array.from(document.querySelectorAll(base)).filter(el => textOf(el).toLowerCase().includes(want)));
    }
    try { return Array.from(document.querySelectorAll(sel)); }
    catch (e) { throw new Error("invalid selector `" + sel + "`: " + e.message.replace(/\.$/, "") + refsOfTag(sel)); }
  }
  // The refs of the elements a broken selector's tag names (`input:text` → the inputs shown):
  // what the model meant is most likely among them.
  function refsOfTag(sel) {
    const tag = (sel.match(/^[a-z][a-z0-9]*/i) || [""])[0].toLowerCase();
    const shown = Array.from(refs.byRef).filter(([, el]) => el.isConnected && el.tagName.toLowerCase() === tag && visible(el));
    if (!shown.length) return "; act on an element by its ref from the snapshot (selector `ref=e12`)";
    return "; the " + tag + " elements shown: " + shown.slice(0, 8).map(([r, el]) => "`ref=" + r + "`" + (labelFor(el) || textOf(el) ? ' "' + (labelFor(el) || textOf(el)).slice(0, 30) + '"' : "")).join(", ");
  }
  // The one field whose label (as the snapshot names it) is `el`'s text, or null.
  function fieldLabelled(el) {
    const bare = s => norm(s).replace(/:$/, "").toLowerCase();
    const name = bare(textOf(el));
    if (!name) return null;
    const fields = Array.from(document.querySelectorAll("input:not([type=hidden]),textarea,select"))
      .filter(f => f !== el && visible(f) && bare(labelFor(f)) === name);
    return fields.length === 1 ? fields[0] : null;
  }
  // Point a model that guessed a selector at what exists.
  function hint(sel) {
    const word = String(sel || "").trim();
    if (/^[A-Za-z][\w-]*$/.test(word)) {
      if (document.getElementById(word)) return "; did you mean `#" + word + "`?";
      if (document.getElementsByClassName(word).length) return "; did you mean `." + word + "`?";
    }
    const ids = Array.from(document.querySelectorAll("[id]")).filter(visible).slice(0, 12).map(e => "#" + CSS.escape(e.id));
    return (ids.length ? "; ids on this page: " + ids.join(", ") : "") +
      " (browser_snapshot lists the page's elements with refs: act on one with selector `ref=e12`)";
  }
  function find(sel) {
    const all = findAll(sel);
    const el = all.find(visible) || all[0];
    if (!el) throw new NoMatch("no element matches `" + sel + "`" + hint(sel));
    return el;
  }
  function cssPath(el) {
    if (el.id && document.querySelectorAll("#" + CSS.escape(el.id)).length === 1) return "#" + CSS.escape(el.id);
    const tag = el.tagName.toLowerCase();
    for (const attr of ["name", "data-testid", "aria-label", "placeholder"]) {
      const v = el.getAttribute(attr);
      if (v) {
        const s = `${tag}[${attr}="${CSS.escape(v)}"]`;
        try { if (document.querySelectorAll(s).length === 1) return s; } catch (e) {}
      }
    }
    if ((tag === "a" || tag === "button") && textOf(el) && textOf(el).length < 60) {
      const s = `${tag}:has-text("${textOf(el).replace(/"/g, "'")}")`;
      if (findAll(s).length === 1) return s;
    }
    const parts = [];
    let anchored = false;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      if (e === document.body) { parts.unshift("body"); anchored = true; break; }
      if (e.id && document.querySelectorAll("#" + CSS.escape(e.id)).length === 1) { parts.unshift("#" + CSS.escape(e.id)); anchored = true; break; }
      let i = 1;
      for (let s = e.previousElementSibling; s; s = s.previousElementSibling) if (s.tagName === e.tagName) i++;
      parts.unshift(e.tagName.toLowerCase() + ":nth-of-type(" + i + ")");
    }
    // Anchored at body or a unique id, so the path cannot match at another depth.
    return (anchored ? "" : ":root > ") + parts.join(" > ");
  }
  // A field's label without the field's own text (a select inside its label lists its options).
  function labelFor(el) {
    const l = el.labels && el.labels[0];
    const own = l ? Array.from(l.childNodes).filter(n => n !== el && !(n.contains && n.contains(el))) : [];
    return norm(own.map(n => n.nodeType === 1 ? n.innerText : n.textContent).join(" ")) || labelText(el);
  }
  function labelText(el) {
    if (el.id) { const l = document.querySelector(`label[for="${CSS.escape(el.id)}"]`); if (l) return textOf(l); }
    const l = el.closest("label"); if (l) return textOf(l);
    const by = (el.getAttribute("aria-labelledby") || "").split(/\s+/).map(id => id && document.getElementById(id)).filter(Boolean);
    return el.getAttribute("aria-label") || norm(by.map(textOf).join(" ")) || besideText(el) || el.getAttribute("placeholder") || "";
  }
  // A box with no label of its own, read as a person reads it: the text of the smallest block
  // around it that holds no other field or button (`<p><span>Genre:</span><input>`, a table
  // row `<th>Year</th><td><input>`, a caption after the box), when that text is short.
  const BESIDE_CHARS = 60, BESIDE_HOPS = 4;
  const ACTING = "input:not([type=hidden]),select,textarea,button,a[href],[role=button],[role=link],[onclick]";
  function besideText(el) {
    if (!/^(INPUT|TEXTAREA)$/.test(el.tagName)) return "";
    for (let up = el.parentElement, hops = 0; up && up !== document.body && hops < BESIDE_HOPS; up = up.parentElement, hops++) {
      if (Array.from(up.querySelectorAll(ACTING)).some(o => o !== el)) return "";
      const text = textAround(up, el);
      if (text) return text.length <= BESIDE_CHARS ? text : "";
    }
    return "";
  }
  // The text a person sees in `up`, outside `el`.
  function textAround(up, el) {
    const walk = document.createTreeWalker(up, NodeFilter.SHOW_TEXT);
    let out = "";
    for (let n = walk.nextNode(); n; n = walk.nextNode())
      if (n.data.trim() && !el.contains(n) && n.parentElement && visible(n.parentElement)) out += " " + n.data;
    return norm(out);
  }
  function outline(rootSel, max) {
    const root = rootSel ? find(rootSel) : body();
    const out = [`# ${document.title || "(untitled)"} — ${location.href}`];
    let n = 0;
    const push = line => { if (n++ < 400) out.push(line); };
    const SHOWN = "h1,h2,h3,h4,a[href],button,input,select,textarea,form,table,[role=button],img[alt]";
    // The root itself counts too: `browser_get_dom {selector: "table#fees"}` must show the table.
    const els = (root.matches && root.matches(SHOWN) ? [root] : []).concat(Array.from(root.querySelectorAll(SHOWN)));
    for (const el of els) {
      if (!visible(el) && !(el.tagName === "INPUT" && el.type === "hidden")) continue;
      const tag = el.tagName.toLowerCase();
      if (/^h[1-4]$/.test(tag)) push(`${"#".repeat(+tag[1] + 1)} ${textOf(el).slice(0, 120)}`);
      else if (tag === "a") push(`- link "${textOf(el).slice(0, 80)}" → ${el.href}  [${cssPath(el)}]`);
      else if (tag === "button" || el.getAttribute("role") === "button") push(`- button "${textOf(el).slice(0, 80)}"  [${cssPath(el)}]`);
      else if (tag === "input") {
        if (el.type === "hidden") continue;
        const what = el.type === "submit" || el.type === "button" ? `button "${el.value}"` : `input ${el.type} "${labelFor(el)}"${el.value && el.type !== "password" ? ` = "${el.value.slice(0, 40)}"` : ""}`;
        push(`- ${what}  [${cssPath(el)}]`);
      } else if (tag === "select") {
        const opts = Array.from(el.options).slice(0, 12).map(o => o.text.trim()).join(" | ");
        push(`- select "${labelFor(el)}" options: ${opts}  [${cssPath(el)}]`);
      } else if (tag === "textarea") push(`- textarea "${labelFor(el)}"  [${cssPath(el)}]`);
      else if (tag === "form") push(`- form ${String(el.getAttribute("method") || "get").toUpperCase()} ${el.getAttribute("action") || location.href}  [${cssPath(el)}]`);
      else if (tag === "table") {
        const rows = el.rows.length, cols = rows ? el.rows[0].cells.length : 0;
        const head = rows ? Array.from(el.rows[0].cells).map(c => textOf(c)).join(" | ").slice(0, 200) : "";
        push(`- table ${rows}×${cols}: ${head}  [${cssPath(el)}]`);
      } else if (tag === "img") push(`- image "${el.alt.slice(0, 80)}"`);
    }
    if (n > 400) out.push(`… ${n - 400} more elements not shown (pass a selector to look inside one part)`);
    let text = out.join("\n");
    if (text.length > max) text = text.slice(0, max) + "\n… (outline truncated)";
    return text;
  }
  function center(el) {
    el.scrollIntoView({block: "center", inline: "center"});
    const r = el.getBoundingClientRect();
    let x = r.left + r.width / 2, y = r.top + r.height / 2;
    // An element of a same-origin frame: add the frames' offsets in the top page.
    for (let w = el.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
      const f = w.frameElement.getBoundingClientRect();
      x += f.left + w.frameElement.clientLeft; y += f.top + w.frameElement.clientTop;
    }
    return {x, y, tag: el.tagName.toLowerCase(), text: textOf(el).slice(0, 80)};
  }
  // A click on `sel`, aimed; refused (a typed `{refused: CODE, message, …}` the worker turns into
  // an error) where it would do nothing a model expects: on a select (a click does not choose),
  // on a submit button whose form the browser will not send (a required field empty, an email
  // that is not one), naming those fields by ref; on an element something else covers (the
  // click would land on that). The controller's guards ask for the form checks: `holdInvalid`
  // (`invalid_form_hold`) and `confirmDefaults` (`form_defaults`, a first send nobody set up).
  function aim(sel, confirmDefaults, holdInvalid) {
    const el = find(sel);
    if (el.tagName === "SELECT") {
      const options = Array.from(el.options).slice(0, 12).map(o => norm(o.text));
      return {refused: "select_click", options, message: "`" + sel + "` is a select: a click does not choose an option. Call browser_select_option with selector `" + sel + "` and one of: " + options.join(", ")};
    }
    const bad = holdInvalid ? unsent(el) : [];
    if (bad.length) return {refused: "form_invalid", selector: sel, fields: bad, message: "the form was not sent: " + bad.map(fieldText).join("; ") + ". If the task is to send this form, fill these (browser_fill_form or browser_type), then click `" + sel + "` again"};
    const left = confirmDefaults ? unset(el) : [];
    if (left.length) return {refused: "form_unset", selector: sel, text: textOf(el).slice(0, 80), fields: left, message: unsetText(left, sel)};
    const at = center(el);
    const over = covering(el, at);
    if (over) return {refused: "covered", selector: sel, by: over, message: "`" + sel + "` is covered by " + over.what + ": a click there would hit that, not `" + sel + "`. Use what covers it first (choose in it, or close it), then click `" + sel + "`"};
    if (takesText(el)) at.next = el.readOnly ? READ_ONLY : "a text field: type into it with browser_type, or fill several fields at once with browser_fill_form";
    return at;
  }
  // What a click at `at` would hit instead of `el` (a calendar, a dialog or a banner on top
  // of it), as the outermost layer over it; a part of the field's own label (a styled checkbox)
  // is the field. Frames are not looked into.
  function covering(el, at) {
    if (el.ownerDocument !== document) return null;
    const top = document.elementFromPoint(at.x, at.y);
    if (!top || top === el || el.contains(top) || top.contains(el)) return null;
    if (el.labels && Array.from(el.labels).some(l => l.contains(top))) return null;
    let layer = top;
    while (layer.parentElement && !layer.parentElement.contains(el)) layer = layer.parentElement;
    const ref = refs.byEl.get(layer) || refs.byEl.get(top) || null;
    const text = textOf(layer).slice(0, 60);
    return {ref, text, what: (ref ? "[" + ref + "] " : "") + layer.tagName.toLowerCase() + (text ? ' "' + text + '"' : "")};
  }
  // A read-only field takes no keys: a person clicks it and picks from what opens (a calendar).
  const READ_ONLY = "a read-only field: it takes no typing. Choose its value from what the click on it opened (listed below, if anything opened)";
  const readOnly = el => (el.tagName === "INPUT" || el.tagName === "TEXTAREA") && el.readOnly && takesText(el);
  // The first send held: fields left empty ask to be typed into (small models click the send
  // button first, and take "click again to send" as the next step); fields the page filled
  // ask whether the task gives other values.
  function unsetText(left, sel) {
    const fields = left.map(fieldText).join("; ");
    if (left.every(f => f.kind !== "select" && f.value === ""))
      return "not sent yet: nothing was typed into " + fields + ". Type what the task asks for there first (browser_type, browser_fill_form), then click `" + sel + "`";
    return "not sent yet: these fields still hold what the page put there: " + fields + ". If the task gives values for them, set them first (browser_select_option, browser_fill_form); to send the form as it is, click `" + sel + "` again";
  }
  // A refused field in words: `[e4] "Size": "S"`.
  function fieldText(f) {
    return (f.ref ? "[" + f.ref + "] " : "") + JSON.stringify(f.label) + ": " + (f.problem || (f.value ? JSON.stringify(f.value) : "empty"));
  }
  // Fields the model set (typed, filled, chose), and forms already pointed out: a small model
  // sends an order with the page's defaults. Before the first send of a form: its selects and
  // prefilled fields nobody set (and its empty ones when nothing was set at all), once.
  const touched = new WeakSet(), warned = new WeakSet();
  // What a click on `el` would send: a submit button's form; or, for a `<button>` in no form,
  // the nearest block at most three levels up that holds fields (pages built without `<form>`
  // send what their script reads from the fields around the button, whatever its type says).
  // `declared`: the button says it submits; one of type "button" may be a step or a toggle.
  function submitting(el) {
    const b = el.closest("button,input");
    if (!b) return null;
    if (b.form) {
      const submits = b.tagName === "BUTTON" ? b.type === "submit" : b.type === "submit" || b.type === "image";
      return submits ? {group: b.form, form: b.form, fields: Array.from(b.form.elements), declared: true} : null;
    }
    if (b.tagName !== "BUTTON" || (b.type !== "submit" && b.type !== "button")) return null;
    for (let up = b.parentElement, i = 0; up && up !== body() && i < 3; up = up.parentElement, i++) {
      const fields = Array.from(up.querySelectorAll("input,select,textarea"));
      if (fields.length) return {group: up, form: null, fields, declared: b.type === "submit"};
    }
    return null;
  }
  function unset(el) {
    const sending = submitting(el);
    if (!sending || warned.has(sending.group)) return [];
    const fields = sending.fields.filter(f => visible(f) && !f.disabled && !f.readOnly && (f.tagName === "SELECT" || takesText(f)));
    const anySet = fields.some(f => touched.has(f));
    // A button of type "button" is held only among text fields all empty and untouched (a
    // page that sends by script); beside a filled field or a select it is a step or a toggle.
    const blank = !anySet && fields.every(f => f.tagName !== "SELECT" && f.value === "");
    if (!sending.declared && !blank) return [];
    const left = fields.filter(f => !touched.has(f) && (f.tagName === "SELECT" || f.value !== "" || !anySet));
    if (left.length) warned.add(sending.group);
    // Typed for the controller (it reads these, never the words): the field's kind (`select`,
    // `select-multiple`, `number`, `text` for text, search and textarea, else the input's type),
    // its value, a select's options.
    return left.slice(0, 8).map(f => {
      const select = f.tagName === "SELECT";
      const value = select ? (f.selectedOptions[0] ? norm(f.selectedOptions[0].text) : "") : f.value;
      const kind = select ? (f.multiple ? "select-multiple" : "select") : f.tagName === "TEXTAREA" || f.type === "text" || f.type === "search" ? "text" : f.type;
      const field = {ref: refs.byEl.get(f) || null, label: labelFor(f) || f.name || f.type, kind, value: value.slice(0, 40)};
      if (select) field.options = Array.from(f.options).slice(0, 12).map(o => norm(o.text));
      return field;
    });
  }
  function unsent(el) {
    const form = submitting(el)?.form;
    if (!form || form.noValidate || el.closest("button,input").formNoValidate) return [];
    return Array.from(form.elements).filter(f => f.willValidate && !f.checkValidity()).slice(0, 8).map(f => (
      {ref: refs.byEl.get(f) || null, label: labelFor(f) || f.name || f.type, problem: f.validationMessage}));
  }
  const BUTTONISH = new Set(["submit", "button", "reset", "image", "checkbox", "radio", "file", "hidden", "range", "color"]);
  const takesText = el => el.isContentEditable || el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && !BUTTONISH.has(el.type));
  // What an element is, and which tool acts on it: for a call that used the wrong kind.
  function wrongKind(el, sel, wanted) {
    const tag = el.tagName.toLowerCase(), type = (el.type || "").toLowerCase();
    let what = tag, tool = "browser_click";
    if (tag === "button" || (tag === "input" && ["submit", "button", "reset", "image"].includes(type)) || el.getAttribute("role") === "button") what = "button";
    else if (tag === "a") what = "link";
    else if (tag === "select") { what = "select"; tool = "browser_select_option"; }
    else if (tag === "input" && (type === "checkbox" || type === "radio")) { what = type; tool = "browser_fill_form with type " + type + " (or browser_click)"; }
    else if (window.__acInputs.special(el)) { what = type + " field"; tool = "browser_type with the value (" + window.__acInputs.forms(type) + ")"; }
    else if (STEP_ROLES.has(el.getAttribute("role"))) { what = el.getAttribute("role"); tool = "browser_type with the number"; }
    else if (takesText(el)) { what = "text field"; tool = "browser_type or browser_fill_form"; }
    // A ref on anything else means the page reacts to a click on it (snapshot.js gives plain
    // text none): a `<div>` Submit is clicked, not typed into.
    else if (refs.byEl.has(el)) tool = "browser_click";
    else tool = "nothing: its text is already in the snapshot (to keep a value, save_file it)";
    const text = textOf(el).slice(0, 60);
    return "`" + sel + "` is a " + what + (text ? ' "' + text + '"' : "") + ", not " + wanted + ": use " + tool;
  }
  // Focus a field for typing; refuse one that cannot take the keys (hidden, disabled), so text
  // (a password) never lands in whatever had focus before. A date, number, range or colour
  // field is left as it is and named (`{special: "date"}`): its value is set (`setSpecial`).
  function focusForTyping(sel, clear) {
    const el = find(sel);
    if (!visible(el)) throw new Error("`" + sel + "` is not visible, so it cannot be typed into");
    if (readOnly(el)) return {readOnly: true};
    if (window.__acInputs.special(el)) return {special: el.type};
    const step = stepper(el);
    if (step) return focusStepper(el, sel, step);
    if (!takesText(el) && el.tagName !== "SELECT") throw new Error(wrongKind(el, sel, "a text field"));
    el.scrollIntoView({block: "center"});
    el.focus();
    const focused = el.ownerDocument.activeElement; // a frame's field has focus in its own document
    if (focused !== el && !el.contains(focused))
      throw new Error("`" + sel + "` does not take keyboard focus (disabled or not a field)");
    touched.add(el);
    if (clear) {
      if (el.isContentEditable) { document.execCommand("selectAll"); document.execCommand("delete"); }
      else if (el.tagName === "INPUT" || el.tagName === "TEXTAREA") setValue(el, "");
    }
    return true;
  }
  // A widget that holds a number and moves it by its arrow keys, as ARIA's slider and
  // spinbutton do (the role on a div, or on a text field): its role, the number it holds now
  // (a field's own text first, since that is what it sends) and its bounds.
  const STEP_ROLES = new Set(["slider", "spinbutton"]);
  function stepper(el) {
    const role = el.getAttribute("role");
    if (!STEP_ROLES.has(role)) return null;
    const num = s => (s === null || String(s).trim() === "" || !isFinite(Number(s))) ? null : Number(s);
    const now = (el.tagName === "INPUT" ? num(el.value) : null) ?? num(el.getAttribute("aria-valuenow"));
    return {role, now, min: num(el.getAttribute("aria-valuemin")), max: num(el.getAttribute("aria-valuemax"))};
  }
  // Focused for its keys, never clicked: a click on a slider's track moves it.
  function focusStepper(el, sel, step) {
    if (el.disabled || el.getAttribute("aria-disabled") === "true") throw new Error("`" + sel + "` is disabled: its value cannot be set");
    if (step.now === null) throw new Error("`" + sel + "` is a " + step.role + " that shows no number, so it cannot be set to one: click its parts instead");
    el.scrollIntoView({block: "center"});
    el.focus();
    if (el.ownerDocument.activeElement !== el) throw new Error("`" + sel + "` does not take keyboard focus, so its keys cannot move it: click its parts instead");
    touched.add(el);
    return {stepper: step.role};
  }
  function setValue(el, value) {
    touched.add(el);
    const proto = el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : el.tagName === "SELECT" ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    const setter = Object.getOwnPropertyDescriptor(proto, "value").set;
    setter.call(el, value);
    el.dispatchEvent(new Event("input", {bubbles: true}));
    el.dispatchEvent(new Event("change", {bubbles: true}));
  }
  // A credential set into `sel`'s field with the page's input events and no key event, only
  // while the field's document and the top page are on `host` (and `origin`, when bound to
  // one) and its form sends only to `site`: the check and the write are one script.
  function placeSecret(sel, text, host, origin, site) {
    const el = find(sel), onSite = h => h === site.host || (site.wildcard && h.endsWith("." + site.host));
    const off = [location, el.ownerDocument.location].find(l => l.hostname !== host || (origin && l.origin !== origin))
      || (el.form ? window.__acSubmits.sendsTo(el.form) : []).find(u => !onSite(u.hostname) || (origin && u.origin !== origin));
    if (off) return {refused: "credential_site", host: off.hostname, message: "not typed: the field is on or its form sends to " + JSON.stringify(off.hostname) + ", not the credentials' site"};
    const field = (el.tagName === "INPUT" || el.tagName === "TEXTAREA") && takesText(el);
    if (!field || !visible(el) || el.disabled || el.readOnly) throw new Error("`" + sel + "` is not a visible text field that takes a value: nothing was typed");
    setValue(el, text);
    window.__acMasks.mark(el);
    return true;
  }
  // A date, time, number, range or colour field set to what `text` means (inputs.js), with the
  // page's events; answers the value it holds now, what was asked when the field moved it (a
  // range keeps to its bounds and step), and the field's own complaint (out of its range).
  function setSpecial(sel, text, el) {
    el = el || find(sel);
    const inputs = window.__acInputs, type = el.type;
    if (!inputs.special(el)) throw new Error(wrongKind(el, sel, "a date, time, number, range or colour field"));
    if (el.disabled || el.readOnly) throw new Error("`" + sel + "` is " + (el.disabled ? "disabled" : "read-only") + ": its value cannot be set");
    const value = inputs.convert(type, text);
    if (value === null) throw new Error("`" + sel + "` is a " + type + " field, and `" + String(text).slice(0, 40) + "` is not a " + type + " it takes: write it as " + inputs.forms(type));
    el.focus();
    setValue(el, value);
    const out = {set: el.value, kind: type};
    if (el.value !== value) out.asked = value;
    if (!el.checkValidity()) out.problem = el.validationMessage;
    return out;
  }
  // A date, number or ARIA slider takes its value here only where asked (`select_sets_value`).
  function selectOption(sel, value, setsValue) {
    const el = find(sel);
    if (el.tagName !== "SELECT" && !setsValue) throw new Error(wrongKind(el, sel, "a select"));
    if (el.tagName !== "SELECT" && window.__acInputs.special(el)) return setSpecial(sel, value, el);
    const step = el.tagName !== "SELECT" && stepper(el);
    if (step) return focusStepper(el, sel, step);
    if (el.tagName !== "SELECT") throw new Error(wrongKind(el, sel, "a select"));
    const opts = Array.from(el.options);
    const lower = s => norm(s).toLowerCase(), exact = v => opts.find(o => o.value === v) || opts.find(o => lower(o.text) === lower(v));
    // Part of an option's text is a loose reading (`loose_selectors`).
    const part = v => { const o = loose && opts.find(o => lower(o.text).includes(lower(v))); return o && readLoosely(sel, "the option " + JSON.stringify(norm(o.text)), o); };
    const pick = v => exact(v) || part(v)
      // `Mug=mug`, as the snapshot lists an option whose value differs from its text.
      || (v.includes("=") && pick(v.split("=")[0]));
    const names = opts.map(o => norm(o.text));
    const more = names.length > 40 ? ", … " + (names.length - 40) + " more" : "";
    const none = v => new Error("no option `" + v + "` in `" + sel + "`; options: " + names.slice(0, 40).join(", ") + more);
    value = String(value);
    if (el.multiple) {
      // A list that takes several: "Ola, Missie" (or "Ola and Missie") chooses both, and only them.
      const wanted = exact(value) ? [value] : value.split(/\s*,\s*|\s+and\s+/).filter(Boolean);
      const chosen = wanted.map(v => { const o = pick(v); if (!o) throw none(v); return o; });
      for (const o of opts) o.selected = chosen.includes(o);
      touched.add(el);
      el.dispatchEvent(new Event("input", {bubbles: true}));
      el.dispatchEvent(new Event("change", {bubbles: true}));
      return {selected: chosen.map(o => o.value), label: chosen.map(o => o.text.trim())};
    }
    const opt = pick(value);
    if (!opt) throw none(value);
    setValue(el, opt.value);
    return {selected: opt.value, label: opt.text.trim()};
  }
  // What a value asks of a checkbox or radio: checked (true, yes, on, its own label or value),
  // unchecked (false, no, off), or null for anything else: a "6" meant for a text box must not
  // silently tick the box it was sent to.
  function checkedWanted(el, value) {
    const v = norm(String(value)).toLowerCase();
    if (/^(false|0|no|off|unchecked|)$/.test(v)) return false;
    if (/^(true|1|yes|on|checked|x)$/.test(v)) return true;
    const own = [labelFor(el), el.value].map(t => norm(t).toLowerCase());
    return own.includes(v) ? true : null;
  }
  const radioGroup = el => el.name
    ? Array.from((el.form || document).querySelectorAll("input[type=radio]")).filter(r => r.name === el.name && visible(r))
    : [el];
  const named = f => (refs.byEl.get(f) ? "[" + refs.byEl.get(f) + "] " : "") + JSON.stringify(labelFor(f) || f.value || f.name || f.type);
  // The refusal of such a value, naming the radio's choices and the text fields near the box,
  // where the value may belong.
  function notABox(el, sel, value) {
    let near = [];
    for (let up = el.parentElement, i = 0; up && i < 4 && !near.length; up = up.parentElement, i++)
      near = Array.from(up.querySelectorAll("input,textarea")).filter(f => takesText(f) && visible(f) && refs.byEl.has(f));
    const choices = el.type === "radio" ? radioGroup(el).slice(0, 8).map(named).join(", ") : "";
    const fields = near.slice(0, 6).map(named).join(", ");
    return "`" + sel + "` is a " + el.type + ": it is checked or not (value true or false), it takes no " + JSON.stringify(String(value)) +
      (choices ? ". Its group's choices: " + choices : "") + (fields ? ". Text goes into a text field: " + fields : "");
  }
  function fill(fields, byLabel) {
    const done = [];
    for (const f of fields) {
      const el = find(f.selector);
      const kind = f.type || (el.tagName === "SELECT" ? "select" : (el.type === "checkbox" || el.type === "radio") ? el.type : "text");
      if (readOnly(el)) throw new Error("`" + f.selector + "` is read-only: it takes no typing. Click it (browser_click) and choose its value from what opens");
      if (window.__acInputs.special(el)) done.push(Object.assign({selector: f.selector}, setSpecial(f.selector, f.value, el)));
      else if (kind === "select") done.push(Object.assign({selector: f.selector}, selectOption(f.selector, f.value, false)));
      else if (kind === "checkbox" || kind === "radio") {
        if (el.type !== "checkbox" && el.type !== "radio") throw new Error(wrongKind(el, f.selector, "a " + kind));
        const want = checkedWanted(el, f.value);
        // A radio given one of its group's labels: that one is chosen, where asked (`radio_by_label`).
        const chosen = byLabel && want === null && el.type === "radio" ? radioGroup(el).find(r => checkedWanted(r, f.value) === true) : null;
        if (want === null && !chosen) throw new Error(notABox(el, f.selector, f.value));
        const box = chosen || el, ref = chosen && refs.byEl.get(chosen);
        if (box.checked !== (want ?? true)) box.click();
        done.push(Object.assign({selector: ref ? "ref=" + ref : f.selector, checked: box.checked}, chosen && {chosen_by_label: true}));
      } else if (el.isContentEditable) { el.focus(); el.textContent = String(f.value); el.dispatchEvent(new Event("input", {bubbles: true})); done.push({selector: f.selector, filled: true}); }
      else if (!takesText(el)) throw new Error(wrongKind(el, f.selector, "a text field"));
      else { el.focus(); setValue(el, String(f.value)); done.push({selector: f.selector, filled: true}); }
    }
    return done;
  }
  function links(sel, pattern, attr) {
    const root = sel ? findAll(sel) : [document];
    if (sel && !root.length) throw new NoMatch("no element matches `" + sel + "`" + hint(sel));
    const re = pattern ? new RegExp(pattern) : null;
    const seen = new Set(), out = [];
    for (const r of root) {
      const anchors = r.matches && r.matches("a,[href],[src]") ? [r] : Array.from(r.querySelectorAll(attr ? `[${attr}]` : "a[href]"));
      for (const a of anchors) {
        let url = attr && attr !== "href" ? a.getAttribute(attr) : (a.href || a.getAttribute("href"));
        if (!url) continue;
        try { url = new URL(url, location.href).href; } catch (e) {}
        if (re && !re.test(url)) continue;
        if (seen.has(url)) continue;
        seen.add(url);
        out.push({text: textOf(a).slice(0, 200), url});
      }
    }
    return out;
  }
  function table(sel) {
    const el = find(sel);
    const t = el.tagName === "TABLE" ? el : el.querySelector("table");
    if (!t) throw new Error("`" + sel + "` is not a table and holds none");
    return Array.from(t.rows).slice(0, 5000).map(r => Array.from(r.cells).map(c => norm(c.innerText).slice(0, 2000)));
  }
  function texts(selectors) {
    const out = {};
    for (const s of selectors) {
      const all = findAll(s.selector);
      const cut = t => t.length > 5000 ? t.slice(0, 5000) + "…" : t;
      out[s.name] = all.length === 0 ? null : all.length === 1 ? cut(textOf(all[0])) : all.slice(0, 200).map(e => cut(textOf(e)));
    }
    return out;
  }
  function submit(formSel, buttonSel) {
    if (buttonSel) { const b = find(buttonSel); b.click(); return {clicked: buttonSel}; }
    const el = formSel ? find(formSel) : document.querySelector("form");
    if (!el) throw new Error("no form on the page");
    const form = el.tagName === "FORM" ? el : el.closest("form");
    if (!form) throw new Error("`" + formSel + "` is not inside a form");
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
    return {submitted: form.action || location.href};
  }
  function info() {
    return {url: location.href, title: String(document.title || ""), ready: document.readyState,
      scroll: {x: Math.round(scrollX), y: Math.round(scrollY), height: document.documentElement.scrollHeight}};
  }
  return {looseFor, looseRead, find, findAll, outline, center, aim, focusForTyping, setValue, placeSecret, setSpecial, selectOption, fill, links, table, texts, submit, info, textOf,
          norm, visible, takesText, labelFor, cssPath, refState, listenedIn, stepper, stepperAt: sel => stepper(find(sel)),
          text: sel => textOf(sel ? find(sel) : body())};
})(); }
