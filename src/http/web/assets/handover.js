// What a person hands over or keeps, loaded after app.js (whose api helpers it uses): the new
// session's input files (named in the request, then each PUT as raw bytes; the session waits
// for them) and its browser profile, and the panel of the browser profiles workers keep, each
// with a delete button. Every name is put into the page as text, never as markup.
'use strict';

// ----- a new session's files and profile ----------------------------------------------------

function handoverCreate(body) {
  const profile = $('f-profile').value.trim();
  if (profile) body.options.browser_profile = profile;
  const files = Array.from($('f-files').files || []);
  if (files.length) body.inputs = files.map((f) => f.name);
}

async function handoverSend(id) {
  const files = Array.from($('f-files').files || []);
  for (const file of files) {
    const path = `/sessions/${enc(id)}/inputs/${enc(file.name)}`;
    try {
      await apiJson(path, { method: 'PUT', body: file });
    } catch (e) {
      // The session would wait for this file: it is stopped instead.
      await api(`/sessions/${enc(id)}`, { method: 'DELETE' }).catch(() => {});
      throw new Error(`${file.name}: ${e.message}`);
    }
  }
  $('f-files').value = '';
}

// ----- the browser profiles workers keep ----------------------------------------------------

async function refreshProfiles() {
  if (!state.started) return;
  let list;
  try {
    list = await apiJson('/profiles');
  } catch (_) {
    return;
  }
  $('profiles').replaceChildren(
    ...list.map((p) => {
      const use = p.in_use ? `in use by ${p.in_use}` : `last used ${p.last_used || 'never'}`;
      return el(
        'li',
        { class: 'profile', 'data-name': p.name },
        el('span', { class: 'sid', text: p.name }),
        ' ',
        el('span', { class: 'muted', text: `on ${p.worker} · ${fmtInt(p.size_kb)} KB` }),
        el('span', { class: 'tgt', text: use }),
        el('button', { type: 'button', class: 'delete-profile', onclick: () => deleteProfile(p.name) }, 'delete'),
      );
    }),
  );
  show($('profiles-panel'), list.length > 0);
}

async function deleteProfile(name) {
  try {
    await apiJson(`/profiles/${enc(name)}`, { method: 'DELETE' });
    setText('profiles-error', '');
  } catch (e) {
    setText('profiles-error', e.message);
  }
  refreshProfiles();
}

document.addEventListener('DOMContentLoaded', () => {
  refreshProfiles();
  setInterval(refreshProfiles, 5000);
});
