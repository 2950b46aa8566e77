// The web page's DOM helpers and its markdown renderer, loaded before app.js (plain scripts:
// what this file declares, app.js uses). Everything is built as DOM nodes with text in text
// nodes: no HTML is ever parsed, so nothing the model or a page wrote can become markup, and
// only http(s) links become links.
'use strict';

// ----- small DOM helpers --------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'onclick') node.addEventListener('click', v);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== undefined && c !== null) node.append(c);
  }
  return node;
}

function show(node, visible) {
  node.hidden = !visible;
}

function setText(id, text) {
  const node = $(id);
  node.textContent = text || '';
  show(node, Boolean(text));
}

function fmtInt(n) {
  return Number(n || 0).toLocaleString('en-US');
}

// ----- markdown, safely: a tiny subset built as DOM nodes -----------------------------------

const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\[[^\]\n]+\]\([^)\s]+\))/g;

function safeUrl(raw) {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch (_) {
    return null;
  }
}

function inline(text) {
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    frag.append(text.slice(last, m.index));
    const token = m[0];
    if (m[1]) {
      frag.append(el('code', { text: token.slice(1, -1) }));
    } else if (m[2]) {
      frag.append(el('strong', { text: token.slice(2, -2) }));
    } else {
      const split = token.indexOf('](');
      const label = token.slice(1, split);
      const href = safeUrl(token.slice(split + 2, -1));
      frag.append(href ? el('a', { href, text: label, target: '_blank', rel: 'noopener noreferrer nofollow' }) : token);
    }
    last = m.index + token.length;
  }
  frag.append(text.slice(last));
  return frag;
}

function renderMarkdown(md) {
  const root = document.createDocumentFragment();
  const lines = String(md || '').replace(/\r\n?/g, '\n').split('\n');
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) root.append(el('p', {}, inline(para.join(' '))));
    para = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flush();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      root.append(el('pre', {}, el('code', { text: code.join('\n') })));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      root.append(el(`h${Math.min(heading[1].length + 3, 6)}`, {}, inline(heading[2])));
    } else if (item) {
      if (para.length) flush();
      const tag = item[1] ? 'ul' : 'ol';
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag);
        root.append(list);
      }
      list.append(el('li', {}, inline(item[3])));
    } else if (line.trim() === '') {
      flush();
    } else {
      list = null;
      para.push(line.trim());
    }
  }
  flush();
  return root;
}

