// The session's recording on its view: an animated GIF (a frame per acting step, its number
// and action below, secret fields painted over), fetched with the token as a blob (the page's
// policy allows blob: images) on Play, and again on each Play (a running session records on).
// app.js calls renderRecording on every refresh.
'use strict';

function renderRecording(r) {
  const cur = state.cur;
  const recorded = (r.type === 'browser' || r.type === 'app') && !(r.options && r.options.recording === false);
  show($('recording'), recorded && Boolean(cur));
}

async function playRecording() {
  const cur = state.cur;
  if (!cur) return;
  setText('rec-error', '');
  const resp = await api(`/sessions/${enc(cur.id)}/recording`, { signal: cur.ctl.signal });
  if (state.cur !== cur) return;
  if (!resp.ok) {
    setText('rec-error', resp.status === 404 ? 'No recorded step yet.' : `The recording did not load (${resp.status}).`);
    return;
  }
  const blob = await resp.blob();
  if (state.cur !== cur) return;
  if (cur.recordingUrl) URL.revokeObjectURL(cur.recordingUrl);
  cur.recordingUrl = URL.createObjectURL(blob);
  const img = $('rec');
  img.src = cur.recordingUrl;
  img.hidden = false;
}

document.addEventListener('DOMContentLoaded', () => {
  $('rec-play').addEventListener('click', () => playRecording().catch((e) => setText('rec-error', e.message)));
});
