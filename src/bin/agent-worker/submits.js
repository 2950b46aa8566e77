// agent-worker: which action would send a form, and a hold on every send nobody approved, for
// sessions whose approval mode is not `auto` (the controller asks for it with `hold_submits`).
// Defined once per document as window.__acSubmits, in the helpers' isolated world.
// Guarantees: `byClick`, `byEnter` and `byKey` answer before anything is done (the worker asks
// first and acts only when the controller says the send is approved); while armed, a `submit`
// event (a click, Enter, `requestSubmit()`) and the page's `form.submit()` (listeners.js turns it
// into a cancelable `__ac_submit` event) are stopped in the top document and its same-origin
// frames, and the first one is kept so that an approved send sends exactly it.
if (!window.__acSubmits) { window.__acSubmits = (() => {
  let armed = false, held = null;
  const watched = new WeakSet();
  // A form's own property: a field named `action`, `method` or `elements` shadows it.
  const own = (form, name) => Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, name).get.call(form);
  // A form in words for the person who approves: where it goes, how, and by which button.
  function describe(form, submitter) {
    const action = (submitter && submitter.formAction) || own(form, "action") || form.ownerDocument.location.href;
    const method = ((submitter && submitter.formMethod) || own(form, "method") || "get").toLowerCase();
    const button = submitter ? String(submitter.innerText || submitter.value || "").trim().slice(0, 60) : null;
    return {action, method, button, fields: own(form, "elements").length};
  }
  // Every address a form may send to: its action and each of its controls' formaction.
  function sendsTo(form) {
    const overrides = Array.from(own(form, "elements")).filter(c => c.hasAttribute("formaction")).map(c => c.formAction);
    return [own(form, "action"), ...overrides].map(u => new URL(u, location.href));
  }
  // A click on `el` sends its form: a submit button or an image input with a form owner.
  function byClick(el) {
    const b = el && el.closest && el.closest("button,input");
    if (!b || !b.form || b.disabled) return null;
    const sends = b.tagName === "BUTTON" ? b.type === "submit" : b.type === "submit" || b.type === "image";
    return sends ? describe(b.form, b) : null;
  }
  // Enter in `el` sends its form: on a submit control (it clicks it), or in a field of a form
  // (implicit submission; asked for even where the form would not go, which is the safe side).
  const NO_IMPLICIT = new Set(["button", "reset", "file", "hidden"]);
  function byEnter(el) {
    const clicked = byClick(el);
    if (clicked) return clicked;
    if (el && el.tagName === "INPUT" && el.form && !NO_IMPLICIT.has(el.type)) return describe(el.form, null);
    return null;
  }
  // The element keys go to, inside same-origin frames; a cross-origin frame is not looked into.
  function active() {
    let el = document.activeElement;
    while (el && el.tagName === "IFRAME") {
      let inner = null;
      try { inner = el.contentDocument && el.contentDocument.activeElement; } catch (e) { inner = null; }
      if (!inner) return {frame: el};
      el = inner;
    }
    return {el};
  }
  // A key press (DevTools' key name) that would send a form: Enter as above, Space on a submit
  // button; focus in a cross-origin frame counts as sending, since nothing there can be read.
  function byKey(key) {
    if (key !== "Enter" && key !== " ") return null;
    const {el, frame} = active();
    if (frame) return {action: frame.src || "a frame of another site", method: "unknown", button: null, fields: 0};
    return key === "Enter" ? byEnter(el) : byClick(el);
  }
  function stop(e) {
    if (!armed) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    const form = e.target;
    if (!held && form && form.tagName === "FORM") held = {form: new WeakRef(form), submitter: e.submitter ? new WeakRef(e.submitter) : null};
  }
  function watch(doc) {
    if (!doc || watched.has(doc)) return;
    watched.add(doc);
    doc.addEventListener("submit", stop, true);
    doc.addEventListener("__ac_submit", stop, true);
  }
  function watchAll() {
    watch(document);
    for (const f of document.querySelectorAll("iframe,frame")) {
      try { watch(f.contentDocument); } catch (e) { /* another site's frame: not ours to watch */ }
    }
  }
  // Armed or not for the command now running; a new document starts unarmed until asked.
  function arm(on) {
    armed = !!on;
    if (armed) { held = null; watchAll(); }
    return armed;
  }
  // The send held during the command, in words (kept for `sendHeld`), or null.
  function takeHeld() {
    const form = held && held.form.deref();
    if (!form || !form.isConnected) { held = null; return null; }
    return describe(form, held.submitter && held.submitter.deref());
  }
  // The held send, approved: sent as it was asked for (with its button), then forgotten.
  function sendHeld() {
    const form = held && held.form.deref();
    const submitter = held && held.submitter && held.submitter.deref();
    held = null;
    if (!form || !form.isConnected) throw new Error("the form that was held is no longer on the page: nothing was sent");
    armed = false;
    if (form.requestSubmit) form.requestSubmit(submitter && submitter.form === form ? submitter : undefined); else form.submit();
    return describe(form, submitter);
  }
  return {arm, byClick, byEnter, byKey, takeHeld, sendHeld, sendsTo};
})(); }
