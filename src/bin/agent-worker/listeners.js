// agent-worker: runs in the page's own world before the page's scripts (every document and
// frame) and records the elements the page gives a click listener, which nothing in the DOM
// shows: addEventListener of a click-like event, or an `onclick` property set from script.
// The helpers' world (page.js) asks with a `__ac_listeners` event on the document; each
// recorded element still in it answers with a `__ac_listener` event. The two worlds share only
// the DOM, so events carry the answer. Nothing of the page is changed but `form.submit()`, which
// asks first (below).
(() => {
  const CLICKS = new Set(["click", "mousedown", "mouseup", "pointerdown", "pointerup", "touchstart"]);
  const add = EventTarget.prototype.addEventListener;
  const marked = new WeakSet();
  let held = [];
  const mark = el => {
    if (el && el.nodeType === 1 && !marked.has(el)) {
      marked.add(el);
      held.push(new WeakRef(el));
    }
  };
  // Named and sized as the browser's own (some libraries look at a function's name or length).
  EventTarget.prototype.addEventListener = function addEventListener(type, listener) {
    if (CLICKS.has(type)) mark(this);
    return add.apply(this, arguments);
  };
  for (const name of ["onclick", "onmousedown", "onmouseup", "onpointerdown"]) {
    const d = Object.getOwnPropertyDescriptor(HTMLElement.prototype, name);
    if (!d || !d.set) continue;
    Object.defineProperty(HTMLElement.prototype, name, {
      ...d,
      set(value) {
        if (value) mark(this);
        return d.set.call(this, value);
      },
    });
  }
  // `form.submit()` fires no submit event: it asks the helpers' world first with a cancelable
  // `__ac_submit` on the form (submits.js stops it while a session's sends wait for approval).
  const send = HTMLFormElement.prototype.submit;
  HTMLFormElement.prototype.submit = function submit() {
    if (this.dispatchEvent(new Event("__ac_submit", {cancelable: true}))) return send.call(this);
  };
  add.call(document, "__ac_listeners", () => {
    held = held.filter(r => {
      const el = r.deref();
      if (!el) return false;
      if (el.isConnected && el !== el.ownerDocument.body && el !== el.ownerDocument.documentElement) {
        el.dispatchEvent(new Event("__ac_listener", {composed: true}));
      }
      return true;
    });
  }, true);
})();
