// agent-controller's web page: the API and its token, and one session's view (its live log,
// screen, questions, files, notes and report). Plain DOM, no framework, no build step. Every
// text from the server goes into the page as text (textContent / text nodes); nothing is ever
// parsed as HTML, and the Content-Security-Policy (Trusted Types) would refuse it if it were.
// The DOM helpers and the markdown renderer are in dom.js, loaded first; the session list and
// the new-session form in list.js. With an API token the page asks for it once, keeps it in
// sessionStorage (this tab only) and sends it as a bearer token with every request.
'use strict';

const TOKEN_KEY = 'agent-controller-token';
const ACTIVE = ['waiting', 'running', 'confirming', 'paused'];
const LOG_MAX = 3000;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  needToken: false,
  started: false,
  llms: null,
  cur: null, // the session shown: {id, record, logNext, ctl, shot, files, notes, report, final}
  tick: 0,
};

const enc = encodeURIComponent;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const isActive = (record) => Boolean(record) && ACTIVE.includes(record.status);

// ----- the API ------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || '';
  }
}

async function api(path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  if (state.token) headers.set('Authorization', `Bearer ${state.token}`);
  let body = opts.body;
  if (opts.json !== undefined) {
    headers.set('Content-Type', 'application/json');
    body = JSON.stringify(opts.json);
  }
  const resp = await fetch(path, {
    method: opts.method || 'GET',
    headers,
    body,
    signal: opts.signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  if (resp.status === 401) {
    askForToken(state.token ? 'The token was refused.' : '');
    throw new ApiError(401, 'unauthorized', 'this controller needs its API token');
  }
  return resp;
}

async function apiJson(path, opts) {
  const resp = await api(path, opts);
  let value = null;
  try {
    value = await resp.json();
  } catch (_) {
    value = null;
  }
  if (!resp.ok) {
    throw new ApiError(resp.status, value && value.code, value && value.error);
  }
  return value;
}

// ----- the token ----------------------------------------------------------------------------

function askForToken(why) {
  state.needToken = true;
  show($('token-panel'), true);
  show($('app'), false);
  setText('token-error', why);
  $('token-input').focus();
}

function tokenSubmitted(event) {
  event.preventDefault();
  state.token = $('token-input').value.trim();
  $('token-input').value = '';
  sessionStorage.setItem(TOKEN_KEY, state.token);
  state.needToken = false;
  show($('token-panel'), false);
  show($('app'), true);
  show($('forget-token'), true);
  start();
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = '';
  location.reload();
}

// ----- one session --------------------------------------------------------------------------

function go(id) {
  location.hash = `#s/${enc(id)}`;
}

function fromHash() {
  const m = /^#s\/(.+)$/.exec(location.hash);
  select(m ? decodeURIComponent(m[1]) : null);
}

function select(id) {
  if (state.cur && state.cur.id === id) return;
  if (state.cur) {
    state.cur.ctl.abort();
    if (state.cur.shot.url) URL.revokeObjectURL(state.cur.shot.url);
  }
  state.cur = null;
  show($('pick'), !id);
  show($('session'), Boolean(id));
  for (const b of $('sessions').querySelectorAll('button')) {
    b.classList.toggle('current', b.dataset.id === id);
  }
  if (!id) return;
  const cur = {
    id,
    record: null,
    logNext: 0,
    ctl: new AbortController(),
    shot: { name: '', etag: '', url: '' },
    files: '',
    notes: '',
    report: null,
    final: false,
  };
  state.cur = cur;
  $('log').replaceChildren();
  $('shot').hidden = true;
  $('shot').removeAttribute('src');
  show($('shot-none'), true);
  $('shot-name').textContent = '';
  $('c-reason').value = '';
  refreshSession(cur).then(() => logLoop(cur));
  if (window.matchMedia('(max-width: 800px)').matches) $('detail').scrollIntoView();
}

async function refreshSession(cur) {
  try {
    const record = await apiJson(`/sessions/${enc(cur.id)}`, { signal: cur.ctl.signal });
    if (state.cur !== cur) return;
    const moved = cur.record && cur.record.status !== record.status;
    cur.record = record;
    renderRecord(record);
    if (moved) refreshList().catch(() => {});
    await Promise.all([refreshFiles(cur), refreshNotes(cur), refreshReport(cur)]);
    if (!isActive(record)) cur.final = true;
  } catch (e) {
    if (state.cur === cur && e.name !== 'AbortError') setText('s-error', e.message);
  }
}

function renderRecord(r) {
  $('s-id').textContent = r.session_id;
  const badge = $('s-status');
  badge.textContent = r.status;
  badge.className = `badge ${r.status}`;
  show($('s-stop'), isActive(r));
  show($('replay'), r.status === 'finished');
  show($('r-export'), r.type !== 'app');
  $('s-target').textContent = r.target;
  $('s-what').textContent = r.instruction || r.goal || '';
  const llm = r.llm ? `${r.llm.name} (${r.llm.provider} ${r.llm.model})` : '';
  const parts = [r.mode, r.type, llm && `model ${llm}`, r.worker && `worker ${r.worker}`, `turn ${r.turn}/${r.max_turns}`];
  if (r.options && r.options.dry_run) parts.push('dry run');
  if (r.options && r.options.auto_confirm) parts.push('auto-confirm');
  if (r.options && r.options.allowed_domains) parts.push(`only ${r.options.allowed_domains.join(', ')}`);
  parts.push(`created ${r.created_at}`);
  $('s-meta').textContent = parts.filter(Boolean).join(' · ');
  $('s-usage').textContent = usageText(r);
  setText('s-waiting', r.status === 'waiting' && r.waiting_for ? `Waiting: ${r.waiting_for}` : '');
  setText('s-error', r.error);
  setText('s-summary', r.summary ? `Summary: ${r.summary}` : '');
  renderConfirmation(r.confirmation_pending);
  renderQuestion(r.question_pending);
  renderTakeover(r);
  renderRecording(r);
}

function usageText(r) {
  const u = r.usage || {};
  const i = r.images || {};
  let text = `tokens: ${fmtInt(u.input_tokens)} in · ${fmtInt(u.output_tokens)} out`;
  if (u.cache_read_input_tokens || u.cache_creation_input_tokens) {
    text += ` · cache ${fmtInt(u.cache_read_input_tokens)} read / ${fmtInt(u.cache_creation_input_tokens)} written`;
  }
  text += ` · images: ${fmtInt(i.sent)} sent, ${fmtInt(i.skipped)} unchanged`;
  if (i.sent) text += ` (≈ ${fmtInt(i.estimated_tokens)} tokens, ${fmtInt(Math.ceil((i.bytes || 0) / 1024))} KB)`;
  const b = r.budget;
  if (b) {
    const spent = [];
    if (b.limit.tokens) spent.push(`${fmtInt(b.spent.tokens)}/${fmtInt(b.limit.tokens)} tokens`);
    if (b.limit.usd) spent.push(`$${(b.spent.usd || 0).toFixed(4)}/$${b.limit.usd}`);
    if (b.limit.seconds) spent.push(`${fmtInt(b.spent.seconds)}/${fmtInt(b.limit.seconds)} s`);
    text += ` · budget: ${spent.join(', ')}${b.exceeded ? ` (${b.exceeded} reached)` : ''}`;
  }
  return text;
}

/// `details` is whatever the agent gave: a list, an object, a string.
function detailsNode(details) {
  if (details === null || details === undefined || details === '') return null;
  if (Array.isArray(details)) {
    const items = details.map((d) => el('li', { text: typeof d === 'string' ? d : JSON.stringify(d) }));
    return el('ul', { class: 'details' }, ...items);
  }
  if (typeof details === 'string') return el('p', { class: 'details', text: details });
  return el('pre', { class: 'details', text: JSON.stringify(details, null, 2) });
}

function renderConfirmation(c) {
  const panel = $('confirm');
  const id = c ? c.confirmation_id : '';
  if (panel.dataset.id === id) return;
  panel.dataset.id = id;
  show(panel, Boolean(c));
  setText('c-error', '');
  if (!c) return;
  $('c-desc').textContent = c.description || '';
  $('c-action').textContent = c.action ? `action: ${c.action}` : '';
  const risk = $('c-risk');
  risk.textContent = c.risk_level ? `${c.risk_level} risk` : '';
  risk.className = `badge ${c.risk_level || ''}`;
  $('c-details').replaceChildren(...[detailsNode(c.details)].filter(Boolean));
  $('c-reason').value = '';
  // A command can be approved as the person edits it.
  const command = c.details && typeof c.details.command === 'string' ? c.details.command : '';
  $('c-edit').value = command;
  $('c-edit').dataset.original = command;
  show($('c-edit'), Boolean(command));
  $('c-approve').disabled = false;
  $('c-deny').disabled = false;
}

async function answerConfirmation(approved) {
  const cur = state.cur;
  const id = $('confirm').dataset.id;
  if (!cur || !id) return;
  $('c-approve').disabled = true;
  $('c-deny').disabled = true;
  const path = `/sessions/${enc(cur.id)}/confirmation`;
  const reason = $('c-reason').value.trim();
  const answer = { confirmation_id: id, approved };
  if (!approved && reason) answer.reason = reason;
  // An edited command (only shown for commands) is approved instead of the one asked about.
  const edit = $('c-edit').hidden ? '' : $('c-edit').value.trim();
  if (approved && edit && edit !== $('c-edit').dataset.original) answer.edited_command = edit;
  try {
    await apiJson(path, { method: 'POST', json: answer });
    show($('confirm'), false);
    await refreshSession(cur);
  } catch (e) {
    setText('c-error', e.message);
    $('c-approve').disabled = false;
    $('c-deny').disabled = false;
  }
}

/// `question_pending`: a string, or an object with the question in `question` or `text`.
function renderQuestion(q) {
  const panel = $('question');
  const text = !q ? '' : typeof q === 'string' ? q : q.question || q.text || JSON.stringify(q);
  if (panel.dataset.text === text) return;
  panel.dataset.text = text;
  show(panel, Boolean(text));
  $('q-text').textContent = text;
  setText('q-error', '');
}

async function answerSubmitted(event) {
  event.preventDefault();
  const cur = state.cur;
  if (!cur) return;
  try {
    await apiJson(`/sessions/${enc(cur.id)}/answer`, { method: 'POST', json: { text: $('q-answer').value } });
    $('q-answer').value = '';
    await refreshSession(cur);
  } catch (e) {
    setText('q-error', e.message);
  }
}

async function stopSession() {
  const cur = state.cur;
  if (!cur) return;
  $('s-stop').disabled = true;
  try {
    await apiJson(`/sessions/${enc(cur.id)}`, { method: 'DELETE' });
    await refreshSession(cur);
  } catch (e) {
    setText('s-error', e.message);
  } finally {
    $('s-stop').disabled = false;
  }
}

/// Replay a finished session: its steps again without the model, as a new session.
async function replaySubmitted(event) {
  event.preventDefault();
  const cur = state.cur;
  if (!cur) return;
  const params = {};
  for (const pair of $('r-params').value.split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) params[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  try {
    const created = await apiJson(`/sessions/${enc(cur.id)}/replay`, { method: 'POST', json: { params } });
    $('r-params').value = '';
    setText('s-error', '');
    await refreshList();
    go(created.session_id);
  } catch (e) {
    setText('s-error', e.message);
  }
}

// ----- the log ------------------------------------------------------------------------------

async function logLoop(cur) {
  while (state.cur === cur) {
    let page;
    try {
      const path = `/sessions/${enc(cur.id)}/log?after=${cur.logNext}&wait=20`;
      page = await apiJson(path, { signal: cur.ctl.signal });
    } catch (e) {
      if (state.cur !== cur || e.name === 'AbortError' || e.status === 401) return;
      await sleep(2000);
      continue;
    }
    if (state.cur !== cur) return;
    appendLog(page.entries || []);
    const more = page.next > cur.logNext;
    cur.logNext = Math.max(cur.logNext, page.next);
    if (!more) {
      // Nothing new: either the wait ran out or the session ended.
      await refreshSession(cur);
      if (!isActive(cur.record)) return;
    }
  }
}

function appendLog(entries) {
  const ol = $('log');
  const atBottom = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
  for (const e of entries) {
    const ts = (e.ts || '').slice(11, 19);
    ol.append(
      el(
        'li',
        { class: e.type, 'data-seq': e.seq },
        el('span', { class: 'ts', text: ts }),
        el('span', { class: 'kind', text: e.type }),
        ' ',
        e.text,
      ),
    );
  }
  while (ol.childElementCount > LOG_MAX) ol.firstElementChild.remove();
  if (atBottom || entries.length === ol.childElementCount) ol.scrollTop = ol.scrollHeight;
}

// ----- files, the screen, notes, the report -------------------------------------------------

async function refreshFiles(cur) {
  const files = await apiJson(`/sessions/${enc(cur.id)}/files`, { signal: cur.ctl.signal });
  if (state.cur !== cur) return;
  const shots = files.filter((f) => f.type === 'screenshot').map((f) => f.filename).sort();
  await refreshShot(cur, shots[shots.length - 1] || '');
  const key = JSON.stringify(files);
  if (key === cur.files) return;
  cur.files = key;
  const path = (name) => `/sessions/${enc(cur.id)}/files/${enc(name)}`;
  const rows = files
    .filter((f) => f.type !== 'screenshot')
    .map((f) =>
      el(
        'tr',
        {},
        el('td', { text: f.filename }),
        el('td', { text: f.type }),
        el('td', { class: 'num', text: `${fmtInt(f.size_kb)} KB` }),
        el(
          'td',
          {},
          el('button', {
            type: 'button',
            class: 'small',
            'data-file': f.filename,
            text: 'download',
            onclick: () => download(path(f.filename), f.filename),
          }),
        ),
      ),
    );
  $('files').tBodies[0].replaceChildren(...rows);
  show($('files'), rows.length > 0);
  show($('no-files'), rows.length === 0);
  show($('zip'), files.length > 0);
}

/// The latest screenshot, revalidated with its ETag (the server answers 304 while unchanged).
async function refreshShot(cur, name) {
  if (!name) return;
  const shot = cur.shot;
  const headers = {};
  if (name === shot.name && shot.etag) headers['If-None-Match'] = shot.etag;
  const resp = await api(`/sessions/${enc(cur.id)}/files/${enc(name)}`, { headers, signal: cur.ctl.signal });
  if (resp.status === 304 || !resp.ok || state.cur !== cur) return;
  const blob = await resp.blob();
  if (state.cur !== cur) return;
  if (shot.url) URL.revokeObjectURL(shot.url);
  shot.url = URL.createObjectURL(blob);
  shot.name = name;
  shot.etag = resp.headers.get('ETag') || '';
  const img = $('shot');
  img.src = shot.url;
  img.hidden = false;
  show($('shot-none'), false);
  $('shot-name').textContent = name;
}

async function refreshNotes(cur) {
  const notes = await apiJson(`/sessions/${enc(cur.id)}/notes`, { signal: cur.ctl.signal });
  const key = JSON.stringify(notes);
  if (state.cur !== cur || key === cur.notes) return;
  cur.notes = key;
  $('notes').replaceChildren(
    ...notes.map((n) => el('li', {}, n.title ? el('strong', { text: `${n.title}: ` }) : null, n.content)),
  );
  show($('no-notes'), notes.length === 0);
}

async function refreshReport(cur) {
  const { report } = await apiJson(`/sessions/${enc(cur.id)}/report`, { signal: cur.ctl.signal });
  if (state.cur !== cur || report === cur.report) return;
  cur.report = report;
  $('report').replaceChildren(renderMarkdown(report));
  show($('no-report'), !report);
}

/// Without a token a plain link streams to disk; with one, the bytes come through fetch
/// (a link cannot carry the header) and leave as a blob.
async function download(path, filename) {
  let href = path;
  if (state.token) {
    const resp = await api(path);
    if (!resp.ok) {
      setText('s-error', `download failed: HTTP ${resp.status}`);
      return;
    }
    href = URL.createObjectURL(await resp.blob());
    setTimeout(() => URL.revokeObjectURL(href), 60000);
  }
  const a = el('a', { href, download: filename, hidden: '' });
  document.body.append(a);
  a.click();
  a.remove();
}

// ----- start --------------------------------------------------------------------------------

async function tick() {
  if (state.needToken) return;
  state.tick += 1;
  const cur = state.cur;
  try {
    if (state.tick % 2 === 0) await Promise.all([refreshList(), refreshHealth(), refreshSchedules()]);
    if (cur && (!cur.final || isActive(cur.record))) await refreshSession(cur);
  } catch (_) {
    // Shown where it matters; the next tick tries again.
  }
}

async function start() {
  try {
    // `/health` is open and says whether the API wants a token: ask before the first refusal.
    const health = await apiJson('/health');
    if (health.auth && !state.token) {
      askForToken('');
      return;
    }
    await Promise.all([refreshList(), loadLlms(), refreshSchedules()]);
  } catch (e) {
    if (e.status !== 401) $('health').textContent = e.message;
    return;
  }
  refreshHealth();
  if (!state.started) {
    state.started = true;
    setInterval(tick, 1500);
    window.addEventListener('hashchange', fromHash);
  }
  fromHash();
}

function init() {
  $('token-form').addEventListener('submit', tokenSubmitted);
  $('forget-token').addEventListener('click', forgetToken);
  $('create-form').addEventListener('submit', createSubmitted);
  $('f-mode').addEventListener('change', modeChanged);
  $('c-approve').addEventListener('click', () => answerConfirmation(true));
  $('c-deny').addEventListener('click', () => answerConfirmation(false));
  $('q-form').addEventListener('submit', answerSubmitted);
  $('s-stop').addEventListener('click', stopSession);
  $('replay').addEventListener('submit', replaySubmitted);
  $('r-export').addEventListener('click', () => {
    const cur = state.cur;
    if (cur) download(`/sessions/${enc(cur.id)}/export`, `${cur.id}.${cur.record.type === 'shell' ? 'sh' : 'py'}`);
  });
  $('zip').addEventListener('click', () => {
    const cur = state.cur;
    if (cur) download(`/sessions/${enc(cur.id)}/files/zip`, `${cur.id}.zip`);
  });
  show($('forget-token'), Boolean(state.token));
  modeChanged();
  start();
}

document.addEventListener('DOMContentLoaded', init);
