// mcp-edge's status page: "Try a tool". A small MCP client over Streamable HTTP that runs in the
// browser against each server's own endpoint on this origin: initialize, tools/list, then a form
// per tool from its inputSchema (or raw JSON), tools/call with a progress token, and the progress,
// log lines and result as they stream. No dependency and no build step: the Worker serves this
// file as written (src/console/script.rs), under a CSP that allows this script and nothing else.
// Every string a server sends reaches the page as text (textContent), never as markup.
'use strict';

/**
 * An access token for the signed-in person on the server at `path` (a server with mcp-edge's own
 * OAuth sign-in, `data-oauth`), or null when no one is signed in to the console (the panel then
 * asks for a token). The console's session cookie is HttpOnly: the Worker mints the token
 * (`POST /console/token`), short-lived and for that one server, and the page never sees the
 * cookie itself.
 */
async function consoleToken(path) {
  try {
    const reply = await fetch('/console/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ route: path }) });
    if (!reply.ok) return null;
    return (await reply.json()).access_token ?? null;
  } catch {
    return null;
  }
}

(() => {
  const PROTOCOL = '2025-11-25';
  const CLIENT = { name: 'mcp-edge console', version: '1' };

  /** A JSON-RPC error answer: its code, message and data, as the server sent them. */
  class RpcError extends Error {
    constructor(error) {
      super(String(error?.message ?? 'error'));
      this.code = error?.code;
      this.data = error?.data;
    }
  }

  /** An HTTP refusal before any JSON-RPC answer: 401, 403, 404, 413, 429... */
  class HttpError extends Error {}

  /** What a refused HTTP request says, in words a person acts on. */
  async function refusal(res) {
    const text = await res.text().catch(() => '');
    let said = text.trim();
    try {
      said = JSON.parse(text).error?.message ?? said;
    } catch {}
    const advice = {
      401: 'The server needs a valid credential: enter a token above, then connect again.',
      403: 'The server refused this request or this credential.',
      404: 'There is no session or server here any more: connect again.',
      429: 'Too many requests: wait a moment.',
    }[res.status];
    return new HttpError(`HTTP ${res.status}${said ? `: ${said}` : ''}${advice ? `. ${advice}` : ''}`);
  }

  /** Reads an SSE body event by event ({id, event, retry, data}), as the bytes arrive. */
  async function* sseEvents(body) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let event = {};
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, end).replace(/\r$/, '');
          buffer = buffer.slice(end + 1);
          if (line === '') {
            if (Object.keys(event).length) yield event;
            event = {};
          } else if (!line.startsWith(':')) {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'data') event.data = event.data === undefined ? value : `${event.data}\n${value}`;
            else if (field === 'id' || field === 'retry' || field === 'event') event[field] = value;
          }
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  const sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
    });

  /** One MCP session with one server: the session id and protocol version go on every request. */
  class Client {
    constructor(url, credential) {
      this.url = url;
      this.credential = credential; // [header name, value] or null
      this.session = null;
      this.version = null;
      this.ids = 0;
    }

    headers(extra = {}) {
      const h = { accept: 'application/json, text/event-stream', ...extra };
      if (this.session) h['mcp-session-id'] = this.session;
      if (this.version) h['mcp-protocol-version'] = this.version;
      if (this.credential) h[this.credential[0]] = this.credential[1];
      return h;
    }

    post(message, signal, trace) {
      const extra = trace ? { 'content-type': 'application/json', traceparent: trace } : { 'content-type': 'application/json' };
      return fetch(this.url, { method: 'POST', headers: this.headers(extra), body: JSON.stringify(message), signal });
    }

    /** initialize, notifications/initialized, and all log levels when the server logs. */
    async connect() {
      const init = await this.request('initialize', { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: CLIENT });
      this.version = init.protocolVersion;
      this.capabilities = init.capabilities ?? {};
      this.info = init.serverInfo ?? {};
      await this.notify('notifications/initialized');
      if (this.capabilities.logging) await this.request('logging/setLevel', { level: 'debug' });
      return init;
    }

    async notify(method, params) {
      const res = await this.post({ jsonrpc: '2.0', method, ...(params && { params }) });
      if (!res.ok) throw await refusal(res);
      await res.body?.cancel();
    }

    /**
     * Sends one request and resolves with its result. `opts.on` sees each notification that
     * arrives on the request's stream before the answer; `opts.id` is set to the request's id
     * before the first await, so a caller may cancel it.
     */
    async request(method, params, opts = {}, again = true) {
      const id = (opts.id = ++this.ids);
      // A traced server continues the trace this page starts, sampled: the id shown under the
      // result is the call's trace.
      const trace = this.traced && method === 'tools/call' ? traceparent() : null;
      opts.trace = trace?.split('-')[1] ?? null;
      const res = await this.post({ jsonrpc: '2.0', id, method, ...(params && { params }) }, opts.signal, trace);
      if (method === 'initialize') this.session = res.headers.get('mcp-session-id');
      // A session the server has ended (idle, restarted): start a new one, once.
      if (res.status === 404 && this.session && method !== 'initialize' && again) {
        await res.body?.cancel();
        this.session = this.version = null;
        await this.connect();
        return this.request(method, params, opts, false);
      }
      if (!res.ok) throw await refusal(res);
      const type = res.headers.get('content-type') ?? '';
      const reply = type.startsWith('text/event-stream') ? await this.stream(res, id, opts) : await res.json();
      if (reply.error) throw new RpcError(reply.error);
      return reply.result;
    }

    /**
     * Reads a request's SSE stream until its answer. A stream that ends first (SSE polling) is
     * resumed with GET and `Last-Event-ID` after the server's `retry`.
     */
    async stream(res, id, { on = () => {}, signal }) {
      let last = null;
      let retry = 1000;
      for (let resumed = 0; resumed < 50; resumed++) {
        for await (const event of sseEvents(res.body)) {
          if (event.id) last = event.id;
          if (Number(event.retry) > 0) retry = Number(event.retry);
          if (!event.data) continue; // the priming event: an id to resume from, no message
          const message = JSON.parse(event.data);
          if (message.id === id && ('result' in message || 'error' in message)) return message;
          if (message.method && 'id' in message) await this.answer(message);
          else if (message.method) on(message);
        }
        if (!last) break;
        await sleep(retry, signal);
        res = await fetch(this.url, { headers: this.headers({ 'last-event-id': last }), signal });
        if (!res.ok) throw await refusal(res);
      }
      throw new Error('The stream ended before the answer arrived.');
    }

    /** A request from the server: this client declares no capabilities, so it only answers ping. */
    async answer(request) {
      const reply = request.method === 'ping' ? { result: {} } : { error: { code: -32601, message: `The console does not handle ${request.method}` } };
      const res = await this.post({ jsonrpc: '2.0', id: request.id, ...reply });
      await res.body?.cancel();
    }

    /** Every tool, page after page. */
    async tools() {
      const all = [];
      let cursor;
      for (let page = 0; page < 100; page++) {
        const result = await this.request('tools/list', cursor ? { cursor } : {});
        all.push(...(result.tools ?? []));
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return all;
    }

    /** Ends the session, when there is one; a best effort that outlives the page. */
    close() {
      if (this.session) fetch(this.url, { method: 'DELETE', headers: this.headers(), keepalive: true }).catch(() => {});
      this.session = null;
    }
  }

  // ---- DOM helpers: elements and text only ----

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

  // ---- the form generated from an input schema ----

  /** A local `$ref` (`#/$defs/x`) followed; anything else as it is. */
  function resolve(root, schema) {
    for (let i = 0; i < 8 && typeof schema?.$ref === 'string' && schema.$ref.startsWith('#/'); i++) {
      let next = root;
      for (const part of schema.$ref.slice(2).split('/')) next = next?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      if (!next) break;
      schema = next;
    }
    return schema ?? {};
  }

  const SIMPLE = ['string', 'number', 'integer', 'boolean'];

  /** What control an argument gets: enum, boolean, number, integer, string, list or json. */
  function kindOf(root, schema) {
    if (Array.isArray(schema.enum) && schema.enum.length) return 'enum';
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
    if (SIMPLE.includes(type)) return type;
    if (type === 'array') {
      const items = resolve(root, schema.items);
      const itemType = Array.isArray(items.type) ? items.type.find((t) => t !== 'null') : items.type;
      if (SIMPLE.includes(itemType) || Array.isArray(items.enum)) return 'list';
    }
    return 'json';
  }

  const typeWord = { enum: 'one of', boolean: 'boolean', number: 'number', integer: 'integer', string: 'string', list: 'JSON array', json: 'JSON' };

  /**
   * A form for `schema`: a field per property, required ones marked, descriptions and defaults
   * as hints. `read()` gives the arguments (empty fields left out, so the server's defaults and
   * its own validation apply); `fill(args)` sets the fields from an object.
   */
  function argumentForm(schema, prefix) {
    const root = schema ?? {};
    const top = resolve(root, root);
    const required = new Set(Array.isArray(top.required) ? top.required : []);
    const fields = [];
    const form = el('div', { class: 'fields' });
    for (const [name, raw] of Object.entries(top.properties ?? {})) {
      const prop = resolve(root, raw);
      const kind = kindOf(root, prop);
      const id = `${prefix}-${fields.length}`;
      let control;
      if (kind === 'enum' || kind === 'boolean') {
        const values = kind === 'enum' ? prop.enum : [true, false];
        control = el('select', { id }, el('option', { value: '', text: '(not set)' }), ...values.map((v, i) => el('option', { value: String(i), text: typeof v === 'string' ? v : JSON.stringify(v) })));
        control.values = values;
      } else if (kind === 'json') {
        control = el('textarea', { id, rows: 3, spellcheck: false });
      } else if (kind === 'string' && typeof prop.contentMediaType === 'string' && prop.contentMediaType.startsWith('text/')) {
        // Text of many lines by nature (code mode's program: text/javascript).
        control = el('textarea', { id, rows: 8, spellcheck: false });
      } else {
        control = el('input', { id, type: kind === 'number' || kind === 'integer' ? 'number' : 'text', spellcheck: false });
        if (kind === 'integer') control.step = '1';
        if (kind === 'number') control.step = 'any';
        if (kind === 'list') control.placeholder = '["…"]';
      }
      if (prop.default !== undefined && !control.values) control.placeholder = typeof prop.default === 'string' ? prop.default : JSON.stringify(prop.default);
      const hints = [prop.description ?? prop.title, prop.default !== undefined && `default: ${JSON.stringify(prop.default)}`].filter(Boolean);
      const label = el('label', { for: id }, el('code', { text: name }), required.has(name) ? el('span', { class: 'req', text: 'required' }) : null, el('span', { class: 'kind', text: typeWord[kind] }));
      form.append(el('div', { class: 'field' }, label, control, hints.length ? el('small', { text: hints.join(' · ') }) : null));
      fields.push({ name, kind, control });
    }
    if (!fields.length) form.append(el('p', { class: 'muted', text: 'No arguments.' }));

    function read() {
      const args = {};
      for (const { name, kind, control } of fields) {
        const text = control.value.trim();
        if (text === '') continue;
        if (control.values) args[name] = control.values[Number(text)];
        else if (kind === 'number' || kind === 'integer') args[name] = Number(text);
        else if (kind === 'string') args[name] = control.value;
        else {
          try {
            args[name] = JSON.parse(text);
          } catch (e) {
            throw new Error(`${name} is not valid JSON: ${e.message}`);
          }
        }
      }
      return args;
    }

    function fill(args) {
      for (const { name, kind, control } of fields) {
        const value = args?.[name];
        if (value === undefined) control.value = '';
        else if (control.values) control.value = String(control.values.findIndex((v) => JSON.stringify(v) === JSON.stringify(value)));
        else if (kind === 'string' && typeof value === 'string') control.value = value;
        else if (kind === 'number' || kind === 'integer') control.value = String(value);
        else control.value = JSON.stringify(value);
      }
    }

    return { form, read, fill };
  }

  // ---- results ----

  /** A fresh W3C `traceparent`, sampled. */
  function traceparent() {
    const hex = (n) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, '0')).join('');
    return `00-${hex(16)}-${hex(8)}-01`;
  }

  /**
   * The call's trace id, linked to the operator's tracing tool when `telemetry.traceLink` names
   * one (`data-trace-link`, with `{traceId}`); nothing when the server does not trace.
   */
  function traceView(traceId, template) {
    if (!traceId || !/^[0-9a-f]{32}$/.test(traceId)) return null;
    const id = el('code', { text: traceId });
    const line = el('p', { class: 'trace muted', text: 'Trace ' });
    if (template) {
      const link = el('a', { href: template.replaceAll('{traceId}', traceId), target: '_blank', rel: 'noopener' });
      link.append(id);
      line.append(link);
    } else {
      line.append(id);
    }
    return line;
  }

  /** A tool result: its content (text, images, resources), structuredContent, and isError. */
  function resultView(result) {
    const box = el('div', { class: result.isError ? 'result error' : 'result' });
    box.append(el('h5', { text: result.isError ? 'The tool reported an error (isError)' : 'Result' }));
    for (const item of Array.isArray(result.content) ? result.content : []) {
      if (item.type === 'text') box.append(el('pre', { text: String(item.text ?? '') }));
      else if (item.type === 'image' && /^image\/[\w.+-]+$/.test(item.mimeType) && /^[A-Za-z0-9+/]*=*$/.test(item.data)) {
        box.append(el('img', { src: `data:${item.mimeType};base64,${item.data}`, alt: `image (${item.mimeType})` }));
      } else if (item.type === 'image' || item.type === 'audio') {
        box.append(el('p', { class: 'muted', text: `${item.type} (${item.mimeType}), ${Math.floor((String(item.data ?? '').length * 3) / 4)} bytes` }));
      } else if (item.type === 'resource_link') {
        box.append(el('p', { text: `Resource link: ${item.title ?? item.name ?? ''} ${item.uri ?? ''}${item.mimeType ? ` (${item.mimeType})` : ''}` }));
      } else if (item.type === 'resource') {
        const r = item.resource ?? {};
        box.append(el('p', { text: `Embedded resource: ${r.uri ?? ''}${r.mimeType ? ` (${r.mimeType})` : ''}` }));
        box.append(el('pre', { text: r.text !== undefined ? String(r.text) : `(binary, ${Math.floor((String(r.blob ?? '').length * 3) / 4)} bytes)` }));
      } else box.append(el('pre', { text: json(item) }));
    }
    if (result.structuredContent !== undefined) box.append(el('h5', { text: 'structuredContent' }), el('pre', { class: 'structured', text: json(result.structuredContent) }));
    return box;
  }

  /** A failure: a JSON-RPC error with its code and data, an HTTP refusal, or a local mistake. */
  function errorView(error) {
    const box = el('div', { class: 'result error' });
    if (error instanceof RpcError) {
      box.append(el('h5', { text: `JSON-RPC error ${error.code}` }), el('p', { text: error.message }));
      if (error.data !== undefined) box.append(el('pre', { text: json(error.data) }));
    } else if (error?.name === 'AbortError') {
      box.className = 'result note';
      box.append(el('p', { text: 'Cancelled.' }));
    } else {
      box.append(el('h5', { text: error instanceof HttpError ? 'Refused' : 'Error' }), el('p', { text: String(error?.message ?? error) }));
    }
    return box;
  }

  // ---- a panel per server ----

  let panels = 0;

  function panel(root) {
    const n = panels++;
    const credential = root.dataset.credential ?? '';
    const needsUrl = root.dataset.url.includes('{');
    let client = null;
    let tools = [];
    let current = null; // { tool, read, fill }
    let call = null; // { controller, id } while a call runs

    const url = el('input', { id: `try-${n}-url`, type: 'text', value: root.dataset.url, spellcheck: false });
    const token = el('input', { id: `try-${n}-token`, type: 'password', autocomplete: 'off', placeholder: 'kept in this tab only' });
    const connect = el('button', { type: 'button', class: 'connect', text: 'Connect' });
    const status = el('p', { class: 'status muted', role: 'status' });
    const select = el('select', { id: `try-${n}-tool`, class: 'tool' });
    const about = el('p', { class: 'about muted' });
    const formBox = el('div', { class: 'form' });
    const rawToggle = el('input', { id: `try-${n}-raw`, type: 'checkbox', class: 'raw' });
    const rawText = el('textarea', { class: 'raw-json', rows: 6, spellcheck: false, hidden: true });
    const run = el('button', { type: 'button', class: 'call', text: 'Call' });
    const cancel = el('button', { type: 'button', class: 'cancel', text: 'Cancel', disabled: true });
    const progress = el('progress', { hidden: true });
    const progressText = el('p', { class: 'progress muted', hidden: true });
    const log = el('ol', { class: 'log', hidden: true });
    const output = el('div', { class: 'output' });
    const tool = el(
      'div',
      { class: 'tool-box', hidden: true },
      el('div', { class: 'row' }, el('label', { for: select.id, text: 'Tool' }), select),
      about,
      formBox,
      rawText,
      el('div', { class: 'row' }, el('label', { class: 'inline' }, rawToggle, ' Raw JSON arguments'), run, cancel),
    );

    const rows = [el('h3', { text: 'Try a tool' }), el('p', { class: 'muted', text: 'Calls a tool from this page, as an MCP client does, over Streamable HTTP on this origin.' })];
    if (needsUrl) rows.push(el('div', { class: 'row' }, el('label', { for: url.id, text: 'URL' }), url), el('small', { text: 'Put a value in place of each {parameter}.' }));
    if (credential.startsWith('cookie:')) {
      rows.push(el('p', { class: 'muted', text: `This server reads its credential from the cookie ${credential.slice(7)}; the browser sends it if it has one.` }));
    } else if (credential) {
      const name = credential === 'bearer' ? 'Bearer token' : `${credential.slice(7)} header`;
      rows.push(el('div', { class: 'row' }, el('label', { for: token.id, text: name }), token));
      if (root.dataset.oauth) rows.push(el('small', { text: 'Signed in to the console, the page uses your sign-in; otherwise paste an access token.' }));
    }
    rows.push(el('div', { class: 'row' }, connect, status), tool, progress, progressText, log, output);
    root.append(...rows);
    root.hidden = false;

    const say = (text) => (status.textContent = text);
    const show = (...nodes) => output.replaceChildren(...nodes.filter(Boolean));

    async function credentialValue() {
      const typed = token.value.trim() || (root.dataset.oauth ? await consoleToken(new URL(url.value.trim(), location.href).pathname) : null);
      if (!typed || !credential || credential.startsWith('cookie:')) return null;
      return credential === 'bearer' ? ['authorization', `Bearer ${typed}`] : [credential.slice(7), typed];
    }

    connect.addEventListener('click', async () => {
      client?.close();
      client = null;
      tool.hidden = true;
      output.replaceChildren();
      connect.disabled = true;
      say('Connecting…');
      try {
        const next = new Client(url.value.trim(), await credentialValue());
        next.traced = root.dataset.traced === '1';
        await next.connect();
        tools = await next.tools();
        client = next;
        select.replaceChildren(...tools.map((t, i) => el('option', { value: String(i), text: t.title ? `${t.title} (${t.name})` : t.name })));
        say(`Connected to ${client.info.name ?? 'the server'} ${client.info.version ?? ''} (protocol ${client.version}): ${tools.length} tool${tools.length === 1 ? '' : 's'}.`);
        if (tools.length) {
          tool.hidden = false;
          choose();
        }
      } catch (e) {
        say('Not connected.');
        show(errorView(e));
      } finally {
        connect.disabled = false;
      }
    });

    function choose() {
      const t = tools[Number(select.value)];
      if (!t) return;
      const { form, read, fill } = argumentForm(t.inputSchema, `try-${n}-arg`);
      current = { tool: t, read, fill };
      about.textContent = t.description ?? '';
      formBox.replaceChildren(form);
      rawToggle.checked = false;
      rawText.hidden = true;
      formBox.hidden = false;
      rawText.value = '{}';
    }
    select.addEventListener('change', choose);

    // The raw JSON stands in for the form; each side starts from what the other holds.
    rawToggle.addEventListener('change', () => {
      if (!current) return;
      try {
        if (rawToggle.checked) rawText.value = json(current.read());
        else current.fill(JSON.parse(rawText.value || '{}'));
      } catch {}
      rawText.hidden = !rawToggle.checked;
      formBox.hidden = rawToggle.checked;
    });

    function onMessage(token) {
      return (message) => {
        const p = message.params ?? {};
        if (message.method === 'notifications/progress' && p.progressToken === token) {
          progress.hidden = progressText.hidden = false;
          if (typeof p.total === 'number' && p.total > 0) {
            progress.max = p.total;
            progress.value = p.progress;
          } else progress.removeAttribute('value');
          progressText.textContent = `${p.message ? `${p.message} ` : ''}(${p.progress}${p.total ? ` of ${p.total}` : ''})`;
        } else if (message.method === 'notifications/message') {
          log.hidden = false;
          const data = typeof p.data === 'string' ? p.data : JSON.stringify(p.data);
          log.append(el('li', { class: `level-${p.level}` }, el('span', { class: 'level', text: p.level }), ` ${p.logger ? `${p.logger}: ` : ''}${data}`));
        } else if (message.method) {
          log.hidden = false;
          log.append(el('li', { class: 'muted', text: message.method }));
        }
      };
    }

    run.addEventListener('click', async () => {
      if (!client || !current || call) return;
      let args;
      try {
        args = rawToggle.checked ? JSON.parse(rawText.value || '{}') : current.read();
        if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new Error('The arguments must be a JSON object.');
      } catch (e) {
        show(errorView(e));
        return;
      }
      const controller = new AbortController();
      const opts = { signal: controller.signal };
      const progressToken = `console-${n}-${client.ids + 1}`;
      opts.on = onMessage(progressToken);
      progress.hidden = progressText.hidden = log.hidden = true;
      progress.value = 0;
      log.replaceChildren();
      show(el('p', { class: 'muted', text: `Calling ${current.tool.name}…` }));
      run.disabled = true;
      cancel.disabled = false;
      const pending = client.request('tools/call', { name: current.tool.name, arguments: args, _meta: { progressToken } }, opts);
      call = { controller, id: opts.id, client };
      try {
        show(resultView(await pending), traceView(opts.trace, root.dataset.traceLink));
      } catch (e) {
        show(errorView(e), traceView(opts.trace, root.dataset.traceLink));
      } finally {
        call = null;
        run.disabled = false;
        cancel.disabled = true;
      }
    });

    // notifications/cancelled tells the server to stop (and abort the upstream's fetch); then
    // the page stops reading.
    cancel.addEventListener('click', async () => {
      const running = call;
      if (!running) return;
      cancel.disabled = true;
      try {
        await running.client.notify('notifications/cancelled', { requestId: running.id, reason: 'Cancelled from the console' });
      } catch {}
      running.controller.abort(new DOMException('Cancelled', 'AbortError'));
    });

    addEventListener('pagehide', () => client?.close());
  }

  for (const root of document.querySelectorAll('div.try[data-url]')) panel(root);
})();

// The signed-in person's own limits (`rateLimits`): what is left under each, read once.
(async () => {
  const section = document.querySelector('section[data-limits]');
  if (!section) return;
  const rows = section.querySelector('tbody');
  try {
    const reply = await fetch(section.dataset.limits, { headers: { accept: 'application/json' } });
    if (!reply.ok) throw new Error(`HTTP ${reply.status}`);
    for (const { server, limits } of (await reply.json()).servers) {
      for (const l of limits) {
        const left = 'remaining' in l ? String(l.remaining) : `${l.inFlight} running, ${l.queued} waiting`;
        const row = rows.insertRow();
        for (const text of [server, l.limit, left, 'resetMs' in l ? `${Math.ceil(l.resetMs / 1000)} s` : '']) row.insertCell().textContent = text;
      }
    }
  } catch (e) {
    section.append(Object.assign(document.createElement('p'), { textContent: `Your limits could not be read: ${e.message}` }));
  }
})();
