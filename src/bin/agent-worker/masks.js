// agent-worker masks: where a page's secret fields are, for the worker to paint them over in
// every image it makes (frames/ in the worker). A field holds a secret when it is a password
// input, when its autocomplete says one-time-code, cc-number, cc-csc, current-password or
// new-password, or when the worker put a credential or a person's typing into it (`mark`,
// kept in this world only: the page cannot see or undo it). Same-origin frames and open
// shadow roots are looked into; a cross-origin frame a person typed into is masked whole.
if (!window.__acMasks) { window.__acMasks = (() => {
  const marked = new WeakSet();
  const SECRET_AUTOCOMPLETE = /(^|\s)(one-time-code|cc-number|cc-csc|current-password|new-password)(\s|$)/i;
  const isFrame = el => el.tagName === "IFRAME" || el.tagName === "FRAME";
  const inner = el => { try { return el.contentDocument; } catch (e) { return null; } };
  function secret(el) {
    if (marked.has(el)) return true;
    if (el.tagName === "INPUT" && String(el.type).toLowerCase() === "password") return true;
    const auto = (el.tagName === "INPUT" || el.tagName === "TEXTAREA") && el.getAttribute("autocomplete");
    return !!auto && SECRET_AUTOCOMPLETE.test(auto);
  }
  function mark(el) {
    if (!el || el.nodeType !== 1) return false;
    marked.add(el);
    return true;
  }
  // Where typing goes now: through same-origin frames and open shadow roots; a cross-origin
  // frame is as deep as the helpers see.
  function active() {
    let el = document.activeElement;
    for (let depth = 0; el && depth < 16; depth++) {
      if (el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
      const doc = isFrame(el) && inner(el);
      if (doc && doc.activeElement && doc.activeElement !== doc.body) { el = doc.activeElement; continue; }
      break;
    }
    return el && el.tagName !== "BODY" && el.tagName !== "HTML" ? el : null;
  }
  // The fields these selectors name (those that still match) and the focused one.
  function markTyped(selectors) {
    for (const sel of selectors) { try { mark(window.__ac.find(sel)); } catch (e) { /* gone: nothing to mark */ } }
    return mark(active());
  }
  // Every secret field's box in the top viewport's CSS pixels, or the document's (`whole`),
  // two pixels wider on each side.
  function rects(whole) {
    const out = [];
    const push = (r, dx, dy) => out.push({x: r.left + dx - 2, y: r.top + dy - 2, w: r.width + 4, h: r.height + 4});
    const walk = (root, dx, dy, depth) => {
      if (depth > 8) return;
      for (const el of root.querySelectorAll("*")) {
        if (el.shadowRoot) walk(el.shadowRoot, dx, dy, depth + 1);
        const frame = isFrame(el);
        if (!frame && !secret(el)) continue;
        const r = el.getBoundingClientRect();
        if (r.width <= 0 || r.height <= 0) continue;
        const doc = frame && inner(el);
        if (frame && !doc) { if (marked.has(el)) push(r, dx, dy); continue; }
        if (!frame) { push(r, dx, dy); continue; }
        const st = el.ownerDocument.defaultView.getComputedStyle(el);
        const left = r.left + el.clientLeft + (parseFloat(st.paddingLeft) || 0);
        const top = r.top + el.clientTop + (parseFloat(st.paddingTop) || 0);
        walk(doc, dx + left, dy + top, depth + 1);
      }
    };
    walk(document, whole ? scrollX : 0, whole ? scrollY : 0, 0);
    return out;
  }
  return {mark, markTyped, rects, secret};
})(); }
