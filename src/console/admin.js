// The console's admin script: the configuration editor, history and rollback, and the upstream
// tool definitions held for approval (each with its diff, Approve and Reject), for admins only.
// It talks to the admin API (/admin/api, docs/admin.md) on this origin with the console's
// session cookie, which fetch sends on same-origin requests; the API checks that they come from
// this page. Each change names the version it was read at (If-Match), so an edit never
// overwrites a change it did not see. Served as written, like try.js: no dependency, no build
// step, and every string from the server reaches the page as text (textContent), never markup.
'use strict';

(() => {
  const root = document.getElementById('admin-panel');
  if (!root) return;
  const API = root.dataset.api;
  const KINDS = { tools: 'tool', resources: 'resource', resourceTemplates: 'resource template', prompts: 'prompt' };
  const TITLES = { tools: 'Tools', resources: 'Resources', resourceTemplates: 'Resource templates', prompts: 'Prompts' };
  // What Add starts from: the least each kind needs (docs/configuration.md), to edit in place.
  const TEMPLATES = {
    tools: {
      name: 'new_tool',
      description: 'What the tool does, for the model.',
      inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'What to send' } }, required: ['message'] },
      http: { method: 'POST', url: 'https://example.com/webhook' },
    },
    resources: { uri: 'docs://new', name: 'new_resource', mimeType: 'text/plain', text: 'Hello' },
    resourceTemplates: { uriTemplate: 'items://{id}', name: 'item', mimeType: 'application/json', http: { method: 'GET', url: 'https://example.com/items/{id}' } },
    prompts: { name: 'new_prompt', description: 'What the prompt is for.', arguments: [{ name: 'topic', required: true }], messages: [{ role: 'user', content: { type: 'text', text: 'Tell me about {topic}.' } }] },
  };
  // A saved change reloads the page (it is rendered from the live configuration); this carries
  // the "saved" line across the reload.
  const FLASH = 'mcp-edge-admin-saved';

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === 'text') node.textContent = value;
      else if (key === 'class') node.className = value;
      else if (key in node && typeof value !== 'string') node[key] = value;
      else node.setAttribute(key, value);
    }
    node.append(...children.filter((c) => c != null));
    return node;
  }

  const json = (value) => JSON.stringify(value, null, 2);
  const seg = encodeURIComponent;

  /** A refusal of the admin API: its status, words a person acts on, and where the fault is. */
  class Refusal extends Error {
    constructor(status, error) {
      const said = String(error?.message ?? '');
      const advice = {
        400: '',
        401: 'Your sign-in has ended: sign in again.',
        403: 'Refused.',
        404: 'Not found: it may have been deleted meanwhile; reload.',
        409: 'Conflict.',
        412: 'The configuration changed since you opened it: reload, then make your change again.',
        413: 'The change is too large.',
      }[status];
      // The API's own words follow as a sentence of their own.
      const detail = advice === '' ? said : said.charAt(0).toUpperCase() + said.slice(1);
      super(`${advice ?? `HTTP ${status}.`} ${detail}`.trim());
      this.status = status;
      this.path = error?.path;
      this.configPath = error?.configPath;
    }
  }

  /** One admin API request: resolves with `{ json, etag }`, or throws a Refusal. */
  async function call(method, path, { body, etag } = {}) {
    const headers = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (etag) headers['if-match'] = etag;
    // The page's own policy is no-referrer, under which a browser may send `Origin: null`, which
    // the API refuses; same-origin names this origin to this origin only.
    const res = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), referrerPolicy: 'same-origin' });
    const text = await res.text();
    let data;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      data = { error: { message: text.trim().slice(0, 200) } };
    }
    if (!res.ok) throw new Refusal(res.status, data?.error);
    return { json: data, etag: res.headers.get('etag') };
  }

  // ---- the panel ----

  const status = el('p', { id: 'admin-status', class: 'status muted', role: 'status' });
  const servers = el('div', { class: 'admin-servers' });
  const history = el('details', { class: 'history' }, el('summary', { text: 'History and rollback' }));
  const historyBody = el('div');
  history.append(historyBody);
  const pins = el('div', { class: 'pins' });
  root.replaceChildren(el('p', { class: 'muted', text: 'Changes are checked like the file, stored as a new version, and served at once; connected clients are told.' }), status, pins, servers, history);
  root.hidden = false;

  const say = (text, error = false) => {
    status.textContent = text;
    status.className = error ? 'status notice' : 'status muted';
  };

  /** A change was stored: say so, show its version, and reload the page, which shows it. */
  function saved(answer) {
    const line = `version ${answer.version} saved: ${answer.summary}`;
    say(line);
    const badge = document.getElementById('config-version');
    if (badge) badge.textContent = `version ${answer.version}`;
    try {
      sessionStorage.setItem(FLASH, line);
    } catch {}
    location.reload();
  }

  // ---- the editor: one, opened under the server it edits ----

  const editor = {
    box: el('div', { class: 'editor' }),
    title: el('h4'),
    text: el('textarea', { rows: 16, spellcheck: false, 'aria-label': 'JSON' }),
    errors: el('div', { class: 'result error', hidden: true }),
    save: el('button', { type: 'button', class: 'save', text: 'Save' }),
    close: el('button', { type: 'button', class: 'cancel', text: 'Cancel' }),
    send: null, // (value) => the change's promise
  };
  editor.box.append(editor.title, editor.text, editor.errors, el('div', { class: 'row' }, editor.save, editor.close));

  function openEditor(where, title, value, send) {
    editor.title.textContent = title;
    editor.text.value = json(value);
    editor.send = send;
    showErrors(null);
    say('');
    where.append(editor.box);
    editor.text.focus();
    editor.box.scrollIntoView({ block: 'nearest' });
  }

  editor.close.addEventListener('click', () => {
    editor.send = null;
    editor.box.remove();
  });

  editor.save.addEventListener('click', async () => {
    if (!editor.send) return;
    let value;
    try {
      value = JSON.parse(editor.text.value);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SyntaxError('an entry is a JSON object: { … }');
    } catch (e) {
      // Nothing is sent: say what the parser says, and put the cursor where it stopped.
      showErrors([`The JSON is not valid: ${e.message}`]);
      const at = /position (\d+)/.exec(e.message);
      if (at) mark([Number(at[1]), Number(at[1]) + 1]);
      return;
    }
    editor.save.disabled = true;
    try {
      saved((await editor.send(value)).json);
    } catch (e) {
      showErrors([e], e.path);
    } finally {
      editor.save.disabled = false;
    }
  });

  /** Shows errors under the editor (each with its path in the entry, when the API gave one). */
  function showErrors(list, path) {
    editor.text.classList.toggle('invalid', !!list);
    editor.errors.hidden = !list;
    if (!list) return editor.errors.replaceChildren();
    const items = list.map((e) => {
      const li = el('li');
      if (e.path !== undefined) li.append(el('code', { class: 'path', text: e.path || '(the whole entry)' }), ' ');
      li.append(String(e.message ?? e));
      if (e.configPath) li.append(' ', el('span', { class: 'muted', text: `(${e.configPath} in the configuration)` }));
      return li;
    });
    const reload = list.some((e) => e.status === 412) ? el('button', { type: 'button', text: 'Reload' }) : null;
    reload?.addEventListener('click', () => location.reload());
    editor.errors.replaceChildren(...[el('h5', { text: 'Not saved' }), el('ul', { class: 'errors' }, ...items), reload].filter(Boolean));
    if (path) mark(locate(editor.text.value, path));
  }

  /**
   * Where `path` (`http.url`, `arguments[0].name`) is in the editor's text: each key found in
   * turn after the one before. Indices are skipped, so this finds the first match, which is near
   * enough to put the cursor by the fault; the error line names the exact path.
   */
  function locate(text, path) {
    let found = null;
    let from = 0;
    for (const part of path.match(/[^.[\]]+/g) ?? []) {
      if (/^\d+$/.test(part)) continue;
      const key = `${JSON.stringify(part)}:`;
      const at = text.indexOf(key, from);
      if (at < 0) break;
      found = [at, at + key.length - 1];
      from = at + key.length;
    }
    return found;
  }

  /** Selects `[start, end]` in the editor and scrolls it into view. */
  function mark(range) {
    if (!range) return;
    const t = editor.text;
    t.focus();
    t.setSelectionRange(range[0], range[1]);
    const line = t.value.slice(0, range[0]).split('\n').length - 1;
    t.scrollTop = Math.max(0, line * (parseFloat(getComputedStyle(t).lineHeight) || 19) - t.clientHeight / 3);
  }

  // ---- each server's entries ----

  function serverBox(name, info, config, etag) {
    const base = `/servers/${seg(name)}`;
    const box = el('div', { class: 'admin-server', 'data-server': name });
    box.append(el('div', { class: 'head' }, el('h3', { text: name }), el('span', { class: 'badge', text: info.live ? 'live' : 'from the file' })));
    for (const [kind, word] of Object.entries(KINDS)) {
      const list = Array.isArray(config[kind]) ? config[kind] : [];
      if (!list.length) continue;
      box.append(el('h4', { text: `${TITLES[kind]} (${list.length})` }));
      box.append(el('ul', { class: 'admin-list' }, ...list.map((entry) => entryRow(box, base, kind, word, entry, etag))));
    }
    const kind = el('select', { class: 'add-kind', 'aria-label': 'Kind' }, ...Object.entries(KINDS).map(([k, w]) => el('option', { value: k, text: w })));
    const add = el('button', { type: 'button', class: 'add', text: 'Add' });
    add.addEventListener('click', () => {
      const k = kind.value;
      openEditor(box, `New ${KINDS[k]} on ${name}`, TEMPLATES[k], (value) => call('POST', `${base}/${k}`, { body: value, etag }));
    });
    box.append(el('div', { class: 'row' }, el('span', { text: 'Add a' }), kind, add));
    return box;
  }

  function entryRow(box, base, kind, word, entry, etag) {
    const name = String(entry.name ?? '');
    const path = `${base}/${kind}/${seg(name)}`;
    const edit = el('button', { type: 'button', class: 'edit', text: 'Edit' });
    const del = el('button', { type: 'button', class: 'delete cancel', text: 'Delete' });
    const about = entry.title ?? entry.description ?? entry.uri ?? entry.uriTemplate ?? '';
    edit.addEventListener('click', async () => {
      // Edit what is served now, and write against the version it was read at.
      edit.disabled = true;
      try {
        const read = await call('GET', path);
        openEditor(box, `Edit ${word} ${name}`, read.json, (value) => call('PUT', path, { body: value, etag: read.etag }));
      } catch (e) {
        say(e.message, true);
      } finally {
        edit.disabled = false;
      }
    });
    del.addEventListener('click', async () => {
      if (!confirm(`Delete the ${word} "${name}"? Connected clients are told; History can bring it back.`)) return;
      del.disabled = true;
      try {
        saved((await call('DELETE', path, { etag })).json);
      } catch (e) {
        say(e.message, true);
        del.disabled = false;
      }
    });
    return el('li', { 'data-kind': kind, 'data-name': name }, el('code', { text: name }), el('span', { class: 'about muted', text: String(about) }), edit, del);
  }

  async function load() {
    try {
      const list = await call('GET', '/servers');
      const boxes = await Promise.all(
        list.json.servers.map(async (info) => {
          const read = await call('GET', `/servers/${seg(info.name)}`);
          return serverBox(info.name, info, read.json, read.etag);
        }),
      );
      servers.replaceChildren(...boxes);
      if (String(list.json.version) !== root.dataset.version) say(`The configuration is at version ${list.json.version}, newer than this page: reload to see it.`);
    } catch (e) {
      say(e.message, true);
    }
  }

  // ---- history and rollback ----

  const when = (ms) => (ms ? `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC` : 'deployed');

  async function loadHistory() {
    historyBody.replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    try {
      const read = await call('GET', '/versions');
      const [current] = read.json.versions;
      const rows = read.json.versions.map((v) => {
        const cell = el('td');
        if (v !== current) {
          const back = el('button', { type: 'button', class: 'rollback cancel', text: 'Roll back' });
          back.addEventListener('click', async () => {
            if (!confirm(`Roll back to version ${v.version}? A new version will serve what it served.`)) return;
            back.disabled = true;
            try {
              saved((await call('POST', `/versions/${v.version}/rollback`, { etag: read.etag })).json);
            } catch (e) {
              say(e.message, true);
              back.disabled = false;
            }
          });
          cell.append(back);
        } else cell.append(el('span', { class: 'badge', text: 'served now' }));
        const by = v.version === 0 ? 'the bundled file' : v.by;
        return el('tr', { 'data-version': String(v.version) }, el('td', { text: String(v.version) }), el('td', { text: when(v.atMs) }), el('td', { text: by }), el('td', { text: v.summary }), cell);
      });
      const head = el('tr', {}, ...['Version', 'When', 'By', 'What changed', ''].map((h) => el('th', { text: h })));
      historyBody.replaceChildren(el('table', { class: 'versions' }, el('thead', {}, head), el('tbody', {}, ...rows)));
    } catch (e) {
      historyBody.replaceChildren(el('p', { class: 'notice', text: e.message }));
    }
  }
  history.addEventListener('toggle', () => history.open && loadHistory());

  // ---- upstream tool definitions held for approval ----

  const shown = (v) => (v === undefined ? '(none)' : typeof v === 'string' ? v : json(v));

  async function loadPins() {
    try {
      const { held } = (await call('GET', '/pins')).json;
      if (!held.length) return pins.replaceChildren();
      pins.replaceChildren(
        el('h3', { text: `Tool definitions held for approval (${held.length})` }),
        ...held.map((h) => {
          const rows = h.fields.map((f) => el('tr', { 'data-field': f }, el('th', { text: f }), el('td', {}, el('pre', { class: 'old', text: shown(h.old?.[f]) })), el('td', {}, el('pre', { class: 'new', text: shown(h.new[f]) }))));
          const decide = (verb, label, cls) => {
            const b = el('button', { type: 'button', class: cls, text: label });
            b.addEventListener('click', async () => {
              b.disabled = true;
              try {
                await call('POST', `/pins/${seg(h.server)}/${seg(h.upstream)}/${seg(h.tool)}/${verb}`, { body: { fingerprint: h.fingerprint } });
                say(`${h.name}: ${verb === 'approve' ? 'approved; clients are told' : 'rejected; the pinned definition stays'}`);
                loadPins();
              } catch (e) {
                say(e.message, true);
                b.disabled = false;
              }
            });
            return b;
          };
          const what = h.old ? `changed: ${h.fields.join(', ')}` : 'a new tool';
          const serving = h.mode === 'hold' && h.old ? 'the pinned definition is served meanwhile' : 'not served until approved';
          return el('div', { class: 'admin-server held', 'data-name': h.name },
            el('h4', {}, el('code', { text: h.name }), ` on ${h.server}, from ${h.upstream}: ${what}`),
            el('p', { class: 'muted', text: `Seen ${when(h.atMs)}; ${serving}. Fingerprint ${h.fingerprint.slice(0, 16)}…` }),
            el('table', { class: 'diff' }, el('thead', {}, el('tr', {}, ...['Field', 'Pinned', 'New'].map((t) => el('th', { text: t })))), el('tbody', {}, ...rows)),
            el('div', { class: 'row' }, decide('approve', 'Approve', 'approve'), decide('reject', 'Reject', 'reject cancel')));
        }),
      );
    } catch (e) {
      say(e.message, true);
    }
  }

  try {
    const flash = sessionStorage.getItem(FLASH);
    sessionStorage.removeItem(FLASH);
    if (flash) say(flash);
  } catch {}
  load();
  loadPins();
})();
