// agent-worker locators: how a person would name the element a step acts on, described just
// before the step acts (its role and accessible name, its label, placeholder, text, test id,
// id, and a CSS path as the last resort), so that a run exported as a script finds the element
// again without refs. For each way, whether it names this element alone on the page: "loose"
// (Playwright's default matching: a case-insensitive part of the text), "exact" (the whole text),
// or absent when others share it. It only reads the page and never a field's value.
if (!window.__acLocate) { window.__acLocate = (() => {
  const ac = window.__ac, norm = ac.norm;
  const INPUT_ROLES = {button: "button", submit: "button", reset: "button", image: "button", checkbox: "checkbox",
    radio: "radio", range: "slider", number: "spinbutton", search: "searchbox", email: "textbox", tel: "textbox",
    text: "textbox", url: "textbox"};
  // Roles whose accessible name is the text inside them.
  const FROM_CONTENT = new Set(["button", "link", "checkbox", "radio", "heading", "tab", "menuitem", "option",
    "cell", "columnheader", "rowheader", "switch", "treeitem", "menuitemcheckbox", "menuitemradio", "listitem"]);
  const CANDIDATES = "a,area,button,input,select,textarea,img,h1,h2,h3,h4,h5,h6,li,option,td,th,[role],[aria-label]";
  const isField = el => /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName);
  function roleOf(el) {
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (explicit) return explicit.toLowerCase();
    const tag = el.tagName.toLowerCase();
    if (/^h[1-6]$/.test(tag)) return "heading";
    if (tag === "input") {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if ((type === "text" || type === "search") && el.hasAttribute("list")) return "combobox";
      return INPUT_ROLES[type] || "";
    }
    return {a: el.hasAttribute("href") ? "link" : "", area: el.hasAttribute("href") ? "link" : "", button: "button",
      textarea: "textbox", select: el.multiple || el.size > 1 ? "listbox" : "combobox", li: "listitem",
      option: "option", img: el.getAttribute("alt") === "" ? "" : "img", td: "cell", th: "columnheader"}[tag] || "";
  }
  const byIds = el => norm((el.getAttribute("aria-labelledby") || "").split(/\s+/)
    .map(id => id && el.ownerDocument.getElementById(id)).filter(Boolean).map(ac.textOf).join(" "));
  // What Playwright's get_by_label reads: a <label> of the field, aria-labelledby, aria-label.
  function labelOf(el) {
    if (!isField(el)) return "";
    const l = el.labels && el.labels[0];
    const own = l ? norm(Array.from(l.childNodes).filter(n => !(n.contains && n.contains(el)) && n !== el)
      .map(n => n.nodeType === 1 ? n.innerText : n.textContent).join(" ")) : "";
    return own || byIds(el) || norm(el.getAttribute("aria-label"));
  }
  function nameOf(el, role) {
    const named = byIds(el) || norm(el.getAttribute("aria-label"));
    if (named) return named;
    if (isField(el)) {
      const l = labelOf(el);
      if (l) return l;
      if (el.tagName === "INPUT" && /^(submit|reset|button)$/i.test(el.type))
        return norm(el.value) || (el.type === "submit" ? "Submit" : el.type === "reset" ? "Reset" : "");
      if (el.tagName === "INPUT" && el.type === "image") return norm(el.alt);
    }
    if (el.tagName === "IMG") return norm(el.alt);
    if (FROM_CONTENT.has(role)) { const t = ac.textOf(el); if (t) return t; }
    return norm(el.getAttribute("title")) || (isField(el) ? norm(el.getAttribute("placeholder")) : "");
  }
  // How `want` names `el` alone among `others` (their `read` text): "loose", "exact" or null.
  function alone(el, want, others, read) {
    if (!want) return null;
    const w = want.toLowerCase();
    const loose = others.filter(o => read(o).toLowerCase().includes(w));
    if (loose.length === 1 && loose[0] === el) return "loose";
    const exact = others.filter(o => read(o) === want);
    return exact.length === 1 && exact[0] === el ? "exact" : null;
  }
  // The frames from the top page down to `el`'s document, each a selector that names it alone
  // in its parent's document (Playwright's frame_locator): an id, a name, a title, a src.
  function framesOf(el) {
    const path = [];
    for (let w = el.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
      const f = w.frameElement, tag = f.tagName.toLowerCase(), doc = f.ownerDocument;
      const one = s => doc.querySelectorAll(s).length === 1 ? s : null;
      const attr = a => f.getAttribute(a) ? one(tag + "[" + a + '="' + CSS.escape(f.getAttribute(a)) + '"]') : null;
      path.unshift((f.id && one("#" + CSS.escape(f.id))) || attr("name") || attr("title") || attr("src") || ac.cssPath(f));
    }
    return path;
  }
  function describe(sel) {
    const el = ac.find(sel), doc = el.ownerDocument;
    // Alone in its own document: a frame's locator looks only inside the frame.
    const shown = s => Array.from(doc.querySelectorAll(s)).filter(ac.visible);
    const tag = el.tagName.toLowerCase(), role = roleOf(el), name = nameOf(el, role);
    const label = labelOf(el), placeholder = isField(el) ? norm(el.getAttribute("placeholder")) : "";
    const text = isField(el) ? "" : ac.textOf(el).slice(0, 80);
    const testid = el.getAttribute("data-testid") || "", id = el.id || "";
    const fields = shown("input,select,textarea");
    const unique = {
      role: role && alone(el, name, shown(CANDIDATES).filter(o => roleOf(o) === role), o => nameOf(o, role)),
      label: alone(el, label, fields, labelOf),
      placeholder: alone(el, placeholder, fields, o => norm(o.getAttribute("placeholder"))),
      text: text && alone(el, text, ac.findAll("text=" + text).filter(ac.visible), ac.textOf),
      testid: !!testid && doc.querySelectorAll(`[data-testid="${CSS.escape(testid)}"]`).length === 1,
      // An id a framework made up (digits in a row, a hash) is no name a person would write.
      id: !!id && !/\d{3,}|^[a-f0-9-]{12,}$|^:|^ember|^react/i.test(id) &&
        doc.querySelectorAll("#" + CSS.escape(id)).length === 1,
    };
    return {tag, type: tag === "input" ? (el.getAttribute("type") || "text").toLowerCase() : "", role, name: name.slice(0, 120),
      label: label.slice(0, 120), placeholder, text, testid, id, field_name: el.getAttribute("name") || "",
      css: ac.cssPath(el), frames: framesOf(el), unique};
  }
  return {describe};
})(); }
