// Taking over a session from the page: the Take over button pauses it (after the step in
// flight); while it is paused the screen is live: a click on the picture clicks there (in the
// picture's own pixels, which the worker maps back), the text box types into the focused field,
// the key buttons press keys, and Resume hands back to the agent with a note. Each of these is
// one POST /act (or /pause, /resume); app.js calls renderTakeover on every refresh.
'use strict';

/// The worker tools a person's gestures become, per session type.
const GESTURES = {
  browser: { click: 'browser_click', type: 'browser_type', key: 'browser_press_key', look: 'browser_screenshot' },
  app: { click: 'click', type: 'type_text', key: 'press_key', look: 'screenshot' },
  shell: { type: 'run_command' },
};

function renderTakeover(r) {
  const paused = r.status === 'paused';
  const gestures = GESTURES[r.type] || {};
  show($('s-takeover'), isActive(r) && !paused && !r.pause_requested);
  setText('s-pausing', r.pause_requested ? 'Pausing after the step in flight…' : '');
  show($('takeover'), paused);
  $('shot').classList.toggle('live', paused && Boolean(gestures.click));
  show($('t-keys'), paused && Boolean(gestures.key));
  $('t-text').placeholder = r.type === 'shell' ? 'a command to run' : 'text to type into the focused field';
  setText('t-reason', r.takeover_requested ? `The agent asks: ${r.takeover_requested}` : '');
  const cur = state.cur;
  if (paused && cur && !cur.looked && gestures.look) {
    cur.looked = true;
    act(gestures.look, {}, true).catch(() => {});
  }
  if (!paused && cur) cur.looked = false;
}

/// One tool as the person; the answer is shown (unless it is only a look), and a screenshot it
/// made becomes the screen.
async function act(tool, input, look = false) {
  const cur = state.cur;
  if (!cur) return null;
  setText('t-error', '');
  try {
    const answer = await apiJson(`/sessions/${enc(cur.id)}/act`, {
      method: 'POST',
      json: { tool, input },
    });
    if (!look) setText('t-result', `${tool}: ${(answer.result || '').split('\n')[0].slice(0, 200)}`);
    if (answer.screenshot && state.cur === cur) await refreshShot(cur, answer.screenshot);
    return answer;
  } catch (e) {
    setText('t-error', e.message);
    return null;
  }
}

/// A gesture, then a fresh look at the screen.
async function gesture(kind, input) {
  const r = state.cur && state.cur.record;
  const gestures = (r && GESTURES[r.type]) || {};
  if (!gestures[kind]) return;
  const done = await act(gestures[kind], input);
  if (done && gestures.look) await act(gestures.look, {}, true);
}

function shotClicked(event) {
  const img = $('shot');
  if (!img.classList.contains('live') || !img.clientWidth) return;
  const box = img.getBoundingClientRect();
  const x = Math.round(((event.clientX - box.left) * img.naturalWidth) / box.width);
  const y = Math.round(((event.clientY - box.top) * img.naturalHeight) / box.height);
  gesture('click', { x, y });
}

function typeSubmitted(event) {
  event.preventDefault();
  const r = state.cur && state.cur.record;
  const text = $('t-text').value;
  if (!r || !text) return;
  const input = r.type === 'browser' ? { selector: ':focus', text } : r.type === 'shell' ? { command: text } : { text };
  $('t-text').value = '';
  gesture('type', input);
}

async function takeOver() {
  const cur = state.cur;
  if (!cur) return;
  $('s-takeover').disabled = true;
  try {
    await apiJson(`/sessions/${enc(cur.id)}/pause`, { method: 'POST', json: {} });
    await refreshSession(cur);
  } catch (e) {
    setText('s-error', e.message);
  } finally {
    $('s-takeover').disabled = false;
  }
}

async function resumeSubmitted(event) {
  event.preventDefault();
  const cur = state.cur;
  if (!cur) return;
  const note = $('t-note').value.trim();
  try {
    await apiJson(`/sessions/${enc(cur.id)}/resume`, { method: 'POST', json: note ? { note } : {} });
    $('t-note').value = '';
    await refreshSession(cur);
  } catch (e) {
    setText('t-error', e.message);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('s-takeover').addEventListener('click', takeOver);
  $('shot').addEventListener('click', shotClicked);
  $('t-type').addEventListener('submit', typeSubmitted);
  $('t-resume').addEventListener('submit', resumeSubmitted);
  for (const b of $('t-keys').querySelectorAll('button')) {
    b.addEventListener('click', () => gesture('key', { key: b.dataset.key }));
  }
});
