// The page's left column, loaded after app.js (whose state and api helpers it uses): the
// header's health line, the session list, the schedules with their "run now" buttons, and the
// new-session form with its model list. It only reads the JSON routes and posts new sessions;
// every value goes into the page as text, and a session made or run here is shown through
// app.js's go().
'use strict';

// ----- the session list and the header ------------------------------------------------------

async function refreshHealth() {
  try {
    const h = await apiJson('/health');
    const n = h.workers || 0;
    $('health').textContent = `v${h.version} · ${n} worker${n === 1 ? '' : 's'} connected`;
  } catch (_) {
    $('health').textContent = 'controller unreachable';
  }
}

async function refreshList() {
  const list = await apiJson('/sessions');
  const ul = $('sessions');
  ul.replaceChildren(
    ...list.map((s) => {
      const current = state.cur && state.cur.id === s.session_id;
      const button = el(
        'button',
        { type: 'button', class: current ? 'current' : '', 'data-id': s.session_id, onclick: () => go(s.session_id) },
        el('span', { class: 'sid', text: s.session_id }),
        ' ',
        el('span', { class: `badge ${s.status}`, text: s.status }),
        ' ',
        el('span', { class: 'muted', text: `${s.mode} · ${s.type}` }),
        el('span', { class: 'tgt', text: s.target }),
      );
      return el('li', {}, button);
    }),
  );
  show($('no-sessions'), list.length === 0);
}

// Schedules: each with its last and next run and a "run now" button (hidden when there are none).
async function refreshSchedules() {
  const list = await apiJson('/schedules');
  $('schedules').replaceChildren(
    ...list.map((s) => {
      const l = s.last_run;
      const last = l ? `last: run ${l.run} ${l.status} ${l.at}` : 'not run yet';
      return el(
        'li',
        { class: 'schedule', 'data-name': s.name },
        el('span', { class: 'sid', text: s.name }),
        ' ',
        el('span', { class: 'muted', text: s.every ? `every ${s.every}` : s.cron }),
        el('span', { class: 'tgt', text: `${last} · next: ${s.next_run || 'none'}` }),
        el('button', { type: 'button', class: 'run-now', onclick: () => runSchedule(s.name) }, 'run now'),
      );
    }),
  );
  show($('schedules-panel'), list.length > 0);
}

async function runSchedule(name) {
  try {
    const created = await apiJson(`/schedules/${enc(name)}/run`, { method: 'POST', json: {} });
    await Promise.all([refreshList(), refreshSchedules()]);
    go(created.session_id);
  } catch (e) {
    $('health').textContent = e.message;
  }
}

async function loadLlms() {
  const llms = await apiJson('/llms');
  state.llms = llms;
  const select = $('f-llm');
  select.replaceChildren(
    ...llms.map((l) => el('option', { value: l.name, text: `${l.name} (${l.provider}, ${l.model})` })),
  );
  show($('f-llm-label'), llms.length > 1);
}

// ----- creating a session -------------------------------------------------------------------

function modeChanged() {
  const task = $('f-mode').value === 'task';
  $('f-what-label').textContent = task ? 'Instruction' : 'Goal (optional)';
  $('f-what').placeholder = task ? 'what to do' : 'what to find out';
  $('f-what').required = task;
}

async function createSubmitted(event) {
  event.preventDefault();
  const mode = $('f-mode').value;
  const body = { mode, target: $('f-target').value.trim() };
  const type = $('f-type').value;
  if (type) body.type = type;
  const what = $('f-what').value.trim();
  if (what) body[mode === 'task' ? 'instruction' : 'goal'] = what;
  const llm = $('f-llm').value;
  if (state.llms && state.llms.length > 1 && llm) body.llm = llm;
  const options = { auto_confirm: $('f-auto').checked };
  if ($('f-dry').checked) options.dry_run = true;
  const domains = $('f-domains').value.split(/[\s,]+/).filter(Boolean);
  if (domains.length) options.allowed_domains = domains;
  if ($('f-approval').value) options.approval = $('f-approval').value;
  const turns = parseInt($('f-turns').value, 10);
  if (turns > 0) options.max_turns = turns;
  body.options = options;
  handoverCreate(body);
  $('f-submit').disabled = true;
  try {
    const created = await apiJson('/sessions', { method: 'POST', json: body });
    await handoverSend(created.session_id);
    setText('create-error', '');
    $('f-what').value = '';
    await refreshList();
    go(created.session_id);
  } catch (e) {
    setText('create-error', e.message);
  } finally {
    $('f-submit').disabled = false;
  }
}
